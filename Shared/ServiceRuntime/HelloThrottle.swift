#if canImport(Glibc)
import Glibc
#endif
import MeowWire

/// Slows credential guessing: each hello refused for its credential is answered after a delay
/// that doubles with every failure on the connection (50 ms, 100 ms, 200 ms, …), and the
/// connection is closed at the `maxFailures`th with `tooManyFailedHellos`.
enum HelloThrottle {
    static let maxFailures = 5
    static let firstDelayMilliseconds = 50

    static func delayMilliseconds(afterFailure count: Int) -> Int {
        firstDelayMilliseconds << min(max(count - 1, 0), 10)
    }

    /// Runs `authenticate`; on a refused credential waits, counts, and past the limit asks the
    /// connection to close after answering `tooManyFailedHellos`.
    static func guarding(_ connection: ConnectionHandle, _ authenticate: () throws -> Principal?) throws -> Principal? {
        do {
            return try authenticate()
        } catch where ServiceError.wire(of: error)?.code == .notAuthenticated {
            let failures = connection.recordFailedHello()
            usleep(UInt32(delayMilliseconds(afterFailure: failures) * 1000))
            guard failures >= maxFailures else { throw error }
            connection.requestCloseAfterReply()
            throw WireError(.tooManyFailedHellos,
                            "\(failures) hellos on this connection had a credential no user has; the connection will be closed. Check the credential, then connect again.",
                            details: ["failures": .int(failures)])
        }
    }
}
