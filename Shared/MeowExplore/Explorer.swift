import Foundation
import MeowCareCluster
import MeowHistory

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
        let session = try await ExploreSession.start(flow, options, checks: checks)
        do {
            let report = try await session.explore()
            await session.stop()
            return report
        } catch {
            await session.stop()
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

    /// Starts a cluster with a device per actor (and every user the flow names).
    public static func start(_ flow: Flow, _ options: ExploreOptions = ExploreOptions(), checks: [any HistoryCheck] = Explorer.standardChecks) async throws -> ExploreSession {
        let unbound = flow.unboundSteps
        guard unbound.isEmpty else {
            throw MeowCareError(.invalidArguments, "The flow's custom steps \(unbound.map { "\"\($0)\"" }.joined(separator: ", ")) have no code: "
                                + "bind each with flow.bind(name) { context in … } before exploring.", service: "explorer")
        }
        let bench = try await ExploreBench.start(flow: flow, options: options)
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
        let clock = ContinuousClock()
        let start = clock.now
        var schedules = 0
        var seed = options.firstSeed
        var firstFailing: ScheduleRun?
        var failingSeed: UInt64 = 0
        func budgetLeft() -> Bool {
            switch options.budget {
            case let .schedules(count): schedules < count
            case let .seconds(limit): (clock.now - start) < .milliseconds(Int(limit * 1000))
            }
        }
        while budgetLeft() {
            let run = try await run(seed: seed)
            schedules += 1
            if !run.failures.isEmpty, firstFailing == nil {
                firstFailing = run
                failingSeed = seed
                if options.stopAtFirstFailure { break }
            }
            seed &+= 1
        }
        let elapsed = clock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        var report = ExploreReport(flow: flow.name, schedules: schedules,
                                   seeds: schedules > 0 ? options.firstSeed...(options.firstSeed &+ UInt64(schedules - 1)) : nil,
                                   seconds: seconds, failure: nil)
        if let firstFailing {
            report.failure = try await Shrinker(session: self).shrink(firstFailing, seed: failingSeed)
        }
        return report
    }
}
