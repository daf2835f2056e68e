import FoundationEssentials
import MeowWire

/// records.modify: saves and deletes (CloudKit's CKModifyRecordsOperation), and its reply.
public enum SavePolicy: String, Codable, Sendable {
    /// Compare change tags (CloudKit's default).
    case ifServerRecordUnchanged
    /// No tag comparison. Under every policy the keys sent are written (a null value removes
    /// the key) and the keys not sent are kept.
    case changedKeys
    /// No tag comparison; the client sends all the keys it has (the server still keeps the
    /// ones it did not send).
    case allKeys
}

public struct DeleteItem: Codable, Sendable, Hashable {
    public var recordName: String
    public var zoneID: ZoneID
    public init(recordName: String, zoneID: ZoneID) {
        self.recordName = recordName
        self.zoneID = zoneID
    }
}

public struct ModifyParams: Codable, Sendable {
    public var database: DatabaseScope
    public var saves: [CloudRecord]?
    public var deletes: [DeleteItem]?
    public var savePolicy: SavePolicy?
    /// Per-zone atomic batches (default true); `_defaultZone` is never atomic.
    public var atomic: Bool?
    /// false: saved records come back without `fields` (metadata and tags only; smaller replies).
    public var returnFields: Bool?
    /// `tags`: saved records come back as their names and new change tags alone.
    public var reply: ModifyReply?
    /// Per save, its fields' `StoredFields.typeSignature` when the params were read from their
    /// bytes (the scan that read the fields made it); not part of the request's JSON.
    package var typeSignatures: [[UInt8]?]?
    public init(database: DatabaseScope, saves: [CloudRecord]? = nil, deletes: [DeleteItem]? = nil,
                savePolicy: SavePolicy? = nil, atomic: Bool? = nil, returnFields: Bool? = nil, reply: ModifyReply? = nil) {
        self.database = database
        self.saves = saves
        self.deletes = deletes
        self.savePolicy = savePolicy
        self.atomic = atomic
        self.returnFields = returnFields
        self.reply = reply
    }

    enum CodingKeys: String, CodingKey { case database, saves, deletes, savePolicy, atomic, returnFields, reply }

    /// As synthesized (same keys, same order, same errors), with `saves` taken from the request's
    /// tree when it has one: hundreds of records per request are the hot path.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        database = try c.decode(DatabaseScope.self, forKey: .database)
        saves = try CloudRecord.decodeArrayIfPresent(c, forKey: .saves, decoder)
        deletes = try c.decodeIfPresent([DeleteItem].self, forKey: .deletes)
        savePolicy = try c.decodeIfPresent(SavePolicy.self, forKey: .savePolicy)
        atomic = try c.decodeIfPresent(Bool.self, forKey: .atomic)
        returnFields = try c.decodeIfPresent(Bool.self, forKey: .returnFields)
        reply = try c.decodeIfPresent(ModifyReply.self, forKey: .reply)
    }
}

/// The request written as JSON text directly (see `JSONTextWritable`): a device's batch of 400
/// records goes out with each record's fields text as it was built (`CloudRecord.fieldsText`),
/// never parsed. The same keys and values as its `Encodable` form (`ModifyTextTests`).
extension ModifyParams: JSONTextWritable {
    public func writeJSON(to out: inout String) -> Bool {
        // (A share record's `shareInfo` goes through the encoder; nothing written before.)
        guard CloudRecord.writable(saves ?? []) else { return false }
        out += #"{"database":"#; JSONWriter.appendString(database.rawValue, to: &out)
        if let saves {
            out += #","saves":"#
            CloudRecord.writeArray(saves, to: &out) { record, out in record.writeJSON(to: &out) }
        }
        if let deletes {
            out += #","deletes":"#
            CloudRecord.writeArray(deletes, to: &out) { item, out in
                out += #"{"recordName":"#; JSONWriter.appendString(item.recordName, to: &out)
                out += #","zoneID":"#; item.zoneID.writeJSON(to: &out)
                out += "}"
            }
        }
        if let savePolicy { out += #","savePolicy":"#; JSONWriter.appendString(savePolicy.rawValue, to: &out) }
        if let atomic { out += atomic ? #","atomic":true"# : #","atomic":false"# }
        if let returnFields { out += returnFields ? #","returnFields":true"# : #","returnFields":false"# }
        if let reply { out += #","reply":"#; JSONWriter.appendString(reply.rawValue, to: &out) }
        out += "}"
        return true
    }
}

/// A sync engine's batch read from the request's bytes (`JSONScannable`): the database, records
/// as `CloudRecord(scanning:)` reads them (nothing but a name, zone, type, fields in stored form
/// and change tag, as a sync engine saves them), deletes, and the options; anything else (a save
/// policy, records of other shapes, malformed text) is left to the parser and `init(from:)`.
extension ModifyParams: JSONScannable {
    public init?(scanning scanner: inout JSONScanner) {
        var database: DatabaseScope?, saves: [CloudRecord]?, signatures: [[UInt8]?]?, deletes: [DeleteItem]?
        var atomic: Bool?, returnFields: Bool?, reply: ModifyReply?
        let read = scanner.object { key, scanner in
            switch key {
            case "database": database = scanner.string().flatMap(DatabaseScope.init(rawValue:)); return database != nil
            case "saves":
                var records: [CloudRecord] = [], found: [[UInt8]?] = []
                guard scanner.array({ scanner in
                    var signature: [UInt8]?
                    guard let record = CloudRecord(scanning: &scanner, fieldsEnd: { bytes, start in
                        guard let (end, fieldTypes) = StoredFields.endAndTypeSignature(bytes, from: start) else { return nil }
                        signature = fieldTypes
                        return end
                    }), record.fieldsAreStoredText, record.creationDate == nil, record.modificationDate == nil,
                          record.creatorUserRecordName == nil, record.lastModifiedUserRecordName == nil, record.parent == nil,
                          record.share == nil else { return false }
                    records.append(record)
                    found.append(signature)
                    return true
                }) else { return false }
                saves = records
                signatures = found
                return true
            case "deletes":
                var items: [DeleteItem] = []
                guard scanner.array({ scanner in
                    guard let item = DeleteItem(scanning: &scanner) else { return false }
                    items.append(item)
                    return true
                }) else { return false }
                deletes = items
                return true
            case "atomic": atomic = scanner.bool(); return atomic != nil
            case "returnFields": returnFields = scanner.bool(); return returnFields != nil
            case "reply": reply = scanner.string().flatMap(ModifyReply.init(rawValue:)); return reply != nil
            case "savePolicy": return false
            default: return scanner.skipValue()
            }
        }
        guard read, let database else { return nil }
        self.init(database: database, saves: saves, deletes: deletes, atomic: atomic)
        self.returnFields = returnFields
        self.reply = reply
        typeSignatures = signatures
    }
}

extension DeleteItem {
    package init?(scanning scanner: inout JSONScanner) {
        var name: String?, zone: ZoneID?
        let read = scanner.object { key, scanner in
            switch key {
            case "recordName": name = scanner.string(); return name != nil
            case "zoneID": zone = ZoneID(scanning: &scanner); return zone != nil
            default: return scanner.skipValue()
            }
        }
        guard read, let name, let zone else { return nil }
        self.init(recordName: name, zoneID: zone)
    }
}

/// What records.modify says of each saved record: the record (`records`, as CloudKit's
/// savedRecords), or only its name and new change tag (`tags`: all a sync engine that keeps
/// what it sent needs; a batch's reply was a third of the bytes a save moved).
public enum ModifyReply: String, Codable, Sendable {
    case records, tags
}

public struct ModifyResult: Codable, Sendable {
    public var saved: [CloudRecord]
    public var deleted: [RecordID]

    enum CodingKeys: String, CodingKey { case saved, deleted }

    /// Records as nested containers (see FieldCoding): replies of 400 records are the hot path.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        var records = c.nestedUnkeyedContainer(forKey: .saved)
        try CloudRecord.encode(saved, into: &records)
        try c.encode(deleted, forKey: .deleted)
    }

    public init(saved: [CloudRecord], deleted: [RecordID]) {
        self.saved = saved
        self.deleted = deleted
    }
}

/// The reply written as JSON text directly (see `JSONTextWritable`), its records by
/// `CloudRecord.writeRecords`: the same keys and values as its `Encodable` form, which
/// `RecordTextTests` checks.
extension ModifyResult: JSONTextWritable {
    public func writeJSON(to out: inout String) -> Bool {
        guard CloudRecord.writeRecords("saved", saved, deleted: deleted, to: &out, { item, out in
            out += #"{"recordName":"#; JSONWriter.appendString(item.recordName, to: &out)
            out += #","zoneID":"#; item.zoneID.writeJSON(to: &out)
            out += "}"
        }) else { return false }
        out += "}"
        return true
    }
}

/// What a records.modify reply (`ModifyResult`, either form of `ModifyReply`) says was done,
/// as a client that keeps what it sent reads it: saved records' new change tags by name, and
/// the names deleted (read for the members a verdict needs rather than decoded whole: a batch
/// has hundreds). Also what a partialFailure's details say of the items that were done.
public struct ModifyVerdicts: Sendable {
    public var saved: [String: String?] = [:]
    public var deleted: Set<String> = []

    /// Adds another batch's verdicts (batches in flight hold different records).
    public mutating func merge(_ other: ModifyVerdicts) {
        saved.merge(other.saved) { _, later in later }
        deleted.formUnion(other.deleted)
    }

    public init(saved: JSONValue?, deleted: JSONValue?) {
        for record in saved?.arrayValue ?? [] {
            guard let name = record["recordName"]?.stringValue else { continue }
            self.saved[name] = .some(record["recordChangeTag"]?.stringValue)
        }
        self.deleted = Set((deleted?.arrayValue ?? []).compactMap { $0["recordName"]?.stringValue })
    }

    /// From a success reply's bytes (`WireClient.ResultReader`), as `init(saved:deleted:)`
    /// reads its tree; nil for anything but the service's reply of names and tags.
    public init?(bytes: UnsafeBufferPointer<UInt8>) {
        var scanner = JSONScanner(bytes)
        var saved: [String: String?] = [:], deleted: Set<String> = []
        let read = scanner.object { key, scanner in
            guard key == "saved" || key == "deleted" else { return scanner.skipValue() }
            if key == "saved" { saved = [:] } else { deleted = [] }
            return scanner.array { scanner in
                var name: String?, tag: String?
                let item = scanner.object { member, scanner in
                    switch member {
                    case "recordName": name = scanner.string(); return name != nil
                    case "recordChangeTag" where key == "saved":
                        guard let value = scanner.optionalString() else { return false }
                        tag = value
                        return true
                    default: return scanner.skipValue()
                    }
                }
                guard item else { return false }
                // (An item without a name says nothing, as in the tree.)
                if let name { if key == "saved" { saved[name] = .some(tag) } else { deleted.insert(name) } }
                return true
            }
        }
        guard read, scanner.atEnd else { return nil }
        self.saved = saved
        self.deleted = deleted
    }
}
