#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeowWire
import TestSupport
import Testing
import class MeowCareCluster.MeowProcess
import struct MeowCareCluster.ExecutableLocator

/// Imports are streamed: a snapshot file of hundreds of megabytes goes in with the service's
/// memory bounded by a small constant, complete, and a file that turns out truncated at its very
/// end changes nothing (everything read before it is rolled back).
// The limit is against a hang: the 200 MB imports take minutes on a loaded 2-core machine.
@Suite("Streamed snapshot imports", .serialized, .timeLimit(.minutes(10)))
struct SnapshotStreamingTests {
    /// Rows of 64 KiB text: the file is about 200 MB.
    static let rows = 3200
    static let text = String(repeating: "m", count: 64 << 10)
    /// Far below the file's size: reading the file whole (let alone decoding it as one tree) would pass it.
    static let peakBound = 150 << 20

    /// Appends to a file in large writes (the test's own memory stays small too).
    final class Output {
        let handle: FileHandle
        var pending = ""
        init(_ path: String) throws {
            #expect(FileManager.default.createFile(atPath: path, contents: nil))
            handle = try #require(FileHandle(forWritingAtPath: path))
        }
        func write(_ text: String) throws {
            pending += text
            if pending.utf8.count >= 4 << 20 { try flush() }
        }
        func flush() throws {
            try handle.write(contentsOf: Data(pending.utf8))
            pending = ""
        }
        func close() throws {
            try flush()
            try handle.close()
        }
    }

    /// Cuts the last bytes off a file: every row is still there, the document's end is not.
    static func truncateEnd(_ path: String) throws {
        let size = try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
        #expect(truncate(path, off_t(size - 3)) == 0)
    }

    @Test("a device snapshot of 200 MB imports with the store-service's peak memory under 150 MB, every row in, and exports again as small; truncated at its end it changes nothing")
    func deviceImportIsStreamed() async throws {
        let directory = TemporaryDirectory()
        let device = try await MeowProcess.start("store-service", ["--socket", directory.file("d.sock"), "--data-dir", directory.file("data")])
        let client = try WireClient(socketPath: directory.file("d.sock"))
        try await client.hello(client: "snapshot-streaming")
        // The device's own snapshot gives every table and column; the private store's events are made many.
        let small = directory.file("small.json")
        _ = try await client.call("snapshot.export", ["path": .string(small)])
        let exported = try JSONParser.parse(Array(try Data(contentsOf: URL(fileURLWithPath: small))))
        let big = directory.file("big.json")
        let output = try Output(big)
        try output.write("{\"format\":\"meowcare-device-snapshot\",\"schemaVersion\":1,\"model\":\"MeowCare\",\"stores\":[")
        for (number, store) in (exported["stores"]?.arrayValue ?? []).enumerated() {
            let name = store["name"]?.stringValue ?? ""
            try output.write((number > 0 ? "," : "") + "{\"name\":\(JSONWriter.text(.string(name))),\"tables\":{")
            for (index, (table, contents)) in (store["tables"]?.objectValue ?? [:]).sorted(by: { $0.key < $1.key }).enumerated() {
                try output.write((index > 0 ? "," : "") + JSONWriter.text(.string(table)) + ":")
                guard name == "Private", table == "e_CareEvent" || table == "z_primarykey" else {
                    try output.write(JSONWriter.text(contents))
                    continue
                }
                try output.write("{\"columns\":\(JSONWriter.text(contents["columns"] ?? .null)),\"rows\":[")
                if table == "z_primarykey" {
                    try output.write("[\"CareEvent\",\(Self.rows)],[\"CareSession\",1]]}")
                    continue
                }
                // z_pk, z_version, z_uuid, z_zone, a_id, a_eventTypeRaw, a_occurredAt, a_updatedAt, a_value, a_note, r_session
                for row in 1...Self.rows {
                    try output.write((row > 1 ? "," : "") + "[\(row),1,\"event-\(row)\",null,\"e\(row)\",\"note\",\"2026-01-01T00:00:00Z\",null,null,\"\(Self.text)\",null]")
                }
                try output.write("]}")
            }
            try output.write("}}")
        }
        try output.write("]}")
        try output.close()

        let imported = try await client.call("snapshot.import", ["path": .string(big)], timeout: .seconds(120))
        #expect(imported["stores"]?["Private"]?.intValue ?? 0 > Self.rows, "\(imported)")
        let peak = try SnapshotFileSecurityTests.peakResidentBytes(device.pid)
        let size = try FileManager.default.attributesOfItem(atPath: big)[.size] as? Int ?? 0
        #expect(size > 200_000_000)
        #expect(peak < Self.peakBound, "peak RSS \(peak) bytes importing a \(size)-byte file")
        #expect(try await client.call("fetch.count", ["entity": "CareEvent"])["count"] == .int(Self.rows))
        // The export back to a file is written as it is read: memory stays as small.
        let again = try await client.call("snapshot.export", ["path": .string(directory.file("again.json"))], timeout: .seconds(120))
        #expect(again["stores"]?["Private"]?["e_CareEvent"] == .int(Self.rows) && again["bytes"]?.intValue ?? 0 > 200_000_000, "\(again)")
        #expect(try SnapshotFileSecurityTests.peakResidentBytes(device.pid) < Self.peakBound)

        // One more event, then the same file cut short at its end: every row is read and rolled back.
        _ = try await MeowProcess.run("meowctl", ["events", "add", "--socket", directory.file("d.sock"), "--type", "note", "--id", "later"])
        try Self.truncateEnd(big)
        do throws(WireError) {
            _ = try await client.call("snapshot.import", ["path": .string(big)], timeout: .seconds(120))
            Issue.record("a truncated snapshot was imported")
        } catch {
            #expect(error.code == .invalidField && error.message.contains("is not a device snapshot"), "\(error)")
        }
        #expect(try await client.call("fetch.count", ["entity": "CareEvent"])["count"] == .int(Self.rows + 1))
        client.close()
        _ = await device.stop()
    }

    @Test("a cloud snapshot of 200 MB imports with the sync-service's peak memory under 150 MB, every row in; truncated at its end it changes nothing")
    func cloudImportIsStreamed() async throws {
        let directory = TemporaryDirectory()
        let admin = CredentialHandlingTests.admin
        let cloud = try await MeowProcess.start("sync-service", ["--socket", directory.file("c.sock"), "--data-dir", directory.file("data"),
                                                                    "--admin-credential", admin])
        let client = try WireClient(socketPath: directory.file("c.sock"))
        try await client.hello(client: "snapshot-streaming", credential: admin)
        let big = directory.file("cloud.json")
        try Self.writeCloudSnapshot(big, schemaVersion: try await Self.cloudSchemaVersion(client, directory), rows: Self.rows, text: Self.text)

        let imported = try await client.call("admin.importSnapshot", ["path": .string(big)], timeout: .seconds(120))
        #expect(imported["records"] == .int(Self.rows), "\(imported)")
        let peak = try SnapshotFileSecurityTests.peakResidentBytes(cloud.pid)
        let size = try FileManager.default.attributesOfItem(atPath: big)[.size] as? Int ?? 0
        #expect(size > 200_000_000)
        #expect(peak < Self.peakBound, "peak RSS \(peak) bytes importing a \(size)-byte file")

        // The cloud emptied, then the same file cut short at its end: every row is read and rolled back.
        _ = try await client.call("admin.reset", ["scope": "all"])
        try Self.truncateEnd(big)
        do throws(WireError) {
            _ = try await client.call("admin.importSnapshot", ["path": .string(big)], timeout: .seconds(120))
            Issue.record("a truncated snapshot was imported")
        } catch {
            #expect(error.code == .invalidArguments && error.message.contains("is not a snapshot"), "\(error)")
        }
        let after = try await client.call("admin.exportSnapshot", ["path": .string(directory.file("after.json"))])
        #expect(after["tables"]?["records"] == .int(0) && after["tables"]?["record_versions"] == .int(0), "\(after)")
        client.close()
        await cloud.stop()
    }

    /// A cloud snapshot of one user, one zone, `rows` records and a version of each holding `text`;
    /// `headerLast` writes the tables before format and schemaVersion.
    static func writeCloudSnapshot(_ path: String, schemaVersion: Int, format: String = "meowcare-cloud-snapshot", rows: Int, text: String,
                                   headerLast: Bool = false) throws {
        let output = try Output(path)
        let header = "\"format\":\"\(format)\",\"schemaVersion\":\(schemaVersion)"
        try output.write(headerLast ? "{" : "{\(header),")
        try output.write("\"tables\":{\"users\":[[\"owner\",\"owner-credential\",\"available\",0]],")
        try output.write("\"zones\":[[1,\"owner\",\"Notes\",0,0,\"development\"]],\"records\":[")
        for row in 1...rows {
            try output.write((row > 1 ? "," : "") + "[1,\"r\(row)\",\"Note\",null,\"t\(row)\",\(row),0,0,\"owner\",0,\"owner\",null,null]")
        }
        try output.write("],\"record_versions\":[")
        for row in 1...rows {
            try output.write((row > 1 ? "," : "") + "[1,\"r\(row)\",\"t\(row)\",\"\(text)\",0,0]")
        }
        try output.write("],\"meta\":[[\"seq\",\(rows)]]}")
        try output.write(headerLast ? ",\(header)}" : "}")
        try output.close()
    }

    /// `value` as JSON with every object's keys in descending order: a snapshot's header after
    /// its stores, a store's tables before its name, a table's rows before its columns.
    static func descending(_ value: JSONValue) -> String {
        switch value {
        case let .array(elements): return "[" + elements.map(descending).joined(separator: ",") + "]"
        case let .object(members):
            return "{" + members.sorted { $0.key > $1.key }.map { JSONWriter.text(.string($0.key)) + ":" + descending($0.value) }.joined(separator: ",") + "}"
        default: return JSONWriter.text(value)
        }
    }

    @Test("snapshots written in another key order import the same (the header last, a store's tables before its name, a table's rows before its columns); a header refused at the end changes nothing")
    func otherKeyOrders() async throws {
        let directory = TemporaryDirectory()
        let device = try await MeowProcess.start("store-service", ["--socket", directory.file("d.sock"), "--in-memory"])
        let client = try WireClient(socketPath: directory.file("d.sock"))
        try await client.hello(client: "snapshot-streaming")
        let meowctl = try ExecutableLocator.locate().path("meowctl")
        _ = try await MeowProcess.run(meowctl, ["events", "add", "--socket", directory.file("d.sock"), "--type", "note", "--id", "kept"])
        let file = directory.file("device.json")
        _ = try await client.call("snapshot.export", ["path": .string(file)])
        let exported = try JSONParser.parse(Array(try Data(contentsOf: URL(fileURLWithPath: file))))
        let reordered = directory.file("reordered.json")
        #expect(FileManager.default.createFile(atPath: reordered, contents: Data(Self.descending(exported).utf8)))
        #expect(try String(contentsOfFile: reordered, encoding: .utf8).hasPrefix("{\"stores\":[{\"tables\":{"))
        _ = try await MeowProcess.run(meowctl, ["events", "add", "--socket", directory.file("d.sock"), "--type", "note", "--id", "later"])
        let imported = try await client.call("snapshot.import", ["path": .string(reordered)])
        #expect(imported["stores"]?["Private"]?.intValue ?? 0 > 0, "\(imported)")
        #expect(try await client.call("fetch.count", ["entity": "CareEvent"])["count"] == 1)
        #expect(try await client.call("fetch.count", ["entity": "CareEvent", "predicate": "id == %@", "arguments": ["kept"]])["count"] == 1)
        client.close()
        _ = await device.stop()

        let admin = CredentialHandlingTests.admin
        let cloud = try await MeowProcess.start("sync-service", ["--socket", directory.file("c.sock"), "--in-memory", "--admin-credential", admin])
        let cloudClient = try WireClient(socketPath: directory.file("c.sock"))
        try await cloudClient.hello(client: "snapshot-streaming", credential: admin)
        let version = try await Self.cloudSchemaVersion(cloudClient, directory)
        let headerLast = directory.file("cloud.json")
        try Self.writeCloudSnapshot(headerLast, schemaVersion: version, rows: 5, text: "v", headerLast: true)
        let cloudImported = try await cloudClient.call("admin.importSnapshot", ["path": .string(headerLast)])
        #expect(cloudImported["records"] == 5, "\(cloudImported)")
        // A newer format named only after every row: refused, and the 5 records stay.
        try Self.writeCloudSnapshot(headerLast, schemaVersion: version + 1, rows: 7, text: "v", headerLast: true)
        do throws(WireError) {
            _ = try await cloudClient.call("admin.importSnapshot", ["path": .string(headerLast)])
            Issue.record("a snapshot of another schema version was imported")
        } catch {
            #expect(error.code == .invalidArguments && error.message.contains("Not a snapshot of schema version \(version)"), "\(error)")
        }
        let after = try await cloudClient.call("admin.exportSnapshot", ["path": .string(directory.file("after.json"))])
        #expect(after["tables"]?["records"] == 5, "\(after)")
        cloudClient.close()
        await cloud.stop()
    }

    /// The schema version the cloud's own export names.
    static func cloudSchemaVersion(_ client: WireClient, _ directory: TemporaryDirectory) async throws -> Int {
        _ = try await client.call("admin.exportSnapshot", ["path": .string(directory.file("empty.json"))])
        let exported = try JSONParser.parse(Array(try Data(contentsOf: URL(fileURLWithPath: directory.file("empty.json")))))
        return try #require(exported["schemaVersion"]?.intValue)
    }
}
