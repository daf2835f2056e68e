import Foundation
import MeowWire

/// `meowctl watch`'s line for people: when, which service, who, what and the outcome of one
/// event, from the fields events share (who: `author`, `user`; outcome: `code`, `error`,
/// `succeeded`, `reason`) and a short summary per event name.
enum WatchLine {
    static func text(event: String, data: JSONValue, service: String, time: Date) -> String {
        let clock = time.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true).time(includingFractionalSeconds: true))
        let who = (data["author"] ?? data["user"] ?? data["actor"])?.stringValue ?? "–"
        return [clock, service, who, what(event, data), outcome(data)].joined(separator: "  ")
    }

    static func what(_ event: String, _ data: JSONValue) -> String {
        let store = data["store"]?.stringValue.map { " in \($0)" } ?? ""
        switch event {
        case "remoteChange":
            let count = data["changedObjectIDs"]?.arrayValue?.count ?? 0
            let context = data["contextName"]?.stringValue.map { " (\($0))" } ?? ""
            return "remoteChange: \(count) object\(count == 1 ? "" : "s") changed\(store)\(context)"
        case "changeReverted":
            return "changeReverted: \(data["action"].cell) of \(data["entity"].cell) \(data["uuid"].cell)\(store)"
        case "importRefused":
            return "importRefused: \(data["entity"].cell) \(data["recordName"].cell)\(store)"
        case "eventChanged":
            let phase = data["endDate"].map { $0.isNull ? "started" : "ended" } ?? ""
            return "eventChanged: \(data["type"].cell) \(phase)\(store)"
        case "progress":
            let total = data["total"]?.intValue.map { "/\($0)" } ?? ""
            return "progress: \(data["op"].cell) \(data["phase"].cell) \(data["done"].cell)\(total)"
        default:
            // Other events: their name and their few scalar fields, so nothing is hidden.
            let scalars = (data.objectValue ?? [:]).sorted { $0.key < $1.key }.compactMap { key, value -> String? in
                switch value {
                case .string, .int, .double, .bool: return "\(key)=\(value.cell)"
                default: return nil
                }
            }
            return ([event + ":"] + scalars.prefix(6)).joined(separator: " ")
        }
    }

    static func outcome(_ data: JSONValue) -> String {
        if let code = (data["error"]?["code"] ?? data["code"])?.stringValue { return "→ \(code)" }
        if let succeeded = data["succeeded"]?.boolValue {
            return data["endDate"].map { $0.isNull } == true ? "→ running" : (succeeded ? "→ ok" : "→ failed")
        }
        if let reason = data["reason"]?.stringValue { return "→ \(reason)" }
        return "→ ok"
    }
}
