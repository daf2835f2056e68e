import Foundation
import MeowCareCluster
import MeowReport
import MeowWire
import Testing

/// What a failing test keeps of its cluster: each service's log, the cloud's request log, the
/// frame trace of every connection the fixture opened, and all of them as one page
/// (`report.html`, as `meowctl report` makes it) with the test's failures highlighted.
enum FailureArtifacts {
    /// The artifacts as (file name, text) pairs. `failures`: what the test recorded as its
    /// issues, shown on the page at the requests and records they name.
    static func collect(_ cluster: MeowCluster, failures: [String] = []) async -> [(name: String, text: String)] {
        let logs = cluster.logs()
        var artifacts = logs.map { (name: "\($0.service).log", text: $0.text) }
        var requests: [JSONValue] = []
        if !cluster.isStopped {
            // Asked before the stop: the log lives in the running cloud.
            requests = await requestLog(cluster)
            let text = requests.isEmpty ? "(the cloud did not answer admin.requestLog)"
                : requests.compactMap { try? JSONTextEncoder(options: .sortedKeys).text($0) }.joined(separator: "\n")
            artifacts.append((name: "cloud-requests.jsonl", text: text))
        }
        artifacts.append((name: "frames.txt", text: cluster.trace.text()))
        artifacts.append((name: "report.html", text: report(cluster, logs: logs, requests: requests, failures: failures)))
        // A credential can reach any of them (a message quoting a reply, a test's own log line).
        return artifacts.map { (name: $0.name, text: cluster.trace.redacting($0.text)) }
    }

    /// Every entry the cloud's request log holds (it answers a page at a time).
    static func requestLog(_ cluster: MeowCluster) async -> [JSONValue] {
        var entries: [JSONValue] = []
        while let page = try? await cluster.cloud.admin.requestLog(after: entries.last?["seq"]?.intValue ?? 0, limit: 1000) {
            entries += page
            if page.count < 1000 { break }
        }
        return entries
    }

    static func report(_ cluster: MeowCluster, logs: [(service: String, text: String)], requests: [JSONValue], failures: [String]) -> String {
        var sources = ReportSources(title: Test.current?.name ?? "MeowCareTesting cluster")
        sources.requests = requests
        sources.frames = cluster.trace.all.map {
            ["time": .double($0.time), "connection": .string($0.connection), "direction": .string($0.direction), "json": .string($0.json)]
        }
        sources.framesStart = cluster.trace.startedAt
        for log in logs { sources.add(log: ReportSources.jsonLines(log.text), file: log.service) }
        for device in cluster.devices { sources.deviceUsers[device.name] = device.user }
        sources.failures = failures.map { ["check": "test", "explanation": .string($0)] }
        return ReportPage.html(sources)
    }

    /// Attaches them to the running Swift Testing test.
    static func attach(_ cluster: MeowCluster, failures: [String] = []) async {
        for artifact in await collect(cluster, failures: failures) {
            Attachment.record(artifact.text, named: artifact.name)
        }
    }

    /// Writes them to a new directory under /tmp (XCTest, which has no attachments here);
    /// returns its path.
    static func save(_ cluster: MeowCluster) async -> String? {
        var template = Array("/tmp/meowcare-failure.XXXXXX".utf8CString)
        guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else { return nil }
        let directory = String(cString: template.withUnsafeBufferPointer { $0.baseAddress! })
        for artifact in await collect(cluster) {
            try? artifact.text.write(toFile: "\(directory)/\(artifact.name)", atomically: true, encoding: .utf8)
        }
        return directory
    }
}
