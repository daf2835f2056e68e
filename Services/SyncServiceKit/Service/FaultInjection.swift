import CloudWire
import Foundation
import MeowWire
import ServiceRuntime
import Synchronization

/// What one request touches, for faults that name a zone or a record type: one item per record
/// saved, deleted or fetched, or per zone named.
struct FaultTarget: Sendable {
    struct Item: Sendable {
        var zoneID: ZoneID
        var recordType: String?
    }
    var items: [Item] = []

    init() {}

    /// The items of a request's params (none for params naming no zone).
    init(of params: any Sendable) {
        switch params {
        case let modify as ModifyParams:
            items = (modify.saves ?? []).map { Item(zoneID: $0.zoneID, recordType: $0.recordType) }
                + (modify.deletes ?? []).map { Item(zoneID: $0.zoneID) }
        case let fetch as FetchRecordsParams: items = fetch.recordIDs.map { Item(zoneID: $0.zoneID) }
        case let changes as FetchZoneChangesParams: items = [Item(zoneID: changes.zoneID)]
        case let zones as ZonesParams: items = (zones.zoneIDs ?? []).map { Item(zoneID: $0) }
        case let share as ShareParams: items = [Item(zoneID: share.zoneID)]
        default: items = []
        }
    }

    /// Whether some item is in the fault's zone and of its record type (for the fields it sets).
    func matches(_ fault: CloudFault, caller: String?) -> Bool {
        items.contains { item in
            let zone = item.zoneID.resolved(caller: caller ?? "")
            return (fault.zone == nil || fault.zone == zone.zoneName)
                && (fault.zoneOwner == nil || fault.zoneOwner == zone.ownerName)
                && (fault.recordType == nil || fault.recordType == item.recordType)
        }
    }
}

/// What the server does to one request because of a fault.
struct FaultEffect: Sendable {
    var kind: CloudFault.Effect
    var fault: CloudFault
}

/// Armed faults, consumed in the order they were armed.
public final class FaultInjector: Sendable {
    private struct State {
        var faults: [CloudFault] = []
        var generator = SplitMix64(state: 0x4D45_4F57)
    }
    private let state = Mutex(State())

    /// Every CloudKit error code except the three whose meaning is per item and needs the
    /// server's data in its details (serverRecordChanged carries the server record,
    /// partialFailure and batchRequestFailed the per-item errors): an injected one would tell a
    /// client something no server says. The rest arrive as the whole request's error.
    public static let allowedCodes: Set<ErrorCode> = Set(CloudKitError.all.map(\.code))
        .subtracting([.serverRecordChanged, .partialFailure, .batchRequestFailed])

    /// Requests held by `hold` faults.
    let held = HeldRequests()
    /// A held request runs after this many seconds even if nobody releases it: a test that
    /// fails before its release never leaves a deployment's client waiting for good.
    public static let longestHold = 60.0

    public init() {}

    public func arm(_ fault: CloudFault) throws -> CloudFaults {
        let kind = fault.effect ?? .error
        if kind == .error {
            guard let code = fault.code, Self.allowedCodes.contains(code) else {
                throw WireError(.invalidArguments, "code must be one of \(Self.allowedCodes.map(\.rawValue).sorted().joined(separator: ", ")).")
            }
        }
        if kind == .holdBeforeCommit, fault.op != "records.modify" {
            throw WireError(.invalidArguments, "effect holdBeforeCommit needs op 'records.modify' (only a modify decides before it commits); got \(fault.op.map { "'\($0)'" } ?? "no op").")
        }
        guard (fault.count ?? 1) >= 1 else { throw WireError(.invalidArguments, "count must be at least 1.") }
        if let probability = fault.probability, !(0...1).contains(probability) {
            throw WireError(.invalidArguments, "probability must be from 0 to 1; got \(probability).")
        }
        if let latency = fault.latencyMilliseconds, !(0...60_000).contains(latency) {
            throw WireError(.invalidArguments, "latencyMilliseconds must be from 0 to 60000; got \(latency).")
        }
        return CloudFaults(faults: state.withLock { state in
            if let seed = fault.seed { state.generator = SplitMix64(state: seed) }
            state.faults.append(fault)
            return state.faults
        })
    }

    /// Arms every fault of a start-up file: `{"faults": [CloudFault, …]}`.
    public func arm(file: String) throws {
        guard let data = FileManager.default.contents(atPath: file) else {
            throw WireError(.invalidArguments, "Cannot read the faults file \(file).")
        }
        let decoded: CloudFaults
        do { decoded = try JSONDecoder().decode(CloudFaults.self, from: data) } catch {
            throw WireError(.invalidArguments, "The faults file \(file) is not {\"faults\": [...]}: \(error)")
        }
        for fault in decoded.faults { _ = try arm(fault) }
    }

    public func clear() -> CloudFaults {
        state.withLock { $0.faults.removeAll() }
        return CloudFaults(faults: [])
    }

    /// Takes one use of the first fault matching this request, if any (and if its probability
    /// draw says so: a draw that misses uses nothing).
    /// `target` is only worked out when an armed fault names a zone or record type.
    func take(op: String, user: String?, target: () -> FaultTarget = { FaultTarget() }) -> FaultEffect? {
        state.withLock { state in
            guard !state.faults.isEmpty else { return nil }
            var touched: FaultTarget?
            guard let index = state.faults.firstIndex(where: { fault in
                guard (fault.op == nil || fault.op == op) && (fault.user == nil || fault.user == user) else { return false }
                if fault.zone == nil && fault.zoneOwner == nil && fault.recordType == nil { return true }
                if touched == nil { touched = target() }
                return touched?.matches(fault, caller: user) == true
            }) else { return nil }
            let fault = state.faults[index]
            if let probability = fault.probability, probability < 1 {
                let draw = Double(state.generator.next() >> 11) / Double(1 << 53)
                if draw >= probability { return nil }
            }
            let left = (fault.count ?? 1) - 1
            if left <= 0 { state.faults.remove(at: index) } else { state.faults[index].count = left }
            return FaultEffect(kind: fault.effect ?? .error, fault: fault)
        }
    }

    static func error(for fault: CloudFault, op: String) -> WireError {
        // As declared (a code read from the request carries no CKError number).
        let code = fault.code.flatMap(CloudKitError.init)?.code ?? .serverResponseLost
        var details: [String: JSONValue] = ["injected": true, "op": .string(op)]
        if let retry = fault.retryAfterSeconds { details["retryAfterSeconds"] = .double(retry) }
        let retryText = fault.retryAfterSeconds.map { " Retry after \($0) seconds." } ?? ""
        return WireError(code, "Injected \(code) for '\(op)'.\(retryText)", details: details)
    }
}

/// The requests `hold` faults stopped before they ran, and the gate that lets them go.
final class HeldRequests: @unchecked Sendable {
    // @unchecked: `count` and `releases` are only read and written holding `condition`.
    private let condition = NSCondition()
    private var count = 0
    /// How many times the gate has opened; a request waits for it to move past the value it saw.
    private var releases = 0

    /// Waits until released (true) or until `seconds` pass (false).
    func hold(seconds: Double) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        count += 1
        condition.broadcast()
        let ticket = releases
        let deadline = Date().addingTimeInterval(seconds)
        while releases == ticket {
            if !condition.wait(until: deadline) && releases == ticket {
                count -= 1
                return false
            }
        }
        return true
    }

    /// Lets every held request run; returns how many there were.
    func releaseAll() -> Int {
        condition.lock()
        defer { condition.unlock() }
        let released = count
        count = 0
        releases += 1
        condition.broadcast()
        return released
    }

    /// Waits until at least `wanted` requests are held, or `seconds` pass; returns how many are.
    func await(_ wanted: Int, seconds: Double) -> Int {
        condition.lock()
        defer { condition.unlock() }
        let deadline = Date().addingTimeInterval(seconds)
        while count < wanted, condition.wait(until: deadline) {}
        return count
    }
}

public struct AwaitHeldParams: Codable, Sendable {
    /// How many held requests to wait for (default 1).
    public var count: Int?
    /// How long to wait (default 10, at most 60).
    public var timeoutSeconds: Double?
}

public struct HeldRequestsResult: Codable, Sendable {
    /// Requests held now (admin.awaitHeldRequests) or let go (admin.releaseHeldRequests).
    public var held: Int?
    public var released: Int?
}
