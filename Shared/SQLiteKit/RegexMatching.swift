import CSQLite
import Foundation
import Synchronization

extension Database {
    /// The SQL function `meow_matches(text, pattern, options)`: 1 when the whole of `text`
    /// matches the ICU regular expression `pattern` (NSPredicate's `MATCHES`), else 0; NULL
    /// text is NULL. `options` is a `CaseFolding.Options` raw value: case-insensitive matching
    /// for `[c]`, diacritics removed from the text first for `[d]`. A pattern that does not
    /// compile is an SQL error (the predicate parser checks patterns before a query is built).
    static let regexMatchFunction = "meow_matches"

    func registerRegexMatching() {
        sqlite3_create_function_v2(handle, Self.regexMatchFunction, 3, SQLITE_UTF8 | SQLITE_DETERMINISTIC, nil, { context, _, arguments in
            guard let arguments, let textValue = arguments[0], let patternValue = arguments[1],
                  sqlite3_value_type(textValue) != SQLITE_NULL, let textBytes = sqlite3_value_text(textValue),
                  let patternBytes = sqlite3_value_text(patternValue) else {
                sqlite3_result_null(context)
                return
            }
            let options = CaseFolding.Options(rawValue: UInt8(truncatingIfNeeded: arguments[2].map { sqlite3_value_int($0) } ?? 0))
            let pattern = String(decoding: UnsafeBufferPointer(start: patternBytes, count: Int(sqlite3_value_bytes(patternValue))), as: UTF8.self)
            var text = String(decoding: UnsafeBufferPointer(start: textBytes, count: Int(sqlite3_value_bytes(textValue))), as: UTF8.self)
            if options.contains(.diacriticInsensitive) { text = CaseFolding.fold(text, .diacriticInsensitive) }
            do {
                sqlite3_result_int(context, try RegexMatching.wholeMatch(text, pattern: pattern, caseInsensitive: options.contains(.caseInsensitive)) ? 1 : 0)
            } catch {
                sqlite3_result_error(context, "invalid regular expression: \(pattern)", -1)
            }
        }, nil, nil, nil)
    }
}

/// NSPredicate's `MATCHES`: the whole string matches an ICU regular expression.
public enum RegexMatching {
    private final class Compiled: @unchecked Sendable {
        // NSRegularExpression is immutable once made, and safe to use from many threads.
        let regex: NSRegularExpression
        init(_ regex: NSRegularExpression) { self.regex = regex }
    }

    /// Patterns compiled so far: a query calls the function once per row with the same pattern.
    private static let cache = Mutex<[String: Compiled]>([:])
    private static let cacheLimit = 64

    /// Compiles `pattern` anchored at both ends; throws when it is not a valid ICU pattern.
    public static func compile(_ pattern: String, caseInsensitive: Bool) throws -> NSRegularExpression {
        let key = (caseInsensitive ? "i:" : "s:") + pattern
        if let known = cache.withLock({ $0[key] }) { return known.regex }
        let regex = try NSRegularExpression(pattern: "\\A(?:" + pattern + ")\\z", options: caseInsensitive ? [.caseInsensitive] : [])
        cache.withLock { cache in
            if cache.count >= cacheLimit { cache.removeAll() }
            cache[key] = Compiled(regex)
        }
        return regex
    }

    public static func wholeMatch(_ text: String, pattern: String, caseInsensitive: Bool) throws -> Bool {
        let regex = try compile(pattern, caseInsensitive: caseInsensitive)
        let range = NSRange(text.startIndex..<text.endIndex, in: text)
        return regex.firstMatch(in: text, options: [], range: range) != nil
    }
}
