import ServiceRuntime
import SyncServiceKit

let options = ServiceMain.parseOptions(SyncService.commandLine, version: SyncService.versionString)
let configuration = ServiceMain.configuration(options, command: "sync-service")
let settings = SyncService.settingsOrExit(options)
ServiceMain.run(SyncService(configuration: configuration, settings: settings), configuration: configuration)
