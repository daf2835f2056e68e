import ServiceRuntime
import SyncServiceKit

let options = ServiceMain.parseOptions(SyncService.commandLine, version: SyncService.versionString)
let configuration = ServiceMain.configuration(options, command: "sync-service")
ServiceMain.run(SyncService(configuration: configuration), configuration: configuration)
