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
        out += #"{"recordName":"#; JSONWriter.appendString(recordName, to: &out)
        if tagOnly {
            if let recordChangeTag { out += #","recordChangeTag":"#; JSONWriter.appendString(recordChangeTag, to: &out) }
            out += "}"
            return
        }
        out += #","zoneID":"#; out += repeated.zoneText(zoneID)
        out += #","recordType":"#; JSONWriter.appendString(recordType, to: &out)
        if !omitsFields {
            out += #","fields":"#
            if let fieldsText { out += fieldsText } else { RecordFields.write(fields, keepingNulls: true, to: &out) }
        }
        if let recordChangeTag { out += #","recordChangeTag":"#; JSONWriter.appendString(recordChangeTag, to: &out) }
        if let creationDate { out += #","creationDate":"#; out += repeated.dateText(creationDate) }
        if let modificationDate { out += #","modificationDate":"#; out += repeated.dateText(modificationDate) }
        if let creatorUserRecordName { out += #","creatorUserRecordName":"#; JSONWriter.appendString(creatorUserRecordName, to: &out) }
        if let lastModifiedUserRecordName {
            out += #","lastModifiedUserRecordName":"#; JSONWriter.appendString(lastModifiedUserRecordName, to: &out)
        }
        if let parent { out += #","parent":"#; parent.writeJSON(to: &out) }
        if let share { out += #","share":"#; share.writeJSON(to: &out) }
        out += "}"
    }

    /// `[item, …]` with each item written by `write`.
    package static func writeArray<T>(_ items: [T], to out: inout String, _ write: (T, inout String) -> Void) {
        out += "["
        for (index, item) in items.enumerated() {
            if index > 0 { out += "," }
            write(item, &out)
        }
        out += "]"
    }

    /// `{"<key>":[records],"deleted":[items]` (the object left open for the reply's other
    /// members), both replies' shared opening; false, with nothing written, when a record
    /// cannot be written as text.
    package static func writeRecords<D>(_ key: String, _ records: [CloudRecord], deleted: [D], to out: inout String,
                                _ writeDeleted: (D, inout String) -> Void) -> Bool {
        guard writable(records) else { return false }
        out += "{"
        JSONWriter.appendString(key, to: &out)
        out += ":"
        var repeated = RepeatedText()
        writeArray(records, to: &out) { record, out in record.writeJSON(to: &out, repeated: &repeated) }
        out += #","deleted":"#
        writeArray(deleted, to: &out, writeDeleted)
        return true
    }

    /// Whether these records can be written as text (no share record's `shareInfo`).
    package static func writable(_ records: [CloudRecord]) -> Bool { records.allSatisfy { $0.shareInfo == nil } }
}
