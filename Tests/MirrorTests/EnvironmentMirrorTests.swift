import Foundation
import MeowWire
import Testing
import TestSupport

extension Mirroring {
    /// Devices choosing the cloud's development or production environment (`--environment`).
    @Suite("Mirroring: development and production environments", .timeLimit(.minutes(5)))
    struct EnvironmentMirrorTests {
        @Test("Devices in production sync with each other and never with development ones; sync.status names the environment")
        func productionDevicesSyncApartFromDevelopment() async throws {
            let cloud = try await Cloud.start()
            let debug = try await Device.start("D", user: "owner", cloud: cloud)
            let phone = try await Device.start("A", user: "owner", cloud: cloud, extra: ["--environment", "production"])
            let tablet = try await Device.start("B", user: "owner", cloud: cloud, extra: ["--environment", "production"])
            #expect(try await debug.status()["environment"] == "development")
            #expect(try await phone.status()["environment"] == "production")

            try await debug.insertEvents(["from-xcode"])
            try await debug.send()
            _ = try await cloud.admin("admin.deploySchema", [:])
            try await phone.insertEvents(["from-app-store"])
            try await phone.send()
            try await tablet.fetch()
            try await debug.fetch()
            #expect(try await tablet.ids() == ["from-app-store"])
            #expect(try await debug.ids() == ["from-xcode"])
            // The cloud holds each in its own environment.
            #expect(try await cloud.records(user: "owner").compactMap { $0["fields"]?["CD_id"]?["value"]?.stringValue } == ["from-xcode"])
            let production = try WireClient(socketPath: cloud.socket)
            try await production.hello(client: "t", credential: "owner-secret", environment: "production")
            let page = try await production.call("changes.fetchZone", ["database": "private", "zoneID": ["zoneName": "com.apple.coredata.cloudkit.zone"]])
            #expect(page["changed"]?.arrayValue?.compactMap { $0["fields"]?["CD_id"]?["value"]?.stringValue } == ["from-app-store"])
            production.close()
            for device in [debug, phone, tablet] { _ = await device.stop() }
            await cloud.stop()
        }
    }
}
