/// How much a save result lists: `objects` (default; one entry per new object), `grouped` (new
/// objects grouped by store and reason), `summary` (counts and transactions only: for bulk
/// imports, whose clients would otherwise parse thousands of IDs they do not need).
public enum SaveReport: String, Sendable, Codable, Hashable, CaseIterable {
    case objects, grouped, summary
}
