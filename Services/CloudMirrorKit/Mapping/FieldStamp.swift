import CloudWire
import FoundationEssentials
import MeowWire
import ServiceRuntime
import SQLiteKit
import StoreServiceKit

/// When and where a field was last edited.
struct FieldStamp: Codable, Sendable, Hashable {
    var time: Double
    var device: String

    /// The `MC_fieldModified` text: the fields grouped by stamp, groups by time then device,
    /// `[{"device":"A","fields":["CD_id","CD_note"],"time":1780000000.5}]`. A record's fields
    /// mostly share one stamp (the insert, or one edit), so grouping by stamp keeps the text
    /// small beside the record's own fields (docs/BENCHMARKS.md has the sizes).
    static func encode(_ times: [String: FieldStamp]) -> String {
        var groups: [FieldStamp: [String]] = [:]
        for (name, stamp) in times { groups[stamp, default: []].append(name) }
        var text = "["
        for (index, stamp) in groups.keys.sorted(by: { $0.time != $1.time ? $0.time < $1.time : $0.device < $1.device }).enumerated() {
            if index > 0 { text += "," }
            text += "{\"device\":"
            JSONWriter.appendString(stamp.device, to: &text)
            text += ",\"fields\":["
            for (position, name) in groups[stamp]!.sorted().enumerated() {
                if position > 0 { text += "," }
                JSONWriter.appendString(name, to: &text)
            }
            text += "],\"time\":"
            JSONWriter.append(.double(stamp.time), to: &text, integralDoubles: true)
            text += "}"
        }
        return text + "]"
    }

    /// The text of `fields` (sorted) all stamped `stamp`: one group, as `encode` writes it.
    static func encode(_ fields: [String], _ stamp: FieldStamp) -> String {
        var text = "[{\"device\":"
        JSONWriter.appendString(stamp.device, to: &text)
        text += ",\"fields\":["
        for (position, name) in fields.enumerated() {
            if position > 0 { text += "," }
            JSONWriter.appendString(name, to: &text)
        }
        text += "],\"time\":"
        JSONWriter.append(.double(stamp.time), to: &text, integralDoubles: true)
        return text + "}]"
    }

    /// The stamps in such a text, or in the earlier stamp-per-field object
    /// (`{"CD_note":{"device":"A","time":1780000000.5}}`, still in stores and records written
    /// before); entries that are not stamps are skipped.
    static func decode(_ text: String?) -> [String: FieldStamp] {
        guard let text, let parsed = try? JSONParser.parse(text) else { return [:] }
        var times: [String: FieldStamp] = [:]
        switch parsed {
        case let .array(groups):
            for group in groups {
                guard let time = group["time"]?.doubleValue, let device = group["device"]?.stringValue,
                      let names = group["fields"]?.arrayValue else { continue }
                for name in names { if let name = name.stringValue { times[name] = FieldStamp(time: time, device: device) } }
            }
        case let .object(members):
            for (name, value) in members {
                guard let time = value["time"]?.doubleValue, let device = value["device"]?.stringValue else { continue }
                times[name] = FieldStamp(time: time, device: device)
            }
        default: break
        }
        return times
    }

    /// Whether a stamps text holds no stamps (either form).
    static func isEmptyText(_ text: String) -> Bool { text == "[]" || text == "{}" }

    /// Whether this edit is later than `other` (equal times: the greater device name).
    func isLater(than other: FieldStamp) -> Bool {
        time != other.time ? time > other.time : device > other.device
    }
}
