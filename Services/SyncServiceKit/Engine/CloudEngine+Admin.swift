import CloudWire
import FoundationEssentials
import MeowWire
import ServiceRuntime
import SQLiteKit

public struct ResetParams: Codable, Sendable {
    /// "all" (every zone, record and share; users stay), "user" (one user's zones and
    /// participations), "zone" (one zone, reported as purged) or "encryptedData" (the user's
    /// custom zones, reported to them as encryptedDataReset: their devices re-upload).
    public var scope: String
    public var user: String?
    public var zoneID: ZoneID?
    /// development or production (default: the connection's).
    public var environment: String?
    public init(scope: String, user: String? = nil, zoneID: ZoneID? = nil, environment: String? = nil) {
        self.scope = scope
        self.user = user
        self.zoneID = zoneID
        self.environment = environment
    }
}

public struct ResetResult: Codable, Sendable {
    public var zonesRemoved: Int
}

/// The whole cloud as JSON: every table's rows as arrays of column values.
public struct CloudSnapshot: Codable, Sendable {
    public var format: String
    public var schemaVersion: Int
    public var tables: [String: [[JSONValue]]]
}

public struct ExportSnapshotParams: Codable, Sendable {
    /// Users' credentials in clear in the snapshot (default: null).
    public var includeCredentials: Bool?
    /// Write the snapshot to this file (absolute, on the service's machine) instead of answering it.
    public var path: String?
    public init(includeCredentials: Bool? = nil, path: String? = nil) {
        self.includeCredentials = includeCredentials
        self.path = path
    }
}

public struct SnapshotResult: Codable, Sendable {
    public var snapshot: CloudSnapshot
}

public struct ImportResult: Codable, Sendable {
    public var users: Int
    public var zones: Int
    public var records: Int
}

public struct LimitsParams: Codable, Sendable {
    public var maxItemsPerRequest: Int?
    public var maxRequestBytes: Int?
    public var maxRecordBytes: Int?
    public var maxAssetBytes: Int?
    public var maxParticipants: Int?
    public var maxZonesPerUser: Int?
    public var retentionSeconds: Int?
    public var defaultFetchLimit: Int?
    public init() {}
}

public struct ClockParams: Codable, Sendable {
    /// Seconds since 1970 to fix the clock at; null returns to the real clock.
    public var now: Double?
    /// Moves the clock forward from its current reading (fixes it there).
    public var advanceSeconds: Double?
    public init(now: Double? = nil, advanceSeconds: Double? = nil) {
        self.now = now
        self.advanceSeconds = advanceSeconds
    }
}

/// admin.schema's answer: record type → field → CloudKit's type name.
public struct SchemaResult: Codable, Sendable {
    public var recordTypes: JSONValue
}

public struct ClockResult: Codable, Sendable {
    public var now: Double
    public var fixed: Bool
}

extension CloudEngine {
    /// admin.reset: removes state of this engine's environment; everyone who saw a removed zone
    /// sees it deleted (a zone reset: purged).
    public func reset(_ params: ResetParams) throws -> ResetResult {
        try locks.exclusive { try write { state in
            let environment = state.environment.rawValue
            let zones: [ZoneRow]
            var kind = "deleted"
            switch params.scope {
            case "all":
                zones = try state.db.query("SELECT id, owner, name, horizon FROM zones WHERE environment = ?", [environment]).map(CloudTransaction.zoneRow)
            case "user":
                guard let user = params.user else { throw WireError(.invalidArguments, "A user reset needs params.user.") }
                zones = try state.db.query("SELECT id, owner, name, horizon FROM zones WHERE environment = ? AND owner = ?",
                                           [environment, user]).map(CloudTransaction.zoneRow)
                let joined = try state.db.query("""
                    SELECT DISTINCT p.zone, p.share FROM participants p JOIN zones z ON z.id = p.zone
                    WHERE z.environment = ? AND p.user = ? AND p.role != '\(ShareRole.owner.rawValue)'
                    """, [environment, user])
                for row in joined {
                    if let zone = try state.zone(id: row[0].int64 ?? 0), let share = row[1].string {
                        try state.setAcceptance(zone: zone, share: share, user: user, to: .removed)
                    }
                }
            case "encryptedData":
                guard let user = params.user else { throw WireError(.invalidArguments, "An encrypted-data reset needs params.user.") }
                zones = try state.db.query("SELECT id, owner, name, horizon FROM zones WHERE environment = ? AND owner = ? AND name != ?",
                                           [environment, user, ZoneID.defaultZoneName]).map(CloudTransaction.zoneRow)
                kind = "encryptedDataReset"
            case "zone":
                guard let zoneID = params.zoneID, zoneID.ownerName != ZoneID.defaultOwner,
                      let zone = try state.zone(owner: zoneID.ownerName, name: zoneID.zoneName) else {
                    throw WireError(.zoneNotFound, "A zone reset needs params.zoneID with a real ownerName and an existing zone.")
                }
                zones = [zone]
                kind = "purged"
            default:
                throw WireError(.invalidArguments, "params.scope must be all, user, zone or encryptedData.")
            }
            for zone in zones { try state.removeZone(zone, kind: kind) }
            // A reset of everything or of a user takes the subscriptions too, as the user's databases go.
            if params.scope == "all" {
                try state.db.execute("DELETE FROM subscriptions WHERE environment = ?", [environment])
            } else if params.scope == "user", let user = params.user {
                try state.db.execute("DELETE FROM subscriptions WHERE environment = ? AND user = ?", [environment, user])
            }
            if params.scope == "all" {
                try state.db.execute("DELETE FROM database_changes WHERE environment = ?", [environment])
                try state.setDatabaseHorizon(state.seq)
                // As CloudKit's "Reset Development Environment": development's schema goes back
                // to production's. Production's schema is never reset.
                if state.environment == .development { try state.copyProductionSchemaToDevelopment() }
            }
            for zone in zones where zone.isDefaultZone {
                _ = try state.ensureZone(owner: zone.owner, name: ZoneID.defaultZoneName)
            }
            if params.scope == "all", environment == CloudEnvironment.development.rawValue {
                let production = core.schema(.production).withLock { $0 }
                fieldSchema.withLock { $0 = production }
            }
            return ResetResult(zonesRemoved: zones.count)
        } }
    }

    /// admin.exportSnapshot: every table, as one JSON value. Users' credentials are null unless
    /// `includeCredentials` asks for them: a snapshot is often kept or passed around, and a
    /// credential in it opens that user's data.
    public func exportSnapshot(includeCredentials: Bool = false, progress: ProgressReporter = .silent) throws -> SnapshotResult {
        try read { state in
            var tables: [String: [[JSONValue]]] = [:]
            let total = CloudSchema.snapshotTables.count
            for (done, table) in CloudSchema.snapshotTables.enumerated() {
                defer { progress.report(phase: "reading", done: done + 1, total: total) }
                let hidden = table.name == "users" && !includeCredentials ? table.columns.firstIndex(of: "credential") : nil
                tables[table.name] = try state.db.query("SELECT \(table.columns.joined(separator: ", ")) FROM \(table.name)").map { row in
                    var values = row.values.map(Self.json)
                    if let hidden { values[hidden] = .null }
                    return values
                }
            }
            return SnapshotResult(snapshot: CloudSnapshot(format: "meowcare-cloud-snapshot", schemaVersion: CloudSchema.version, tables: tables))
        }
    }

    /// admin.exportSnapshot to a file: what `exportSnapshot` answers, written to `output` as the
    /// rows are read, so the export holds one row, not the cloud. Keys are sorted (the header
    /// before the tables, the order an import reads in one pass). Answers rows per table.
    func writeSnapshot(to output: SnapshotOutput, includeCredentials: Bool, progress: ProgressReporter = .silent) throws -> [String: Int] {
        try read { state in
            let tables = CloudSchema.snapshotTables.sorted { $0.name < $1.name }
            var counts: [String: Int] = [:]
            progress.report(phase: "reading", done: 0, total: tables.count)
            try output.write("{\"format\":\"meowcare-cloud-snapshot\",\"schemaVersion\":\(CloudSchema.version),\"tables\":{")
            for (done, table) in tables.enumerated() {
                defer { progress.report(phase: "reading", done: done + 1, total: tables.count) }
                let hidden = table.name == "users" && !includeCredentials ? table.columns.firstIndex(of: "credential") : nil
                try output.write((done > 0 ? "," : "") + "\"\(table.name)\":[")
                var rows = 0
                try state.db.prepare("SELECT \(table.columns.joined(separator: ", ")) FROM \(table.name)").forEach { (row: Statement) throws -> Void in
                    var values = row.currentValues().map(Self.json)
                    if let hidden { values[hidden] = .null }
                    try output.write { text in
                        if rows > 0 { text += "," }
                        JSONWriter.append(.array(values), to: &text)
                    }
                    rows += 1
                }
                try output.write("]")
                counts[table.name] = rows
            }
            try output.write("}}")
            return counts
        }
    }

    /// admin.setLimits: changes the given limits; returns them all.
    public func setLimits(_ params: LimitsParams) throws -> CloudLimits {
        var limits = limits()
        func apply(_ value: Int?, _ keyPath: WritableKeyPath<CloudLimits, Int>, _ name: String, min: Int) throws {
            guard let value else { return }
            guard value >= min else { throw WireError(.invalidArguments, "\(name) must be at least \(min).") }
            limits[keyPath: keyPath] = value
        }
        try apply(params.maxItemsPerRequest, \.maxItemsPerRequest, "maxItemsPerRequest", min: 1)
        try apply(params.maxRequestBytes, \.maxRequestBytes, "maxRequestBytes", min: 1)
        try apply(params.maxRecordBytes, \.maxRecordBytes, "maxRecordBytes", min: 1)
        try apply(params.maxAssetBytes, \.maxAssetBytes, "maxAssetBytes", min: 1)
        try apply(params.maxParticipants, \.maxParticipants, "maxParticipants", min: 1)
        try apply(params.maxZonesPerUser, \.maxZonesPerUser, "maxZonesPerUser", min: 1)
        try apply(params.retentionSeconds, \.retentionSeconds, "retentionSeconds", min: 0)
        try apply(params.defaultFetchLimit, \.defaultFetchLimit, "defaultFetchLimit", min: 1)
        setLimits(limits)
        return limits
    }

    /// admin.expireChangeTokens: every token of this environment issued so far answers changeTokenExpired (tests).
    public func expireChangeTokens() throws -> Empty {
        try write { state in
            try state.db.execute("UPDATE zones SET horizon = ? WHERE environment = ?", [state.seq + 1, state.environment.rawValue])
            try state.setDatabaseHorizon(state.seq + 1)
            _ = state.nextSeq()
            return Empty()
        }
    }

    static func json(_ value: SQLValue) -> JSONValue {
        switch value {
        case .null: return .null
        case let .integer(number): return .int(Int(number))
        case let .real(number): return .double(number)
        case let .text(text): return .string(text)
        case let .blob(bytes): return .string(Data(bytes).base64EncodedString())
        }
    }

    static func sql(_ value: JSONValue) -> SQLValue {
        switch value {
        case let .int(number): return .integer(Int64(number))
        case let .double(number): return .real(number)
        case let .string(text): return .text(text)
        case let .bool(flag): return .integer(flag ? 1 : 0)
        default: return .null
        }
    }
}
