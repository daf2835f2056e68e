/// Splits a byte stream into length-prefixed frames: a 4-byte big-endian unsigned body length,
/// then the body. Nothing is consumed until a whole frame is there ("need more data"), and a
/// length is checked against the limit before any room for the body is reserved.
///
/// ```swift
/// var decoder = FrameDecoder(maxFrameBytes: 16 << 20)
/// decoder.append(bytesFromSocket)
/// while let body = try decoder.nextFrame() { handle(body) }
/// ```
public struct FrameDecoder: Sendable {
    public let maxFrameBytes: Int
    private var buffer: [UInt8] = []
    private var start = 0

    public init(maxFrameBytes: Int = WireLimits.defaultMaxFrameBytes) {
        self.maxFrameBytes = maxFrameBytes
    }

    /// The body length the next (incomplete) frame announced, once its 4 length bytes are in.
    public var announcedLength: Int? {
        guard buffer.count - start >= 4 else { return nil }
        return Int(buffer[start]) << 24 | Int(buffer[start + 1]) << 16 | Int(buffer[start + 2]) << 8 | Int(buffer[start + 3])
    }

    /// Bytes received but not yet returned as a frame.
    public var bufferedByteCount: Int { buffer.count - start }

    /// The room reserved for buffered bytes (what a half-received frame costs in memory).
    public var reservedByteCount: Int { buffer.capacity }

    public mutating func append<Bytes: Collection>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        makeRoom(for: bytes.count)
        buffer.append(contentsOf: bytes)
    }

    public mutating func append(_ pointer: UnsafeRawBufferPointer) {
        makeRoom(for: pointer.count)
        buffer.append(contentsOf: pointer)
    }

    /// Grows the buffer with the bytes received: geometrically (doubling up to 4 MiB, then by a
    /// quarter), and never past the end of the frame being received, so a frame announced
    /// large but half sent costs what was sent, not its announced length or twice that.
    private mutating func makeRoom(for count: Int) {
        let needed = buffer.count + count
        let capacity = buffer.capacity
        guard needed > capacity else { return }
        var target = capacity < 4 << 20 ? capacity * 2 : capacity + capacity / 4
        if let length = announcedLength, length <= maxFrameBytes { target = min(target, start + 4 + length) }
        buffer.reserveCapacity(max(needed, target))
    }

    /// The next complete frame body, nil when more bytes are needed.
    /// Throws on a zero or oversized length; the stream cannot be resynchronised after that.
    public mutating func nextFrame() throws(FrameError) -> [UInt8]? {
        let available = buffer.count - start
        guard available >= 4 else { compact(); return nil }
        let length = Int(buffer[start]) << 24 | Int(buffer[start + 1]) << 16
            | Int(buffer[start + 2]) << 8 | Int(buffer[start + 3])
        if length == 0 { throw .emptyFrame }
        if length > maxFrameBytes { throw .frameTooLarge(length: length, limit: maxFrameBytes) }
        guard available >= 4 + length else { compact(); return nil }
        let body = Array(buffer[(start + 4)..<(start + 4 + length)])
        start += 4 + length
        if start == buffer.count { buffer.removeAll(keepingCapacity: buffer.capacity <= 1 << 20); start = 0 }
        return body
    }

    /// Drops consumed bytes once they dominate the buffer, so a long pipelined stream stays small.
    private mutating func compact() {
        if start > 0 && start >= buffer.count / 2 {
            buffer.removeFirst(start)
            start = 0
        }
    }
}

/// Why a byte stream is no longer a valid frame sequence. After one of these the connection closes.
public enum FrameError: Error, Sendable, Equatable {
    case emptyFrame
    case frameTooLarge(length: Int, limit: Int)
    case truncatedFrame(expected: Int, received: Int)

    public var wireError: WireError {
        switch self {
        case .emptyFrame:
            return WireError(.emptyFrame, "A frame's length was 0; every frame must carry a JSON object. The connection will be closed.")
        case let .frameTooLarge(length, limit):
            return WireError(.frameTooLarge,
                             "A frame's length was \(length) bytes, over the limit of \(limit) (advertised in hello as limits.maxFrameBytes). Was this a length-prefixed JSON frame? The connection will be closed.",
                             details: ["length": .int(length), "limit": .int(limit)])
        case let .truncatedFrame(expected, received):
            return WireError(.truncatedFrame,
                             "The stream ended inside a frame: \(received) of \(expected) bytes arrived.",
                             details: ["expected": .int(expected), "received": .int(received)])
        }
    }
}

/// Encodes one frame: the 4-byte big-endian body length, then the body.
public enum FrameEncoder {
    public static func frame<Body: Collection>(_ body: Body) -> [UInt8] where Body.Element == UInt8 {
        var out: [UInt8] = []
        out.reserveCapacity(body.count + 4)
        appendFrame(body, to: &out)
        return out
    }

    public static func appendFrame<Body: Collection>(_ body: Body, to out: inout [UInt8]) where Body.Element == UInt8 {
        let n = UInt32(body.count)
        out.append(UInt8(truncatingIfNeeded: n >> 24))
        out.append(UInt8(truncatingIfNeeded: n >> 16))
        out.append(UInt8(truncatingIfNeeded: n >> 8))
        out.append(UInt8(truncatingIfNeeded: n))
        out.append(contentsOf: body)
    }
}

/// Limits shared by both services and advertised in hello.
public enum WireLimits {
    public static let defaultMaxFrameBytes = 16 * 1024 * 1024
    public static let protocolName = "meowcare-wire"
    public static let minProtocolVersion = 1
    public static let maxProtocolVersion = 1
}
