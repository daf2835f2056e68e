import Dispatch
import Synchronization

/// A long array read in two parts at once, each on its own core: for the few requests whose
/// arrays run to hundreds of elements (`object.insert`'s objects).
extension MessageReader {
    /// As `optionalArray`, with a long array read in two parts at once, each on its own core
    /// with its own copy of `state` (what `element` learns from the elements before, e.g. the
    /// keys they sent). The second reader finds where its part starts (`ArraySplit`), tells
    /// the first, which reads from the array's start until there, and reads on to the end.
    /// The result is what one pass reads; when anything in either part fails, the array is
    /// read again in one pass, so an error is the one of the first element that has one,
    /// exactly as without the split. `minimum`: the second part starts after at least half
    /// as many elements (an array of about `minimum` or more is split).
    public mutating func optionalArray<T: Sendable, State: Sendable>(
        splittingFrom minimum: Int, state: State,
        _ element: @Sendable (_ reader: inout MessageReader, _ state: inout State) throws(MessageReadError) -> T
    ) throws(MessageReadError) -> [T]? {
        if readNull() { return nil }
        scanner.skipWhitespace()
        // An element takes at least two bytes and its comma; fewer bytes cannot hold enough.
        if scanner.bytes.count - scanner.index >= 3 * minimum, let (items, end) = readInParts(minimum: minimum, state: state, element) {
            scanner.index = end
            return items
        }
        var state = state
        var items: [T] = []
        try array { (reader) throws(MessageReadError) in items.append(try element(&reader, &state)) }
        return items
    }

    /// The array here read in two parts at once; nil when it was not split or a part failed.
    private func readInParts<T: Sendable, State: Sendable>(
        minimum: Int, state: State,
        _ element: @Sendable (_ reader: inout MessageReader, _ state: inout State) throws(MessageReadError) -> T
    ) -> (items: [T], end: Int)? {
        let bytes = LentBytes(bytes: scanner.bytes), steps = steps, start = scanner.index
        // The second part's first element, once the second reader has found it (-1 before).
        let split = Atomic<Int>(-1)
        let parts = Mutex<(first: ArrayPart<T>?, second: ArrayPart<T>?)>((nil, nil))
        DispatchQueue.concurrentPerform(iterations: 2) { part in
            var reader = MessageReader(bytes.bytes, steps: steps)
            var state = state
            if part == 0 {
                let read = reader.readFirstPart(at: start, until: split, state: &state, element)
                parts.withLock { $0.first = read }
            } else {
                guard let found = ArraySplit(bytes.bytes, array: start, minimumBefore: max(1, minimum / 2)) else { return }
                split.store(found.index, ordering: .releasing)
                let read = reader.readPart(found, state: &state, element)
                parts.withLock { $0.second = read }
            }
        }
        return parts.withLock { parts -> (items: [T], end: Int)? in
            guard let first = parts.first else { return nil }
            // The first reader did not stop (the second was late, or found no split): it read all.
            guard first.stoppedAt != nil else { return (first.items, first.end) }
            guard let second = parts.second, second.startsAt == first.end else { return nil }
            return (first.items + second.items, second.end)
        }
    }

    /// Reads the array at `start` from its first element until the element `split` names
    /// (when it names one before this reader gets past it), or to its end.
    private mutating func readFirstPart<T, State>(
        at start: Int, until split: borrowing Atomic<Int>, state: inout State,
        _ element: (_ reader: inout MessageReader, _ state: inout State) throws(MessageReadError) -> T
    ) -> ArrayPart<T>? {
        scanner.index = start
        guard scanner.beginArray() else { return nil }
        var items: [T] = []
        var index = 0
        while true {
            if index > 0, split.load(ordering: .acquiring) == index {
                // The second part starts after this one's comma: where the second reader began.
                scanner.skipWhitespace()
                guard scanner.index < scanner.bytes.count, scanner.bytes[scanner.index] == UInt8(ascii: ",") else { return nil }
                scanner.index += 1
                scanner.skipWhitespace()
                return ArrayPart(items: items, end: scanner.index, stoppedAt: index)
            }
            guard scanner.nextElement() else { break }
            steps.append(.index(index))
            guard let item = try? element(&self, &state) else { return nil }
            steps.removeLast()
            items.append(item)
            index += 1
        }
        guard scanner.finishedArray else { return nil }
        return ArrayPart(items: items, end: scanner.index)
    }

    /// Reads the array's elements from the one `split` found to the array's end.
    private mutating func readPart<T, State>(
        _ split: ArraySplit, state: inout State,
        _ element: (_ reader: inout MessageReader, _ state: inout State) throws(MessageReadError) -> T
    ) -> ArrayPart<T>? {
        scanner.resumeArray(at: split.start)
        var items: [T] = []
        var index = split.index
        repeat {
            steps.append(.index(index))
            guard let item = try? element(&self, &state) else { return nil }
            steps.removeLast()
            items.append(item)
            index += 1
        } while scanner.nextElement()
        guard scanner.finishedArray else { return nil }
        return ArrayPart(items: items, end: scanner.index, startsAt: split.start)
    }
}

/// A message's bytes handed to the readers of an array's two parts. The owner of the bytes
/// waits for both readers and nothing writes the bytes meanwhile, so sharing them is safe.
private struct LentBytes: @unchecked Sendable {
    let bytes: UnsafeBufferPointer<UInt8>
}

/// What one reader of a split array read: its elements, where it ended (past the array's `]`,
/// or, for the first part when it stopped, at the second part's first element).
private struct ArrayPart<T: Sendable>: Sendable {
    var items: [T]
    var end: Int
    /// The first part: the element it stopped before. The second: where its first element starts.
    var stoppedAt: Int?
    var startsAt: Int?

    init(items: [T], end: Int, stoppedAt: Int? = nil, startsAt: Int? = nil) {
        (self.items, self.end, self.stoppedAt, self.startsAt) = (items, end, stoppedAt, startsAt)
    }
}

/// Where the second part of a split array starts: the first element past 55% of the bytes
/// after the array's `[` (the reader that finds it reads from there on, so it takes a little
/// less than half), found by a quick walk that follows only strings and nesting. No grammar
/// check: the readers check every element, and the first part checks that it ends where this
/// says the second starts; otherwise the array is read again in one pass.
struct ArraySplit {
    /// The element's number in the array and where its first byte is.
    var index: Int
    var start: Int

    /// Nil when the array ends before the point, or fewer than `minimumBefore` elements precede it.
    init?(_ bytes: UnsafeBufferPointer<UInt8>, array: Int, minimumBefore: Int) {
        let count = bytes.count
        guard array < count, bytes[array] == UInt8(ascii: "[") else { return nil }
        let point = array + (count - array) / 100 * 55
        var index = array + 1, depth = 0, commas = 0
        while index < count {
            switch bytes[index] {
            case UInt8(ascii: "\""):
                index += 1
                while index < count, bytes[index] != UInt8(ascii: "\"") {
                    index += bytes[index] == UInt8(ascii: "\\") ? 2 : 1
                }
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth += 1
            case UInt8(ascii: "]"), UInt8(ascii: "}"):
                if depth == 0 { return nil }
                depth -= 1
            case UInt8(ascii: ",") where depth == 0:
                commas += 1
                if index >= point {
                    guard commas >= minimumBefore else { return nil }
                    index += 1
                    while index < count, bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x0D || bytes[index] == 0x09 { index += 1 }
                    guard index < count else { return nil }
                    (self.index, start) = (commas, index)
                    return
                }
            default:
                break
            }
            index += 1
        }
        return nil
    }
}
