import Foundation
import MeowCareCluster
import Testing

/// The convergence or invariant check that failed, with its readable report.
public struct MeowAssertionFailure: Error, CustomStringConvertible {
    public var description: String
}

extension MeowCluster {
    /// Fails the test unless each device's stores equal the cloud's databases (see
    /// `convergence()`); call `settle()` first. In a Swift Testing test the diff is recorded as
    /// an issue at the caller and the test goes on (like `#expect`); elsewhere (XCTest) a
    /// `MeowAssertionFailure` carrying the diff is thrown.
    public func assertConverged(sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let report = try await convergence()
        guard !report.isConverged else { return }
        try fail(report.description, sourceLocation)
    }

    /// Fails the test if any of `meowctl doctor`'s checks finds a violation on any device
    /// (see `invariants()`), as `assertConverged` reports.
    public func assertInvariants(sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let report = try await invariants()
        guard !report.isClean else { return }
        try fail(report.description, sourceLocation)
    }

    private func fail(_ text: String, _ sourceLocation: SourceLocation) throws {
        guard Test.current != nil else { throw MeowAssertionFailure(description: text) }
        Issue.record(Comment(rawValue: text), sourceLocation: sourceLocation)
    }
}
