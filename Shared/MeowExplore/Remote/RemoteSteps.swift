import Dispatch
import MeowHistory
import MeowWire

/// A team's own steps and invariants written in any language, served over a Unix socket
/// (docs/EXPLORING.md, "Steps and invariants in another language"). Each becomes an ordinary
/// `CustomStep` or `Invariant`, so the scheduler, the checks and the shrinker treat them as
/// they treat Swift ones.
///
/// ```swift
/// var flow = try FlowFile.read(path).flow
/// let remote = RemoteSteps(socketPath: "/tmp/steps.sock")
/// remote.bindSteps(of: &flow)
/// remote.addInvariants(["noLostTitles"], to: &flow)
/// ```
///
/// One request per connection, framed as every MeowCare message is (4-byte big-endian length,
/// UTF-8 JSON): a step `{"step", "actor", "user", "device": {"name", "socket"}, "params",
/// "seed", "objects", "shares", "memory"}` is answered `{"ok": true, "result", "memory"}` or
/// `{"ok": false, "error": {"code", "message"}}`; an invariant `{"invariant", "run"}` is
/// answered `{"violations": [String]}`.
public struct RemoteSteps: Sendable {
    public let socketPath: String
    /// How long one answer may take before the step fails `timedOut`.
    public var timeoutSeconds: Int

    /// The key of `AppMemory` that holds the remote app's memory between its steps of a run.
    static let memoryKey = "remote"

    public init(socketPath: String, timeoutSeconds: Int = 120) {
        self.socketPath = socketPath
        self.timeoutSeconds = timeoutSeconds
    }

    /// Binds every custom step of `flow` that has no code to a request over the socket.
    public func bindSteps(of flow: inout Flow) {
        let objects = Self.objectNames(flow)
        let shares = flow.shares.map(\.name)
        for name in flow.unboundSteps {
            flow.bind(name) { context in try await self.runStep(name, context, objects: objects, shares: shares) }
        }
    }

    /// Adds an invariant per name, each judged by the socket's answer.
    public func addInvariants(_ names: [String], to flow: inout Flow) {
        for name in names {
            flow.invariants.append(Invariant(name) { run in self.judge(name, run) })
        }
    }

    /// The objects a flow names, in the order its steps first name them.
    static func objectNames(_ flow: Flow) -> [String] {
        var names: [String] = []
        for actor in flow.actors {
            for step in actor.steps { for object in step.objects where !names.contains(object) { names.append(object) } }
        }
        return names
    }

    func runStep(_ name: String, _ context: StepContext, objects: [String], shares: [String]) async throws -> JSONValue {
        var objectMap: [String: JSONValue] = [:]
        for object in objects { if let uuid = context.uuid(of: object) { objectMap[object] = .string(uuid) } }
        var shareMap: [String: JSONValue] = [:]
        for share in shares {
            if let zone = context.zone(of: share) { shareMap[share] = ["zoneName": .string(zone.zoneName), "owner": .string(zone.owner)] }
        }
        let request: JSONValue = [
            "step": .string(name), "actor": .string(context.actor), "user": .string(context.user),
            "device": ["name": .string(context.actor), "socket": .string(context.device.socketPath)],
            "params": context.params, "seed": .int(Int(truncatingIfNeeded: context.seed)),
            "objects": .object(objectMap), "shares": .object(shareMap),
            "memory": context.memory[Self.memoryKey] ?? .object([:]),
        ]
        let reply = try await exchangeOffPool(request)
        if reply["ok"]?.boolValue == true {
            if let memory = reply["memory"], memory.objectValue != nil { context.memory[Self.memoryKey] = memory }
            return reply["result"] ?? .null
        }
        guard reply["ok"]?.boolValue == false, let error = reply["error"]?.objectValue else {
            throw MeowCareError(ErrorCode("invalidStepReply"), "The steps socket \(socketPath) answered step \"\(name)\" with \(JSONWriter.text(reply)); "
                                + "expected {\"ok\": true, \"result\": …} or {\"ok\": false, \"error\": {\"code\", \"message\"}}.", service: "steps")
        }
        throw MeowCareError(ErrorCode(error["code"]?.stringValue ?? "customStepFailed"), error["message"]?.stringValue ?? "", service: "steps")
    }

    /// The violations the socket reports; an unreachable socket or a malformed answer is one
    /// violation itself, so a broken server never passes a run silently.
    func judge(_ name: String, _ run: RunRecord) -> [String] {
        let request: JSONValue
        do {
            request = ["invariant": .string(name), "run": try JSONValue(encoding: run)]
        } catch {
            return ["The run could not be encoded for the steps socket: \(error)."]
        }
        do {
            let reply = try FramedExchange(socketPath: socketPath, timeoutSeconds: timeoutSeconds).exchange(request)
            guard let violations = reply["violations"]?.arrayValue else {
                return ["The steps socket answered invariant \"\(name)\" with \(JSONWriter.text(reply)); expected {\"violations\": [\"…\"]}."]
            }
            return violations.map { $0.stringValue ?? JSONWriter.text($0) }
        } catch {
            return ["The steps socket \(socketPath) could not judge invariant \"\(name)\": \(error.message)"]
        }
    }

    /// The blocking exchange on a dispatch thread, so a slow step never holds one of the few
    /// threads the explorer's own tasks run on.
    private func exchangeOffPool(_ request: JSONValue) async throws(MeowCareError) -> JSONValue {
        let exchange = FramedExchange(socketPath: socketPath, timeoutSeconds: timeoutSeconds)
        let result: Result<JSONValue, MeowCareError> = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                do throws(MeowCareError) {
                    continuation.resume(returning: .success(try exchange.exchange(request)))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        return try result.get()
    }
}
