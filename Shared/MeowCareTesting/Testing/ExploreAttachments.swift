import MeowExplore
import MeowWire
import Testing

extension ExploreReport {
    /// Expects every schedule to have passed. When one failed, records the report (seed, check,
    /// shrunk schedule, how to replay) as an issue of the running test and attaches the shrunk
    /// run: `shrunk-history.jsonl`, `shrunk.replay.json` (for `meowctl explore --replay-choices`) and `report.html`, the page
    /// `meowctl report --history` draws. Answers whether every schedule passed.
    @discardableResult
    public func expectPassed(sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        guard let failure else { return true }
        Issue.record(Comment(rawValue: description), sourceLocation: sourceLocation)
        for artifact in failure.artifacts {
            Attachment.record(artifact.text, named: artifact.name, sourceLocation: sourceLocation)
        }
        return false
    }
}

extension ExploreFailure {
    /// What a failing exploration keeps of its shrunk run, as (file name, text) pairs.
    var artifacts: [(name: String, text: String)] {
        [(name: "shrunk-history.jsonl", text: shrunk.historyJSONLines + "\n"),
         (name: "shrunk.replay.json", text: (try? ReplayFile(self).text()) ?? ""),
         (name: "report.html", text: shrunk.page())]
    }
}
