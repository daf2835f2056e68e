import MeowWire

/// Edits of an exported device snapshot, for tests of what an import takes.
public enum SnapshotEditing {
    /// `snapshot` with every z_share row's permission set to `permission`.
    public static func settingSharePermission(_ snapshot: JSONValue, to permission: String) -> JSONValue {
        guard case var .object(root) = snapshot, case var .array(stores) = root["stores"] else { return snapshot }
        for index in stores.indices {
            guard case var .object(store) = stores[index], case var .object(tables) = store["tables"],
                  case var .object(share) = tables["z_share"], let columns = share["columns"]?.arrayValue,
                  let column = columns.firstIndex(of: "permission"), case let .array(rows) = share["rows"] else { continue }
            share["rows"] = .array(rows.map { row in
                guard case var .array(values) = row else { return row }
                values[column] = .string(permission)
                return .array(values)
            })
            tables["z_share"] = .object(share)
            store["tables"] = .object(tables)
            stores[index] = .object(store)
        }
        root["stores"] = .array(stores)
        return .object(root)
    }
}
