import CloudWire
import MeowWire
import Testing

/// Each message's one reader: what it reads, and for what it refuses, the error naming the
/// field's path in the message.
@Suite("Message readers")
struct MessageReaderTests {
    /// The reader's error for `text` read as `T`, or nil when it reads.
    static func refusal<T: JSONReadable>(_ type: T.Type, _ text: String) -> String? {
        do throws(MessageReadError) {
            _ = try T.read(text)
            return nil
        } catch {
            return error.description
        }
    }

    @Test("A zone ID: the owner defaults; a missing name or a mistyped member is named")
    func zoneIDs() throws {
        #expect(try ZoneID.read(#"{"zoneName":"Z","x":[1]}"#) == ZoneID(zoneName: "Z"))
        #expect(try ZoneID.read(#"{"zoneName":"Z","ownerName":null}"#).ownerName == ZoneID.defaultOwner)
        #expect(Self.refusal(ZoneID.self, #"{"ownerName":"o"}"#) == "zoneName: required")
        #expect(Self.refusal(ZoneID.self, #"{"zoneName":["Z"]}"#) == "zoneName: expected a string")
        #expect(Self.refusal(ZoneID.self, #"{"zoneName":"Z"} {}"#) == "the message: not valid JSON")
    }

    @Test("records.modify params: saves, deletes and options; each refusal names its field's path")
    func modifyParams() throws {
        let record = #"{"recordName":"E1","zoneID":{"zoneName":"Z"},"recordType":"CD_CareEvent","fields":{"CD_a":{"type":"int64","value":1}}}"#
        let params = try ModifyParams.read(#"{"database":"shared","saves":[\#(record)],"deletes":[{"recordName":"D","zoneID":{"zoneName":"Z"}}],"savePolicy":"allKeys","atomic":false,"returnFields":false,"reply":"tags","other":{}}"#)
        #expect(params.database == .shared && params.saves?.count == 1 && params.deletes == [DeleteItem(recordName: "D", zoneID: ZoneID(zoneName: "Z"))])
        #expect(params.savePolicy == .allKeys && params.atomic == false && params.returnFields == false && params.reply == .tags)
        // Fields in stored form stay text, and their scan gives the save's type signature.
        #expect(params.saves?.first?.fieldsText == #"{"CD_a":{"type":"int64","value":1}}"#)
        #expect(params.typeSignatures?.first??.isEmpty == false)
        let refusals: [(String, String)] = [
            (#"{"saves":[]}"#, "database: required"),
            (#"{"database":"public"}"#, "database: Cannot initialize DatabaseScope from invalid String value public"),
            (#"{"database":"private","saves":[\#(record),{"recordName":"E2","zoneID":{"zoneName":7},"recordType":"T"}]}"#, "saves[1].zoneID.zoneName: expected a string"),
            (#"{"database":"private","saves":{}}"#, "saves: expected an array"),
            (#"{"database":"private","deletes":[{"recordName":"D"}]}"#, "deletes[0].zoneID: required"),
            (#"{"database":"private","atomic":"yes"}"#, "atomic: expected a boolean"),
            (#"{"database":"private","reply":"all"}"#, "reply: Cannot initialize ModifyReply from invalid String value all"),
            (#"{"database":"private","saves":[1]}"#, "saves[0]: expected an object"),
            (#"{"database":"private","saves":[\#(record),]}"#, "saves[1]: not valid JSON"),
        ]
        for (text, message) in refusals {
            #expect(Self.refusal(ModifyParams.self, text) == message, "\(text)")
        }
    }

    @Test("A page of zone changes: records, deletions, token; a bad member is named")
    func zoneChanges() throws {
        let page = try FetchZoneChangesResult.read(#"{"changed":[{"recordName":"E","zoneID":{"zoneName":"Z"},"recordType":"T","fields":{}}],"deleted":[{"recordName":"D"}],"token":"z1.2.0","moreComing":true}"#)
        #expect(page.changed.map(\.recordName) == ["E"] && page.deleted == [DeletedRecord(recordName: "D", recordType: "")])
        #expect(page.token == "z1.2.0" && page.moreComing)
        #expect(Self.refusal(FetchZoneChangesResult.self, #"{"changed":[{"recordName":"E","zoneID":{"zoneName":"Z"}}]}"#) == "changed[0].recordType: required")
        #expect(Self.refusal(FetchZoneChangesResult.self, #"{"deleted":[{"recordType":"T"}]}"#) == "deleted[0].recordName: required")
        #expect(Self.refusal(FetchZoneChangesResult.self, #"{"token":5}"#) == "token: expected a string")
    }

    @Test("A page of database changes: zones by list, token; a zone that does not read is named")
    func databaseChanges() throws {
        let page = try FetchDatabaseChangesResult.read(#"{"changedZones":[{"zoneName":"A"}],"purgedZones":[],"token":"d3.0","moreComing":true,"x":1}"#)
        #expect(page.changedZones == [ZoneID(zoneName: "A")] && page.deletedZones.isEmpty && page.purgedZones.isEmpty)
        #expect(page.token == "d3.0" && page.moreComing)
        #expect(Self.refusal(FetchDatabaseChangesResult.self, #"{"changedZones":[{"zoneName":"A"},{"ownerName":"o"}]}"#) == "changedZones[1].zoneName: required")
        #expect(Self.refusal(FetchDatabaseChangesResult.self, #"{"moreComing":"yes"}"#) == "moreComing: expected a boolean")
    }

    @Test("A modify reply's verdicts: names and tags; a mistyped tag is named")
    func verdicts() throws {
        let verdicts = try ModifyVerdicts.read(#"{"saved":[{"recordName":"A","recordChangeTag":"3"},{"recordName":"B","recordChangeTag":null}],"deleted":[{"recordName":"C"}]}"#)
        #expect(verdicts.saved == ["A": "3", "B": nil] && verdicts.deleted == ["C"])
        #expect(Self.refusal(ModifyVerdicts.self, #"{"saved":[{"recordName":"A","recordChangeTag":3}]}"#) == "saved[0].recordChangeTag: expected a string")
    }

    @Test("Change tokens: the service's forms read back; anything else is invalidArguments with the message a client gets")
    func changeTokens() throws {
        let zone = ChangeToken.Zone(zone: 4, seq: 5, horizon: 0)
        #expect(try zone.token == "z4.5.0" && ChangeToken.Zone(zone.token) == zone)
        let reading = ChangeToken.Zone(zone: 4, seq: 5, horizon: 1, reading: 3)
        #expect(try reading.token == "z4.5.1.3" && ChangeToken.Zone(reading.token) == reading)
        let database = ChangeToken.Database(seq: 15, horizon: 0)
        #expect(try database.token == "d15.0" && ChangeToken.Database(database.token) == database)
        for text in ["", "z4.5", "x4.5.0", "z4.5.0.1.2", "zq.5.0", "d15.0"] {
            let error = #expect(throws: WireError.self, "\(text)") { try ChangeToken.Zone(ChangeToken(text)) }
            #expect(error?.code == .invalidArguments && error?.message == "params.since is not a zone change token from this service.")
        }
        for text in ["", "d15", "z4.5.0", "d1.x"] {
            let error = #expect(throws: WireError.self, "\(text)") { try ChangeToken.Database(ChangeToken(text)) }
            #expect(error?.code == .invalidArguments && error?.message == "params.since is not a database change token from this service.")
        }
        // On the wire a token is its text.
        #expect(try JSONValueDecoder().decode(ChangeToken.self, from: "z1.2.0") == "z1.2.0")
        #expect(try JSONValue(encoding: FetchZoneChangesParams(database: .private, zoneID: ZoneID(zoneName: "Z"), since: "z1.2.0"))["since"] == "z1.2.0")
    }
}
