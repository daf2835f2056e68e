import MeowHistory
import MeowReport
import MeowWire

extension ScheduleRun {
    /// The run as one self-contained page, as `meowctl report --history` draws it: each actor's
    /// steps on its lane, the failed checks highlighted at the entries they name.
    public func page(title: String? = nil) -> String {
        var sources = ReportSources(title: title ?? "\(flow.name): the shrunk schedule")
        sources.history = ReportSources.jsonLines(historyJSONLines)
        sources.failures = failures.compactMap { try? JSONParser.parse(JSONTextEncoder().text($0)) }
        for actor in flow.actors { sources.deviceUsers[actor.device] = actor.user }
        return ReportPage.html(sources)
    }
}
