import Foundation
import MeowWire
@testable import StoreServiceKit
import Testing
import TestSupport

/// Many-to-many relationships: the model form, the wire values and the delete rules.
@Suite("Many-to-many")
struct ManyToManyTests {
    static let model: JSONValue = [
        "name": "Tags",
        "entities": [
            ["name": "Photo", "attributes": [["name": "title", "type": "string"]],
             "relationships": [["name": "tags", "destination": "Tag", "toMany": true, "inverse": "photos", "deleteRule": "nullify"]]],
            ["name": "Tag", "attributes": [["name": "name", "type": "string"]],
             "relationships": [["name": "photos", "destination": "Photo", "toMany": true, "inverse": "tags", "deleteRule": "deny"]]],
            ["name": "Playlist", "attributes": [["name": "name", "type": "string"]],
             "relationships": [["name": "songs", "destination": "Song", "toMany": true, "inverse": "playlists", "deleteRule": "cascade"]]],
            ["name": "Song", "attributes": [["name": "name", "type": "string"]],
             "relationships": [["name": "playlists", "destination": "Playlist", "toMany": true, "inverse": "songs"]]],
        ],
        "configurations": [["name": "Private", "scope": "private", "entities": ["Photo", "Tag", "Playlist", "Song"]],
                           ["name": "Shared", "scope": "shared", "entities": ["Photo", "Tag", "Playlist", "Song"]]],
    ]

    @Test("The model accepts a to-many with a to-many inverse and adds one hidden link entity per pair, in both stores, out of the model's JSON")
    func modelAddsOneLinkPerPair() throws {
        let model = try ManagedObjectModel.load(json: Data(JSONWriter.text(Self.model).utf8))
        #expect(model.manyToMany("Photo", "tags") == ManyToManyEnd(link: "_Photo_tags", own: "a", other: "b"))
        #expect(model.manyToMany("Tag", "photos") == ManyToManyEnd(link: "_Photo_tags", own: "b", other: "a"))
        #expect(model.manyToMany("Playlist", "songs")?.link == "_Playlist_songs")
        #expect(model.entities.map(\.name).filter { $0.hasPrefix("_") } == ["_Photo_tags", "_Playlist_songs"])
        #expect(model.configurations.allSatisfy { $0.entities.contains("_Photo_tags") })
        let sides = try #require(model.linkSides(of: "_Photo_tags"))
        #expect(sides.a == ("Photo", "tags") && sides.b == ("Tag", "photos"))
        #expect(!ModelJSONWriter.text(model).contains("_Photo_tags"))
        let again = try ManagedObjectModel.load(json: Data(ModelJSONWriter.text(model).utf8))
        #expect(again.entities.count == model.entities.count, "loading the written model adds the same links once")
    }

    @Test("A many-to-many relationship that is its own inverse is refused, naming it")
    func selfInverseIsRefused() throws {
        let model: JSONValue = [
            "name": "Friends",
            "entities": [["name": "Person", "relationships": [["name": "friends", "destination": "Person", "toMany": true, "inverse": "friends"]]]],
            "configurations": [["name": "Private", "scope": "private", "entities": ["Person"]], ["name": "Shared", "scope": "shared", "entities": ["Person"]]],
        ]
        #expect(throws: ModelError.self) { try ManagedObjectModel.load(json: Data(JSONWriter.text(model).utf8)) }
        do { _ = try ManagedObjectModel.load(json: Data(JSONWriter.text(model).utf8)) } catch {
            #expect(error.message.hasPrefix("Person.friends: a many-to-many relationship that is its own inverse"))
        }
    }

    @Test("object.set takes the whole set or {add, remove}; object.get and fetch give the IDs on both sides; bad values name entity and property")
    func setAndRead() async throws {
        let store = try await StoreFixture.start(model: Self.model)
        defer { Task { _ = await store.stop() } }
        let client = try await store.client()
        let context = try await client.openContext()
        func insert(_ entity: String, _ values: JSONValue) async throws -> String { try await client.insert(context, entity, values) }
        let beach = try await insert("Tag", ["name": "beach"]), food = try await insert("Tag", ["name": "food"])
        let photo = try await insert("Photo", ["title": "Lunch", "tags": [.string(beach), .string(food)]])
        let before = try await client.get(photo, context: context)
        #expect(before["values"]?["tags"]?.arrayValue?.count == 2, "the context's links count before the save")
        let saved = try await client.save(context)
        let (photoID, beachID, foodID) = (try StoreClient.permanentID(saved, photo), try StoreClient.permanentID(saved, beach), try StoreClient.permanentID(saved, food))
        #expect(saved["deleted"]?.arrayValue?.isEmpty ?? true)
        #expect(saved["inserted"]?.arrayValue?.count == 3 && saved["insertedCount"] == 3, "the links are not reported as the app's objects")
        #expect(try await client.get(photoID)["values"]?["tags"] == .array([beachID, foodID].sorted().map { .string($0) }))
        #expect(try await client.get(beachID)["values"]?["photos"] == [.string(photoID)])

        let second = try await client.openContext()
        try await client.call("object.set", ["context": .string(second), "objectID": .string(photoID), "values": ["tags": ["remove": [.string(beachID)]]]])
        _ = try await client.save(second)
        #expect(try await client.get(beachID)["values"]?["photos"] == [], "the removed link is gone from the other side too")
        let fetched = try await client.call("fetch", ["entity": "Photo"])
        #expect(fetched["objects"]?[0]?["values"]?["tags"] == [.string(foodID)])

        func photos(_ predicate: String, _ arguments: [JSONValue] = []) async throws -> Int? {
            try await client.call("fetch", ["entity": "Photo", "predicate": .string(predicate), "arguments": .array(arguments)])["objects"]?.arrayValue?.count
        }
        #expect(try await photos("ANY tags == %@", [.string(foodID)]) == 1)
        #expect(try await photos("ANY tags == %@", [.string(beachID)]) == 0)
        #expect(try await photos("ANY tags.name == 'food'") == 1)
        #expect(try await photos("NONE tags.name == 'food'") == 0)
        #expect(try await photos("tags.@count == 1") == 1)
        #expect(try await client.count("Tag", predicate: "photos.@count == 0") == 1)

        let wrongEntity = try await client.failure("object.set", ["context": .string(second), "objectID": .string(photoID), "values": ["tags": [.string(photoID)]]])
        #expect(wrongEntity.details["entity"] == "Photo" && wrongEntity.details["property"] == "tags")
        #expect(wrongEntity.message.contains("expected a Tag object ID"))
        let direct = try await client.failure("object.insert", ["context": .string(second), "entity": "_Photo_tags", "values": [:]])
        #expect(direct.message.contains("link table of the many-to-many Photo.tags"))
        let notArray = try await client.failure("object.set", ["context": .string(second), "objectID": .string(photoID), "values": ["tags": ["add": "x"]]])
        #expect(notArray.details["property"] == "tags" && notArray.message.contains("'add' must be an array"))
        #expect(try await client.get(photoID, context: second)["values"]?["tags"] == [.string(foodID)], "a refused value changes nothing")
    }

    @Test("Delete rules: nullify removes the links, deny refuses with 1600 while a link remains, cascade deletes the other ends")
    func deleteRules() async throws {
        let store = try await StoreFixture.start(model: Self.model)
        defer { Task { _ = await store.stop() } }
        let client = try await store.client()
        let context = try await client.openContext()
        func insert(_ entity: String, _ values: JSONValue) async throws -> String { try await client.insert(context, entity, values) }
        let tag = try await insert("Tag", ["name": "beach"])
        let photo = try await insert("Photo", ["title": "Sea", "tags": [.string(tag)]])
        let songs = [try await insert("Song", ["name": "a"]), try await insert("Song", ["name": "b"])]
        let kept = try await insert("Song", ["name": "kept"])
        let playlist = try await insert("Playlist", ["name": "Road", "songs": .array(songs.map { .string($0) })])
        let saved = try await client.save(context)
        let (tagID, photoID, playlistID) = (try StoreClient.permanentID(saved, tag), try StoreClient.permanentID(saved, photo), try StoreClient.permanentID(saved, playlist))

        try await client.call("object.delete", ["context": .string(context), "objectID": .string(tagID)])
        let denied = try await client.failure("context.save", ["context": .string(context)])
        #expect(denied.details["coreDataCode"] == 1600 && denied.details["relationship"] == "photos")
        try await client.call("context.rollback", ["context": .string(context)])

        try await client.call("object.delete", ["context": .string(context), "objectID": .string(photoID)])
        let nullified = try await client.save(context)
        #expect(nullified["deleted"] == [.string(photoID)], "the links deleted with the photo are not the app's objects")
        #expect(try await client.get(tagID)["values"]?["photos"] == [])
        // Tagged and deleted before any save: its unsaved links go with it and the save passes (the tag's deny rule sees none).
        let draft = try await insert("Photo", ["title": "Draft", "tags": [.string(tagID)]])
        try await client.call("object.delete", ["context": .string(context), "objectID": .string(draft)])
        _ = try await client.save(context)
        #expect(try await client.count("_Photo_tags") == 0)

        try await client.call("object.delete", ["context": .string(context), "objectID": .string(tagID)])
        _ = try await client.save(context)

        try await client.call("object.delete", ["context": .string(context), "objectID": .string(playlistID)])
        _ = try await client.save(context)
        #expect(try await client.count("Song") == 1, "cascade deleted the playlist's songs and kept the other")
        #expect(try await client.count("Playlist") == 0)
        #expect(try await client.count("_Playlist_songs") == 0)
        _ = kept
    }
}
