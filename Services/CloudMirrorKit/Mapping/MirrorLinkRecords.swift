import CloudWire
import MeowWire
import StoreServiceKit

/// NSPersistentCloudKitContainer's record for one many-to-many link: type `CDMR`, in the zone
/// of the objects it joins, with `CD_entityNames`, `CD_relationships` and `CD_recordNames`, each
/// the two sides' values joined by ":" in one order (here the link's: `a`, then `b`). Inside
/// the mirror a link is its link entity's record (`CD_a`, `CD_b` naming the two records), so
/// queueing, zones, pending links and merges treat it as any record; only the wire sees CDMR.
enum MirrorLinkRecords {
    static let recordType = "CDMR"
    static let entityNamesField = "CD_entityNames"
    static let relationshipsField = "CD_relationships"
    static let recordNamesField = "CD_recordNames"

    private static func text(_ value: String) -> JSONValue { ["type": "string", "value": .string(value)] }

    /// `record` as it goes out: a link entity's record becomes a CDMR record (stamps kept).
    static func outgoing(_ record: CloudRecord, model: ManagedObjectModel) -> CloudRecord {
        guard record.recordType.hasPrefix(CloudKitNames.coreDataPrefix + "_"), let name = record.entityName,
              let sides = model.linkSides(of: name) else { return record }
        var fields = record.fields
        let a = fields.removeValue(forKey: MirrorRecordCoding.fieldName("a"))?["value"]?.stringValue
        let b = fields.removeValue(forKey: MirrorRecordCoding.fieldName("b"))?["value"]?.stringValue
        fields.removeValue(forKey: CloudKitNames.entityNameField)
        fields[entityNamesField] = text("\(sides.a.entity):\(sides.b.entity)")
        fields[relationshipsField] = text("\(sides.a.relationship):\(sides.b.relationship)")
        if let a, let b { fields[recordNamesField] = text("\(a):\(b)") }
        var out = record
        out.recordType = recordType
        out.fields = fields
        return out
    }

    /// A fetched CDMR record as its link entity's record; other records as they are. The sides
    /// may come in either order (another client's); a malformed one is left a CDMR record, which
    /// no entity holds, so the import passes it by.
    static func incoming(_ record: CloudRecord) -> CloudRecord {
        guard record.recordType == recordType else { return record }
        var fields = record.fields
        func parts(_ field: String) -> [String] {
            (fields.removeValue(forKey: field)?["value"]?.stringValue ?? "").split(separator: ":", maxSplits: 1).map(String.init)
        }
        var (entities, relationships, names) = (parts(entityNamesField), parts(relationshipsField), parts(recordNamesField))
        guard entities.count == 2, relationships.count == 2, names.count == 2 else { return record }
        if (entities[1], relationships[1]) < (entities[0], relationships[0]) {
            entities.reverse()
            relationships.reverse()
            names.reverse()
        }
        let link = ManagedObjectModel.linkName(entities[0], relationships[0])
        fields[MirrorRecordCoding.fieldName("a")] = text(names[0])
        fields[MirrorRecordCoding.fieldName("b")] = text(names[1])
        fields[CloudKitNames.entityNameField] = text(link)
        var out = record
        out.recordType = CloudKitNames.coreDataName(link)
        out.fields = fields
        return out
    }

    /// A conflict's records as the mirror reads them (`incoming`): merged as they came, a CDMR
    /// server copy had no link sides, and the merge cleared this device's link.
    static func incoming(_ conflict: RecordConflict) -> RecordConflict {
        var read = conflict
        read.server = incoming(conflict.server)
        read.client = conflict.client.map(incoming)
        read.ancestor = conflict.ancestor.map(incoming)
        return read
    }

    /// The link entity a deleted CDMR record named `uuid` was a row of in `state`'s store.
    static func deletedLinkEntity(uuid: String, state: StoreBookkeeping) throws -> String? {
        for entity in state.store.model.entities where state.store.holds(entity.name) && state.store.model.isLinkEntity(entity.name) {
            if try state.primaryKey(entity: entity.name, uuid: uuid) != nil { return entity.name }
        }
        return nil
    }
}
