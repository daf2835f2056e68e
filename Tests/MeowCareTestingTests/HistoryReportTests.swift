import Foundation
import MeowCareTesting
import MeowHistory
import MeowWire
import Testing
import TestSupport

/// `meowctl report --history FILE --failures FILE`: an explored run's steps on their actors'
/// lanes, with each failed check highlighted at the steps it names.
@Suite(.enabled(if: HeadlessChromium.found != nil || HeadlessChromium.required, HeadlessChromium.skipMessage))
struct HistoryReportTests {
    @Test func aShrunkScheduleShowsItsStepsAndTheFailedCheckAtThem() throws {
        let browser = try HeadlessChromium.require()
        let history = [
            HistoryEntry(run: 1, index: 0, step: 0, actor: "A", user: "olivia", op: "insert", invoke: 0, complete: 1, outcome: .ok(.object([:]))),
            HistoryEntry(run: 1, index: 1, actor: "A", user: "olivia", op: "send", invoke: 1, complete: 2, outcome: .unknown(reason: "killed")),
            HistoryEntry(run: 1, index: 2, step: 1, actor: "P", user: "pablo", op: "update", invoke: 2, complete: 3,
                         outcome: .fail(code: "permissionFailure", message: "read-only")),
        ]
        let failure = CheckFailure(check: "durability", explanation: "the acknowledged insert is gone", entries: [1])
        let directory = TemporaryDirectory(prefix: "hist")
        let encoder = JSONEncoder()
        try history.map { String(decoding: try encoder.encode($0), as: UTF8.self) }.joined(separator: "\n")
            .write(toFile: directory.file("history.jsonl"), atomically: true, encoding: .utf8)
        try String(decoding: try encoder.encode([failure]), as: UTF8.self).write(toFile: directory.file("failures.json"), atomically: true, encoding: .utf8)
        let page = directory.file("report.html")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try ExecutableLocator.locate().directory + "/meowctl")
        process.arguments = ["report", "--history", directory.file("history.jsonl"), "--failures", directory.file("failures.json"), "-o", page]
        try process.run()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0)

        let dom = try browser.visibleDOM(page)
        #expect(dom.contains(#"data-lane="A""#) && dom.contains(#"data-lane="P""#))
        #expect(dom.contains("Failed: durability") && dom.contains("the acknowledged insert is gone"))
        #expect(dom.contains(#"<div class="row history failed""#), "the step the check names is not highlighted")
        #expect(dom.contains(">step 1<"), "logical times show as steps")
        #expect(dom.contains("update  by pablo  → permissionFailure"))
    }
}
