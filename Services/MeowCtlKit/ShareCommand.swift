import CloudWire
import Foundation
import MeowWire
import StoreWire

/// `meowctl share …`: sharing a care session through a device's cloud mirror (share.* ops).
enum ShareCommand {
    static let help = """
    meowctl share — share a care session with other people, through a device's cloud mirror

    Usage (the device is a store-service started with --sync-socket):
      meowctl share create      --socket PATH (--session ID | --object OBJECT_ID) [--participant USER[:readOnly|readWrite]]... [--progress | --no-progress] [--json]
          The owner shares a session (its id or object ID) and its events: a new share zone.
          --object shares any object of the device's model (and what hangs from it) instead.
      meowctl share invite      --socket PATH --zone ZONE --user USER [--permission readOnly|readWrite] [--json]
      meowctl share permission  --socket PATH --zone ZONE --user USER --permission none|readOnly|readWrite [--json]
      meowctl share remove      --socket PATH --zone ZONE --user USER [--json]
      meowctl share stop        --socket PATH --zone ZONE [--json]
          The owner's side: invite a participant, change or remove one, end the share.
      meowctl share owned       --socket PATH [--json]
          The shares this user owns: zone, root, records, and each participant.
      meowctl share invitations --socket PATH [--json]
      meowctl share accept      --socket PATH --zone ZONE --owner OWNER [--json]
      meowctl share leave       --socket PATH --zone ZONE --owner OWNER [--json]
          The participant's side: accepted records land in the device's shared store only.
      meowctl share list        --socket PATH [--json]
          The shared store's share zones and this user's permission in each.

    The default permission is readOnly. Exit codes: 0 ok, 1 error reply (e.g. permissionFailure,
    alreadyShared, mirrorNotConfigured), 2 unreachable, 64 usage.
    """

    static let subcommands = ["create", "invite", "permission", "remove", "stop", "owned", "invitations", "accept", "leave", "list"]

    static func run(_ arguments: [String]) async throws(CommandError) {
        let args = try Arguments.parse(arguments, command: "share",
                                       options: ["socket", "session", "object", "participant", "zone", "user", "permission", "owner", "timeout"],
                                       flags: ["progress", "no-progress"])
        let subcommand = try args.subcommand(of: "share", subcommands)
        let socket = try args.deviceSocket(for: "share \(subcommand)")
        let output = args.output
        let device = try await ServiceSession.open(socket: socket, output: output, timeout: try args.timeout(default: 120))
        defer { device.close() }
        switch subcommand {
        case "create": try await create(args, device)
        case "invite":
            try await participants(device, "share.invite", try zoneAndUser(args, permission: args.value("permission") ?? "readOnly"))
        case "permission":
            try await participants(device, "share.setPermission",
                                   try zoneAndUser(args, permission: try args.required("permission", for: "share permission")))
        case "remove": try await participants(device, "share.removeParticipant", try zoneAndUser(args, permission: nil))
        case "stop":
            let zone = try args.required("zone", for: "share stop")
            let result = try await device.call("share.stop", ["zoneName": .string(zone)])
            output.json ? output.emit(["ok": true, "result": result]) : output.say("Stopped sharing \(zone); participants lose it at their next fetch.")
        case "invitations": try await invitations(device)
        case "owned": try await owned(device)
        case "accept", "leave": try await participate(args, device, subcommand)
        default: try await list(device)
        }
    }

    private static func zoneAndUser(_ args: Arguments, permission: String?) throws(CommandError) -> [String: JSONValue] {
        var params: [String: JSONValue] = ["zoneName": .string(try args.required("zone", for: "share")),
                                           "user": .string(try args.required("user", for: "share"))]
        if let permission { params["permission"] = .string(permission) }
        return params
    }

    private static func create(_ args: Arguments, _ device: ServiceSession) async throws(CommandError) {
        let session: String
        if let object = args.value("object") {
            session = object
        } else {
            session = try await SessionsCommand.resolve(try args.required("session", for: "share create"), on: device)
        }
        var participants: [JSONValue] = []
        for entry in args.all("participant") {
            let parts = entry.split(separator: ":", maxSplits: 1).map(String.init)
            guard let user = parts.first, !user.isEmpty else { throw .usage("--participant needs USER or USER:PERMISSION, got '\(entry)'.") }
            participants.append(["user": .string(user), "permission": .string(parts.count > 1 ? parts[1] : "readOnly")])
        }
        let result = try await device.callShowingProgress("share.create", ["objectID": .string(session), "participants": .array(participants)],
                                                          show: args.showsProgress)
        if device.output.json { return device.output.emit(["ok": true, "result": result]) }
        let created = try device.read(ShareCreation.self, from: result, op: "share.create")
        device.output.say("Shared \(session)")
        device.output.say("  zone \(created.zoneName), \(created.movedRecords) records moved into it")
        if created.pendingRecords > 0 {
            // The share exists; the rest of the session moves with the next send.
            device.output.say("  \(created.pendingRecords) records still to move (\(created.sendError.map { "\($0.code)" } ?? "stopped")): they go with the next `meowctl sync send`")
        }
        device.output.say(participantTable(created.share))
    }

    private static func participants(_ device: ServiceSession, _ op: String, _ params: [String: JSONValue]) async throws(CommandError) {
        let result = try await device.call(op, params)
        if device.output.json { return device.output.emit(["ok": true, "result": result]) }
        device.output.say("\(op) \(params["user"].cell) in \(params["zoneName"].cell): done")
        device.output.say(participantTable(try device.read(ShareResult.self, from: result, op: op).share))
    }

    static func participantTable(_ share: CloudRecord?) -> String {
        Table(["PARTICIPANT", "ROLE", "PERMISSION", "ACCEPTANCE"], (share?.shareInfo?.participants ?? []).map {
            [$0.userRecordName, $0.role.rawValue, $0.permission.rawValue, $0.acceptanceStatus.rawValue]
        }).rendered
    }

    private static func invitations(_ device: ServiceSession) async throws(CommandError) {
        let reply = try await device.call("share.invitations")
        if device.output.json { return device.output.emit(["ok": true, "invitations": reply["invitations"] ?? []]) }
        let invitations = try device.read(InvitationsResult.self, from: reply, op: "share.invitations").invitations
        device.output.say(Table(["ZONE", "OWNER", "PERMISSION", "STATUS", "ROLE"], invitations.map {
            [$0.zoneID.zoneName, $0.zoneID.ownerName, $0.permission.rawValue, $0.acceptanceStatus.rawValue, $0.role.rawValue]
        }).rendered)
    }

    private static func owned(_ device: ServiceSession) async throws(CommandError) {
        let reply = try await device.call("share.owned")
        if device.output.json { return device.output.emit(["ok": true, "shares": reply["shares"] ?? []]) }
        var rows: [[String]] = []
        for share in try device.read(OwnedSharesResult.self, from: reply, op: "share.owned").shares {
            let participants = share.participants.filter { $0.role != .owner }
            let people = participants.map { "\($0.user):\($0.permission.rawValue) (\($0.acceptanceStatus.rawValue))" }
            rows.append([share.zoneID.zoneName, share.rootRecordName ?? "(zone-wide)", String(share.recordCount),
                         share.publicPermission.rawValue, people.isEmpty ? "–" : people.joined(separator: ", ")])
        }
        device.output.say(Table(["ZONE", "ROOT", "RECORDS", "PUBLIC", "PARTICIPANTS"], rows).rendered)
    }

    private static func participate(_ args: Arguments, _ device: ServiceSession, _ subcommand: String) async throws(CommandError) {
        let zone = try args.required("zone", for: "share \(subcommand)")
        let owner = try args.required("owner", for: "share \(subcommand)")
        let result = try await device.call("share.\(subcommand)", ["zoneName": .string(zone), "ownerName": .string(owner)])
        if device.output.json { return device.output.emit(["ok": true, "result": result]) }
        if subcommand == "accept" {
            let accepted = try device.read(ShareAcceptance.self, from: result, op: "share.accept")
            device.output.say("Accepted \(owner)'s share \(zone): \(accepted.fetch.changedRecords) records fetched into the shared store")
        } else {
            let left = try device.read(SyncFetchResult.self, from: result, op: "share.leave")
            device.output.say("Left \(owner)'s share \(zone); removed zones: \(JSONValue.array(left.zonesRemoved.map { .string($0) }).cell)")
        }
    }

    private static func list(_ device: ServiceSession) async throws(CommandError) {
        let reply = try await device.call("share.list")
        if device.output.json { return device.output.emit(["ok": true, "shares": reply["shares"] ?? []]) }
        device.output.say(Table(["ZONE", "OWNER", "PERMISSION"], try device.read(ShareListResult.self, from: reply, op: "share.list").shares.map {
            [$0.zoneName, $0.ownerName, $0.permission.rawValue]
        }).rendered)
    }
}
