import Foundation
import MeowWire
import Testing
import TestSupport
import class MeowCareCluster.MeowProcess

extension Mirroring {
    /// An owner lists the shares they own (`share.owned` → the cloud's `shares.owned`).
    @Suite("Mirroring: the shares an owner owns", .timeLimit(.minutes(2)))
    struct OwnedShareTests {
        @Test("share.owned lists each live share with its zone, record count and participants; meowctl share owned prints it")
        func ownerListsOwnedShares() async throws {
            let setup = try await SharingTests.shared("readOnly")
            let owned = try await setup.o.call("share.owned")["shares"]?.arrayValue ?? []
            #expect(owned.count == 1)
            let share = try #require(owned.first)
            #expect(share["zoneID"]?["zoneName"]?.stringValue == setup.zoneName)
            #expect(share["shareName"] == "cloudkit.zoneshare" && share["rootRecordName"] == nil, "the mirror's shares are zone-wide")
            #expect(share["recordCount"] == 3, "the session and its two readings")
            let people = share["participants"]?.arrayValue ?? []
            #expect(people.map { $0["user"]?.stringValue ?? "" } == ["owner", "alice"])
            #expect(people.last?["permission"] == "readOnly" && people.last?["acceptanceStatus"] == "accepted")
            #expect(try await setup.p.call("share.owned")["shares"]?.arrayValue?.isEmpty == true, "a participant owns none")

            let printed = try await MeowProcess.run("meowctl", ["share", "owned", "--socket", setup.o.socket])
            #expect(printed.status == 0)
            #expect(printed.stdout.contains(setup.zoneName) && printed.stdout.contains("alice:readOnly (accepted)"), "\(printed.stdout)")

            _ = try await setup.o.call("share.stop", ["zoneName": .string(setup.zoneName)])
            #expect(try await setup.o.call("share.owned")["shares"]?.arrayValue?.isEmpty == true, "a stopped share is no longer listed")
            await ConflictTests.stop(setup.cloud, setup.o, setup.p)
        }
    }
}
