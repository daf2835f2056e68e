/// One decision of a schedule: what the explorer released next. A run is its list of choices;
/// replaying the list gives the same run without the generator that drew it. Each choice has a
/// one-line text form (`step A`, `send B`, `push P lost`, `fault drop-after-commit A`), which is
/// also its JSON form, so a printed schedule can be pasted back.
public enum Choice: Sendable, Equatable, Hashable, Codable, CustomStringConvertible {
    /// The actor's next step.
    case step(actor: String)
    /// `sync.send` on the device.
    case send(device: String)
    /// `sync.fetch` on the device (the app fetching on its own).
    case fetch(device: String)
    /// The device's pending push: delivered (it fetches) or lost (it does not).
    case push(device: String, delivered: Bool)
    /// A fault armed or performed now.
    case fault(Fault)
    /// The device's held send is let through (the "deliver" of hold-and-deliver).
    case release(device: String)

    public var description: String {
        switch self {
        case let .step(actor): "step \(actor)"
        case let .send(device): "send \(device)"
        case let .fetch(device): "fetch \(device)"
        case let .push(device, delivered): "push \(device) \(delivered ? "delivered" : "lost")"
        case let .fault(fault): "fault \(fault)"
        case let .release(device): "release \(device)"
        }
    }

    /// Reads the text form back; nil for text that is not a choice.
    public init?(_ text: String) {
        let words = text.split(separator: " ").map(String.init)
        guard let verb = words.first else { return nil }
        switch (verb, words.count) {
        case ("step", 2): self = .step(actor: words[1])
        case ("send", 2): self = .send(device: words[1])
        case ("fetch", 2): self = .fetch(device: words[1])
        case ("release", 2): self = .release(device: words[1])
        case ("push", 3) where ["delivered", "lost"].contains(words[2]): self = .push(device: words[1], delivered: words[2] == "delivered")
        case ("fault", _):
            guard let fault = Fault(Array(words.dropFirst())) else { return nil }
            self = .fault(fault)
        default: return nil
        }
    }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let choice = Choice(text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription:
                "\"\(text)\" is not a schedule choice; expected e.g. \"step A\", \"send A\", \"fetch A\", \"push A delivered\", \"push A lost\", \"release A\" or \"fault kill A\""))
        }
        self = choice
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }

    /// The device the choice acts on, if one.
    var device: String? {
        switch self {
        case let .step(actor): actor
        case let .send(device), let .fetch(device), let .push(device, _), let .release(device): device
        case let .fault(fault): fault.device
        }
    }

    /// Whether the choice is a fault (the shrinker drops these first).
    public var isFault: Bool { if case .fault = self { true } else { false } }
}

/// The faults a schedule can hold, at the points the pair already names.
public enum Fault: Sendable, Equatable, Hashable, CustomStringConvertible {
    /// The user's next `records.modify` commits and its reply is lost.
    case dropAfterCommit(device: String)
    /// The device's send is held at the cloud (before commit) while other moves go on; a later
    /// `release` delivers it.
    case hold(device: String)
    /// kill -9, then a restart (SQLite devices only: an in-memory device's data dies with it).
    case kill(device: String)
    /// The device restarted with `MEOW_CRASH_AT=point`, so its next pass through it kills it;
    /// it is restarted after.
    case crash(device: String, point: String)
    /// The user's next `records.modify` answers `code` (serviceUnavailable, requestRateLimited)
    /// with a retry-after.
    case transient(device: String, code: String, retryAfterSeconds: Int)
    /// The user's next `records.modify` answers zoneBusy.
    case zoneBusy(device: String)
    /// Every change token issued so far expires.
    case tokenExpiry
    /// The device's clock jumps by `seconds` (back when negative).
    case clockJump(device: String, seconds: Int)

    public var description: String {
        switch self {
        case let .dropAfterCommit(device): "drop-after-commit \(device)"
        case let .hold(device): "hold \(device)"
        case let .kill(device): "kill \(device)"
        case let .crash(device, point): "crash \(device) \(point)"
        case let .transient(device, code, seconds): "transient \(device) \(code) \(seconds)"
        case let .zoneBusy(device): "zone-busy \(device)"
        case .tokenExpiry: "token-expiry"
        case let .clockJump(device, seconds): "clock-jump \(device) \(seconds)"
        }
    }

    init?(_ words: [String]) {
        switch (words.first, words.count) {
        case ("drop-after-commit", 2): self = .dropAfterCommit(device: words[1])
        case ("hold", 2): self = .hold(device: words[1])
        case ("kill", 2): self = .kill(device: words[1])
        case ("crash", 3): self = .crash(device: words[1], point: words[2])
        case ("transient", 4):
            guard let seconds = Int(words[3]) else { return nil }
            self = .transient(device: words[1], code: words[2], retryAfterSeconds: seconds)
        case ("zone-busy", 2): self = .zoneBusy(device: words[1])
        case ("token-expiry", 1): self = .tokenExpiry
        case ("clock-jump", 3):
            guard let seconds = Int(words[2]) else { return nil }
            self = .clockJump(device: words[1], seconds: seconds)
        default: return nil
        }
    }

    var device: String? {
        switch self {
        case let .dropAfterCommit(device), let .hold(device), let .kill(device), let .crash(device, _), let .transient(device, _, _),
             let .zoneBusy(device), let .clockJump(device, _): device
        case .tokenExpiry: nil
        }
    }

    var kind: FaultKind {
        switch self {
        case .dropAfterCommit: .dropAfterCommit
        case .hold: .holdAndDeliver
        case .kill: .kill
        case .crash: .crashPoint
        case .transient: .transientError
        case .zoneBusy: .zoneBusy
        case .tokenExpiry: .tokenExpiry
        case .clockJump: .clockJump
        }
    }
}
