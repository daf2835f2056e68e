import MeowHistory

/// Makes a failing schedule smaller while the same check (by name) still fails: faults first,
/// then steps (from the back, then any), then sends, fetches and pushes, then actors and
/// records. Each candidate runs from a fresh reset as a replay of its choices; the first that
/// still fails is kept and the passes start over, until none is kept (a fixed point) or the
/// budget of runs is spent.
struct Shrinker {
    let session: ExploreSession

    func shrink(_ failing: ScheduleRun, seed: UInt64) async throws -> ExploreFailure {
        let check = failing.failures[0].check
        var best = failing
        var runs = 0
        var improved = true
        while improved, runs < session.options.shrinkBudget {
            improved = false
            for candidate in candidates(of: best) {
                guard runs < session.options.shrinkBudget else { break }
                runs += 1
                let run = try await session.run(candidate.flow, .replay(candidate.choices, seed: seed))
                if run.failures.contains(where: { $0.check == check }) {
                    // Keep the choices the run really made (skipped ones are gone).
                    best = run
                    improved = true
                    break
                }
            }
        }
        return ExploreFailure(seed: seed, check: check, original: failing, shrunk: best, shrinkRuns: runs)
    }

    struct Candidate {
        var flow: Flow
        var choices: [Choice]
    }

    /// Smaller variants of `run`, the most promising first. Lazily built lists would save
    /// memory; these are small.
    func candidates(of run: ScheduleRun) -> [Candidate] {
        let flow = run.flow, choices = run.choices
        var out: [Candidate] = []
        // 1. Faults: all at once, then each.
        let faultIndexes = choices.indices.filter { choices[$0].isFault }
        if faultIndexes.count > 1 { out.append(Candidate(flow: flow, choices: choices.filter { !$0.isFault })) }
        for index in faultIndexes.reversed() { out.append(Candidate(flow: flow, choices: removing([index], from: choices))) }
        // 2. Steps: each actor's last, then any.
        for (actorIndex, actor) in flow.actors.enumerated() where !actor.steps.isEmpty {
            out.append(removingStep(actorIndex, actor.steps.count - 1, flow: flow, choices: choices))
        }
        for (actorIndex, actor) in flow.actors.enumerated() {
            for stepIndex in actor.steps.indices.dropLast().reversed() {
                out.append(removingStep(actorIndex, stepIndex, flow: flow, choices: choices))
            }
        }
        // 3. Sends, fetches, pushes and releases, from the back.
        for index in choices.indices.reversed() {
            switch choices[index] {
            case .send, .fetch, .push, .release: out.append(Candidate(flow: flow, choices: removing([index], from: choices)))
            case .step, .fault: break
            }
        }
        // 4. Actors: the actor, its steps and every choice on its device.
        if flow.actors.count > 1 {
            for actorIndex in flow.actors.indices.reversed() {
                var smaller = flow
                let device = smaller.actors.remove(at: actorIndex).device
                out.append(Candidate(flow: smaller, choices: choices.filter { $0.device != device }))
            }
        }
        // 5. Records: every step naming an object.
        var objects: [String] = []
        for actor in flow.actors { for step in actor.steps { for object in step.objects where !objects.contains(object) { objects.append(object) } } }
        for object in objects.reversed() {
            var candidate = Candidate(flow: flow, choices: choices)
            for actorIndex in flow.actors.indices.reversed() {
                for stepIndex in flow.actors[actorIndex].steps.indices.reversed()
                where candidate.flow.actors[actorIndex].steps[stepIndex].objects.contains(object) {
                    candidate = removingStep(actorIndex, stepIndex, flow: candidate.flow, choices: candidate.choices)
                }
            }
            if candidate.flow.stepCount < flow.stepCount { out.append(candidate) }
        }
        return out
    }

    /// The flow without one step, and the choices without the `step` choice that ran it (the
    /// n-th `step` choice of an actor runs its n-th step).
    func removingStep(_ actorIndex: Int, _ stepIndex: Int, flow: Flow, choices: [Choice]) -> Candidate {
        var smaller = flow
        smaller.actors[actorIndex].steps.remove(at: stepIndex)
        let device = flow.actors[actorIndex].device
        var seen = 0
        var kept: [Choice] = []
        for choice in choices {
            if choice == .step(actor: device) {
                defer { seen += 1 }
                if seen == stepIndex { continue }
            }
            kept.append(choice)
        }
        return Candidate(flow: smaller, choices: kept)
    }

    func removing(_ indexes: Set<Int>, from choices: [Choice]) -> [Choice] {
        choices.enumerated().filter { !indexes.contains($0.offset) }.map(\.element)
    }
}
