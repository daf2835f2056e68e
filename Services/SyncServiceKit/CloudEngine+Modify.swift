import CloudWire
import FoundationEssentials
import MeowWire

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
        let policy = params.savePolicy ?? .ifServerRecordUnchanged
        let atomic = params.atomic ?? true
        var zoneSet = Set(saves.lazy.map { $0.zoneID.resolved(caller: caller) })
        zoneSet.formUnion(deletes.lazy.map { $0.zoneID.resolved(caller: caller) })
        let zones = Array(zoneSet)
        let schema = fieldSchema.withLock { $0 }
        var outcome = try locks.withZones(zones) {
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
                return outcome
            }
        }
        if params.returnFields == false || params.reply == .tags {
            for index in outcome.saved.indices {
                outcome.saved[index].fields = [:]
                outcome.saved[index].omitsFields = true
                outcome.saved[index].tagOnly = params.reply == .tags
            }
        }
        if !outcome.errors.isEmpty {
            var errors: [String: JSONValue] = [:]
            var budget = PageBudget()
            // In key order, so which items keep their records does not depend on hashing.
            for key in outcome.errors.keys.sorted() {
                errors[key] = try JSONValue(encoding: Self.fitting(outcome.errors[key]!, into: &budget))
            }
            throw WireError(.partialFailure, "\(outcome.errors.count) of \(saves.count + deletes.count) items failed.",
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
    let state: CloudState
    let caller: String
    let scope: DatabaseScope
    let policy: SavePolicy
    let atomic: Bool
    let trace: RequestTrace?
    /// The schema as the request found it (`FieldSchema`).
    var schema = FieldSchema()

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

    init(state: CloudState, caller: String, scope: DatabaseScope, policy: SavePolicy, atomic: Bool, trace: RequestTrace?) {
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
        let keys = Self.errorKeys(items, caller: caller)
        var order: [ZoneID] = []
        var byZone: [ZoneID: [Int]] = [:]
        for (index, item) in items.enumerated() {
            let zone = item.zoneID.resolved(caller: caller)
            if byZone[zone] == nil { order.append(zone) }
            byZone[zone, default: []].append(index)
        }
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
            let conflict = known.conflict(recordType: record.recordType, types)
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
                    try state.db.execute("INSERT OR IGNORE INTO field_types(record_type, field, type) VALUES (?, ?, ?)", [record.recordType, field, type])
                    if state.db.changes == 1 { outcome.defined.append((record.recordType, field, type)) }
                }
            }
        }
        return outcome
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
        // Whether the zone holds any record named at or after the least name saved here (one
        // index probe): when not, none of the saves exists yet, and each skips its lookup (a
        // batch of new records, time-ordered names made after the zone's others, was a fifth
        // of deciding on these lookups).
        let saved = indices.compactMap { index -> String? in
            if case .save = items[index] { return items[index].recordName }
            return nil
        }
        let mayExist = try state.mayHoldRecords(zone: zone.id, named: saved)
        for index in indices {
            do {
                if duplicates.contains(items[index].recordName) {
                    throw WireError(.invalidArguments, "Record '\(items[index].recordName)' appears more than once in the request.")
                }
                if let conflict = schemaErrors[index] { throw conflict }
                switch items[index] {
                case let .save(record, fieldsJSON):
                    plans[index] = try planSave(record, fieldsJSON: fieldsJSON, zone: zone, pending: pending, deleteNames: deleteNames,
                                                lookUp: mayExist, liveParents: &liveParents)
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

    // MARK: Deciding

    /// `lookUp`: false when the zone is known to hold no record of this name.
    private func planSave(_ record: CloudRecord, fieldsJSON: String?, zone: ZoneRow, pending: [String: CloudRecord],
                          deleteNames: Set<String>, lookUp: Bool, liveParents: inout [String: Bool]) throws -> Plan {
        // fieldsJSON is nil exactly when the fields have a problem (see modifyRecords).
        if fieldsJSON == nil, let problem = FieldValidation.problem(in: record.fields) {
            throw WireError(.invalidArguments, "Record '\(record.recordName)': \(problem.message).", details: ["field": .string(problem.field)])
        }
        guard !record.recordName.isEmpty, !record.recordType.isEmpty else {
            throw WireError(.invalidArguments, "A record needs a non-empty recordName and recordType.")
        }
        if let problem = CloudKitNames.problem(recordName: record.recordName) {
            throw WireError(.invalidArguments, "Record \(CloudKitNames.quoted(record.recordName)): \(problem).")
        }
        guard let fieldsJSON else { throw WireError(.invalidArguments, "Record '\(record.recordName)' has invalid fields.") }
        let limit = state.limits.maxRecordBytes
        guard fieldsJSON.utf8.count <= limit else {
            throw WireError(.limitExceeded, "Record '\(record.recordName)' is \(fieldsJSON.utf8.count) bytes; a record may hold at most \(limit).",
                            details: ["bytes": .int(fieldsJSON.utf8.count), "maxRecordBytes": .int(limit)])
        }
        let existing = lookUp ? try state.record(zone: zone.id, name: record.recordName) : nil
        let live = existing.flatMap { $0.deleted ? nil : $0 }
        if let live, live.type != record.recordType && (live.type == CloudKitNames.shareRecordType || record.isShare) {
            throw WireError(.invalidArguments, "Record '\(record.recordName)' cannot change between a share and a non-share record.")
        }
        let share = record.isShare ? nil : (record.share?.recordName ?? live?.share)
        if scope == .shared {
            try checkSharedSave(record, live: live, share: share, zone: zone, pending: pending)
        } else {
            trace?.decide(true, "owner writes own zone", zone: zone.zoneID, record: record.recordName)
        }
        if record.isShare { try checkNewShare(record, live: live, zone: zone, pending: pending) }
        if let share, share != live?.share { try checkNewRoot(record, share: share, live: live, zone: zone, pending: pending) }
        if let share, let up = try state.governingShare(zone: zone.id, from: record.parent?.recordName, pending: pending), up != share {
            throw WireError(.alreadyShared, "Record '\(record.recordName)' is the root of share '\(share)' and its parent is already in share '\(up)'; a record can be in one share only.",
                            details: ["share": .string(share), "otherShare": .string(up)])
        }
        try checkTag(record, live: live, existing: existing, zone: zone)
        if let parent = record.parent?.recordName {
            guard parent != record.recordName else { throw WireError(.invalidArguments, "Record '\(parent)' cannot be its own parent.") }
            let inRequest = pending[parent] != nil
            guard try inRequest || (!deleteNames.contains(parent) && isLive(parent, zone: zone, known: &liveParents)) else {
                throw WireError(.referenceViolation, "The parent '\(parent)' of '\(record.recordName)' does not exist in zone \(zone.name).",
                                details: ["parent": .string(parent)])
            }
        }
        if !record.isShare, let live, let merged = try keepingUnsentKeys(record, fieldsJSON: fieldsJSON, live: live) {
            return .save(record, fieldsJSON: merged.text, fields: merged.fields, share: share, existing: existing)
        }
        return .save(record, fieldsJSON: fieldsJSON, fields: record.fieldsAreStoredText ? nil : RecordFields.withoutNulls(record.fields),
                     share: share, existing: existing)
    }

    /// CloudKit writes the keys a save carries, under every save policy: a key set to null is
    /// removed, and a key the save leaves out keeps the server's value (an older app version does
    /// not know a newer one's fields; `allKeys` only means the client sends all the keys it has).
    /// Nil when the save carries exactly the stored keys and no null: it is stored as sent.
    private func keepingUnsentKeys(_ record: CloudRecord, fieldsJSON: String, live: StoredRecord) throws -> (text: String, fields: [String: JSONValue])? {
        let removed = record.fieldsAreStoredText ? [] : record.fields.filter { $0.value.isNull }.map(\.key)
        if removed.isEmpty, let sent = StoredFields.typeSignature(fieldsJSON), sent == live.fields.flatMap(StoredFields.typeSignature) {
            return nil
        }
        var fields = state.decodeFields(live.fields)
        for (name, value) in state.decodeFields(fieldsJSON) { fields[name] = value }
        for name in removed { fields.removeValue(forKey: name) }
        let text = try state.encodeFields(fields)
        let limit = state.limits.maxRecordBytes
        guard text.utf8.count <= limit else {
            throw WireError(.limitExceeded, "Record '\(record.recordName)' would be \(text.utf8.count) bytes with the fields it keeps; a record may hold at most \(limit).",
                            details: ["bytes": .int(text.utf8.count), "maxRecordBytes": .int(limit)])
        }
        return (text, fields)
    }

    /// Whether `name` is a live record of `zone`, from `known` when this request read it already.
    private func isLive(_ name: String, zone: ZoneRow, known: inout [String: Bool]) throws -> Bool {
        if let live = known[name] { return live }
        let live = try state.liveRecord(zone: zone.id, name: name) != nil
        known[name] = live
        return live
    }

    private func checkSharedSave(_ record: CloudRecord, live: StoredRecord?, share: String?, zone: ZoneRow, pending: [String: CloudRecord]) throws {
        if record.isShare || share != live?.share {
            let reason = "only the owner can create or change a share"
            trace?.decide(false, reason, zone: zone.zoneID, record: record.recordName)
            throw WireError(.permissionFailure, "\(caller) may not write '\(record.recordName)': \(reason).", details: ["reason": .string(reason)])
        }
        let target = try state.governingShare(zone: zone.id, from: record.recordName, pending: pending)
        try state.requireSharedAccess(zone: zone, share: target, caller: caller, write: true, record: record.recordName, trace: trace)
        if live != nil {
            let origin = try state.governingShare(zone: zone.id, from: record.recordName)
            if origin != target {
                try state.requireSharedAccess(zone: zone, share: origin, caller: caller, write: true, record: record.recordName, trace: trace)
            }
        }
    }

    private func checkNewShare(_ record: CloudRecord, live: StoredRecord?, zone: ZoneRow, pending: [String: CloudRecord]) throws {
        guard live == nil else { return }
        guard !zone.isDefaultZone else {
            throw WireError(.invalidArguments, "Shares live in custom zones; _defaultZone cannot hold a share.")
        }
        if record.recordName == CloudKitNames.zoneShareName {
            if let other = try state.db.scalar("SELECT name FROM shares WHERE zone = ?", [zone.id])?.string {
                throw WireError(.alreadyShared, "Zone \(zone.name) already has share '\(other)'; a zone-wide share would put its records in two shares.",
                                details: ["otherShare": .string(other)])
            }
            return
        }
        guard pending.values.contains(where: { $0.share?.recordName == record.recordName && !$0.isShare }) else {
            throw WireError(.invalidArguments, "A new share '\(record.recordName)' must be saved together with its root record (a record whose share references it) in the same request.")
        }
    }

    private func checkNewRoot(_ record: CloudRecord, share: String, live: StoredRecord?, zone: ZoneRow, pending: [String: CloudRecord]) throws {
        if let current = live?.share, current != share {
            throw WireError(.alreadyShared, "Record '\(record.recordName)' is already the root of share '\(current)'.",
                            details: ["otherShare": .string(current)])
        }
        let shareExists = try state.db.scalar("SELECT 1 FROM shares WHERE zone = ? AND name = ?", [zone.id, share]) != nil
        guard shareExists || pending[share]?.isShare == true else {
            throw WireError(.invalidArguments, "Record '\(record.recordName)' references share '\(share)', which is neither stored nor in this request.")
        }
        if let root = try state.db.scalar("SELECT root FROM shares WHERE zone = ? AND name = ?", [zone.id, share])?.string, root != record.recordName {
            throw WireError(.alreadyShared, "Share '\(share)' already has root '\(root)'.", details: ["otherRoot": .string(root)])
        }
    }

    private func checkTag(_ record: CloudRecord, live: StoredRecord?, existing: StoredRecord?, zone: ZoneRow) throws {
        let effective = record.isShare ? .ifServerRecordUnchanged : policy
        guard effective == .ifServerRecordUnchanged else { return }
        switch (live, record.recordChangeTag) {
        case let (live?, tag?) where tag == live.tag:
            return
        case let (live?, tag?):
            let ancestor = try state.ancestor(zone: zone, name: record.recordName, tag: tag, caller: caller)
            throw WireError(.serverRecordChanged,
                            "Record '\(record.recordName)' changed on the server (server tag \(live.tag), client tag \(tag)); merge and retry with the server's tag.",
                            details: try RecordConflict(server: state.render(live, zone: zone, caller: caller), client: record, ancestor: ancestor).details())
        case let (live?, nil):
            throw WireError(.serverRejectedRequest,
                            "Record '\(record.recordName)' already exists on the server but the save carries no change tag (a new record with a taken name); fetch it and merge.",
                            details: try RecordConflict(server: state.render(live, zone: zone, caller: caller)).details())
        case let (nil, tag?):
            throw WireError(.unknownItem, "Record '\(record.recordName)' does not exist on the server (it was deleted) but the save carries change tag \(tag).",
                            details: ["deleted": .bool(existing?.deleted == true)])
        case (nil, nil):
            return
        }
    }

    private func planDelete(_ item: DeleteItem, zone: ZoneRow, deleteNames: Set<String>) throws -> Plan {
        guard let live = try state.liveRecord(zone: zone.id, name: item.recordName) else { return .delete(nil) }
        if scope == .shared {
            if live.type == CloudKitNames.shareRecordType {
                guard try state.participation(zone: zone.id, share: live.name, user: caller) != nil else {
                    let reason = "\(caller) is not a participant of share \(live.name)"
                    trace?.decide(false, reason, zone: zone.zoneID, record: live.name)
                    throw WireError(.permissionFailure, "\(caller) may not delete share '\(live.name)': \(reason).", details: ["reason": .string(reason)])
                }
                trace?.decide(true, "participant deleting the share leaves it", zone: zone.zoneID, record: live.name)
                return .leaveShare(live.name)
            }
            let share = try state.governingShare(zone: zone.id, from: live.name)
            try state.requireSharedAccess(zone: zone, share: share, caller: caller, write: true, record: live.name, trace: trace)
            if live.share != nil {
                let reason = "only the owner can delete the root of a share"
                trace?.decide(false, reason, zone: zone.zoneID, record: live.name)
                throw WireError(.permissionFailure, "\(caller) may not delete '\(live.name)': \(reason).", details: ["reason": .string(reason)])
            }
        } else {
            trace?.decide(true, "owner deletes in own zone", zone: zone.zoneID, record: live.name)
        }
        let orphans = try state.liveChildren(zone: zone.id, of: live.name).filter { !deleteNames.contains($0) }
        guard orphans.isEmpty else {
            throw WireError(.referenceViolation, "Deleting '\(live.name)' would leave \(orphans.count) child record(s) behind; delete them in the same request.",
                            details: ["children": .array(orphans.prefix(20).map { .string($0) })])
        }
        return .delete(live)
    }

    // MARK: Applying

    private func apply(zone: ZoneRow, indices: [Int], items: [Item], plans: [Int: Plan], outcome: inout ModifyOutcome) throws {
        var savedNames: Set<String> = []
        var parentsToBump: [String] = []
        var savedStored: [(StoredRecord, [String: JSONValue]?)] = []
        for index in indices {
            guard case let .save(record, fieldsJSON, fields, share, existing)? = plans[index] else { continue }
            let stored = try state.storeRecord(zone: zone, name: record.recordName, type: record.recordType, fieldsJSON: fieldsJSON,
                                               parent: record.parent?.recordName, share: share, previous: existing, user: caller)
            savedNames.insert(record.recordName)
            savedStored.append((stored, fields))
            if let parent = record.parent?.recordName, !parentsToBump.contains(parent) { parentsToBump.append(parent) }
            if record.isShare && existing.flatMap({ $0.deleted ? nil : $0 }) == nil {
                let root = plans.values.lazy.compactMap { plan -> String? in
                    if case let .save(candidate, _, _, share, _) = plan, share == record.recordName, !candidate.isShare { return candidate.recordName }
                    return nil
                }.first
                try state.createShare(zone: zone, name: record.recordName, root: root)
            }
        }
        for parent in parentsToBump where !savedNames.contains(parent) {
            try state.bumpRecord(zone: zone, name: parent, user: caller)
        }
        for index in indices {
            switch plans[index] {
            case let .delete(live?)?:
                if live.type == CloudKitNames.shareRecordType {
                    try state.endShare(zone: zone, name: live.name, user: caller)
                } else {
                    if let share = live.share { try state.endShare(zone: zone, name: share, user: caller) }
                    try state.tombstone(zone: zone, name: live.name, user: caller)
                }
                outcome.deleted.append(RecordID(recordName: live.name, zoneID: items[index].zoneID))
            case .delete(nil)?:
                outcome.deleted.append(RecordID(recordName: items[index].recordName, zoneID: items[index].zoneID))
            case let .leaveShare(share)?:
                try state.setAcceptance(zone: zone, share: share, user: caller, to: .removed)
                outcome.deleted.append(RecordID(recordName: share, zoneID: items[index].zoneID))
            default:
                continue
            }
        }
        let presented = zone.zoneID.presented(to: caller)
        for (stored, fields) in savedStored {
            // Share records and roots may have changed again in this request (share created or ended).
            let changedSince = stored.type == CloudKitNames.shareRecordType || stored.share != nil
            let current = changedSince ? try state.liveRecord(zone: zone.id, name: stored.name) ?? stored : stored
            var saved = try state.render(current, zone: zone, presentedZoneID: presented, fields: changedSince ? nil : fields ?? [:])
            if !changedSince, fields == nil, let text = current.fields {
                // Fields kept as text: the reply writes the stored text; nothing parses it.
                saved.fieldsText = text
            }
            outcome.saved.append(saved)
        }
        try state.touchZone(zone)
    }
}
