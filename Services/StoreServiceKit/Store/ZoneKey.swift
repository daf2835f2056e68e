import CloudWire

/// A zone as a shared-store row keeps it (`z_zone`): `owner/zoneName`, the owner
/// `__defaultOwner__` for the user's own zones.
extension ZoneID {
    /// Owner names never hold a `/` (the cloud refuses such user names), so the first one splits
    /// the key.
    package var key: String { "\(ownerName)/\(zoneName)" }

    package init?(key: String) {
        guard let slash = key.firstIndex(of: "/") else { return nil }
        self.init(zoneName: String(key[key.index(after: slash)...]), ownerName: String(key[..<slash]))
    }
}
