import Foundation

/// Where a model comes from: a `.xcdatamodeld` bundle (its current version), a `.xcdatamodel`
/// directory (its `contents` XML), or a JSON model file. The three load into one model; what
/// Xcode's forms hold beyond it is converted or refused by `XcodeModelConversion`.
extension ManagedObjectModel {
    /// Loads the model at `path`. `choice` picks an Xcode model's two store configurations; a
    /// JSON model names its own (`scope`), so a choice for one is refused.
    public static func load(path: String, configurations choice: ConfigurationChoice? = nil) throws(ModelError) -> ManagedObjectModel {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw ModelError("\(path): no such file or directory; --model takes a JSON model, an .xcdatamodeld bundle or an .xcdatamodel directory.")
        }
        let model: ManagedObjectModel
        if isDirectory.boolValue {
            let url = URL(fileURLWithPath: path)
            switch url.pathExtension {
            case "xcdatamodeld": model = try loadBundle(url, choice: choice)
            case "xcdatamodel": model = try loadVersion(url, name: modelName(of: url), choice: choice)
            default: throw ModelError("\(path) is a directory but not an .xcdatamodeld bundle or an .xcdatamodel.")
            }
        } else {
            guard choice == nil else {
                throw ModelError("\(path): --configurations is for Xcode models; a JSON model names its stores' configurations by scope.")
            }
            guard let data = FileManager.default.contents(atPath: path) else {
                throw ModelError("Cannot read the model file \(path); check the path and its permissions.")
            }
            do {
                model = try load(json: data)
            } catch {
                throw ModelError("\(path): \(error.message)")
            }
        }
        try model.checkUsedWithCloudKit()
        return model
    }

    /// The bundle's current version: the one `.xccurrentversion` names (a property list with
    /// `_XCCurrentVersionName`), or the only version when there is no such file.
    private static func loadBundle(_ bundle: URL, choice: ConfigurationChoice?) throws(ModelError) -> ManagedObjectModel {
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: bundle.path)) ?? [])
            .filter { $0.hasSuffix(".xcdatamodel") }.sorted()
        let marker = bundle.appendingPathComponent(".xccurrentversion")
        let current: String
        if let data = FileManager.default.contents(atPath: marker.path) {
            guard let plist = try? PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any],
                  let name = plist["_XCCurrentVersionName"] as? String else {
                throw ModelError("\(marker.path) does not name the current version (_XCCurrentVersionName); set it in Xcode (Editor ▸ Add Model Version… then the Model Version in the inspector).")
            }
            guard versions.contains(name) else {
                throw ModelError("\(marker.path) names \(name) as the current version, but the bundle has \(versions.isEmpty ? "no versions" : versions.joined(separator: ", ")).")
            }
            current = name
        } else {
            guard versions.count == 1, let only = versions.first else {
                throw ModelError("\(bundle.path) has \(versions.count) model versions (\(versions.joined(separator: ", "))) and no .xccurrentversion saying which is current.")
            }
            current = only
        }
        return try loadVersion(bundle.appendingPathComponent(current), name: bundle.deletingPathExtension().lastPathComponent, choice: choice)
    }

    private static func loadVersion(_ version: URL, name: String, choice: ConfigurationChoice?) throws(ModelError) -> ManagedObjectModel {
        let file = version.appendingPathComponent("contents")
        guard let data = FileManager.default.contents(atPath: file.path) else {
            throw ModelError("\(file.path): cannot be read; an .xcdatamodel directory holds its model in a file named contents.")
        }
        let model: ManagedObjectModel
        do {
            let contents = try XcodeModelContents.parse(data, file: "contents")
            let converted = try XcodeModelConversion.model(contents, name: name, choice: choice)
            try converted.validate()
            model = try converted.addingManyToManyLinks()
        } catch {
            throw ModelError("\(version.path): \(error.message)")
        }
        return model
    }

    /// A version directory inside a bundle takes the bundle's name (versions are often named
    /// "Model 2"); a lone one its own.
    private static func modelName(of version: URL) -> String {
        let parent = version.deletingLastPathComponent()
        return parent.pathExtension == "xcdatamodeld" ? parent.deletingPathExtension().lastPathComponent
            : version.deletingPathExtension().lastPathComponent
    }

    /// A configuration marked "Used with CloudKit" is held to CloudKit's rules when the model
    /// loads, as Xcode's model compiler holds it, whether or not this device mirrors.
    func checkUsedWithCloudKit() throws(ModelError) {
        for configuration in configurations where configuration.usedWithCloudKit == true {
            if let reason = CloudKitModelRules.failureReason(model: self, configuration: configuration) {
                throw ModelError("configuration \(configuration.name) is marked usedWithCloudKit, and CloudKit's rules refuse it: \(reason)")
            }
        }
    }
}
