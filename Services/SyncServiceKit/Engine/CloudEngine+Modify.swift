import CloudWire
import FoundationEssentials
import MeowWire
import SQLiteKit

/// The outcome of one modify request before it is turned into a reply.
struct ModifyOutcome: Sendable {
    var saved: [CloudRecord] = []
    var deleted: [RecordID] = []
    var errors: [String: WireError] = [:]
    /// Field definitions the request's saves added to the schema (record type, field, type).
    var defined: [(recordType: String, field: String, type: String)] = []
}

extension CloudEngine {
    /// records.modify: saves and deletes answered per the decision table of docs/RULES.md (see docs/protocol-sync-service.md).
    /// Items that fail are reported inside one `partialFailure`; everything else is committed.
    public func modifyRecords(caller: String, _ params: ModifyParams, trace: RequestTrace? = nil) throws -> ModifyResult {
        let saves = params.saves ?? []
        let deletes = params.deletes ?? []
        trace?.database = params.database.rawValue
        let (encoded, requestBytes) = Self.storedFields(of: saves)
        let policy = params.savePolicy ?? .ifServerRecordUnchanged
        let atomic = params.atomic ?? true
        var zoneSet: Set<ZoneID> = []
        // A batch's items are mostly in one zone: a zone equal to the last one is not hashed again.
        var lastZone: ZoneID?
        func note(_ zoneID: ZoneID) {
            guard zoneID != lastZone else { return }
            zoneSet.insert(zoneID.resolved(caller: caller))
            lastZone = zoneID
        }
        for save in saves { note(save.zoneID) }
        for delete in deletes { note(delete.zoneID) }
        let zones = Array(zoneSet)
        let schema = fieldSchema.withLock { $0 }
        let savedForm = ModifyBatch.SavedForm(params)
        // The reply, written on the reply writer thread while the commit waits for the disk.
        var writtenAhead: WorkerResult<ModifyResult?>?
        let outcome = try locks.withZones(zones) {
            // Decide on a read-only connection (these zones cannot change: their locks are
            // held), then apply the plans in one transaction on the writer.
            let decision = try read { state -> ModifyDecision in
                let limits = state.limits
                guard saves.count + deletes.count <= limits.maxItemsPerRequest else {
                    throw WireError(.limitExceeded, "The request has \(saves.count + deletes.count) items; at most \(limits.maxItemsPerRequest) are allowed. Split it in half and retry.",
                                    details: ["items": .int(saves.count + deletes.count), "maxItems": .int(limits.maxItemsPerRequest)])
                }
                guard requestBytes <= limits.maxRequestBytes else {
                    throw WireError(.limitExceeded, "The request carries \(requestBytes) bytes of records; at most \(limits.maxRequestBytes) are allowed. Split it in half and retry.",
                                    details: ["bytes": .int(requestBytes), "maxBytes": .int(limits.maxRequestBytes)])
                }
                var batch = ModifyBatch(state: state, caller: caller, scope: params.database, policy: policy, atomic: atomic, trace: trace)
                batch.schema = schema
                return try batch.decide(saves: saves, encodedFields: encoded, deletes: deletes, signatures: params.typeSignatures ?? [])
            }
            trace?.pauseBeforeCommit?()
            return try write { state -> ModifyOutcome in
                var batch = ModifyBatch(state: state, caller: caller, scope: params.database, policy: policy, atomic: atomic, trace: trace)
                batch.savedForm = savedForm
                var decision = decision
                // Only a decision that defines fields can meet a definition made since.
                let committed = decision.newFieldTypes.isEmpty ? nil : fieldSchema.withLock { $0 }
                if let committed, decision.conflicts(with: committed) {
                    // A request in other zones (it did not wait for these locks) defined one of
                    // the fields this one defines, with another type, after this one decided.
                    // Decided again here, under the writer, where nothing else commits: the
                    // save meets the committed type as a later request would, and of two
                    // requests defining a field the first to commit gives its type.
                    // The first decisions stay in the request log, above the ones that count.
                    trace?.decide(true, "the schema changed while the request waited: decided again (the decisions below replace those above)")
                    batch.schema = committed
                    decision = try batch.decide(saves: saves, encodedFields: encoded, deletes: deletes, signatures: params.typeSignatures ?? [])
                }
                let outcome = try batch.apply(decision)
                if !outcome.defined.isEmpty {
                    // Under the writer's lock, in commit order: later requests see the new
                    // fields, and of two requests defining one field the first one's type stays.
                    fieldSchema.withLock { schema in
                        for (recordType, field, type) in outcome.defined { schema.define(recordType: recordType, field: field, type: type) }
                    }
                }
                writtenAhead = writeAhead(outcome, to: params)
                return outcome
            }
        }
        // Written ahead only for a commit that succeeded: a failed one threw above.
        if let reply = writtenAhead?.value() { return reply }
        return try Self.reply(outcome, to: params, items: saves.count + deletes.count)
    }

    /// The reply of a request whose items all passed, written as text on the reply writer thread (nil
    /// when it is busy or the reply is small): the commit's fdatasync leaves the core idle, and
    /// the request's time is its commit or its reply, whichever is longer, instead of both.
    private func writeAhead(_ outcome: ModifyOutcome, to params: ModifyParams) -> WorkerResult<ModifyResult?>? {
        // A reply of a few records is written in less time than handing it over takes.
        guard outcome.errors.isEmpty, outcome.saved.count + outcome.deleted.count >= Self.writeAheadItems else { return nil }
        let items = outcome.saved.count + outcome.deleted.count
        return core.replyWriter.startIfIdle { (try? Self.reply(outcome, to: params, items: items))?.written() }
    }

    static let writeAheadItems = 32

    /// Each save's fields in stored form (nil: invalid, refused by the decision), and the
    /// request's size as the limit counts it.
    private static func storedFields(of saves: [CloudRecord]) -> (fields: [String?], bytes: Int) {
        var encoded: [String?] = []
        var requestBytes = 0
        for record in saves {
            // Fields kept as text alone passed the stored-form check, which is stricter than
            // FieldValidation (it applies the same value rules); they are stored as they came.
            if let text = record.fieldsText, record.fieldsAreStoredText {
                requestBytes += text.utf8.count + record.recordName.utf8.count + record.recordType.utf8.count
                encoded.append(text)
                continue
            }
            if FieldValidation.problem(in: record.fields) != nil {
                encoded.append(nil)
                continue
            }
            // Fields that came with a tree were refused as stored form when parsed: written out.
            let json = RecordFields(record.fields).text
            requestBytes += json.utf8.count + record.recordName.utf8.count + record.recordType.utf8.count
            encoded.append(json)
        }
        return (encoded, requestBytes)
    }

    /// The reply: the saved records as the request asked for them (`ModifyBatch.SavedForm`, in
    /// which the batch made them); a partialFailure when some items failed.
    private static func reply(_ outcome: ModifyOutcome, to params: ModifyParams, items: Int) throws -> ModifyResult {
        if !outcome.errors.isEmpty {
            var errors: [String: JSONValue] = [:]
            var budget = PageBudget()
            // In key order, so which items keep their records does not depend on hashing.
            for key in outcome.errors.keys.sorted() {
                errors[key] = try JSONValue(encoding: Self.fitting(outcome.errors[key]!, into: &budget))
            }
            throw WireError(.partialFailure, "\(outcome.errors.count) of \(items) items failed.",
                            details: ["partialErrors": .object(errors),
                                      "saved": try JSONValue(encoding: outcome.saved),
                                      "deleted": try JSONValue(encoding: outcome.deleted)])
        }
        return ModifyResult(saved: outcome.saved, deleted: outcome.deleted)
    }
}

extension CloudEngine {
    /// `error` with its records if they fit in what is left of the reply's page budget, else
    /// without them (`details.recordsOmitted`): 400 conflicts over records of a megabyte would
    /// be a reply far over the frame limit, refused again on every retry. A client sends such an
    /// item again and gets its records then.
    static func fitting(_ error: WireError, into budget: inout PageBudget) -> WireError {
        let records = RecordConflict.keys.compactMap { error.details[$0] }
        guard !records.isEmpty else { return error }
        var text = ""
        for record in records { JSONWriter.append(record, to: &text) }
        if budget.take(text.utf8.count + PageBudget.recordOverhead) { return error }
        var trimmed = error
        for key in RecordConflict.keys { trimmed.details[key] = nil }
        trimmed.details["recordsOmitted"] = true
        trimmed.message += " (Its records did not fit in this reply; send it again to get them.)"
        return trimmed
    }
}

/// What a modify decided before applying anything: per zone, the plan of each item that
/// passed, and the errors of those that did not.
struct ModifyDecision: Sendable {
    struct Zone: Sendable {
        var zone: ZoneRow
        var indices: [Int]
        var plans: [Int: ModifyBatch.Plan]
    }
    var items: [ModifyBatch.Item]
    /// Each item's key in `partialErrors`.
    var keys: [String]
    var zones: [Zone] = []
    var errors: [String: WireError] = [:]
    /// Per save (by item index) that passed the schema check, the fields it defines (`FieldSchema`).
    var newFieldTypes: [Int: [(field: String, type: String)]] = [:]

    /// Whether a field this decision defines has another type in `schema` (defined by a request
    /// that committed after this one decided).
    func conflicts(with schema: FieldSchema) -> Bool {
        newFieldTypes.contains { index, fields in
            guard case let .save(record, _) = items[index] else { return false }
            return schema.conflict(recordType: record.recordType, fields) != nil
        }
    }
}

/// One records.modify request, decided on a snapshot and then applied, zone by zone.
struct ModifyBatch {
    let state: CloudTransaction
    let caller: String
    let scope: DatabaseScope
    let policy: SavePolicy
    let atomic: Bool
    let trace: RequestTrace?
    /// The schema as the request found it (`FieldSchema`).
    var schema = FieldSchema()
    /// How the reply carries the saved records.
    var savedForm = SavedForm.records

    /// The saved records as the reply carries them, made so when they are rendered (changing
    /// a rendered record copies it: it is shared with the request's outcome).
    enum SavedForm: Sendable {
        case records, withoutFields, tags

        init(_ params: ModifyParams) {
            self = params.reply == .tags ? .tags : params.returnFields == false ? .withoutFields : .records
        }
    }

    enum Item: Sendable {
        case save(CloudRecord, fieldsJSON: String?)
        case delete(DeleteItem)
        var recordName: String {
            switch self {
            case let .save(record, _): return record.recordName
            case let .delete(item): return item.recordName
            }
        }
        var zoneID: ZoneID {
            switch self {
            case let .save(record, _): return record.zoneID
            case let .delete(item): return item.zoneID
            }
        }
    }

    enum Plan: Sendable {
        /// `fields`: nil when the record's fields are kept as text alone (`fieldsJSON` is it).
        case save(CloudRecord, fieldsJSON: String, fields: [String: JSONValue]?, share: String?, existing: StoredRecord?)
        case delete(StoredRecord?)
        case leaveShare(String)
    }

    init(state: CloudTransaction, caller: String, scope: DatabaseScope, policy: SavePolicy, atomic: Bool, trace: RequestTrace?) {
        self.state = state
        self.caller = caller
        self.scope = scope
        self.policy = policy
        self.atomic = atomic
        self.trace = trace
    }

    /// Decides every item against the current state; writes nothing.
    /// `signatures`: per save, its fields' type signature when the request's read made it.
    func decide(saves: [CloudRecord], encodedFields: [String?], deletes: [DeleteItem], signatures: [[UInt8]?] = []) throws -> ModifyDecision {
        var items: [Item] = zip(saves, encodedFields).map { .save($0, fieldsJSON: $1) }
        items += deletes.map { .delete($0) }
        var order: [ZoneID] = []
        var byZone: [ZoneID: [Int]] = [:]
        // Items in a run of one zone (a batch mostly is one) go to it without hashing its ID again.
        var run: (requested: ZoneID, indices: [Int])?
        for (index, item) in items.enumerated() {
            let requested = item.zoneID
            if run?.requested == requested {
                run?.indices.append(index)
                continue
            }
            if let (requested, indices) = run { Self.group(indices, in: requested.resolved(caller: caller), order: &order, byZone: &byZone) }
            run = (requested, [index])
        }
        if let (requested, indices) = run { Self.group(indices, in: requested.resolved(caller: caller), order: &order, byZone: &byZone) }
        // In one zone no name can repeat across zones: each item's key is its name.
        let keys = order.count == 1 ? items.map(\.recordName) : Self.errorKeys(items, caller: caller)
        var decision = ModifyDecision(items: items, keys: keys)
        // The schema check, in request order: a field the request's first save of it defines
        // holds for its later saves too.
        var schemaErrors: [Int: WireError] = [:]
        var known = schema
        // The last stored-form record checked: its type, fields' types and verdict. A record
        // with the same ones gets the same verdict and defines nothing new (its predecessor
        // defined it), without a string or a lookup per field.
        var last: (recordType: String, signature: [UInt8], conflict: WireError?)?
        for (index, item) in items.enumerated() {
            guard case let .save(record, fieldsJSON?) = item else { continue }
            var signature: [UInt8]?
            if record.fieldsAreStoredText, !record.isShare {
                // Kept as text, the fields passed the stored-form scan when the request was
                // parsed, so this one finds them too.
                guard let current = (index < signatures.count ? signatures[index] : nil) ?? StoredFields.typeSignature(fieldsJSON) else { continue }
                if let last, last.recordType == record.recordType, last.signature == current {
                    if let conflict = last.conflict { schemaErrors[index] = conflict }
                    continue
                }
                signature = current
            }
            let types = FieldSchema.fieldTypes(of: record, signature: signature)
            var conflict = known.conflict(recordType: record.recordType, types)
            if conflict == nil, state.environment == .production, !record.isShare {
                // Production's schema is the deployed one: nothing is defined on first save.
                conflict = known.productionRefusal(recordType: record.recordType, types + FieldSchema.emptyLists(of: record))
            }
            if let signature { last = (record.recordType, signature, conflict) }
            if let conflict {
                schemaErrors[index] = conflict
                continue
            }
            let new = known.undefined(recordType: record.recordType, types)
            guard !new.isEmpty else { continue }
            decision.newFieldTypes[index] = new
            for (field, type) in new { known.define(recordType: record.recordType, field: field, type: type) }
        }
        for zoneID in order {
            let indices = byZone[zoneID] ?? []
            let zone: ZoneRow
            do {
                zone = try state.openZone(items[indices[0]].zoneID, scope: scope, caller: caller, trace: trace)
            } catch let error as WireError {
                for index in indices { decision.errors[keys[index]] = itemError(error, items[index]) }
                continue
            }
            let (plans, failures) = try decide(zone: zone, indices: indices, items: items, schemaErrors: schemaErrors)
            for (index, error) in failures { decision.errors[keys[index]] = error }
            if !plans.isEmpty { decision.zones.append(ModifyDecision.Zone(zone: zone, indices: indices, plans: plans)) }
        }
        return decision
    }

    /// Applies the plans of a decision; the caller holds the write transaction.
    func apply(_ decision: ModifyDecision) throws -> ModifyOutcome {
        var outcome = ModifyOutcome()
        outcome.errors = decision.errors
        let keys = decision.keys
        for zone in decision.zones {
            guard let current = try state.zone(id: zone.zone.id), current.owner == zone.zone.owner, current.name == zone.zone.name else {
                for index in zone.plans.keys { outcome.errors[keys[index]] = itemError(state.zoneNotFound(decision.items[index].zoneID), decision.items[index]) }
                continue
            }
            try apply(zone: zone.zone, indices: zone.indices, items: decision.items, plans: zone.plans, outcome: &outcome)
            for index in zone.indices where zone.plans[index] != nil {
                guard case let .save(record, _) = decision.items[index], let new = decision.newFieldTypes[index] else { continue }
                for (field, type) in new {
                    try state.db.execute("INSERT OR IGNORE INTO field_types(record_type, field, type, environment) VALUES (?, ?, ?, ?)",
                                         [record.recordType, field, type, state.environment.rawValue])
                    if state.db.changes == 1 { outcome.defined.append((record.recordType, field, type)) }
                }
            }
        }
        return outcome
    }

    private static func group(_ indices: [Int], in zone: ZoneID, order: inout [ZoneID], byZone: inout [ZoneID: [Int]]) {
        if byZone[zone] == nil { order.append(zone) }
        byZone[zone, default: []].append(contentsOf: indices)
    }

    /// Error map keys: the record name, or owner/zone/name when a name repeats across zones.
    static func errorKeys(_ items: [Item], caller: String) -> [String] {
        var firstZone: [String: ZoneID] = [:]
        firstZone.reserveCapacity(items.count)
        var repeated: Set<String> = []
        for item in items {
            let zone = item.zoneID.resolved(caller: caller)
            if let seen = firstZone.updateValue(zone, forKey: item.recordName), seen != zone { repeated.insert(item.recordName) }
        }
        return items.map { item in
            repeated.contains(item.recordName)
                ? "\(item.zoneID.ownerName)/\(item.zoneID.zoneName)/\(item.recordName)" : item.recordName
        }
    }

    func itemError(_ error: WireError, _ item: Item) -> WireError {
        var error = error
        error.details["recordName"] = .string(item.recordName)
        error.details["zoneID"] = state.zoneJSON(item.zoneID)
        return error
    }

    private func decide(zone: ZoneRow, indices: [Int], items: [Item], schemaErrors: [Int: WireError]) throws -> (plans: [Int: Plan], failures: [Int: WireError]) {
        var pending: [String: CloudRecord] = [:]
        pending.reserveCapacity(indices.count)
        var deleteNames: Set<String> = []
        var duplicates: Set<String> = []
        for index in indices {
            let name = items[index].recordName
            if pending[name] != nil || deleteNames.contains(name) { duplicates.insert(name) }
            switch items[index] {
            case let .save(record, _): pending[name] = record
            case .delete: deleteNames.insert(name)
            }
        }
        var plans: [Int: Plan] = [:]
        plans.reserveCapacity(indices.count)
        var failures: [Int: WireError] = [:]
        // Whether each stored parent is live, read once per request: a batch's records mostly
        // share a parent (a session's events), and reading it for each was a lookup of a whole
        // record per save. The zone does not change while the batch is decided.
        var liveParents: [String: Bool] = [:]
        // The stored rows of the names saved here, found together (`storedRecords`): a batch
        // of new records takes a few probes of the zone's names instead of a lookup each.
        let saved = indices.compactMap { index -> String? in
            if case .save = items[index] { return items[index].recordName }
            return nil
        }
        let stored = try state.storedRecords(zone: zone.id, named: saved)
        for index in indices {
            do {
                if duplicates.contains(items[index].recordName) {
                    throw WireError(.invalidArguments, "Record '\(items[index].recordName)' appears more than once in the request.")
                }
                if let conflict = schemaErrors[index] { throw conflict }
                switch items[index] {
                case let .save(record, fieldsJSON):
                    plans[index] = try planSave(record, fieldsJSON: fieldsJSON, zone: zone, pending: pending, deleteNames: deleteNames,
                                                existing: stored.isEmpty ? nil : stored[record.recordName], liveParents: &liveParents)
                case let .delete(item):
                    plans[index] = try planDelete(item, zone: zone, deleteNames: deleteNames)
                }
            } catch let error as WireError {
                failures[index] = itemError(error, items[index])
            }
        }
        let isAtomic = atomic && !zone.isDefaultZone
        if !isAtomic { cascadeFailures(indices: indices, items: items, plans: &plans, failures: &failures) }
        if isAtomic && !failures.isEmpty {
            for index in indices where failures[index] == nil {
                failures[index] = itemError(
                    WireError(.batchRequestFailed, "Not saved: another item of this atomic zone failed, so the zone is unchanged."), items[index])
            }
            return ([:], failures)
        }
        return (plans, failures)
    }

    /// In a non-atomic zone, a save whose parent failed (or a delete whose child's delete failed) fails too.
    private func cascadeFailures(indices: [Int], items: [Item], plans: inout [Int: Plan], failures: inout [Int: WireError]) {
        var changed = true
        while changed {
            changed = false
            let failedNames = Set(failures.keys.map { items[$0].recordName })
            for index in indices where plans[index] != nil {
                guard case let .save(record, _) = items[index], let parent = record.parent?.recordName,
                      failedNames.contains(parent) else { continue }
                plans[index] = nil
                failures[index] = itemError(WireError(.referenceViolation, "The parent '\(parent)' of '\(record.recordName)' failed to save."), items[index])
                changed = true
            }
        }
    }
}
