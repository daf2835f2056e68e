import Foundation

/// Options from a plain file, so a deployment (deploy/, systemd units) configures the services
/// with files the same binaries read. One option per line:
///
/// ```
/// # sync-service for the local deployment
/// socket = /run/meowcare/sync.sock
/// data-dir = /var/lib/meowcare/sync
/// # repeatable options: one line each
/// allow-uid = 1001
/// log-level = info
/// ```
/// A bare name is a flag (`in-memory`). Names are the long options without `--`. A comment is a
/// line whose first non-blank character is `#`; anywhere else `#` is part of the value, since
/// values are credentials and paths that may contain one.
public enum ConfigFile {
    public static func options(path: String, parser: CommandLineParser) throws(UsageError) -> ParsedOptions {
        guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else {
            throw UsageError("Cannot read the config file \(path).")
        }
        var arguments: [String] = []
        for (number, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let trimmed = rawLine.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            if let equals = trimmed.firstIndex(of: "=") {
                let name = trimmed[..<equals].trimmingCharacters(in: .whitespaces)
                let value = trimmed[trimmed.index(after: equals)...].trimmingCharacters(in: .whitespaces)
                guard !name.isEmpty, name != "config" else { throw UsageError("\(path):\(number + 1): expected 'name = value'.") }
                arguments += ["--\(name)", value]
            } else {
                arguments.append("--\(trimmed)")
            }
        }
        do {
            return try parser.parse(arguments)
        } catch {
            throw UsageError("\(path): \(error.message)")
        }
    }
}

extension ParsedOptions {
    /// These options with every option `other` sets replaced by other's value (the command line
    /// wins over a config file).
    public func overridden(by other: ParsedOptions) -> ParsedOptions {
        var merged = self
        for (name, values) in other.values { merged.values[name] = values }
        merged.flags.formUnion(other.flags)
        merged.positional += other.positional
        return merged
    }
}
