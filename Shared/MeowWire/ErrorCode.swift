/// A stable machine-readable error code. An open set (like SQLite's result codes): each layer
/// declares its own, CloudKit's and Core Data's names where one exists (CloudKit's in CloudWire,
/// `CloudKitError`). Codes are never renamed or reused.
public struct ErrorCode: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible,
    ExpressibleByStringLiteral {
    public let rawValue: String
    /// CKError.Code's number, for a code declared as one of CloudKit's (`init(cloudKit:number:)`):
    /// `WireError` puts it in `details.ckErrorCode` when the error is made. It is not part of
    /// the code's identity: a code read from the wire equals its declaration, and its number
    /// comes with the error's details.
    public let cloudKitNumber: Int?
    public init(rawValue: String) { self.init(rawValue, cloudKitNumber: nil) }
    public init(_ rawValue: String) { self.init(rawValue, cloudKitNumber: nil) }
    public init(stringLiteral value: String) { self.init(value, cloudKitNumber: nil) }
    /// One of CloudKit's codes, with its CKError number.
    public init(cloudKit rawValue: String, number: Int) { self.init(rawValue, cloudKitNumber: number) }
    private init(_ rawValue: String, cloudKitNumber: Int?) {
        self.rawValue = rawValue
        self.cloudKitNumber = cloudKitNumber
    }
    public var description: String { rawValue }

    public static func == (lhs: ErrorCode, rhs: ErrorCode) -> Bool { lhs.rawValue == rhs.rawValue }
    public func hash(into hasher: inout Hasher) { hasher.combine(rawValue) }

    public init(from decoder: any Decoder) throws {
        self.init(try decoder.singleValueContainer().decode(String.self))
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

// MARK: - CloudKit's codes this layer raises itself (the rest are declared in CloudWire)
extension ErrorCode {
    /// The service failed on a request (the runtime), or a reply did not decode (the client).
    public static let internalError = ErrorCode(cloudKit: "internalError", number: 1)
    /// The service's socket cannot be reached (the client).
    public static let networkUnavailable = ErrorCode(cloudKit: "networkUnavailable", number: 3)
    /// hello without a valid credential, or an op that needs one.
    public static let notAuthenticated = ErrorCode(cloudKit: "notAuthenticated", number: 9)
    /// An admin op from a user who is not the admin; a file outside what the service may open.
    public static let permissionFailure = ErrorCode(cloudKit: "permissionFailure", number: 10)
    /// A request's arguments are wrong (a socket path too long, params that do not encode).
    public static let invalidArguments = ErrorCode(cloudKit: "invalidArguments", number: 12)
    /// Too many requests in flight on a connection; a file past the service's size limit.
    public static let limitExceeded = ErrorCode(cloudKit: "limitExceeded", number: 27)
}
