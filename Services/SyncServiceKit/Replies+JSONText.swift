import CloudWire
import MeowWire

/// Change pages and modify replies written as JSON text directly (see `JSONTextWritable`), their
/// records by `CloudRecord.writeRecords`: the same keys and values as their `Encodable` forms,
/// which `RecordTextTests` checks.
extension FetchZoneChangesResult: JSONTextWritable {
    public func writeJSON(to out: inout String) -> Bool {
        guard CloudRecord.writeRecords("changed", changed, deleted: deleted, to: &out, { item, out in
            out += #"{"recordName":"#; JSONWriter.appendString(item.recordName, to: &out)
            out += #","recordType":"#; JSONWriter.appendString(item.recordType, to: &out)
            out += "}"
        }) else { return false }
        out += #","token":"#; JSONWriter.appendString(token, to: &out)
        out += moreComing ? #","moreComing":true}"# : #","moreComing":false}"#
        return true
    }
}

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
