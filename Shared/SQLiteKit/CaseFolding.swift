import CSQLite
import Foundation

extension Database {
    /// The SQL function `meow_fold(text)`: `text` with case folded by Unicode's rules, for
    /// case-insensitive comparisons (NSPredicate's `[c]`). SQLite's own `lower()` folds ASCII
    /// only, so `'Éclair' ==[c] 'éclair'` was false and `'straße' ==[c] 'STRASSE'` too.
    /// `meow_fold(text, options)` folds what `options` (`CaseFolding.Options` raw value) names:
    /// case (`[c]`), diacritics (`[d]`), or both (`[cd]`). NULL stays NULL.
    static let caseFoldFunction = "meow_fold"

    func registerCaseFolding() {
        for arity: Int32 in [1, 2] {
            sqlite3_create_function_v2(handle, Self.caseFoldFunction, arity, SQLITE_UTF8 | SQLITE_DETERMINISTIC, nil, { context, count, arguments in
                guard let argument = arguments?[0], sqlite3_value_type(argument) != SQLITE_NULL,
                      let bytes = sqlite3_value_text(argument) else {
                    sqlite3_result_null(context)
                    return
                }
                let options = count > 1 ? arguments?[1].map { CaseFolding.Options(rawValue: UInt8(truncatingIfNeeded: sqlite3_value_int($0))) }
                    ?? .caseInsensitive : .caseInsensitive
                let text = String(decoding: UnsafeBufferPointer(start: bytes, count: Int(sqlite3_value_bytes(argument))), as: UTF8.self)
                var folded = CaseFolding.fold(text, options)
                folded.withUTF8 { buffer in
                    guard let base = buffer.baseAddress, !buffer.isEmpty else {
                        sqlite3_result_text(context, "", 0, unsafeBitCast(-1, to: sqlite3_destructor_type.self))
                        return
                    }
                    // SQLITE_TRANSIENT: SQLite copies the bytes before this buffer goes away.
                    base.withMemoryRebound(to: CChar.self, capacity: buffer.count) {
                        sqlite3_result_text(context, $0, Int32(buffer.count), unsafeBitCast(-1, to: sqlite3_destructor_type.self))
                    }
                }
            }, nil, nil, nil)
        }
    }
}

/// Folding as string comparison needs it.
public enum CaseFolding {
    /// What a comparison ignores: NSPredicate's `[c]` and `[d]`.
    public struct Options: OptionSet, Sendable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        public static let caseInsensitive = Options(rawValue: 1)
        public static let diacriticInsensitive = Options(rawValue: 2)
    }

    /// Case: upper case first, so that `ß` and `SS` meet, then lower case, so that `Σ`, `σ`
    /// and `ς` do too. Diacritics: marks are removed after canonical decomposition, so a
    /// composed `é` and an `e` followed by a combining acute accent both become `e` (letters
    /// such as `ø` or `ł`, which Unicode does not decompose, stay as they are, as in Apple's
    /// Foundation).
    public static func fold(_ text: String, _ options: Options = .caseInsensitive) -> String {
        // ASCII, the common case, has no diacritics and folds byte by byte.
        if text.utf8.allSatisfy({ $0 < 0x80 }) { return options.contains(.caseInsensitive) ? text.lowercased() : text }
        var folded = text
        if options.contains(.diacriticInsensitive) { folded = folded.folding(options: .diacriticInsensitive, locale: nil) }
        if options.contains(.caseInsensitive) { folded = folded.uppercased().lowercased() }
        return folded
    }
}
