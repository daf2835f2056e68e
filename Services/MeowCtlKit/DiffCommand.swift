import Foundation
import MeowInspection
import MeowWire
import StoreWire

/// `meowctl diff`: a device's stores against its user's cloud databases, zone by zone — the
/// demo's convergence check, for every field of every record.
enum DiffCommand {
    static let help = """
    meowctl diff — a device's stores against the cloud, zone by zone

    Usage:
      meowctl diff --socket DEVICE_SOCKET --cloud SYNC_SOCKET (--credential C | --credential-file FILE) [--json]

    The private store is compared with the user's private database, the shared store with the
    shared database (C is the device's cloud user's credential). For every zone: records only in
    the cloud, objects only on the device, and records whose fields differ (CD_<attribute>;
    each value as the cloud field type its attribute is sent as: integers exactly, dates to the
    millisecond, bytes by their content, an asset field CD_<attribute>_ckAsset as CD_<attribute>;
    to-one relationships by the related record's name; many-to-many links as the cloud's CDMR
    records, the sides in one order). Objects only on
    the device are listed under the zone they would be exported to. Pending local changes show up
    as differences: run 'meowctl sync now' first to compare settled state.
    Exit codes: 0 identical, 1 differences found (or an error reply), 2 unreachable, 64 usage.
    """

    static func run(_ arguments: [String]) async throws(CommandError) {
        let args = try Arguments.parse(arguments, command: "diff", options: ["socket", "cloud", "credential", "timeout"])
        let socket = try args.deviceSocket(for: "diff")
        if args.value("dir") == nil, args.value("cloud") == nil { throw .usage("meowctl diff needs --cloud SYNC_SOCKET --credential C (or --dir DIR).") }
        let output = args.output
        let timeout = try args.timeout(default: 60)
        let device = try await ServiceSession.open(socket: socket, output: output, timeout: timeout)
        defer { device.close() }
        let status = try await device.attempt("sync.status", as: SyncStatus.self)
        let user = (try? status.get())?.user
        guard let (cloudSocket, credential) = try args.cloudTarget(for: "diff", deviceUser: user) else {
            throw .usage("meowctl diff needs --cloud SYNC_SOCKET --credential C (or --dir DIR).")
        }
        let cloud = try await ServiceSession.open(socket: cloudSocket, credential: credential, output: output, timeout: timeout)
        defer { cloud.close() }

        var remote: [String: StoreCloudDiff.Item] = [:]
        var unreadable: [String] = []
        let local: [String: StoreCloudDiff.Item]
        do throws(InspectionError) {
            local = try await StoreCloudDiff.deviceItems(device.inspection)
            for database in ["private", "shared"] {
                try await StoreCloudDiff.cloudItems(cloud.inspection, database: database, into: &remote, unreadable: &unreadable)
            }
        } catch {
            throw output.fail(op: error.op, error.error)
        }
        let pending: Int
        if case let .success(status) = status {
            pending = status.pending
        } else {
            pending = 0
        }
        let reports = StoreCloudDiff.compare(local: local, cloud: remote)
        let identical = reports.allSatisfy(\.clean) && unreadable.isEmpty
        if output.json {
            output.emit(["ok": true, "identical": .bool(identical), "pendingChanges": .int(pending),
                         "unreadableZones": .array(unreadable.map { .string($0) }), "zones": .array(reports.map(\.json))])
        } else {
            show(reports, unreadable: unreadable, pending: pending, output: output)
        }
        if !identical { throw .errorReply }
    }

    static func show(_ reports: [StoreCloudDiff.ZoneReport], unreadable: [String], pending: Int, output: Output) {
        if reports.isEmpty { output.say("Nothing on the device and nothing in the cloud.") }
        for report in reports {
            output.say("\(report.database) database · \(report.zone): \(report.matching) matching, \(report.onlyInCloud.count) only in the cloud, "
                       + "\(report.onlyOnDevice.count) only on the device, \(report.differing.count) differing")
            var rows: [[String]] = []
            // A record by its name and, where it has one, its id attribute (what people recognise).
            func record(_ name: String, _ item: StoreCloudDiff.Item) -> String {
                (item.fields["CD_id"] ?? ManyToManyLinks.summary(item)).map { "\(name) (\($0))" } ?? name
            }
            rows += report.onlyInCloud.sorted { $0.name < $1.name }.map { ["only in the cloud", $0.item.entity, record($0.name, $0.item), "", "", ""] }
            rows += report.onlyOnDevice.sorted { $0.name < $1.name }.map { ["only on the device", $0.item.entity, record($0.name, $0.item), "", "", ""] }
            for entry in report.differing.sorted(by: { $0.name < $1.name }) {
                rows += entry.fields.map { ["differs", entry.item.entity, record(entry.name, entry.item), $0.0, $0.1 ?? "–", $0.2 ?? "–"] }
            }
            if !rows.isEmpty {
                output.say(Table(["WHAT", "ENTITY", "RECORD", "FIELD", "DEVICE", "CLOUD"], rows).rendered
                    .split(separator: "\n").map { "  " + $0 }.joined(separator: "\n"))
            }
        }
        for zone in unreadable { output.say("unreadable zone: \(zone)") }
        let identical = reports.allSatisfy(\.clean) && unreadable.isEmpty
        output.say(identical ? "\nThe device and the cloud match." : "\nThe device and the cloud differ.")
        if pending > 0 { output.say("(the device has \(pending) change(s) pending: 'meowctl sync now' sends them)") }
    }
}
