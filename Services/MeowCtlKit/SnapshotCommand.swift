import Foundation
import MeowWire

/// `meowctl snapshot export|import`: the whole cloud to or from a file, through the
/// sync-service's file path (a snapshot of any size: one inline must fit in a frame).
enum SnapshotCommand {
    static let help = """
    meowctl snapshot — the whole cloud to or from a file

    Usage:
      meowctl snapshot export --socket SYNC_SOCKET (--credential ADMIN | --credential-file FILE) --file PATH
                              [--include-credentials] [--json]
      meowctl snapshot import --socket SYNC_SOCKET (--credential ADMIN | --credential-file FILE) --file PATH [--json]

    The sync-service itself writes or reads PATH (admin.exportSnapshot / admin.importSnapshot
    with params.path), so PATH is on the service's machine and must be writable or readable by
    the user it runs as; a relative PATH is taken from meowctl's working directory. export writes
    the file 0600, replacing it whole; users' credentials are left out (null) unless
    --include-credentials. import replaces the whole cloud in one transaction.
    Exit codes: 0 ok, 1 error reply, 2 unreachable, 64 usage.
    """

    static func run(_ arguments: [String]) async throws(CommandError) {
        guard let action = arguments.first, ["export", "import"].contains(action) else {
            throw .usage("meowctl snapshot needs export or import, e.g. meowctl snapshot export --socket PATH --credential-file FILE --file cloud.json")
        }
        let args = try Arguments.parse(Array(arguments.dropFirst()), command: "snapshot",
                                       options: ["socket", "credential", "file", "timeout"], flags: ["include-credentials"])
        let (socket, credential) = try args.adminTarget(for: "snapshot")
        guard let given = args.value("file") else { throw .usage("meowctl snapshot \(action) needs --file PATH.") }
        let path = given.hasPrefix("/") ? given : FileManager.default.currentDirectoryPath + "/" + given
        let output = args.output
        let cloud = try await ServiceSession.open(socket: socket, credential: credential, output: output, timeout: try args.timeout(default: 600))
        defer { cloud.close() }
        if action == "export" {
            let result = try await cloud.call("admin.exportSnapshot", ["path": .string(path), "includeCredentials": .bool(args.has("include-credentials"))])
            if output.json { output.emit(result); return }
            let records = result["tables"]?["records"]?.intValue ?? 0
            output.say("wrote \(path): \(result["bytes"]?.intValue ?? 0) bytes, \(records) record rows")
        } else {
            let result = try await cloud.call("admin.importSnapshot", ["path": .string(path)])
            if output.json { output.emit(result); return }
            output.say("imported \(path): \(result["users"]?.intValue ?? 0) users, \(result["zones"]?.intValue ?? 0) zones, \(result["records"]?.intValue ?? 0) records")
        }
    }
}
