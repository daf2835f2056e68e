import Foundation
import MeowWire
import StoreServiceKit
import Testing
import TestSupport
import class MeowCareCluster.MeowProcess

@Suite("Assign rules, routing and cross-store refusal over the socket")
struct AssignAndRoutingTests {
    /// MeowCare's model, but the shared configuration holds no CareSession.
    static func modelWithoutSharedSessions(in directory: TemporaryDirectory) throws -> String {
        let path = directory.file("model.json")
        let text = ManagedObjectModel.meowCareJSON.replacingOccurrences(
            of: #"{"name": "Shared", "scope": "shared", "entities": ["CareSession", "CareEvent"]}"#,
            with: #"{"name": "Shared", "scope": "shared", "entities": ["CareEvent"]}"#)
        #expect(text != ManagedObjectModel.meowCareJSON)
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// Scenario 4: assigning a saved object to any store, even its own, fails with Core Data's text.
    @Test func assignRulesFollowCoreDataOrder() async throws {
        let directory = TemporaryDirectory()
        let model = try Self.modelWithoutSharedSessions(in: directory)
        let store = try await StoreFixture.start(["--model", model], directory: directory)
        let client = try await store.client()
        let context = try await client.openContext()

        // A temporary object may be assigned again; the last call wins.
        let event = try await client.insertEvent(context, id: "e1")
        try await client.call("object.assign", ["context": .string(context), "objectID": .string(event), "store": "Shared"])
        try await client.call("object.assign", ["context": .string(context), "objectID": .string(event), "store": "Private"])

        // Rule 2: the store's configuration must hold the entity.
        let session = try await client.insertSession(context, id: "s1")
        let missing = try await client.failure("object.assign", ["context": .string(context), "objectID": .string(session), "store": "Shared"])
        #expect(missing.code == .entityNotInStore)
        #expect(missing.message == "Can't assign an object to a store that does not contain the object's entity.")

        let saved = try await client.save(context)
        let inserted = try StoreClient.insertion(saved, event)
        #expect(inserted.store == "Private")
        #expect(inserted.reason == "assigned")
        let permanent = inserted.objectID

        // Rule 1: a permanent ID is refused even for the store it is already in.
        let same = try await client.failure("object.assign", ["context": .string(context), "objectID": .string(permanent), "store": "Private"])
        #expect(same.code == .invalidReassignment)
        #expect(same.message == "Can't reassign an object to a different store once it has been saved.")
        #expect(same.details["newStoreURL"] == same.details["originalStoreURL"])
        #expect(same.details["objectID"] == .string(permanent))

        // "Once saved" really means "once permanent": obtainPermanentIDs fixes the store too.
        let early = try await client.insertEvent(context, id: "e2")
        let obtained = try await client.call("object.obtainPermanentIDs", ["context": .string(context), "objectIDs": [.string(early)]])
        let earlyPermanent = try #require(obtained["objects"]?[0]?["objectID"]?.stringValue)
        #expect(earlyPermanent.contains("/CareEvent/p"))
        let refused = try await client.failure("object.assign", ["context": .string(context), "objectID": .string(earlyPermanent), "store": "Shared"])
        #expect(refused.code == .invalidReassignment)
        let second = try await client.save(context)
        #expect(StoreClient.insertions(second).map(\.objectID) == [earlyPermanent])
        client.close()
        _ = await store.stop()
    }

    @Test func deterministicRoutingFollowsRelatedObjectElsePrivate() async throws {
        let store = try await StoreFixture.start()
        let client = try await store.client()
        let context = try await client.openContext()
        let sharedSession = try await client.insertSession(context, id: "shared-s", store: "Shared")
        let withSession = try await client.insertEvent(context, id: "e-shared", extra: ["session": .string(sharedSession)])
        let alone = try await client.insertEvent(context, id: "e-alone")
        let saved = try await client.save(context)
        #expect(try StoreClient.insertion(saved, withSession).store == "Shared")
        #expect(try StoreClient.insertion(saved, withSession).reason == "relatedObject")
        #expect(try StoreClient.insertion(saved, alone).store == "Private")
        #expect(try StoreClient.insertion(saved, alone).reason == "privateStoreDefault")
        #expect(await store.process.waitForLine(containing: "\"msg\":\"store routing\"") != nil)
        client.close()
        _ = await store.stop()
    }

    @Test func strictRoutingRefusesAnAmbiguousInsertAndWritesNothing() async throws {
        let store = try await StoreFixture.start(["--routing", "strict"])
        let client = try await store.client()
        let context = try await client.openContext()
        _ = try await client.insertEvent(context, id: "assigned", store: "Private")
        _ = try await client.insertEvent(context, id: "ambiguous")
        let error = try await client.failure("context.save", ["context": .string(context)])
        #expect(error.code == .ambiguousStoreAssignment)
        #expect(try await client.count("CareEvent") == 0)
        client.close()
        _ = await store.stop()
    }

    @Test func legacyRoutingReproducesSeed002WhenTheSharedStoreLoadsFirst() async throws {
        let store = try await StoreFixture.start(["--routing", "legacy", "--load-order", "shared,private"])
        let client = try await store.client()
        let context = try await client.openContext()
        _ = try await client.insertEvent(context, id: "lost")
        let saved = try await client.save(context)
        let inserted = try #require(StoreClient.insertions(saved).first)
        #expect(inserted.store == "Shared")
        #expect(inserted.reason == "loadOrder")
        // Not silently stuck: the save reports it cannot be exported (no share zone).
        #expect(saved["unexportable"] == [.string(inserted.objectID)])
        client.close()
        _ = await store.stop()
    }

    /// Scenario 4: a relationship across the two stores is refused at save with Core Data's text.
    @Test func crossStoreRelationshipIsRefusedAtSaveAndNothingIsWritten() async throws {
        let store = try await StoreFixture.start()
        let client = try await store.client()
        let context = try await client.openContext()
        let temporarySession = try await client.insertSession(context, id: "shared-s", store: "Shared")
        let session = try StoreClient.permanentID(try await client.save(context), temporarySession)

        let event = try await client.insertEvent(context, id: "e1", store: "Private", extra: ["session": .string(session)])
        let other = try await client.insertEvent(context, id: "e2", store: "Shared", extra: ["session": .string(session)])
        let error = try await client.failure("context.save", ["context": .string(context)])
        #expect(error.code == .crossStoreRelationship)
        #expect(error.message == "CoreData does not support persistent cross-store relationships")
        #expect(error.details["coreDataCode"] == 133010)
        #expect(error.details["objectID"] == .string(event))
        #expect(try await client.count("CareEvent") == 0)
        #expect(try await client.get(other, context: context)["isInserted"] == true)

        // The context keeps its changes; fixing the assignment lets the same save through.
        try await client.call("object.assign", ["context": .string(context), "objectID": .string(event), "store": "Shared"])
        _ = try await client.save(context)
        #expect(try await client.count("CareEvent", stores: ["Shared"]) == 2)
        client.close()
        _ = await store.stop()
    }

    /// Scenario 5 (the store-service's half): a delete plus an insert, never a reassignment.
    @Test func movingAnEventToASharedSessionIsADeletePlusAnInsert() async throws {
        let store = try await StoreFixture.start()
        let client = try await store.client()
        let context = try await client.openContext()
        let sharedSession = try await client.insertSession(context, id: "shared-s", store: "Shared")
        let event = try await client.insertEvent(context, id: "move-me")
        let saved = try await client.save(context)
        let eventID = try StoreClient.permanentID(saved, event)
        let sessionID = try StoreClient.permanentID(saved, sharedSession)
        let uuid = try await client.get(eventID)["uuid"]

        let moved = try await client.call("object.moveToStore", ["context": .string(context), "objectID": .string(eventID), "store": "Shared",
                                                                  "values": ["session": .string(sessionID)]])
        let after = try await client.save(context)
        #expect(after["deleted"] == [.string(eventID)])
        let newID = try StoreClient.permanentID(after, try #require(moved["objectID"]?.stringValue))
        let copy = try await client.get(newID)
        #expect(copy["store"] == "Shared")
        #expect(copy["uuid"] == uuid)
        #expect(copy["values"]?["id"] == "move-me")
        #expect(try await client.count("CareEvent", stores: ["Private"]) == 0)
        let history = try await client.call("history.fetch", ["store": "Private"])
        let kinds = (history["transactions"]?.arrayValue ?? []).flatMap { $0["changes"]?.arrayValue ?? [] }.compactMap { $0["kind"]?.stringValue }
        #expect(kinds.last == "delete")
        client.close()
        _ = await store.stop()
    }

    /// Scenario 6: the in-memory mode loads both stores with identities of their own, and a
    /// second in-memory process (another device) gets others; object IDs name their store.
    @Test func inMemoryStoresHaveDistinctIdentities() async throws {
        let one = try await StoreFixture.start(), two = try await StoreFixture.start()
        var identities: [String] = []
        var urls: [String] = []
        for fixture in [one, two] {
            let client = try await fixture.client()
            let stores = try #require(try await client.call("store.list")["stores"]?.arrayValue)
            #expect(stores.map { $0["name"] } == ["Private", "Shared"])
            identities += stores.compactMap { $0["storeUUID"]?.stringValue }
            urls += stores.compactMap { $0["url"]?.stringValue }
            #expect(urls.allSatisfy { $0.hasPrefix("memory:///") })

            let context = try await client.openContext()
            let privateEvent = try await client.insertEvent(context, id: "p", store: "Private")
            let sharedEvent = try await client.insertEvent(context, id: "s", store: "Shared")
            let saved = try await client.save(context)
            #expect(try StoreClient.permanentID(saved, privateEvent).hasPrefix("x-coredata://\(stores[0]["storeUUID"]?.stringValue ?? "?")/CareEvent/p"))
            #expect(try StoreClient.permanentID(saved, sharedEvent).hasPrefix("x-coredata://\(stores[1]["storeUUID"]?.stringValue ?? "?")/CareEvent/p"))
            client.close()
        }
        #expect(identities.count == 4)
        #expect(Set(identities).count == 4)
        #expect(Set(urls).count == 4)
        _ = await one.stop()
        _ = await two.stop()
    }

    /// Scenario 6: loading the same store identity twice fails with Core Data's text.
    @Test func loadingTheSameStoreIdentityTwiceStopsStartUp() async throws {
        let directory = TemporaryDirectory()
        let first = try await StoreFixture.start(onDisk: true, directory: directory)
        #expect(await first.stop() == 0)
        let data = try #require(first.dataDirectory)
        // A copied file carries the private store's identifier into the shared store's place.
        for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: "\(data)/MeowCare-Shared.sqlite\(suffix)") }
        try FileManager.default.removeItem(atPath: "\(data)/MeowCare-Shared.sqlite")
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: "\(data)/MeowCare-Private.sqlite\(suffix)") {
            try FileManager.default.copyItem(atPath: "\(data)/MeowCare-Private.sqlite\(suffix)", toPath: "\(data)/MeowCare-Shared.sqlite\(suffix)")
        }
        let second = try MeowProcess("store-service", ["--socket", directory.file("s2.sock"), "--data-dir", data])
        let status = await second.waitForExit(timeout: .seconds(10))
        #expect(status == 1)
        #expect(second.lines.contains { $0.contains("Can't add the same store twice") })
    }
}

@Suite("Start-up with a bad model")
struct BadModelStartUpTests {
    @Test func aBadModelFileStopsStartUpNamingTheProblem() async throws {
        let directory = TemporaryDirectory()
        let path = directory.file("bad.json")
        try #"{"name": "Cats", "entities": [{"name": "Cat", "relationships": [{"name": "owner", "destination": "Human"}]}], "configurations": []}"#
            .write(toFile: path, atomically: true, encoding: .utf8)
        let result = try await MeowProcess.run("store-service", ["--socket", directory.file("s.sock"), "--in-memory", "--model", path], timeout: .seconds(20))
        #expect(result.status == 78)
        #expect(result.stderr.contains("Cat.owner: destination entity 'Human' is not in the model."))
        #expect(!FileManager.default.fileExists(atPath: directory.file("s.sock")))
    }

    /// A model CloudKit cannot mirror loads without mirroring, and stops a mirrored start-up
    /// with NSPersistentCloudKitContainer's refusal (134060), before any cloud is contacted: a
    /// device would fail to load its stores the same way.
    @Test func aModelCloudKitCannotMirrorStopsOnlyAMirroredStartUp() async throws {
        let directory = TemporaryDirectory()
        let path = directory.file("m.json")
        try #"""
        {"name": "Cats", "entities": [{"name": "Cat", "attributes": [{"name": "name", "type": "string", "optional": false}]}],
         "configurations": [{"name": "Private", "scope": "private", "entities": ["Cat"]}, {"name": "Shared", "scope": "shared", "entities": ["Cat"]}]}
        """#.write(toFile: path, atomically: true, encoding: .utf8)
        let mirrored = try await MeowProcess.run("store-service", ["--socket", directory.file("s.sock"), "--in-memory", "--model", path,
                                                           "--sync-socket", directory.file("nowhere.sock"), "--sync-credential", "c"], timeout: .seconds(20))
        #expect(mirrored.status == 78)
        #expect(mirrored.stderr.contains("""
            the Private store cannot be mirrored with CloudKit: coreDataError (134060) A Core Data error occurred. \
            CloudKit integration requires that all attributes be optional, or have a default value set. \
            The following attributes are marked non-optional but do not have a default value:
            Cat: name
            """), "\(mirrored.stderr)")
        #expect(mirrored.stderr.contains("store-service: the Shared store cannot be mirrored"))
        #expect(!FileManager.default.fileExists(atPath: directory.file("s.sock")))
        // The same verdict without starting anything, and MeowCare's own model passes.
        let checked = try await MeowProcess.run("store-service", ["--check-model", "--model", path], timeout: .seconds(20))
        #expect(checked.status == 78)
        #expect(checked.stdout.contains("store-service: the Private store cannot be mirrored with CloudKit: coreDataError (134060)"))
        let meowCare = try await MeowProcess.run("store-service", ["--check-model"], timeout: .seconds(20))
        #expect(meowCare.status == 0)
        #expect(meowCare.stdout.contains("The MeowCare model can be mirrored with CloudKit"))
        let local = try await MeowProcess.start("store-service", ["--socket", directory.file("l.sock"), "--in-memory", "--model", path])
        let client = try WireClient(socketPath: directory.file("l.sock"), timeout: .seconds(10))
        try await client.hello(client: "model")
        #expect(try await client.call("ping", JSONValue.object([:]))["pong"] == true)
        client.close()
        _ = await local.stop()
    }
}
