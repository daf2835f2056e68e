import MeowCareTesting
import Testing

/// The library reads a device's replies with StoreWire's types: a typed call whose reply does
/// not read as the type asked for says which field broke it.
@Suite struct StoreReplyTests {
    @Test(.meowCluster(devices: ["A"]))
    func aReplyThatDoesNotReadAsItsTypeNamesTheField() async throws {
        let device = try MeowCluster.current["A"]
        let stores = try await device.call("store.list", as: StoreListResult.self)
        #expect(Set(stores.stores.map(\.scope)) == [.private, .shared])
        do {
            _ = try await device.call("store.list", as: SaveResult.self)
            Issue.record("store.list's reply read as a SaveResult")
        } catch {
            #expect(error.code == .internalError)
            #expect(error.op == "store.list")
            #expect(error.details["field"] == "result.insertedCount")
            #expect(error.message.contains("result.insertedCount is missing"))
        }
    }
}
