import ServiceRuntime
import StoreServiceKit

let options = ServiceMain.parseOptions(StoreService.commandLine, version: StoreService.versionString)
if options.has("print-model") {
    print(StoreServiceKit.ManagedObjectModel.meowCareJSON)
    exitNow(0)
}
let configuration = ServiceMain.configuration(options, command: "store-service")
let storeOptions: StoreOptions
do {
    storeOptions = try StoreOptions.from(options)
} catch {
    ServiceMain.printError("store-service: \(error.message)")
    exitNow(64)
}
let model: ManagedObjectModel
do {
    model = try storeOptions.loadModel()
} catch {
    ServiceMain.printError("store-service: bad model: \(error.message)")
    exitNow(78)
}
// NSPersistentCloudKitContainer refuses to load a mirrored store whose model breaks CloudKit's
// rules; a device would fail here, so the service does too (without mirroring, any model loads).
if storeOptions.mirror != nil, let refusal = CloudKitModelRules.refusal(of: model) {
    ServiceMain.printError("store-service: \(refusal)")
    exitNow(78)
}
ServiceMain.run(StoreService(configuration: configuration, options: storeOptions, model: model), configuration: configuration)
