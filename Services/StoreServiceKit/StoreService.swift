import MeowWire
import ServiceRuntime

/// One device's Core Data stack: its private and shared stores, served over the wire.
public final class StoreService: ServiceDefinition {
    public let name = "store-service"
    public let version = MeowVersion.current
    public static let versionString = MeowVersion.current
    public let configuration: ServiceConfiguration

    public init(configuration: ServiceConfiguration) {
        self.configuration = configuration
    }

    public static let commandLine = CommandLineParser(
        command: "store-service",
        summary: "one device's Core Data stack (a private and a shared store) over a Unix socket",
        options: ServiceConfiguration.commandLineOptions)

    public func registerOperations(in registry: inout OperationRegistry) {}
}
