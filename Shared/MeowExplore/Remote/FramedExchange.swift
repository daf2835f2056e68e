import MeowWire

/// One request and its answer over a fresh connection to a Unix socket, framed as every
/// MeowCare message is, blocking: a steps server needs no hello, and one connection per request
/// keeps a server that handles them one at a time simple. Its failures are the step's own
/// (`stepsSocketUnavailable`, `stepsSocketTimedOut`), never an unseen outcome: nothing of the
/// pair's is in doubt when the team's server is gone.
struct FramedExchange: Sendable {
    let socketPath: String
    let timeoutSeconds: Int
    static let unavailable = ErrorCode("stepsSocketUnavailable")

    func exchange(_ request: JSONValue) throws(MeowCareError) -> JSONValue {
        let fd: Int32
        do {
            fd = try UnixSocket.connect(path: socketPath)
        } catch {
            throw MeowCareError(Self.unavailable, "Cannot connect to the steps socket \(socketPath): \(error.message)", service: "steps")
        }
        defer { SystemSocket.close(fd) }
        guard UnixSocket.writeAll(fd: fd, FrameEncoder.frame(Array(JSONWriter.text(request).utf8))) == .written else {
            throw MeowCareError(Self.unavailable, "The steps socket \(socketPath) closed before the request was written.", service: "steps")
        }
        let header = try read(fd, count: 4)
        let length = header.reduce(0) { $0 << 8 | Int($1) }
        guard length <= WireLimits.defaultMaxFrameBytes else {
            throw MeowCareError(.frameTooLarge, "The steps socket \(socketPath) announced a \(length)-byte answer.", service: "steps")
        }
        let body = try read(fd, count: length)
        do {
            return try JSONParser.parse(body)
        } catch {
            throw MeowCareError(.invalidJSON, "The steps socket \(socketPath) answered with text that is not JSON: \(error)", service: "steps")
        }
    }

    private func read(_ fd: Int32, count: Int) throws(MeowCareError) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count)
        var chunk = [UInt8](repeating: 0, count: min(max(count, 1), 65_536))
        while bytes.count < count {
            guard UnixSocket.waitReadable(fd: fd, timeoutMilliseconds: Int32(timeoutSeconds * 1000)) else {
                throw MeowCareError(ErrorCode("stepsSocketTimedOut"), "The steps socket \(socketPath) did not answer within \(timeoutSeconds) s.", service: "steps")
            }
            let want = min(chunk.count, count - bytes.count)
            let n = chunk.withUnsafeMutableBytes { UnixSocket.read(fd: fd, into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<want])) }
            guard n > 0 else {
                throw MeowCareError(Self.unavailable, "The steps socket \(socketPath) closed after \(bytes.count) of \(count) bytes.", service: "steps")
            }
            bytes.append(contentsOf: chunk[0..<n])
        }
        return bytes
    }
}
