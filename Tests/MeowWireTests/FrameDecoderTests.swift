import MeowWire
import Testing

@Suite("Framing")
struct FrameDecoderTests {
    let body = Array(#"{"id":1,"op":"ping"}"#.utf8)

    @Test("a frame split byte by byte is returned once, whole")
    func splitByteByByte() throws {
        var decoder = FrameDecoder()
        let frame = FrameEncoder.frame(body)
        var frames: [[UInt8]] = []
        for byte in frame {
            decoder.append([byte])
            if let next = try decoder.nextFrame() { frames.append(next) }
        }
        #expect(frames == [body])
        #expect(decoder.bufferedByteCount == 0)
    }

    @Test("several frames in one read come out in order")
    func severalFramesInOneRead() throws {
        var decoder = FrameDecoder()
        let bodies = (1...5).map { Array(#"{"id":\#($0)}"#.utf8) }
        decoder.append(bodies.flatMap { FrameEncoder.frame($0) })
        var out: [[UInt8]] = []
        while let frame = try decoder.nextFrame() { out.append(frame) }
        #expect(out == bodies)
    }

    @Test("a frame and a half: the half waits for its rest")
    func partialSecondFrame() throws {
        var decoder = FrameDecoder()
        let stream = FrameEncoder.frame(body) + FrameEncoder.frame(body)
        decoder.append(stream[0..<(stream.count - 3)])
        #expect(try decoder.nextFrame() == body)
        #expect(try decoder.nextFrame() == nil)
        #expect(decoder.announcedLength == body.count)
        decoder.append(stream[(stream.count - 3)...])
        #expect(try decoder.nextFrame() == body)
    }

    @Test("a frame exactly at the limit is accepted")
    func atTheLimit() throws {
        var decoder = FrameDecoder(maxFrameBytes: 64)
        let exact = [UInt8](repeating: 0x20, count: 64)
        decoder.append(FrameEncoder.frame(exact))
        #expect(try decoder.nextFrame() == exact)
    }

    @Test("one byte over the limit fails from the length alone, before the body arrives")
    func overTheLimit() {
        var decoder = FrameDecoder(maxFrameBytes: 64)
        decoder.append([0, 0, 0, 65])  // only the length: nothing is buffered for the body
        #expect(throws: FrameError.frameTooLarge(length: 65, limit: 64)) { try decoder.nextFrame() }
    }

    @Test("a length of 0 is an error")
    func zeroLength() {
        var decoder = FrameDecoder()
        decoder.append([0, 0, 0, 0])
        #expect(throws: FrameError.emptyFrame) { try decoder.nextFrame() }
    }

    @Test("garbage bytes read as a huge length")
    func garbage() {
        var decoder = FrameDecoder()
        decoder.append(Array("GET / HTTP/1.1\r\n".utf8))
        #expect(throws: FrameError.self) { try decoder.nextFrame() }
    }

    @Test("the encoder writes a 4-byte big-endian length")
    func encoderLength() {
        let frame = FrameEncoder.frame([UInt8](repeating: 1, count: 0x010203))
        #expect(Array(frame.prefix(4)) == [0x00, 0x01, 0x02, 0x03])
        #expect(frame.count == 0x010203 + 4)
    }

    @Test("a frame larger than the mapped threshold, fed in reads of 64 KiB with a small frame behind it, comes out whole")
    func largeFrameInReads() throws {
        var decoder = FrameDecoder()
        let large = (0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let stream = FrameEncoder.frame(large) + FrameEncoder.frame(body)
        var out: [[UInt8]] = []
        var offset = 0
        while offset < stream.count {
            let end = min(offset + 65536, stream.count)
            decoder.append(stream[offset..<end])
            offset = end
            while let frame = try decoder.nextFrame() { out.append(frame) }
        }
        #expect(out.count == 2 && out[0] == large && out[1] == body)
        #expect(decoder.bufferedByteCount == 0)
    }

    @Test("room grows with the bytes received, not with the announced length")
    func roomFollowsReceivedBytes() throws {
        var decoder = FrameDecoder()
        decoder.append([0x01, 0x00, 0x00, 0x00] + [UInt8](repeating: 0x20, count: 100_000))  // announces 16 MiB
        #expect(try decoder.nextFrame() == nil)
        #expect(decoder.reservedByteCount < 1 << 20)
        var chunk = 100_004
        while chunk < 3 << 20 {
            decoder.append([UInt8](repeating: 0x20, count: 65536))
            chunk += 65536
        }
        #expect(try decoder.nextFrame() == nil)
        #expect(decoder.reservedByteCount <= 2 * decoder.bufferedByteCount)
    }

    @Test("a copy of a decoder is independent of the original")
    func copiesAreIndependent() throws {
        var original = FrameDecoder()
        let frame = FrameEncoder.frame(body)
        original.append(frame.prefix(5))
        var copy = original
        copy.append(frame.dropFirst(5))
        #expect(try copy.nextFrame() == body)
        #expect(try original.nextFrame() == nil)
        #expect(original.bufferedByteCount == 5)
        original.append(frame.dropFirst(5))
        #expect(try original.nextFrame() == body)
    }
}
