#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
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
// @unchecked Sendable: `base` points into `storage`, which a decoder copies before changing one
// it shares (as Array does), so copies handed to other threads never see each other's writes.
public struct FrameDecoder: @unchecked Sendable {
    public let maxFrameBytes: Int
    private var storage = FrameBytes()
    /// `storage.base` and `storage.capacity`, cached (see FrameBytes).
    private var base: UnsafeMutablePointer<UInt8>?
    private var capacity = 0
    private var count = 0
    private var start = 0
    /// Room kept between frames: more is returned once the frame that needed it is consumed.
    static let keptCapacity = 4 << 20

    public init(maxFrameBytes: Int = WireLimits.defaultMaxFrameBytes) {
        self.maxFrameBytes = maxFrameBytes
    }

    /// The body length the next (incomplete) frame announced, once its 4 length bytes are in.
    public var announcedLength: Int? {
        guard count - start >= 4, let base else { return nil }
        return Self.length(at: base + start)
    }

    /// Bytes received but not yet returned as a frame.
    public var bufferedByteCount: Int { count - start }

    /// The room reserved for buffered bytes. Beyond 1 MiB it is mapped memory, resident only
    /// where bytes were written.
    public var reservedByteCount: Int { capacity }

    public mutating func append<Bytes: Collection>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        if bytes.withContiguousStorageIfAvailable({ append(UnsafeRawBufferPointer($0)) }) != nil { return }
        Array(bytes).withUnsafeBytes { append($0) }
    }

    public mutating func append(_ pointer: UnsafeRawBufferPointer) {
        guard let source = pointer.baseAddress, pointer.count > 0 else { return }
        if !isKnownUniquelyReferenced(&storage) { adopt(storage.copy(count: count)) }
        makeRoom(for: pointer.count)
        UnsafeMutableRawPointer(base! + count).copyMemory(from: source, byteCount: pointer.count)
        count += pointer.count
    }

    /// Grows the buffer with the bytes received: doubling, but never past the end of the frame
    /// being received, so a frame announced large but half sent costs what was sent.
    private mutating func makeRoom(for added: Int) {
        let needed = count + added
        guard needed > capacity else { return }
        var target = max(capacity * 2, 256)
        if let length = announcedLength, length <= maxFrameBytes { target = min(target, start + 4 + length) }
        storage.reserve(max(needed, target), keeping: count)
        base = storage.base
        capacity = storage.capacity
    }

    private mutating func adopt(_ fresh: FrameBytes) {
        storage = fresh
        base = fresh.base
        capacity = fresh.capacity
    }

    private static func length(at header: UnsafeMutablePointer<UInt8>) -> Int {
        Int(header[0]) << 24 | Int(header[1]) << 16 | Int(header[2]) << 8 | Int(header[3])
    }

    /// The next complete frame body, nil when more bytes are needed.
    /// Throws on a zero or oversized length; the stream cannot be resynchronised after that.
    public mutating func nextFrame() throws(FrameError) -> [UInt8]? {
        let available = count - start
        guard available >= 4, let base else { compact(); return nil }
        let header = base + start
        let length = Self.length(at: header)
        if length == 0 { throw .emptyFrame }
        if length > maxFrameBytes { throw .frameTooLarge(length: length, limit: maxFrameBytes) }
        guard available >= 4 + length else { compact(); return nil }
        let body = Array(UnsafeBufferPointer(start: header + 4, count: length))
        start += 4 + length
        if start == count {
            count = 0
            start = 0
            if capacity > Self.keptCapacity || !isKnownUniquelyReferenced(&storage) { adopt(FrameBytes()) }
        }
        return body
    }

    /// Drops consumed bytes once they dominate the buffer, so a long pipelined stream stays small.
    private mutating func compact() {
        guard start > 0 && start >= count / 2 else { return }
        if !isKnownUniquelyReferenced(&storage) { adopt(storage.copy(count: count)) }
        if let base, start < count { base.update(from: base + start, count: count - start) }
        count -= start
        start = 0
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
