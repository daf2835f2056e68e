/// A stable machine-readable error code. An open set (like SQLite's result codes): each service
/// adds its own, CloudKit's and Core Data's names where one exists. Codes are never renamed or reused.
public struct ErrorCode: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible,
    ExpressibleByStringLiteral {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { self.rawValue = value }
    public var description: String { rawValue }

    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(String.self)
    }
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

// MARK: - Framing and envelope (the connection is closed after the first three)
extension ErrorCode {
    /// The length prefix exceeded limits.maxFrameBytes. Connection closed.
    public static let frameTooLarge: ErrorCode = "frameTooLarge"
    /// The length prefix was 0. Connection closed.
    public static let emptyFrame: ErrorCode = "emptyFrame"
    /// EOF or the frame timeout arrived inside a frame. Connection closed.
    public static let truncatedFrame: ErrorCode = "truncatedFrame"
    /// The body was not valid UTF-8.
    public static let invalidUTF8: ErrorCode = "invalidUTF8"
    /// The body was not valid JSON.
    public static let invalidJSON: ErrorCode = "invalidJSON"
    /// The body was JSON but not an object.
    public static let notAnObject: ErrorCode = "notAnObject"
    /// A required field (id, op, or a parameter) was missing or null.
    public static let missingField: ErrorCode = "missingField"
    /// A field had the wrong type or an invalid value.
    public static let invalidField: ErrorCode = "invalidField"
    /// The op is not one this service knows.
    public static let unknownOp: ErrorCode = "unknownOp"
    /// A request other than hello arrived before hello.
    public static let helloRequired: ErrorCode = "helloRequired"
    /// hello was sent twice on one connection.
    public static let helloAlreadyDone: ErrorCode = "helloAlreadyDone"
    /// No protocol version in the client's range is supported.
    public static let unsupportedVersion: ErrorCode = "unsupportedVersion"
    /// The connection limit was reached. Connection closed.
    public static let tooManyConnections: ErrorCode = "tooManyConnections"
    /// The peer's uid is not allowed to connect. Connection closed.
    public static let peerNotAllowed: ErrorCode = "peerNotAllowed"
    /// The connection did not complete hello within the hello timeout. Connection closed.
    public static let helloTimeout: ErrorCode = "helloTimeout"
    /// Too many hellos with a bad credential on one connection. Connection closed.
    public static let tooManyFailedHellos: ErrorCode = "tooManyFailedHellos"
    /// A frame would have taken the service's buffered bytes (all connections' unfinished
    /// frames) past its budget. Connection closed.
    public static let bufferBudgetExceeded: ErrorCode = "bufferBudgetExceeded"
    /// The service is stopping and takes no new work.
    public static let shuttingDown: ErrorCode = "shuttingDown"
    /// The client fell too far behind reading events; the connection's event queue overflowed.
    public static let eventsOverflowed: ErrorCode = "eventsOverflowed"
    /// A request timed out on the client side; from a service, only the sync-service's
    /// admin.awaitHeldRequests (the held requests it waited for did not come in time).
    public static let timedOut: ErrorCode = "timedOut"
    /// The connection closed before the reply arrived (client library only).
    public static let connectionClosed: ErrorCode = "connectionClosed"
}

// MARK: - CloudKit's codes (CKError.Code); the number goes in details.ckErrorCode
extension ErrorCode {
    public static let internalError: ErrorCode = "internalError"
    public static let partialFailure: ErrorCode = "partialFailure"
    public static let networkUnavailable: ErrorCode = "networkUnavailable"
    public static let networkFailure: ErrorCode = "networkFailure"
    public static let badContainer: ErrorCode = "badContainer"
    public static let serviceUnavailable: ErrorCode = "serviceUnavailable"
    public static let requestRateLimited: ErrorCode = "requestRateLimited"
    public static let missingEntitlement: ErrorCode = "missingEntitlement"
    public static let notAuthenticated: ErrorCode = "notAuthenticated"
    public static let permissionFailure: ErrorCode = "permissionFailure"
    public static let unknownItem: ErrorCode = "unknownItem"
    public static let invalidArguments: ErrorCode = "invalidArguments"
    public static let serverRecordChanged: ErrorCode = "serverRecordChanged"
    public static let serverRejectedRequest: ErrorCode = "serverRejectedRequest"
    public static let constraintViolation: ErrorCode = "constraintViolation"
    public static let operationCancelled: ErrorCode = "operationCancelled"
    public static let changeTokenExpired: ErrorCode = "changeTokenExpired"
    public static let batchRequestFailed: ErrorCode = "batchRequestFailed"
    public static let zoneBusy: ErrorCode = "zoneBusy"
    public static let badDatabase: ErrorCode = "badDatabase"
    public static let quotaExceeded: ErrorCode = "quotaExceeded"
    public static let zoneNotFound: ErrorCode = "zoneNotFound"
    public static let limitExceeded: ErrorCode = "limitExceeded"
    public static let userDeletedZone: ErrorCode = "userDeletedZone"
    public static let tooManyParticipants: ErrorCode = "tooManyParticipants"
    public static let alreadyShared: ErrorCode = "alreadyShared"
    public static let referenceViolation: ErrorCode = "referenceViolation"
    public static let participantMayNeedVerification: ErrorCode = "participantMayNeedVerification"
    public static let serverResponseLost: ErrorCode = "serverResponseLost"
    public static let accountTemporarilyUnavailable: ErrorCode = "accountTemporarilyUnavailable"

    /// CKError.Code numbers, for details.ckErrorCode.
    public static let cloudKitNumbers: [ErrorCode: Int] = [
        .internalError: 1, .partialFailure: 2, .networkUnavailable: 3, .networkFailure: 4,
        .badContainer: 5, .serviceUnavailable: 6, .requestRateLimited: 7, .missingEntitlement: 8,
        .notAuthenticated: 9, .permissionFailure: 10, .unknownItem: 11, .invalidArguments: 12,
        .serverRecordChanged: 14, .serverRejectedRequest: 15, .constraintViolation: 19,
        .operationCancelled: 20, .changeTokenExpired: 21, .batchRequestFailed: 22, .zoneBusy: 23,
        .badDatabase: 24, .quotaExceeded: 25, .zoneNotFound: 26, .limitExceeded: 27,
        .userDeletedZone: 28, .tooManyParticipants: 29, .alreadyShared: 30, .referenceViolation: 31,
        .participantMayNeedVerification: 33, .serverResponseLost: 34, .accountTemporarilyUnavailable: 36,
    ]
}
