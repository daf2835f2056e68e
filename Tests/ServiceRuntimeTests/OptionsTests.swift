#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeowWire
@testable import ServiceRuntime
import TestSupport
import Testing

@Suite("Options: the command line, config files, the shared service options")
struct OptionsTests {
    let parser = CommandLineParser(command: "test-service", summary: "a service for tests",
                                   options: ServiceConfiguration.commandLineOptions + [.init("name", value: "NAME", help: "A name.")])

    func configuration(_ arguments: [String]) throws -> ServiceConfiguration {
        try ServiceConfiguration.from(parser.parse(arguments), defaultSocket: "/default/test.sock")
    }

    @Test("values as --name VALUE or --name=VALUE, flags, repeatable options, positional words")
    func parsesTheForms() throws {
        let parsed = try parser.parse(["--socket", "/a.sock", "--max-connections=5", "--in-memory", "word",
                                       "--allow-uid", "1001", "--allow-uid=1002", "-x", "--", "--name=a=b"])
        #expect(parsed.value("socket") == "/a.sock")
        #expect(parsed.value("max-connections") == "5")
        #expect(parsed.has("in-memory"))
        #expect(!parsed.has("allow-any-uid"))
        #expect(parsed.all("allow-uid") == ["1001", "1002"])
        #expect(parsed.positional == ["word", "-x", "--"])
        #expect(parsed.value("name") == "a=b")
        #expect(parsed.value("data-dir") == nil)
    }

    @Test("usage mistakes are UsageErrors saying what to do",
          arguments: [(["--nope"], "Unknown option --nope. Run 'test-service --help' for the options."),
                      (["--in-memory=yes"], "--in-memory takes no value."),
                      (["--socket"], "--socket needs a value: --socket PATH."),
                      (["--socket", "/a", "--socket", "/b"], "--socket was given twice.")])
    func usageMistakes(arguments: [String], message: String) {
        let error = #expect(throws: UsageError.self) { try parser.parse(arguments) }
        #expect(error?.message == message)
    }

    @Test("whole-number options keep their default when absent and refuse values outside their range")
    func integerOptions() throws {
        let parsed = try parser.parse(["--max-connections", "0", "--send-timeout-ms", "250"])
        #expect(try parsed.int("hello-timeout-ms", default: 77, range: 1...100) == 77)
        #expect(try parsed.int("send-timeout-ms", default: 1, range: 1...1000) == 250)
        let error = #expect(throws: UsageError.self) { try parsed.int("max-connections", default: 1, range: 1...65536) }
        #expect(error?.message == "--max-connections must be a whole number from 1 to 65536; got '0'.")
        #expect(throws: UsageError.self) { try parser.parse(["--send-timeout-ms", "soon"]).int("send-timeout-ms", default: 1, range: 1...10) }
    }

    @Test("the help text lists the usage and every option with its value name")
    func helpText() {
        let help = parser.helpText
        #expect(help.hasPrefix("test-service — a service for tests\n\nUsage: test-service [options]"))
        for option in parser.options {
            #expect(help.contains("--\(option.name)" + (option.valueName.map { " \($0)" } ?? "")), "\(option.name)")
        }
    }

    @Test("service options: the defaults, the socket's default, and every limit taken from the command line")
    func serviceConfiguration() throws {
        let defaults = try configuration(["--in-memory"])
        #expect(defaults.socketPath == "/default/test.sock")
        #expect(defaults.persistence == .inMemory)
        #expect(defaults.maxFrameBytes == 16 * 1024 * 1024)
        #expect(defaults.maxConnections == 256)
        #expect(defaults.maxConnectionsPerPeer == 32)
        #expect(defaults.maxPendingConnections == 64)
        #expect(defaults.helloTimeoutMilliseconds == 10_000)
        #expect(defaults.frameTimeoutMilliseconds == 30_000)
        #expect(defaults.sendTimeoutMilliseconds == 10_000)
        #expect(defaults.maxBufferedBytes == 128 * 1024 * 1024)
        #expect(defaults.maxEventQueueBytes == 8 * 1024 * 1024)
        #expect(defaults.allowedUIDs == [])

        let set = try configuration(["--socket", "/s.sock", "--data-dir", "/d", "--max-frame-bytes", "4096",
                                     "--max-connections", "9", "--max-connections-per-peer", "3", "--max-pending-connections", "2",
                                     "--hello-timeout-ms", "5", "--frame-timeout-ms", "6", "--send-timeout-ms", "7",
                                     "--max-buffered-bytes", "70000", "--max-event-queue-bytes", "2048", "--allow-uid", "4242"])
        #expect(set.socketPath == "/s.sock")
        #expect(set.persistence == .dataDirectory("/d"))
        #expect(set.persistence.modeName == "sqlite")
        let limits: [Int] = [set.maxFrameBytes, set.maxConnections, set.maxConnectionsPerPeer, set.maxPendingConnections,
                             set.helloTimeoutMilliseconds, set.frameTimeoutMilliseconds, set.sendTimeoutMilliseconds,
                             set.maxBufferedBytes, set.maxEventQueueBytes]
        #expect(limits == [4096, 9, 3, 2, 5, 6, 7, 70000, 2048])
        #expect(set.allowedUIDs == [4242])
    }

    @Test("service options that cannot go together, or out of range, are refused",
          arguments: [(["--data-dir", "/d", "--in-memory"], "Choose one of --data-dir DIR and --in-memory, not both."),
                      ([], "Pass --data-dir DIR to keep data in SQLite files, or --in-memory for a throwaway instance."),
                      (["--in-memory", "--allow-uid", "me"], "--allow-uid must be a numeric uid; got 'me'."),
                      (["--in-memory", "--max-buffered-bytes", "1000"], "--max-buffered-bytes must be a whole number from 65536 to 1099511627776; got '1000'."),
                      (["--in-memory", "--log-level", "loud"], "--log-level must be one of trace, debug, info, notice, warning, error, critical; got 'loud'.")])
    func badServiceOptions(arguments: [String], message: String) {
        let error = #expect(throws: UsageError.self) { try configuration(arguments) }
        #expect(error?.message == message)
    }

    @Test("peers: the service's own uid always, listed uids too, any uid with --allow-any-uid")
    func allowedPeers() throws {
        let own = getuid()
        let stranger: UInt32 = own == 4242 ? 4243 : 4242
        let strict = try configuration(["--in-memory"])
        #expect(strict.allows(uid: own))
        #expect(!strict.allows(uid: stranger))
        #expect(try configuration(["--in-memory", "--allow-uid", String(stranger)]).allows(uid: stranger))
        let open = try configuration(["--in-memory", "--allow-any-uid", "--allow-uid", "7"])
        #expect(open.allowedUIDs == nil)
        #expect(open.allows(uid: stranger))
    }

    @Test("a config file: name = value lines, bare flags, # comments only at a line's start; the command line wins")
    func configFile() throws {
        let directory = TemporaryDirectory(prefix: "src")
        let path = directory.file("test.conf")
        try """
            # a comment
              # an indented comment

            socket = /from/file.sock
            in-memory
            name = secret#with#hashes
            allow-uid = 1
            allow-uid = 2
            max-connections = 12
            """.write(toFile: path, atomically: true, encoding: .utf8)
        let file = try ConfigFile.options(path: path, parser: parser)
        #expect(file.value("socket") == "/from/file.sock")
        #expect(file.has("in-memory"))
        #expect(file.value("name") == "secret#with#hashes")
        #expect(file.all("allow-uid") == ["1", "2"])
        let merged = file.overridden(by: try parser.parse(["--max-connections", "3"]))
        #expect(merged.value("max-connections") == "3")
        #expect(merged.value("socket") == "/from/file.sock")
        #expect(try ServiceConfiguration.from(merged, defaultSocket: "/unused").maxConnections == 3)
    }

    @Test("config file mistakes name the file (and the line)",
          arguments: [("config = other.conf\n", "test.conf:1: expected 'name = value'."),
                      ("\n = value\n", "test.conf:2: expected 'name = value'."),
                      ("bogus = 1\n", "test.conf: Unknown option --bogus.")])
    func configFileMistakes(text: String, message: String) throws {
        let directory = TemporaryDirectory(prefix: "src")
        let path = directory.file("test.conf")
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        let error = #expect(throws: UsageError.self) { try ConfigFile.options(path: path, parser: parser) }
        #expect(error?.message.hasPrefix(directory.path + "/") == true)
        #expect(error?.message.contains(message) == true, "\(error?.message ?? "")")
        let missing = #expect(throws: UsageError.self) { try ConfigFile.options(path: directory.file("absent.conf"), parser: parser) }
        #expect(missing?.message == "Cannot read the config file \(directory.file("absent.conf")).")
    }

    @Test("the default socket is per user: under $XDG_RUNTIME_DIR, else /tmp/meowcare-UID")
    func defaultSocketPath() {
        let path = ServiceConfiguration.defaultSocketPath(for: "store-service")
        if let runtime = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"], !runtime.isEmpty {
            #expect(path == "\(runtime)/meowcare/store-service.sock")
        } else {
            #expect(path == "/tmp/meowcare-\(getuid())/store-service.sock")
        }
    }

    @Test("log levels are named and ordered")
    func logLevels() {
        #expect(Logger.Level.allCases.map(\.name) == ["trace", "debug", "info", "notice", "warning", "error", "critical"])
        #expect(Logger.Level(name: "warning") == .warning)
        #expect(Logger.Level(name: "WARNING") == nil)
        #expect(Logger.Level.debug < .info && Logger.Level.error > .warning)
    }
}
