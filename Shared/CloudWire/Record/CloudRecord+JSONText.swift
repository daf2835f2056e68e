import MeowWire

/// Records written as JSON text directly, for the messages that hold them (see
/// `JSONTextWritable`): the same keys and values as their `Encodable` forms, which
/// `RecordTextTests` checks. Messages holding a share record's `shareInfo` go through
/// `JSONEncoder`: they are checked for one before anything is written, so a fallback leaves
/// nothing behind.
extension CloudRecord {
    package func writeJSON(to out: inout String) {
        var repeated = RepeatedText()
        writeJSON(to: &out, repeated: &repeated)
    }

    /// The texts of a zone ID and a date, kept while the records written one after another
    /// repeat them (a batch's records are in one zone and were written at one time).
    package struct RepeatedText {
        var zone: (id: ZoneID, text: String)?
        var date: (value: Double, text: String)?

        package init() {}

        mutating func zoneText(_ zoneID: ZoneID) -> String {
            if let zone, zone.id == zoneID { return zone.text }
            var text = ""
            zoneID.writeJSON(to: &text)
            zone = (zoneID, text)
            return text
        }

        mutating func dateText(_ date: Double) -> String {
            if let value = self.date, value.value == date { return value.text }
            var text = ""
            JSONWriter.append(.double(date), to: &text, integralDoubles: true)
            self.date = (date, text)
            return text
        }
    }

    /// `writeJSON(to:)` reusing the texts of the records written before it (`RepeatedText`).
    package func writeJSON(to out: inout String, repeated: inout RepeatedText) {
        var bytes = JSONBytes(capacity: 512)
        writeJSON(to: &bytes, repeated: &repeated)
        bytes.append(to: &out)
    }

    /// The record's text as bytes: a batch's records are written into one array, each piece an
    /// append to it (as `String` appends, the pieces were an eighth of a `records.modify`).
    package func writeJSON(to out: inout JSONBytes, repeated: inout RepeatedText) {
        out.append(#"{"recordName":"#); out.append(string: recordName)
        if tagOnly {
            if let recordChangeTag { out.append(#","recordChangeTag":"#); out.append(string: recordChangeTag) }
            out.append("}")
            return
        }
        out.append(#","zoneID":"#); out.append(raw: repeated.zoneText(zoneID))
        out.append(#","recordType":"#); out.append(string: recordType)
        if !omitsFields {
            out.append(#","fields":"#)
            if let fieldsText {
                out.append(raw: fieldsText)
            } else {
                var text = ""
                RecordFields.write(fields, keepingNulls: true, to: &text)
                out.append(raw: text)
            }
        }
        if let recordChangeTag { out.append(#","recordChangeTag":"#); out.append(string: recordChangeTag) }
        if let creationDate { out.append(#","creationDate":"#); out.append(raw: repeated.dateText(creationDate)) }
        if let modificationDate { out.append(#","modificationDate":"#); out.append(raw: repeated.dateText(modificationDate)) }
        if let creatorUserRecordName { out.append(#","creatorUserRecordName":"#); out.append(string: creatorUserRecordName) }
        if let lastModifiedUserRecordName {
            out.append(#","lastModifiedUserRecordName":"#); out.append(string: lastModifiedUserRecordName)
        }
        if let parent { out.append(#","parent":"#); parent.writeJSON(to: &out) }
        if let share { out.append(#","share":"#); share.writeJSON(to: &out) }
        out.append("}")
    }

    /// `[item, …]` with each item written by `write`.
    package static func writeArray<T>(_ items: [T], to out: inout JSONBytes, _ write: (T, inout JSONBytes) -> Void) {
        out.append("[")
        for (index, item) in items.enumerated() {
            if index > 0 { out.append(",") }
            write(item, &out)
        }
        out.append("]")
    }

    /// `{"<key>":[records],"deleted":[items]` (the object left open for the reply's other
    /// members), both replies' shared opening; false, with nothing written, when a record
    /// cannot be written as text.
    package static func writeRecords<D>(_ key: StaticString, _ records: [CloudRecord], deleted: [D], to out: inout JSONBytes,
                                        _ writeDeleted: (D, inout JSONBytes) -> Void) -> Bool {
        guard writable(records) else { return false }
        out.append("{\"")
        out.append(key)
        out.append("\":")
        var repeated = RepeatedText()
        writeArray(records, to: &out) { record, out in record.writeJSON(to: &out, repeated: &repeated) }
        out.append(#","deleted":"#)
        writeArray(deleted, to: &out, writeDeleted)
        return true
    }

    /// Whether these records can be written as text (no share record's `shareInfo`).
    package static func writable(_ records: [CloudRecord]) -> Bool { records.allSatisfy { $0.shareInfo == nil } }
}
