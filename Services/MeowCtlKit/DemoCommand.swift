#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeowWire

/// `meowctl demo --dir DIR`: tells the MeowCare story against a running local deployment
/// (deploy/meowcare-local up --dir DIR), checking every step. Exit 0 only if all matched.
enum DemoCommand {
    static func run(_ arguments: [String]) async throws(CommandError) {
        let args = try Arguments(arguments, flags: [])
        try args.check(known: ["dir"], command: "demo")
        let directory = try args.required("dir", for: "demo")
        let deployment: Deployment
        do { deployment = try Deployment(directory: directory) } catch { throw .usage("\(error)") }
        let transcript = DemoTranscript()
        let demo = MeowCareDemo(deployment: deployment, transcript: transcript)
        await demo.tell()
        print("\n== Verdict: \(transcript.passed) checks passed, \(transcript.failed) failed, \(transcript.skipped) skipped")
        if transcript.failed > 0 { throw .errorReply }
    }
}

/// Where a local deployment's sockets and credentials are (written by deploy/meowcare-local).
struct Deployment {
    let directory: String
    let credentials: [String: String]

    init(directory: String) throws {
        self.directory = directory
        let path = directory + "/config/credentials.json"
        guard let data = FileManager.default.contents(atPath: path),
              let values = try? JSONValueDecoder().decode([String: String].self, from: Array(data)) else {
            throw DemoError("No deployment at \(directory): \(path) is missing. Start one with deploy/meowcare-local up --dir \(directory).")
        }
        credentials = values
    }

    func socket(_ service: String) -> String { "\(directory)/sockets/\(service).sock" }

    func connect(_ service: String, as user: String? = nil) async throws -> WireClient {
        let client = try WireClient(socketPath: socket(service))
        try await client.hello(client: "meowctl-demo", credential: user.flatMap { credentials[$0] })
        return client
    }
}

struct DemoError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
