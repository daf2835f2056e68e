#if canImport(Glibc)
import Glibc
#endif

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
    private var bytes = FrameBytes()
    private var start = 0
    /// Room kept between frames: more is returned once the frame that needed it is consumed.
    static let keptCapacity = 4 << 20

    public init(maxFrameBytes: Int = WireLimits.defaultMaxFrameBytes) {
        self.maxFrameBytes = maxFrameBytes
    }

    /// The body length the next (incomplete) frame announced, once its 4 length bytes are in.
    public var announcedLength: Int? {
        guard bytes.count - start >= 4 else { return nil }
        return length(at: start)
    }

    /// Bytes received but not yet returned as a frame.
    public var bufferedByteCount: Int { bytes.count - start }

    /// The room reserved for buffered bytes. Beyond 1 MiB it is mapped memory, resident only
    /// where bytes were written.
    public var reservedByteCount: Int { bytes.capacity }

    public mutating func append<Bytes: Collection>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        if bytes.withContiguousStorageIfAvailable({ append(UnsafeRawBufferPointer($0)) }) != nil { return }
        Array(bytes).withUnsafeBytes { append($0) }
    }

    public mutating func append(_ pointer: UnsafeRawBufferPointer) {
        if !isKnownUniquelyReferenced(&bytes) { bytes = bytes.copy() }
        makeRoom(for: pointer.count)
        bytes.append(pointer)
    }

    /// Grows the buffer with the bytes received: doubling, but never past the end of the frame
    /// being received, so a frame announced large but half sent costs what was sent.
    private mutating func makeRoom(for count: Int) {
        let needed = bytes.count + count
        let capacity = bytes.capacity
        guard needed > capacity else { return }
        var target = max(capacity * 2, 256)
        if let length = announcedLength, length <= maxFrameBytes { target = min(target, start + 4 + length) }
        bytes.reserve(max(needed, target))
    }

    private func length(at index: Int) -> Int {
        Int(bytes[index]) << 24 | Int(bytes[index + 1]) << 16 | Int(bytes[index + 2]) << 8 | Int(bytes[index + 3])
    }

    /// The next complete frame body, nil when more bytes are needed.
    /// Throws on a zero or oversized length; the stream cannot be resynchronised after that.
    public mutating func nextFrame() throws(FrameError) -> [UInt8]? {
        let available = bytes.count - start
        guard available >= 4 else { compact(); return nil }
        let length = length(at: start)
        if length == 0 { throw .emptyFrame }
        if length > maxFrameBytes { throw .frameTooLarge(length: length, limit: maxFrameBytes) }
        guard available >= 4 + length else { compact(); return nil }
        let body = Array(UnsafeBufferPointer(start: bytes.base! + start + 4, count: length))
        start += 4 + length
        if start == bytes.count {
            if !isKnownUniquelyReferenced(&bytes) { bytes = FrameBytes() }
            bytes.removeAll(keepingCapacity: bytes.capacity <= Self.keptCapacity)
            start = 0
        }
        return body
    }

    /// Drops consumed bytes once they dominate the buffer, so a long pipelined stream stays small.
    private mutating func compact() {
        if start > 0 && start >= bytes.count / 2 {
            if !isKnownUniquelyReferenced(&bytes) { bytes = bytes.copy() }
            bytes.removeFirst(start)
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
