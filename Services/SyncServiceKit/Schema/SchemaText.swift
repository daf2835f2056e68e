import MeowWire

/// A schema as text in CloudKit's schema language (what `cktool export-schema` writes and
/// `cktool import-schema` reads):
///
/// ```
/// DEFINE SCHEMA
///
///     RECORD TYPE CD_CareEvent (
///         "CD_note" STRING,
///         "CD_tags" LIST<STRING>,
///         GRANT WRITE TO "_creator",
///         GRANT CREATE TO "_icloud",
///         GRANT READ TO "_world"
///     );
/// ```
///
/// This cloud's schema is field types only: index options (QUERYABLE, SORTABLE, SEARCHABLE),
/// grants, roles and ENCRYPTED are read and then ignored, and CloudKit's implicit system fields
/// (names starting `___`) are skipped, so a file cktool wrote imports as it is.
enum SchemaText {
    /// The schema language's name of each wire type this protocol checks.
    static let languageNames: [String: String] = [
        "string": "STRING", "int64": "INT64", "double": "DOUBLE", "date": "TIMESTAMP", "bytes": "BYTES",
        "reference": "REFERENCE", "asset": "ASSET", "location": "LOCATION",
    ]
    static let wireTypes: [String: String] = Dictionary(uniqueKeysWithValues: languageNames.map { ($0.value, $0.key) })

    /// `types` (record type → field → wire type) as schema-language text, sorted by name. A
    /// field of a type the language cannot name (an unchecked wire type) is a comment.
    static func text(_ types: [String: [String: String]]) -> String {
        var lines = ["DEFINE SCHEMA"]
        for recordType in types.keys.sorted() {
            lines.append("")
            lines.append("    RECORD TYPE \(quoted(recordType)) (")
            for (field, type) in types[recordType]!.sorted(by: { $0.key < $1.key }) {
                if let name = languageName(type) {
                    lines.append("        \(quoted(field)) \(name),")
                } else {
                    lines.append("        // \(quoted(field)) has type '\(type)', which the schema language cannot name")
                }
            }
            lines.append(contentsOf: ["        GRANT WRITE TO \"_creator\",", "        GRANT CREATE TO \"_icloud\",",
                                      "        GRANT READ TO \"_world\"", "    );"])
        }
        return lines.joined(separator: "\n") + "\n"
    }

    static func languageName(_ type: String) -> String? {
        if type.hasPrefix("list/") { return languageNames[String(type.dropFirst(5))].map { "LIST<\($0)>" } }
        return languageNames[type]
    }

    static func quoted(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// The record types and fields `text` defines (record type → field → wire type), or
    /// invalidArguments naming the line and column of the first thing that is not the language.
    static func parse(_ text: String) throws -> [String: [String: String]] {
        var parser = SchemaParser(tokens: try SchemaTokenizer.tokens(of: text))
        return try parser.schema()
    }
}

/// One word, quoted name or punctuation mark of schema text, with where it starts.
struct SchemaToken: Equatable {
    enum Kind: Equatable { case word, quoted, mark, end }
    var kind: Kind
    var text: String
    var line: Int
    var column: Int

    var described: String {
        switch kind {
        case .end: return "the end of the text"
        case .quoted: return "\"\(text)\""
        default: return "'\(text)'"
        }
    }
}

enum SchemaTokenizer {
    static func failure(_ message: String, line: Int, column: Int) -> WireError {
        WireError(.invalidArguments, "Schema text, line \(line), column \(column): \(message). Nothing was imported.",
                  details: ["line": .int(line), "column": .int(column)])
    }

    /// Words, quoted names and marks; `//` and `--` start a comment that runs to the end of the line.
    static func tokens(of text: String) throws -> [SchemaToken] {
        let characters = Array(text.unicodeScalars)
        var tokens: [SchemaToken] = []
        var index = 0, line = 1, column = 1
        func advance() {
            if characters[index] == "\n" { line += 1; column = 1 } else { column += 1 }
            index += 1
        }
        func peek(_ offset: Int = 0) -> Unicode.Scalar? { index + offset < characters.count ? characters[index + offset] : nil }
        while let scalar = peek() {
            if scalar.properties.isWhitespace { advance(); continue }
            if (scalar == "/" && peek(1) == "/") || (scalar == "-" && peek(1) == "-") {
                while let next = peek(), next != "\n" { advance() }
                continue
            }
            let (startLine, startColumn) = (line, column)
            if scalar == "\"" {
                advance()
                var name = ""
                while true {
                    guard let next = peek() else { throw failure("a quoted name is not closed", line: startLine, column: startColumn) }
                    advance()
                    if next == "\"" {
                        if peek() == "\"" { name.unicodeScalars.append("\""); advance(); continue }
                        break
                    }
                    name.unicodeScalars.append(next)
                }
                tokens.append(SchemaToken(kind: .quoted, text: name, line: startLine, column: startColumn))
            } else if "(),;<>".unicodeScalars.contains(scalar) {
                advance()
                tokens.append(SchemaToken(kind: .mark, text: String(scalar), line: startLine, column: startColumn))
            } else if scalar.properties.isAlphabetic || scalar == "_" {
                var word = ""
                while let next = peek(), next.properties.isAlphabetic || next.properties.numericType != nil || next == "_" || next == "." {
                    word.unicodeScalars.append(next)
                    advance()
                }
                tokens.append(SchemaToken(kind: .word, text: word, line: startLine, column: startColumn))
            } else {
                throw failure("unexpected character '\(scalar)'", line: startLine, column: startColumn)
            }
        }
        tokens.append(SchemaToken(kind: .end, text: "", line: line, column: column))
        return tokens
    }
}

/// CloudKit's schema-language grammar, the parts that define record types and fields:
/// `DEFINE SCHEMA { CREATE ROLE name ; | RECORD TYPE name ( item, … ) ; }`, an item being a
/// field (`name type [QUERYABLE|SORTABLE|SEARCHABLE]…`) or a grant (`GRANT READ|CREATE|WRITE, … TO role`).
struct SchemaParser {
    let tokens: [SchemaToken]
    var position = 0

    init(tokens: [SchemaToken]) { self.tokens = tokens }

    var current: SchemaToken { tokens[position] }

    func failure(_ expected: String) -> WireError {
        SchemaTokenizer.failure("expected \(expected), found \(current.described)", line: current.line, column: current.column)
    }

    func isKeyword(_ keyword: String) -> Bool { current.kind == .word && current.text.uppercased() == keyword }

    mutating func expect(keyword: String) throws {
        guard isKeyword(keyword) else { throw failure(keyword) }
        position += 1
    }

    mutating func expect(mark: String) throws {
        guard current.kind == .mark, current.text == mark else { throw failure("'\(mark)'") }
        position += 1
    }

    mutating func accept(mark: String) -> Bool {
        guard current.kind == .mark, current.text == mark else { return false }
        position += 1
        return true
    }

    mutating func name(_ what: String) throws -> String {
        guard current.kind == .word || current.kind == .quoted, !current.text.isEmpty else { throw failure(what) }
        defer { position += 1 }
        return current.text
    }

    mutating func schema() throws -> [String: [String: String]] {
        try expect(keyword: "DEFINE")
        try expect(keyword: "SCHEMA")
        var types: [String: [String: String]] = [:]
        while current.kind != .end {
            if isKeyword("CREATE") {
                position += 1
                try expect(keyword: "ROLE")
                _ = try name("a role name")
            } else if isKeyword("RECORD") {
                let start = current
                let (recordType, fields) = try recordTypeDefinition()
                guard types[recordType] == nil else {
                    throw SchemaTokenizer.failure("record type '\(recordType)' is defined twice", line: start.line, column: start.column)
                }
                types[recordType] = fields
            } else {
                throw failure("RECORD TYPE, CREATE ROLE or the end of the text")
            }
            try expect(mark: ";")
        }
        return types
    }

    mutating func recordTypeDefinition() throws -> (String, [String: String]) {
        try expect(keyword: "RECORD")
        try expect(keyword: "TYPE")
        let recordType = try name("a record type name")
        try expect(mark: "(")
        var fields: [String: String] = [:]
        repeat {
            if isKeyword("GRANT"), Self.permissions.contains(tokens[position + 1].text.uppercased()) {
                try grant()
                continue
            }
            let start = current
            let field = try name("a field name or GRANT")
            let type = try dataType()
            while isKeyword("QUERYABLE") || isKeyword("SORTABLE") || isKeyword("SEARCHABLE") { position += 1 }
            if field.hasPrefix("___") { continue }
            guard fields[field] == nil else {
                throw SchemaTokenizer.failure("field '\(field)' of record type '\(recordType)' is defined twice", line: start.line, column: start.column)
            }
            fields[field] = type
        } while accept(mark: ",")
        try expect(mark: ")")
        return (recordType, fields)
    }

    static let permissions: Set<String> = ["READ", "CREATE", "WRITE"]

    /// `GRANT READ, WRITE TO role`: the commas between permissions, not the one after the role.
    mutating func grant() throws {
        try expect(keyword: "GRANT")
        guard current.kind == .word, Self.permissions.contains(current.text.uppercased()) else { throw failure("READ, CREATE or WRITE") }
        position += 1
        while current.kind == .mark, current.text == ",", tokens[position + 1].kind == .word,
              Self.permissions.contains(tokens[position + 1].text.uppercased()) {
            position += 2
        }
        try expect(keyword: "TO")
        _ = try name("a role name")
    }

    /// A data type as this protocol's wire type (`list/string` for `LIST<STRING>`).
    mutating func dataType() throws -> String {
        if isKeyword("LIST") {
            position += 1
            try expect(mark: "<")
            let item = try primitiveType()
            try expect(mark: ">")
            return "list/" + item
        }
        return try primitiveType()
    }

    mutating func primitiveType() throws -> String {
        if isKeyword("ENCRYPTED") { position += 1 }
        if isKeyword("NUMBER") {
            position += 1
            guard isKeyword("PREFERRED") else { return "double" }
            position += 1
            try expect(keyword: "AS")
            guard isKeyword("INT64") || isKeyword("DOUBLE") else { throw failure("INT64 or DOUBLE") }
            defer { position += 1 }
            return current.text.lowercased()
        }
        guard current.kind == .word, let type = SchemaText.wireTypes[current.text.uppercased()] else {
            throw failure("a data type (ASSET, BYTES, DOUBLE, INT64, LOCATION, NUMBER, REFERENCE, STRING, TIMESTAMP or LIST<…>)")
        }
        position += 1
        return type
    }
}
