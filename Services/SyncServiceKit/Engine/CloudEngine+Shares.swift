import CloudWire
import MeowWire

extension CloudEngine {
    /// participants.add: the owner invites a user (pending until they accept).
    public func addParticipant(caller: String, _ params: ShareParams, trace: RequestTrace? = nil) throws -> ShareResult {
        try ownerShareOp(caller: caller, params, trace: trace) { state, zone in
            let (user, permission) = try Self.invitation(user: params.user, permission: params.permission, caller: caller, field: "params", state: state)
            let active = try state.db.scalar("SELECT count(*) FROM participants WHERE zone = ? AND share = ? AND acceptance != '\(ShareAcceptanceStatus.removed.rawValue)' AND user != ?",
                                             [zone.id, params.share, user])?.int ?? 0
            guard active + 1 <= state.limits.maxParticipants else {
                throw WireError(.tooManyParticipants, "Share '\(params.share)' already has \(active) participants; at most \(state.limits.maxParticipants) are allowed.",
                                details: ["maxParticipants": .int(state.limits.maxParticipants)])
            }
            let existing = try state.participation(zone: zone.id, share: params.share, user: user)
            let acceptance: ShareAcceptanceStatus = existing?.acceptance == .accepted ? .accepted : .pending
            let before = try state.reads(zone: zone.id, user: user)
            try state.db.execute("INSERT OR REPLACE INTO participants(zone, share, user, role, permission, acceptance) VALUES (?, ?, ?, ?, ?, ?)",
                                 [zone.id, params.share, user, ShareRole.privateUser.rawValue, permission.rawValue, acceptance.rawValue])
            try state.noteReading(zone: zone, user: user, before: before)
        }
    }

    /// participants.validate: the checks participants.add makes, on the invitations of a share
    /// about to be made (each user exists, is not the caller and is named once, each permission
    /// is readOnly or readWrite, and they fit `maxParticipants` with the owner); writes nothing.
    /// A client sharing objects checks first, so that a refused invitation leaves nothing shared
    /// or moved (as CKFetchShareParticipantsOperation comes before a share is saved).
    public func validateParticipants(caller: String, _ params: ParticipantsValidateParams) throws -> ParticipantsValidateResult {
        try read { state in
            // The count first: it bounds the lookups a long list makes.
            guard params.participants.count + 1 <= state.limits.maxParticipants else {
                throw WireError(.tooManyParticipants, "\(params.participants.count) participants and the owner are more than the \(state.limits.maxParticipants) a share may have.",
                                details: ["maxParticipants": .int(state.limits.maxParticipants)])
            }
            var seen: Set<String> = []
            for (index, invite) in params.participants.enumerated() {
                let (user, _) = try Self.invitation(user: invite.user, permission: invite.permission, caller: caller,
                                                    field: "params.participants[\(index)]", state: state)
                guard seen.insert(user).inserted else {
                    throw WireError(.invalidArguments, "params.participants[\(index)].user: \(user) is invited twice.",
                                    details: ["field": .string("params.participants[\(index)].user"), "user": .string(user)])
                }
            }
            return ParticipantsValidateResult(participants: params.participants)
        }
    }

    /// participants.setPermission: the owner changes a participant's permission.
    public func setParticipantPermission(caller: String, _ params: ShareParams, trace: RequestTrace? = nil) throws -> ShareResult {
        try ownerShareOp(caller: caller, params, trace: trace) { state, zone in
            let user = try Self.requireUser(params.user, state: state)
            let permission = try SharePermission.parse(params.permission, field: "params.permission")
            guard try state.participation(zone: zone.id, share: params.share, user: user) != nil, user != caller else {
                throw WireError(.unknownItem, "\(user) is not a participant of share '\(params.share)'.")
            }
            let before = try state.reads(zone: zone.id, user: user)
            try state.db.execute("UPDATE participants SET permission = ? WHERE zone = ? AND share = ? AND user = ?",
                                 [permission.rawValue, zone.id, params.share, user])
            // To none the zone leaves the participant's shared database; from none it comes back.
            try state.noteReading(zone: zone, user: user, before: before)
        }
    }

    /// participants.remove: the owner removes a participant; the zone leaves their shared database.
    public func removeParticipant(caller: String, _ params: ShareParams, trace: RequestTrace? = nil) throws -> ShareResult {
        try ownerShareOp(caller: caller, params, trace: trace) { state, zone in
            let user = try Self.requireUser(params.user, state: state)
            guard try state.participation(zone: zone.id, share: params.share, user: user) != nil, user != caller else {
                throw WireError(.unknownItem, "\(user) is not a participant of share '\(params.share)'.")
            }
            try state.setAcceptance(zone: zone, share: params.share, user: user, to: .removed, bump: false)
        }
    }

    /// shares.setPublicPermission: none, readOnly or readWrite; none removes every participant.
    public func setPublicPermission(caller: String, _ params: ShareParams, trace: RequestTrace? = nil) throws -> ShareResult {
        try ownerShareOp(caller: caller, params, trace: trace) { state, zone in
            let permission = try SharePermission.parse(params.permission, field: "params.permission")
            try state.db.execute("UPDATE shares SET public_permission = ? WHERE zone = ? AND name = ?", [permission.rawValue, zone.id, params.share])
            if permission == .none {
                let users = try state.db.query("SELECT user FROM participants WHERE zone = ? AND share = ? AND role != '\(ShareRole.owner.rawValue)' AND acceptance != '\(ShareAcceptanceStatus.removed.rawValue)'",
                                               [zone.id, params.share]).compactMap { $0[0].string }
                for user in users { try state.setAcceptance(zone: zone, share: params.share, user: user, to: .removed, bump: false) }
            }
        }
    }

    /// shares.accept: an invited user (or anyone, when the public permission allows) accepts;
    /// the zone appears in their shared database.
    public func acceptShare(caller: String, _ params: ShareParams, trace: RequestTrace? = nil) throws -> ShareResult {
        try locks.withZones([params.zoneID.resolved(caller: caller)]) { try write { state in
            let zone = try participantZone(state, caller: caller, params, trace: trace)
            if let part = try state.participation(zone: zone.id, share: params.share, user: caller), part.acceptance != .removed {
                trace?.decide(true, "invited participant accepts", zone: zone.zoneID, record: params.share)
            } else {
                let publicPermission = try state.publicPermission(zone: zone.id, share: params.share)
                guard publicPermission != .none else {
                    trace?.decide(false, "not invited and the share is not public", zone: zone.zoneID, record: params.share)
                    throw WireError(.permissionFailure, "\(caller) is not invited to share '\(params.share)' and it is not public.",
                                    details: ["reason": "not invited and the share is not public"])
                }
                trace?.decide(true, "public share with permission \(publicPermission.rawValue)", zone: zone.zoneID, record: params.share)
                try state.db.execute("INSERT OR REPLACE INTO participants(zone, share, user, role, permission, acceptance) VALUES (?, ?, ?, ?, ?, ?)",
                                     [zone.id, params.share, caller, ShareRole.publicUser.rawValue, publicPermission.rawValue, ShareAcceptanceStatus.pending.rawValue])
            }
            try state.setAcceptance(zone: zone, share: params.share, user: caller, to: .accepted)
            try state.noteShare("accepted", share: params.share, zone: zone, trace: trace)
            return ShareResult(share: try state.shareRecord(zone: zone, name: params.share, caller: caller))
        } }
    }

    /// shares.leave: a participant leaves (as deleting the share from the shared database does).
    public func leaveShare(caller: String, _ params: ShareParams, trace: RequestTrace? = nil) throws -> ShareResult {
        try locks.withZones([params.zoneID.resolved(caller: caller)]) { try write { state in
            let zone = try participantZone(state, caller: caller, params, trace: trace)
            guard try state.participation(zone: zone.id, share: params.share, user: caller) != nil else {
                throw WireError(.unknownItem, "\(caller) is not a participant of share '\(params.share)'.")
            }
            try state.setAcceptance(zone: zone, share: params.share, user: caller, to: .removed)
            try state.noteShare("left", share: params.share, zone: zone, trace: trace)
            return ShareResult(share: try state.shareRecord(zone: zone, name: params.share, caller: caller))
        } }
    }

    /// shares.fetch: the share record with its participants (owner: private database; participant: shared).
    public func fetchShare(caller: String, _ params: ShareParams, trace: RequestTrace? = nil) throws -> ShareResult {
        try read { state in
            let scope = params.database ?? .private
            let zone = try state.openZone(params.zoneID, scope: scope, caller: caller, trace: trace)
            if scope == .shared {
                try state.requireSharedAccess(zone: zone, share: params.share, caller: caller, write: false, record: params.share, trace: trace)
            }
            return ShareResult(share: try state.shareRecord(zone: zone, name: params.share, caller: caller))
        }
    }

    /// shares.invitations: every share that invited the caller and that they have not left.
    public func invitations(caller: String) throws -> InvitationsResult {
        try read { state in
            let rows = try state.db.query("""
                SELECT z.owner, z.name, p.share, s.root, p.role, p.permission, p.acceptance, p.zone
                FROM participants p JOIN zones z ON z.id = p.zone JOIN shares s ON s.zone = p.zone AND s.name = p.share
                WHERE z.environment = ? AND p.user = ? AND p.role != '\(ShareRole.owner.rawValue)' AND p.acceptance != '\(ShareAcceptanceStatus.removed.rawValue)' ORDER BY z.owner, z.name, p.share
                """, [state.environment.rawValue, caller])
            return InvitationsResult(invitations: try rows.map { values in
                let share = values[2].string ?? ""
                func row(_ column: String) -> String { CloudTransaction.participantRow(zone: values[7].int64 ?? 0, share: share, user: caller, column: column) }
                return Invitation(zoneID: ZoneID(zoneName: values[1].string ?? "", ownerName: values[0].string ?? ""), shareName: share,
                                  rootRecordName: values[3].string, role: try .stored(values[4].string, in: row("role")),
                                  permission: try .stored(values[5].string, in: row("permission")),
                                  acceptanceStatus: try .stored(values[6].string, in: row("acceptance")))
            })
        }
    }

    // MARK: Helpers

    private func ownerShareOp(caller: String, _ params: ShareParams, trace: RequestTrace?,
                              _ body: (CloudTransaction, ZoneRow) throws -> Void) throws -> ShareResult {
        try locks.withZones([params.zoneID.resolved(caller: caller)]) { try write { state in
            guard (params.database ?? .private) == .private else {
                trace?.decide(false, "only the owner manages a share, through the private database")
                throw WireError(.permissionFailure, "Only the share's owner changes participants or the public permission, through the private database.",
                                details: ["reason": "only the owner manages a share"])
            }
            let zone = try state.openZone(params.zoneID, scope: .private, caller: caller, trace: trace)
            guard try state.liveRecord(zone: zone.id, name: params.share)?.type == CloudKitNames.shareRecordType else {
                throw WireError(.unknownItem, "Zone \(zone.name) has no share '\(params.share)'.", details: ["shareName": .string(params.share)])
            }
            trace?.decide(true, "owner manages own share", zone: zone.zoneID, record: params.share)
            try body(state, zone)
            try state.bumpRecord(zone: zone, name: params.share, user: caller)
            try state.touchZone(zone)
            try state.noteShare("changed", share: params.share, zone: zone, trace: trace)
            return ShareResult(share: try state.shareRecord(zone: zone, name: params.share, caller: caller))
        } }
    }

    private func participantZone(_ state: CloudTransaction, caller: String, _ params: ShareParams, trace: RequestTrace?) throws -> ZoneRow {
        let zoneID = params.zoneID.resolved(caller: caller)
        trace?.noteZone(zoneID)
        guard zoneID.ownerName != caller else {
            throw WireError(.invalidArguments, "\(caller) owns this share; owners do not accept or leave their own shares.")
        }
        guard let zone = try state.zone(owner: zoneID.ownerName, name: zoneID.zoneName) else {
            throw try wrongOwner(state, caller: caller, zoneID) ?? state.zoneNotFound(params.zoneID)
        }
        guard try state.liveRecord(zone: zone.id, name: params.share)?.type == CloudKitNames.shareRecordType else {
            throw WireError(.unknownItem, "Zone \(zone.name) of \(zone.owner) has no share '\(params.share)'.", details: ["shareName": .string(params.share)])
        }
        return zone
    }

    /// A zone asked for under the wrong owner, when the caller was invited to a zone of that name
    /// by someone else: the error names the owner to use, the usual slip when accepting.
    private func wrongOwner(_ state: CloudTransaction, caller: String, _ zoneID: ZoneID) throws -> WireError? {
        let owners = try state.db.query("""
            SELECT DISTINCT z.owner FROM zones z JOIN participants p ON p.zone = z.id
            WHERE z.environment = ? AND z.name = ? AND p.user = ? AND p.acceptance != '\(ShareAcceptanceStatus.removed.rawValue)' ORDER BY z.owner
            """, [state.environment.rawValue, zoneID.zoneName, caller]).compactMap { $0[0].string }
        guard let owner = owners.first else { return nil }
        return WireError(.zoneNotFound, "\(zoneID.ownerName) has no zone '\(zoneID.zoneName)'; \(owner) shared a zone of that name with \(caller). "
                         + "Pass ownerName '\(owner)': it is the user who shared the zone, as the invitation and share.create's reply name it.",
                         details: ["zoneID": state.zoneJSON(zoneID), "ownerName": .string(owner)])
    }

    private static func requireUser(_ user: String?, state: CloudTransaction, field: String = "params.user") throws -> String {
        guard let user, try state.db.scalar("SELECT 1 FROM users WHERE name = ?", [user]) != nil else {
            let which = user.map { " (\(CloudKitNames.quoted($0)) is not one)" } ?? ""
            throw WireError(.invalidArguments, "\(field) must name an existing user\(which).",
                            details: ["field": .string(field), "user": user.map { .string($0) } ?? .null])
        }
        return user
    }

    /// One invitation's user and permission, as participants.add and participants.validate
    /// check them (`field`: where the two are in the request, for the message).
    private static func invitation(user: String?, permission: String?, caller: String, field: String,
                                   state: CloudTransaction) throws -> (String, SharePermission) {
        let user = try requireUser(user, state: state, field: "\(field).user")
        guard user != caller else {
            throw WireError(.invalidArguments, "\(field).user: \(caller) owns the share and is already its owner participant.",
                            details: ["field": .string("\(field).user"), "user": .string(user)])
        }
        return (user, try SharePermission.parse(permission, field: "\(field).permission", allowed: SharePermission.invitable))
    }
}

extension CloudTransaction {
    /// The request log's fact of a share change, with the share's participants as they are now.
    func noteShare(_ change: String, share: String, zone: ZoneRow, trace: RequestTrace?) throws {
        guard let trace else { return }
        trace.noteShare(change, share: share, zone: zone.zoneID, participants: try shareInfo(zone: zone, name: share)?.participants ?? [])
    }

    func shareInfo(zone: ZoneRow, name: String) throws -> ShareInfo? {
        guard let row = try db.query("SELECT root, public_permission FROM shares WHERE zone = ? AND name = ?", [zone.id, name]).first else { return nil }
        let participants = try db.query("SELECT user, role, permission, acceptance FROM participants WHERE zone = ? AND share = ? ORDER BY role != '\(ShareRole.owner.rawValue)', user",
                                        [zone.id, name]).map {
            let user = $0[0].string ?? ""
            func row(_ column: String) -> String { Self.participantRow(zone: zone.id, share: name, user: user, column: column) }
            return ShareParticipant(userRecordName: user, role: try .stored($0[1].string, in: row("role")),
                                    permission: try .stored($0[2].string, in: row("permission")),
                                    acceptanceStatus: try .stored($0[3].string, in: row("acceptance")))
        }
        return ShareInfo(owner: zone.owner, publicPermission: try .stored(row[1].string, in: Self.shareRow(zone: zone.id, share: name)),
                         rootRecordName: row[0].string, participants: participants)
    }

    /// A share's public permission (none when the share is not public).
    func publicPermission(zone: Int64, share: String) throws -> SharePermission {
        try .stored(db.scalar("SELECT public_permission FROM shares WHERE zone = ? AND name = ?", [zone, share])?.string,
                    in: Self.shareRow(zone: zone, share: share))
    }

    /// Where a damaged shares value was read, for the error.
    static func shareRow(zone: Int64, share: String) -> String {
        "The shares row of zone \(zone), share \(CloudKitNames.quoted(share)), column public_permission,"
    }

    func shareRecord(zone: ZoneRow, name: String, caller: String) throws -> CloudRecord {
        guard let stored = try liveRecord(zone: zone.id, name: name), stored.type == CloudKitNames.shareRecordType else {
            throw WireError(.unknownItem, "Zone \(zone.name) has no share '\(name)'.")
        }
        return try render(stored, zone: zone, caller: caller)
    }

    func createShare(zone: ZoneRow, name: String, root: String?) throws {
        try db.execute("INSERT OR REPLACE INTO shares(zone, name, root, public_permission) VALUES (?, ?, ?, ?)",
                       [zone.id, name, root, SharePermission.none.rawValue])
        try db.execute("INSERT OR REPLACE INTO participants(zone, share, user, role, permission, acceptance) VALUES (?, ?, ?, ?, ?, ?)",
                       [zone.id, name, zone.owner, ShareRole.owner.rawValue, SharePermission.readWrite.rawValue, ShareAcceptanceStatus.accepted.rawValue])
    }

    /// Ends a share: its participants lose the zone (if no other share of it is theirs), the
    /// share record becomes a tombstone and the root no longer references it.
    func endShare(zone: ZoneRow, name: String, user: String) throws {
        let root = try db.scalar("SELECT root FROM shares WHERE zone = ? AND name = ?", [zone.id, name])?.string
        let users = try db.query("SELECT user FROM participants WHERE zone = ? AND share = ? AND acceptance = '\(ShareAcceptanceStatus.accepted.rawValue)' AND role != '\(ShareRole.owner.rawValue)'",
                                 [zone.id, name]).compactMap { $0[0].string }
        let readers = try Dictionary(uniqueKeysWithValues: users.map { ($0, try reads(zone: zone.id, user: $0)) })
        try db.execute("DELETE FROM participants WHERE zone = ? AND share = ?", [zone.id, name])
        try db.execute("DELETE FROM shares WHERE zone = ? AND name = ?", [zone.id, name])
        for participant in users { try noteReading(zone: zone, user: participant, before: readers[participant] ?? false) }
        if try liveRecord(zone: zone.id, name: name) != nil { try tombstone(zone: zone, name: name, user: user) }
        if let root, let rootRecord = try liveRecord(zone: zone.id, name: root), rootRecord.share == name {
            try bumpRecord(zone: zone, name: root, user: user, share: .some(nil))
        }
    }

    /// Moves a participant to `acceptance`, logging the zone's arrival in or departure from
    /// their shared database (`noteReading`).
    func setAcceptance(zone: ZoneRow, share: String, user: String, to acceptance: ShareAcceptanceStatus, bump: Bool = true) throws {
        let before = try reads(zone: zone.id, user: user)
        try db.execute("UPDATE participants SET acceptance = ? WHERE zone = ? AND share = ? AND user = ?",
                       [acceptance.rawValue, zone.id, share, user])
        try noteReading(zone: zone, user: user, before: before)
        if bump {
            try bumpRecord(zone: zone, name: share, user: user)
            try touchZone(zone)
        }
    }

    /// Whether `user` reads `zone`: an accepted participation, with a permission above none, in
    /// some share of it. Only readers have the zone in their shared database.
    func reads(zone: Int64, user: String) throws -> Bool {
        try db.scalar("SELECT 1 FROM participants WHERE zone = ? AND user = ? AND acceptance = '\(ShareAcceptanceStatus.accepted.rawValue)' AND permission != '\(SharePermission.none.rawValue)'",
                      [zone, user]) != nil
    }

    /// After `user`'s participations in `zone` changed (accepted, left, removed, permission
    /// set): the zone arrives in their shared database when their reading of it begins, and
    /// leaves it when it ends, so their device wipes its copy. A beginning also expires the
    /// zone tokens they hold: records they could not see are behind them (accepted while at
    /// none, or readable again after none), and their device refetches from nil.
    func noteReading(zone: ZoneRow, user: String, before: Bool) throws {
        let after = try reads(zone: zone.id, user: user)
        guard after != before, user != zone.owner else { return }
        let seq = nextSeq()
        if after {
            try db.execute("INSERT INTO reading_starts(zone, user, seq) VALUES (?, ?, ?) ON CONFLICT(zone, user) DO UPDATE SET seq = excluded.seq",
                           [zone.id, user, seq])
        }
        try logDatabaseChange(user: user, scope: .shared, zone: zone, kind: after ? "changed" : "deleted", seq: seq)
    }

    /// When `user`'s current reading of `zone` began (0: never noted).
    func readingStart(zone: Int64, user: String) throws -> Int64 {
        try db.scalar("SELECT seq FROM reading_starts WHERE zone = ? AND user = ?", [zone, user])?.int64 ?? 0
    }
}
