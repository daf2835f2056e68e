#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeowWire

/// A byte-level connection for tests of the wire itself: send anything (malformed included),
/// read frames with a deadline, see when the service closes.
public final class RawConnection: @unchecked Sendable {
    // @unchecked: used from one test at a time; the fd is the only state besides the decoder.
    public let fd: Int32
    private var decoder = FrameDecoder(maxFrameBytes: 1 << 30)
    private var closedByPeer = false

    public init(path: String) throws {
        fd = try UnixSocket.connect(path: path)
    }

    deinit { close(fd) }

    public func send(bytes: [UInt8]) {
        _ = UnixSocket.writeAll(fd: fd, bytes)
    }

    /// Sends one frame whose body is `body` exactly.
    public func send(body: [UInt8]) { send(bytes: FrameEncoder.frame(body)) }
    public func send(json: String) { send(body: Array(json.utf8)) }
    public func send(_ value: JSONValue) {
        send(body: Array(try! JSONEncoder().encode(value)))
    }

    /// Sends hello and returns its reply.
    @discardableResult
    public func hello(client: String = "test", credential: String? = nil) throws -> JSONValue {
        var params: [String: JSONValue] = ["minVersion": 1, "maxVersion": 1, "client": .string(client)]
        if let credential { params["credential"] = .string(credential) }
        send(["id": "hello", "op": "hello", "params": .object(params)])
        return try nextMessage()
    }

    /// The next frame as JSON, or throws if none arrives within `timeout` seconds.
    public func nextMessage(timeout: TimeInterval = 10) throws -> JSONValue {
        guard let body = readFrame(timeout: timeout) else {
            throw TestFailure(closedByPeer ? "connection closed by the service" : "no frame within \(timeout)s")
        }
        return try JSONDecoder().decode(JSONValue.self, from: Data(body))
    }

    /// The next frame's body, or nil on timeout or EOF.
    public func readFrame(timeout: TimeInterval = 10) -> [UInt8]? {
        let deadline = Date().addingTimeInterval(timeout)
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            if let frame = try? decoder.nextFrame() { return frame }
            let remaining = Int32(max(0, deadline.timeIntervalSinceNow * 1000))
            guard remaining > 0, UnixSocket.waitReadable(fd: fd, timeoutMilliseconds: remaining) else { return nil }
            let n = buffer.withUnsafeMutableBytes { UnixSocket.read(fd: fd, into: $0) }
            if n <= 0 { closedByPeer = true; return nil }
            decoder.append(buffer[0..<n])
        }
    }

    /// True when the service closes the connection (EOF) within `timeout`; frames before it are skipped.
    public func waitForClose(timeout: TimeInterval = 10) -> Bool {
        while readFrame(timeout: timeout) != nil {}
        return closedByPeer
    }
}
