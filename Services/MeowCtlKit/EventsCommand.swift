import Foundation
import MeowWire
import StoreWire

/// `meowctl events add|list` and `meowctl sessions add|list`: MeowCare's care log on one device,
/// through the store-service's own ops (context.open, object.insert, context.save, fetch).
enum EventsCommand {
    static let help = """
    meowctl events — add and list care events on a device (a store-service)

    Usage:
      meowctl events add  --socket PATH --type TYPE [--value N] [--note TEXT] [--at ISO8601]
                          [--session ID] [--id ID] [--store Private|Shared] [--json]
          Inserts one CareEvent and saves it. --session is the session's id (e.g. mochi, or
          default-session) or its object ID; the event goes to the session's store. Without
          --session the event has no session: an orphan, as old data has them. --at defaults to now. Prints where
          the event was saved and why (the store routing reason).
      meowctl events list --socket PATH [--session ID] [--type TYPE] [--store S] [--limit N] [--json]
          The newest events first (default limit 50; 0 = all).

    TYPE is one of the model's event types: bloodGlucose, insulin, feeding, water, medication,
    weight, litter, vomit, symptom, vetVisit, vaccination, grooming, play, note.
    Exit codes: 0 ok, 1 error reply (e.g. an unknown type or session), 2 unreachable, 64 usage.
    """

    static func run(_ arguments: [String]) async throws(CommandError) {
        let args = try Arguments.parse(arguments, command: "events",
                                       options: ["socket", "type", "value", "note", "at", "session", "id", "store", "limit", "timeout"])
        switch try args.subcommand(of: "events", ["add", "list"]) {
        case "add": try await add(args)
        default: try await list(args)
        }
    }

    static func add(_ args: Arguments) async throws(CommandError) {
        let socket = try args.deviceSocket(for: "events add")
        let type = try args.required("type", for: "events add")
        let output = args.output
        let now = Date().formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
        var values: [String: JSONValue] = [
            "id": .string(args.value("id") ?? "\(type)-\(UUID().uuidString.prefix(8).lowercased())"),
            "eventTypeRaw": .string(type), "occurredAt": .string(args.value("at") ?? now), "updatedAt": .string(now)]
        if let text = args.value("value") {
            guard let number = Double(text) else { throw .usage("--value needs a number, got '\(text)'.") }
            values["value"] = .double(number)
        }
        if let note = args.value("note") { values["note"] = .string(note) }
        let device = try await ServiceSession.open(socket: socket, output: output, timeout: try args.timeout(default: 30))
        defer { device.close() }
        if let session = args.value("session") {
            values["session"] = .string(try await SessionsCommand.resolve(session, on: device))
        }
        let saved = try await insertAndSave("CareEvent", values, store: args.value("store"), on: device)
        let entry = saved.inserted?.first
        let unexportable = !(saved.unexportable ?? []).isEmpty
        if output.json {
            output.emit(["ok": true, "objectID": entry.map { .string($0.objectID) } ?? .null, "store": entry.map { .string($0.store) } ?? .null,
                         "reason": entry.map { .string($0.reason.rawValue) } ?? .null, "values": .object(values), "unexportable": .bool(unexportable)])
            return
        }
        output.say("Added \(type)\(values["value"].map { " \($0.cell)" } ?? "") at \(values["occurredAt"].cell) as \(values["id"].cell)")
        output.say(savedLine(entry))
        if values["session"] == nil {
            MeowCtl.printError("meowctl: note: no --session: the event belongs to no session (an orphan until repair.orphans attaches it).")
        }
        if unexportable {
            MeowCtl.printError("meowctl: warning: the event is in the shared store outside any share zone; the cloud mirror cannot export it (seed 002). Run 'meowctl doctor'.")
        }
    }

    /// One object inserted and saved in a context of meowctl's own (the author a mirror exports).
    static func insertAndSave(_ entity: String, _ values: [String: JSONValue], store: String?, on device: ServiceSession) async throws(CommandError) -> SaveResult {
        let opened = try device.read(ContextOpenResult.self, from: try await device.call("context.open", ["name": "meowctl", "author": "meowctl"]), op: "context.open")
        var insert: [String: JSONValue] = ["context": .string(opened.context), "entity": .string(entity), "values": .object(values)]
        if let store { insert["store"] = .string(store) }
        _ = try await device.call("object.insert", insert)
        return try device.read(SaveResult.self, from: try await device.call("context.save", ["context": .string(opened.context)]), op: "context.save")
    }

    /// Where a new object went and why.
    static func savedLine(_ entry: SaveResult.Inserted?) -> String {
        "  saved \(entry?.objectID ?? "–") → \(entry?.store ?? "–") store (\(entry?.reason.rawValue ?? "–"))"
    }

    static func list(_ args: Arguments) async throws(CommandError) {
        let socket = try args.deviceSocket(for: "events list")
        let output = args.output
        let limit = try args.integer("limit", default: 50) ?? 50
        let device = try await ServiceSession.open(socket: socket, output: output, timeout: try args.timeout(default: 30))
        defer { device.close() }
        var terms: [String] = []
        var arguments: [JSONValue] = []
        if let session = args.value("session") {
            terms.append("session == %@")
            arguments.append(.string(try await SessionsCommand.resolve(session, on: device)))
        }
        if let type = args.value("type") {
            terms.append("eventTypeRaw == %@")
            arguments.append(.string(type))
        }
        let sessions = try await SessionsCommand.sessionIDs(on: device)
        let rows = try await device.rows(entity: "CareEvent", predicate: terms.isEmpty ? nil : terms.joined(separator: " AND "),
                                         arguments: arguments, stores: args.value("store").map { [$0] },
                                         sort: [["key": "occurredAt", "ascending": false]], limit: limit == 0 ? nil : limit)
        if output.json {
            output.emit(["ok": true, "events": .array(rows.map { row in
                ["objectID": row["objectID"] ?? .null, "store": row["store"] ?? .null, "zone": row["zone"] ?? .null,
                 "uuid": row["uuid"] ?? .null, "id": row["id"] ?? .null, "type": row["eventTypeRaw"] ?? .null,
                 "occurredAt": row["occurredAt"] ?? .null, "value": row["value"] ?? .null, "note": row["note"] ?? .null,
                 "session": row["session"]?.stringValue.flatMap { sessions[$0] }.map { .string($0) } ?? .null]
            })])
            return
        }
        output.say(Table(["OCCURRED AT", "TYPE", "VALUE", "NOTE", "SESSION", "STORE", "ID"], rows.map { row in
            [row["occurredAt"].cell, row["eventTypeRaw"].cell, row["value"].cell, row["note"].cell,
             row["session"]?.stringValue.flatMap { sessions[$0] } ?? "–", row["store"].cell, row["id"].cell]
        }).rendered)
        output.say("\(rows.count) event\(rows.count == 1 ? "" : "s")")
    }
}

enum SessionsCommand {
    static let help = """
    meowctl sessions — add and list care sessions (a cat's care log) on a device

    Usage:
      meowctl sessions add  --socket PATH --id ID --title TITLE [--store Private|Shared] [--default] [--json]
          Inserts one CareSession and saves it (default: routed like the app, i.e. the private store).
      meowctl sessions list --socket PATH [--store S] [--json]
          Every session with its store, share zone and number of events.

    Exit codes: 0 ok, 1 error reply, 2 unreachable, 64 usage.
    """

    static func run(_ arguments: [String]) async throws(CommandError) {
        let args = try Arguments.parse(arguments, command: "sessions", options: ["socket", "id", "title", "store", "timeout"], flags: ["default"])
        switch try args.subcommand(of: "sessions", ["add", "list"]) {
        case "add": try await add(args)
        default: try await list(args)
        }
    }

    static func add(_ args: Arguments) async throws(CommandError) {
        let socket = try args.deviceSocket(for: "sessions add")
        let id = try args.required("id", for: "sessions add")
        let title = try args.required("title", for: "sessions add")
        let output = args.output
        let device = try await ServiceSession.open(socket: socket, output: output, timeout: try args.timeout(default: 30))
        defer { device.close() }
        let now = Date().formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
        let values: [String: JSONValue] = ["id": .string(id), "title": .string(title), "createdAt": .string(now), "isDefault": .bool(args.has("default"))]
        let entry = try await EventsCommand.insertAndSave("CareSession", values, store: args.value("store"), on: device).inserted?.first
        if output.json {
            output.emit(["ok": true, "objectID": entry.map { .string($0.objectID) } ?? .null, "store": entry.map { .string($0.store) } ?? .null,
                         "reason": entry.map { .string($0.reason.rawValue) } ?? .null, "values": .object(values)])
        } else {
            output.say("Added session \(id) (\"\(title)\")")
            output.say(EventsCommand.savedLine(entry))
        }
    }

    static func list(_ args: Arguments) async throws(CommandError) {
        let socket = try args.deviceSocket(for: "sessions list")
        let output = args.output
        let device = try await ServiceSession.open(socket: socket, output: output, timeout: try args.timeout(default: 30))
        defer { device.close() }
        let rows = try await device.rows(entity: "CareSession", stores: args.value("store").map { [$0] }, sort: [["key": "id", "ascending": true]])
        var counts: [String: Int] = [:]
        for event in try await device.rows(entity: "CareEvent", predicate: "session != nil") {
            if let session = event["session"]?.stringValue { counts[session, default: 0] += 1 }
        }
        func count(_ row: [String: JSONValue]) -> Int { row["objectID"]?.stringValue.flatMap { counts[$0] } ?? 0 }
        if output.json {
            output.emit(["ok": true, "sessions": .array(rows.map { row in
                ["objectID": row["objectID"] ?? .null, "store": row["store"] ?? .null, "zone": row["zone"] ?? .null,
                 "uuid": row["uuid"] ?? .null, "id": row["id"] ?? .null, "title": row["title"] ?? .null,
                 "isDefault": row["isDefault"] ?? .null, "events": .int(count(row))]
            })])
            return
        }
        output.say(Table(["ID", "TITLE", "EVENTS", "STORE", "ZONE", "DEFAULT", "OBJECT ID"], rows.map { row in
            [row["id"].cell, row["title"].cell, String(count(row)), row["store"].cell, row["zone"].cell,
             row["isDefault"].cell, row["objectID"].cell]
        }).rendered)
    }

    /// A session's object ID from its id attribute (or the object ID itself); exit 1 if none.
    static func resolve(_ session: String, on device: ServiceSession) async throws(CommandError) -> String {
        if session.hasPrefix("x-coredata:") { return session }
        let found = try await device.rows(entity: "CareSession", predicate: "id == %@", arguments: [.string(session)])
        guard let objectID = found.first?["objectID"]?.stringValue else {
            throw device.output.failure("No CareSession with id '\(session)' on this device ('meowctl sessions list' shows them).", code: "unknownSession")
        }
        if found.count > 1 {
            MeowCtl.printError("meowctl: note: \(found.count) sessions have id '\(session)' (one per store?); using \(objectID).")
        }
        return objectID
    }

    /// Session object ID → its id attribute, for showing events' sessions by name.
    static func sessionIDs(on device: ServiceSession) async throws(CommandError) -> [String: String] {
        var names: [String: String] = [:]
        for row in try await device.rows(entity: "CareSession") {
            if let objectID = row["objectID"]?.stringValue { names[objectID] = row["id"]?.stringValue ?? objectID }
        }
        return names
    }
}
