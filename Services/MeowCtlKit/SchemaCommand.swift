import Foundation
import MeowWire

/// `meowctl schema`: the cloud's schema through its life — export and import as CloudKit's
/// schema language, development against production, deploy, and development reset.
enum SchemaCommand {
    static let help = """
    meowctl schema — the cloud's schema: export, import, diff, deploy, reset development

    Usage:
      meowctl schema export            --socket SYNC (--credential ADMIN | --credential-file FILE) [--environment development|production] [--file PATH] [--json]
      meowctl schema import            --socket SYNC (--credential ADMIN | --credential-file FILE) --file PATH [--json]
      meowctl schema diff              --socket SYNC (--credential ADMIN | --credential-file FILE) [--json]
      meowctl schema deploy            --socket SYNC (--credential ADMIN | --credential-file FILE) [--json]
      meowctl schema reset-development --socket SYNC (--credential ADMIN | --credential-file FILE) [--json]

    export prints an environment's schema (default development) in CloudKit's schema language
    (admin.exportSchema), or writes it to --file PATH (meowctl writes it). import reads PATH (here,
    on meowctl's side) and adds its record types and fields to development's schema
    (admin.importSchema): additive, and a malformed file or a field given another type changes
    nothing. diff lists what a deploy would add to production, and what it refuses
    (admin.diffSchema; exit 1 when development cannot be deployed). deploy adds development's
    record types and fields to production (admin.deploySchema). reset-development clears
    development's data and returns its schema to production's (admin.resetDevelopment).
    Exit codes: 0 ok, 1 error reply (or diff: not deployable), 2 unreachable, 64 usage.
    """

    static func run(_ arguments: [String]) async throws(CommandError) {
        let args = try Arguments.parse(arguments, command: "schema", options: ["socket", "credential", "credential-file", "environment", "file", "timeout"])
        let action = try args.subcommand(of: "schema", ["export", "import", "diff", "deploy", "reset-development"])
        let (socket, credential) = try args.adminTarget(for: "schema")
        let output = args.output
        let cloud = try await ServiceSession.open(socket: socket, credential: credential, output: output, timeout: try args.timeout(default: 30))
        defer { cloud.close() }
        switch action {
        case "export": try await export(cloud, args: args)
        case "import": try await importText(cloud, args: args)
        case "diff": try await diff(cloud, output: output)
        case "deploy":
            let result = try await cloud.call("admin.deploySchema")
            if output.json { output.emit(result); return }
            let fields = result["deployed"]?.arrayValue ?? []
            output.say(fields.isEmpty ? "Production already has development's schema; nothing deployed."
                                      : "Deployed to production: \(fields.count) field(s)\(newTypes(result)).")
            output.say(fieldTable(fields))
        default:
            let result = try await cloud.call("admin.resetDevelopment")
            if output.json { output.emit(result); return }
            output.say("Development reset: \(result["zonesRemoved"]?.intValue ?? 0) zone(s) removed; its schema is production's again.")
        }
    }

    static func path(_ given: String) -> String {
        given.hasPrefix("/") ? given : FileManager.default.currentDirectoryPath + "/" + given
    }

    static func export(_ cloud: ServiceSession, args: Arguments) async throws(CommandError) {
        var params: [String: JSONValue] = [:]
        if let environment = args.value("environment") { params["environment"] = .string(environment) }
        let result = try await cloud.call("admin.exportSchema", params)
        let text = result["text"]?.stringValue ?? ""
        if let file = args.value("file") {
            do { try text.write(toFile: path(file), atomically: true, encoding: .utf8) } catch {
                throw cloud.output.failure("Cannot write \(path(file)): \(error.localizedDescription)", code: "unavailable")
            }
            if cloud.output.json { cloud.output.emit(result); return }
            cloud.output.say("wrote \(path(file)): the \(result["environment"]?.stringValue ?? "") schema")
        } else if cloud.output.json {
            cloud.output.emit(result)
        } else {
            print(text, terminator: "")
        }
    }

    static func importText(_ cloud: ServiceSession, args: Arguments) async throws(CommandError) {
        guard let file = args.value("file") else { throw .usage("meowctl schema import needs --file PATH (a schema in CloudKit's schema language).") }
        let text: String
        do { text = try String(contentsOfFile: path(file), encoding: .utf8) } catch {
            throw .usage("Cannot read \(path(file)): \(error.localizedDescription)")
        }
        let result = try await cloud.call("admin.importSchema", ["text": .string(text)])
        if cloud.output.json { cloud.output.emit(result); return }
        let added = result["added"]?.arrayValue ?? []
        cloud.output.say("Imported into development: \(added.count) new field(s)\(newTypes(result)), \(result["unchanged"]?.intValue ?? 0) already there.")
        if !added.isEmpty { cloud.output.say(fieldTable(added)) }
    }

    static func diff(_ cloud: ServiceSession, output: Output) async throws(CommandError) {
        let result = try await cloud.call("admin.diffSchema")
        let deployable = result["deployable"]?.boolValue ?? false
        if output.json {
            output.emit(result)
        } else if result["identical"]?.boolValue == true {
            output.say("Production has everything development has.")
        } else {
            var rows: [[String]] = []
            for field in result["added"]?.arrayValue ?? [] { rows.append(["add", cell(field, "recordType"), cell(field, "field"), cell(field, "type")]) }
            for field in result["removed"]?.arrayValue ?? [] { rows.append(["remove (refused)", cell(field, "recordType"), cell(field, "field"), cell(field, "type")]) }
            for field in result["retyped"]?.arrayValue ?? [] {
                rows.append(["retype (refused)", cell(field, "recordType"), cell(field, "field"), "\(cell(field, "production")) → \(cell(field, "development"))"])
            }
            output.say(Table(["CHANGE", "RECORD TYPE", "FIELD", "TYPE"], rows).rendered)
            output.say(deployable ? "Deployable: meowctl schema deploy" : "Not deployable: production's fields are never removed or retyped.")
        }
        if !deployable { throw .errorReply }
    }

    static func cell(_ value: JSONValue, _ key: String) -> String { value[key]?.stringValue ?? "" }

    static func fieldTable(_ fields: [JSONValue]) -> String {
        Table(["RECORD TYPE", "FIELD", "TYPE"], fields.map { [cell($0, "recordType"), cell($0, "field"), cell($0, "type")] }).rendered
    }

    static func newTypes(_ result: JSONValue) -> String {
        let types = (result["newRecordTypes"]?.arrayValue ?? []).compactMap(\.stringValue)
        return types.isEmpty ? "" : "; new record types: \(types.joined(separator: ", "))"
    }
}
