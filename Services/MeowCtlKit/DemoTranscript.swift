import Foundation
import MeowWire

/// The demo's readable transcript and its verdict: every check is printed as it is made, and
/// the demo exits 0 only if every check passed.
final class DemoTranscript {
    private(set) var passed = 0
    private(set) var failed = 0
    private(set) var skipped = 0

    func chapter(_ title: String) {
        print("\n== \(title)")
        flush()
    }

    func say(_ text: String) {
        print("   \(text)")
        flush()
    }

    func check(_ condition: Bool, _ text: String) {
        if condition { passed += 1 } else { failed += 1 }
        print("   \(condition ? "✔" : "✘") \(text)")
        flush()
    }

    func skip(_ text: String) {
        skipped += 1
        print("   – skipped: \(text)")
        flush()
    }

    /// Runs a chapter's body; an unexpected error fails the chapter instead of aborting the demo.
    func run(_ title: String, _ body: () async throws -> Void) async {
        chapter(title)
        do {
            try await body()
        } catch let error as WireError {
            check(false, "unexpected error: \(error.code): \(error.message)")
        } catch {
            check(false, "unexpected error: \(error)")
        }
    }

    private func flush() { fflush(nil) }
}
