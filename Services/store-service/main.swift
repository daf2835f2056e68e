import ServiceRuntime
import StoreServiceKit
import CloudMirrorKit

let commandLine = CommandLineParser(command: "store-service", summary: StoreService.summary,
                                    options: StoreService.commandLineOptions + MirrorOptions.commandLineOptions)
let options = ServiceMain.parseOptions(commandLine, version: StoreService.versionString)

/// The store and mirror options and the model, or the exit a mistake in them calls for.
func storeOptionsAndModel() -> (StoreOptions, MirrorOptions?, ManagedObjectModel) {
    let storeOptions: StoreOptions
    let mirrorOptions: MirrorOptions?
    do {
        storeOptions = try StoreOptions.from(options)
        mirrorOptions = try MirrorOptions.from(options)
    } catch {
        ServiceMain.printError("store-service: \(error.message)")
        exitNow(64)
    }
    do {
        return (storeOptions, mirrorOptions, try storeOptions.loadModel())
    } catch {
        ServiceMain.printError("store-service: bad model: \(error.message)")
        exitNow(78)
    }
}

if options.has("print-model") {
    // MeowCare's text as written (a commented template); any other model in the JSON form.
    guard options.value("model") != nil else {
        print(StoreServiceKit.ManagedObjectModel.meowCareJSON)
        exitNow(0)
    }
    print(storeOptionsAndModel().2.jsonText)
    exitNow(0)
}
if options.has("check-model") {
    // "Will this model load on a device with iCloud?" without starting anything.
    let (_, _, model) = storeOptionsAndModel()
    let refusals = CloudKitModelRules.refusals(of: model)
    for refusal in refusals { print("store-service: \(refusal)") }
    if !refusals.isEmpty { exitNow(78) }
    print("The \(model.name) model can be mirrored with CloudKit: its stores \(model.configurations.map(\.name).joined(separator: " and ")) pass NSPersistentCloudKitContainer's model check.")
    exitNow(0)
}
let configuration = ServiceMain.configuration(options, command: "store-service")
let (storeOptions, mirrorOptions, model) = storeOptionsAndModel()
// NSPersistentCloudKitContainer refuses to load a mirrored store whose model breaks CloudKit's
// rules; a device would fail here, so the service does too (without mirroring, any model loads).
if mirrorOptions != nil {
    let refusals = CloudKitModelRules.refusals(of: model)
    for refusal in refusals { ServiceMain.printError("store-service: \(refusal)") }
    if !refusals.isEmpty { exitNow(78) }
}
if let unsupported = model.unsupportedFeatures() {
    ServiceMain.printError("store-service: bad model: \(unsupported)")
    exitNow(78)
}
let service = StoreService(configuration: configuration, options: storeOptions, model: model,
                           companion: CloudMirrorCompanion(options: mirrorOptions))
ServiceMain.run(service, configuration: configuration)
