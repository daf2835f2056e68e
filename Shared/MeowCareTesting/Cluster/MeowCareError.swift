/// An error from a cluster or one of its clients: the service's code (CloudKit's or Core Data's
/// name where one exists), its message and details, plus which op and which service answered.
/// The CloudKit parts are read from the details: `ckErrorCode`, the per-item errors of a
/// `partialFailure`, and the records of a `serverRecordChanged` conflict.
///
/// ```swift
/// do { try await context.save() } catch let error as MeowCareError where error.code == .permissionFailure {
///     print(error.ckErrorCode)  // 10
/// }
/// ```
public struct MeowCareError: Error, Sendable, CustomStringConvertible {
    public var code: ErrorCode
    public var message: String
    public var details: [String: JSONValue]
    /// The op that failed (nil for the cluster's own errors).
    public var op: String?
    /// Who answered: a device's name, `cloud`, or `cluster`.
    public var service: String?

    public init(_ code: ErrorCode, _ message: String, details: [String: JSONValue] = [:], op: String? = nil, service: String? = nil) {
        self.code = code
        self.message = message
        self.details = details
        self.op = op
        self.service = service
    }

    public init(_ error: WireError, op: String? = nil, service: String? = nil) {
        self.init(error.code, error.message, details: error.details, op: op, service: service)
    }

    /// CloudKit's `CKError.Code` number, for CloudKit's errors.
    public var ckErrorCode: Int? { details["ckErrorCode"]?.intValue }
    /// Core Data's `NSError` code, for Core Data's errors.
    public var coreDataCode: Int? { details["coreDataCode"]?.intValue }
    /// A transient error's wait before retrying, in seconds.
    public var retryAfterSeconds: Double? { details["retryAfterSeconds"]?.doubleValue }

    /// A `partialFailure`'s per-item errors, keyed as the server keys them (by record name, or
    /// `owner/zone/record` when one name is in two zones of a request).
    public var partialErrors: [String: MeowCareError] {
        guard let items = details["partialErrors"]?.objectValue else { return [:] }
        return items.compactMapValues { item in
            guard let code = item["code"]?.stringValue else { return nil }
            return MeowCareError(ErrorCode(code), item["message"]?.stringValue ?? "", details: item["details"]?.objectValue ?? [:],
                                 op: op, service: service)
        }
    }

    /// The records of a `serverRecordChanged` (server, client, ancestor) or a
    /// `serverRejectedRequest` (server): this error's own, or else its only item's in a
    /// `partialFailure`.
    public var conflict: RecordConflict? {
        if let own = RecordConflict(details: details) { return own }
        let items = partialErrors.values.compactMap { RecordConflict(details: $0.details) }
        return items.count == 1 ? items[0] : nil
    }

    public var description: String {
        var text = "\(code): \(message)"
        if let op { text = "\(op)\(service.map { " on \($0)" } ?? ""): " + text }
        for (key, item) in partialErrors.sorted(by: { $0.key < $1.key }) { text += "\n  \(key): \(item.code): \(item.message)" }
        return text
    }

    /// The same error as the wire shapes it.
    public var wireError: WireError { WireError(code, message, details: details) }
}

/// The cluster's own codes, and the store-service's codes a test meets most.
extension ErrorCode {
    /// A client was used after its cluster stopped.
    public static let clusterStopped: ErrorCode = "clusterStopped"
    /// A service of the cluster could not start; the message quotes its log.
    public static let serviceDidNotStart: ErrorCode = "serviceDidNotStart"
    /// store-service and sync-service were not found (see `ExecutableLocator`).
    public static let executablesNotFound: ErrorCode = "executablesNotFound"
    /// `settle()` ran out of rounds before every device was quiescent.
    public static let didNotSettle: ErrorCode = "didNotSettle"
    /// The cluster's configuration is not one it can start (a device name used twice, …).
    public static let invalidConfiguration: ErrorCode = "invalidConfiguration"

    /// Core Data: a save under the error merge policy found changed rows (133020).
    public static let mergeConflict: ErrorCode = "mergeConflict"
    /// Core Data: an assign of a saved object ("Can't reassign an object to a different store…").
    public static let invalidReassignment: ErrorCode = "invalidReassignment"
    /// Core Data: a relationship across the two stores (133010).
    public static let crossStoreRelationship: ErrorCode = "crossStoreRelationship"
    /// A sync op on a device started without a cloud.
    public static let mirrorNotConfigured: ErrorCode = "mirrorNotConfigured"
}
