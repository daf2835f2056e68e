#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeowWire
import SQLiteKit

/// store-service on the TripLog example model (examples/TripLog): saves of 1,000 Photos per
/// save, the types of Photo in each (a 256-byte thumbnail, an Integer 64
/// past 2^53 as text, a UUID, a URI), beside raw prepared SQLite inserts of the same rows into
/// the table layout the service gives Photo, with the same durability, in the same run.
enum TripLogBenchmark {
    static let model = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("examples/TripLog/TripLog.json").path

    static func run(_ quick: Bool) throws {
        let directory = NSTemporaryDirectory() + "mb-triplog-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory + "/data", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let service = try Child("store-service", ["--socket", directory + "/store.sock", "--data-dir", directory + "/data", "--model", model,
                                                  "--log-level", "warning", "--no-orphan-repair"], socket: directory + "/store.sock")
        defer { service.stop() }
        let session = try StoreSession(socket: service.socket)
        let raw = try RawPhotos(path: directory + "/raw.sqlite")
        let widths = [44, 14, 16, 32]
        print("store-service on the TripLog model — beside raw SQLite doing the same work in the same run (WAL, synchronous=FULL)")
        print(row(["", "raw SQLite", "store-service", "ratio (target)"], widths: widths))

        let saves = quick ? 10 : 50
        try session.call("object.insert", #"{"context":"\#(session.context)","entity":"Day","values":{"id":"0E984725-C51C-4BF4-9960-E1C80E27ABA0","dayNumber":1}}"#)
        let day = try session.call("context.save", #"{"context":"\#(session.context)"}"#)["inserted"]?.arrayValue?.first?["objectID"]?.stringValue ?? ""
        let requests = (0..<saves).map { insertParams(context: session.context, batch: $0, count: 1000, day: day) }
        let rawBatches = (0..<saves).map { RawPhotos.rows(batch: $0, count: 1000, day: 1) }
        var started = now()
        for request in requests { try session.save(request) }
        let serviceRate = Double(saves * 1000) / (Double(now() - started) / 1e9)
        started = now()
        for rows in rawBatches { try raw.insert(rows) }
        let rawRate = Double(saves * 1000) / (Double(now() - started) / 1e9)
        print(row(["saves of 1,000 photos: photos/s", format(rawRate, 0), format(serviceRate, 0), format(serviceRate / rawRate, 2) + " (≥ 0.4)"], widths: widths))
        Figures.run.add("triplog.save", serviceRate, baseline: rawRate, unit: "photos/s")
        print("")
    }

    static let thumbnail = Data((0..<256).map { UInt8($0) })

    /// One batch's object.insert params (built before timing).
    static func insertParams(context: String, batch: Int, count: Int, day: String) -> String {
        let base64 = thumbnail.base64EncodedString()
        let objects = (0..<count).map { index -> String in
            let n = batch * count + index
            return #"{"entity":"Photo","values":{"id":"\#(RawPhotos.uuid(n))","caption":"photo \#(n)","takenAt":"\#(RawStore.timestamp(n))","thumbnail":"\#(base64)","sourceURL":"https://example.com/p/\#(n).heic","fileSize":"\#(9_007_199_254_740_993 + n)","rating":\#(n % 6),"latitude":35.0\#(n % 10)1,"longitude":135.7,"metadata":"YnBsaXN0MDA=","day":"\#(day)"}}"#
        }
        return #"{"context":"\#(context)","returnObjectIDs":false,"objects":[\#(objects.joined(separator: ","))]}"#
    }
}

/// The Photo table as the service lays it out (system columns, typed attribute columns, the
/// to-one relationships indexed), for the raw side.
final class RawPhotos {
    let db: Database
    let insert: Statement

    init(path: String) throws {
        db = try Database(path: path)
        try db.execute("""
            CREATE TABLE photo(pk INTEGER PRIMARY KEY, version INTEGER NOT NULL, uuid TEXT NOT NULL UNIQUE, zone TEXT, id TEXT, caption TEXT,
                               takenAt TEXT, thumbnail BLOB, sourceURL TEXT, fileSize INTEGER, rating INTEGER, latitude REAL, longitude REAL,
                               metadata BLOB, day INTEGER);
            CREATE INDEX photo_day ON photo(day);
            """)
        insert = try db.prepare("INSERT INTO photo(version, uuid, id, caption, takenAt, thumbnail, sourceURL, fileSize, rating, latitude, longitude, metadata, day) VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
    }

    static func uuid(_ n: Int) -> String {
        let hex = String(n, radix: 16, uppercase: true)
        return "1B4E28BA-2FA1-11D2-883F-" + String(repeating: "0", count: max(0, 12 - hex.count)) + hex
    }

    static func rows(batch: Int, count: Int, day: Int) -> [[any SQLBindable]] {
        let thumbnail = SQLValue.blob([UInt8](TripLogBenchmark.thumbnail))
        let metadata = SQLValue.blob([UInt8](Data(base64Encoded: "YnBsaXN0MDA=")!))
        return (0..<count).map { index in
            let n = batch * count + index
            return [RawStore.timeOrderedUUID(n), uuid(n), "photo \(n)", RawStore.timestamp(n), thumbnail, "https://example.com/p/\(n).heic",
                    9_007_199_254_740_993 + n, n % 6, 35.001, 135.7, metadata, day]
        }
    }

    func insert(_ rows: [[any SQLBindable]]) throws {
        try db.transaction { for row in rows { try insert.run(row) } }
    }
}
