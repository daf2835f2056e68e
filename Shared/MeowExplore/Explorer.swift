import Foundation
import MeowCareCluster
import MeowHistory
import Synchronization

/// Runs a flow under many seeded schedules through the real services, judges each run with the
/// checks, and shrinks the first failing one (docs/EXPLORING.md).
///
/// ```swift
/// let report = try await Explorer.explore(flow, ExploreOptions(budget: .schedules(100)), checks: myChecks)
/// #expect(report.passed, "\(report)")
/// ```
public enum Explorer {
    /// The built-in checks (MeowHistory's `Checker.standard`: resolution, durability,
    /// permission safety, conflicts, duplicates, history tokens, convergence, doctor) and
    /// `customSteps` (a team's own step that threw).
    public static let standardChecks: [any HistoryCheck] = Checker.standard + [CustomStepCheck()]

    /// Runs schedules from `options.firstSeed` until the budget ends (or the first failure, when
    /// `stopAtFirstFailure`), on one cluster reset between runs; shrinks the first failure.
    public static func explore(_ flow: Flow, _ options: ExploreOptions = ExploreOptions(),
                               checks: [any HistoryCheck] = standardChecks) async throws -> ExploreReport {
        var sessions: [ExploreSession] = []
        do {
            let count = max(1, options.clusters)
            for index in 0..<count { sessions.append(try await ExploreSession.start(flow, options, checks: checks, cluster: count > 1 ? index : nil)) }
            let report = try await ExploreSession.explore(on: sessions)
            for session in sessions { await session.stop() }
            return report
        } catch {
            for session in sessions { await session.stop() }
            throw error
        }
    }

    /// The run a seed draws, again: the same schedule and history.
    public static func replay(_ flow: Flow, seed: UInt64, _ options: ExploreOptions = ExploreOptions(),
                              checks: [any HistoryCheck] = standardChecks) async throws -> RunRecord {
        try await withSession(flow, options, checks) { try await $0.run(seed: seed).record }
    }

    /// The run a printed choice list makes (a choice that cannot happen at its point is skipped).
    public static func replay(_ flow: Flow, choices: [Choice], seed: UInt64 = 0, _ options: ExploreOptions = ExploreOptions(),
                              checks: [any HistoryCheck] = standardChecks) async throws -> RunRecord {
        try await withSession(flow, options, checks) { try await $0.run(choices: choices, seed: seed).record }
    }

    private static func withSession<T>(_ flow: Flow, _ options: ExploreOptions, _ checks: [any HistoryCheck],
                                       _ body: (ExploreSession) async throws -> T) async throws -> T {
        let session = try await ExploreSession.start(flow, options, checks: checks)
        do {
            let result = try await body(session)
            await session.stop()
            return result
        } catch {
            await session.stop()
            throw error
        }
    }
}

/// One cluster for a flow, reused across runs with a reset between them: what `Explorer` runs
/// on, open for tools that run many seeds or replays themselves (`meowctl explore`, benchmarks).
public final class ExploreSession: Sendable {
    public let flow: Flow
    public let options: ExploreOptions
    public let checks: [any HistoryCheck]
    let bench: ExploreBench

    private init(flow: Flow, options: ExploreOptions, checks: [any HistoryCheck], bench: ExploreBench) {
        self.flow = flow
        self.options = options
        self.checks = checks
        self.bench = bench
    }

    /// Starts a cluster with a device per actor (and every user the flow names). `cluster`, for
    /// clusters run side by side, is its place among them, which picks the CPU its services run
    /// on; nil leaves them to the kernel (explorations in separate processes stay spread out).
    public static func start(_ flow: Flow, _ options: ExploreOptions = ExploreOptions(), checks: [any HistoryCheck] = Explorer.standardChecks,
                             cluster index: Int? = nil) async throws -> ExploreSession {
        let unbound = flow.unboundSteps
        guard unbound.isEmpty else {
            throw MeowCareError(.invalidArguments, "The flow's custom steps \(unbound.map { "\"\($0)\"" }.joined(separator: ", ")) have no code: "
                                + "bind each with flow.bind(name) { context in … } before exploring.", service: "explorer")
        }
        let bench = try await ExploreBench.start(flow: flow, options: options, cluster: index)
        return ExploreSession(flow: flow, options: options, checks: checks, bench: bench)
    }

    public func stop() async { await bench.stop() }

    /// The cluster the runs use (between runs: its state is the last run's).
    public var cluster: MeowCluster { bench.cluster }

    /// Runs the schedule `seed` draws, from a fresh reset, and judges it.
    public func run(seed: UInt64) async throws -> ScheduleRun {
        try await run(flow, .draw(seed: seed))
    }

    /// Runs `choices` (a choice that cannot happen at its point is skipped), from a fresh reset.
    public func run(choices: [Choice], seed: UInt64 = 0) async throws -> ScheduleRun {
        try await run(flow, .replay(choices, seed: seed))
    }

    func run(_ flow: Flow, _ mode: RunMode) async throws -> ScheduleRun {
        let (choices, record) = try await bench.run(flow: flow, mode: mode)
        let failures = judge(record, flow: flow)
        return ScheduleRun(flow: flow, choices: choices, record: record, failures: failures)
    }

    /// The checks' and the flow's invariants' findings on a run.
    public func judge(_ record: RunRecord, flow: Flow? = nil) -> [CheckFailure] {
        var failures: [CheckFailure] = []
        for check in checks { failures += check.check(record) }
        for invariant in (flow ?? self.flow).invariants { failures += invariant.check(record) }
        return failures
    }

    /// Seeds from `options.firstSeed` until the budget ends; the first failure is shrunk.
    public func explore() async throws -> ExploreReport {
        try await Self.explore(on: [self])
    }

    /// Seeds from `options.firstSeed` until the budget ends, spread over `sessions` (one
    /// cluster each, running at once: a run waits on the services most of the time, so a
    /// second cluster uses the cores the first leaves idle). Every seed runs on whichever
    /// session is free; a seed's run does not depend on which. The smallest failing seed is
    /// shrunk on the first session.
    public static func explore(on sessions: [ExploreSession]) async throws -> ExploreReport {
        guard let first = sessions.first else { throw MeowCareError(.invalidArguments, "explore needs a session.", service: "explorer") }
        let options = first.options
        let clock = ContinuousClock()
        let start = clock.now
        let progress = ExploreProgress()
        /// The next seed to run, or nil once the budget is spent (or a failure stops the search).
        let claim: @Sendable () -> UInt64? = {
            progress.state.withLock { state in
                if options.stopAtFirstFailure && !state.failures.isEmpty { return nil }
                switch options.budget {
                case let .schedules(count): if state.claimed >= count { return nil }
                // However short the time, one schedule runs: a report always judges something.
                case let .seconds(limit): if state.claimed > 0 && clock.now - start >= .milliseconds(Int(limit * 1000)) { return nil }
                }
                defer { state.claimed += 1 }
                return options.firstSeed &+ UInt64(state.claimed)
            }
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for session in sessions {
                group.addTask {
                    while let seed = claim() {
                        let run = try await session.run(seed: seed)
                        if !run.failures.isEmpty { progress.state.withLock { $0.failures.append((seed, run)) } }
                    }
                }
            }
            try await group.waitForAll()
        }
        let elapsed = clock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let (schedules, failing) = progress.state.withLock { ($0.claimed, $0.failures.min { $0.seed < $1.seed }) }
        var report = ExploreReport(flow: first.flow.name, schedules: schedules,
                                   seeds: schedules > 0 ? options.firstSeed...(options.firstSeed &+ UInt64(schedules - 1)) : nil,
                                   seconds: seconds, failure: nil)
        if let failing {
            report.failure = try await Shrinker(session: first).shrink(failing.run, seed: failing.seed)
        }
        return report
    }
}

/// What the sessions of one exploration share: seeds handed out, failures found.
final class ExploreProgress: Sendable {
    struct State {
        var claimed = 0
        var failures: [(seed: UInt64, run: ScheduleRun)] = []
    }
    let state = Mutex(State())
}
