/// A small command-line parser: `--name VALUE`, `--name=VALUE`, flags, repeatable options, and
/// generated `--help` text written for people.
///
/// ```swift
/// let parser = CommandLineParser(command: "store-service", summary: "…", options: [.socket, .help])
/// let parsed = try parser.parse(Array(CommandLine.arguments.dropFirst()))
/// ```
public struct CommandLineParser: Sendable {
    public struct Option: Sendable {
        public var name: String
        public var valueName: String?
        public var help: String
        public var repeatable: Bool
        public init(_ name: String, value: String? = nil, help: String, repeatable: Bool = false) {
            self.name = name
            self.valueName = value
            self.help = help
            self.repeatable = repeatable
        }
        public var isFlag: Bool { valueName == nil }
    }

    public var command: String
    public var summary: String
    public var options: [Option]
    public var usageTail: String

    public init(command: String, summary: String, options: [Option], usageTail: String = "") {
        self.command = command
        self.summary = summary
        self.options = options
        self.usageTail = usageTail
    }

    public func parse(_ arguments: [String]) throws(UsageError) -> ParsedOptions {
        var parsed = ParsedOptions()
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            guard argument.hasPrefix("--"), argument.count > 2 else {
                parsed.positional.append(argument)
                continue
            }
            var name = String(argument.dropFirst(2))
            var inlineValue: String?
            if let equals = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            guard let option = options.first(where: { $0.name == name }) else {
                throw UsageError("Unknown option --\(name). Run '\(command) --help' for the options.")
            }
            if option.isFlag {
                if inlineValue != nil { throw UsageError("--\(name) takes no value.") }
                parsed.flags.insert(name)
                continue
            }
            let value: String
            if let inlineValue {
                value = inlineValue
            } else {
                guard index < arguments.count else {
                    throw UsageError("--\(name) needs a value: --\(name) \(option.valueName ?? "VALUE").")
                }
                value = arguments[index]
                index += 1
            }
            if !option.repeatable, parsed.values[name] != nil {
                throw UsageError("--\(name) was given twice.")
            }
            parsed.values[name, default: []].append(value)
        }
        return parsed
    }

    public var helpText: String {
        var lines = ["\(command) — \(summary)", "", "Usage: \(command) [options]\(usageTail.isEmpty ? "" : " " + usageTail)", "", "Options:"]
        let labels = options.map { "--\($0.name)" + ($0.valueName.map { " \($0)" } ?? "") }
        let width = min(32, (labels.map(\.count).max() ?? 0) + 2)
        for (option, label) in zip(options, labels) {
            let pad = String(repeating: " ", count: max(1, width - label.count))
            lines.append("  \(label)\(pad)\(option.help)")
        }
        return lines.joined(separator: "\n")
    }
}

public struct ParsedOptions: Sendable {
    public var values: [String: [String]] = [:]
    public var flags: Set<String> = []
    public var positional: [String] = []

    public func value(_ name: String) -> String? { values[name]?.last }
    public func all(_ name: String) -> [String] { values[name] ?? [] }
    public func has(_ name: String) -> Bool { flags.contains(name) }

    public func int(_ name: String, default defaultValue: Int, range: ClosedRange<Int>) throws(UsageError) -> Int {
        guard let text = value(name) else { return defaultValue }
        guard let number = Int(text), range.contains(number) else {
            throw UsageError("--\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound); got '\(text)'.")
        }
        return number
    }
}

/// A command-line mistake: printed with a hint, exit status 64 (EX_USAGE).
public struct UsageError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
