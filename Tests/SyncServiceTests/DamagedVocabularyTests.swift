import CloudWire
import MeowWire
import SQLiteKit
@testable import SyncServiceKit
import TestSupport
import Testing

/// A CloudKit spelling the sync-service kept in its own tables and finds changed (a damaged
/// database) is an `internalError` naming the row and column, never a default standing in for it.
@Suite struct DamagedVocabularyTests {
    @Test func aDamagedAccountStatusIsAnErrorNotAnAvailableAccount() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("cloud.sqlite")
        do {
            let cloud = try CloudFixture(path: path)
            try cloud.engine.write { state in try state.db.execute("UPDATE users SET status = 'asleep' WHERE name = 'alice'") }
            let listed = wireError { _ = try cloud.engine.listUsers() }
            #expect(listed?.code == .internalError)
            #expect(listed?.message.contains("The users row of user 'alice', column status, holds 'asleep', which is not an account status (available, noAccount, temporarilyUnavailable)") == true,
                    "\(listed?.message ?? "no error")")
        }
        let reopened = wireError { _ = try CloudFixture(path: path) }
        #expect(reopened?.code == .internalError)
        #expect(reopened?.message.contains("user 'alice', column status, holds 'asleep'") == true, "\(reopened?.message ?? "no error")")
    }

    @Test(.timeLimit(.minutes(2)))
    func aRunningServiceAnswersADamagedAccountStatusWithInternalErrorNamingTheRow() async throws {
        let dir = TemporaryDirectory(prefix: "dv")
        let service = try await CloudProcess(dir: dir).start(dataDir: true)
        let admin = try await CloudProcess(dir: dir).connect(CloudProcess.admin, client: "damaged-vocabulary-tests")
        try Database(path: dir.file("data/cloud.sqlite")).execute("UPDATE users SET status = 'asleep' WHERE name = 'alice'")
        let error = await CloudProcess.failure { _ = try await admin.call("admin.listUsers", Empty()) }
        #expect(error?.code == .internalError)
        #expect(error?.message.contains("The users row of user 'alice', column status, holds 'asleep'") == true, "\(error?.message ?? "no error")")
        admin.close()
        _ = await service.stop()
    }

    @Test func aDamagedFieldTypeEnvironmentIsAnErrorNotDevelopment() throws {
        let cloud = try CloudFixture()
        try cloud.makeZone()
        try cloud.save([record("a")])
        try cloud.engine.write { state in
            try state.db.execute("UPDATE field_types SET environment = 'staging' WHERE record_type = 'CD_CareEvent' AND field = 'CD_title'")
        }
        let error = wireError { try cloud.engine.reloadFieldSchema() }
        #expect(error?.code == .internalError)
        #expect(error?.message.contains("The field_types row of record type 'CD_CareEvent', field 'CD_title', column environment, holds 'staging', which is not an environment (development, production)") == true,
                "\(error?.message ?? "no error")")
    }
}
