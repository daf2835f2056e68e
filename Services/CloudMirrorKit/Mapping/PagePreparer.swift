import CloudWire
import MeowWire
import StoreServiceKit

/// A fetched page's records as a store takes them, worked out where the page is decoded (for
/// pages fetched ahead, on the client's reader thread while the page before is applied):
/// CDMR records as their link entity's records, and each record's row values as far as they
/// need no store (`MirrorImport`), for the entities the store holds.
struct PagePreparer: Sendable {
    let model: ManagedObjectModel
    let holding: Set<String>

    /// `read`: per changed record, its fields as the page's scan read them (empty: none were).
    func prepare(_ page: FetchZoneChangesResult, read: [[StoredFields.Field]?]) -> (changed: [CloudRecord], prepared: [MirrorImport.Prepared?]) {
        // CDMR records become their link entity's records here, before anything reads them.
        let changed = page.changed.map(MirrorLinkRecords.incoming)
        var layouts: [String: MirrorImport.FieldLayout] = [:]
        let prepared = changed.indices.map { position -> MirrorImport.Prepared? in
            let record = changed[position]
            guard !record.isShare, let name = record.entityName, holding.contains(name), let entity = model.entity(named: name) else { return nil }
            let layout = layouts[name] ?? MirrorImport.FieldLayout(entity)
            layouts[name] = layout
            // Fields in stored form came as text alone, and are read from it.
            if let text = record.fieldsText, let stored = (position < read.count ? read[position] : nil) ?? StoredFields.fields(text) {
                return MirrorImport.Prepared(entity: entity, fields: layout.values(stored))
            }
            return MirrorImport.Prepared(entity: entity, fields: layout.values(record.fields))
        }
        return (changed, prepared)
    }
}

extension CoreDataMapping {
    func pagePreparer(for mirrored: any MirrorStore) throws -> PagePreparer {
        let store = try CoreDataStore.of(mirrored).store
        return PagePreparer(model: store.model, holding: Set(store.entities.keys))
    }
}
