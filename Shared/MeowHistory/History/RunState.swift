import MeowWire

/// An object as a device shows it: what observations and the final state hold.
public struct ObservedObject: Codable, Sendable, Equatable {
    public var entity: String
    public var uuid: String
    /// "private" or "shared".
    public var store: String
    /// Attribute values, and to-one relationships as the destination's UUID.
    public var values: [String: JSONValue]

    public init(entity: String, uuid: String, store: String, values: [String: JSONValue]) {
        self.entity = entity
        self.uuid = uuid
        self.store = store
        self.values = values
    }
}

/// A device at the end of a run, after settling.
public struct DeviceState: Codable, Sendable, Equatable {
    public var name: String
    public var user: String
    public var objects: [ObservedObject]
    /// Each store's persistent-history tokens in order, to check they have no gaps.
    public var historyTokens: [String: [Int]]
    /// `meowctl doctor`'s findings, one line each; empty when clean.
    public var doctor: [String]
    /// What differs between the device and the cloud after settling, one line each.
    public var divergence: [String]

    public init(name: String, user: String, objects: [ObservedObject], historyTokens: [String: [Int]] = [:],
                doctor: [String] = [], divergence: [String] = []) {
        self.name = name
        self.user = user
        self.objects = objects
        self.historyTokens = historyTokens
        self.doctor = doctor
        self.divergence = divergence
    }
}

/// One record in the cloud at the end of a run.
public struct CloudRecordState: Codable, Sendable, Equatable {
    public var recordName: String
    public var recordType: String
    public var fields: [String: JSONValue]

    public init(recordName: String, recordType: String, fields: [String: JSONValue]) {
        self.recordName = recordName
        self.recordType = recordType
        self.fields = fields
    }
}

/// One zone in the cloud at the end of a run, with its share's participants if shared.
public struct CloudZoneState: Codable, Sendable, Equatable {
    public struct Participant: Codable, Sendable, Equatable {
        public var user: String
        /// "readOnly" or "readWrite".
        public var permission: String
        /// "pending", "accepted" or "removed".
        public var acceptance: String

        public init(user: String, permission: String, acceptance: String) {
            self.user = user
            self.permission = permission
            self.acceptance = acceptance
        }
    }

    public var owner: String
    public var zoneName: String
    public var records: [CloudRecordState]
    public var participants: [Participant]

    public init(owner: String, zoneName: String, records: [CloudRecordState], participants: [Participant] = []) {
        self.owner = owner
        self.zoneName = zoneName
        self.records = records
        self.participants = participants
    }
}

/// What the checker judges besides the history: the cloud and every device after settling.
public struct FinalState: Codable, Sendable, Equatable {
    public var cloud: [CloudZoneState]
    public var devices: [DeviceState]

    public init(cloud: [CloudZoneState], devices: [DeviceState]) {
        self.cloud = cloud
        self.devices = devices
    }
}

/// A run's history and the state it ended in: all a check sees.
public struct RunRecord: Codable, Sendable, Equatable {
    public var seed: UInt64
    public var history: [HistoryEntry]
    public var final: FinalState
    /// Each entity's delete-versus-edit policy as the flow's model sets it ("deleteWins" or
    /// "resurrect"); an entity not named here has the default, deleteWins.
    public var deletePolicies: [String: String]

    public init(seed: UInt64, history: [HistoryEntry], final: FinalState, deletePolicies: [String: String] = [:]) {
        self.seed = seed
        self.history = history
        self.final = final
        self.deletePolicies = deletePolicies
    }

    private enum CodingKeys: String, CodingKey { case seed, history, final, deletePolicies }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        seed = try container.decode(UInt64.self, forKey: .seed)
        history = try container.decode([HistoryEntry].self, forKey: .history)
        final = try container.decode(FinalState.self, forKey: .final)
        // Records written before policies were recorded read as all-default.
        deletePolicies = try container.decodeIfPresent([String: String].self, forKey: .deletePolicies) ?? [:]
    }
}
