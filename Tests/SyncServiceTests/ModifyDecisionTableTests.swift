import CloudWire
import FoundationEssentials
import MeowWire
import TestSupport
import Testing
@testable import SyncServiceKit

/// The decision table of docs/RULES.md, row by row, against the rules engine in-process.
@Suite struct ModifyDecisionTableTests {
    let cloud: CloudFixture
    init() throws {
        cloud = try CloudFixture()
        try cloud.makeZone()
    }

    @Test func missingRecordWithoutTagIsInsertedAndMatchingTagSavesWithNewTag() throws {
        let inserted = try #require(try cloud.save([record("a", title: "one")]).saved.first)
        let tag = try #require(inserted.recordChangeTag)
        #expect(inserted.creatorUserRecordName == "owner")
        let updated = try #require(try cloud.save([record("a", title: "two", tag: tag)]).saved.first)
        #expect(updated.recordChangeTag != tag)
        #expect(title(try cloud.fetch("a")) == "two")
        #expect(updated.creationDate == inserted.creationDate)
    }

    @Test func staleTagIsServerRecordChangedWithServerClientAndAncestor() throws {
        let base = try #require(try cloud.save([record("a", title: "base")]).saved.first?.recordChangeTag)
        try cloud.save([record("a", title: "server edit", tag: base)])
        let error = wireError { try cloud.save([record("a", title: "client edit", tag: base)]) }
        let item = try #require(partialErrors(error)["a"])
        #expect(item.code == .serverRecordChanged)
        #expect(item.details["ckErrorCode"] == 14)
        #expect(item.details["serverRecord"]?["fields"]?["CD_title"]?["value"] == "server edit")
        #expect(item.details["clientRecord"]?["fields"]?["CD_title"]?["value"] == "client edit")
        #expect(item.details["ancestorRecord"]?["fields"]?["CD_title"]?["value"] == "base")
        #expect(title(try cloud.fetch("a")) == "server edit")
    }

    @Test func takenNameWithoutTagIsServerRejectedRequest() throws {
        try cloud.save([record("a")])
        let item = partialErrors(wireError { try cloud.save([record("a", title: "again")]) })["a"]
        #expect(item?.code == .serverRejectedRequest)
        #expect(item?.details["ckErrorCode"] == 15)
    }

    /// A batch's saves find their stored rows together, walking the zone's names in SQLite's
    /// order (bytes): stored names that sort among, before and after the batch's new ones
    /// are each found, and no new name is taken for a stored one.
    @Test func aBatchFindsItsStoredNamesWhereverTheySortAmongItsNewOnes() throws {
        let stored = ["E5", "E40", "E399", "z", "Z", "A"]
        try cloud.save(stored.map { record($0) })
        let batch = ["E400", "E401", "E5", "E50", "E399", "E4", "z", "~", "E6", "A", "0", "Z", "a"]
        let errors = partialErrors(wireError { try cloud.save(batch.map { record($0) }) })
        for name in batch {
            #expect(errors[name]?.code == (stored.contains(name) ? .serverRejectedRequest : .batchRequestFailed), "\(name)")
        }
    }

    @Test func deletedRecordSavedWithTagIsUnknownItem() throws {
        let tag = try #require(try cloud.save([record("a")]).saved.first?.recordChangeTag)
        try cloud.delete(["a"])
        let item = partialErrors(wireError { try cloud.save([record("a", title: "edit", tag: tag)]) })["a"]
        #expect(item?.code == .unknownItem)
    }

    @Test func missingZoneIsZoneNotFound() throws {
        let item = partialErrors(wireError { try cloud.save([record("a", zone: ZoneID(zoneName: "Nope"))]) })["a"]
        #expect(item?.code == .zoneNotFound)
        #expect(item?.details["ckErrorCode"] == 26)
    }

    @Test func tooManyItemsOrBytesIsLimitExceededForTheWholeRequest() throws {
        let many = (0..<401).map { record("r\($0)") }
        let error = wireError { try cloud.save(many) }
        #expect(error?.code == .limitExceeded)
        #expect(error?.details["ckErrorCode"] == 27)
        #expect(partialErrors(wireError { _ = try cloud.fetch("r0") })["r0"]?.code == .unknownItem)

        var limits = LimitsParams()
        limits.maxRequestBytes = 100
        _ = try cloud.engine.setLimits(limits)
        let bytes = wireError { try cloud.save([record("big", title: String(repeating: "x", count: 200))]) }
        #expect(bytes?.code == .limitExceeded)
    }

    @Test func oversizedRecordIsLimitExceededForThatItem() throws {
        var limits = LimitsParams()
        limits.maxRecordBytes = 64
        _ = try cloud.engine.setLimits(limits)
        let error = wireError { try cloud.save([record("big", title: String(repeating: "x", count: 100))], atomic: false) }
        #expect(partialErrors(error)["big"]?.code == .limitExceeded)
    }

    @Test func parentMissingIsReferenceViolation() throws {
        let item = partialErrors(wireError { try cloud.save([record("child", parent: "ghost")]) })["child"]
        #expect(item?.code == .referenceViolation)
        #expect(item?.details["ckErrorCode"] == 31)
    }

    @Test func parentSavedInTheSameRequestIsAccepted() throws {
        let result = try cloud.save([record("child", parent: "session"), record("session", type: "CD_CareSession")])
        #expect(result.saved.count == 2)
    }

    @Test func deletingAParentThatLeavesChildrenBehindIsReferenceViolation() throws {
        try cloud.save([record("session", type: "CD_CareSession"), record("e1", parent: "session"), record("e2", parent: "session")])
        let item = partialErrors(wireError { try cloud.delete(["session"]) })["session"]
        #expect(item?.code == .referenceViolation)
        #expect(try cloud.fetch("session") != nil)
        let deleted = try cloud.delete(["e1", "e2", "session"])
        #expect(deleted.deleted.count == 3)
    }

    @Test func childSaveBumpsTheParentsTag() throws {
        let parentTag = try #require(try cloud.save([record("session", type: "CD_CareSession")]).saved.first?.recordChangeTag)
        try cloud.save([record("e1", parent: "session")])
        let after = try #require(try cloud.fetch("session"))
        #expect(after.recordChangeTag != parentTag)
    }

    @Test func atomicZoneFailureFailsTheRestWithBatchRequestFailedAndOtherZonesCommit() throws {
        try cloud.makeZone("Other")
        let base = try #require(try cloud.save([record("a", title: "base")]).saved.first?.recordChangeTag)
        try cloud.save([record("a", title: "server", tag: base)])
        let error = wireError {
            try cloud.save([record("a", title: "stale", tag: base), record("new"), record("elsewhere", zone: ZoneID(zoneName: "Other"))])
        }
        let items = partialErrors(error)
        #expect(items["a"]?.code == .serverRecordChanged)
        #expect(items["new"]?.code == .batchRequestFailed)
        #expect(items["new"]?.details["ckErrorCode"] == 22)
        #expect(items["elsewhere"] == nil)
        #expect(error?.details["saved"]?.arrayValue?.count == 1)
        #expect(partialErrors(wireError { _ = try cloud.fetch("new") })["new"]?.code == .unknownItem)
        #expect(try cloud.fetch("elsewhere", zone: ZoneID(zoneName: "Other")) != nil)
    }

    @Test func nonAtomicRequestAndDefaultZoneSaveTheGoodItems() throws {
        try cloud.save([record("a")])
        let error = wireError { try cloud.save([record("a", title: "no tag"), record("b")], atomic: false) }
        #expect(partialErrors(error)["a"]?.code == .serverRejectedRequest)
        #expect(try cloud.fetch("b") != nil)

        let defaultZone = ZoneID(zoneName: ZoneID.defaultZoneName)
        try cloud.save([record("x", zone: defaultZone)])
        let defaultError = wireError { try cloud.save([record("x", zone: defaultZone), record("y", zone: defaultZone)]) }
        #expect(partialErrors(defaultError)["x"]?.code == .serverRejectedRequest)
        #expect(try cloud.fetch("y", zone: defaultZone) != nil)
    }

    @Test func changedKeysMergesWithoutComparingTags() throws {
        var first = record("a", title: "t")
        first.fields["CD_count"] = ["type": "int64", "value": 1]
        try cloud.save([first])
        var partial = CloudRecord(recordName: "a", zoneID: ZoneID(zoneName: "Zone"), recordType: "CD_CareEvent",
                                  fields: ["CD_count": ["type": "int64", "value": 2]], recordChangeTag: "stale")
        try cloud.save([partial], policy: .changedKeys)
        var stored = try #require(try cloud.fetch("a"))
        #expect(title(stored) == "t")
        #expect(stored.fields["CD_count"]?["value"] == 2)
        partial.fields = ["CD_title": nil]
        try cloud.save([partial], policy: .changedKeys)
        stored = try #require(try cloud.fetch("a"))
        #expect(stored.fields["CD_title"] == nil)
    }

    /// `allKeys` writes every key the client sends, without comparing tags; like every policy
    /// it keeps the keys the client did not send (another client may have added them).
    @Test func allKeysWritesWithoutComparingTagsAndKeepsUnsentKeys() throws {
        var first = record("a", title: "t")
        first.fields["CD_count"] = ["type": "int64", "value": 1]
        try cloud.save([first])
        try cloud.save([record("a", title: "replaced")], policy: .allKeys)
        let stored = try #require(try cloud.fetch("a"))
        #expect(title(stored) == "replaced")
        #expect(stored.fields["CD_count"] == ["type": "int64", "value": 1])
    }

    @Test func unknownFieldTypesAndNamesRoundTripUnchanged() throws {
        var odd = record("a")
        odd.fields["CD_future"] = ["type": "location", "value": ["latitude": 25.03, "longitude": 121.56]]
        odd.fields["CD_when"] = ["type": "date", "value": 1_780_000_000.5]
        odd.fields["CD_tags"] = ["type": "list", "value": [["type": "string", "value": "cat"]]]
        try cloud.save([odd])
        let stored = try #require(try cloud.fetch("a"))
        #expect(stored.fields == odd.fields)
    }

    @Test func malformedKnownFieldTypeIsInvalidArguments() throws {
        var bad = record("a")
        bad.fields["CD_count"] = ["type": "int64", "value": "seven"]
        #expect(partialErrors(wireError { try cloud.save([bad]) })["a"]?.code == .invalidArguments)
    }

    /// CKRecord.ID's rules: ASCII, at most 255 characters, no leading underscore; CKRecordZone.ID's:
    /// at most 255 characters (any UTF-8).
    @Test func recordAndZoneNamesFollowCloudKitsRules() throws {
        let long = String(repeating: "r", count: 256)
        let errors = partialErrors(wireError { try cloud.save([record(long), record("café"), record("_hidden")], atomic: false) })
        #expect(errors[long]?.code == .invalidArguments)
        #expect(errors[long]?.message.contains("at most 255 characters") == true)
        #expect(errors[long]?.message.count ?? 0 < 200, "the message quotes a long name in full")
        #expect(errors["café"]?.message.contains("ASCII characters only") == true)
        #expect(errors["_hidden"]?.message.contains("must not start with an underscore") == true)
        try cloud.save([record(String(repeating: "r", count: 255)), record("a.b-c_d~1")])
        let zoneError = wireError { try cloud.makeZone(String(repeating: "z", count: 256)) }
        #expect(zoneError?.code == .invalidArguments)
        #expect(zoneError?.message.contains("a zone name has at most 255 characters") == true)
        try cloud.makeZone(String(repeating: "貓", count: 255))
    }

    /// CloudKit's just-in-time schema: a field's first save defines its type for its record
    /// type, in every user's databases; another type later is invalidArguments with CloudKit's
    /// server message. An atomic zone's other items fail with it (batchRequestFailed).
    @Test func aFieldKeepsTheTypeItsFirstSaveGaveIt() throws {
        var first = record("a")
        first.fields["CD_value"] = ["type": "double", "value": 1.5]
        first.fields["CD_tags"] = ["type": "list", "value": [["type": "string", "value": "cat"]]]
        try cloud.save([first])
        var wrong = record("b")
        wrong.fields["CD_value"] = ["type": "string", "value": "high"]
        let errors = partialErrors(wireError { try cloud.save([wrong, record("c")]) })
        #expect(errors["b"]?.code == .invalidArguments)
        #expect(errors["b"]?.message == "invalid attempt to set value type STRING for field 'CD_value' for type 'CD_CareEvent', defined to be: DOUBLE")
        #expect(errors["b"]?.details["definedType"] == "DOUBLE")
        #expect(errors["c"]?.code == .batchRequestFailed)
        var wrongList = record("d")
        wrongList.fields["CD_tags"] = ["type": "list", "value": [["type": "int64", "value": 3]]]
        #expect(partialErrors(wireError { try cloud.save([wrongList]) })["d"]?.message.contains("INT64_LIST for field 'CD_tags' for type 'CD_CareEvent', defined to be: STRING_LIST") == true)
        // Another user, same record type: one schema per cloud.
        try cloud.makeZone(user: "alice")
        var alices = record("e")
        alices.fields["CD_value"] = ["type": "int64", "value": 2]
        #expect(partialErrors(wireError { try cloud.save([alices], as: "alice") })["e"]?.code == .invalidArguments)
        // The same field name in another record type is another field; a null removes, defining nothing.
        var session = record("s", type: "CD_CareSession")
        session.fields["CD_value"] = ["type": "string", "value": "fine"]
        var removal = record("a", tag: try #require(try cloud.fetch("a")?.recordChangeTag))
        removal.fields["CD_value"] = .null
        try cloud.save([session, removal], policy: .changedKeys)
        // In one request, the first save of a new field defines it for the rest.
        var one = record("f"), two = record("g")
        one.fields["CD_weight"] = ["type": "double", "value": 4.2]
        two.fields["CD_weight"] = ["type": "string", "value": "4.2 kg"]
        #expect(partialErrors(wireError { try cloud.save([one, two], atomic: false) }).keys.sorted() == ["g"])
        let schema = cloud.engine.fieldSchema.withLock { $0 }.json
        #expect(schema["CD_CareEvent"]?["CD_weight"] == "DOUBLE")
        #expect(schema["CD_CareEvent"]?["CD_tags"] == "STRING_LIST")
        #expect(schema["CD_CareSession"]?["CD_value"] == "STRING")
        // A reset of everything resets the schema (CloudKit's "reset the development environment").
        _ = try cloud.engine.reset(ResetParams(scope: "all"))
        try cloud.makeZone()
        try cloud.save([wrong])
    }

    @Test func privateDatabaseCannotReachAnotherUsersZone() throws {
        let error = wireError { try cloud.save([record("a", zone: ZoneID(zoneName: "Zone", ownerName: "owner"))], as: "alice") }
        let item = partialErrors(error)["a"]
        #expect(item?.code == .permissionFailure)
        #expect(item?.message.contains("PrivateDB can't be used to access another user's zone") == true)
    }

    @Test func partialErrorsAreKeyedByRecordNameAndByZoneWhenNamesRepeat() throws {
        try cloud.makeZone("Other")
        let error = wireError {
            try cloud.save([record("dup", tag: "x"), record("dup", zone: ZoneID(zoneName: "Other"), tag: "x")], atomic: false)
        }
        let keys = Set(partialErrors(error).keys)
        #expect(keys == ["__defaultOwner__/Zone/dup", "__defaultOwner__/Other/dup"])
    }

    @Test func deletingAMissingRecordSucceeds() throws {
        let result = try cloud.delete(["never-existed"])
        #expect(result.deleted.map(\.recordName) == ["never-existed"])
    }

    @Test func accountStatusTurnsRequestsIntoCloudKitErrors() throws {
        _ = try cloud.engine.setAccountStatus("alice", .noAccount)
        #expect(wireError { try cloud.engine.requireAvailableAccount("alice") }?.code == .notAuthenticated)
        _ = try cloud.engine.setAccountStatus("alice", .temporarilyUnavailable)
        #expect(wireError { try cloud.engine.requireAvailableAccount("alice") }?.code == .accountTemporarilyUnavailable)
        _ = try cloud.engine.setAccountStatus("alice", .available)
        #expect(wireError { try cloud.engine.requireAvailableAccount("alice") } == nil)
    }
}

/// Choices of ours that CloudKit does not document, pinned.
@Suite struct CloudChoicesTests {
    let cloud: CloudFixture
    init() throws {
        cloud = try CloudFixture()
        try cloud.makeZone()
    }

    @Test func datesComeFromTheInjectableClockInSecondsSince1970() throws {
        cloud.engine.setClock(1_780_000_000)
        let saved = try #require(try cloud.save([record("a")]).saved.first)
        #expect(saved.creationDate == 1_780_000_000)
        cloud.engine.setClock(1_780_000_100)
        let edited = try #require(try cloud.save([record("a", title: "b", tag: saved.recordChangeTag)]).saved.first)
        #expect(edited.creationDate == 1_780_000_000)
        #expect(edited.modificationDate == 1_780_000_100)
    }

    @Test func theAncestorIsNullOnceItsVersionIsOlderThanTheRetention() throws {
        var limits = LimitsParams()
        limits.retentionSeconds = 60
        _ = try cloud.engine.setLimits(limits)
        cloud.engine.setClock(1_780_000_000)
        let base = try #require(try cloud.save([record("a", title: "base")]).saved.first?.recordChangeTag)
        try cloud.save([record("a", title: "server", tag: base)])
        cloud.engine.setClock(1_780_000_500)
        _ = try cloud.engine.fetchZoneChanges(caller: "owner", FetchZoneChangesParams(database: .private, zoneID: ZoneID(zoneName: "Zone")))
        let item = partialErrors(wireError { try cloud.save([record("a", title: "client", tag: base)]) })["a"]
        #expect(item?.code == .serverRecordChanged)
        #expect(item?.details["ancestorRecord"] == .null)
        #expect(item?.details["serverRecord"]?["fields"]?["CD_title"]?["value"] == "server")
    }

    @Test func returnFieldsFalseAnswersMetadataWithoutFields() throws {
        var params = ModifyParams(database: .private, saves: [record("a")])
        params.returnFields = false
        let saved = try #require(try cloud.engine.modifyRecords(caller: "owner", params).saved.first)
        let json = try JSONValue(encoding: saved)
        #expect(json["fields"] == nil)
        #expect(json["recordChangeTag"]?.stringValue == saved.recordChangeTag)
        #expect(title(try cloud.fetch("a")) == "note")
        #expect(try JSONValue(encoding: try #require(try cloud.fetch("a")))["fields"] != nil)
    }

    @Test("reply: tags answers each saved record's name and new tag alone, in a partialFailure's saved list too")
    func replyTagsAnswersNamesAndTagsOnly() throws {
        var params = ModifyParams(database: .private, saves: [record("a"), record("b")])
        params.reply = .tags
        let result = try cloud.engine.modifyRecords(caller: "owner", params)
        var text = ""
        #expect(result.writeJSON(to: &text))
        let reply = try JSONParser.parse(text)
        let tags = try result.saved.map { try #require($0.recordChangeTag) }
        #expect(reply["saved"] == .array(zip(["a", "b"], tags).map { ["recordName": .string($0), "recordChangeTag": .string($1)] }))
        #expect(try JSONValue(encoding: result) == reply, "the Encodable form says the same")
        #expect(title(try cloud.fetch("a")) == "note", "the fields were stored all the same")
        // A batch where one item fails: the saved list in the error's details is as short.
        params.saves = [record("c"), record("a", title: "stale", tag: "no-such-tag")]
        params.atomic = false
        let error = try #require(wireError { _ = try cloud.engine.modifyRecords(caller: "owner", params) })
        #expect(error.code == .partialFailure)
        let saved = try #require(error.details["saved"]?.arrayValue)
        #expect(saved.count == 1 && saved[0].objectValue?.keys.sorted() == ["recordChangeTag", "recordName"] && saved[0]["recordName"] == "c")
        // Anything but records or tags is refused.
        let bad = try? JSONValueDecoder().decode(ModifyParams.self, from: ["database": "private", "reply": "fields"] as JSONValue)
        #expect(bad == nil)
    }

    @Test func reservedOrTakenUserNamesAndCredentialsAreRefused() throws {
        #expect(wireError { try cloud.engine.createUser("_admin", credential: "x") }?.code == .invalidArguments)
        #expect(wireError { try cloud.engine.createUser("a/b", credential: "x") }?.code == .invalidArguments)
        #expect(wireError { try cloud.engine.createUser("alice", credential: "new") }?.code == .constraintViolation)
        #expect(wireError { try cloud.engine.createUser("dora", credential: "alice-secret") }?.code == .constraintViolation)
    }

    @Test func moreZonesThanTheLimitIsQuotaExceeded() throws {
        var limits = LimitsParams()
        limits.maxZonesPerUser = 2
        _ = try cloud.engine.setLimits(limits)
        let error = wireError { try cloud.makeZone("Third") }
        #expect(error?.code == .quotaExceeded)
        #expect(try cloud.makeZone("Zone") == ZoneID(zoneName: "Zone"))
    }

    @Test func theSharedDatabaseDoesNotReachTheCallersOwnZones() throws {
        let item = partialErrors(wireError { try cloud.save([record("a", zone: ownerZone)], database: .shared) })["a"]
        #expect(item?.code == .permissionFailure)
    }

    @Test func twoUsersRacingOnOneRecordGetOneSaveAndServerRecordChanged() async throws {
        try cloud.shareZone(with: [("alice", "readWrite"), ("bob", "readWrite")])
        let tag = try #require(try cloud.save([record("a", title: "base")]).saved.first?.recordChangeTag)
        let engine = cloud.engine
        let outcomes = await withTaskGroup(of: String.self) { group in
            for (index, user) in ["owner", "alice", "bob", "owner", "alice", "bob"].enumerated() {
                group.addTask {
                    await offThread {
                        let database: DatabaseScope = user == "owner" ? .private : .shared
                        let zone = user == "owner" ? ZoneID(zoneName: "Zone") : ownerZone
                        let error = wireError {
                            _ = try engine.modifyRecords(caller: user, ModifyParams(database: database, saves: [record("a", zone: zone, title: "\(user)\(index)", tag: tag)]))
                        }
                        return partialErrors(error)["a"]?.code.rawValue ?? (error == nil ? "saved" : error!.code.rawValue)
                    }
                }
            }
            var all: [String] = []
            for await outcome in group { all.append(outcome) }
            return all
        }
        #expect(outcomes.filter { $0 == "saved" }.count == 1)
        #expect(outcomes.filter { $0 == "serverRecordChanged" }.count == 5)
    }
}

/// Stored fields text is read back by the package's one JSON parser.
@Suite struct FieldsJSONTests {
    @Test func writtenFieldsReadBackIdentically() throws {
        let fields: [String: JSONValue] = [
            "text": ["type": "string", "value": "quote \" backslash \\ newline \n tab \t bell \u{07} 貓 🐱"],
            "int": ["type": "int64", "value": -9_007_199_254_740_993],
            "double": ["type": "double", "value": 0.1],
            "big": ["type": "double", "value": 1.5e300],
            "list": ["type": "list", "value": [["type": "string", "value": "a"], ["type": "int64", "value": 2]]],
            "odd": ["type": "location", "value": ["lat": 25.03, "flag": true, "none": nil]],
        ]
        let text = RecordFields(fields).text
        let back = try JSONDecoder().decode([String: JSONValue].self, from: Data(text.utf8))
        #expect(back == fields)
        #expect(try JSONParser.parse(text) == .object(fields))
    }

    @Test func theReaderHandlesEscapesSurrogatesAndRejectsBrokenText() {
        #expect((try? JSONParser.parse(#" {"a" : "\ud83d\udc31 \u00e9 \/ \"q\" \\" , "b":[1, -2.5e3, true, false, null, {}]} "#))
                == ["a": "🐱 é / \"q\" \\", "b": [1, -2500.0, true, false, nil, [:]]])
        for broken in [#"{"a":1"#, #"{"a" 1}"#, #"["x",]"#, #""\ud83d""#, #"{"a":tru}"#, #"[1] 2"#, ""] {
            #expect((try? JSONParser.parse(broken)) == Optional<JSONValue>.none, "\(broken)")
        }
    }
}
