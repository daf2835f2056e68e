import MeowCareCluster
import MeowHistory
import MeowWire

/// One run of a flow on a bench: draws (or replays) choices one at a time, releases each as
/// requests to the services, records every request as a `HistoryEntry`, then settles, observes
/// every device and collects the final state. Used by one task only.
final class RunEngine {
    /// Every clock of a run starts here (seconds since 1970), so stamps repeat run after run.
    static let baseTime: Double = 1_800_000_000
    /// A cap on a drawn schedule's length past its steps: sends, fetches, pushes, faults.
    static let extraChoicesPerStep = 6

    let bench: ExploreBench
    let flow: Flow
    let mode: RunMode
    var options: ExploreOptions { bench.options }
    var cluster: MeowCluster { bench.cluster }
    let devices: [String]

    var rng: Xoshiro256
    var choices: [Choice] = []
    var history: [HistoryEntry] = []
    /// Logical time: one tick per invocation and per completion.
    var ticks = 0
    /// The explorer's time in seconds since the run began: one per choice, plus clock jumps.
    var seconds = 0
    var cursor: [Int]
    let uuids: [String: String]
    let entities: [String: String]
    var zones: [String: (zoneName: String, owner: String)] = [:]
    /// A share's real zone name (random, made by the device) → the seeded alias histories carry.
    var zoneAliases: [String: String] = [:]
    var users: [String: String]
    var skew: [String: Int] = [:]
    var dirty: Set<String> = []
    var pushes: Set<String> = []
    var cloudVersion = 0
    var fetchedVersion: [String: Int] = [:]
    /// A send held at the cloud: its history entry is written when it is released, so entries
    /// stay in the order their requests took effect (its `invoke` is when it was sent).
    var held: (device: String, task: Task<Result<JSONValue, MeowCareError>, Never>, invoke: Int, logSeq: Int)?
    var writeSeq = 0
    var logSeq = 0
    /// The request log's last sequence number before the run: its own entries come after.
    var runStartLogSeq = 0
    var startTokens: [String: [String: Int]] = [:]
    /// Each device's context for the run's steps, and the object IDs it has seen (uuid → ID).
    var contexts: [String: MeowContext] = [:]
    var ids: [String: [String: String]] = [:]
    /// Per device, the UUIDs looked up in vain since its last op that may reach the cloud: only
    /// such an op (an import) or the device's own insert can bring the object, so until then
    /// the answer stands.
    var absent: [String: Set<String>] = [:]
    /// The flow's objects an insert (or a team's step) may have made in this run.
    var mayExist: Set<String> = []
    var memories: [String: AppMemory] = [:]
    /// Device → the history entry its mirror's next requests in the log belong to.
    var awaitingRequests: [String: Int] = [:]
    /// What each device showed at its latest observation (the final state reuses the last).
    var lastObserved: [String: [ObservedObject]] = [:]
    /// Devices armed with a crash point, and the point.
    var armed: [String: String] = [:]

    init(bench: ExploreBench, flow: Flow, mode: RunMode) {
        self.bench = bench
        self.flow = flow
        self.mode = mode
        devices = flow.actors.map(\.device)
        rng = Xoshiro256(seed: mode.seed)
        cursor = Array(repeating: 0, count: flow.actors.count)
        var uuids: [String: String] = [:]
        var entities: [String: String] = [:]
        for actor in flow.actors {
            for step in actor.steps {
                if case let .insert(object, entity, _, _, _) = step.kind, entities[object] == nil {
                    entities[object] = entity
                    uuids[object] = Self.seededUUID(seed: mode.seed, name: "object:" + object)
                }
            }
        }
        self.uuids = uuids
        self.entities = entities
        users = bench.homeUsers
    }

    /// A UUID drawn from the seed and a name: the same object gets the same UUID in every
    /// replay, and shrinking (which drops other objects) does not change it.
    static func seededUUID(seed: UInt64, name: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in name.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        var generator = Xoshiro256(seed: seed ^ hash)
        let (a, b) = (generator.next(), generator.next())
        func hex(_ value: UInt64, _ digits: Int) -> String {
            let text = String(value, radix: 16, uppercase: true)
            return String(repeating: "0", count: max(0, digits - text.count)) + text
        }
        return "\(hex(a >> 32, 8))-\(hex((a >> 16) & 0xFFFF, 4))-\(hex(0x4000 | (a & 0x0FFF), 4))-\(hex(0x8000 | ((b >> 48) & 0x3FFF), 4))-\(hex(b & 0xFFFF_FFFF_FFFF, 12))"
    }

    // MARK: The run

    func execute() async throws -> ([Choice], RunRecord) {
        try await bench.reset()
        logSeq = try await bench.lastLogSeq()
        runStartLogSeq = logSeq
        _ = try await cluster.cloud.admin.setClock(now: Self.baseTime)
        for name in devices {
            let device = try cluster.device(named: name)
            var tokens: [String: Int] = [:]
            for store in try await device.stores() { tokens[store.name] = store.lastHistoryToken }
            startTokens[name] = tokens
        }
        switch mode {
        case .draw:
            let limit = flow.stepCount * (1 + Self.extraChoicesPerStep) + 8
            while choices.count < limit, let choice = draw() { try await apply(choice) }
        case let .replay(list, _):
            for choice in list where enabled(choice) { try await apply(choice) }
        }
        try await finish()
        let final = try await FinalStateCollector(engine: self).collect()
        bench.noteLogSeq(logSeq)
        return (choices, RunRecord(seed: mode.seed, history: history, final: final))
    }

    // MARK: Choosing

    /// The next choice the seed draws; nil once every step has run and nothing is held.
    func draw() -> Choice? {
        var moves: [(Choice, Double)] = []
        for (index, actor) in flow.actors.enumerated() where cursor[index] < actor.steps.count {
            let choice = Choice.step(actor: actor.device)
            if enabled(choice) { moves.append((choice, options.stepWeight)) }
        }
        if moves.isEmpty && held == nil { return nil }
        for device in devices where held?.device != device {
            if dirty.contains(device) { moves.append((.send(device: device), options.sendWeight)) }
            if fetchedVersion[device, default: 0] < cloudVersion { moves.append((.fetch(device: device), options.fetchWeight)) }
            if pushes.contains(device) {
                moves.append((.push(device: device, delivered: true), options.pushWeight))
                let lost = options.weight(.pushLost)
                if lost > 0 { moves.append((.push(device: device, delivered: false), options.pushWeight * lost / (1 + lost))) }
            }
        }
        if let held { moves.append((.release(device: held.device), options.sendWeight)) }
        if options.faultRate > 0, Double(rng.next() >> 11) / Double(1 << 53) < options.faultRate, let fault = drawFault() {
            return .fault(fault)
        }
        return moves.isEmpty ? nil : rng.pick(moves)
    }

    func drawFault() -> Fault? {
        var kinds: [(FaultKind, Double)] = []
        let senders = devices.filter { dirty.contains($0) && held?.device != $0 }
        for kind in FaultKind.allCases where options.weight(kind) > 0 {
            switch kind {
            case .dropAfterCommit, .transientError, .zoneBusy: if !senders.isEmpty { kinds.append((kind, options.weight(kind))) }
            case .holdAndDeliver: if !senders.isEmpty && held == nil { kinds.append((kind, options.weight(kind))) }
            case .kill, .crashPoint: if options.persistence == .sqlite { kinds.append((kind, options.weight(kind))) }
            case .tokenExpiry, .clockJump: kinds.append((kind, options.weight(kind)))
            case .pushLost: break
            }
        }
        guard !kinds.isEmpty else { return nil }
        let kind = rng.pick(kinds)
        let anyDevice = devices[rng.below(devices.count)]
        switch kind {
        case .dropAfterCommit: return .dropAfterCommit(device: senders[rng.below(senders.count)])
        case .holdAndDeliver: return .hold(device: senders[rng.below(senders.count)])
        case .transientError:
            let code = rng.below(2) == 0 ? "serviceUnavailable" : "requestRateLimited"
            return .transient(device: senders[rng.below(senders.count)], code: code, retryAfterSeconds: [1, 30, 3600][rng.below(3)])
        case .zoneBusy: return .zoneBusy(device: senders[rng.below(senders.count)])
        case .kill: return .kill(device: anyDevice)
        case .crashPoint: return .crash(device: anyDevice, point: Self.crashPoints[rng.below(Self.crashPoints.count)])
        case .tokenExpiry: return .tokenExpiry
        case .clockJump: return .clockJump(device: anyDevice, seconds: [-30, 600, 86_400][rng.below(3)])
        case .pushLost: return nil
        }
    }

    /// The device's crash points whose requests the cloud's log can settle.
    static let crashPoints = ["mirror.afterServerReply", "mirror.midImport", "mirror.afterApplyingPage"]

    /// Whether `choice` can happen now (a replayed choice that cannot is skipped).
    func enabled(_ choice: Choice) -> Bool {
        if let device = choice.device, !devices.contains(device) { return false }
        switch choice {
        case let .step(actor):
            guard let index = flow.actors.firstIndex(where: { $0.device == actor }), cursor[index] < flow.actors[index].steps.count else { return false }
            // A mirror op would wait behind the held send, which waits for us.
            return held?.device != actor || !Self.usesMirror(flow.actors[index].steps[cursor[index]])
        case let .send(device), let .fetch(device): return held?.device != device
        case let .push(device, _): return pushes.contains(device) && held?.device != device
        case let .release(device): return held?.device == device
        case let .fault(fault):
            switch fault {
            case .hold: return held == nil
            case .dropAfterCommit(let device), .transient(let device, _, _), .zoneBusy(let device): return held?.device != device
            case .kill, .crash: return options.persistence == .sqlite
            case .tokenExpiry, .clockJump: return true
            }
        }
    }

    static func usesMirror(_ step: Step) -> Bool {
        switch step.kind {
        case .insert, .update, .delete, .link: false
        default: true
        }
    }

    // MARK: Releasing

    func apply(_ choice: Choice) async throws {
        choices.append(choice)
        seconds += 1
        switch choice {
        case let .step(actor):
            let index = flow.actors.firstIndex { $0.device == actor }!
            let position = cursor[index]
            cursor[index] += 1
            try await runStep(actorIndex: index, position: position)
        case let .send(device): try await send(device)
        case let .fetch(device): try await fetch(device, op: HistoryOp.fetch)
        case let .push(device, delivered):
            pushes.remove(device)
            let tick = nextTick()
            append(step: nil, actor: "cloud", user: nil, op: delivered ? HistoryOp.pushDeliver : HistoryOp.pushLose,
                   params: ["device": .string(device)], invoke: tick, complete: tick, outcome: .ok(.null))
            if delivered { try await fetch(device, op: HistoryOp.fetch) }
        case let .release(device): try await release(device)
        case let .fault(fault): try await inject(fault)
        }
    }

    // MARK: History

    func nextTick() -> Int {
        ticks += 1
        return ticks
    }

    @discardableResult
    func append(step: Int?, actor: String, user: String?, op: String, params: JSONValue, invoke: Int, complete: Int?, outcome: Outcome,
                cloudRequests: [Int] = []) -> Int {
        let index = history.count
        history.append(HistoryEntry(run: Int(truncatingIfNeeded: mode.seed), index: index, step: step, actor: actor, user: user, op: op,
                                    params: aliased(params), invoke: invoke, complete: complete, outcome: aliased(outcome),
                                    cloudRequests: cloudRequests))
        return index
    }

    /// Runs `body` as one recorded request.
    @discardableResult
    func record(step: Int? = nil, actor: String, op: String, params: JSONValue,
                _ body: () async throws(MeowCareError) -> JSONValue) async -> (index: Int, result: JSONValue?) {
        let invoke = nextTick()
        let user = users[actor]
        do {
            let result = try await body()
            return (append(step: step, actor: actor, user: user, op: op, params: params, invoke: invoke, complete: nextTick(), outcome: .ok(result)), result)
        } catch {
            return (append(step: step, actor: actor, user: user, op: op, params: params, invoke: invoke,
                           complete: Self.isUnseen(error) ? nil : nextTick(), outcome: Self.outcome(error)), nil)
        }
    }

    static func isUnseen(_ error: MeowCareError) -> Bool {
        [ErrorCode.connectionClosed, .timedOut].contains(error.code)
    }

    static func outcome(_ error: MeowCareError) -> Outcome {
        isUnseen(error) ? .unknown(reason: "\(error.code): \(error.message)") : .fail(code: error.code.rawValue, message: error.message)
    }

    /// Real share zone names replaced by their seeded aliases, wherever they appear.
    func aliased(_ value: JSONValue) -> JSONValue {
        guard !zoneAliases.isEmpty else { return value }
        switch value {
        case let .string(text):
            if let alias = zoneAliases[text] { return .string(alias) }
            for (real, alias) in zoneAliases where text.contains(real) { return .string(text.replacingOccurrences(of: real, with: alias)) }
            return value
        case let .array(items): return .array(items.map(aliased))
        case let .object(members): return .object(Dictionary(uniqueKeysWithValues: members.map { (aliased(.string($0.key)).stringValue ?? $0.key, aliased($0.value)) }))
        default: return value
        }
    }

    func aliased(_ outcome: Outcome) -> Outcome {
        switch outcome {
        case let .ok(result): .ok(aliased(result))
        case let .fail(code, message): .fail(code: code, message: aliased(.string(message)).stringValue ?? message)
        default: outcome
        }
    }

    /// A stamp: the device's clock reading the explorer sets before a write or a send.
    func stamp(_ device: String) -> Double { Self.baseTime + Double(seconds + skew[device, default: 0]) }

    func setClock(_ device: String) async throws(MeowCareError) {
        _ = try await cluster.device(named: device).setClock(now: stamp(device))
    }

    /// Reads the request log past what was read, giving each device mirror's requests to that
    /// device's entry awaiting them (its latest op that may reach the cloud). The explorer
    /// releases one request at a time and a device's mirror only talks to the cloud during the
    /// device's own ops, so a device's requests since its latest op are that op's: the log is
    /// read only before a device with an entry awaiting starts another such op, and at the end.
    func readLog() async throws(MeowCareError) {
        let entries = try await cluster.cloud.admin.requestLog(after: logSeq)
        for entry in entries {
            guard let seq = entry["seq"]?.intValue else { continue }
            logSeq = max(logSeq, seq)
            if let client = entry["client"]?.stringValue, client.hasPrefix(Self.mirrorPrefix), client.hasSuffix(")") {
                let device = String(client.dropFirst(Self.mirrorPrefix.count).dropLast())
                if let index = awaitingRequests[device] {
                    history[index].cloudRequests.append(seq)
                    if entry["op"]?.stringValue == "records.modify" { noteCarried(entry, in: index) }
                }
            }
        }
        awaitingRequests = [:]
    }

    static let mirrorPrefix = "store-service mirror ("

    /// A send's result gains `carried`: the record names its `records.modify` requests were
    /// allowed to write, from the log's permission decisions (complete up to 20 records a
    /// request), so a check can tell which pending writes a send took when it left some behind.
    func noteCarried(_ logEntry: JSONValue, in index: Int) {
        guard case var .ok(.object(result)) = history[index].outcome else { return }
        var names = Set((result["carried"]?.arrayValue ?? []).compactMap(\.stringValue))
        for decision in logEntry["permissions"]?.arrayValue ?? [] where decision["decision"]?.stringValue == "allowed" {
            if let name = decision["recordName"]?.stringValue { names.insert(name) }
        }
        result["carried"] = .array(names.sorted().map { .string($0) })
        history[index].outcome = .ok(.object(result))
    }

    /// Before `device` starts an op that may reach the cloud: its previous one gets its requests.
    func settleRequests(before device: String) async throws(MeowCareError) {
        absent[device] = nil
        if awaitingRequests[device] != nil { try await readLog() }
    }

    /// The devices' mirrors' entries of this run's part of the log (read again, nothing
    /// attributed): from the run's first sequence number, page by page.
    func runLogEntries() async throws(MeowCareError) -> [(device: String, seq: Int, op: String, code: String)] {
        let page = 1000
        var found: [(device: String, seq: Int, op: String, code: String)] = []
        var after = runStartLogSeq
        while true {
            let entries = try await cluster.cloud.admin.requestLog(after: after, limit: page)
            for entry in entries {
                guard let seq = entry["seq"]?.intValue else { continue }
                after = max(after, seq)
                guard let client = entry["client"]?.stringValue, client.hasPrefix(Self.mirrorPrefix), client.hasSuffix(")") else { continue }
                found.append((String(client.dropFirst(Self.mirrorPrefix.count).dropLast()), seq, entry["op"]?.stringValue ?? "", entry["code"]?.stringValue ?? ""))
            }
            if entries.count < page { return found }
        }
    }
}
