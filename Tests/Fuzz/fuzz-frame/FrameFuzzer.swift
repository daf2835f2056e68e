import MeowWire

/// libFuzzer target for FrameDecoder (no main: libFuzzer supplies it; built only with
/// MEOW_FUZZ=1 and --sanitize=fuzzer, see scripts/fuzz.sh). The input is a byte stream fed in
/// chunks whose sizes come from the first byte; checked on every input:
/// - the frames returned, re-framed, are exactly the stream's prefix that was consumed;
/// - a frame is never empty nor over the limit, and an error is thrown only for a zero or
///   oversized length (the stream cannot be resynchronised after it);
/// - without an error, the bytes left buffered are the unconsumed rest;
/// - every body survives FrameEncoder → a fresh FrameDecoder unchanged.
@_cdecl("LLVMFuzzerTestOneInput")
public func frameFuzzer(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size > 0 else { return 0 }
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    let chunk = Int(input[0] % 17) + 1
    let stream = input.dropFirst()
    let limit = 4096
    var decoder = FrameDecoder(maxFrameBytes: limit)
    var reframed: [UInt8] = []
    var failed: FrameError?
    var offset = stream.startIndex
    feeding: while offset < stream.endIndex {
        let end = min(offset + chunk, stream.endIndex)
        decoder.append(stream[offset..<end])
        offset = end
        do {
            while let body = try decoder.nextFrame() {
                precondition(!body.isEmpty && body.count <= limit, "frame of \(body.count) bytes returned")
                FrameEncoder.appendFrame(body, to: &reframed)
                var fresh = FrameDecoder(maxFrameBytes: limit)
                fresh.append(FrameEncoder.frame(body))
                precondition((try? fresh.nextFrame()) == body, "a body did not survive re-framing")
            }
        } catch {
            failed = error
            break feeding
        }
    }
    precondition(Array(stream.prefix(reframed.count)) == reframed, "frames returned are not the stream's prefix")
    let rest = Array(stream.dropFirst(reframed.count))
    if let failed {
        let length = rest.count >= 4 ? Int(rest[0]) << 24 | Int(rest[1]) << 16 | Int(rest[2]) << 8 | Int(rest[3]) : -1
        switch failed {
        case .emptyFrame: precondition(length == 0, "emptyFrame for a length of \(length)")
        case let .frameTooLarge(announced, _): precondition(announced == length && length > limit, "frameTooLarge for \(length)")
        default: preconditionFailure("unexpected frame error \(failed)")
        }
    } else {
        precondition(decoder.bufferedByteCount == rest.count, "\(decoder.bufferedByteCount) bytes buffered, \(rest.count) unconsumed")
    }
    return 0
}
