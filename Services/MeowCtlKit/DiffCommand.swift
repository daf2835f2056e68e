import CloudWire
import Foundation
import MeowWire

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
    to-one relationships by the related record's name; dates to the millisecond). Objects only on
    the device are listed under the zone they would be exported to. Pending local changes show up
    as differences: run 'meowctl sync now' first to compare settled state.
    Exit codes: 0 identical, 1 differences found (or an error reply), 2 unreachable, 64 usage.
    """

    /// One side's view of one record: where it is and its comparable fields.
    struct Item {
        var database: String
        var zone: String
        var entity: String
        var objectID: String?
        var fields: [String: String]
    }

    struct ZoneReport {
        var database: String
        var zone: String
        var matching = 0
        var onlyInCloud: [(name: String, item: Item)] = []
        var onlyOnDevice: [(name: String, item: Item)] = []
        var differing: [(name: String, item: Item, fields: [(String, String?, String?)])] = []

        var clean: Bool { onlyInCloud.isEmpty && onlyOnDevice.isEmpty && differing.isEmpty }

        var json: JSONValue {
            ["database": .string(database), "zone": .string(zone), "matching": .int(matching),
             "onlyInCloud": .array(onlyInCloud.map { ["recordName": .string($0.name), "entity": .string($0.item.entity)] }),
             "onlyOnDevice": .array(onlyOnDevice.map { ["recordName": .string($0.name), "entity": .string($0.item.entity),
                                                        "objectID": $0.item.objectID.map { .string($0) } ?? .null] }),
             "differing": .array(differing.map { entry in
                 ["recordName": .string(entry.name), "entity": .string(entry.item.entity),
                  "objectID": entry.item.objectID.map { .string($0) } ?? .null,
                  "fields": .array(entry.fields.map { ["field": .string($0.0), "device": $0.1.map { .string($0) } ?? .null,
                                                        "cloud": $0.2.map { .string($0) } ?? .null] })]
             })]
        }
    }

    static func run(_ arguments: [String]) async throws(CommandError) {
        let args = try Arguments.parse(arguments, command: "diff", options: ["socket", "cloud", "credential", "timeout"])
        let socket = try args.deviceSocket(for: "diff")
        if args.value("dir") == nil, args.value("cloud") == nil { throw .usage("meowctl diff needs --cloud SYNC_SOCKET --credential C (or --dir DIR).") }
        let output = args.output
        let timeout = try args.timeout(default: 60)
        let device = try await ServiceSession.open(socket: socket, output: output, timeout: timeout)
        defer { device.close() }
        let status = try await device.attempt("sync.status")
        let user = (try? status.get())?["user"]?.stringValue
        guard let (cloudSocket, credential) = try args.cloudTarget(for: "diff", deviceUser: user) else {
            throw .usage("meowctl diff needs --cloud SYNC_SOCKET --credential C (or --dir DIR).")
        }
        let cloud = try await ServiceSession.open(socket: cloudSocket, credential: credential, output: output, timeout: timeout)
        defer { cloud.close() }

        let local = try await deviceItems(device)
        var remote: [String: Item] = [:]
        var unreadable: [String] = []
        for database in ["private", "shared"] {
            try await cloudItems(cloud, database: database, into: &remote, unreadable: &unreadable)
        }
        let pending: Int
        if case let .success(status) = status {
            pending = (status["stores"]?.arrayValue ?? []).compactMap { $0["pending"]?.intValue }.reduce(0, +)
        } else {
            pending = 0
        }
        let reports = compare(local: local, cloud: remote)
        let identical = reports.allSatisfy(\.clean) && unreadable.isEmpty
        if output.json {
            output.emit(["ok": true, "identical": .bool(identical), "pendingChanges": .int(pending),
                         "unreadableZones": .array(unreadable.map { .string($0) }), "zones": .array(reports.map(\.json))])
        } else {
            show(reports, unreadable: unreadable, pending: pending, output: output)
        }
        if !identical { throw .errorReply }
    }

    static func key(_ database: String, _ name: String) -> String { "\(database)|\(name)" }

    /// Every object of the device, keyed by database and record name (its uuid).
    static func deviceItems(_ device: ServiceSession) async throws(CommandError) -> [String: Item] {
        let stores = try await device.call("store.list")["stores"]?.arrayValue ?? []
        let database = Dictionary(stores.compactMap { store in
            store["name"]?.stringValue.map { ($0, store["scope"] == "shared" ? "shared" : "private") }
        }, uniquingKeysWith: { first, _ in first })
        let owners = Dictionary((try await device.call("share.list")["shares"]?.arrayValue ?? []).compactMap { share in
            share["zoneName"]?.stringValue.map { ($0, share["ownerName"]?.stringValue ?? "?") }
        }, uniquingKeysWith: { first, _ in first })
        let entities = try await device.call("model.get")["entities"]?.arrayValue ?? []
        var rows: [(entity: JSONValue, row: [String: JSONValue])] = []
        for entity in entities {
            guard let name = entity["name"]?.stringValue else { continue }
            rows += try await device.rows(entity: name).map { (entity, $0) }
        }
        let uuidOf = Dictionary(rows.compactMap { entry in
            entry.row["objectID"]?.stringValue.flatMap { id in entry.row["uuid"]?.stringValue.map { (id, $0) } }
        }, uniquingKeysWith: { first, _ in first })
        var items: [String: Item] = [:]
        for (entity, row) in rows {
            guard let uuid = row["uuid"]?.stringValue, let store = row["store"]?.stringValue else { continue }
            let db = database[store] ?? "private"
            let zone: String
            if let name = row["zone"]?.stringValue {
                zone = "\(owners[name] ?? "?")/\(name)"
            } else {
                zone = db == "private" ? "\(ZoneID.defaultOwner)/\(ZoneID.coreDataZoneName)" : "(no zone)"
            }
            var fields: [String: String] = [:]
            for attribute in entity["attributes"]?.arrayValue ?? [] {
                guard let name = attribute["name"]?.stringValue, let value = row[name], !value.isNull else { continue }
                fields[CloudKitNames.coreDataName(name)] = normalize(local: value, type: attribute["type"]?.stringValue ?? "string")
            }
            for relationship in entity["relationships"]?.arrayValue ?? [] where relationship["toMany"] != true {
                guard let name = relationship["name"]?.stringValue, let target = row[name]?.stringValue else { continue }
                fields[CloudKitNames.coreDataName(name)] = uuidOf[target] ?? target
            }
            items[key(db, uuid)] = Item(database: db, zone: zone, entity: entity["name"]?.stringValue ?? "?",
                                        objectID: row["objectID"]?.stringValue, fields: fields)
        }
        return items
    }

    /// Every CD_ record of one database, zone by zone.
    static func cloudItems(_ cloud: ServiceSession, database: String, into items: inout [String: Item],
                           unreadable: inout [String]) async throws(CommandError) {
        var zones: [JSONValue] = []
        var since = JSONValue.null
        while true {
            let page = try await cloud.call("changes.fetchDatabase", ["database": .string(database), "since": since])
            zones += page["changedZones"]?.arrayValue ?? []
            guard page["moreComing"] == true else { break }
            since = page["token"] ?? .null
        }
        for zone in zones {
            let zoneKey = "\(zone["ownerName"].cell)/\(zone["zoneName"].cell)"
            var token = JSONValue.null
            while true {
                let page: JSONValue
                switch try await cloud.attempt("changes.fetchZone", ["database": .string(database), "zoneID": zone, "since": token, "limit": 400]) {
                case let .success(value): page = value
                case let .failure(error):
                    unreadable.append("\(database) \(zoneKey): \(error.code) — \(error.message)")
                    page = .null
                }
                for record in page["changed"]?.arrayValue ?? [] {
                    guard let type = record["recordType"]?.stringValue, let entity = CloudKitNames.entityName(recordType: type),
                          let name = record["recordName"]?.stringValue else { continue }
                    var fields: [String: String] = [:]
                    for (field, value) in record["fields"]?.objectValue ?? [:] where field.hasPrefix(CloudKitNames.coreDataPrefix) && field != CloudKitNames.entityNameField {
                        fields[field] = normalize(cloud: value)
                    }
                    items[key(database, name)] = Item(database: database, zone: zoneKey, entity: entity,
                                                      objectID: nil, fields: fields)
                }
                guard page["moreComing"] == true else { break }
                token = page["token"] ?? .null
            }
        }
    }

    /// Both sides' values as one comparable text: numbers by value, dates as milliseconds.
    static func normalize(local value: JSONValue, type: String) -> String {
        switch type {
        case "date":
            guard let text = value.stringValue,
                  let date = (try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text)) ?? (try? Date.ISO8601FormatStyle().parse(text))
            else { return value.cell }
            return millis(date.timeIntervalSince1970)
        case "boolean": return value.boolValue.map { $0 ? "1" : "0" } ?? value.cell
        case "integer", "double": return value.doubleValue.map(number) ?? value.cell
        default: return value.cell
        }
    }

    static func normalize(cloud field: JSONValue) -> String {
        let value = field["value"] ?? .null
        switch field["type"]?.stringValue {
        case "date": return value.doubleValue.map(millis) ?? value.cell
        case "int64", "double": return value.doubleValue.map(number) ?? value.cell
        default: return value.cell
        }
    }

    static func millis(_ seconds: Double) -> String {
        Date(timeIntervalSince1970: (seconds * 1000).rounded() / 1000).formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }

    static func number(_ value: Double) -> String {
        value.rounded() == value && abs(value) < 1e15 ? String(Int(value)) : String(value)
    }

    static func compare(local: [String: Item], cloud: [String: Item]) -> [ZoneReport] {
        var reports: [String: ZoneReport] = [:]
        func report(_ item: Item) -> String {
            let key = "\(item.database) \(item.zone)"
            if reports[key] == nil { reports[key] = ZoneReport(database: item.database, zone: item.zone) }
            return key
        }
        for (key, remote) in cloud {
            let name = String(key.split(separator: "|", maxSplits: 1).last ?? "")
            let zone = report(remote)
            guard let mine = local[key] else {
                reports[zone]?.onlyInCloud.append((name, remote))
                continue
            }
            let differences = Set(mine.fields.keys).union(remote.fields.keys).sorted().compactMap { field -> (String, String?, String?)? in
                let left = mine.fields[field]
                let right = remote.fields[field]
                return left == right ? nil : (field, left, right)
            }
            if differences.isEmpty {
                reports[zone]?.matching += 1
            } else {
                reports[zone]?.differing.append((name, Item(database: remote.database, zone: remote.zone, entity: remote.entity,
                                                            objectID: mine.objectID, fields: mine.fields), differences))
            }
        }
        for (key, mine) in local where cloud[key] == nil {
            let name = String(key.split(separator: "|", maxSplits: 1).last ?? "")
            reports[report(mine)]?.onlyOnDevice.append((name, mine))
        }
        return reports.values.sorted { ($0.database, $0.zone) < ($1.database, $1.zone) }
    }

    static func show(_ reports: [ZoneReport], unreadable: [String], pending: Int, output: Output) {
        if reports.isEmpty { output.say("Nothing on the device and nothing in the cloud.") }
        for report in reports {
            output.say("\(report.database) database · \(report.zone): \(report.matching) matching, \(report.onlyInCloud.count) only in the cloud, "
                       + "\(report.onlyOnDevice.count) only on the device, \(report.differing.count) differing")
            var rows: [[String]] = []
            // A record by its name and, where it has one, its id attribute (what people recognise).
            func record(_ name: String, _ item: Item) -> String { item.fields["CD_id"].map { "\(name) (\($0))" } ?? name }
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
