#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeowWire
import TestSupport
import Testing
import class MeowCareCluster.MeowProcess

/// Where credentials come from, who can read them, and how guessing them is slowed.
@Suite("Credential handling")
struct CredentialHandlingTests {
    static let admin = "admin-secret-for-tests"
    static let users = #"{"users":[{"user":"owner","credential":"owner-secret"},{"user":"alice","credential":"alice-secret"}]}"#

    static func mode(_ path: String) -> mode_t {
        var info = stat()
        return stat(path, &info) == 0 ? info.st_mode & 0o777 : 0
    }

    /// Writes `text` to `path` with `mode`.
    static func write(_ text: String, to path: String, mode: mode_t = 0o600) throws {
        try text.write(toFile: path, atomically: false, encoding: .utf8)
        chmod(path, mode)
    }

    static func startCloud(_ directory: TemporaryDirectory, _ extra: [String], environment: [String: String] = [:]) async throws -> MeowProcess {
        try users.write(toFile: directory.file("users.json"), atomically: true, encoding: .utf8)
        return try await MeowProcess.start("sync-service", ["--socket", directory.file("s.sock"), "--in-memory", "--users", directory.file("users.json")] + extra,
                                              environment: environment)
    }

    static func isAdmin(_ socket: String, _ credential: String) throws -> Bool {
        let connection = try RawConnection(path: socket)
        guard try connection.hello(credential: credential)["ok"] == true else { return false }
        connection.send(["id": 2, "op": "admin.listUsers"])
        return try connection.nextMessage()["ok"] == true
    }

    // MARK: The admin credential

    @Test("in a config file # starts a comment only at the start of a line: a credential containing # is kept whole")
    func hashInConfigValue() async throws {
        let directory = TemporaryDirectory()
        try Self.write("""
          # the admin credential has a # in it
        socket = \(directory.file("s.sock"))
        in-memory
        admin-credential = s3cr#et-with-a-hash-inside
        """, to: directory.file("sync.conf"))
        let service = try await MeowProcess.start("sync-service", ["--config", directory.file("sync.conf")])
        #expect(try Self.isAdmin(directory.file("s.sock"), "s3cr#et-with-a-hash-inside"))
        #expect(try !Self.isAdmin(directory.file("s.sock"), "s3cr"))
        #expect(await service.stop() == 0)
    }

    @Test("an empty or short admin credential refuses start-up with a message saying the minimum",
          arguments: [["--admin-credential", ""], ["--admin-credential", "s3cr"], ["--admin-credential=fifteen-chars!!"]])
    func shortAdminCredential(arguments: [String]) async throws {
        let directory = TemporaryDirectory()
        let result = try await MeowProcess.run("sync-service", ["--socket", directory.file("s.sock"), "--in-memory"] + arguments)
        #expect(result.status == 64)
        #expect(result.stderr.contains("must be at least 16 characters"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: directory.file("s.sock")))
    }

    @Test("an empty admin-credential line in a config file refuses start-up")
    func emptyAdminCredentialInConfig() async throws {
        let directory = TemporaryDirectory()
        try Self.write("socket = \(directory.file("s.sock"))\nin-memory\nadmin-credential =\n", to: directory.file("sync.conf"))
        let result = try await MeowProcess.run("sync-service", ["--config", directory.file("sync.conf")])
        #expect(result.status == 64)
        #expect(result.stderr.contains("The admin credential is empty"), "\(result.stderr)")
    }

    @Test("the admin credential from --admin-credential-file (0600 only) or MEOW_ADMIN_CREDENTIAL, off the command line")
    func adminCredentialSources() async throws {
        let directory = TemporaryDirectory()
        try Self.write(Self.admin + "\n", to: directory.file("admin.credential"))
        let fromFile = try await Self.startCloud(directory, ["--admin-credential-file", directory.file("admin.credential")])
        #expect(try Self.isAdmin(directory.file("s.sock"), Self.admin))
        #expect(await fromFile.stop() == 0)

        let fromEnvironment = try await Self.startCloud(directory, [], environment: ["MEOW_ADMIN_CREDENTIAL": Self.admin])
        #expect(try Self.isAdmin(directory.file("s.sock"), Self.admin))
        #expect(await fromEnvironment.stop() == 0)

        chmod(directory.file("admin.credential"), 0o644)
        let loose = try await MeowProcess.run("sync-service", ["--socket", directory.file("s.sock"), "--in-memory",
                                                       "--admin-credential-file", directory.file("admin.credential")])
        #expect(loose.status == 64)
        #expect(loose.stderr.contains("readable by others"), "\(loose.stderr)")
    }

    @Test("admin.exportSnapshot leaves credentials out unless includeCredentials; an import keeps the users' credentials")
    func snapshotsWithoutCredentials() async throws {
        let directory = TemporaryDirectory()
        let service = try await Self.startCloud(directory, ["--admin-credential", Self.admin])
        let admin = try WireClient(socketPath: directory.file("s.sock"))
        try await admin.hello(client: "snapshot-test", credential: Self.admin)
        let plain = try await admin.call("admin.exportSnapshot", Empty())
        let plainText = String(decoding: try JSONEncoder().encode(plain), as: UTF8.self)
        #expect(!plainText.contains("owner-secret") && !plainText.contains("alice-secret"), "credentials in a default snapshot")
        let rows = try #require(plain["snapshot"]?["tables"]?["users"]?.arrayValue)
        #expect(rows.count == 2 && rows.allSatisfy { $0.arrayValue?[1] == .null })
        let explicit = try await admin.call("admin.exportSnapshot", ["includeCredentials": true])
        #expect(String(decoding: try JSONEncoder().encode(explicit), as: UTF8.self).contains("alice-secret"))
        // Imported here, the users keep the credentials they have.
        _ = try await admin.call("admin.importSnapshot", ["snapshot": plain["snapshot"] ?? .null])
        let alice = try RawConnection(path: directory.file("s.sock"))
        #expect(try alice.hello(credential: "alice-secret")["result"]?["user"] == "alice")
        admin.close()
        #expect(await service.stop() == 0)
    }

    // MARK: Guessing

    @Test("hellos with a wrong credential: the fifth on a connection answers tooManyFailedHellos and the connection closes")
    func failedHelloLimit() async throws {
        let directory = TemporaryDirectory()
        let service = try await Self.startCloud(directory, [])
        let guesser = try RawConnection(path: directory.file("s.sock"))
        for attempt in 1...4 {
            let reply = try guesser.hello(credential: "guess-\(attempt)")
            #expect(reply["error"]?["code"] == "notAuthenticated", "attempt \(attempt): \(reply)")
        }
        let last = try guesser.hello(credential: "guess-5")
        #expect(last["error"]?["code"] == "tooManyFailedHellos")
        #expect(last["error"]?["details"]?["failures"] == 5)
        #expect(guesser.waitForClose(timeout: 30))
        // A right credential on a new connection still works.
        #expect(try RawConnection(path: directory.file("s.sock")).hello(credential: "alice-secret")["ok"] == true)
        #expect(await service.stop() == 0)
    }

    // MARK: Files

    @Test("the request log is created 0600")
    func requestLogMode() async throws {
        let directory = TemporaryDirectory()
        let service = try await Self.startCloud(directory, ["--request-log", directory.file("requests.jsonl")])
        let alice = try WireClient(socketPath: directory.file("s.sock"))
        try await alice.hello(client: "log-test", credential: "alice-secret")
        _ = try await alice.call("zones.fetch", ["database": "private"])
        alice.close()
        #expect(FileManager.default.fileExists(atPath: directory.file("requests.jsonl")))
        #expect(Self.mode(directory.file("requests.jsonl")) == 0o600)
        #expect(await service.stop() == 0)
    }

    /// A cloud behind `meowctl tap --log`: its directory, the service, the tap and the log's path.
    static func startTap(showCredentials: Bool) async throws -> (directory: TemporaryDirectory, service: MeowProcess, tap: MeowProcess, log: String) {
        let directory = TemporaryDirectory()
        let service = try await Self.startCloud(directory, [])
        let log = directory.file("tap.jsonl")
        let tap = try MeowProcess("meowctl", ["tap", "--listen", directory.file("tap.sock"), "--to", directory.file("s.sock"), "--log", log]
                                     + (showCredentials ? ["--show-credentials"] : []))
        #expect(await tap.waitForLine(containing: "tap ready") != nil)
        return (directory, service, tap, log)
    }

    @Test("meowctl tap writes its log 0600 and redacts credentials unless --show-credentials", arguments: [false, true])
    func tapRedactsCredentials(showCredentials: Bool) async throws {
        let (directory, service, tap, log) = try await Self.startTap(showCredentials: showCredentials)
        let viaTap = try RawConnection(path: directory.file("tap.sock"))
        #expect(try viaTap.hello(credential: "alice-secret")["ok"] == true)
        // The tap logs a frame before forwarding it: the hello is in the log once answered.
        #expect(Self.mode(log) == 0o600)
        let text = try String(contentsOfFile: log, encoding: .utf8)
        #expect(text.contains("\"op\":\"hello\""))
        #expect(text.contains("alice-secret") == showCredentials, "\(text)")
        #expect(text.contains("<redacted>") == !showCredentials)
        tap.kill()
        #expect(await service.stop() == 0)
    }

    @Test("meowctl tap leaves out the bytes of a frame it cannot parse unless --show-credentials: a credential may be in them", arguments: [false, true])
    func tapRedactsUnparseableFrames(showCredentials: Bool) async throws {
        let (directory, service, tap, log) = try await Self.startTap(showCredentials: showCredentials)
        let viaTap = try RawConnection(path: directory.file("tap.sock"))
        viaTap.send(json: #"{"id":1,"op":"hello","params":{"credential":"alice-secret","client":"x""#)
        // The service's answer comes after the tap logged the frame.
        _ = try viaTap.nextMessage()
        let lines = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").map { try JSONParser.parse(Array($0.utf8)) }
        let invalid = try #require(lines.first { $0["invalid"] == "invalidJSON" }, "\(lines)")
        let raw = invalid["raw"]?.stringValue.flatMap { Data(base64Encoded: $0) }.map { String(decoding: $0, as: UTF8.self) }
        #expect((raw?.contains("alice-secret") ?? false) == showCredentials, "\(invalid)")
        #expect((invalid["raw"] == "<redacted>") == !showCredentials, "\(invalid)")
        tap.kill()
        #expect(await service.stop() == 0)
    }

    @Test("meowctl takes the credential from --credential-file or MEOW_CREDENTIAL")
    func meowctlCredentialSources() async throws {
        let directory = TemporaryDirectory()
        let service = try await Self.startCloud(directory, ["--admin-credential", Self.admin])
        try Self.write(Self.admin + "\n", to: directory.file("admin.credential"))
        let fromFile = try await MeowProcess.run("meowctl", ["call", "--socket", directory.file("s.sock"), "--credential-file", directory.file("admin.credential"), "admin.listUsers"])
        #expect(fromFile.status == 0, "\(fromFile.stderr)")
        #expect(fromFile.stdout.contains("alice"))
        let fromEnvironment = try await MeowProcess.run("meowctl", ["call", "--socket", directory.file("s.sock"), "admin.listUsers"],
                                                environment: ["MEOW_CREDENTIAL": Self.admin])
        #expect(fromEnvironment.status == 0, "\(fromEnvironment.stderr)")
        let both = try await MeowProcess.run("meowctl", ["call", "--socket", directory.file("s.sock"), "--credential", "x",
                                                 "--credential-file", directory.file("admin.credential"), "ping"])
        #expect(both.status == 64)
        #expect(await service.stop() == 0)
    }

    @Test("a store-service's mirror takes its credential from --sync-credential-file or MEOW_SYNC_CREDENTIAL")
    func mirrorCredentialSources() async throws {
        let directory = TemporaryDirectory()
        let cloud = try await Self.startCloud(directory, [])
        try Self.write("owner-secret\n", to: directory.file("owner.credential"))
        let sources: [(arguments: [String], environment: [String: String])] = [
            (["--sync-credential-file", directory.file("owner.credential")], [:]),
            ([], ["MEOW_SYNC_CREDENTIAL": "owner-secret"]),
        ]
        for (number, source) in sources.enumerated() {
            let socket = directory.file("d\(number).sock")
            let device = try await MeowProcess.start("store-service", ["--socket", socket, "--in-memory", "--sync-socket", directory.file("s.sock"),
                                                                          "--device-name", "D\(number)"] + source.arguments,
                                                        environment: source.environment)
            let client = try WireClient(socketPath: socket)
            try await client.hello(client: "mirror-credential-test")
            _ = try await client.call("sync.now", Empty())
            client.close()
            #expect(await device.stop() == 0)
        }
        #expect(await cloud.stop() == 0)
    }

    // MARK: Accounts

    @Test("a user set to noAccount gets no databaseChanged pushes on the connections it still has open")
    func noAccountGetsNoPushes() async throws {
        let directory = TemporaryDirectory()
        let service = try await Self.startCloud(directory, ["--admin-credential", Self.admin])
        let socket = directory.file("s.sock")
        let owner = try WireClient(socketPath: socket)
        try await owner.hello(client: "owner", credential: "owner-secret")
        let admin = try WireClient(socketPath: socket)
        try await admin.hello(client: "admin", credential: Self.admin)
        let aliceWriter = try WireClient(socketPath: socket)
        try await aliceWriter.hello(client: "alice-writer", credential: "alice-secret")
        // The owner shares a zone with alice; alice accepts.
        let zoneName = "com.apple.coredata.cloudkit.share.PUSH"
        let zoneID: JSONValue = ["zoneName": .string(zoneName)]
        func record(_ name: String, _ title: String) -> JSONValue {
            ["recordName": .string(name), "recordType": "CD_CareEvent", "zoneID": zoneID, "fields": ["CD_title": ["type": "string", "value": .string(title)]]]
        }
        _ = try await owner.call("zones.save", ["database": "private", "zoneIDs": [zoneID]])
        _ = try await owner.call("records.modify", ["database": "private", "saves": [
            ["recordName": "cloudkit.zoneshare", "recordType": "cloudkit.share", "zoneID": zoneID, "fields": [:]], record("e", "one")]])
        _ = try await owner.call("participants.add", ["zoneID": zoneID, "user": "alice", "permission": "readWrite"])
        _ = try await aliceWriter.call("shares.accept", ["zoneID": ["zoneName": .string(zoneName), "ownerName": "owner"]])
        // A zone of alice's own (changes to _defaultZone are never pushed).
        _ = try await aliceWriter.call("zones.save", ["database": "private", "zoneIDs": [["zoneName": "Mine"]]])

        let listener = try RawConnection(path: socket)
        #expect(try listener.hello(credential: "alice-secret")["ok"] == true)
        listener.send(["id": 2, "op": "subscribe", "params": ["topics": ["databaseChanges"]]])
        #expect(try listener.nextMessage()["id"] == 2)
        func nextEvent() throws -> JSONValue {
            while true {
                let message = try listener.nextMessage(timeout: 30)
                if message["event"] != nil { return message }
            }
        }
        // While alice's account is available, the owner's change reaches her.
        _ = try await owner.call("records.modify", ["database": "private", "saves": [record("f", "two")]])
        #expect(try nextEvent()["data"]?["scope"] == "shared")

        _ = try await admin.call("admin.setAccountStatus", ["user": "alice", "status": "noAccount"])
        _ = try await owner.call("records.modify", ["database": "private", "saves": [record("g", "three")]])
        _ = try await admin.call("admin.setAccountStatus", ["user": "alice", "status": "available"])
        // A change of alice's own (private scope) after her account is back: it must be the next
        // event she gets, with nothing from the time she had no account before it.
        _ = try await aliceWriter.call("records.modify", ["database": "private", "saves": [
            ["recordName": "mine", "recordType": "CD_CareEvent", "zoneID": ["zoneName": "Mine"], "fields": [:]]]])
        let next = try nextEvent()
        #expect(next["data"]?["scope"] == "private", "a push reached alice while her account was noAccount: \(next)")
        for client in [owner, admin, aliceWriter] { client.close() }
        #expect(await service.stop() == 0)
    }
}
