import MeowWire
import Synchronization

/// A transient failure an operator arms for tests (SEMANTICS.md B6): the next `count` requests
/// matching `op` and `user` fail with `code`, carrying `retryAfterSeconds` when given.
public struct InjectedFault: Codable, Sendable, Hashable {
    public var code: String
    public var op: String?
    public var user: String?
    public var count: Int?
    public var retryAfterSeconds: Double?
    /// Run the request first, then answer the error (serverResponseLost: "it may have been applied").
    public var afterApplying: Bool?
}

public struct FaultsResult: Codable, Sendable {
    public var faults: [InjectedFault]
}

/// Armed faults, consumed in the order they were armed.
public final class FaultInjector: Sendable {
    private let faults = Mutex([InjectedFault]())

    public static let allowedCodes: Set<ErrorCode> = [
        .serviceUnavailable, .requestRateLimited, .zoneBusy, .quotaExceeded, .serverResponseLost,
        .networkFailure, .networkUnavailable, .internalError, .accountTemporarilyUnavailable, .notAuthenticated,
    ]

    public init() {}

    public func arm(_ fault: InjectedFault) throws -> FaultsResult {
        guard Self.allowedCodes.contains(ErrorCode(fault.code)) else {
            throw WireError(.invalidArguments, "code must be one of \(Self.allowedCodes.map(\.rawValue).sorted().joined(separator: ", ")).")
        }
        guard (fault.count ?? 1) >= 1 else { throw WireError(.invalidArguments, "count must be at least 1.") }
        return FaultsResult(faults: faults.withLock { $0.append(fault); return $0 })
    }

    public func clear() -> FaultsResult {
        faults.withLock { $0.removeAll() }
        return FaultsResult(faults: [])
    }

    /// Takes one use of the first fault matching this request, if any.
    func take(op: String, user: String?) -> InjectedFault? {
        faults.withLock { faults in
            guard let index = faults.firstIndex(where: { ($0.op == nil || $0.op == op) && ($0.user == nil || $0.user == user) }) else { return nil }
            let fault = faults[index]
            let left = (fault.count ?? 1) - 1
            if left <= 0 { faults.remove(at: index) } else { faults[index].count = left }
            return fault
        }
    }

    static func error(for fault: InjectedFault, op: String) -> WireError {
        var details: [String: JSONValue] = ["injected": true, "op": .string(op)]
        if let retry = fault.retryAfterSeconds { details["retryAfterSeconds"] = .double(retry) }
        let retryText = fault.retryAfterSeconds.map { " Retry after \($0) seconds." } ?? ""
        return WireError(ErrorCode(fault.code), "Injected \(fault.code) for '\(op)'.\(retryText)", details: details)
    }
}
