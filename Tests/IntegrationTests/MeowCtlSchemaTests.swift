import Foundation
import MeowWire
import TestSupport
import Testing
import class MeowCareCluster.MeowProcess

/// `meowctl schema` against a live sync-service.
@Suite("meowctl schema", .timeLimit(.minutes(3)))
struct MeowCtlSchemaTests {
    static let admin = "admin-secret-for-tests"

    @Test("meowctl schema exports, imports, diffs, deploys and resets development; a malformed file names its line and changes nothing")
    func schemaLife() async throws {
        let directory = TemporaryDirectory(prefix: "mcs")
        try #"{"users":[{"user":"olivia","credential":"olivia-secret"}]}"#.write(toFile: directory.file("users.json"), atomically: true, encoding: .utf8)
        let socket = directory.file("s.sock")
        let cloud = try await MeowProcess.start("sync-service", ["--socket", socket, "--in-memory", "--users", directory.file("users.json"),
                                                                    "--admin-credential", Self.admin])
        let olivia = try WireClient(socketPath: socket)
        try await olivia.hello(client: "t", credential: "olivia-secret")
        _ = try await olivia.call("records.modify", ["database": "private", "saves": [
            ["recordName": "e1", "zoneID": ["zoneName": "_defaultZone"], "recordType": "CD_CareEvent", "fields": ["CD_note": ["type": "string", "value": "hi"]]],
        ]])
        let target = ["--socket", socket, "--credential", Self.admin]
        func meowctl(_ arguments: [String]) async throws -> MeowProcess.Completion { try await MeowProcess.run("meowctl", ["schema"] + arguments + target) }

        let diff = try await meowctl(["diff"])
        #expect(diff.status == 0)
        #expect(diff.stdout.contains("add") && diff.stdout.contains("CD_note") && diff.stdout.contains("Deployable: meowctl schema deploy"), "\(diff.stdout)")
        let deploy = try await meowctl(["deploy", "--json"])
        #expect(deploy.status == 0)
        #expect(deploy.stdout.contains("\"field\" : \"CD_note\""), "\(deploy.stdout)")
        let file = directory.file("production.ckdb")
        #expect(try await meowctl(["export", "--environment", "production", "--file", file]).status == 0)
        #expect(try String(contentsOfFile: file, encoding: .utf8).contains("RECORD TYPE \"CD_CareEvent\" (\n        \"CD_note\" STRING,"))

        try "DEFINE SCHEMA\n  RECORD TYPE CD_Visit (\"CD_clinic\" STRNG);\n".write(toFile: directory.file("bad.ckdb"), atomically: true, encoding: .utf8)
        let bad = try await meowctl(["import", "--file", directory.file("bad.ckdb")])
        #expect(bad.status == 1)
        #expect(bad.stderr.contains("line 2, column 37"), "\(bad.stderr)")
        try "DEFINE SCHEMA\n  RECORD TYPE CD_Visit (\"CD_clinic\" STRING QUERYABLE, GRANT READ TO \"_world\");\n"
            .write(toFile: directory.file("visit.ckdb"), atomically: true, encoding: .utf8)
        let imported = try await meowctl(["import", "--file", directory.file("visit.ckdb")])
        #expect(imported.status == 0)
        #expect(imported.stdout.contains("1 new field(s); new record types: CD_Visit"), "\(imported.stdout)")
        let exported = try await meowctl(["export"])
        #expect(exported.stdout.contains("RECORD TYPE \"CD_Visit\""))

        let reset = try await meowctl(["reset-development"])
        #expect(reset.status == 0 && reset.stdout.contains("Development reset"), "\(reset.stdout)")
        let after = try await meowctl(["diff"])
        #expect(after.status == 0 && after.stdout.contains("Production has everything development has."), "\(after.stdout)")
        let user = try await MeowProcess.run("meowctl", ["schema", "deploy", "--socket", socket, "--credential", "olivia-secret"])
        #expect(user.status == 1 && user.stderr.contains("permissionFailure"), "\(user.stderr)")
        olivia.close()
        _ = await cloud.stop()
    }
}
