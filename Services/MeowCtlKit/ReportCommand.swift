import Foundation
import MeowReport
import MeowWire

/// `meowctl report`: what happened across the processes as one HTML page (Shared/MeowReport).
enum ReportCommand {
    static let help = """
    meowctl report — what happened across the processes, as one self-contained HTML page

    Usage:
      meowctl report --dir DIR -o FILE [--title T] [--failures FILE]
      meowctl report --request-log FILE [--frames FILE] [--log NAME=FILE ...] -o FILE [--failures FILE]
      meowctl report --history FILE [--failures FILE] [--request-log FILE] -o FILE

    --dir reads a deployment's directory (logs/requests.jsonl, logs/NAME.log), a test cluster's
    (cloud.log, device-N.log) or a failed test's saved artifacts (cloud-requests.jsonl,
    frames.txt, NAME.log). --request-log is the sync-service's request log (--request-log FILE,
    or `meowctl log --json`); --frames a frame trace (frames.txt); --log NAME=FILE a service's log
    on lane NAME. --history is an explored run's history (JSON lines of HistoryEntry) and
    --failures its failed checks (JSON lines or one array of {check, explanation, entries}).
    The page needs no server, network or other file: open it from disk in any browser.
    Exit codes: 0 written, 64 usage (a file that cannot be read or written).
    """

    static func run(_ arguments: [String]) async throws(CommandError) {
        // `-o FILE` is the usual spelling for an output file; --output FILE works too.
        let normalized = arguments.map { $0 == "-o" ? "--output" : $0 }
        let args = try Arguments(normalized, flags: [])
        try args.check(known: ["dir", "request-log", "frames", "log", "history", "failures", "output", "title"], command: "report")
        let output = try args.required("output", for: "report")
        guard args.value("dir") != nil || args.value("request-log") != nil || args.value("history") != nil || args.value("frames") != nil else {
            throw .usage("meowctl report needs --dir DIR, --request-log FILE, --frames FILE or --history FILE.")
        }
        do {
            let sources = try sources(args)
            let html = ReportPage.html(sources)
            do { try html.write(toFile: output, atomically: true, encoding: .utf8) } catch {
                throw ReportError("Cannot write \(output): \(error.localizedDescription)")
            }
            MeowCtl.printError("meowctl: wrote \(output) (\(sources.requests.count) requests, \(sources.history.count) history steps, "
                + "\(sources.logs.count) service logs, \(sources.frames.count) frames)")
        } catch let error as ReportError {
            throw .usage(error.description)
        } catch {
            throw .usage("\(error)")
        }
    }

    static func sources(_ args: Arguments) throws -> ReportSources {
        var sources = try args.value("dir").map { try ReportSources.load(directory: $0, title: args.value("title")) }
            ?? ReportSources(title: args.value("title") ?? args.value("history") ?? args.value("request-log") ?? "MeowCare report")
        if let path = args.value("request-log") {
            sources.requests += ReportSources.jsonLines(try read(path)).filter { $0["seq"] != nil }
        }
        if let path = args.value("frames") { sources.frames += ReportSources.frameLines(try read(path)) }
        for pair in args.all("log") {
            guard let equals = pair.firstIndex(of: "=") else { throw ReportError("--log needs NAME=FILE, got '\(pair)'.") }
            sources.add(log: ReportSources.jsonLines(try read(String(pair[pair.index(after: equals)...]))), file: String(pair[..<equals]))
        }
        if let path = args.value("history") { sources.history = ReportSources.jsonLines(try read(path)) }
        if let path = args.value("failures") { sources.failures = ReportSources.failures(try read(path)) }
        return sources
    }

    static func read(_ path: String) throws -> String {
        do { return try String(contentsOfFile: path, encoding: .utf8) } catch {
            throw ReportError("Cannot read \(path): \(error.localizedDescription)")
        }
    }
}
