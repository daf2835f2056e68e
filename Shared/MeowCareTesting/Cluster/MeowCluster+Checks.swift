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

/// A fixture connection for the shared checks: their calls are traced like the test's.
struct TracedInspection: InspectionConnection {
    let connection: TracedConnection
    let user: String?
    func request(_ op: String, _ params: [String: JSONValue]) async throws(WireError) -> JSONValue {
        do throws(MeowCareError) { return try await connection.call(op, params) } catch { throw error.wireError }
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
            var remote: [String: StoreCloudDiff.Item] = [:], unreadable: [String] = []
            let local: [String: StoreCloudDiff.Item]
            do throws(InspectionError) {
                local = try await StoreCloudDiff.deviceItems(TracedInspection(connection: device.connection, user: nil))
                for database in ["private", "shared"] {
                    try await StoreCloudDiff.cloudItems(TracedInspection(connection: user.connection, user: name), database: database,
                                                        into: &remote, unreadable: &unreadable)
                }
            } catch {
                throw MeowCareError(error.error, op: error.op, service: device.name)
            }
            reports.append(DeviceConvergence(device: device.name, user: name, zones: StoreCloudDiff.compare(local: local, cloud: remote),
                                             unreadable: unreadable))
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
            var doctor = Doctor(device: TracedInspection(connection: device.connection, user: nil))
            do throws(InspectionError) {
                try await doctor.examineDevice()
                try await doctor.examineCloud(TracedInspection(connection: user.connection, user: name))
            } catch {
                throw MeowCareError(error.error, op: error.op, service: device.name)
            }
            findings += doctor.findings.map { (device.name, $0) }
        }
        return InvariantReport(findings: findings)
    }
}
