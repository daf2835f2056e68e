import Dispatch
import MeowWire
import SQLiteKit
import StoreWire
import Synchronization

/// A new object's values checked and converted before it is inserted, so the conversion can
/// run ahead on another core (`PreparedBatch`) while only the context's own work waits for the
/// insert. What needs the context is kept for the insert: the temporary IDs the values point
/// at (each must be registered then) and the conversion's failure, thrown after the temporary
/// IDs met before it are checked, so the error is the one a conversion at the insert meets first.
struct PreparedValues: Sendable {
    /// Edits against the defaults by position (a value equal to the default is no edit), and how many.
    var changes: [SQLValue?] = []
    var count = 0
    var manyToMany: [ManyToManyValue] = []
    var temporaryTargets: [String] = []
    var failure: (any Error)?

    init(_ values: some Sequence<(key: String, value: JSONValue)>, entity: EntityDescription, model: ManagedObjectModel,
         converter: inout ValueConverter, defaults: [SQLValue]) {
        var changes = [SQLValue?](repeating: nil, count: defaults.count)
        var count = 0, temporaryTargets: [String] = []
        do {
            manyToMany = try converter.convert(values, entity: entity, model: model, temporaryTarget: { temporaryTargets.append($0) }) { position, value in
                // As `ContextObject.setChange`: a value equal to the default is no edit.
                let new: SQLValue? = value == defaults[position] ? nil : value
                if changes[position] == nil, new != nil { count += 1 }
                if changes[position] != nil, new == nil { count -= 1 }
                changes[position] = new
            }
        } catch {
            failure = error
        }
        (self.changes, self.count, self.temporaryTargets) = (changes, count, temporaryTargets)
    }
}

/// The values of a batch's objects prepared (`PreparedValues`), a large batch's in two halves
/// at once. Each half has its own converter and defaults; they share only the model and the
/// items, which are immutable. An item whose entity the model lacks has none: the insert
/// refuses it before it needs its values.
struct PreparedBatch: Sendable {
    /// A batch of this many objects or more is prepared on two cores: converting a few hundred
    /// objects takes far longer than handing half of them to another core.
    static let splitFrom = 256

    private var halves: [[PreparedValues?]]
    private var split: Int

    init(_ items: [InsertItem], model: ManagedObjectModel) {
        guard items.count >= Self.splitFrom else {
            halves = [Self.prepare(items[...], model: model)]
            split = items.count
            return
        }
        let split = items.count / 2
        let results = Mutex<[[PreparedValues?]]>([[], []])
        DispatchQueue.concurrentPerform(iterations: 2) { half in
            let prepared = Self.prepare(half == 0 ? items[..<split] : items[split...], model: model)
            results.withLock { $0[half] = prepared }
        }
        halves = results.withLock { $0 }
        self.split = split
    }

    /// The prepared values of item `index`.
    subscript(index: Int) -> PreparedValues? {
        index < split ? halves[0][index] : halves[1][index - split]
    }

    private static func prepare(_ items: ArraySlice<InsertItem>, model: ManagedObjectModel) -> [PreparedValues?] {
        var converter = ValueConverter(), defaults = EntityDefaults()
        var entity: EntityDescription?
        var prepared: [PreparedValues?] = []
        prepared.reserveCapacity(items.count)
        for item in items {
            if entity?.name != item.entity { entity = model.entity(named: item.entity) }
            guard let entity else {
                prepared.append(nil)
                continue
            }
            prepared.append(PreparedValues(item.values?.members ?? [], entity: entity, model: model, converter: &converter, defaults: defaults.of(entity)))
        }
        return prepared
    }
}
