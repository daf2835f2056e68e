import CloudWire
import MeowWire
import Testing

@Suite("Share vocabulary: permissions, roles, acceptance statuses")
struct ShareVocabularyTests {
    @Test func everySpellingIsCloudKitsAndRoundTrips() throws {
        #expect(SharePermission.allCases.map(\.rawValue) == ["none", "readOnly", "readWrite"])
        #expect(ShareRole.allCases.map(\.rawValue) == ["owner", "privateUser", "publicUser"])
        #expect(ShareAcceptanceStatus.allCases.map(\.rawValue) == ["pending", "accepted", "removed"])
        for permission in SharePermission.allCases { try Self.roundTrips(permission) }
        for role in ShareRole.allCases { try Self.roundTrips(role) }
        for status in ShareAcceptanceStatus.allCases { try Self.roundTrips(status) }
    }

    @Test func anUnknownSpellingIsADecodingErrorNamingTheValidOnes() {
        Self.refuses(SharePermission.self, "admin", "'admin' is not a share permission; use one of none, readOnly, readWrite.")
        Self.refuses(ShareRole.self, "readWrite", "'readWrite' is not a share role; use one of owner, privateUser, publicUser.")
        Self.refuses(ShareAcceptanceStatus.self, "Accepted", "'Accepted' is not a share acceptance status; use one of pending, accepted, removed.")
    }

    @Test func aShareRecordWithAnUnknownParticipantPermissionDoesNotDecode() throws {
        let participant: JSONValue = ["userRecordName": "alice", "role": "privateUser", "permission": "readWrite", "acceptanceStatus": "accepted"]
        let info: JSONValue = ["owner": "owner", "publicPermission": "none", "participants": [participant]]
        let decoded = try JSONValueDecoder().decode(ShareInfo.self, from: info)
        #expect(decoded.participants == [ShareParticipant(userRecordName: "alice", role: .privateUser, permission: .readWrite, acceptanceStatus: .accepted)])
        #expect(try JSONValue(encoding: decoded) == info)

        let damaged: JSONValue = ["userRecordName": "alice", "role": "privateUser", "permission": "admin", "acceptanceStatus": "accepted"]
        #expect(throws: DecodingError.self) {
            try JSONValueDecoder().decode(ShareInfo.self, from: ["owner": "owner", "publicPermission": "none", "participants": [damaged]])
        }
        #expect(throws: DecodingError.self) {
            try JSONValueDecoder().decode(ShareInfo.self, from: ["owner": "owner", "publicPermission": "everyone", "participants": []])
        }
    }

    @Test func aRequestsValueIsInvalidArgumentsNamingTheFieldAndWhatItTakes() {
        #expect(throws: Never.self) { _ = try SharePermission.parse("readOnly", field: "params.permission") }
        let unknown = Self.error { _ = try SharePermission.parse("owner", field: "params.permission") }
        #expect(unknown?.code == .invalidArguments)
        #expect(unknown?.message == "params.permission must be none, readOnly or readWrite, not 'owner'.")
        #expect(unknown?.details["field"] == "params.permission")
        let none = Self.error { _ = try SharePermission.parse("none", field: "params.participants[0].permission", allowed: SharePermission.invitable) }
        #expect(none?.message == "params.participants[0].permission must be readOnly or readWrite, not 'none'.")
        let absent = Self.error { _ = try SharePermission.parse(nil, field: "params.permission", allowed: SharePermission.invitable) }
        #expect(absent?.message == "params.permission must be readOnly or readWrite.")
    }

    @Test func aStoredValueOutsideTheSetIsADamagedRowNotADefault() {
        #expect(throws: Never.self) { _ = try ShareRole.stored("owner", in: "row 1") }
        let damaged = Self.error { _ = try ShareRole.stored("admin", in: "The participants row 1, column role,") }
        #expect(damaged?.code == .internalError)
        #expect(damaged?.message == "The participants row 1, column role, holds 'admin', which is not a share role (owner, privateUser, publicUser): the database is damaged.")
        #expect(Self.error { _ = try SharePermission.stored(nil, in: "z_share") }?.code == .internalError)
    }

    static func roundTrips<Value: CloudVocabulary>(_ value: Value) throws {
        let json = try JSONValue(encoding: value)
        #expect(json == .string(value.rawValue))
        #expect(try JSONValueDecoder().decode(Value.self, from: json) == value)
    }

    static func refuses<Value: CloudVocabulary>(_ type: Value.Type, _ text: String, _ message: String) {
        do {
            _ = try JSONValueDecoder().decode(Value.self, from: .string(text))
            Issue.record("\(text) decoded as \(Value.self)")
        } catch let DecodingError.dataCorrupted(context) {
            #expect(context.debugDescription == message)
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    static func error(_ body: () throws -> Void) -> WireError? {
        do {
            try body()
            return nil
        } catch {
            return error as? WireError
        }
    }
}
