import FoundationEssentials
import MeowWire
import ServiceRuntime

/// The store-service's own command-line options.
public struct StoreOptions: Sendable {
    public var modelPath: String?
    public var routing: RoutingMode = .deterministic
    public var orphanRepairAtStart = true
    /// The order the stores are loaded in (legacy routing takes the first that holds the entity).
    public var loadOrder: [StoreScope] = [.private, .shared]
    /// Cloud mirroring (`--sync-socket`), nil when off.
    public var mirror: MirrorOptions?

    public init() {}

    public static let commandLineOptions: [CommandLineParser.Option] = [
        .init("model", value: "FILE", help: "Load the data model from this JSON file instead of the embedded MeowCare model."),
        .init("print-model", help: "Print the embedded MeowCare model (a model-file template) and exit."),
        .init("check-model", help: "Check the model (--model, else MeowCare's) as a mirrored store's load does: print CloudKit's refusal and exit 78, or exit 0."),
        .init("routing", value: "MODE", help: "Where unassigned new objects go: deterministic (default: related object's store, else private), strict (refuse ambiguous inserts) or legacy (Core Data's load order)."),
        .init("load-order", value: "ORDER", help: "private,shared (default) or shared,private: the order the stores are loaded in."),
        .init("no-orphan-repair", help: "Do not attach orphans to the default session at start-up (repair.orphans still works)."),
    ]

    /// Reads the options above; a mistake is a usage error (exit 64).
    public static func from(_ options: ParsedOptions) throws(UsageError) -> StoreOptions {
        var result = StoreOptions()
        result.modelPath = options.value("model")
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
        result.mirror = try MirrorOptions.from(options)
        return result
    }

    /// The model: the file given with --model, or MeowCare's.
    public func loadModel() throws(ModelError) -> ManagedObjectModel {
        guard let modelPath else { return .meowCare() }
        guard let data = FileManager.default.contents(atPath: modelPath) else {
            throw ModelError("Cannot read the model file \(modelPath); check the path and its permissions.")
        }
        do {
            return try ManagedObjectModel.load(json: data)
        } catch {
            throw ModelError("\(modelPath): \(error.message)")
        }
    }
}
