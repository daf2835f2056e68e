import CloudWire
import FoundationEssentials
import MeowWire
import ServiceRuntime
import SQLiteKit
import StoreWire

// The service's side of its params (docs/protocol-store-service.md; the types are StoreWire's).

extension InsertItem {
    /// The zone as a row keeps it (`owner/zoneName`).
    var zoneKey: String? { zone.map { ZoneID(zoneName: $0, ownerName: zoneOwner ?? ZoneID.defaultOwner).key } }
}

/// `fetch`'s answer in the format asked for: the rows are written straight from the store's.
enum FetchReply: Encodable, Sendable {
    case objects(FetchedObjects)
    case rows(FetchedRows<FetchRows>)

    func encode(to encoder: any Encoder) throws {
        switch self {
        case let .objects(result): try result.encode(to: encoder)
        case let .rows(result): try result.encode(to: encoder)
        }
    }
}

extension FetchReply: JSONTextWritable {
    /// Rows are written as text directly (`{"columns":…,"rows":…}`, the encoder's key order):
    /// through the encoder's node per cell, writing the reply was nine tenths of a sorted fetch
    /// of 10,000 events. Objects go through the encoder.
    func writeJSON(to out: inout String) -> Bool {
        guard case let .rows(result) = self else { return false }
        let start = out.endIndex
        out += #"{"columns":"#
        out += JSONWriter.text(strings: result.columns)
        out += #","rows":"#
        guard result.rows.writeJSON(to: &out) else {
            out.removeSubrange(start...)
            return false
        }
        out += "}"
        return true
    }
}

extension DeviceClockParams {
    func apply(to clock: DeviceClock) throws {
        if now != nil, advanceSeconds != nil {
            throw ServiceError(.invalidField, "clock.set takes 'now' or 'advanceSeconds', not both.", details: ["field": "params.advanceSeconds"])
        }
        for (name, value) in [("now", now ?? nil), ("advanceSeconds", advanceSeconds)] {
            if let value, !value.isFinite {
                throw ServiceError(.invalidField, "clock.set: '\(name)' must be a finite number of seconds.", details: ["field": .string("params.\(name)")])
            }
        }
        if let now { clock.set(now: now) }
        if let advanceSeconds { clock.advance(by: advanceSeconds) }
    }
}
