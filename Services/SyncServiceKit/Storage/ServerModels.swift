import CloudWire
import MeowWire

extension ZoneID {
    /// The real owner: `__defaultOwner__` replaced by the caller.
    func resolved(caller: String) -> ZoneID {
        ownerName == ZoneID.defaultOwner ? ZoneID(zoneName: zoneName, ownerName: caller) : self
    }

    /// As the caller sees it: their own zones carry `__defaultOwner__`.
    func presented(to caller: String) -> ZoneID {
        ownerName == caller ? ZoneID(zoneName: zoneName, ownerName: ZoneID.defaultOwner) : self
    }

    var isDefaultOrCoreDataZone: Bool {
        zoneName == ZoneID.defaultZoneName || zoneName == ZoneID.coreDataZoneName
    }
}

/// Limits of one container; `admin.setLimits` changes them at run time.
public struct CloudLimits: Codable, Sendable, Hashable {
    public var maxItemsPerRequest = 400
    public var maxRequestBytes = 2 * 1024 * 1024
    public var maxRecordBytes = 1024 * 1024
    /// Bytes of one asset's data. CloudKit takes 50 MB; here an asset travels inside its
    /// record's modify request, so it is held under the request limit (`AssetFields`).
    public var maxAssetBytes = 1024 * 1024
    public var maxParticipants = 100
    public var maxZonesPerUser = 1000
    /// Deleted-record tombstones and superseded versions older than this are dropped; tokens
    /// from before the dropped history answer changeTokenExpired.
    public var retentionSeconds = 30 * 24 * 3600
    public var defaultFetchLimit = 400

    public init() {}
}

/// Account states a user can be put in (CKAccountStatus).
public enum AccountStatus: String, CloudVocabulary {
    case available, noAccount, temporarilyUnavailable

    public static let vocabularyName = "an account status"
}


/// A user's participation in one share, as the participants table keeps it.
struct Participation {
    var permission: SharePermission
    var acceptance: ShareAcceptanceStatus
    var role: ShareRole

    /// Whether it shows the share's records: accepted, with a permission above none.
    var reads: Bool { acceptance == .accepted && permission != .none }
}
