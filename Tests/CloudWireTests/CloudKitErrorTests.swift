import CloudWire
import MeowWire
import Testing

@Suite("CloudKit's errors: numbers and retry rules")
struct CloudKitErrorTests {
    @Test func everyCodeHasCloudKitsNumber() {
        let numbers = Dictionary(uniqueKeysWithValues: CloudKitError.all.map { ($0.code.rawValue, $0.number) })
        #expect(numbers == [
            "internalError": 1, "partialFailure": 2, "networkUnavailable": 3, "networkFailure": 4, "badContainer": 5,
            "serviceUnavailable": 6, "requestRateLimited": 7, "missingEntitlement": 8, "notAuthenticated": 9,
            "permissionFailure": 10, "unknownItem": 11, "invalidArguments": 12, "serverRecordChanged": 14,
            "serverRejectedRequest": 15, "constraintViolation": 19, "operationCancelled": 20, "changeTokenExpired": 21,
            "batchRequestFailed": 22, "zoneBusy": 23, "badDatabase": 24, "quotaExceeded": 25, "zoneNotFound": 26,
            "limitExceeded": 27, "userDeletedZone": 28, "tooManyParticipants": 29, "alreadyShared": 30,
            "referenceViolation": 31, "participantMayNeedVerification": 33, "serverResponseLost": 34,
            "accountTemporarilyUnavailable": 36,
        ])
        #expect(CloudKitError.all.map(\.number) == CloudKitError.all.map(\.number).sorted())
        for error in CloudKitError.all {
            #expect(WireError(error.code, "x").details["ckErrorCode"] == .int(error.number), "\(error)")
        }
    }

    @Test func codesThatAreNotCloudKitsHaveNoRule() {
        #expect(CloudKitError(.invalidJSON) == nil)
        #expect(CloudKitError("mergeConflict") == nil)
        #expect(WireError(.timedOut, "x").retry == .notRetried)
    }

    @Test func eachCodeHasItsRetryRule() {
        let retried = Dictionary(grouping: CloudKitError.all, by: \.retry).mapValues { $0.map(\.code.rawValue).sorted() }
        #expect(retried[.afterRetryAfter] == ["requestRateLimited", "serviceUnavailable", "zoneBusy"])
        #expect(retried[.afterHalvingBatch] == ["limitExceeded"])
        #expect(retried[.afterMerge] == ["serverRecordChanged"])
        #expect(retried[.afterRefetch] == ["changeTokenExpired"])
        #expect(retried[.byItem] == ["partialFailure"])
        #expect(retried[.withNextBatch] == ["batchRequestFailed"])
        #expect(retried[.notRetried]?.count == CloudKitError.all.count - 8)
        #expect(WireError(.zoneBusy, "busy", details: ["retryAfterSeconds": 3]).retry == .afterRetryAfter)
        #expect(CloudKitError.codes(retried: .afterRetryAfter) == [.serviceUnavailable, .requestRateLimited, .zoneBusy])
    }
}
