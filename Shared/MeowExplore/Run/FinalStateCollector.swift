import MeowCareCluster
import MeowHistory
import MeowWire

/// Reads what a run ended in: the cloud's records per zone (with each share's participants),
/// each device's objects, history tokens, doctor findings and divergence from the cloud (the
/// cluster's own checks, `convergence()` and `invariants()`, from one read of each device and
/// of each user's databases, over the bench's cloud connections).
struct FinalStateCollector {
    let engine: RunEngine

    var cluster: MeowCluster { engine.cluster }

    func collect() async throws -> FinalState {
        let bench = engine.bench
        let (convergence, invariants) = try await cluster.convergenceAndInvariants(users: engine.users) { user throws(MeowCareError) in
            try await bench.cloudUser(user)
        }
        var devices: [DeviceState] = []
        for name in engine.devices {
            let device = try cluster.device(named: name)
            let divergence = convergence.devices.filter { $0.device == name && !$0.isConverged }
                .flatMap { $0.description.split(separator: "\n").map { engine.aliased(.string(String($0))).stringValue ?? String($0) } }
            let doctor = invariants.findings.filter { $0.device == name }
                .map { "[\($0.finding.kind)] \(engine.aliased(.string($0.finding.summary)).stringValue ?? $0.finding.summary)" }
            let observed: [ObservedObject]
            if let last = engine.lastObserved[name] { observed = last } else { observed = try await objects(on: name) }
            devices.append(DeviceState(name: name, user: engine.users[name] ?? device.user, objects: observed,
                                       historyTokens: try await tokens(of: device), doctor: doctor, divergence: divergence))
        }
        return FinalState(cloud: try await cloudZones(), devices: devices)
    }

    /// Every object of every entity on the device, values with to-one links as UUIDs, sorted by UUID.
    func objects(on name: String) async throws -> [ObservedObject] {
        let device = try cluster.device(named: name)
        var fetched: [ManagedObject] = []
        for entity in engine.bench.model.entityNames { fetched += try await device.fetch(entity) }
        let uuidOf = Dictionary(fetched.map { ($0.objectID, $0.uuid) }, uniquingKeysWith: { first, _ in first })
        return fetched.map { object in
            let relationships = engine.bench.model.entities[object.entity]?.relationships ?? [:]
            var values: [String: JSONValue] = [:]
            for (key, value) in object.values {
                if let toMany = relationships[key] {
                    if toMany {
                        values[key] = .array((value.arrayValue ?? []).compactMap { $0.stringValue.flatMap { uuidOf[$0] } }.sorted().map { .string($0) })
                    } else {
                        values[key] = value.stringValue.map { .string(uuidOf[$0] ?? $0) } ?? .null
                    }
                } else {
                    values[key] = value
                }
            }
            let scope = object.store.map { engine.bench.storeScopes[$0] ?? $0 } ?? "private"
            return ObservedObject(entity: object.entity, uuid: object.uuid, store: scope, values: values)
        }.sorted { ($0.uuid, $0.store) < ($1.uuid, $1.store) }
    }

    /// Each store's history tokens of this run (after its start), in order.
    func tokens(of device: MeowDevice) async throws -> [String: [Int]] {
        var tokens: [String: [Int]] = [:]
        let start = engine.startTokens[device.name] ?? [:]
        for (store, after) in start.sorted(by: { $0.key < $1.key }) {
            let result = try await device.history(store: store, afterToken: after)
            tokens[engine.bench.storeScopes[store] ?? store] = result.transactions.map(\.token)
        }
        return tokens
    }

    /// Every zone each user owns, its records and its share's participants.
    func cloudZones() async throws -> [CloudZoneState] {
        var zones: [CloudZoneState] = []
        var users: [String] = []
        for user in engine.bench.homeUsers.values.sorted() + engine.users.values.sorted() where !users.contains(user) { users.append(user) }
        for user in users {
            let cloud = try await engine.bench.cloudUser(user)
            let shares = try await cloud.ownedShares()
            for zone in try await cloud.zones(.private).sorted(by: { $0.zoneID.zoneName < $1.zoneID.zoneName }) where zone.zoneID.zoneName != "_defaultZone" {
                let records = try await cloud.records(in: zone.zoneID, .private).map { record in
                    CloudRecordState(recordName: record.recordName, recordType: record.recordType,
                                     fields: record.fields.mapValues { engine.aliased($0) })
                }.sorted { $0.recordName < $1.recordName }
                let participants = shares.first { $0.zoneID.zoneName == zone.zoneID.zoneName }?.participants
                    .filter { $0.role != .owner }
                    .map { CloudZoneState.Participant(user: $0.user, permission: $0.permission.rawValue, acceptance: $0.acceptanceStatus.rawValue) }
                    .sorted { $0.user < $1.user } ?? []
                let zoneName = engine.aliased(.string(zone.zoneID.zoneName)).stringValue ?? zone.zoneID.zoneName
                zones.append(CloudZoneState(owner: user, zoneName: zoneName, records: records, participants: participants))
            }
        }
        return zones
    }
}
