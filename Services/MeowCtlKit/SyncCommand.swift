#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeowWire
import StoreWire

/// `meowctl sync now|send|fetch|status`: a device's cloud mirror (sync.* ops), with a progress
/// line on stderr while a step runs.
enum SyncCommand {
    static let help = """
    meowctl sync — run a device's cloud mirror by hand and see where it stands

    Usage (the device is a store-service started with --sync-socket):
      meowctl sync now    --socket PATH [--timeout SECONDS] [--progress | --no-progress] [--json]
          Sends the queued local changes, then fetches the cloud's (sync.now).
      meowctl sync send   --socket PATH [...same options]
      meowctl sync fetch  --socket PATH [...same options]
      meowctl sync signout --socket PATH [--json]
          Signs the device out of its cloud account (account.signOut): syncing stops and the
          account's data leaves the device; local saves go on and upload after sign-in.
      meowctl sync signin  --socket PATH [--credential SECRET] [--json]
          Signs in again (account.signIn; default: the credential the device started with).
      meowctl sync schema --socket PATH [--dry-run] [--progress | --no-progress] [--json]
          Defines every field of the model in the cloud's schema before real records go out
          (sync.initializeSchema, initializeCloudKitSchema): prints each record type's fields and
          CloudKit types; fails with CloudKit's message if the schema types a field otherwise.
          --dry-run prints them without uploading.
      meowctl sync status --socket PATH [--require-quiescent] [--json]
          Pending changes per store and zone, deferred ones, change tokens, the last error and
          whether the mirror is quiescent (nothing queued, nothing in flight). With
          --require-quiescent the exit code is 1 unless it is.

    While a step runs, a progress line on stderr shows the step in flight and what is pending
    (when stderr is a terminal, or with --progress; never with --json). --timeout defaults to 600.
    Exit codes: 0 ok, 1 error reply (e.g. a cloud error such as requestRateLimited, or not
    quiescent with --require-quiescent), 2 the device (or its cloud) cannot be reached, 64 usage.
    """

    static func run(_ arguments: [String]) async throws(CommandError) {
        let args = try Arguments.parse(arguments, command: "sync", options: ["socket", "timeout", "credential"],
                                       flags: ["progress", "no-progress", "require-quiescent", "dry-run"])
        let subcommand = try args.subcommand(of: "sync", ["now", "send", "fetch", "status", "signout", "signin", "schema"])
        let socket = try args.deviceSocket(for: "sync \(subcommand)")
        let output = args.output
        let device = try await ServiceSession.open(socket: socket, output: output, timeout: try args.timeout(default: 600))
        defer { device.close() }
        if subcommand == "signout" || subcommand == "signin" {
            let params: [String: JSONValue] = try args.credential().map { ["credential": .string($0)] } ?? [:]
            let op = subcommand == "signout" ? "account.signOut" : "account.signIn"
            let reply = try await device.call(op, params)
            if output.json { return output.emit(reply) }
            let result = try device.read(AccountResult.self, from: reply, op: op)
            output.say(result.signedIn ? "signed in as \(result.user ?? "–")"
                                       : "signed out; \(result.objectsRemoved.map(String.init) ?? "–") objects of the account left this device")
            return
        }
        if subcommand == "schema" {
            let reply = try await device.callShowingProgress("sync.initializeSchema", ["dryRun": .bool(args.has("dry-run"))], show: args.showsProgress)
            if output.json { return output.emit(reply) }
            let result = try device.read(SchemaInitialization.self, from: reply, op: "sync.initializeSchema")
            for (recordType, fields) in result.recordTypes.sorted(by: { $0.key < $1.key }) {
                let list = fields.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
                output.say("\(recordType): \(list.joined(separator: ", "))")
            }
            output.say(result.dryRun ? "dry run: nothing uploaded"
                                     : "the cloud's schema now knows these fields (\(result.uploaded) representative records saved and deleted)")
            return
        }
        if subcommand == "status" {
            let reply = try await device.call("sync.status")
            let status = try device.read(SyncStatus.self, from: reply, op: "sync.status")
            output.json ? output.emit(reply) : output.say(summary(status))
            if args.has("require-quiescent"), !status.quiescent { throw .errorReply }
            return
        }
        let showProgress = !output.json && !args.has("no-progress") && (args.has("progress") || isatty(2) != 0)
        let progress = showProgress ? ProgressLine(socket: socket, step: "sync.\(subcommand)") : nil
        let started = ContinuousClock.now
        let result: JSONValue
        do {
            result = try await device.call("sync.\(subcommand)")
        } catch {
            await progress?.finish(elapsed: ContinuousClock.now - started, outcome: "failed")
            throw error
        }
        await progress?.finish(elapsed: ContinuousClock.now - started, outcome: "done")
        if output.json { return output.emit(result) }
        let op = "sync.\(subcommand)"
        switch subcommand {
        case "send": output.say(describeSend(try device.read(SyncSendResult.self, from: result, op: op)))
        case "fetch": output.say(describeFetch(try device.read(SyncFetchResult.self, from: result, op: op)))
        default:
            let now = try device.read(SyncNowResult.self, from: result, op: op)
            output.say(describeSend(now.send))
            output.say(describeFetch(now.fetch))
        }
    }

    static func describeSend(_ send: SyncSendResult) -> String {
        var text = "Sent: \(send.saved) saved, \(send.deleted) deleted in \(send.requests) request(s); "
            + "\(send.conflictsResolved) conflicts merged, \(send.reverted) reverted, \(send.dropped) dropped, "
            + "\(send.deferred) deferred; \(send.pending) still pending"
        if let retry = send.retryAfterSeconds { text += " (retry after \(Int(retry.rounded(.up))) s)" }
        return text
    }

    static func describeFetch(_ fetch: SyncFetchResult) -> String {
        var text = "Fetched: \(fetch.changedRecords) changed, \(fetch.deletedRecords) deleted, "
            + "\(fetch.merged) merged with local edits, in \(fetch.pages) page(s)"
        for (zones, label) in [(fetch.zonesRemoved, "zones removed"), (fetch.zonesReset, "zones reset")] where !zones.isEmpty {
            text += "; \(label): \(zones.joined(separator: ", "))"
        }
        if fetch.tokensExpired > 0 { text += "; \(fetch.tokensExpired) expired token(s) refetched" }
        return text
    }

    /// sync.status for people.
    static func summary(_ status: SyncStatus) -> String {
        var lines: [String] = []
        if !status.signedIn { lines.append("signed out (meowctl sync signin to sync again)") }
        lines.append("device \(status.device), cloud user \(status.user ?? "–"), mode \(status.mode.rawValue), "
                     + "conflict policy \(status.conflictPolicy.rawValue), batch limit \(status.batchLimit)")
        lines.append(status.quiescent ? "quiescent: yes (nothing queued, nothing in flight)"
                                      : "quiescent: NO" + (status.inFlight.map { " (in flight: \($0))" } ?? ""))
        if let error = status.lastError {
            var text = "last error: \(error.code) — \(error.message)"
            if let retry = error.details["retryAfterSeconds"], !retry.isNull { text += " (retry after \(retry.cell) s)" }
            lines.append(text)
        } else {
            lines.append("last error: none")
        }
        let stores = status.stores
        lines.append("")
        lines.append(Table(["STORE", "DATABASE", "PENDING", "DEFERRED", "UNQUEUED", "EXPORT CURSOR", "HISTORY", "DATABASE TOKEN", "UNEXPORTABLE"],
                           stores.map { store in
            [store.store, store.database.rawValue, String(store.pending), String(store.deferred),
             String(store.unqueuedTransactions), String(store.exportCursor), String(store.historyToken),
             store.databaseToken ?? "–", String(store.unexportable.count)]
        }).rendered)
        var zoneRows: [[String]] = []
        for store in stores {
            for zone in Set(store.pendingByZone.keys).union(store.zoneTokens.keys).sorted() {
                zoneRows.append([store.store, zone, String(store.pendingByZone[zone] ?? 0), store.zoneTokens[zone] ?? "–"])
            }
        }
        if !zoneRows.isEmpty {
            lines.append("")
            lines.append(Table(["STORE", "ZONE", "PENDING", "ZONE TOKEN"], zoneRows).rendered)
        }
        let unexportable = stores.flatMap { store in store.unexportable.map { (store.store, $0) } }
        if !unexportable.isEmpty {
            lines.append("")
            lines.append("unexportable (shared-store objects outside any share zone, seed 002; 'meowctl doctor' explains):")
            lines += unexportable.map { "  \($0.0): \($0.1)" }
        }
        let unimportable = stores.flatMap { store in store.unimportable.map { (store.store, $0) } }
        if !unimportable.isEmpty {
            lines.append("")
            lines.append("unimportable (cloud records the store refused; 'meowctl doctor' explains):")
            lines += unimportable.map { "  \($0.0): \($0.1.recordName) in \($0.1.zone): \($0.1.code)" }
        }
        return lines.joined(separator: "\n")
    }
}

/// A one-line progress display on stderr: the step, what the mirror has in flight and what is
/// pending (read with sync.status on a second connection, which never waits for a sync step),
/// and the time so far. Redrawn in place, erased when the step ends.
final class ProgressLine: Sendable {
    private let poller: Task<Void, Never>
    private let step: String

    init(socket: String, step: String) {
        self.step = step
        poller = Task.detached {
            let started = ContinuousClock.now
            var status = ""
            let client = try? WireClient(socketPath: socket, timeout: .seconds(5))
            if let client { _ = try? await client.hello(client: "meowctl-progress") }
            defer { client?.close() }
            var frame = 0
            while !Task.isCancelled {
                if frame % 4 == 0, let client, let reply = try? await client.call("sync.status", [:]),
                   let current = try? StoreReply.read(SyncStatus.self, from: reply, op: "sync.status") {
                    status = "in flight: \(current.inFlight ?? "idle"), \(current.pending) pending"
                }
                let spinner = ["|", "/", "-", "\\"][frame % 4]
                let seconds = ProgressLine.seconds(ContinuousClock.now - started)
                ProgressLine.write("\r\u{1B}[2K\(spinner) \(step): \(status.isEmpty ? "running" : status) (\(seconds) s)")
                frame += 1
                try? await Task.sleep(for: .milliseconds(100))
            }
        }
    }

    /// Stops the display and leaves one final line.
    func finish(elapsed: Duration, outcome: String) async {
        poller.cancel()
        await poller.value
        ProgressLine.write("\r\u{1B}[2K\(step): \(outcome) in \(ProgressLine.seconds(elapsed)) s\n")
    }

    static func seconds(_ duration: Duration) -> String {
        String(format: "%.1f", Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18)
    }

    static func write(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }
}
