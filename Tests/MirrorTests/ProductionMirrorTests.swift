import Foundation
import MeowWire
import Testing
import TestSupport
import class MeowCareCluster.MeowProcess

extension Mirroring {
    /// A device mirroring into production with a model whose field is not deployed yet.
    @Suite("Mirroring: a model ahead of production's schema", .timeLimit(.minutes(5)))
    struct ProductionMirrorTests {
        /// The export events' ends (type export, an end date) among the next notices, up to `count` of them.
        static func exportEnds(_ count: Int, from events: inout AsyncStream<WireEvent>.Iterator) async -> [JSONValue] {
            var ends: [JSONValue] = []
            while ends.count < count, let event = await events.next() {
                if event.name == "eventChanged", event.data["type"] == "export", event.data["endDate"] != .null { ends.append(event.data) }
            }
            return ends
        }

        @Test("Records with an undeployed field fail to export with the server's error and the rest go on; sync.status, cloudKitEvents and doctor say so; after a deploy they sync")
        func undeployedFieldIsRefusedUntilDeployed() async throws {
            let cloud = try await Cloud.start()
            let debug = try await Device.start("D", user: "owner", cloud: cloud)
            let phone = try await Device.start("A", user: "owner", cloud: cloud, extra: ["--environment", "production"])
            try await debug.insertEvents(["plain-dev"])
            try await debug.send()
            _ = try await cloud.admin("admin.deploySchema", [:])

            let watcher = try WireClient(socketPath: phone.socket)
            defer { watcher.close() }
            try await watcher.hello(client: "events")
            _ = try await watcher.call("subscribe", ["topics": ["cloudKitEvents"]])
            var events = watcher.events.makeAsyncIterator()
            // A newer app version: the event's note, which no deployed record ever had.
            let context = try await phone.context()
            _ = try await phone.call("object.insert", ["context": .string(context), "objects": [
                ["entity": "CareEvent", "values": Device.eventValues("noted", note: "after breakfast")],
                ["entity": "CareEvent", "values": Device.eventValues("plain")],
            ]])
            _ = try await phone.call("context.save", ["context": .string(context)])
            let sent = try await phone.send()
            #expect(sent["saved"] == 1)
            #expect(sent["refused"] == 1)
            #expect(try await phone.pending() == 1)
            let refused = try await phone.status()["stores"]?.arrayValue?.first { $0["store"] == "Private" }?["refusedExports"]?.arrayValue ?? []
            #expect(refused.count == 1)
            #expect(refused.first?["code"] == "invalidArguments")
            #expect(refused.first?["message"] == "Cannot create or modify field 'CD_note' in record 'CD_CareEvent' in production schema")
            #expect(refused.first?["field"] == "CD_note" && refused.first?["environment"] == "production" && refused.first?["entity"] == "CareEvent")
            let exportEnd = await Self.exportEnds(1, from: &events).first
            #expect(exportEnd?["succeeded"] == false)
            #expect(exportEnd?["error"]?["code"] == "partialFailure")
            #expect(exportEnd?["error"]?["message"]?.stringValue?.contains("Cannot create or modify field 'CD_note'") == true)

            let doctor = try await MeowProcess.run("meowctl", ["doctor", "--socket", phone.socket, "--json"])
            #expect(doctor.status == 1)
            let finding = (try JSONParser.parse(doctor.stdout))["findings"]?.arrayValue?.first { $0["kind"] == "undeployedSchema" }
            #expect(finding?["summary"]?.stringValue?.contains("field 'CD_note' of record type 'CD_CareEvent'") == true, "\(doctor.stdout)")
            #expect(finding?["fix"]?.stringValue?.contains("meowctl schema deploy") == true)

            // Development learns the field from a development build; the deploy takes it to production.
            let devContext = try await debug.context()
            _ = try await debug.call("object.insert", ["context": .string(devContext), "objects": [["entity": "CareEvent", "values": Device.eventValues("noted-dev2", note: "x")]]])
            _ = try await debug.call("context.save", ["context": .string(devContext)])
            try await debug.send()
            _ = try await cloud.admin("admin.deploySchema", [:])
            #expect(try await phone.send()["saved"] == 1)
            #expect(try await phone.pending() == 0)
            let after = try await phone.status()["stores"]?.arrayValue?.first { $0["store"] == "Private" }?["refusedExports"]
            #expect(after == [])
            let succeeded = await Self.exportEnds(1, from: &events).first
            #expect(succeeded?["succeeded"] == true)
            for device in [debug, phone] { _ = await device.stop() }
            await cloud.stop()
        }

        @Test("sync.initializeSchema in production is refused with the server's error and the way to deploy; production's schema is unchanged; a dry run still answers")
        func initializeSchemaInProductionIsRefused() async throws {
            let cloud = try await Cloud.start()
            let phone = try await Device.start("A", user: "owner", cloud: cloud, extra: ["--environment", "production"])
            let error = try await phone.failure("sync.initializeSchema")
            #expect(error.code == .invalidArguments)
            #expect(error.message.contains("in production schema"), "\(error.message)")
            #expect(error.message.contains("only in the development environment") && error.message.contains("meowctl schema deploy"))
            #expect(try await cloud.admin("admin.schema", ["environment": "production"])["recordTypes"] == [:])
            let dry = try await phone.call("sync.initializeSchema", ["dryRun": true])
            #expect(dry["uploaded"] == 0 && dry["recordTypes"]?["CD_CareEvent"] != nil)
            _ = await phone.stop()
            await cloud.stop()
        }
    }
}
