import Foundation
import MeowCareCluster
import Testing

/// What a failing test keeps of its cluster: each service's log, the cloud's request log and
/// the frame trace of every connection the fixture opened.
enum FailureArtifacts {
    /// The artifacts as (file name, text) pairs.
    static func collect(_ cluster: MeowCluster) async -> [(name: String, text: String)] {
        var artifacts = cluster.logs().map { (name: "\($0.service).log", text: $0.text) }
        if !cluster.isStopped {
            // Asked before the stop: the log lives in the running cloud.
            let requests = (try? await cluster.cloud.admin.requestLogText()) ?? "(the cloud did not answer admin.requestLog)"
            artifacts.append((name: "cloud-requests.jsonl", text: requests))
        }
        artifacts.append((name: "frames.txt", text: cluster.trace.text()))
        // A credential can reach any of them (a message quoting a reply, a test's own log line).
        return artifacts.map { (name: $0.name, text: cluster.trace.redacting($0.text)) }
    }

    /// Attaches them to the running Swift Testing test.
    static func attach(_ cluster: MeowCluster) async {
        for artifact in await collect(cluster) {
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
