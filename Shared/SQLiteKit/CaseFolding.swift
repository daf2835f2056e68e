import CSQLite

extension Database {
    /// The SQL function `meow_fold(text)`: `text` with case folded by Unicode's rules, for
    /// case-insensitive comparisons (NSPredicate's `[c]`). SQLite's own `lower()` folds ASCII
    /// only, so `'Éclair' ==[c] 'éclair'` was false and `'straße' ==[c] 'STRASSE'` too.
    /// NULL stays NULL.
    static let caseFoldFunction = "meow_fold"

    func registerCaseFolding() {
        sqlite3_create_function_v2(handle, Self.caseFoldFunction, 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, nil, { context, _, arguments in
            guard let argument = arguments?[0], sqlite3_value_type(argument) != SQLITE_NULL,
                  let bytes = sqlite3_value_text(argument) else {
                sqlite3_result_null(context)
                return
            }
            let text = String(decoding: UnsafeBufferPointer(start: bytes, count: Int(sqlite3_value_bytes(argument))), as: UTF8.self)
            var folded = CaseFolding.fold(text)
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

/// Case folding as string comparison needs it: upper case first, so that `ß` and `SS` meet,
/// then lower case, so that `Σ`, `σ` and `ς` do too.
public enum CaseFolding {
    public static func fold(_ text: String) -> String {
        // ASCII, the common case, folds byte by byte.
        if text.utf8.allSatisfy({ $0 < 0x80 }) { return text.lowercased() }
        return text.uppercased().lowercased()
    }
}
