#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeowWire
import TestSupport
import Testing
import class MeowCareCluster.MeowProcess
import struct MeowCareCluster.ExecutableLocator

/// Snapshot files a service writes or reads for a client: only where the client may, never the
/// service's own files, never through a planted link, never past a size bound.
@Suite("Snapshot files", .timeLimit(.minutes(3)))
struct SnapshotFileSecurityTests {
    static let nobody = "65534"

    /// `meowctl ARGS --json` as uid 65534 (a peer of another uid, as `--allow-uid` lets in).
    static func asNobody(_ arguments: [String], environment: [String: String] = [:]) async throws -> (status: Int32, output: String) {
        let result = try await MeowProcess.run("/usr/bin/setpriv", ["--reuid=\(nobody)", "--regid=\(nobody)", "--clear-groups", "--",
                                                            try ExecutableLocator.locate().path("meowctl")] + arguments + ["--json"], environment: environment)
        return (result.status, result.stdout + result.stderr)
    }

    static func failure(_ client: WireClient, _ op: String, _ params: [String: JSONValue]) async -> WireError? {
        do { _ = try await client.call(op, params); return nil } catch { return error }
    }

    static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    /// A store-service another uid can reach (the socket opened up as a deployment's socket unit does).
    static func startDevice(_ directory: TemporaryDirectory, _ extra: [String] = []) async throws -> MeowProcess {
        chmod(directory.path, 0o755)
        let device = try await MeowProcess.start("store-service", ["--socket", directory.file("d.sock"), "--in-memory",
                                                                      "--allow-uid", nobody] + extra)
        chmod(directory.file("d.sock"), 0o666)
        return device
    }

    @Test("another uid names snapshot files only inside --snapshot-dir, and no link leads out of it", .enabled(if: getuid() == 0))
    func anotherUIDIsConfined() async throws {
        let directory = TemporaryDirectory()
        let root = directory.file("root-only")
        mkdir(root, 0o700)
        let device = try await Self.startDevice(directory)
        let own = try WireClient(socketPath: directory.file("d.sock"))
        try await own.hello(client: "snapshot-owner")
        _ = try await own.call("snapshot.export", ["path": .string("\(root)/secret.json")])
        own.close()

        // Without --snapshot-dir another uid names no file: not one only the service's user may write or read.
        let export = try await Self.asNobody(["snapshot", "export", "--socket", directory.file("d.sock"), "--file", "\(root)/planted.json"])
        #expect(export.status == 1 && export.output.contains("permissionFailure"), "\(export.output)")
        #expect(!Self.exists("\(root)/planted.json"))
        let read = try await Self.asNobody(["snapshot", "import", "--socket", directory.file("d.sock"), "--file", "\(root)/secret.json"])
        #expect(read.status == 1 && read.output.contains("permissionFailure"), "\(read.output)")
        _ = await device.stop()

        // With it, files inside work; outside, or through a link out, are refused.
        let shared = directory.file("shared")
        mkdir(shared, 0o755)
        symlink(root, "\(shared)/out")
        let confined = try await Self.startDevice(directory, ["--snapshot-dir", shared])
        let inside = try await Self.asNobody(["snapshot", "export", "--socket", directory.file("d.sock"), "--file", "\(shared)/mine.json"])
        #expect(inside.status == 0, "\(inside.output)")
        #expect(CredentialHandlingTests.mode("\(shared)/mine.json") == 0o640)
        let back = try await Self.asNobody(["snapshot", "import", "--socket", directory.file("d.sock"), "--file", "\(shared)/mine.json"])
        #expect(back.status == 0, "\(back.output)")
        for path in ["\(root)/planted.json", "\(shared)/out/planted.json", "\(shared)/../root-only/planted.json"] {
            let refused = try await Self.asNobody(["snapshot", "export", "--socket", directory.file("d.sock"), "--file", path])
            #expect(refused.status == 1 && refused.output.contains("permissionFailure") && refused.output.contains("snapshot directory"), "\(path): \(refused.output)")
        }
        #expect(!Self.exists("\(root)/planted.json"))
        _ = await confined.stop()

        // The cloud's admin ops keep the same rules, for an admin of another uid.
        let cloud = try await MeowProcess.start("sync-service", ["--socket", directory.file("c.sock"), "--in-memory", "--allow-uid", Self.nobody,
                                                                    "--admin-credential", CredentialHandlingTests.admin])
        chmod(directory.file("c.sock"), 0o666)
        let admin = ["MEOW_CREDENTIAL": CredentialHandlingTests.admin]
        let cloudExport = try await Self.asNobody(["snapshot", "export", "--socket", directory.file("c.sock"), "--file", "\(root)/cloud.json"], environment: admin)
        #expect(cloudExport.status == 1 && cloudExport.output.contains("permissionFailure"), "\(cloudExport.output)")
        #expect(!Self.exists("\(root)/cloud.json"))
        _ = await cloud.stop()
    }

    @Test("a snapshot never goes onto the service's own files: its database, lock, socket; the service starts again")
    func neverOntoOwnFiles() async throws {
        let directory = TemporaryDirectory()
        let data = directory.file("data")
        let arguments = ["--socket", directory.file("d.sock"), "--data-dir", data]
        let device = try await MeowProcess.start("store-service", arguments)
        let client = try WireClient(socketPath: directory.file("d.sock"))
        try await client.hello(client: "snapshot-test")
        let context = try await client.call("context.open", [:])["context"] ?? .null
        _ = try await client.call("object.insert", ["context": context, "objects": [["entity": "CareEvent", "values": [
            "id": "kept", "eventTypeRaw": "bloodGlucose", "value": 101.0, "occurredAt": "2026-11-30T08:00:00Z", "updatedAt": "2026-11-30T08:00:00Z"]]]])
        _ = try await client.call("context.save", ["context": context])
        let files = try FileManager.default.contentsOfDirectory(atPath: data).map { "\(data)/\($0)" }
        #expect(files.contains { $0.hasSuffix(".sqlite") }, "\(files)")
        for path in files + ["\(data)/new.json", directory.file("d.sock"), directory.file("d.sock.lock")] {
            let refused = await Self.failure(client, "snapshot.export", ["path": .string(path)])
            #expect(refused?.code == .permissionFailure && refused?.message.contains("own files") == true, "\(path): \(String(describing: refused))")
        }
        #expect(!Self.exists("\(data)/new.json"))
        // A hard link elsewhere to the database is the database.
        let storeFile = try #require(files.first { $0.hasSuffix(".sqlite") })
        #expect(link(storeFile, directory.file("linked.sqlite")) == 0)
        for op in ["snapshot.export", "snapshot.import"] {
            let refused = await Self.failure(client, op, ["path": .string(directory.file("linked.sqlite"))])
            #expect(refused?.code == .permissionFailure && refused?.message.contains("own files") == true, "\(op): \(String(describing: refused))")
        }
        client.close()
        #expect(await device.stop() == 0)
        let again = try await MeowProcess.start("store-service", arguments)
        let reopened = try WireClient(socketPath: directory.file("d.sock"))
        try await reopened.hello(client: "snapshot-test")
        let events = try await reopened.call("fetch", ["entity": "CareEvent"])
        #expect(events["objects"]?.arrayValue?.count == 1, "\(events)")
        reopened.close()
        _ = await again.stop()

        // The cloud too.
        let cloud = try await MeowProcess.start("sync-service", ["--socket", directory.file("c.sock"), "--data-dir", directory.file("cloud"),
                                                                    "--admin-credential", CredentialHandlingTests.admin])
        let admin = try WireClient(socketPath: directory.file("c.sock"))
        try await admin.hello(client: "snapshot-test", credential: CredentialHandlingTests.admin)
        let database = await Self.failure(admin, "admin.exportSnapshot", ["path": .string(directory.file("cloud/cloud.sqlite"))])
        #expect(database?.code == .permissionFailure, "\(String(describing: database))")
        admin.close()
        #expect(await cloud.stop() == 0)
    }

    @Test("the temporary file is new, randomly named and beside the target: a planted link is not followed, nor one at the path read")
    func plantedLinks() async throws {
        let directory = TemporaryDirectory()
        let device = try await MeowProcess.start("store-service", ["--socket", directory.file("d.sock"), "--in-memory"])
        let client = try WireClient(socketPath: directory.file("d.sock"))
        try await client.hello(client: "snapshot-test")
        let victim = directory.file("victim.txt")
        try "untouched".write(toFile: victim, atomically: false, encoding: .utf8)
        // Links at every name a temporary file could have been given by pid, and at the path itself.
        for name in ["snap.json.\(device.pid).partial", ".snap.json.\(device.pid).partial", "snap.json"] {
            symlink(victim, directory.file(name))
        }
        _ = try await client.call("snapshot.export", ["path": .string(directory.file("snap.json"))])
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "untouched")
        var info = stat()
        #expect(lstat(directory.file("snap.json"), &info) == 0 && info.st_mode & S_IFMT == S_IFREG, "the link is replaced by the file")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".partial") && !$0.contains("\(device.pid)") }
        #expect(leftovers.isEmpty, "\(leftovers)")

        symlink(directory.file("snap.json"), directory.file("link.json"))
        let throughLink = await Self.failure(client, "snapshot.import", ["path": .string(directory.file("link.json"))])
        #expect(throughLink?.code == .invalidField && throughLink?.message.contains("symbolic link") == true, "\(String(describing: throughLink))")
        client.close()
        _ = await device.stop()
    }

    @Test("an import past --max-snapshot-bytes answers limitExceeded before it is read: a 1 GiB sparse file leaves the service's memory small")
    func importSizeBound() async throws {
        let directory = TemporaryDirectory()
        let big = directory.file("big.json")
        let size: off_t = 1 << 30
        #expect(FileManager.default.createFile(atPath: big, contents: nil))
        #expect(truncate(big, size) == 0)
        let device = try await MeowProcess.start("store-service", ["--socket", directory.file("d.sock"), "--in-memory"])
        let client = try WireClient(socketPath: directory.file("d.sock"))
        try await client.hello(client: "snapshot-test")
        let refused = await Self.failure(client, "snapshot.import", ["path": .string(big)])
        #expect(refused?.code == .limitExceeded && refused?.details["limit"] == 536_870_912, "\(String(describing: refused))")
        let peak = try Self.peakResidentBytes(device.pid)
        #expect(peak < Int(size) / 4, "peak RSS \(peak) bytes for a \(size)-byte file")
        client.close()
        _ = await device.stop()

        // The bound is the operator's, and the cloud's import keeps it too.
        let cloud = try await MeowProcess.start("sync-service", ["--socket", directory.file("c.sock"), "--in-memory",
                                                                    "--admin-credential", CredentialHandlingTests.admin, "--max-snapshot-bytes", "100"])
        let admin = try WireClient(socketPath: directory.file("c.sock"))
        try await admin.hello(client: "snapshot-test", credential: CredentialHandlingTests.admin)
        _ = try await admin.call("admin.exportSnapshot", ["path": .string(directory.file("cloud.json"))])
        let small = await Self.failure(admin, "admin.importSnapshot", ["path": .string(directory.file("cloud.json"))])
        #expect(small?.code == .limitExceeded && small?.details["limit"] == 100, "\(String(describing: small))")
        let sparse = await Self.failure(admin, "admin.importSnapshot", ["path": .string(big)])
        #expect(sparse?.code == .limitExceeded, "\(String(describing: sparse))")
        #expect(try Self.peakResidentBytes(cloud.pid) < Int(size) / 4)
        admin.close()
        _ = await cloud.stop()
    }

    /// VmHWM: the most memory the process has held resident.
    static func peakResidentBytes(_ pid: pid_t) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") })
        let kilobytes = Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]) ?? 0
        return kilobytes * 1024
    }
}
