import Foundation
import MeowWire
import Testing
import TestSupport

/// A large object.insert batch is read and converted in two halves at once. Nothing of that
/// may show: the IDs come back in request order, the error is the first bad item's wherever
/// the halves split, and a refused batch inserts nothing. Each test runs sizes on both sides
/// of the split's threshold (256 objects).
@Suite("object.insert batches split in two halves")
struct InsertBatchSplitTests {
    static let sizes = [255, 256, 257, 1000]

    /// A valid CareEvent item whose `id` and `value` name its place in the batch.
    static func event(_ index: Int) -> String {
        #"{"entity":"CareEvent","values":{"id":"e\#(index)","eventTypeRaw":"note","value":\#(index),"#
            + #""occurredAt":"2026-07-27T09:00:00Z","updatedAt":"2026-07-27T09:00:00Z","note":"n \" \\ é\#(index)"}}"#
    }

    /// Sends a batch (JSON text of the objects array) on a raw connection with a context
    /// holding `before` saved-not-yet events, then saves; answers the insert's reply and the
    /// save's `insertedCount`.
    static func insertThenSave(_ store: StoreFixture, objects: String, before: Int = 0) async throws -> (insert: JSONValue, saved: JSONValue) {
        let replies = try await InsertValuesTests.inContext(store) { connection, context in
            if before > 0 {
                let earlier = (0..<before).map { Self.event(10_000 + $0) }.joined(separator: ",")
                connection.send(json: #"{"id":2,"op":"object.insert","params":{"context":"\#(context)","objects":[\#(earlier)]}}"#)
                guard try connection.nextMessage()["ok"] == true else { throw TestFailure("the earlier objects were refused") }
            }
            connection.send(json: #"{"id":3,"op":"object.insert","params":{"context":"\#(context)","objects":\#(objects)}}"#)
            let reply = try connection.nextMessage()
            connection.send(["id": 4, "op": "context.save", "params": ["context": .string(context)]])
            let saved = try connection.nextMessage()
            return ["insert": reply, "saved": saved["result"]?["insertedCount"] ?? saved]
        }
        return (replies["insert"] ?? .null, replies["saved"] ?? .null)
    }

    @Test("The temporary IDs come back in request order and are saved in it", arguments: sizes)
    func idsInRequestOrder(size: Int) async throws {
        let store = try await StoreFixture.start()
        defer { Task { _ = await store.stop() } }
        let client = try await store.client()
        let context = try await client.openContext()
        let objects = "[" + (0..<size).map(Self.event).joined(separator: ",") + "]"
        let batch = try JSONDecoder().decode(JSONValue.self, from: Data(objects.utf8))
        let reply = try await client.call("object.insert", ["context": .string(context), "objects": batch])
        let ids = (reply["objectIDs"]?.arrayValue ?? []).compactMap { $0.stringValue }
        #expect(ids.count == size)
        #expect(Set(ids).count == size)
        for (index, id) in ids.enumerated() {
            let object = try await client.get(id, context: context)
            #expect(object["values"]?["id"] == .string("e\(index)"), "objectIDs[\(index)]")
            #expect(object["values"]?["note"] == .string("n \" \\ é\(index)"), "objectIDs[\(index)]")
        }
        let saved = try await client.save(context)
        let keys = try ids.map { id -> Int in
            let permanent = try StoreClient.permanentID(saved, id)
            guard let key = Int(permanent.split(separator: "/").last?.dropFirst() ?? "") else { throw TestFailure("not a permanent ID: \(permanent)") }
            return key
        }
        #expect(keys == keys.sorted() && Set(keys).count == size, "primary keys follow the request's order")
        client.close()
    }

    /// Where the bad items of a batch of `size` are and what is wrong with each; the expected
    /// error is the first one's.
    struct Defect: CustomStringConvertible {
        enum Kind {
            /// A value the attribute refuses (conversion, in the op).
            case badValue
            /// A to-one value naming a temporary ID this context never inserted.
            case unknownTemporary
            /// An item without its entity (reading the params).
            case noEntity
            /// An item whose JSON is not well formed (reading the params; the body is then
            /// judged whole).
            case malformed
        }

        var kind: Kind
        /// The item's place as a fraction of the batch.
        var at: Double

        func index(in size: Int) -> Int { min(size - 1, Int(Double(size) * at)) }

        func item(_ index: Int) -> String {
            switch kind {
            case .badValue: return Self.replacing(index, #""value":\#(index)"#, #""value":"high""#)
            case .unknownTemporary:
                // The temporary ID comes before a bad value in the same item: it is met first.
                return Self.replacing(index, #""id":"e\#(index)""#,
                                      #""id":"e\#(index)","session":"x-coredata:///CareSession/t0C0FFEE0-0000-4000-8000-000000000000","value":"high""#)
            case .noEntity: return Self.replacing(index, #""entity":"CareEvent","#, "")
            case .malformed: return Self.replacing(index, #""value":\#(index)"#, #""value":tru"#)
            }
        }

        private static func replacing(_ index: Int, _ text: String, _ replacement: String) -> String {
            InsertBatchSplitTests.event(index).replacingOccurrences(of: text, with: replacement)
        }

        var description: String { "\(kind)@\(at)" }
    }

    static let defectSets: [[Defect]] = [
        [.init(kind: .badValue, at: 0.2), .init(kind: .badValue, at: 0.75)],
        [.init(kind: .badValue, at: 0.75)],
        [.init(kind: .badValue, at: 0.49), .init(kind: .badValue, at: 0.5)],
        [.init(kind: .badValue, at: 0.5)],
        [.init(kind: .unknownTemporary, at: 0.2), .init(kind: .badValue, at: 0.7)],
        [.init(kind: .badValue, at: 0.2), .init(kind: .unknownTemporary, at: 0.7)],
        [.init(kind: .noEntity, at: 0.2), .init(kind: .noEntity, at: 0.75)],
        [.init(kind: .noEntity, at: 0.75)],
        [.init(kind: .badValue, at: 0.1), .init(kind: .noEntity, at: 0.75)],
        [.init(kind: .noEntity, at: 0.2), .init(kind: .malformed, at: 0.75)],
        [.init(kind: .malformed, at: 0.75)],
        [.init(kind: .malformed, at: 0.2), .init(kind: .noEntity, at: 0.75)],
    ]

    @Test("The error is the first bad item's, wherever the halves split, and nothing is inserted",
          arguments: defectSets)
    func firstBadItemWins(defects: [Defect]) async throws {
        let store = try await StoreFixture.start()
        defer { Task { _ = await store.stop() } }
        for size in Self.sizes {
            // The defects are listed in the order of their places.
        let bad = Dictionary(defects.map { ($0.index(in: size), $0) }, uniquingKeysWith: { first, _ in first })
            let objects = "[" + (0..<size).map { bad[$0]?.item($0) ?? Self.event($0) }.joined(separator: ",") + "]"
            let (reply, saved) = try await Self.insertThenSave(store, objects: objects, before: 3)
            #expect(reply["ok"] == false, "\(size) \(defects)")
            #expect(saved == 3, "\(size) \(defects): only the earlier objects are saved")
            // A params error (the item could not be read) comes before any item is converted.
            let readDefect = defects.first { $0.kind == .noEntity || $0.kind == .malformed }
            let first = try #require(readDefect ?? defects.first)
            let index = first.index(in: size)
            let error = reply["error"]
            switch first.kind {
            case .badValue:
                #expect(error?["code"] == .string(ErrorCode.validationInvalidValue.rawValue), "\(size) \(defects): \(reply)")
                #expect(error?["details"]?["index"] == .int(index), "\(size) \(defects): \(reply)")
                #expect(error?["details"]?["property"] == "value", "\(size) \(defects): \(reply)")
                #expect(error?["message"]?.stringValue?.hasPrefix("objects[\(index)]: ") == true, "\(size) \(defects): \(reply)")
            case .unknownTemporary:
                #expect(error?["code"] == .string(ErrorCode.unknownObject.rawValue), "\(size) \(defects): \(reply)")
                #expect(error?["details"]?["index"] == .int(index), "\(size) \(defects): \(reply)")
            case .noEntity:
                #expect(error?["code"] == .string(ErrorCode.missingField.rawValue), "\(size) \(defects): \(reply)")
                #expect(error?["details"]?["field"] == .string("params.objects[\(index)].entity"), "\(size) \(defects): \(reply)")
            case .malformed:
                // Met before any other defect, text that is not JSON makes the whole body refused as such.
                #expect(error?["code"] == .string(ErrorCode.invalidJSON.rawValue), "\(size) \(defects): \(reply)")
            }
        }
    }
}
