import CloudWire
import SQLiteKit

extension CloudTransaction {
    /// Gives every user `_defaultZone` in both environments (a cloud or a snapshot written
    /// before production existed has them in development only).
    func ensureDefaultZones() throws {
        for user in try db.query("SELECT name FROM users").compactMap({ $0[0].string }) {
            for environment in CloudEnvironment.allCases {
                _ = try ensureZone(owner: user, name: ZoneID.defaultZoneName, environment: environment)
            }
        }
    }

    /// Development's field definitions become production's, as CloudKit's reset of the
    /// development environment leaves them.
    func copyProductionSchemaToDevelopment() throws {
        try db.execute("DELETE FROM field_types WHERE environment = '\(CloudEnvironment.development.rawValue)'")
        try db.execute("""
            INSERT INTO field_types(record_type, field, type, environment)
            SELECT record_type, field, type, '\(CloudEnvironment.development.rawValue)' FROM field_types WHERE environment = '\(CloudEnvironment.production.rawValue)'
            """)
    }
}
