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

    /// Through the one reader (`init(reading:)`).
    public init(from decoder: any Decoder) throws { try self.init(fromReadable: decoder) }
}

extension DeleteItem: JSONReadable {
    /// Other members are skipped.
    public init(reading reader: inout MessageReader) throws(MessageReadError) {
        var name: String?, zone: ZoneID?
        try reader.object { (key, reader) throws(MessageReadError) in
            switch key {
            case "recordName": name = try reader.string()
            case "zoneID": zone = try ZoneID(reading: &reader)
            default: try reader.skip()
            }
        }
        guard let name else { throw reader.missing("recordName") }
        guard let zone else { throw reader.missing("zoneID") }
        self.init(recordName: name, zoneID: zone)
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

    /// Through the one reader (`init(reading:)`).
    public init(from decoder: any Decoder) throws { try self.init(fromReadable: decoder) }
}

/// The request written as JSON text directly (see `JSONTextWritable`): a device's batch of 400
/// records goes out with each record's fields text as it was built (`CloudRecord.fieldsText`),
/// never parsed. The same keys and values as its `Encodable` form (`ModifyTextTests`).
extension ModifyParams: JSONTextWritable {
    public func writeJSON(to out: inout String) -> Bool {
        // (A share record's `shareInfo` goes through the encoder; nothing written before.)
        guard CloudRecord.writable(saves ?? []) else { return false }
        var bytes = JSONBytes(capacity: (saves?.count ?? 0) * 512 + 256)
        bytes.append(#"{"database":"#); bytes.append(string: database.rawValue)
        if let saves {
            bytes.append(#","saves":"#)
            var repeated = CloudRecord.RepeatedText()
            CloudRecord.writeArray(saves, to: &bytes) { record, out in record.writeJSON(to: &out, repeated: &repeated) }
        }
        if let deletes {
            bytes.append(#","deletes":"#)
            CloudRecord.writeArray(deletes, to: &bytes) { item, out in RecordID(recordName: item.recordName, zoneID: item.zoneID).writeJSON(to: &out) }
        }
        if let savePolicy { bytes.append(#","savePolicy":"#); bytes.append(string: savePolicy.rawValue) }
        if let atomic { bytes.append(atomic ? #","atomic":true"# : #","atomic":false"#) }
        if let returnFields { bytes.append(returnFields ? #","returnFields":true"# : #","returnFields":false"#) }
        if let reply { bytes.append(#","reply":"#); bytes.append(string: reply.rawValue) }
        bytes.append("}")
        bytes.append(to: &out)
        return true
    }
}

/// The request's one reader (the sync-service reads every records.modify with it, from the
/// request's bytes). Saves' fields in stored form, in any member order, stay text
/// (`CloudRecord(reading:)`, `StoredFields.sortedStoredForm`), and the scan that finds their end
/// notes their types (`typeSignatures`). Other members are skipped.
extension ModifyParams: JSONReadable {
    public init(reading reader: inout MessageReader) throws(MessageReadError) {
        var database: DatabaseScope?, saves: [CloudRecord]?, signatures: [[UInt8]?]?, deletes: [DeleteItem]?
        var savePolicy: SavePolicy?, atomic: Bool?, returnFields: Bool?, reply: ModifyReply?
        try reader.object { (key, reader) throws(MessageReadError) in
            switch key {
            case "database": database = try reader.rawValue(DatabaseScope.self)
            case "saves":
                var found: [[UInt8]?] = []
                saves = try reader.optionalArray { (reader) throws(MessageReadError) in
                    var signature: [UInt8]?, sorted: String?
                    var record = try CloudRecord(reading: &reader, storedFieldsEnd: { bytes, start in
                        guard let scan = StoredFields.sortedStoredForm(bytes, from: start) else { return nil }
                        (signature, sorted) = (scan.signature, scan.sorted)
                        return scan.end
                    })
                    // Members sent in another order are kept as their sorted, stored-form text.
                    if let sorted { record.fieldsText = sorted }
                    found.append(signature)
                    return record
                }
                signatures = saves == nil ? nil : found
            case "deletes": deletes = try reader.optionalArray { (reader) throws(MessageReadError) in try DeleteItem(reading: &reader) }
            case "savePolicy": savePolicy = try reader.optionalRawValue(SavePolicy.self)
            case "atomic": atomic = try reader.optionalBool()
            case "returnFields": returnFields = try reader.optionalBool()
            case "reply": reply = try reader.optionalRawValue(ModifyReply.self)
            default: try reader.skip()
            }
        }
        guard let database else { throw reader.missing("database") }
        self.init(database: database, saves: saves, deletes: deletes, savePolicy: savePolicy, atomic: atomic,
                  returnFields: returnFields, reply: reply)
        typeSignatures = signatures
    }
}

/// What records.modify says of each saved record: the record (`records`, as CloudKit's
/// savedRecords), or only its name and new change tag (`tags`: all a sync engine that keeps
/// what it sent needs, and a reply need not carry the records back).
public enum ModifyReply: String, Codable, Sendable {
    case records, tags
}

public struct ModifyResult: Codable, Sendable {
    public var saved: [CloudRecord] { didSet { text = nil } }
    public var deleted: [RecordID] { didSet { text = nil } }
    /// The reply's JSON text when it was written ahead (`written()`), on a thread beside the
    /// request's commit; dropped when the records change. Not part of the reply's JSON.
    package private(set) var text: String? = nil

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
        if let text {
            out += text
            return true
        }
        var bytes = JSONBytes(capacity: saved.count * 384 + deleted.count * 128 + 64)
        guard CloudRecord.writeRecords("saved", saved, deleted: deleted, to: &bytes, { item, out in item.writeJSON(to: &out) }) else { return false }
        bytes.append("}")
        bytes.append(to: &out)
        return true
    }

    /// This result with its text written now (`writeJSON`), for a reply written ahead of being
    /// sent; unchanged when it is not written as text.
    package func written() -> ModifyResult {
        var text = ""
        guard writeJSON(to: &text) else { return self }
        var result = self
        result.text = text
        return result
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

    public init() {}

    /// From an error's details (partialFailure's `saved` and `deleted`), by the reply's reader;
    /// details it cannot read say nothing was done.
    public init(saved: JSONValue?, deleted: JSONValue?) {
        var reply: [String: JSONValue] = [:]
        if let saved { reply["saved"] = saved }
        if let deleted { reply["deleted"] = deleted }
        self = (try? ModifyVerdicts(tree: .object(reply))) ?? ModifyVerdicts()
    }
}

/// The reply's one reader, for a client that keeps what it sent: only the members a verdict
/// needs are read (a batch has hundreds); an item without a name says nothing.
extension ModifyVerdicts: JSONReadable {
    public init(reading reader: inout MessageReader) throws(MessageReadError) {
        var saved: [String: String?] = [:], deleted: Set<String> = []
        try reader.object { (key, reader) throws(MessageReadError) in
            guard key == "saved" || key == "deleted" else { return try reader.skip() }
            if key == "saved" { saved = [:] } else { deleted = [] }
            try reader.array { (reader) throws(MessageReadError) in
                var name: String?, tag: String?
                try reader.object { (member, reader) throws(MessageReadError) in
                    switch member {
                    case "recordName": name = try reader.string()
                    case "recordChangeTag" where key == "saved": tag = try reader.optionalString()
                    default: try reader.skip()
                    }
                }
                if let name { if key == "saved" { saved[name] = .some(tag) } else { deleted.insert(name) } }
            }
        }
        self.saved = saved
        self.deleted = deleted
    }
}
