import Foundation
import MeowWire

/// `meowctl snapshot export|import`: the whole cloud, or a device's two stores, to or from a
/// file the service itself writes or reads (a snapshot of any size: one inline must fit in a frame).
enum SnapshotCommand {
    static let help = """
    meowctl snapshot — the whole cloud, or a device's two stores, to or from a file

    Usage:
      meowctl snapshot export --socket SYNC_SOCKET (--credential ADMIN | --credential-file FILE) --file PATH
                              [--include-credentials] [--progress | --no-progress] [--json]
      meowctl snapshot import --socket SYNC_SOCKET (--credential ADMIN | --credential-file FILE) --file PATH [--json]
      meowctl snapshot export|import --socket DEVICE_SOCKET --file PATH [--json]
      meowctl snapshot export|import --dir DIR [--device NAME] --file PATH [--json]

    With an admin credential (--credential, --credential-file or MEOW_CREDENTIAL; or --dir without
    --device) the target is the cloud
    (admin.exportSnapshot / admin.importSnapshot); without one, or with --device, it is the
    store-service at the socket (snapshot.export / snapshot.import: both stores). The service
    itself writes or reads PATH, so PATH is on the service's machine and must be writable or
    readable by the user it runs as; a relative PATH is taken from meowctl's working directory.
    A service started with --snapshot-dir DIR takes paths inside DIR only; without it, only its
    own user (or root) may name a file: another user sends the snapshot inline (meowctl call).
    Never a link as the file, nor the service's own files; an import past the service's
    --max-snapshot-bytes is refused (limitExceeded) before it is read; a smaller one is read a
    piece at a time (the service never holds it whole).
    export writes the file 0600 (0640 in DIR), replacing it whole; the cloud's users' credentials are left out
    (null) unless --include-credentials. import replaces everything at once or, on any error,
    nothing. While it runs, its progress (phase, done/total) is shown on stderr when stderr is a
    terminal or with --progress (never with --json).
    Exit codes: 0 ok, 1 error reply, 2 unreachable, 64 usage.
    """

    static func run(_ arguments: [String]) async throws(CommandError) {
        guard let action = arguments.first, ["export", "import"].contains(action) else {
            throw .usage("meowctl snapshot needs export or import, e.g. meowctl snapshot export --socket PATH --credential-file FILE --file cloud.json")
        }
        let args = try Arguments.parse(Array(arguments.dropFirst()), command: "snapshot",
                                       options: ["socket", "credential", "credential-file", "file", "timeout"],
                                       flags: ["include-credentials", "progress", "no-progress"])
        guard let given = args.value("file") else { throw .usage("meowctl snapshot \(action) needs --file PATH.") }
        let path = given.hasPrefix("/") ? given : FileManager.default.currentDirectoryPath + "/" + given
        let credential = try args.credential()
        let toCloud = args.value("device") == nil && (credential != nil || args.value("dir") != nil)
        if toCloud {
            try await cloud(action, path: path, args: args)
        } else {
            try await device(action, path: path, args: args)
        }
    }

    private static func cloud(_ action: String, path: String, args: Arguments) async throws(CommandError) {
        let (socket, credential) = try args.adminTarget(for: "snapshot")
        let output = args.output
        let cloud = try await ServiceSession.open(socket: socket, credential: credential, output: output, timeout: try args.timeout(default: 600))
        defer { cloud.close() }
        if action == "export" {
            let result = try await cloud.callShowingProgress("admin.exportSnapshot", ["path": .string(path), "includeCredentials": .bool(args.has("include-credentials"))],
                                                             show: args.showsProgress)
            if output.json { output.emit(result); return }
            let records = result["tables"]?["records"]?.intValue ?? 0
            output.say("wrote \(path): \(result["bytes"]?.intValue ?? 0) bytes, \(records) record rows")
        } else {
            let result = try await cloud.callShowingProgress("admin.importSnapshot", ["path": .string(path)], show: args.showsProgress)
            if output.json { output.emit(result); return }
            output.say("imported \(path): \(result["users"]?.intValue ?? 0) users, \(result["zones"]?.intValue ?? 0) zones, \(result["records"]?.intValue ?? 0) records")
        }
    }

    private static func device(_ action: String, path: String, args: Arguments) async throws(CommandError) {
        let socket = try args.deviceSocket(for: "snapshot")
        let output = args.output
        let device = try await ServiceSession.open(socket: socket, output: output, timeout: try args.timeout(default: 600))
        defer { device.close() }
        guard device.hello.service == "store-service" else {
            throw output.failure("\(socket) is the \(device.hello.service), not a store-service; a cloud snapshot needs --credential ADMIN.", code: "usage")
        }
        let result = try await device.callShowingProgress("snapshot.\(action)", ["path": .string(path)], show: args.showsProgress)
        if output.json { output.emit(result); return }
        let stores = (result["stores"]?.objectValue ?? [:]).sorted { $0.key < $1.key }
        if action == "export" {
            let rows = stores.map { name, tables in "\(name) \(tables.objectValue?.values.compactMap(\.intValue).reduce(0, +) ?? 0)" }
            output.say("wrote \(path): \(result["bytes"]?.intValue ?? 0) bytes; rows: \(rows.joined(separator: ", "))")
        } else {
            output.say("imported \(path): rows \(stores.map { "\($0.key) \($0.value.intValue ?? 0)" }.joined(separator: ", "))")
        }
    }
}
