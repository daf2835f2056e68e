import CloudWire
import Foundation
import MeowWire
import ServiceRuntime
import StoreServiceKit
import StoreWire

/// NSPersistentCloudKitContainer.Event, published as `eventChanged` on the `cloudKitEvents`
/// topic: once when a setup, import or export of a store starts (no `endDate`), and once more,
/// with the same identifier, when it ends (`endDate`, `succeeded`, `error`). Apps watch
/// `eventChangedNotification` for exactly this (a sync indicator, an error banner); a test can
/// wait for an export's end instead of polling `sync.status`.
struct CloudKitEventNotice: Codable, Sendable {
    enum Kind: String, Codable, Sendable { case setup, `import`, export }

    var identifier: String
    var store: String
    var storeIdentifier: String
    var type: Kind
    var startDate: String
    var endDate: String?
    var succeeded: Bool
    var error: WireError?

    /// Every member written, `null` included (an unended event says `"endDate": null`).
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(identifier, forKey: .identifier)
        try container.encode(store, forKey: .store)
        try container.encode(storeIdentifier, forKey: .storeIdentifier)
        try container.encode(type, forKey: .type)
        try container.encode(startDate, forKey: .startDate)
        try container.encode(endDate, forKey: .endDate)
        try container.encode(succeeded, forKey: .succeeded)
        try container.encode(error.map { ["code": $0.code.rawValue, "message": $0.message] }, forKey: .error)
    }
}

extension MirrorEngine {
    static let cloudKitEventsTopic = "cloudKitEvents"
    static let eventChangedEvent = "eventChanged"

    /// One event in progress: `end` publishes its second notice (only if the first went out).
    final class CloudKitEvent {
        private var notice: CloudKitEventNotice
        private let mirror: MirrorEngine
        private(set) var begun = false
        /// Set when some items failed and the rest went on: the event ends unsucceeded with it.
        var partialFailure: WireError?

        init(_ type: CloudKitEventNotice.Kind, store: StoreIdentity, mirror: MirrorEngine) {
            self.mirror = mirror
            notice = CloudKitEventNotice(identifier: UUID().uuidString, store: store.name, storeIdentifier: store.uuid, type: type,
                                         startDate: ISOTime.string(seconds: mirror.clock.seconds()), endDate: nil,
                                         succeeded: false, error: nil)
        }

        /// Publishes the start (once; later calls do nothing).
        func begin() {
            guard !begun else { return }
            begun = true
            notice.startDate = ISOTime.string(seconds: mirror.clock.seconds())
            mirror.publish(notice)
        }

        /// Publishes the end: succeeded without `error`. An event never begun (an export that
        /// found nothing to send, or failed before its first batch: a connection that could not
        /// be made is the setup's failure) publishes nothing.
        func end(_ error: (any Error)?) {
            guard begun else { return }
            notice.endDate = ISOTime.string(seconds: mirror.clock.seconds())
            notice.succeeded = error == nil
            notice.error = error.map { ServiceError.wire(of: $0) ?? WireError(.internalError, "\($0)") }
            mirror.publish(notice)
        }
    }

    /// `body` as one event of `type` for the store of `scope` (begun at once unless `lazily`:
    /// then `body` begins it when it finds work, and an attempt with nothing to do is no event).
    func event<T>(_ type: CloudKitEventNotice.Kind, scope: StoreScope, lazily: Bool = false,
                  _ body: (CloudKitEvent?) throws -> T) throws -> T {
        guard let store = storeIdentities.first(where: { $0.scope == scope }) else { return try body(nil) }
        let event = CloudKitEvent(type, store: store, mirror: self)
        if !lazily { event.begin() }
        do {
            let result = try body(event)
            event.end(event.partialFailure)
            return result
        } catch {
            event.end(error)
            throw error
        }
    }

    fileprivate func publish(_ notice: CloudKitEventNotice) {
        stores.announce(topic: Self.cloudKitEventsTopic, event: Self.eventChangedEvent, data: notice)
    }
}
