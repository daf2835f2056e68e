import CloudWire
import MeowWire
import Testing
@testable import SyncServiceKit

/// docs/RULES.md (fetching changes and tokens) as a property: seeded random saves (new records and updates, with their
/// tags), deletes, stale-tag saves the server refuses, and atomic batches one bad item spoils;
/// between them, a client replays the zone's changes from a token it kept (or from nothing),
/// in pages of a random size, onto the records it had then. Whatever the token and the page
/// size, the replay must end at the zone as it is now, name each record at most once, and hand
/// back a token with nothing after it.
@Suite("Change tokens: any kept token, any page size, replays to the present")
struct ChangeLogPropertyTests {
    /// The zone as a client keeps it: record name → title.
    typealias Zone = [String: String]

    @Test("seeded histories of saves, updates, deletes and refused saves; replays from random kept tokens", arguments: Array(1...6) as [UInt64])
    func replaysFromAnyKeptTokenReachThePresent(seed: UInt64) throws {
        let cloud = try CloudFixture()
        let zone = try cloud.makeZone()
        var random = SplitMix64(state: seed)
        func pick(_ count: Int) -> Int { Int(random.next() % UInt64(count)) }

        var present: [String: (title: String, tag: String)] = [:]
        var kept: [(token: ChangeToken?, zone: Zone)] = [(nil, [:])]
        var counter = 0
        var replays = 0

        for step in 0..<150 {
            let roll = pick(100)
            if roll < 35 {
                // Save new records and updates of existing ones (with their tags), in one request.
                var records: [CloudRecord] = []
                var names: Set<String> = []
                for _ in 0..<(1 + pick(5)) {
                    if !present.isEmpty, pick(2) == 0 {
                        let name = present.keys.sorted()[pick(present.count)]
                        guard names.insert(name).inserted else { continue }
                        records.append(record(name, zone: zone, title: "t\(step)-\(pick(1000))", tag: present[name]?.tag))
                    } else {
                        counter += 1
                        names.insert("r\(counter)")
                        records.append(record("r\(counter)", zone: zone, title: "t\(step)-\(pick(1000))"))
                    }
                }
                let result = try cloud.save(records)
                #expect(result.saved.count == records.count)
                for saved in result.saved {
                    let tag = try #require(saved.recordChangeTag)
                    present[saved.recordName] = (title(saved) ?? "", tag)
                }
            } else if roll < 50, !present.isEmpty {
                let names = Array(Set((0..<(1 + pick(3))).map { _ in present.keys.sorted()[pick(present.count)] }))
                let result = try cloud.delete(names, zone: zone)
                #expect(Set(result.deleted.map(\.recordName)) == Set(names))
                for name in names { present[name] = nil }
            } else if roll < 58, let name = present.keys.sorted().first {
                // A save with a stale tag, atomically beside a good one: both refused, nothing changes.
                counter += 1
                let error = wireError {
                    try cloud.save([record(name, zone: zone, title: "stale", tag: "stale-tag"), record("r\(counter)", zone: zone, title: "spoiled")],
                                   atomic: true)
                }
                #expect(error?.code == .partialFailure)
                #expect(partialErrors(error)[name]?.code == .serverRecordChanged
                    || partialErrors(error).values.contains { $0.code == .serverRecordChanged })
            } else {
                // A client replays from a token it kept, onto what it had then.
                let start = kept[pick(kept.count)]
                var replica = start.zone
                var token = start.token
                var named: [String] = []
                let limit = 1 + pick(7)
                var pages = 0
                while true {
                    let page = try cloud.engine.fetchZoneChanges(caller: "owner", FetchZoneChangesParams(database: .private, zoneID: zone,
                                                                                                          since: token, limit: limit))
                    #expect(page.changed.count + page.deleted.count <= limit, "a page bigger than its limit")
                    for changed in page.changed { replica[changed.recordName] = title(changed) ?? "" }
                    for deleted in page.deleted { replica[deleted.recordName] = nil }
                    named += page.changed.map(\.recordName) + page.deleted.map(\.recordName)
                    token = page.token
                    pages += 1
                    if !page.moreComing { break }
                    #expect(pages < 1000, "moreComing never ends")
                    if pages >= 1000 { break }
                }
                replays += 1
                let expected = present.mapValues(\.title)
                #expect(replica == expected, "seed \(seed), step \(step): the replay from \(start.token ?? "nil") in pages of \(limit) ends at \(replica), the zone is \(expected)")
                #expect(Set(named).count == named.count, "seed \(seed), step \(step): a record named twice in one replay: \(named)")
                let after = try cloud.engine.fetchZoneChanges(caller: "owner", FetchZoneChangesParams(database: .private, zoneID: zone, since: token))
                #expect(after.changed.isEmpty && after.deleted.isEmpty, "changes after the replay's last token")
                kept.append((token, replica))
            }
        }
        #expect(replays > 10)
    }
}
