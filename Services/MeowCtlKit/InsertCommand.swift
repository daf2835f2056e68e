import Foundation
import MeowWire

/// `meowctl insert`: one object of any entity of the device's model, saved — what `events add`
/// and `sessions add` are for MeowCare's model, for a deployment on a team's own model.
enum InsertCommand {
    static let help = """
    meowctl insert — insert one object of any entity of the device's model and save it

    Usage:
      meowctl insert --socket PATH ENTITY [VALUES_JSON] [--store Private|Shared] [--json]

    VALUES_JSON is an object of attribute values (and to-one relationships by object ID) in the
    wire's value forms (docs/protocol-store-service.md); the model's defaults fill the rest.
    The object is routed like the app's (the private store) unless --store names one. Prints
    its object ID and store. Exit codes: 0 ok, 1 error reply, 2 unreachable, 64 usage.
    """

    static func run(_ arguments: [String]) async throws(CommandError) {
        let args = try Arguments.parse(arguments, command: "insert", options: ["socket", "store", "timeout"])
        guard let entity = args.positional.first, args.positional.count <= 2 else {
            throw .usage("meowctl insert takes ENTITY and at most one VALUES_JSON argument (quote it), e.g. meowctl insert --dir DIR Trip '{\"name\": \"Kyoto\"}'.")
        }
        var values: [String: JSONValue] = [:]
        if args.positional.count == 2 {
            guard let parsed = (try? JSONParser.parse(args.positional[1]))?.objectValue else {
                throw .usage("VALUES_JSON must be a JSON object, e.g. '{\"name\": \"Kyoto\"}'; got: \(args.positional[1])")
            }
            values = parsed
        }
        let socket = try args.deviceSocket(for: "insert")
        let output = args.output
        let device = try await ServiceSession.open(socket: socket, output: output, timeout: try args.timeout(default: 30))
        defer { device.close() }
        let entry = try await EventsCommand.insertAndSave(entity, values, store: args.value("store"), on: device).inserted?.first
        if output.json {
            output.emit(["ok": true, "entity": .string(entity), "objectID": entry.map { .string($0.objectID) } ?? .null,
                         "store": entry.map { .string($0.store) } ?? .null, "reason": entry.map { .string($0.reason.rawValue) } ?? .null])
        } else {
            output.say("Added a \(entity)")
            output.say(EventsCommand.savedLine(entry))
        }
    }
}
