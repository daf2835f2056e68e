import Foundation

/// A fresh, short temp directory (socket paths must stay under 108 bytes), removed on deinit.
public final class TemporaryDirectory: Sendable {
    public let path: String

    public init(prefix: String = "mw") {
        var template = Array("/tmp/\(prefix).XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(made != nil, "mkdtemp failed")
        path = String(cString: template.withUnsafeBufferPointer { $0.baseAddress! })
    }

    public func file(_ name: String) -> String { "\(path)/\(name)" }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}
