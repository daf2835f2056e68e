import Foundation
import MeowWire
@testable import StoreServiceKit
import Testing
import TestSupport
import class MeowCareCluster.MeowProcess

/// The example model of examples/TripLog: its two forms are one model, it uses every attribute
/// type, and broken copies of it stop the service naming the entity and property.
@Suite("The TripLog example model")
struct TripLogModelTests {
    static let examples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("examples/TripLog").path

    @Test("The Xcode bundle and the JSON file are the same model, with every attribute type, and CloudKit can mirror it")
    func bothFormsAreOneModel() throws {
        let xcode = try ManagedObjectModel.load(path: Self.examples + "/TripLog.xcdatamodeld")
        let json = try ManagedObjectModel.load(path: Self.examples + "/TripLog.json")
        #expect(xcode.jsonText == json.jsonText)
        let types = Set(xcode.entities.flatMap { $0.attributes.map(\.type) })
        #expect(types == Set(AttributeType.allCases))
        #expect(xcode.entity(named: "Photo")?.attribute("thumbnail")?.allowsExternalBinaryDataStorage == true)
        #expect(CloudKitModelRules.refusals(of: xcode).isEmpty)
    }

    /// Starts the service on `text` as its model: the exit status and stderr.
    static func start(_ text: String) async throws -> (status: Int32, stderr: String, socketExists: Bool) {
        let directory = TemporaryDirectory()
        let path = directory.file("TripLog.json")
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        let socket = directory.file("s.sock")
        let result = try await MeowProcess.run("store-service", ["--socket", socket, "--in-memory", "--model", path], timeout: .seconds(20))
        return (result.status, result.stderr, FileManager.default.fileExists(atPath: socket))
    }

    @Test("A malformed model, an unknown type or a dangling inverse stops start-up (78) with the place named", arguments: [
        ("malformed", "\"entities\": [", "\"entities\": [[", "not valid JSON"),
        ("unknown type", #"{"name": "rating", "type": "integer32""#, #"{"name": "rating", "type": "integer8""#, "Photo.rating"),
        ("dangling inverse", #""inverse": "day", "deleteRule": "cascade""#, #""inverse": "dayOf", "deleteRule": "cascade""#,
         "Day.photos: inverse 'dayOf' is not a relationship of Photo"),
    ])
    func badCopiesDoNotStart(kind: String, original: String, replacement: String, expected: String) async throws {
        let text = try String(contentsOfFile: Self.examples + "/TripLog.json", encoding: .utf8)
        #expect(text.contains(original), "\(kind): the example changed")
        let started = try await Self.start(text.replacingOccurrences(of: original, with: replacement))
        #expect(started.status == 78, "\(kind)")
        #expect(started.stderr.contains("bad model:") && started.stderr.contains(expected), "\(kind): \(started.stderr)")
        #expect(!started.socketExists, "\(kind): the service listened")
    }
}
