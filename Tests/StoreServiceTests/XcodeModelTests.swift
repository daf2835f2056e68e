import Foundation
import MeowWire
@testable import StoreServiceKit
import Testing
import TestSupport
import class MeowCareCluster.MeowProcess

/// Xcode's model files written into a temporary directory, as Xcode lays them out.
struct XcodeModelFiles {
    let directory = TemporaryDirectory()

    /// `Name.xcdatamodeld` holding each version's `contents`, and `.xccurrentversion` naming
    /// `current` (none when nil).
    func bundle(_ name: String, versions: [String: String], current: String?) throws -> String {
        let bundle = directory.file("\(name).xcdatamodeld")
        for (version, contents) in versions {
            let folder = bundle + "/\(version).xcdatamodel"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            try contents.write(toFile: folder + "/contents", atomically: true, encoding: .utf8)
        }
        if let current {
            try """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0">
            <dict>
            \t<key>_XCCurrentVersionName</key>
            \t<string>\(current).xcdatamodel</string>
            </dict>
            </plist>
            """.write(toFile: bundle + "/.xccurrentversion", atomically: true, encoding: .utf8)
        }
        return bundle
    }

    /// A model's `contents` around `body` (entities and configurations).
    static func contents(_ body: String, cloudKit: Bool = false) -> String {
        """
        <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
        <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0" lastSavedToolsVersion="22758" systemVersion="23G93" \
        minimumToolsVersion="Automatic" sourceLanguage="Swift"\(cloudKit ? " usedWithCloudKit=\"YES\"" : "") userDefinedModelVersionIdentifier="">
        \(body)
        </model>
        """
    }

    /// Loads `body` as a lone version of a bundle named Cats.
    func load(_ body: String, cloudKit: Bool = false, choice: ConfigurationChoice? = nil) throws -> ManagedObjectModel {
        let path = try bundle("Cats", versions: ["Cats": Self.contents(body, cloudKit: cloudKit)], current: nil)
        return try ManagedObjectModel.load(path: path, configurations: choice)
    }

    /// The message of the model error loading `body` gives (nil: it loaded).
    func error(_ body: String, cloudKit: Bool = false, choice: ConfigurationChoice? = nil) -> String? {
        do {
            _ = try load(body, cloudKit: cloudKit, choice: choice)
            return nil
        } catch let error as ModelError {
            return error.message
        } catch {
            return "\(error)"
        }
    }
}

@Suite("Models from Xcode")
struct XcodeModelTests {
    static let version1 = """
        <entity name="Cat" representedClassName="Cat" syncable="YES" codeGenerationType="class">
            <attribute name="name" optional="YES" attributeType="String"/>
        </entity>
        """
    static let version2 = """
        <entity name="Cat" representedClassName="Cat" elementID="Kitty" versionHashModifier="2" syncable="YES" codeGenerationType="class">
            <attribute name="name" optional="YES" attributeType="String" elementID="title"/>
            <attribute name="lives" attributeType="Integer 64" defaultValueString="9" usesScalarValueType="YES"/>
            <attribute name="weight" optional="YES" attributeType="Double" defaultValueString="4.5" usesScalarValueType="YES"/>
            <attribute name="indoor" optional="YES" attributeType="Boolean" defaultValueString="YES" usesScalarValueType="YES"/>
            <attribute name="born" optional="YES" attributeType="Date" defaultDateTimeInterval="0" usesScalarValueType="NO" preserveAfterDeletion="YES"/>
            <relationship name="toys" optional="YES" toMany="YES" deletionRule="Cascade" destinationEntity="Toy" inverseName="cat" inverseEntity="Toy"/>
            <fetchIndex name="byName">
                <fetchIndexElement property="name" type="Binary" order="ascending"/>
            </fetchIndex>
        </entity>
        <entity name="Toy" representedClassName="Toy" syncable="YES" codeGenerationType="class">
            <relationship name="cat" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Cat" inverseName="toys" inverseEntity="Cat" versionHashModifier="v"/>
        </entity>
        <configuration name="Private" usedWithCloudKit="YES">
            <memberEntity name="Cat"/>
            <memberEntity name="Toy"/>
        </configuration>
        <configuration name="Shared" usedWithCloudKit="YES">
            <memberEntity name="Cat"/>
            <memberEntity name="Toy"/>
        </configuration>
        """

    @Test("a bundle loads the version .xccurrentversion names, with Xcode's types, defaults, flags, renaming identifiers and configurations")
    func aBundleLoadsItsCurrentVersion() throws {
        let files = XcodeModelFiles()
        let path = try files.bundle("Cats", versions: ["Cats": XcodeModelFiles.contents(Self.version1),
                                                      "Cats 2": XcodeModelFiles.contents(Self.version2)], current: "Cats 2")
        let model = try ManagedObjectModel.load(path: path)
        #expect(model.name == "Cats", "a version takes its bundle's name")
        let cat = try #require(model.entity(named: "Cat"))
        #expect(cat.renamingIdentifier == "Kitty")
        #expect(cat.versionHashModifier == "2")
        #expect(cat.attribute("name")?.renamingIdentifier == "title")
        #expect(cat.attribute("name")?.optional == true)
        #expect(cat.attribute("lives")?.optional == false, "no optional flag is Xcode's non-optional")
        #expect(cat.attribute("lives")?.type == .integer)
        #expect(cat.attribute("lives")?.defaultValue == 9)
        #expect(cat.attribute("weight")?.defaultValue == 4.5)
        #expect(cat.attribute("indoor")?.defaultValue == true)
        #expect(cat.attribute("born")?.defaultValue == "2001-01-01T00:00:00.000Z", "Xcode's dates count from 2001")
        #expect(cat.attribute("born")?.preservesValueInHistoryOnDeletion == true)
        #expect(cat.relationship("toys")?.toMany == true)
        #expect(cat.relationship("toys")?.deleteRule == .cascade)
        #expect(cat.indexes == [["name"]])
        #expect(model.entity(named: "Toy")?.relationship("cat")?.versionHashModifier == "v")
        #expect(model.configurations.map(\.name) == ["Private", "Shared"])
        #expect(model.configurations.allSatisfy { $0.usedWithCloudKit == true && $0.entities == ["Cat", "Toy"] })

        // The lone .xcdatamodel loads the same, and so does the JSON it prints.
        let version = try ManagedObjectModel.load(path: path + "/Cats 2.xcdatamodel")
        #expect(version.jsonText == model.jsonText)
        let reloaded = try ManagedObjectModel.load(json: Data(model.jsonText.utf8))
        #expect(reloaded.jsonText == model.jsonText)
        #expect(model.jsonText.contains(#"{"name": "name", "type": "string", "renamingIdentifier": "title"}"#), "\(model.jsonText)")
    }

    @Test("without .xccurrentversion a bundle's only version is current; with several it is an error naming them")
    func currentVersionRules() throws {
        let files = XcodeModelFiles()
        let one = try files.bundle("One", versions: ["One": XcodeModelFiles.contents(Self.version1)], current: nil)
        #expect(try ManagedObjectModel.load(path: one).entity(named: "Cat") != nil)
        let two = try files.bundle("Two", versions: ["A": XcodeModelFiles.contents(Self.version1), "B": XcodeModelFiles.contents(Self.version1)],
                                   current: nil)
        #expect(throws: ModelError.self) { try ManagedObjectModel.load(path: two) }
        #expect(Self.message { try ManagedObjectModel.load(path: two) }?.contains("2 model versions (A.xcdatamodel, B.xcdatamodel)") == true)
        let wrong = try files.bundle("Wrong", versions: ["A": XcodeModelFiles.contents(Self.version1)], current: "Z")
        #expect(Self.message { try ManagedObjectModel.load(path: wrong) }?.contains("names Z.xcdatamodel as the current version") == true)
    }

    @Test("configurations: Private and Shared by name, every entity in both without any, else --configurations (Default: every entity)")
    func configurationsMapToTheTwoStores() throws {
        let files = XcodeModelFiles()
        let entities = """
            <entity name="Cat" syncable="YES"><attribute name="name" optional="YES" attributeType="String"/></entity>
            <entity name="Note" syncable="YES"><attribute name="text" optional="YES" attributeType="String"/></entity>
            """
        let plain = try files.load(entities, cloudKit: true)
        #expect(plain.configurations.map(\.name) == ["Private", "Shared"])
        #expect(plain.configurations.allSatisfy { $0.entities == ["Cat", "Note"] && $0.usedWithCloudKit == true })

        let named = entities + """
            <configuration name="Cloud" usedWithCloudKit="YES"><memberEntity name="Cat"/></configuration>
            <configuration name="Local"><memberEntity name="Note"/></configuration>
            """
        let unnamed = try #require(files.error(named))
        #expect(unnamed.contains("The model's configurations are Cloud, Local: say which one the private store and which the shared store uses with --configurations PRIVATE,SHARED"), "\(unnamed)")
        let chosen = try files.load(named, choice: ConfigurationChoice(privateName: "Default", sharedName: "Cloud"))
        #expect(chosen.configurations.map(\.name) == ["Default", "Cloud"])
        #expect(chosen.configurations[0].entities == ["Cat", "Note"])
        #expect(chosen.configurations[1].entities == ["Cat"])
        #expect(chosen.configurations[1].usedWithCloudKit == true)
        let same = try files.load(named, choice: ConfigurationChoice(privateName: "Cloud", sharedName: "Cloud"))
        #expect(same.configurations.map(\.name) == ["Private", "Shared"], "one configuration for both stores: the stores take their scopes' names")
        #expect(files.error(named, choice: ConfigurationChoice(privateName: "Cloud", sharedName: "Nope"))?
            .contains("--configurations: the model has no configuration 'Nope' (it has Default, Cloud, Local).") == true)
    }

    @Test("bad Xcode models: an error naming the file, the entity and the property")
    func badXcodeModelsNameTheEntityAndProperty() throws {
        let files = XcodeModelFiles()
        let malformed = files.error("<entity name=\"Cat\"><attribute name=\"x\"</entity>")
        #expect(malformed?.contains("is not well-formed XML") == true, "\(malformed ?? "")")
        let unknown = try #require(files.error(#"<entity name="Cat"><attribute name="spots" optional="YES" attributeType="Spots"/></entity>"#))
        #expect(unknown.contains("Cat.spots: unknown attribute type 'Spots'"), "\(unknown)")
        #expect(unknown.contains("Cats.xcdatamodeld/Cats.xcdatamodel"), "the message names the version it read: \(unknown)")
        #expect(files.error(#"<entity name="Cat"><attribute name="x" optional="YES" attributeType="Undefined"/></entity>"#)?
            .contains("Cat.x: the attribute has the Undefined type") == true)
        let dangling = try #require(files.error("""
            <entity name="Cat"><relationship name="toys" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Toy" inverseName="owner" inverseEntity="Toy"/></entity>
            <entity name="Toy"><attribute name="name" optional="YES" attributeType="String"/></entity>
            """))
        #expect(dangling.contains("Cat.toys: inverse 'owner' is not a relationship of Toy."), "\(dangling)")
        #expect(files.error(#"<entity name="Cat"><relationship name="owner" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Human"/></entity>"#)?
            .contains("Cat.owner: destination entity 'Human' is not in the model.") == true)
        #expect(files.error(#"<entity name="Kitten" parentEntity="Cat"/><entity name="Cat"/>"#)?.contains("Kitten: entity inheritance (parent entity Cat)") == true)
        #expect(files.error(#"<entity name="Cat"><attribute name="mood" optional="YES" transient="YES" attributeType="String"/></entity>"#)?
            .contains("Cat.mood: transient attributes are not supported") == true)
        // "Used with CloudKit" holds the model to CloudKit's rules as it loads, mirrored or not.
        let cloudKit = try #require(files.error(#"<entity name="Cat"><attribute name="name" attributeType="String"/></entity>"#, cloudKit: true))
        #expect(cloudKit.contains("configuration Private is marked usedWithCloudKit"), "\(cloudKit)")
        #expect(cloudKit.contains("Cat: name"), "\(cloudKit)")
        #expect(files.error(#"<entity name="Cat"><attribute name="name" attributeType="String"/></entity>"#) == nil,
                "without the mark, a non-optional attribute without a default loads")
    }

    @Test("a JSON model's errors name the entity and property too")
    func jsonErrorsNameThePlace() throws {
        let text = #"{"name": "Cats", "entities": [{"name": "Cat", "attributes": [{"name": "spots", "type": "dots"}]}], "configurations": []}"#
        let message = Self.message { try ManagedObjectModel.load(json: Data(text.utf8)) }
        #expect(message?.hasPrefix("The model file is not a valid model: Cat.spots: entities[0].attributes[0].type") == true, "\(message ?? "nil")")
    }

    @Test("the service prints and checks an Xcode model, and a bad one stops start-up with the place on stderr")
    func theServiceTakesAnXcodeModel() async throws {
        let files = XcodeModelFiles()
        let path = try files.bundle("Cats", versions: ["Cats 2": XcodeModelFiles.contents(Self.version2)], current: "Cats 2")
        let printed = try await MeowProcess.run("store-service", ["--print-model", "--model", path], timeout: .seconds(20))
        #expect(printed.status == 0)
        #expect(try ManagedObjectModel.load(json: Data(printed.stdout.utf8)).jsonText == ManagedObjectModel.load(path: path).jsonText)
        let checked = try await MeowProcess.run("store-service", ["--check-model", "--model", path], timeout: .seconds(20))
        #expect(checked.status == 0)
        #expect(checked.stdout.contains("The Cats model can be mirrored with CloudKit"))
        let bad = try files.bundle("Bad", versions: ["Bad": XcodeModelFiles.contents(#"<entity name="Cat"><attribute name="spots" attributeType="Dots"/></entity>"#)],
                                   current: nil)
        let started = try await MeowProcess.run("store-service", ["--socket", files.directory.file("s.sock"), "--in-memory", "--model", bad], timeout: .seconds(20))
        #expect(started.status == 78)
        #expect(started.stderr.contains("bad model:") && started.stderr.contains("Cat.spots: unknown attribute type 'Dots'"), "\(started.stderr)")
        #expect(!FileManager.default.fileExists(atPath: files.directory.file("s.sock")))
    }

    static func message(_ body: () throws -> Any) -> String? {
        do {
            _ = try body()
            return nil
        } catch let error as ModelError {
            return error.message
        } catch {
            return "\(error)"
        }
    }
}
