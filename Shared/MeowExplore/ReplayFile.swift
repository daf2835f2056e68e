import MeowWire

/// A schedule to run again exactly: the seed (it names the run's objects), the flow as shrunk
/// and the choices. A failure writes one (`meowctl explore`, MeowCareTesting's attachments);
/// `meowctl explore --replay-choices FILE` and `Explorer.replay(_:choices:seed:)` run it.
public struct ReplayFile: Codable, Sendable {
    public var seed: UInt64
    /// The flow as the shrunk schedule ran it (steps the shrinker dropped are gone); absent:
    /// the flow file's.
    public var flow: Flow?
    public var choices: [Choice]
    /// The check the schedule failed, for the reader.
    public var check: String?

    public init(seed: UInt64, flow: Flow?, choices: [Choice], check: String?) {
        self.seed = seed
        self.flow = flow
        self.choices = choices
        self.check = check
    }

    /// The shrunk schedule of a failure.
    public init(_ failure: ExploreFailure) {
        self.init(seed: failure.seed, flow: failure.shrunk.flow, choices: failure.shrunk.choices, check: failure.check)
    }

    /// The file's text: pretty-printed, keys sorted, so two replays of one failure diff cleanly.
    public func text() throws -> String {
        try JSONTextEncoder(options: [.prettyPrinted, .sortedKeys]).text(self)
    }
}
