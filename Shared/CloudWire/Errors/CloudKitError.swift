import MeowWire

/// One of CloudKit's errors (CKError.Code): its wire code, its CKError number, and whether and
/// how a client retries it. Every place that decides "is this retried, and how" asks `retry`
/// (the mirror's send and fetch, the test library's settle, `meowctl doctor`).
///
/// The codes and their numbers stay with `ErrorCode` in MeowWire: `WireError` puts the number
/// in `details.ckErrorCode` when an error is made, and the service runtime and the wire client,
/// below CloudWire, raise some of these codes themselves.
public struct CloudKitError: Sendable, Hashable, CustomStringConvertible {
    /// What a client does after the error.
    public enum Retry: String, Sendable, Hashable, CaseIterable {
        /// Not retried as it is: the request or item stands refused (a sender stops, its
        /// changes staying queued for the next send, or reports the item refused).
        case notRetried
        /// The same request again once `details.retryAfterSeconds` has passed (a client
        /// chooses its own back-off when the server names none); meanwhile its changes wait.
        case afterRetryAfter
        /// The request was too large: its items again, in requests half the size (a single
        /// item that is too large is not retried).
        case afterHalvingBatch
        /// The record changed on the server: the item again after merging with the server's
        /// copy, which the error's details carry.
        case afterMerge
        /// The change token is too old: the changes fetched again from no token.
        case afterRefetch
        /// Only part of the request failed: each item by its own error (`details.partialErrors`).
        case byItem
        /// The item failed only because another item of its atomic zone did: it is sent again
        /// with the next batch.
        case withNextBatch
    }

    public let code: ErrorCode
    /// CKError.Code's number (`details.ckErrorCode`).
    public let number: Int

    /// Nil for a code that is not CloudKit's (the wire's own, Core Data's).
    public init?(_ code: ErrorCode) {
        guard let number = ErrorCode.cloudKitNumbers[code] else { return nil }
        self.code = code
        self.number = number
    }

    /// Every CloudKit error, by number.
    public static let all: [CloudKitError] = ErrorCode.cloudKitNumbers.keys.compactMap(CloudKitError.init).sorted { $0.number < $1.number }

    /// The codes retried by `rule`, by number.
    public static func codes(retried rule: Retry) -> [ErrorCode] {
        all.filter { $0.retry == rule }.map(\.code)
    }

    public var retry: Retry {
        switch code {
        case .serviceUnavailable, .requestRateLimited, .zoneBusy: .afterRetryAfter
        case .limitExceeded: .afterHalvingBatch
        case .serverRecordChanged: .afterMerge
        case .changeTokenExpired: .afterRefetch
        case .partialFailure: .byItem
        case .batchRequestFailed: .withNextBatch
        default: .notRetried
        }
    }

    public var description: String { "\(code) (CKError \(number))" }
}

extension WireError {
    /// The CloudKit error this is, if its code is one of CloudKit's.
    public var cloudKitError: CloudKitError? { CloudKitError(code) }
    /// How a client retries it (`notRetried` for a code that is not CloudKit's).
    public var retry: CloudKitError.Retry { cloudKitError?.retry ?? .notRetried }
}
