import FoundationEssentials
import MeowWire
import ServiceRuntime
import StoreWire

/// The store-service's own command-line options.
public struct StoreOptions: Sendable {
    public var modelPath: String?
    /// An Xcode model's configurations for the private and the shared store (`--configurations`).
    public var modelConfigurations: ConfigurationChoice?
    public var routing: RoutingMode = .deterministic
    public var orphanRepairAtStart = true
    /// The order the stores are loaded in (legacy routing takes the first that holds the entity).
    public var loadOrder: [StoreScope] = [.private, .shared]
    /// Binary Data and Transformable values larger than this go to the cloud as assets
    /// (`CD_<name>_ckAsset`), as NSPersistentCloudKitContainer keeps records under CloudKit's
    /// 1 MB: a quarter of it leaves room for the record's other fields.
    public var assetThreshold = StoreOptions.defaultAssetThreshold
    public static let defaultAssetThreshold = 256 * 1024

    public init() {}

    public static let commandLineOptions: [CommandLineParser.Option] = [
        .init("model", value: "PATH", help: "Load the data model from a JSON model file, an Xcode .xcdatamodeld bundle or an .xcdatamodel instead of the embedded MeowCare model."),
        .init("configurations", value: "PRIVATE,SHARED", help: "The Xcode model's configurations for the private and the shared store (Default: every entity)."),
        .init("print-model", help: "Print the model (--model, else MeowCare's) in the JSON form and exit."),
        .init("check-model", help: "Check the model (--model, else MeowCare's) as a mirrored store's load does: print CloudKit's refusal and exit 78, or exit 0."),
        .init("routing", value: "MODE", help: "Where unassigned new objects go: deterministic (default: related object's store, else private), strict (refuse ambiguous inserts) or legacy (Core Data's load order)."),
        .init("load-order", value: "ORDER", help: "private,shared (default) or shared,private: the order the stores are loaded in."),
        .init("asset-threshold", value: "BYTES", help: "Send binary values larger than this as CloudKit assets (CD_<name>_ckAsset; default 262144)."),
        .init("no-orphan-repair", help: "Do not attach orphans to the default session at start-up (repair.orphans still works)."),
    ]

    /// Reads the options above; a mistake is a usage error (exit 64).
    public static func from(_ options: ParsedOptions) throws(UsageError) -> StoreOptions {
        var result = StoreOptions()
        result.modelPath = options.value("model")
        if let text = options.value("configurations") {
            let names = text.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            guard names.count == 2, names.allSatisfy({ !$0.isEmpty }) else {
                throw UsageError("--configurations takes two configuration names, PRIVATE,SHARED (Default for every entity); got '\(text)'.")
            }
            guard result.modelPath != nil else { throw UsageError("--configurations needs --model (an Xcode model).") }
            result.modelConfigurations = ConfigurationChoice(privateName: names[0], sharedName: names[1])
        }
        if let text = options.value("routing") {
            guard let mode = RoutingMode(rawValue: text) else {
                throw UsageError("--routing must be deterministic, strict or legacy; got '\(text)'.")
            }
            result.routing = mode
        }
        if let text = options.value("load-order") {
            switch text {
            case "private,shared": result.loadOrder = [.private, .shared]
            case "shared,private": result.loadOrder = [.shared, .private]
            default: throw UsageError("--load-order must be private,shared or shared,private; got '\(text)'.")
            }
        }
        result.orphanRepairAtStart = !options.has("no-orphan-repair")
        if let text = options.value("asset-threshold") {
            guard let bytes = Int(text), bytes >= 0 else { throw UsageError("--asset-threshold takes a number of bytes; got '\(text)'.") }
            result.assetThreshold = bytes
        }
        return result
    }

    /// The model: the one given with --model (any of its forms), or MeowCare's.
    public func loadModel() throws(ModelError) -> ManagedObjectModel {
        guard let modelPath else { return .meowCare() }
        return try ManagedObjectModel.load(path: modelPath, configurations: modelConfigurations)
    }
}
