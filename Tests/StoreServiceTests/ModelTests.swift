import CloudWire
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

    /// NSPersistentCloudKitContainer's model check (PFCloudKitModelValidator): every breach of
    /// a configuration's entities is listed under Apple's heading for its rule, each list sorted,
    /// the rules in Apple's order, so the reason reads as a device's load error does.
    @Test func cloudKitRulesListEveryBreachInApplesWords() throws {
        let meowCare = ManagedObjectModel.meowCare()
        #expect(CloudKitModelRules.refusals(of: meowCare).isEmpty, "MeowCare's own model must be mirrorable")
        let text = #"""
        {"name": "Cats", "entities": [
          {"name": "Cat", "attributes": [{"name": "name", "type": "string", "optional": false},
                                         {"name": "born", "type": "date", "optional": false, "defaultValue": null},
                                         {"name": "indoor", "type": "boolean", "optional": false, "defaultValue": true},
                                         {"name": "breed", "type": "string"}],
           "relationships": [{"name": "toys", "destination": "Toy", "toMany": true, "inverse": "cat", "deleteRule": "deny"},
                             {"name": "vet", "destination": "Vet", "optional": false},
                             {"name": "bowl", "destination": "Bowl"}]},
          {"name": "Toy", "relationships": [{"name": "cat", "destination": "Cat", "inverse": "toys", "optional": false}]},
          {"name": "Bowl"},
          {"name": "Vet", "attributes": [{"name": "Clinic", "type": "string", "optional": false}]}],
         "configurations": [{"name": "Home", "scope": "private", "entities": ["Cat", "Toy", "Vet"]},
                            {"name": "Shared", "scope": "shared", "entities": ["Bowl"]}]}
        """#
        let model = try ManagedObjectModel.load(json: Data(text.utf8))
        #expect(CloudKitModelRules.failureReason(model: model, configuration: model.configurations[0]) == """
            CloudKit integration requires that all relationships have an inverse, the following do not:
            Cat: bowl
            Cat: vet
            CloudKit integration requires that all attributes be optional, or have a default value set. The following attributes are marked non-optional but do not have a default value:
            Cat: born
            Cat: name
            Vet: Clinic
            CloudKit integration requires that all relationships be optional, the following are not:
            Cat: vet
            Toy: cat
            CloudKit integration does not allow relationships to objects that aren't sync'd. The following relationships have destination entities that not in the specified configuration.
            Cat: bowl - Bowl
            The following relationships are configured with unsupported delete rules:
            Cat:toys - Deny
            """)
        #expect(CloudKitModelRules.failureReason(model: model, configuration: model.configurations[1]) == nil, "Bowl alone breaks nothing")
        let empty = StoreConfiguration(name: "Nothing", scope: .shared, entities: [])
        #expect(CloudKitModelRules.failureReason(model: model, configuration: empty) == "The configuration named 'Nothing' does not contain any entities.")
        #expect(CloudKitModelRules.refusals(of: model).count == 1)
        #expect(CloudKitModelRules.refusals(of: model).first?.hasPrefix("the Home store cannot be mirrored with CloudKit: coreDataError (134060) A Core Data error occurred. ") == true)
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

@Suite("ISO-8601 times without Foundation's calendar")
struct ISOTimeTests {
    @Test("whole seconds agree with Foundation before and after 1970 and across leap days; fractions round-trip")
    func agreesWithFoundation() {
        // Whole seconds: Foundation's formatter truncates fractions after binary rounding
        // (1780000000.123 prints .122), so only whole seconds are compared with it.
        let foundation = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
        var generator = SystemRandomNumberGenerator()
        let fixed: [Int64] = [0, -1, 951_782_400, 951_868_799, -2_208_988_800, 4_102_444_800, 1_709_164_800, 1_780_000_000]
        let random = (0..<500).map { _ in Int64.random(in: -3_000_000_000...5_000_000_000, using: &generator) }
        for seconds in fixed + random {
            #expect(ISOTime.string(seconds: Double(seconds)) == foundation.format(Date(timeIntervalSince1970: Double(seconds))), "\(seconds)")
            let fractional = Double(seconds) + Double(Int.random(in: 0..<1000, using: &generator)) / 1000
            let text = ISOTime.string(seconds: fractional)
            #expect(ISOTime.seconds(text).map { abs($0 - fractional) < 0.0005 } == true, "\(text)")
        }
        #expect(ISOTime.string(seconds: 1_780_000_000.123) == "2026-05-28T20:26:40.123Z")
        #expect(ISOTime.string(seconds: 951_868_799.9996) == "2000-03-01T00:00:00.000Z")
        // The first and last instants with four-digit years; past them there is no text.
        #expect(ISOTime.string(seconds: -62_167_219_200) == "0000-01-01T00:00:00.000Z")
        #expect(ISOTime.string(seconds: 253_402_300_799.999) == "9999-12-31T23:59:59.999Z")
        #expect(ISOTime.string(seconds: 253_402_300_800) == "")
        #expect(ISOTime.string(seconds: -62_167_219_201, fractionDigits: 1) == "")
    }

    @Test("microsecond text keeps microseconds; offsets are read exactly; nonsense is nil")
    func shapes() {
        #expect(ISOTime.string(seconds: 1_780_000_000.123456, fractionDigits: 6) == "2026-05-28T20:26:40.123456Z")
        #expect(ISOTime.seconds("2026-05-28T20:26:40.123456Z") == 1_780_000_000.123456)
        #expect(ISOTime.seconds("2026-05-28T20:26:40Z") == 1_780_000_000)
        #expect(ISOTime.seconds("2026-05-29T04:26:40+08:00") == 1_780_000_000)
        #expect(ISOTime.seconds("2026-02-28T23:59:59.999-01:00") == 1_772_326_799.999)
        #expect(ISOTime.seconds("2026-13-28T20:26:40Z") == nil)
        #expect(ISOTime.seconds("yesterday") == nil)
    }

    @Test("every accepted shape names one exact instant: fraction digits 0–9, offsets, leap days, year ends, before 1970")
    func exactInstants() {
        func instant(_ text: String) -> ISOInstant? { ISOTime.instant(text) }
        // 0 to 9 fraction digits, each to the nanosecond.
        #expect(instant("2026-02-28T23:59:59Z") == ISOInstant(seconds: 1_772_323_199))
        let digits = "123456789"
        for count in 1...9 {
            let fraction = Int64(digits.prefix(count))! * Int64(pow(10, Double(9 - count)))
            #expect(instant("2026-02-28T23:59:59.\(digits.prefix(count))Z") == ISOInstant(seconds: 1_772_323_199, nanoseconds: fraction))
        }
        #expect(instant("2026-02-28T23:59:59.1234567891Z") == nil, "10 digits are refused")
        #expect(instant("2026-02-28T23:59:59.Z") == nil)
        // Offsets: ±hh:mm, -00:00 and +00:00 as Z; hours 00–23, minutes 00–59 only.
        #expect(instant("2026-02-28T23:59:59.999-01:00") == ISOInstant(seconds: 1_772_326_799, nanoseconds: 999_000_000))
        #expect(instant("2026-03-01T05:29:59.999+05:30") == ISOInstant(seconds: 1_772_323_199, nanoseconds: 999_000_000))
        #expect(instant("2026-02-28T23:59:59-00:00") == instant("2026-02-28T23:59:59+00:00"))
        for bad in ["2026-02-28T23:59:59+24:00", "2026-02-28T23:59:59+01:60", "2026-02-28T23:59:59+0100", "2026-02-28T23:59:59+01",
                    "2026-02-28T23:59:60Z", "2026-02-28T24:00:00Z", "2026-02-28 23:59:59Z", "2026-02-28T23:59:59z", "2026-02-28T23:59:59"] {
            #expect(instant(bad) == nil, "\(bad)")
        }
        // 29 February only in leap years (2000 and 2024 are, 1900 and 2026 are not).
        #expect(instant("2024-02-29T12:00:00Z") != nil)
        #expect(instant("2000-02-29T12:00:00Z") != nil)
        #expect(instant("1900-02-29T12:00:00Z") == nil)
        #expect(instant("2026-02-29T12:00:00Z") == nil)
        #expect(instant("2026-04-31T12:00:00Z") == nil)
        // Across year ends and before 1970 (the whole second rounds toward the past).
        #expect(ISOTime.string(instant("2027-01-01T00:59:59.999+01:00")!) == "2026-12-31T23:59:59.999Z")
        #expect(ISOTime.string(instant("2026-12-31T23:30:00.000-01:00")!) == "2027-01-01T00:30:00.000Z")
        #expect(instant("1969-12-31T23:59:59.999Z") == ISOInstant(seconds: -1, nanoseconds: 999_000_000))
        #expect(instant("1969-12-31T23:59:59.999Z")?.milliseconds == -1)
        #expect(instant("1969-12-31T23:59:59.999Z")?.secondsSince1970 == -0.001)
        #expect(ISOTime.string(instant("1970-01-01T00:59:59.999+01:00")!) == "1969-12-31T23:59:59.999Z")
        // Digits past the millisecond are dropped, toward the past, on both sides of 1970.
        #expect(ISOTime.string(instant("2026-02-28T23:59:59.9999999Z")!) == "2026-02-28T23:59:59.999Z")
        #expect(ISOTime.string(instant("1969-12-31T23:59:59.9999999Z")!) == "1969-12-31T23:59:59.999Z")
    }

    @Test("1 ms before midnight, in every quarter-hour offset from -12:00 to +14:00, is the UTC instant it names, and its double gives back the millisecond")
    func lastMillisecondInEveryOffset() {
        for quarter in -48...56 {
            let minutes = quarter * 15
            let offset = "\(minutes < 0 ? "-" : "+")\(String(format: "%02d:%02d", abs(minutes) / 60, abs(minutes) % 60))"
            let text = "2024-02-29T23:59:59.999\(offset)"
            let expected = ISOInstant(seconds: 1_709_251_199 - Int64(minutes) * 60, nanoseconds: 999_000_000)
            #expect(ISOTime.instant(text) == expected, "\(text)")
            #expect(ISOTime.seconds(text).map { Int64(($0 * 1000).rounded()) } == expected.milliseconds, "\(text)")
            #expect(ISOTime.string(seconds: expected.secondsSince1970) == ISOTime.string(expected), "\(text)")
        }
    }
}
