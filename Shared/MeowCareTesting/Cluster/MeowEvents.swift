/// An event a service pushed: `remoteChange`, `changeReverted`, `importRefused`,
/// `eventChanged` (a device), `databaseChanged` (the cloud), `shuttingDown`, `resyncRequired`.
public struct MeowEvent: Sendable, Hashable {
    public var name: String
    public var seq: UInt64
    public var data: JSONValue
}

/// The events of one subscription, in the order the service sent them; it ends when the
/// cluster stops.
///
/// ```swift
/// let events = try await participant.events(["remoteChange"])
/// let reverted = await events.first { $0.name == "changeReverted" }
/// ```
public struct MeowEvents: AsyncSequence, Sendable {
    public typealias Element = MeowEvent
    private let stream: AsyncStream<WireEvent>

    init(_ stream: AsyncStream<WireEvent>) { self.stream = stream }

    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: AsyncStream<WireEvent>.AsyncIterator
        public mutating func next() async -> MeowEvent? {
            guard let event = await base.next() else { return nil }
            return MeowEvent(name: event.name, seq: event.seq, data: event.data)
        }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: stream.makeAsyncIterator()) }
}
