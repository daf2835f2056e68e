import Foundation
import MeowWire
@testable import StoreServiceKit
import Testing

@Suite("Model as data")
struct ModelTests {
    @Test func embeddedMeowCareModelIsValid() throws {
        let model = try ManagedObjectModel.load(json: Data(ManagedObjectModel.meowCareJSON.utf8))
        #expect(model.name == "MeowCare")
        let event = try #require(model.entity(named: "CareEvent"))
        #expect(event.attribute("occurredAt")?.type == .date)
        #expect(event.attribute("value")?.optional == true)
        #expect(event.relationship("session")?.inverse == "events")
        #expect(event.attribute("eventTypeRaw")?.allowedValues?.contains("bloodGlucose") == true)
        #expect(model.configuration(scope: .shared).name == "Shared")
    }

    private func modelError(_ mutate: (inout [String: Any]) -> Void) -> String? {
        var object = try! JSONSerialization.jsonObject(with: Data(ManagedObjectModel.meowCareJSON.utf8)) as! [String: Any]
        mutate(&object)
        let data = try! JSONSerialization.data(withJSONObject: object)
        do {
            _ = try ManagedObjectModel.load(json: data)
            return nil
        } catch {
            return error.message
        }
    }

    @Test func badModelsNameTheProblem() throws {
        let noShared = modelError { $0["configurations"] = [["name": "Private", "scope": "private", "entities": ["CareEvent"]]] }
        #expect(noShared?.contains("scope \"shared\"") == true)

        let badDestination = modelError { model in
            var entities = model["entities"] as! [[String: Any]]
            var relationships = entities[1]["relationships"] as! [[String: Any]]
            relationships[0]["destination"] = "Litter"
            entities[1]["relationships"] = relationships
            model["entities"] = entities
        }
        #expect(badDestination?.contains("CareEvent.session: destination entity 'Litter'") == true)

        let badType = modelError { model in
            var entities = model["entities"] as! [[String: Any]]
            var attributes = entities[1]["attributes"] as! [[String: Any]]
            attributes[0]["type"] = "uuidish"
            entities[1]["attributes"] = attributes
            model["entities"] = entities
        }
        #expect(badType?.contains("entities[1].attributes[0].type") == true)

        let badConfiguration = modelError { model in
            model["configurations"] = [["name": "Private", "scope": "private", "entities": ["CareEvent", "Cat"]],
                                       ["name": "Shared", "scope": "shared", "entities": ["CareEvent"]]]
        }
        #expect(badConfiguration?.contains("lists entity 'Cat'") == true)
    }

    @Test func objectIDsRoundTripInCoreDataURIForm() throws {
        let temporary = ObjectID.newTemporary(entity: "CareEvent")
        #expect(temporary.uri.hasPrefix("x-coredata:///CareEvent/t"))
        #expect(ObjectID(uri: temporary.uri) == temporary)
        let permanent = ObjectID.permanent(storeUUID: "ABC", entity: "CareEvent", primaryKey: 42)
        #expect(permanent.uri == "x-coredata://ABC/CareEvent/p42")
        #expect(ObjectID(uri: permanent.uri) == permanent)
        #expect(ObjectID(uri: "x-coredata://ABC/CareEvent/t42") == nil)
        #expect(ObjectID(uri: "x-coredata://ABC/CareEvent/p0") == nil)
        #expect(ObjectID(uri: "https://example.com/a/b") == nil)
    }

    @Test func datesAreStoredInOneSortableForm() {
        #expect(AttributeCoding.canonicalDate("2026-07-27T09:30:00Z") == "2026-07-27T09:30:00.000Z")
        #expect(AttributeCoding.canonicalDate("2026-07-27T09:30:00.5Z") == "2026-07-27T09:30:00.500Z")
        #expect(AttributeCoding.canonicalDate("2026-07-27T17:30:00+08:00") == "2026-07-27T09:30:00.000Z")
        #expect(AttributeCoding.canonicalDate("2026-07-27T09:30:00.123Z") == "2026-07-27T09:30:00.123Z")
        #expect(AttributeCoding.canonicalDate("2026-13-27T09:30:00.123Z") == nil)
        #expect(AttributeCoding.canonicalDate("2026-07-27T09:30:00.12xZ") == nil)
        #expect(AttributeCoding.canonicalDate("2026-13-27T09:30:00Z") == nil)
        #expect(AttributeCoding.canonicalDate("yesterday") == nil)
    }
}
