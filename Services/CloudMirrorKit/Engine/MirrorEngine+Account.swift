import Foundation
import MeowWire
import StoreServiceKit
import StoreWire

extension MirrorEngine {
    static let accountKey = "accountUser"
    static let signedOutKey = "signedOut"

    var isSignedIn: Bool { credential.withLock { $0 != nil } }

    /// The credential to sign in with; sync steps fail at once while signed out, even with
    /// nothing to send.
    @discardableResult
    func signedInCredential() throws(WireError) -> String {
        guard let credential = credential.withLock({ $0 }) else {
            throw WireError(.notAuthenticated, "No cloud account is signed in on this device (account.signOut); call account.signIn to sync again. Local saves keep working and are uploaded after sign-in.")
        }
        return credential
    }

    /// Scenario 35, sign-out: the device stops syncing, and the data it mirrored leaves the
    /// stores with the queues, tokens and cloud metadata, as iOS does when the iCloud account
    /// signs out. Saves keep working while signed out; they are uploaded after the next sign-in.
    func signOut() throws -> AccountResult {
        let previous = user
        connection.withLock { $0?.client.close(); $0 = nil }
        credential.withLock { $0 = nil }
        let removed = try stores.withEveryStore { list -> Int in
            let removed = try clearLocalData(list)
            if let store = list.first(where: { $0.scope == .private }) {
                let state = store.bookkeeping
                try store.write {
                    try state.setValue(Self.accountKey, nil)
                    try state.setValue(Self.signedOutKey, "1")
                }
            }
            return removed
        }
        logger.notice("signed out of the cloud account: its data left this device", ["previousUser": .string(previous ?? ""), "objectsRemoved": .int(removed)])
        return AccountResult(signedIn: false, user: nil, objectsRemoved: removed)
    }

    /// Signs in with `newCredential` (default: the start-up credential) and connects now, so a
    /// bad credential is answered here. Another user's account first clears the local data (as
    /// an account switch does); local rows saved while signed out are uploaded by the next send.
    func signIn(credential newCredential: String?) throws -> AccountResult {
        let chosen = newCredential ?? options.credential
        let previous = credential.withLock { current -> String? in
            defer { current = chosen }
            return current
        }
        if previous != chosen { connection.withLock { $0?.client.close(); $0 = nil } }
        do {
            let live = try client()
            try stores.withStore(.private) { store in try store.write { try store.bookkeeping.setValue(Self.signedOutKey, nil) } }
            return AccountResult(signedIn: true, user: live.user)
        } catch {
            // A refused credential leaves the device as it was.
            credential.withLock { $0 = previous }
            throw error
        }
    }

    /// Removes every object of every store and the mirror's bookkeeping, but the export cursor
    /// and the sign-out mark; forgets the zones made and the refusals. Returns how many objects went.
    private func clearLocalData(_ list: [any MirrorStore]) throws -> Int {
        let removed = try mapping.removeEverything(from: list, keeping: [Self.signedOutKey])
        progress.withLock {
            $0.zonesEnsured = []
            $0.refusedExports = [:]
        }
        return removed
    }

    /// Scenario 35: the stores remember the cloud user they mirror. Another user's credential
    /// (an account switch) clears the local data, the queues and the tokens first, as iOS does
    /// when the iCloud account changes. The first sign-in uploads what is already there once:
    /// it is all in history, after the export cursor.
    func signIn(_ user: String) throws {
        try stores.withEveryStore { list in
            guard let store = list.first(where: { $0.scope == .private }) else { return }
            let known = try store.bookkeeping.value(Self.accountKey)
            if let known, known != user {
                logger.notice("the cloud account changed: local data and sync state are cleared",
                              ["previousUser": .string(known), "user": .string(user)])
                _ = try clearLocalData(list)
            }
            if known != user {
                try store.write { try store.bookkeeping.setValue(Self.accountKey, user) }
            }
        }
    }
}
