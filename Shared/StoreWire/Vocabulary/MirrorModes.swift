/// When the mirror talks to the cloud: only on `sync.send`/`sync.fetch`/`sync.now` (manual), or
/// also by itself after local saves and cloud pushes (automatic, with backoff).
public enum MirrorSyncMode: String, Sendable, Codable {
    case manual, automatic
}

/// How a field both sides changed is decided (docs/RULES.md, mirroring: the per-field merge).
public enum MirrorConflictPolicy: String, Sendable, Codable, CaseIterable {
    /// The later edit by per-field timestamp; equal timestamps: the greater device name wins.
    case latestEdit
    case serverWins
    case clientWins
}
