import Synchronization

/// One device's stores against its user's cloud databases (`meowctl diff`'s comparison).
public struct DeviceConvergence: Sendable {
    public var device: String
    public var user: String
    public var zones: [StoreCloudDiff.ZoneReport]
    /// Zones the cloud would not let the user read, with the error.
    public var unreadable: [String]

    public var isConverged: Bool { zones.allSatisfy(\.clean) && unreadable.isEmpty }

    /// The differences, for people: one line per zone, then one per record or field that differs.
    public var description: String {
        var lines: [String] = []
        for zone in zones where !zone.clean {
            lines.append("\(device) (\(user)) · \(zone.database) database · \(zone.zone): \(zone.matching) matching, \(zone.onlyInCloud.count) only in the cloud, "
                         + "\(zone.onlyOnDevice.count) only on the device, \(zone.differing.count) differing")
            func record(_ name: String, _ item: StoreCloudDiff.Item) -> String {
                item.fields["CD_id"].map { "\(name) (id \($0))" } ?? ManyToManyLinks.summary(item).map { "\(name) (\($0))" } ?? name
            }
            for entry in zone.onlyInCloud.sorted(by: { $0.name < $1.name }) { lines.append("    only in the cloud: \(entry.item.entity) \(record(entry.name, entry.item))") }
            for entry in zone.onlyOnDevice.sorted(by: { $0.name < $1.name }) { lines.append("    only on the device: \(entry.item.entity) \(record(entry.name, entry.item))") }
            for entry in zone.differing.sorted(by: { $0.name < $1.name }) {
                for (field, local, cloud) in entry.fields {
                    lines.append("    differs: \(entry.item.entity) \(record(entry.name, entry.item)) \(field): device \(local ?? "–"), cloud \(cloud ?? "–")")
                }
            }
        }
        for zone in unreadable { lines.append("\(device) (\(user)) · unreadable zone \(zone)") }
        return lines.joined(separator: "\n")
    }
}

/// Every device's convergence with the cloud.
public struct ConvergenceReport: Sendable, CustomStringConvertible {
    public var devices: [DeviceConvergence]
    public var isConverged: Bool { devices.allSatisfy(\.isConverged) }
    public var description: String {
        isConverged ? "Every device matches the cloud." : "The devices do not match the cloud:\n" + devices.filter { !$0.isConverged }.map(\.description).joined(separator: "\n")
    }
}

/// Every device's invariant violations (`meowctl doctor`'s checks).
public struct InvariantReport: Sendable, CustomStringConvertible {
    public var findings: [(device: String, finding: Doctor.Finding)]
    public var isClean: Bool { findings.isEmpty }
    public var description: String {
        isClean ? "No invariant is broken." : "\(findings.count) invariant violation(s):\n" + findings.map { entry in
            "  \(entry.device): [\(entry.finding.kind)] \(entry.finding.summary)\n    why: \(entry.finding.explanation)\n    fix: \(entry.finding.fix)"
        }.joined(separator: "\n")
    }
}

/// A fixture connection for the shared checks: their calls are traced like the test's. On a
/// device's connection, `model.get` is the device's model as it first answered it.
struct TracedInspection: InspectionConnection {
    let connection: TracedConnection
    let user: String?
    var device: MeowDevice?

    init(connection: TracedConnection, user: String?) {
        (self.connection, self.user) = (connection, user)
    }

    init(device: MeowDevice) {
        (connection, user, self.device) = (device.connection, nil, device)
    }

    func request(_ op: String, _ params: [String: JSONValue]) async throws(WireError) -> JSONValue {
        do throws(MeowCareError) {
            if let device, op == "model.get", params.isEmpty { return try await device.model() }
            return try await connection.call(op, params)
        } catch {
            throw error.wireError
        }
    }
}

/// Answers each distinct read once and repeats the answer (or the error) after: for checks that
/// read the same state several times while nothing changes it.
final class ReadOnceInspection: InspectionConnection {
    private struct Key: Hashable {
        var op: String
        var params: [String: JSONValue]
    }

    let base: any InspectionConnection
    private let answers = Mutex<[Key: Result<JSONValue, WireError>]>([:])

    init(_ base: any InspectionConnection) { self.base = base }

    var user: String? { base.user }

    func request(_ op: String, _ params: [String: JSONValue]) async throws(WireError) -> JSONValue {
        let key = Key(op: op, params: params)
        if let known = answers.withLock({ $0[key] }) { return try known.get() }
        let answer: Result<JSONValue, WireError>
        do throws(WireError) { answer = .success(try await base.request(op, params)) } catch { answer = .failure(error) }
        answers.withLock { $0[key] = answer }
        return try answer.get()
    }
}

extension MeowCluster {
    /// Each device's stores against the cloud's databases as the device's user sees them: the
    /// private store with the private database, the shared store with the shared database,
    /// zone by zone and field by field. Pending changes show up as differences: `settle()` first.
    /// `users` names the user a device is signed in as now where an account switch changed it
    /// (device name → user); a device not named is compared as the user it started as.
    public func convergence(users: [String: String] = [:]) async throws(MeowCareError) -> ConvergenceReport {
        var reports: [DeviceConvergence] = []
        for device in devices {
            let name = users[device.name] ?? device.user
            let user = try await cloud.user(name)
            defer { user.connection.close() }
            reports.append(try await Self.convergence(of: device, user: name, local: TracedInspection(device: device),
                                                      cloud: TracedInspection(connection: user.connection, user: name)))
        }
        return ConvergenceReport(devices: reports)
    }

    /// `meowctl doctor`'s checks on every device, and on the cloud as each device's user.
    /// `users`: as for `convergence(users:)`.
    public func invariants(users: [String: String] = [:]) async throws(MeowCareError) -> InvariantReport {
        var findings: [(device: String, finding: Doctor.Finding)] = []
        for device in devices {
            let name = users[device.name] ?? device.user
            let user = try await cloud.user(name)
            defer { user.connection.close() }
            findings += try await Self.findings(of: device, local: TracedInspection(device: device),
                                                cloud: TracedInspection(connection: user.connection, user: name))
        }
        return InvariantReport(findings: findings)
    }

    /// `convergence(users:)` and `invariants(users:)` of a cluster nothing changes meanwhile,
    /// from one read: each device's stores and each user's databases are read once and both
    /// reports judge the same answers, over the connection `cloudUser` gives for each user (one
    /// per user, kept by the caller). For a test that asks both after every run.
    public func convergenceAndInvariants(users: [String: String] = [:],
                                         cloudUser: (String) async throws(MeowCareError) -> MeowCloudUser) async throws(MeowCareError)
        -> (convergence: ConvergenceReport, invariants: InvariantReport) {
        var clouds: [String: ReadOnceInspection] = [:]
        var reports: [DeviceConvergence] = []
        var findings: [(device: String, finding: Doctor.Finding)] = []
        for device in devices {
            let name = users[device.name] ?? device.user
            let cloud: ReadOnceInspection
            if let known = clouds[name] {
                cloud = known
            } else {
                cloud = ReadOnceInspection(TracedInspection(connection: try await cloudUser(name).connection, user: name))
                clouds[name] = cloud
            }
            let local = ReadOnceInspection(TracedInspection(device: device))
            reports.append(try await Self.convergence(of: device, user: name, local: local, cloud: cloud))
            findings += try await Self.findings(of: device, local: local, cloud: cloud)
        }
        return (ConvergenceReport(devices: reports), InvariantReport(findings: findings))
    }

    private static func convergence(of device: MeowDevice, user name: String, local: any InspectionConnection,
                                    cloud: any InspectionConnection) async throws(MeowCareError) -> DeviceConvergence {
        var remote: [String: StoreCloudDiff.Item] = [:], unreadable: [String] = []
        let items: [String: StoreCloudDiff.Item]
        do throws(InspectionError) {
            items = try await StoreCloudDiff.deviceItems(local)
            for database in ["private", "shared"] {
                try await StoreCloudDiff.cloudItems(cloud, database: database, into: &remote, unreadable: &unreadable)
            }
        } catch {
            throw MeowCareError(error.error, op: error.op, service: device.name)
        }
        return DeviceConvergence(device: device.name, user: name, zones: StoreCloudDiff.compare(local: items, cloud: remote), unreadable: unreadable)
    }

    private static func findings(of device: MeowDevice, local: any InspectionConnection,
                                 cloud: any InspectionConnection) async throws(MeowCareError) -> [(device: String, finding: Doctor.Finding)] {
        var doctor = Doctor(device: local)
        do throws(InspectionError) {
            try await doctor.examineDevice()
            try await doctor.examineCloud(cloud)
        } catch {
            throw MeowCareError(error.error, op: error.op, service: device.name)
        }
        return doctor.findings.map { (device.name, $0) }
    }
}
