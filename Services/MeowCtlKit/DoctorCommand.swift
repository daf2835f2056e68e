import Foundation
import MeowInspection
import MeowWire

/// `meowctl doctor`: checks a device's stores (and the cloud) for the invariants MeowCare's bugs
/// broke, and explains every violation it finds.
enum DoctorCommand {
    static let help = """
    meowctl doctor — check a device's stores (and the cloud) for invariant violations

    Usage:
      meowctl doctor --socket DEVICE_SOCKET [--cloud SYNC_SOCKET --credential C] [--json]

    Checks, each explained when it fails:
      wrongStore          shared-store objects outside any share zone (seed 002: routed into the
                          shared store by load order); the mirror can never export them
      sharedDefaultZone   shared-store objects in the core-data or default zone, which the shared
                          database refuses
      unknownShareZone    shared-store objects in a zone the device has no share for
      crossStore          relationships between objects of different stores, or to objects that
                          are not in the store (what a cross-store link leaves behind)
      orphan              events without a session (seed 000), which no session list shows
      exportStuck         changes pending while the mirror's last step failed
      exportDeferred      changes held back by a server retry-after
      unexportable        objects sync.status reports as never exportable
      unimportable        cloud records the store refused (another client wrote values the
                          model cannot hold); they are missing on this device
      undeployedSchema    records a production cloud refuses because its schema lacks their
                          record type or field, with the command that deploys it
      unsent              objects or many-to-many links neither in the cloud nor queued: they
                          would sit unsent while the device counts 0 pending
      pendingLink         imported objects whose related record has not arrived yet (an event
                          fetched before its session), with how long each has waited
      cloudSharedDefaultZone  (with --cloud) the user's shared database lists another user's
                          core-data or default zone: a share of a zone that must not be shared
      cloudUserMismatch   (with --cloud) the credential is not the device's cloud user

    --credential is the device's cloud user's credential. Exit codes: 0 clean, 1 something was
    found, 2 unreachable, 64 usage. --json prints {"ok", "findings": [...], "checks": [...]}.
    """


    static func run(_ arguments: [String]) async throws(CommandError) {
        let args = try Arguments.parse(arguments, command: "doctor", options: ["socket", "cloud", "credential", "timeout"])
        let socket = try args.deviceSocket(for: "doctor")
        if args.value("cloud") != nil, try args.credential() == nil { throw .usage("meowctl doctor --cloud needs --credential C (the device's cloud user).") }
        let output = args.output
        let device = try await ServiceSession.open(socket: socket, output: output, timeout: try args.timeout(default: 60))
        defer { device.close() }
        var doctor = Doctor(device: device.inspection)
        do throws(InspectionError) { try await doctor.examineDevice() } catch { throw output.fail(op: error.op, error.error) }
        if let (cloud, credential) = try args.cloudTarget(for: "doctor", deviceUser: doctor.deviceUser) {
            let session = try await ServiceSession.open(socket: cloud, credential: credential, output: output, timeout: try args.timeout(default: 60))
            defer { session.close() }
            do throws(InspectionError) { try await doctor.examineCloud(session.inspection) } catch { throw output.fail(op: error.op, error.error) }
        }
        report(doctor, output: output, socket: socket)
        if !doctor.findings.isEmpty { throw .errorReply }
    }

    static func report(_ doctor: Doctor, output: Output, socket: String) {
        if output.json {
            return output.emit(["ok": .bool(doctor.findings.isEmpty), "findings": .array(doctor.findings.map(\.json)),
                                "checks": .array(doctor.checks.map { ["name": .string($0.name), "ok": .bool($0.found == 0), "skipped": .bool($0.skipped),
                                                                       "found": .int($0.found), "detail": .string($0.detail)] })])
        }
        output.say("meowctl doctor: \(socket)")
        for check in doctor.checks {
            output.say("  \(check.skipped ? "–" : check.found == 0 ? "✔" : "✘") \(check.name): \(check.detail)")
        }
        guard !doctor.findings.isEmpty else { return output.say("\nNo problems found.") }
        output.say("\n\(doctor.findings.count) problem\(doctor.findings.count == 1 ? "" : "s") found:")
        for (index, finding) in doctor.findings.enumerated() {
            output.say("\n\(index + 1). [\(finding.kind)] \(finding.summary)")
            output.say("   why: \(finding.explanation)")
            output.say("   fix: \(finding.fix)")
        }
    }
}
