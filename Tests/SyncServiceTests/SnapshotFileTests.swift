#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeowWire
import Testing
import TestSupport
import class MeowCareCluster.MeowProcess

/// A snapshot larger than a frame goes through a file the sync-service writes and reads
/// (`admin.exportSnapshot`/`importSnapshot` with `path`, `meowctl snapshot`).
@Suite("Cloud snapshots through a file", .timeLimit(.minutes(2)))
struct SnapshotFileTests {
    /// A small frame limit stands in for a cloud whose snapshot is past 16 MiB.
    static let frameLimit = ["--max-frame-bytes", "65536"]

    /// The test's records, twenty at a time (a reply must fit the small frame limit too).
    static func records(_ client: WireClient) async throws -> [JSONValue] {
        var records: [JSONValue] = []
        for batch in 0..<6 {
            let ids: [JSONValue] = (0..<20).map { ["recordName": .string("r\(batch)-\($0)"), "zoneID": ["zoneName": "big"]] }
            records += try await client.call("records.fetch", ["database": "private", "recordIDs": .array(ids)] as JSONValue)["records"]?.arrayValue ?? []
        }
        return records
    }

    @Test("A cloud past the frame limit is exported to a file and imported into another cloud, by op and by meowctl")
    func snapshotPastTheFrameLimit() async throws {
        let source = CloudProcess(dir: TemporaryDirectory())
        let cloud = try await source.start(extra: Self.frameLimit)
        let owner = try await source.connect("owner-secret", client: "snapshot-test")
        defer { owner.close() }
        _ = try await owner.call("zones.save", ["database": "private", "zoneIDs": [["zoneName": "big"]]] as JSONValue)
        for batch in 0..<6 {
            let saves: [JSONValue] = (0..<20).map { index in
                ["recordName": .string("r\(batch)-\(index)"), "recordType": "Note", "zoneID": ["zoneName": "big"],
                 "fields": ["text": ["type": "string", "value": .string(String(repeating: "m", count: 1_000))]]]
            }
            _ = try await owner.call("records.modify", ["database": "private", "saves": .array(saves)] as JSONValue)
        }
        let before = try await Self.records(owner)
        #expect(before.count == 120)

        let admin = try await source.connect(CloudProcess.admin, client: "snapshot-admin")
        defer { admin.close() }
        let inlineExport = await CloudProcess.failure { _ = try await admin.call("admin.exportSnapshot", [:] as JSONValue) }
        #expect(inlineExport?.code == .limitExceeded, "a snapshot past the frame limit cannot come back inline")

        let file = source.dir.file("cloud.json")
        let written = try await admin.call("admin.exportSnapshot", ["path": .string(file)] as JSONValue)
        #expect(written["path"]?.stringValue == file)
        #expect((written["bytes"]?.intValue ?? 0) > 65536)
        #expect(written["tables"]?["records"]?.intValue ?? 0 >= 120)
        var info = stat()
        #expect(stat(file, &info) == 0 && info.st_mode & 0o777 == 0o600 && Int(info.st_size) == written["bytes"]?.intValue)
        let relative = await CloudProcess.failure { _ = try await admin.call("admin.exportSnapshot", ["path": "cloud.json"] as JSONValue) }
        #expect(relative?.code == .invalidArguments)

        // Another cloud takes it by op; a third by meowctl, from a file meowctl's export wrote.
        let target = CloudProcess(dir: TemporaryDirectory())
        let other = try await target.start(extra: Self.frameLimit)
        let refused = try await target.connect(CloudProcess.admin, client: "snapshot-admin")
        defer { refused.close() }
        let inline = try JSONParser.parse(String(contentsOfFile: file, encoding: .utf8))
        let tooLarge = await CloudProcess.failure { _ = try await refused.call("admin.importSnapshot", ["snapshot": inline] as JSONValue) }
        #expect(tooLarge != nil, "a snapshot past the frame limit cannot go in inline")
        let otherAdmin = try await target.connect(CloudProcess.admin, client: "snapshot-admin")
        defer { otherAdmin.close() }
        let imported = try await otherAdmin.call("admin.importSnapshot", ["path": .string(file)] as JSONValue)
        #expect(imported["records"] == 120)
        let otherOwner = try await target.connect("owner-secret", client: "snapshot-test")
        defer { otherOwner.close() }
        #expect(try await Self.records(otherOwner) == before)
        let both = await CloudProcess.failure { _ = try await otherAdmin.call("admin.importSnapshot", [:] as JSONValue) }
        #expect(both?.code == .invalidArguments)

        let credential = source.dir.file("admin.credential")
        try CloudProcess.admin.write(toFile: credential, atomically: true, encoding: .utf8)
        chmod(credential, 0o600)
        let viaTool = source.dir.file("via-meowctl.json")
        let export = try await MeowProcess.run("meowctl", ["snapshot", "export", "--socket", source.dir.file("s.sock"), "--credential-file", credential, "--file", viaTool])
        #expect(export.status == 0, "\(export.stderr)")
        #expect(export.stdout.contains("wrote \(viaTool)"))
        let third = CloudProcess(dir: TemporaryDirectory())
        let thirdCloud = try await third.start(extra: Self.frameLimit)
        let importRun = try await MeowProcess.run("meowctl", ["snapshot", "import", "--socket", third.dir.file("s.sock"), "--credential-file", credential, "--file", viaTool, "--json"])
        #expect(importRun.status == 0, "\(importRun.stderr)")
        #expect(try JSONParser.parse(importRun.stdout)["records"] == 120)
        let thirdOwner = try await third.connect("owner-secret", client: "snapshot-test")
        defer { thirdOwner.close() }
        #expect(try await Self.records(thirdOwner) == before)
        for process in [cloud, other, thirdCloud] { _ = await process.stop() }
    }

    @Test("Bad snapshots change nothing in the cloud: a missing or truncated file, a newer format, an unwritable or relative path")
    func badSnapshotsChangeNothing() async throws {
        let cloud = CloudProcess(dir: TemporaryDirectory())
        let process = try await cloud.start()
        let owner = try await cloud.connect("owner-secret", client: "snapshot-test")
        defer { owner.close() }
        _ = try await owner.call("zones.save", ["database": "private", "zoneIDs": [["zoneName": "big"]]] as JSONValue)
        let admin = try await cloud.connect(CloudProcess.admin, client: "snapshot-admin")
        defer { admin.close() }
        let file = cloud.dir.file("cloud.json")
        _ = try await admin.call("admin.exportSnapshot", ["path": .string(file)] as JSONValue)
        let whole = try Data(contentsOf: URL(fileURLWithPath: file))
        let truncated = cloud.dir.file("truncated.json")
        try whole.prefix(whole.count / 2).write(to: URL(fileURLWithPath: truncated))
        var newer = try JSONParser.parse(Array(whole)).objectValue ?? [:]
        newer["schemaVersion"] = 99
        let zonesBefore = try await owner.call("zones.fetch", ["database": "private"] as JSONValue)

        let cases: [(String, JSONValue, String)] = [
            ("missing file", ["path": .string(cloud.dir.file("none.json"))], "cannot read"),
            ("truncated file", ["path": .string(truncated)], "is not a snapshot"),
            ("newer format", ["snapshot": .object(newer)], "schema version"),
            ("relative path", ["path": "cloud.json"], "absolute"),
        ]
        for (name, params, text) in cases {
            let error = await CloudProcess.failure { _ = try await admin.call("admin.importSnapshot", params) }
            #expect(error?.code == .invalidArguments, "\(name)")
            #expect(error?.message.contains(text) == true, "\(name): \(error?.message ?? "")")
            #expect(try await owner.call("zones.fetch", ["database": "private"] as JSONValue) == zonesBefore, "\(name)")
        }
        let unwritable = await CloudProcess.failure { _ = try await admin.call("admin.exportSnapshot", ["path": "/proc/cloud.json"] as JSONValue) }
        #expect(unwritable?.code == .invalidArguments && unwritable?.details["path"] == "/proc/cloud.json")
        _ = await process.stop()
    }
}
