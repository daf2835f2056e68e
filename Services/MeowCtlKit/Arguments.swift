#if canImport(Glibc)
import Glibc
#endif
import MeowWire

/// A tiny argument reader for meowctl's subcommands: `--name value`, `--name=value`, flags,
/// positionals in order.
struct Arguments {
    private(set) var values: [String: [String]] = [:]
    private(set) var flags: Set<String> = []
    private(set) var positional: [String] = []

    init(_ arguments: [String], flags flagNames: Set<String>) throws(CommandError) {
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if argument == "--" { positional += arguments[index...]; break }
            guard argument.hasPrefix("--"), argument.count > 2 else { positional.append(argument); continue }
            var name = String(argument.dropFirst(2))
            if let equals = name.firstIndex(of: "=") {
                values[String(name[..<equals]), default: []].append(String(name[name.index(after: equals)...]))
                continue
            }
            if flagNames.contains(name) { flags.insert(name); continue }
            guard index < arguments.count else { throw CommandError.usage("--\(name) needs a value.") }
            name = String(name)
            values[name, default: []].append(arguments[index])
            index += 1
        }
    }

    func value(_ name: String) -> String? { values[name]?.last }
    func all(_ name: String) -> [String] { values[name] ?? [] }
    func has(_ name: String) -> Bool { flags.contains(name) }

    func required(_ name: String, for command: String) throws(CommandError) -> String {
        guard let value = value(name) else { throw CommandError.usage("meowctl \(command) needs --\(name).") }
        return value
    }

    /// The credential: --credential C, --credential-file FILE (0600), or $MEOW_CREDENTIAL. A
    /// command line is visible to every local user in /proc; the file and the variable are not.
    /// `fallback` (a deployment's credential for --dir) comes before the variable.
    func credential(fallback: String? = nil) throws(CommandError) -> String? {
        do {
            let given = try CredentialFile.resolve(value: value("credential"), file: value("credential-file"), environment: "",
                                                   valueOption: "credential", fileOption: "credential-file")
            return given ?? fallback ?? getenv("MEOW_CREDENTIAL").map { String(cString: $0) }
        } catch {
            throw CommandError.usage(error.message)
        }
    }

    /// Rejects options the command does not know, so a typo is not silently ignored. A command
    /// that takes --credential also takes --credential-file.
    func check(known: Set<String>, command: String) throws(CommandError) {
        let known = known.contains("credential") ? known.union(["credential-file"]) : known
        for name in Set(values.keys).union(flags) where !known.contains(name) {
            throw CommandError.usage("meowctl \(command) has no option --\(name). Run 'meowctl \(command) --help'.")
        }
    }
}

/// How meowctl ends: exit codes scripts can rely on.
enum CommandError: Error {
    /// Exit 64: the command line was wrong.
    case usage(String)
    /// Exit 1: the service answered with an error reply (already printed).
    case errorReply
    /// Exit 2: could not reach or talk to the service.
    case unavailable(String)

    var exitCode: Int32 {
        switch self {
        case .usage: return 64
        case .errorReply: return 1
        case .unavailable: return 2
        }
    }
}
