import Foundation
import MeowWire
import Testing
import TestSupport

extension Mirroring {
    /// Values that must cross from one device through the cloud to another exactly: dates in
    /// every accepted shape, and a negative zero.
    @Suite("Mirroring: exact dates and negative zero", .timeLimit(.minutes(5)))
    struct ValueFidelityTests {
        /// An accepted date text, the UTC text the store keeps, and its milliseconds since 1970.
        struct DateCase {
            var input: String
            var stored: String
            var milliseconds: Int64
        }

        static let edgeCases: [DateCase] = [
            DateCase(input: "2026-02-28T23:59:59.999-01:00", stored: "2026-03-01T00:59:59.999Z", milliseconds: 1_772_326_799_999),
            // 0 to 9 fraction digits; past the millisecond they are dropped, toward the past.
            DateCase(input: "2026-02-28T23:59:59Z", stored: "2026-02-28T23:59:59.000Z", milliseconds: 1_772_323_199_000),
            DateCase(input: "2026-02-28T23:59:59.9Z", stored: "2026-02-28T23:59:59.900Z", milliseconds: 1_772_323_199_900),
            DateCase(input: "2026-02-28T23:59:59.98Z", stored: "2026-02-28T23:59:59.980Z", milliseconds: 1_772_323_199_980),
            DateCase(input: "2026-02-28T23:59:59.987Z", stored: "2026-02-28T23:59:59.987Z", milliseconds: 1_772_323_199_987),
            DateCase(input: "2026-02-28T23:59:59.9876Z", stored: "2026-02-28T23:59:59.987Z", milliseconds: 1_772_323_199_987),
            DateCase(input: "2026-02-28T23:59:59.98765Z", stored: "2026-02-28T23:59:59.987Z", milliseconds: 1_772_323_199_987),
            DateCase(input: "2026-02-28T23:59:59.987654Z", stored: "2026-02-28T23:59:59.987Z", milliseconds: 1_772_323_199_987),
            DateCase(input: "2026-02-28T23:59:59.9876543Z", stored: "2026-02-28T23:59:59.987Z", milliseconds: 1_772_323_199_987),
            DateCase(input: "2026-02-28T23:59:59.98765432Z", stored: "2026-02-28T23:59:59.987Z", milliseconds: 1_772_323_199_987),
            DateCase(input: "2026-02-28T23:59:59.987654321Z", stored: "2026-02-28T23:59:59.987Z", milliseconds: 1_772_323_199_987),
            DateCase(input: "2026-02-28T23:59:59.987654321+05:45", stored: "2026-02-28T18:14:59.987Z", milliseconds: 1_772_302_499_987),
            // Leap days and year ends, crossed by an offset.
            DateCase(input: "2024-02-29T00:00:00.000+01:00", stored: "2024-02-28T23:00:00.000Z", milliseconds: 1_709_161_200_000),
            DateCase(input: "2024-02-29T23:59:59.999-00:30", stored: "2024-03-01T00:29:59.999Z", milliseconds: 1_709_252_999_999),
            DateCase(input: "2000-02-29T12:00:00.5Z", stored: "2000-02-29T12:00:00.500Z", milliseconds: 951_825_600_500),
            DateCase(input: "2026-12-31T23:59:59.999-01:00", stored: "2027-01-01T00:59:59.999Z", milliseconds: 1_798_765_199_999),
            DateCase(input: "2027-01-01T00:00:00.000+01:00", stored: "2026-12-31T23:00:00.000Z", milliseconds: 1_798_758_000_000),
            // Before 1970, and the first and last milliseconds the cloud holds.
            DateCase(input: "1969-12-31T23:59:59.999Z", stored: "1969-12-31T23:59:59.999Z", milliseconds: -1),
            DateCase(input: "1970-01-01T00:59:59.999+01:00", stored: "1969-12-31T23:59:59.999Z", milliseconds: -1),
            DateCase(input: "0001-01-01T00:00:00.000Z", stored: "0001-01-01T00:00:00.000Z", milliseconds: -62_135_596_800_000),
            DateCase(input: "9999-12-31T23:59:59.999Z", stored: "9999-12-31T23:59:59.999Z", milliseconds: 253_402_300_799_999),
        ]

        /// 23:59:59.999 on 28 February 2026 in every quarter-hour offset from -12:00 to +14:00,
        /// the UTC text worked out by minutes (no date library involved).
        static var lastMillisecondCases: [DateCase] {
            (-48...56).map { quarter in
                let offset = quarter * 15
                let sign = offset < 0 ? "-" : "+"
                let input = "2026-02-28T23:59:59.999\(sign)\(two(abs(offset) / 60)):\(two(abs(offset) % 60))"
                var minute = 23 * 60 + 59 - offset
                var day = "2026-02-28"
                if minute >= 24 * 60 { minute -= 24 * 60; day = "2026-03-01" }
                return DateCase(input: input, stored: "\(day)T\(two(minute / 60)):\(two(minute % 60)):59.999Z",
                                milliseconds: 1_772_323_199_999 - Int64(offset) * 60_000)
            }
        }

        static func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }

        @Test("Every accepted date shape is stored as the exact UTC millisecond, sent as that instant's nearest double and fetched by another device as the same text")
        func datesCrossExactly() async throws {
            let cloud = try await Cloud.start()
            let a = try await Device.start("A", user: "owner", cloud: cloud)
            let b = try await Device.start("B", user: "owner", cloud: cloud)
            let cases = Self.edgeCases + Self.lastMillisecondCases
            let id = { (index: Int) in "date-\(1000 + index)" }
            let context = try await a.context()
            let objects: [JSONValue] = cases.enumerated().map { index, item in
                var values = Device.eventValues(id(index)).objectValue ?? [:]
                values["occurredAt"] = .string(item.input)
                return ["entity": "CareEvent", "values": .object(values)]
            }
            _ = try await a.call("object.insert", ["context": .string(context), "objects": .array(objects)])
            _ = try await a.call("context.save", ["context": .string(context)])

            func stored(on device: Device) async throws -> [String: JSONValue] {
                Dictionary(try await device.objects().compactMap { object in
                    object["values"]?["id"]?.stringValue.map { ($0, object["values"]?["occurredAt"] ?? .null) }
                }, uniquingKeysWith: { first, _ in first })
            }
            let onA = try await stored(on: a)
            try await a.send()
            let records = Dictionary(try await cloud.records(user: "owner").compactMap { record in
                record["fields"]?["CD_id"]?["value"]?.stringValue.map { ($0, record["fields"]?["CD_occurredAt"]?["value"] ?? .null) }
            }, uniquingKeysWith: { first, _ in first })
            try await b.fetch()
            let onB = try await stored(on: b)
            for (index, item) in cases.enumerated() {
                #expect(onA[id(index)] == .string(item.stored), "\(item.input) on A")
                #expect(records[id(index)]?.doubleValue == Double(item.milliseconds) / 1000, "\(item.input) in the cloud: \(String(describing: records[id(index)]))")
                #expect(onB[id(index)] == .string(item.stored), "\(item.input) on B")
            }
            #expect(try await b.pending() == 0, "the import queued nothing to send back")

            // Shapes that name no day or no instant are refused by name, and nothing is saved.
            let edit = try await a.context()
            let first = try await a.objectID(id: id(0))
            for bad in ["2026-02-29T12:00:00Z", "2026-02-28T23:59:60Z", "2026-02-28T23:59:59.9876543210Z", "2026-02-28T23:59:59+01"] {
                let refused = try await a.failure("object.set", ["context": .string(edit), "objectID": .string(first), "values": ["occurredAt": .string(bad)]])
                #expect(refused.code == .validationInvalidValue, "\(bad): \(refused)")
                #expect(refused.message.contains("occurredAt"), "\(bad): \(refused.message)")
            }
            _ = try await a.call("context.save", ["context": .string(edit)])
            #expect(try await stored(on: a)[id(0)] == .string(cases[0].stored))
            await ConflictTests.stop(cloud, a, b)
        }

        static func isPositiveZero(_ value: JSONValue?) -> Bool {
            value?.doubleValue.map { $0 == 0 && $0.sign == .plus } == true
        }

        @Test("-0.0 in a Double, a Float and a Date is accepted: a device keeps 0.0 (as SQLite's REAL column does) and sends 0; the cloud keeps another client's -0.0 as 0, and a device imports it as 0.0 and 1970-01-01")
        func negativeZeroIsAcceptedAsTheStoresKeepIt() async throws {
            let cloud = try await Cloud.start()
            let extra = ["--model", TripLogTests.jsonModel]
            let a = try await Device.start("A", user: "owner", cloud: cloud, extra: extra)
            let b = try await Device.start("B", user: "owner", cloud: cloud, extra: extra)
            _ = try await GraphShareTests.insert(a, "Day", ["id": "0E984725-C51C-4BF4-9960-E1C80E27ABA0", "dayNumber": 1, "distanceKm": .double(-0.0)])
            _ = try await GraphShareTests.insert(a, "Photo", ["id": "1B4E28BA-2FA1-11D2-883F-0016D3CCA427", "caption": "zero", "rating": 1,
                                                              "latitude": .double(-0.0), "takenAt": "1970-01-01T00:00:00Z"])
            let photoOnA = try await TripLogTests.values(a, "Photo")
            #expect(Self.isPositiveZero(photoOnA["latitude"]), "\(photoOnA)")
            #expect(photoOnA["takenAt"] == "1970-01-01T00:00:00.000Z")
            #expect(Self.isPositiveZero(try await TripLogTests.values(a, "Day")["distanceKm"]))
            try await a.send()
            let sent = try await cloud.records(user: "owner")
            #expect(Self.isPositiveZero(sent.first { $0["recordType"] == "CD_Photo" }?["fields"]?["CD_latitude"]?["value"]))
            #expect(Self.isPositiveZero(sent.first { $0["recordType"] == "CD_Photo" }?["fields"]?["CD_takenAt"]?["value"]))
            #expect(Self.isPositiveZero(sent.first { $0["recordType"] == "CD_Day" }?["fields"]?["CD_distanceKm"]?["value"]))
            try await b.fetch()
            #expect(Self.isPositiveZero(try await TripLogTests.values(b, "Photo")["latitude"]))
            #expect(Self.isPositiveZero(try await TripLogTests.values(b, "Day")["distanceKm"]))

            // Another client saves -0.0 in each: the cloud accepts it and keeps 0.
            let writer = try await cloud.writer("owner")
            defer { writer.close() }
            func text(_ value: String) -> JSONValue { ["type": "string", "value": .string(value)] }
            let negativeZero: JSONValue = .double(-0.0)
            _ = try await writer.call("records.modify", ["database": "private", "saves": [
                ["recordName": "photo-z", "recordType": "CD_Photo", "zoneID": ImportRefusalTests.zone, "fields": [
                    "CD_entityName": text("Photo"), "CD_caption": text("from elsewhere"), "CD_rating": ["type": "int64", "value": 2],
                    "CD_latitude": ["type": "double", "value": negativeZero], "CD_takenAt": ["type": "date", "value": negativeZero]]],
                ["recordName": "day-z", "recordType": "CD_Day", "zoneID": ImportRefusalTests.zone, "fields": [
                    "CD_entityName": text("Day"), "CD_dayNumber": ["type": "int64", "value": 2], "CD_distanceKm": ["type": "double", "value": negativeZero]]]]])
            let kept = try await cloud.records(user: "owner")
            #expect(Self.isPositiveZero(kept.first { $0["recordName"] == "photo-z" }?["fields"]?["CD_latitude"]?["value"]))
            #expect(Self.isPositiveZero(kept.first { $0["recordName"] == "photo-z" }?["fields"]?["CD_takenAt"]?["value"]))
            #expect(Self.isPositiveZero(kept.first { $0["recordName"] == "day-z" }?["fields"]?["CD_distanceKm"]?["value"]))
            try await b.fetch()
            let photo = try #require(try await b.objects("Photo", predicate: "caption == 'from elsewhere'").first?["values"])
            #expect(Self.isPositiveZero(photo["latitude"]), "\(photo)")
            #expect(photo["takenAt"] == "1970-01-01T00:00:00.000Z")
            let day = try #require(try await b.objects("Day", predicate: "dayNumber == 2").first?["values"])
            #expect(Self.isPositiveZero(day["distanceKm"]), "\(day)")
            #expect(try await b.pending() == 0, "the import queued nothing to send back")
            await ConflictTests.stop(cloud, a, b)
        }
    }
}
