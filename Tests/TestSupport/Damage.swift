import MeowWire

/// Damages JSON text the way a broken writer or a cut frame would: one byte removed, inserted
/// or replaced, the byte one of JSON's structural characters, a quote, a space, a digit or a
/// backslash (tests of readers that must refuse what the parser refuses).
public func damage(_ bytes: inout [UInt8], random: inout SplitMix64) {
    guard !bytes.isEmpty else { return }
    let pieces = Array("{}[],:\" 0\\".utf8)
    let at = Int(random.next() % UInt64(bytes.count))
    let piece = pieces[Int(random.next() % UInt64(pieces.count))]
    switch random.next() % 3 {
    case 0: bytes.remove(at: at)
    case 1: bytes.insert(piece, at: at)
    default: bytes[at] = piece
    }
}
