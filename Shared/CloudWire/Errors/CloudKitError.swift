import MeowWire

/// One of CloudKit's errors (CKError.Code): its wire code, its CKError number, and whether and
/// how a client retries it. Every place that decides "is this retried, and how" asks `retry`
/// (the mirror's send and fetch, the test library's settle, `meowctl doctor`, the fault injector).
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

    /// The code as declared (with its number, which `WireError` puts in `details.ckErrorCode`).
    public let code: ErrorCode
    /// CKError.Code's number.
    public var number: Int { code.cloudKitNumber ?? 0 }

    private init(declared code: ErrorCode) {
        self.code = code
    }

    /// Nil for a code that is not CloudKit's (the wire's own, Core Data's).
    public init?(_ code: ErrorCode) {
        guard let declared = Self.byCode[code] else { return nil }
        self = declared
    }

    /// Every CloudKit error, by number.
    public static let all: [CloudKitError] = [
        .internalError, .partialFailure, .networkUnavailable, .networkFailure, .badContainer, .serviceUnavailable,
        .requestRateLimited, .missingEntitlement, .notAuthenticated, .permissionFailure, .unknownItem, .invalidArguments,
        .serverRecordChanged, .serverRejectedRequest, .constraintViolation, .operationCancelled, .changeTokenExpired,
        .batchRequestFailed, .zoneBusy, .badDatabase, .quotaExceeded, .zoneNotFound, .limitExceeded, .userDeletedZone,
        .tooManyParticipants, .alreadyShared, .referenceViolation, .participantMayNeedVerification, .serverResponseLost,
        .accountTemporarilyUnavailable,
    ].map(CloudKitError.init(declared:))

    private static let byCode = Dictionary(uniqueKeysWithValues: all.map { ($0.code, $0) })

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

// CloudKit's codes other than those MeowWire's own layer raises (internalError,
// networkUnavailable, notAuthenticated, permissionFailure, invalidArguments, limitExceeded),
// each with its CKError number.
extension ErrorCode {
    public static let partialFailure = ErrorCode(cloudKit: "partialFailure", number: 2)
    public static let networkFailure = ErrorCode(cloudKit: "networkFailure", number: 4)
    public static let badContainer = ErrorCode(cloudKit: "badContainer", number: 5)
    public static let serviceUnavailable = ErrorCode(cloudKit: "serviceUnavailable", number: 6)
    public static let requestRateLimited = ErrorCode(cloudKit: "requestRateLimited", number: 7)
    public static let missingEntitlement = ErrorCode(cloudKit: "missingEntitlement", number: 8)
    public static let unknownItem = ErrorCode(cloudKit: "unknownItem", number: 11)
    public static let serverRecordChanged = ErrorCode(cloudKit: "serverRecordChanged", number: 14)
    public static let serverRejectedRequest = ErrorCode(cloudKit: "serverRejectedRequest", number: 15)
    public static let constraintViolation = ErrorCode(cloudKit: "constraintViolation", number: 19)
    public static let operationCancelled = ErrorCode(cloudKit: "operationCancelled", number: 20)
    public static let changeTokenExpired = ErrorCode(cloudKit: "changeTokenExpired", number: 21)
    public static let batchRequestFailed = ErrorCode(cloudKit: "batchRequestFailed", number: 22)
    public static let zoneBusy = ErrorCode(cloudKit: "zoneBusy", number: 23)
    public static let badDatabase = ErrorCode(cloudKit: "badDatabase", number: 24)
    public static let quotaExceeded = ErrorCode(cloudKit: "quotaExceeded", number: 25)
    public static let zoneNotFound = ErrorCode(cloudKit: "zoneNotFound", number: 26)
    public static let userDeletedZone = ErrorCode(cloudKit: "userDeletedZone", number: 28)
    public static let tooManyParticipants = ErrorCode(cloudKit: "tooManyParticipants", number: 29)
    public static let alreadyShared = ErrorCode(cloudKit: "alreadyShared", number: 30)
    public static let referenceViolation = ErrorCode(cloudKit: "referenceViolation", number: 31)
    public static let participantMayNeedVerification = ErrorCode(cloudKit: "participantMayNeedVerification", number: 33)
    public static let serverResponseLost = ErrorCode(cloudKit: "serverResponseLost", number: 34)
    public static let accountTemporarilyUnavailable = ErrorCode(cloudKit: "accountTemporarilyUnavailable", number: 36)
}

extension WireError {
    /// The CloudKit error this is, if its code is one of CloudKit's.
    public var cloudKitError: CloudKitError? { CloudKitError(code) }
    /// How a client retries it (`notRetried` for a code that is not CloudKit's).
    public var retry: CloudKitError.Retry { cloudKitError?.retry ?? .notRetried }
}
