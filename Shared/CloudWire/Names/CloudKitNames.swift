import MeowWire

/// CloudKit's names, each spelled once: the constants both services and their clients use, and
/// CloudKit's rules for names (CKRecord.ID: "must contain only ASCII characters, must not
/// exceed 255 characters, and must not start with an underscore"; CKRecordZone.ID: "Zone names
/// must be 255 characters or less"). CloudKit's client raises them before a request leaves the
/// device. The sync-service, which any client can reach, answers invalidArguments; the
/// store-service checks an object's uuid by the same rule, since it becomes the record name.
public enum CloudKitNames {
    /// The record type of a share (`CKShare`), a record the server maintains.
    public static let shareRecordType = "cloudkit.share"
    /// The record name of a zone-wide share (`CKRecordNameZoneWideShare`).
    public static let zoneShareName = "cloudkit.zoneshare"

    /// NSPersistentCloudKitContainer's prefix of record types and field names: entity
    /// `CareEvent` is record type `CD_CareEvent`, attribute `note` field `CD_note`.
    public static let coreDataPrefix = "CD_"
    /// The field naming a record's entity (`CD_entityName`).
    public static let entityNameField = coreDataPrefix + "entityName"
    /// The field a record moved into another zone (a share) carries its move receipt in:
    /// bookkeeping of the mirror, never an attribute's value.
    public static let moveReceiptField = coreDataPrefix + "moveReceipt"
    /// Fields with Core Data's prefix that hold no attribute or relationship.
    public static let bookkeepingFields: Set<String> = [entityNameField, moveReceiptField]
    /// The prefix of the zones NSPersistentCloudKitContainer shares into, one per share
    /// (`com.apple.coredata.cloudkit.share.<UUID>`).
    public static let coreDataShareZonePrefix = "com.apple.coredata.cloudkit.share."

    /// `CareEvent` → `CD_CareEvent`; `note` → `CD_note`.
    public static func coreDataName(_ name: String) -> String { coreDataPrefix + name }

    /// The suffix of the field a large binary value goes in: `thumbnail` → `CD_thumbnail_ckAsset`.
    public static let assetSuffix = "_ckAsset"

    /// `thumbnail` → `CD_thumbnail_ckAsset`, the asset field NSPersistentCloudKitContainer writes
    /// a Binary Data value past its size threshold to.
    public static func assetFieldName(_ attribute: String) -> String { coreDataName(attribute) + assetSuffix }

    /// `CD_CareEvent` → `CareEvent`; nil for a name without the prefix.
    public static func entityName(recordType: String) -> String? {
        recordType.hasPrefix(coreDataPrefix) ? String(recordType.dropFirst(coreDataPrefix.count)) : nil
    }

    public static let longest = 255

    /// What is wrong with `name` as a record name (nil: nothing).
    public static func problem(recordName name: String) -> String? {
        if name.isEmpty { return "a record name must not be empty" }
        if name.utf8.count > longest { return "a record name has at most \(longest) characters; this one has \(name.utf8.count) bytes" }
        if name.utf8.contains(where: { $0 >= 0x80 }) { return "a record name has ASCII characters only" }
        if name.hasPrefix("_") { return "a record name must not start with an underscore" }
        return nil
    }

    /// What is wrong with `name` as a zone name (nil: nothing).
    public static func problem(zoneName name: String) -> String? {
        name.utf16.count > longest ? "a zone name has at most \(longest) characters; this one has \(name.utf16.count)" : nil
    }

    /// CloudKit's name of a field type of this protocol (as its server messages and dashboard
    /// show them): `date` is TIMESTAMP, a list of strings (`list/string`) STRING_LIST, …
    public static func typeName(_ type: String) -> String {
        if type.hasPrefix("list/") { return typeName(String(type.dropFirst(5))) + "_LIST" }
        switch type {
        case "date": return "TIMESTAMP"
        case "asset": return "ASSETID"
        default: return type.uppercased()
        }
    }

    /// A name as an error message quotes it: long ones cut short.
    public static func quoted(_ name: String) -> String {
        name.count > 60 ? "'\(name.prefix(60))…'" : "'\(name)'"
    }
}
