import ServiceRuntime
import StoreServiceKit

let options = ServiceMain.parseOptions(StoreService.commandLine, version: StoreService.versionString)
let configuration = ServiceMain.configuration(options, command: "store-service")
ServiceMain.run(StoreService(configuration: configuration), configuration: configuration)
