import MeowWire

/// xoshiro256**: the explorer's generator. Seeded through SplitMix64 (as its authors advise), it
/// gives the same sequence for a seed on every machine and toolchain — Swift's default
/// generator cannot be seeded — so a seed names one schedule for good.
public struct Xoshiro256: RandomNumberGenerator, Sendable {
    private var s: (UInt64, UInt64, UInt64, UInt64)

    public init(seed: UInt64) {
        var mix = SplitMix64(state: seed)
        s = (mix.next(), mix.next(), mix.next(), mix.next())
    }

    public mutating func next() -> UInt64 {
        let result = rotl(s.1 &* 5, 7) &* 9
        let t = s.1 << 17
        s.2 ^= s.0
        s.3 ^= s.1
        s.1 ^= s.2
        s.0 ^= s.3
        s.2 ^= t
        s.3 = rotl(s.3, 45)
        return result
    }

    private func rotl(_ x: UInt64, _ k: UInt64) -> UInt64 { (x << k) | (x >> (64 - k)) }

    /// A number in `0..<bound` without modulo bias worth minding at these sizes (bound < 2^32).
    mutating func below(_ bound: Int) -> Int {
        precondition(bound > 0)
        return Int(((next() >> 32) * UInt64(bound)) >> 32)
    }

    /// One of `options`, each as likely as its weight (weights > 0).
    mutating func pick<T>(_ options: [(T, Double)]) -> T {
        let total = options.reduce(0) { $0 + $1.1 }
        var point = Double(next() >> 11) / Double(1 << 53) * total
        for (option, weight) in options {
            if point < weight { return option }
            point -= weight
        }
        return options[options.count - 1].0
    }
}
