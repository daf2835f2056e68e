import MeowWire
import ServiceRuntime

/// One iCloud container as the server sees it: every user's private and shared databases.
public final class SyncService: ServiceDefinition {
    public let name = "sync-service"
    public let version = MeowVersion.current
    public static let versionString = MeowVersion.current
    public let configuration: ServiceConfiguration

    public init(configuration: ServiceConfiguration) {
        self.configuration = configuration
    }

    public static let commandLine = CommandLineParser(
        command: "sync-service",
        summary: "a local CloudKit: private and shared databases for many users, over a Unix socket",
        options: ServiceConfiguration.commandLineOptions)

    public func registerOperations(in registry: inout OperationRegistry) {}
}
