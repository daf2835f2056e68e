import FoundationEssentials
import MeowWire
import ServiceRuntime
import SQLiteKit

/// Core Data keeps both sides of a one-to-one relationship with an inverse: setting
/// `passport.owner = ann` also sets `ann.passport = passport`, and clears the side of the
/// objects either was paired with before. The save does that on the rows it wrote, in its
/// transactions, with a history entry per row it changes (so the mirror sends them).
extension SaveOperation {
    struct PairEdit {
        var object: ContextObject
        var store: Int
        var key: Int64
    }

    func pairOneToOne(_ edits: [PairEdit], writer: inout SaveWriter) throws {
        for edit in edits {
            let entity = edit.object.entity
            let store = stores.list[edit.store]
            for (number, relationship) in entity.toOneRelationships.enumerated() {
                guard let inverseName = relationship.inverse, let destination = model.entity(named: relationship.destination),
                      let inverse = destination.relationship(inverseName), !inverse.toMany else { continue }
                let position = entity.position(ofToOne: number)
                guard edit.object.isInserted || edit.object.change(at: position) != nil,
                      let row = try store.read(entity, primaryKey: edit.key) else { continue }
                let target = row.values[position].int64
                // The object it was paired with before lets go of it.
                if !edit.object.isInserted, let old = edit.object.snapshotValues[position].string.flatMap({ ObjectID(uri: $0)?.primaryKey }), old != target {
                    try clear(inverseName, of: destination, key: old, ifPointingAt: edit.key, store: edit.store, writer: &writer)
                }
                guard let target, let partner = try store.read(destination, primaryKey: target),
                      let inversePosition = destination.position(of: inverseName) else { continue }
                let previous = partner.values[inversePosition].int64
                guard previous != edit.key else { continue }
                try write(inverseName, of: destination, row: partner, value: .integer(edit.key), store: edit.store, writer: &writer)
                // The partner's previous partner loses it.
                if let previous {
                    try clear(relationship.name, of: entity, key: previous, ifPointingAt: target, store: edit.store, writer: &writer)
                }
            }
        }
    }

    private func clear(_ name: String, of entity: EntityDescription, key: Int64, ifPointingAt pointee: Int64, store index: Int,
                       writer: inout SaveWriter) throws {
        guard let position = entity.position(of: name), let row = try stores.list[index].read(entity, primaryKey: key),
              row.values[position].int64 == pointee else { return }
        try write(name, of: entity, row: row, value: .null, store: index, writer: &writer)
    }

    private func write(_ name: String, of entity: EntityDescription, row: PersistentStore.StoredRow, value: SQLValue, store index: Int,
                       writer: inout SaveWriter) throws {
        let store = stores.list[index]
        try store.update(entity, primaryKey: row.primaryKey, changes: [(name, value)], version: row.version + 1)
        try writer.record(index) { try $0.updated(entity: entity.name, primaryKey: row.primaryKey, uuid: row.uuid, changed: [name]) }
    }
}
