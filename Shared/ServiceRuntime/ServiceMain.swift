#if canImport(Glibc)
import Glibc
#endif
import CShim
import Foundation
import MeowWire

/// What each executable's main.swift calls: parse options, start, serve, exit 0 on SIGTERM.
public enum ServiceMain {
    /// Parses the arguments; prints help or version and exits, or exits 64 on a usage mistake.
    public static func parseOptions(_ parser: CommandLineParser, version: String,
                                    arguments: [String] = Array(CommandLine.arguments.dropFirst())) -> ParsedOptions {
        do {
            var options = try parser.parse(arguments)
            if let path = options.value("config") {
                options = try ConfigFile.options(path: path, parser: parser).overridden(by: options)
            }
            if options.has("help") { print(parser.helpText); exit(0) }
            if options.has("version") { print("\(parser.command) \(version)"); exit(0) }
            return options
        } catch {
            printError("\(parser.command): \(error.message)")
            exit(64)
        }
    }

    /// Like `ServiceConfiguration.from`, exiting 64 with the message on a mistake.
    public static func configuration(_ options: ParsedOptions, command: String) -> ServiceConfiguration {
        do {
            return try ServiceConfiguration.from(options, defaultSocket: ServiceConfiguration.defaultSocketPath(for: command))
        } catch {
            printError("\(command): \(error.message)")
            exit(64)
        }
    }

    /// Runs the service until SIGTERM/SIGINT, then exits 0; exits 1 if it cannot start.
    public static func run(_ definition: any ServiceDefinition, configuration: ServiceConfiguration) -> Never {
        let logger = Logger(label: definition.name)
        MemoryTuning.applyToProcess()
        do {
            let server = try ServiceServer(definition: definition, configuration: configuration)
            ShutdownSignals.install { signal in
                logger.info("signal received", ["signal": .string(signal == SIGTERM ? "SIGTERM" : "SIGINT")])
                server.shutdown()
            }
            ParentWatch.startIfRequested(logger: logger) { server.shutdown() }
            try server.run()
            exit(0)
        } catch {
            if let wire = ServiceError.wire(of: error) {
                // The code and details a person (or a harness) acts on, not a Swift dump.
                logger.critical("could not start", ["code": .string(wire.code.rawValue), "error": .string(wire.message), "details": .object(wire.details)])
            } else {
                logger.critical("could not start", ["error": .string("\(error)")])
            }
            exit(1)
        }
    }

    public static func printError(_ text: String) {
        var line = Array(text.utf8)
        line.append(0x0A)
        _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    }
}

/// `MEOW_EXIT_WITH_PID=<pid>`: the service stops cleanly once that process has ended. Test
/// harnesses set it to their own pid, so services never outlive a test runner that was killed
/// (a deployment's services, meant to outlive their command, are started without it).
enum ParentWatch {
    static func startIfRequested(logger: Logger, shutdown: @escaping @Sendable () -> Void) {
        guard let value = getenv("MEOW_EXIT_WITH_PID"), let pid = pid_t(String(cString: value)), pid > 0 else { return }
        // A pidfd becomes readable when the process ends (no polling); if it has ended already,
        // pidfd_open fails and the service stops at once.
        let descriptor = meow_pidfd_open(pid)
        let thread = Thread {
            if descriptor >= 0 {
                var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                while poll(&entry, 1, -1) < 0 && errno == EINTR {}
                close(descriptor)
            }
            logger.notice("the watched process ended; stopping (MEOW_EXIT_WITH_PID)", ["pid": .int(Int(pid))])
            shutdown()
        }
        thread.name = "parent-watch"
        thread.start()
    }
}
