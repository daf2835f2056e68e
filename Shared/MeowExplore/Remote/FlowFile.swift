import Foundation
import MeowWire

/// A flow file: the JSON form of `Flow` (its actors, steps, shares, model, orphan repair) and
/// the names of the team's own invariants, which a steps socket judges (`RemoteSteps`).
///
/// ```json
/// {"name": "two devices", "actors": [{"device": "A", "user": "olivia", "steps": [{"op": "insert", "object": "s1", "entity": "CareSession"}]}],
///  "invariants": ["titleIsSet"]}
/// ```
public struct FlowFile: Sendable, Decodable {
    public var flow: Flow
    /// The team's own invariants, by name.
    public var invariants: [String]

    public init(flow: Flow, invariants: [String] = []) {
        self.flow = flow
        self.invariants = invariants
    }

    private enum CodingKeys: String, CodingKey { case invariants }

    public init(from decoder: any Decoder) throws {
        flow = try Flow(from: decoder)
        invariants = try decoder.container(keyedBy: CodingKeys.self).decodeIfPresent([String].self, forKey: .invariants) ?? []
    }

    /// Reads and decodes the file, with a message that names the file and what is wrong.
    public static func read(_ path: String) throws(MeowCareError) -> FlowFile {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw MeowCareError(.invalidArguments, "Cannot read the flow file \(path).", service: "explorer")
        }
        return try decode(data, from: path)
    }

    public static func decode(_ data: Data, from source: String = "the flow") throws(MeowCareError) -> FlowFile {
        do {
            let file = try JSONValueDecoder().decode(FlowFile.self, from: [UInt8](data))
            guard !file.flow.actors.isEmpty else {
                throw MeowCareError(.invalidArguments, "\(source) has no actors: a flow needs at least one {\"device\", \"user\", \"steps\"}.", service: "explorer")
            }
            return file
        } catch let error as MeowCareError {
            throw error
        } catch let DecodingError.dataCorrupted(context) {
            throw MeowCareError(.invalidArguments, "\(source) is not a flow: \(Self.path(context.codingPath))\(context.debugDescription)", service: "explorer")
        } catch let DecodingError.keyNotFound(key, context) {
            throw MeowCareError(.invalidArguments, "\(source) is not a flow: \(Self.path(context.codingPath))\"\(key.stringValue)\" is missing.", service: "explorer")
        } catch let DecodingError.typeMismatch(_, context), let DecodingError.valueNotFound(_, context) {
            throw MeowCareError(.invalidArguments, "\(source) is not a flow: \(Self.path(context.codingPath))\(context.debugDescription)", service: "explorer")
        } catch {
            throw MeowCareError(.invalidArguments, "\(source) is not a flow: \(error)", service: "explorer")
        }
    }

    private static func path(_ codingPath: [any CodingKey]) -> String {
        codingPath.isEmpty ? "" : "at " + codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined() + ": "
    }
}
