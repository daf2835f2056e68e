import CloudWire
import Foundation
import MeowWire
import TestSupport
import Testing
import class MeowCareCluster.MeowProcess

/// Who × what against a live sync-service: every cell is a real request, and the whole matrix
/// must equal the table in docs/SECURITY.md, so the document cannot drift from the code.
@Suite("Authorization matrix")
struct AuthorizationMatrixTests {
    static let zone = "com.apple.coredata.cloudkit.share.MATRIX"
    static let who = ["owner", "readWrite participant", "readOnly participant", "pending invitee", "removed participant",
                      "stranger", "admin", "no credential"]
    static let what = ["read", "write", "delete", "share", "fetch changes", "admin"]
    static let credentials: [String: String?] = [
        "owner": "owner-secret", "readWrite participant": "rw-secret", "readOnly participant": "ro-secret",
        "pending invitee": "pending-secret", "removed participant": "removed-secret", "stranger": "stranger-secret",
        "admin": "admin-secret-for-tests", "no credential": nil,
    ]
    static let users = ["owner": "owner", "readWrite participant": "rw", "readOnly participant": "ro", "pending invitee": "pending",
                        "removed participant": "removed", "stranger": "stranger"]

    static var document: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("docs/SECURITY.md")
    }

    /// The documented matrix: the markdown table after "## The matrix".
    static func documented() throws -> [String: [String]] {
        let text = try String(contentsOf: document, encoding: .utf8)
        let section = try #require(text.components(separatedBy: "## The matrix").dropFirst().first)
        var table: [String: [String]] = [:]
        for line in section.split(separator: "\n") where line.hasPrefix("| ") && !line.contains("---") {
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "`", with: "") }
            guard cells.count == what.count + 1, who.contains(cells[0]) else { continue }
            table[cells[0]] = Array(cells.dropFirst())
        }
        return table
    }

    /// ok, or the error code (a partialFailure's item code when there is one).
    static func outcome(_ client: WireClient, _ op: String, _ params: JSONValue) async -> String {
        do {
            _ = try await client.call(op, params)
            return "ok"
        } catch {
            if error.code == .partialFailure, let item = error.details["partialErrors"]?.objectValue?.values.first,
               let code = item["code"]?.stringValue {
                return code
            }
            return error.code.rawValue
        }
    }

    @Test("every cell of who × what gets the documented answer")
    func matrix() async throws {
        let directory = TemporaryDirectory()
        let users = Self.users.map { #"{"user":"\#($0.value)","credential":"\#(Self.credentials[$0.key]!!)"}"# }
        try #"{"users":[\#(users.joined(separator: ","))]}"#.write(toFile: directory.file("users.json"), atomically: true, encoding: .utf8)
        let service = try await MeowProcess.start("sync-service", ["--socket", directory.file("s.sock"), "--in-memory",
                                                                      "--users", directory.file("users.json"), "--admin-credential", "admin-secret-for-tests"])
        func connect(_ role: String) async throws -> WireClient {
            let client = try WireClient(socketPath: directory.file("s.sock"))
            try await client.hello(client: "matrix", credential: Self.credentials[role] ?? nil)
            return client
        }
        // The owner's zone-wide share, one record per role to delete, and the participants.
        let owner = try await connect("owner")
        let zoneID: JSONValue = ["zoneName": .string(Self.zone)]
        _ = try await owner.call("zones.save", ["database": "private", "zoneIDs": [zoneID]])
        var saves: [JSONValue] = [["recordName": "cloudkit.zoneshare", "recordType": "cloudkit.share", "zoneID": zoneID, "fields": [:]],
                                  ["recordName": "R", "recordType": "CD_CareEvent", "zoneID": zoneID, "fields": [:]]]
        for role in Self.who { saves.append(["recordName": .string("D-\(role)"), "recordType": "CD_CareEvent", "zoneID": zoneID, "fields": [:]]) }
        _ = try await owner.call("records.modify", ["database": "private", "saves": .array(saves)])
        for (user, permission) in [("rw", "readWrite"), ("ro", "readOnly"), ("pending", "readWrite"), ("removed", "readWrite")] {
            _ = try await owner.call("participants.add", ["zoneID": zoneID, "user": .string(user), "permission": .string(permission)])
        }
        for role in ["readWrite participant", "readOnly participant", "removed participant"] {
            let participant = try await connect(role)
            _ = try await participant.call("shares.accept", ["zoneID": ["zoneName": .string(Self.zone), "ownerName": "owner"]])
            participant.close()
        }
        _ = try await owner.call("participants.remove", ["zoneID": zoneID, "user": "removed"])

        var measured: [String: [String]] = [:]
        for role in Self.who {
            let client = try await connect(role)
            let database: JSONValue = role == "owner" ? "private" : "shared"
            let zone: JSONValue = role == "owner" ? zoneID : ["zoneName": .string(Self.zone), "ownerName": "owner"]
            var row: [String] = []
            row.append(await Self.outcome(client, "records.fetch", ["database": database, "recordIDs": [["recordName": "R", "zoneID": zone]]]))
            row.append(await Self.outcome(client, "records.modify", ["database": database, "saves": [
                ["recordName": .string("W-\(role)"), "recordType": "CD_CareEvent", "zoneID": zone, "fields": [:]]]]))
            row.append(await Self.outcome(client, "records.modify", ["database": database, "deletes": [
                ["recordName": .string("D-\(role)"), "zoneID": zone]]]))
            row.append(await Self.outcome(client, "participants.setPermission", ["zoneID": zone, "user": "ro", "permission": "readOnly"]))
            row.append(await Self.outcome(client, "changes.fetchZone", ["database": database, "zoneID": zone]))
            row.append(await Self.outcome(client, "admin.listUsers", [:]))
            measured[role] = row
            client.close()
        }
        owner.close()
        _ = await service.stop()
        #expect(!service.lines.contains { $0.contains("-secret") }, "a credential was written to the log")

        let rendered = Self.who.map { role in "| \(role) | " + measured[role]!.map { "`\($0)`" }.joined(separator: " | ") + " |" }
        let documented = try Self.documented()
        for role in Self.who {
            #expect(documented[role] == measured[role], "docs/SECURITY.md disagrees for \(role). Measured rows:\n\(rendered.joined(separator: "\n"))")
        }
    }

    @Test("every admin op is refused to a user's credential (permissionFailure) and to none (notAuthenticated), and changes nothing")
    func adminOpsAreAdminOnly() async throws {
        let directory = TemporaryDirectory()
        try #"{"users":[{"user":"owner","credential":"owner-secret"}]}"#.write(toFile: directory.file("users.json"), atomically: true, encoding: .utf8)
        let service = try await MeowProcess.start("sync-service", ["--socket", directory.file("s.sock"), "--in-memory",
                                                                      "--users", directory.file("users.json"), "--admin-credential", "admin-secret-for-tests"])
        let admin = try WireClient(socketPath: directory.file("s.sock"))
        try await admin.hello(client: "matrix", credential: "admin-secret-for-tests")
        let ops = try await admin.call("info", [:])["ops"]?.arrayValue?.compactMap(\.stringValue).filter { $0.hasPrefix("admin.") } ?? []
        for op in ["admin.exportSchema", "admin.importSchema", "admin.diffSchema", "admin.deploySchema", "admin.resetDevelopment"] {
            #expect(ops.contains(op), "\(op) is not offered")
        }
        let before = try await admin.call("admin.exportSnapshot", [:])["snapshot"]?["tables"]
        for credential in ["owner-secret", nil] {
            let client = try WireClient(socketPath: directory.file("s.sock"))
            try await client.hello(client: "matrix", credential: credential)
            for op in ops {
                let params: JSONValue = op == "admin.importSchema" ? ["text": "DEFINE SCHEMA RECORD TYPE CD_X (\"CD_y\" STRING);"] : [:]
                let outcome = await Self.outcome(client, op, params)
                #expect(outcome == (credential == nil ? "notAuthenticated" : "permissionFailure"), "\(op) answered \(outcome)")
            }
            client.close()
        }
        #expect(try await admin.call("admin.exportSnapshot", [:])["snapshot"]?["tables"] == before)
        admin.close()
        _ = await service.stop()
    }
}
