import MeowWire

/// Record pages and modify replies written as JSON text directly (see `JSONTextWritable`):
/// the same keys and values as their `Encodable` forms, which `RecordTextTests` checks. Replies
/// holding a share record's `shareInfo` go through `JSONEncoder`.
extension CloudRecord {
    func writeJSON(to out: inout String) -> Bool {
        guard shareInfo == nil else { return false }
        out += #"{"recordName":"#; JSONWriter.appendString(recordName, to: &out)
        out += #","zoneID":"#; zoneID.writeJSON(to: &out)
        out += #","recordType":"#; JSONWriter.appendString(recordType, to: &out)
        if !omitsFields {
            out += #","fields":"#
            JSONWriter.append(.object(fields), to: &out, integralDoubles: true)
        }
        if let recordChangeTag { out += #","recordChangeTag":"#; JSONWriter.appendString(recordChangeTag, to: &out) }
        if let creationDate { out += #","creationDate":"#; JSONWriter.append(.double(creationDate), to: &out, integralDoubles: true) }
        if let modificationDate { out += #","modificationDate":"#; JSONWriter.append(.double(modificationDate), to: &out, integralDoubles: true) }
        if let creatorUserRecordName { out += #","creatorUserRecordName":"#; JSONWriter.appendString(creatorUserRecordName, to: &out) }
        if let lastModifiedUserRecordName {
            out += #","lastModifiedUserRecordName":"#; JSONWriter.appendString(lastModifiedUserRecordName, to: &out)
        }
        if let parent { out += #","parent":"#; parent.writeJSON(to: &out) }
        if let share { out += #","share":"#; share.writeJSON(to: &out) }
        out += "}"
        return true
    }

    /// `[record, …]`; false (and `out` unchanged) when one of them needs JSONEncoder.
    static func writeJSON(_ records: [CloudRecord], to out: inout String) -> Bool {
        let start = out.endIndex
        out += "["
        for (index, record) in records.enumerated() {
            if index > 0 { out += "," }
            guard record.writeJSON(to: &out) else {
                out.removeSubrange(start...)
                return false
            }
        }
        out += "]"
        return true
    }
}

extension ZoneID {
    func writeJSON(to out: inout String) {
        out += #"{"zoneName":"#; JSONWriter.appendString(zoneName, to: &out)
        out += #","ownerName":"#; JSONWriter.appendString(ownerName, to: &out)
        out += "}"
    }
}

extension RecordReference {
    func writeJSON(to out: inout String) {
        out += #"{"recordName":"#; JSONWriter.appendString(recordName, to: &out)
        if let action { out += #","action":"#; JSONWriter.appendString(action, to: &out) }
        out += "}"
    }
}

extension FetchZoneChangesResult: JSONTextWritable {
    public func writeJSON(to out: inout String) -> Bool {
        let start = out.endIndex
        out += #"{"changed":"#
        guard CloudRecord.writeJSON(changed, to: &out) else {
            out.removeSubrange(start...)
            return false
        }
        out += #","deleted":["#
        for (index, item) in deleted.enumerated() {
            if index > 0 { out += "," }
            out += #"{"recordName":"#; JSONWriter.appendString(item.recordName, to: &out)
            out += #","recordType":"#; JSONWriter.appendString(item.recordType, to: &out)
            out += "}"
        }
        out += #"],"token":"#; JSONWriter.appendString(token, to: &out)
        out += moreComing ? #","moreComing":true}"# : #","moreComing":false}"#
        return true
    }
}

extension ModifyResult: JSONTextWritable {
    public func writeJSON(to out: inout String) -> Bool {
        let start = out.endIndex
        out += #"{"saved":"#
        guard CloudRecord.writeJSON(saved, to: &out) else {
            out.removeSubrange(start...)
            return false
        }
        out += #","deleted":["#
        for (index, item) in deleted.enumerated() {
            if index > 0 { out += "," }
            out += #"{"recordName":"#; JSONWriter.appendString(item.recordName, to: &out)
            out += #","zoneID":"#; item.zoneID.writeJSON(to: &out)
            out += "}"
        }
        out += "]}"
        return true
    }
}
