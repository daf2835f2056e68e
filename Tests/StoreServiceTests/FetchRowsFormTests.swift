import Foundation
import MeowWire
import Testing
import TestSupport

/// A fetch's `rows` reply is written as text by hand (for speed); it must hold, cell for cell,
/// what the `objects` reply holds for the same objects, for every attribute type.
@Suite("fetch rows hold what objects hold")
struct FetchRowsFormTests {
    @Test("Every TripLog attribute type, escapes and relationships: each row cell equals the objects reply's value")
    func rowsMatchObjects() async throws {
        let store = try await StoreFixture.start(["--model", TripLogSample.jsonModel, "--no-orphan-repair"])
        let client = try await store.client()
        let context = try await client.openContext()
        let trip = try await client.insert(context, "Trip", .object(TripLogSample.trip))
        var day = TripLogSample.day
        day["trip"] = .string(trip)
        // Whole, fractional and negative doubles; text that must be escaped.
        day["distanceKm"] = 12
        day["notes"] = "quote \" backslash \\ newline \n tab \t bell \u{07} slash / café 🐈"
        let dayID = try await client.insert(context, "Day", .object(day))
        for (index, latitude) in [34.967146, -0.5, 35].enumerated() {
            var photo = TripLogSample.photo
            photo["id"] = .string("1B4E28BA-2FA1-11D2-883F-0016D3CCA42\(index)")
            photo["latitude"] = .double(latitude)
            photo["day"] = .string(dayID)
            _ = try await client.insert(context, "Photo", .object(photo))
        }
        var bare = TripLogSample.photo.filter { $0.key == "id" }
        bare["id"] = "1B4E28BA-2FA1-11D2-883F-0016D3CCA429"
        _ = try await client.insert(context, "Photo", .object(bare))
        _ = try await client.save(context)

        for entity in ["Trip", "Day", "Photo"] {
            let request: [String: JSONValue] = ["entity": .string(entity), "sortDescriptors": [["key": "id", "ascending": true]]]
            let objects = try #require(try await client.call("fetch", .object(request))["objects"]?.arrayValue)
            var asRows = request
            asRows["resultFormat"] = "rows"
            let reply = try await client.call("fetch", .object(asRows))
            let columnValues = try #require(reply["columns"]?.arrayValue)
            let columns = columnValues.compactMap { $0.stringValue }
            let rows = try #require(reply["rows"]?.arrayValue)
            #expect(rows.count == objects.count && !rows.isEmpty, "\(entity)")
            for (row, object) in zip(rows, objects) {
                let cells = try #require(row.arrayValue)
                #expect(cells.count == columns.count)
                #expect(cells[0] == object["objectID"] && cells[1] == object["store"] && cells[2] == object["version"] && cells[3] == object["uuid"])
                for (index, column) in columns.enumerated().dropFirst(5) {
                    let expected = object["values"]?[column] ?? .null
                    #expect(cells[index] == expected, "\(entity).\(column): rows \(cells[index]) objects \(expected)")
                }
            }
        }
        let notes = try await client.call("fetch", ["entity": "Day", "resultFormat": "rows"])
        let notesColumn = try #require(notes["columns"]?.arrayValue?.firstIndex(of: "notes"))
        #expect(notes["rows"]?[0]?[notesColumn] == day["notes"])
        client.close()
        _ = await store.stop()
    }
}
