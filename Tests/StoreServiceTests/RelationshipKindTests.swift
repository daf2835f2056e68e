import Foundation
import MeowWire
@testable import StoreServiceKit
import Testing
import TestSupport
import class MeowCareCluster.MeowProcess

/// Relationship counts, delete rules and what CloudKit mirroring forbids in a model.
@Suite("Relationship kinds")
struct RelationshipKindTests {
    static let model: JSONValue = [
        "name": "Counts",
        "entities": [
            ["name": "Trip", "attributes": [["name": "name", "type": "string"]],
             "relationships": [["name": "days", "destination": "Day", "toMany": true, "inverse": "trip", "minCount": 2, "maxCount": 3,
                                "deleteRule": "cascade"]]],
            ["name": "Day", "attributes": [["name": "number", "type": "integer16"]],
             "relationships": [["name": "trip", "destination": "Trip", "inverse": "days"]]],
        ],
        "configurations": [["name": "Private", "scope": "private", "entities": ["Trip", "Day"]],
                           ["name": "Shared", "scope": "shared", "entities": ["Trip", "Day"]]],
    ]

    @Test("Minimum and Maximum Count refuse a save with 1580/1590 naming the relationship; an optional empty set passes")
    func countsAreCheckedAtSave() async throws {
        let store = try await StoreFixture.start(model: Self.model)
        defer { Task { _ = await store.stop() } }
        let client = try await store.client()
        let context = try await client.openContext()
        func insert(_ entity: String, _ values: JSONValue) async throws -> String { try await client.insert(context, entity, values) }
        let temporary = try await insert("Trip", ["name": "Kyoto"])
        // No days: the optional relationship may be empty.
        let trip = try StoreClient.insertion(try await client.save(context), temporary).objectID
        var days: [String] = []
        for number in 1...4 { days.append(try await insert("Day", ["number": .int(number), "trip": .string(trip)])) }
        let tooMany = try await client.failure("context.save", ["context": .string(context)])
        #expect(tooMany.code == .validationRelationshipExceedsMaximumCount)
        #expect(tooMany.details["coreDataCode"] == 1590)
        #expect(tooMany.details["property"] == "days" && tooMany.details["count"] == 4)
        try await client.call("object.delete", ["context": .string(context), "objectID": .string(days[3])])
        try await client.call("object.delete", ["context": .string(context), "objectID": .string(days[2])])
        try await client.call("object.delete", ["context": .string(context), "objectID": .string(days[1])])
        let tooFew = try await client.failure("context.save", ["context": .string(context)])
        #expect(tooFew.code == .validationRelationshipLacksMinimumCount)
        #expect(tooFew.details["coreDataCode"] == 1580)
        #expect(tooFew.message.hasPrefix("Trip.days has 1 object(s)"))
        let fetched = try await client.call("fetch", ["entity": "Day"])
        #expect(fetched["objects"]?.arrayValue?.isEmpty == true, "a refused save writes nothing")
    }

    static let pairs: JSONValue = [
        "name": "Pairs",
        "entities": [
            ["name": "Person", "attributes": [["name": "name", "type": "string"]],
             "relationships": [["name": "passport", "destination": "Passport", "inverse": "owner", "deleteRule": "nullify"]]],
            ["name": "Passport", "attributes": [["name": "number", "type": "string"]],
             "relationships": [["name": "owner", "destination": "Person", "inverse": "passport", "deleteRule": "nullify"]]],
        ],
        "configurations": [["name": "Private", "scope": "private", "entities": ["Person", "Passport"]],
                           ["name": "Shared", "scope": "shared", "entities": ["Person", "Passport"]]],
    ]

    @Test("One-to-one with an inverse: setting one side sets the other and frees the previous partners; a delete nullifies the partner")
    func oneToOneKeepsBothSides() async throws {
        let store = try await StoreFixture.start(model: Self.pairs)
        defer { Task { _ = await store.stop() } }
        let client = try await store.client()
        let context = try await client.openContext()
        func insert(_ entity: String, _ values: JSONValue) async throws -> String {
            let temporary = try await client.insert(context, entity, values)
            return try StoreClient.insertion(try await client.save(context), temporary).objectID
        }
        func value(_ id: String, _ key: String) async throws -> JSONValue? {
            try await client.get(id)["values"]?[key]
        }
        let ann = try await insert("Person", ["name": "Ann"])
        let passport = try await insert("Passport", ["number": "X1", "owner": .string(ann)])
        #expect(try await value(ann, "passport") == .string(passport), "the inverse side is set by the save")
        let bob = try await insert("Person", ["name": "Bob", "passport": .string(passport)])
        #expect(try await value(passport, "owner") == .string(bob))
        #expect(try await value(ann, "passport") == .null, "the previous partner lets go")
        try await client.call("object.delete", ["context": .string(context), "objectID": .string(bob)])
        _ = try await client.save(context)
        #expect(try await value(passport, "owner") == .null, "a delete nullifies the partner's side")
    }

    static let cloudKitBreaches = """
        <entity name="Trip" representedClassName="Trip" syncable="YES">
            <attribute name="code" optional="YES" attributeType="String"/>
            <relationship name="days" optional="YES" toMany="YES" ordered="YES" deletionRule="Cascade" destinationEntity="Day" inverseName="trip" inverseEntity="Day"/>
            <uniquenessConstraints>
                <uniquenessConstraint>
                    <constraint value="code"/>
                </uniquenessConstraint>
            </uniquenessConstraints>
        </entity>
        <entity name="Day" representedClassName="Day" syncable="YES">
            <relationship name="trip" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Trip" inverseName="days" inverseEntity="Trip"/>
        </entity>
        """

    @Test("--check-model gives Apple's reasons for ordered relationships and unique constraints; start-up refuses them, naming the place")
    func orderedAndUniqueAreRefused() async throws {
        let files = XcodeModelFiles()
        let path = try files.bundle("Trips", versions: ["Trips": XcodeModelFiles.contents(Self.cloudKitBreaches)], current: nil)
        let checked = try await MeowProcess.run("store-service", ["--check-model", "--model", path], timeout: .seconds(20))
        #expect(checked.status == 78)
        #expect(checked.stdout.contains("CloudKit integration does not support ordered relationships. The following relationships are marked ordered:\nTrip: days"),
                "\(checked.stdout)")
        #expect(checked.stdout.contains("CloudKit integration does not support unique constraints. The following entities are constrained:\nTrip: code"))
        let started = try await MeowProcess.run("store-service", ["--socket", files.directory.file("s.sock"), "--in-memory", "--model", path], timeout: .seconds(20))
        #expect(started.status == 78)
        #expect(started.stderr.contains("bad model: Trip: uniqueness constraints (code) are not supported yet."), "\(started.stderr)")
    }

    @Test("Counts are read from Xcode's minCount/maxCount (0 is unbounded) and refused on a to-one relationship")
    func xcodeCounts() throws {
        let files = XcodeModelFiles()
        let model = try files.load("""
            <entity name="Trip" representedClassName="Trip" syncable="YES">
                <relationship name="days" optional="YES" toMany="YES" minCount="1" maxCount="0" deletionRule="Cascade" destinationEntity="Day" inverseName="trip" inverseEntity="Day"/>
            </entity>
            <entity name="Day" representedClassName="Day" syncable="YES">
                <relationship name="trip" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Trip" inverseName="days" inverseEntity="Trip"/>
            </entity>
            """)
        let days = try #require(model.entity(named: "Trip")?.relationship("days"))
        #expect(days.minCount == 1 && days.maxCount == nil)
        #expect(model.entity(named: "Day")?.relationship("trip")?.maxCount == nil)
        let text = JSONWriter.text(Self.model).replacingOccurrences(of: #""inverse":"days""#, with: #""inverse":"days","minCount":1"#)
        #expect(throws: ModelError.self) { try ManagedObjectModel.load(json: Data(text.utf8)) }
    }
}
