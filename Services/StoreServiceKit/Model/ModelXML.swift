import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// An XML element with its attributes and child elements (text is not kept: a model's
/// contents file says everything in attributes). Read with `XMLParser`, which stops at the
/// first error, where libxml2's document reader recovers and guesses.
final class XMLTree {
    let name: String
    let attributes: [String: String]
    private(set) var children: [XMLTree] = []

    init(name: String, attributes: [String: String]) {
        self.name = name
        self.attributes = attributes
    }

    func elements(forName name: String) -> [XMLTree] { children.filter { $0.name == name } }

    /// How deep elements may nest. A model's contents file is five deep at most; a document far
    /// deeper is refused as it is read, since the tree (and freeing it) would go as deep.
    static let maxDepth = 64

    /// The document's root element; a malformed document is an error naming `file` and the line.
    static func parse(_ data: Data, file: String) throws(ModelError) -> XMLTree {
        let parser = XMLParser(data: data)
        let builder = Builder()
        parser.delegate = builder
        parser.shouldResolveExternalEntities = false
        let parsed = parser.parse()
        if builder.tooDeep {
            throw ModelError("\(file) nests elements more than \(maxDepth) deep (line \(parser.lineNumber)); an Xcode model's contents file is a few levels deep: <model>, <entity>, <attribute>.")
        }
        guard parsed, builder.error == nil, let root = builder.root else {
            let code = (builder.error ?? parser.parserError).map { " (libxml2 error \(($0 as NSError).code))" } ?? ""
            throw ModelError("\(file) is not well-formed XML: line \(parser.lineNumber), column \(parser.columnNumber)\(code); an Xcode model's contents file is XML.")
        }
        return root
    }

    /// Builds the tree as the parser reports elements (the parser is used on one thread, once).
    private final class Builder: NSObject, XMLParserDelegate {
        var root: XMLTree?
        /// The first error: libxml2 reports it and may recover, but a guessed model is no model.
        var error: (any Error)?
        private(set) var tooDeep = false
        private var open: [XMLTree] = []

        func parser(_ parser: XMLParser, parseErrorOccurred parseError: any Error) {
            if error == nil { error = parseError }
            parser.abortParsing()
        }

        func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName: String?,
                    attributes: [String: String]) {
            guard open.count < XMLTree.maxDepth else {
                tooDeep = true
                parser.abortParsing()
                return
            }
            let element = XMLTree(name: elementName, attributes: attributes)
            if let parent = open.last { parent.children.append(element) } else if root == nil { root = element }
            open.append(element)
        }

        func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName: String?) {
            if !open.isEmpty { open.removeLast() }
        }
    }
}

/// An Xcode data model's `contents` file (the XML inside `Name.xcdatamodel`) read into plain
/// values, as Xcode wrote them: type names such as "Integer 64", "YES"/"NO" flags, dates as
/// seconds since 2001. Reading and meaning are kept apart: `XcodeModelConversion` applies Core
/// Data's meaning to these values, so a parse problem and a model problem get different errors.
struct XcodeModelContents {
    struct Attribute {
        var name: String
        var attributeType: String?
        var optional: Bool
        var transient: Bool
        var derived: Bool
        var defaultValueString: String?
        var defaultDateTimeInterval: String?
        var minValueString: String?
        var maxValueString: String?
        var minDateTimeInterval: String?
        var maxDateTimeInterval: String?
        var regularExpressionString: String?
        var allowsExternalBinaryDataStorage: Bool
        var valueTransformerName: String?
        var preserveAfterDeletion: Bool
        var renamingIdentifier: String?
        var versionHashModifier: String?
    }

    struct Relationship {
        var name: String
        var destinationEntity: String?
        var inverseName: String?
        var inverseEntity: String?
        var toMany: Bool
        var optional: Bool
        var transient: Bool
        var ordered: Bool
        var minCount: String?
        var maxCount: String?
        var deletionRule: String?
        var renamingIdentifier: String?
        var versionHashModifier: String?
    }

    struct Entity {
        var name: String
        var parentEntity: String?
        var isAbstract: Bool
        var attributes: [Attribute] = []
        var relationships: [Relationship] = []
        var fetchedProperties: [String] = []
        /// Each constraint: the names of the properties that are unique together.
        var uniquenessConstraints: [[String]] = []
        /// Each fetch index: the properties it covers, in order.
        var fetchIndexes: [[String]] = []
        var renamingIdentifier: String?
        var versionHashModifier: String?
    }

    struct Configuration {
        var name: String
        var usedWithCloudKit: Bool
        var entities: [String]
    }

    /// The model's own "Used with CloudKit" (Xcode's checkbox for the Default configuration).
    var usedWithCloudKit = false
    var entities: [Entity] = []
    var configurations: [Configuration] = []

    /// Reads `data`, the text of a `contents` file; `file` names it in errors.
    static func parse(_ data: Data, file: String) throws(ModelError) -> XcodeModelContents {
        let root = try XMLTree.parse(data, file: file)
        guard root.name == "model" else {
            throw ModelError("\(file) is not an Xcode data model: its root element is <\(root.name)>, not <model>.")
        }
        var contents = XcodeModelContents()
        contents.usedWithCloudKit = flag(root, "usedWithCloudKit")
        for element in root.elements(forName: "entity") {
            contents.entities.append(try entity(element, file: file))
        }
        for element in root.elements(forName: "configuration") {
            guard let name = text(element, "name") else { throw ModelError("\(file): a <configuration> has no name.") }
            contents.configurations.append(Configuration(
                name: name, usedWithCloudKit: flag(element, "usedWithCloudKit"),
                entities: element.elements(forName: "memberEntity").compactMap { text($0, "name") }))
        }
        return contents
    }

    private static func entity(_ element: XMLTree, file: String) throws(ModelError) -> Entity {
        guard let name = text(element, "name") else { throw ModelError("\(file): an <entity> has no name.") }
        var entity = Entity(name: name, parentEntity: text(element, "parentEntity"), isAbstract: flag(element, "isAbstract"),
                            renamingIdentifier: text(element, "elementID") ?? text(element, "renamingIdentifier"),
                            versionHashModifier: text(element, "versionHashModifier"))
        for child in element.elements(forName: "attribute") {
            guard let name = text(child, "name") else { throw ModelError("\(file): \(entity.name) has an <attribute> without a name.") }
            entity.attributes.append(Attribute(
                name: name, attributeType: text(child, "attributeType"), optional: flag(child, "optional"),
                transient: flag(child, "transient"), derived: flag(child, "derived"),
                defaultValueString: text(child, "defaultValueString"), defaultDateTimeInterval: text(child, "defaultDateTimeInterval"),
                minValueString: text(child, "minValueString"), maxValueString: text(child, "maxValueString"),
                minDateTimeInterval: text(child, "minDateTimeInterval"), maxDateTimeInterval: text(child, "maxDateTimeInterval"),
                regularExpressionString: text(child, "regularExpressionString"),
                allowsExternalBinaryDataStorage: flag(child, "allowsExternalBinaryDataStorage"),
                valueTransformerName: text(child, "valueTransformerName"), preserveAfterDeletion: flag(child, "preserveAfterDeletion"),
                renamingIdentifier: text(child, "elementID") ?? text(child, "renamingIdentifier"),
                versionHashModifier: text(child, "versionHashModifier")))
        }
        for child in element.elements(forName: "relationship") {
            guard let name = text(child, "name") else { throw ModelError("\(file): \(entity.name) has a <relationship> without a name.") }
            entity.relationships.append(Relationship(
                name: name, destinationEntity: text(child, "destinationEntity"), inverseName: text(child, "inverseName"),
                inverseEntity: text(child, "inverseEntity"), toMany: flag(child, "toMany"), optional: flag(child, "optional"),
                transient: flag(child, "transient"), ordered: flag(child, "ordered"),
                minCount: text(child, "minCount"), maxCount: text(child, "maxCount"), deletionRule: text(child, "deletionRule"),
                renamingIdentifier: text(child, "elementID") ?? text(child, "renamingIdentifier"),
                versionHashModifier: text(child, "versionHashModifier")))
        }
        entity.fetchedProperties = element.elements(forName: "fetchedProperty").compactMap { text($0, "name") }
        for group in element.elements(forName: "uniquenessConstraints") {
            for constraint in group.elements(forName: "uniquenessConstraint") {
                entity.uniquenessConstraints.append(constraint.elements(forName: "constraint").compactMap { text($0, "value") })
            }
        }
        for index in element.elements(forName: "fetchIndex") {
            entity.fetchIndexes.append(index.elements(forName: "fetchIndexElement").compactMap { text($0, "property") })
        }
        return entity
    }

    private static func text(_ element: XMLTree, _ name: String) -> String? {
        element.attributes[name]
    }

    /// Xcode writes flags as "YES"/"NO" (older files: "true"/"false"); absent is no.
    private static func flag(_ element: XMLTree, _ name: String) -> Bool {
        guard let value = text(element, name)?.lowercased() else { return false }
        return value == "yes" || value == "true" || value == "1"
    }
}
