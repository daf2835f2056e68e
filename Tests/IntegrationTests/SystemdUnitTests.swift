#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeowWire
import Testing
import TestSupport
import class MeowCareCluster.MeowProcess
import struct MeowCareCluster.ExecutableLocator

/// The units in deploy/systemd as an administrator installs them. No systemd runs here (no
/// PID 1), so what can be checked without one is: `systemd-analyze verify` and `security
/// --offline`, and each unit's ExecStart run as its unprivileged user under
/// `systemd-socket-activate`, with the socket unit's owner, group and mode, the directories
/// systemd would make, and the configuration examples as installed.
@Suite("deploy/systemd units", .serialized)
struct SystemdUnitTests {
    static let unitDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("deploy/systemd").path
    static let analyze = "/usr/bin/systemd-analyze"
    static let units = ["meowcare-sync.socket", "meowcare-sync.service", "meowcare-store@.socket", "meowcare-store@.service"]

    static func text(_ name: String) throws -> String {
        try String(contentsOfFile: "\(unitDirectory)/\(name)", encoding: .utf8)
    }

    /// The values of `key` in a unit file (a key may repeat).
    static func values(_ key: String, in unit: String) -> [String] {
        unit.split(separator: "\n").compactMap { line in
            let parts = line.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces) == key else { return nil }
            return parts[1].trimmingCharacters(in: .whitespaces)
        }
    }

    /// The units copied to `directory` as instance device-a, their binaries the ones built here.
    static func installedCopies(in directory: TemporaryDirectory) throws -> [String] {
        try units.map { name in
            let instance = name.replacingOccurrences(of: "@.", with: "@device-a.")
            let text = try Self.text(name).replacingOccurrences(of: "/usr/local/bin", with: try ExecutableLocator.locate().directory)
            try text.write(toFile: directory.file(instance), atomically: true, encoding: .utf8)
            return directory.file(instance)
        }
    }

    @Test("systemd-analyze verify finds nothing to say about any unit", .enabled(if: FileManager.default.fileExists(atPath: analyze)))
    func unitsVerify() async throws {
        let directory = TemporaryDirectory()
        let result = try await MeowProcess.run(Self.analyze, ["verify", "--man=no"] + (try Self.installedCopies(in: directory)))
        #expect(result.status == 0)
        #expect(result.stdout.isEmpty && result.stderr.isEmpty, "\(result.stdout)\(result.stderr)")
    }

    @Test("systemd-analyze security --offline rates each service 3.0 or lower", .enabled(if: FileManager.default.fileExists(atPath: analyze)))
    func servicesAreHardened() async throws {
        let directory = TemporaryDirectory()
        let copies = try Self.installedCopies(in: directory).filter { $0.hasSuffix(".service") }
        #expect(copies.count == 2)
        for unit in copies {
            let result = try await MeowProcess.run(Self.analyze, ["security", "--offline=yes", "--no-pager", unit])
            let overall = try #require(result.stdout.split(separator: "\n").first { $0.contains("Overall exposure level") }, "\(result.stdout)\(result.stderr)")
            let level = try #require(overall.split(separator: ":").last?.split(separator: " ").first.flatMap { Double($0) }, "\(overall)")
            #expect(level <= 3.0, "\(unit): \(overall)")
        }
    }

    /// The numeric ids the test gives the units' names (no entries in /etc/passwd are made).
    static let ids: [String: UInt32] = ["meowcare-sync": 64_101, "meowcare-store": 64_102, "meowcare": 64_100]

    /// The first value of `key` in a unit, which must have one.
    static func value(_ key: String, in unit: String) throws -> String {
        guard let value = values(key, in: unit).first else { throw TestFailure("the unit has no \(key)=") }
        return value
    }

    /// The numeric id given to the user or group the unit names in `key`.
    static func id(_ key: String, in unit: String) throws -> UInt32 {
        let name = try value(key, in: unit)
        guard let id = ids[name] else { throw TestFailure("\(key)=\(name) is not a name this test knows") }
        return id
    }

    /// One service started as its unit would start it: `systemd-socket-activate` binds the
    /// socket unit's path, the socket gets its unit's owner, group and mode (as systemd sets
    /// them before the service runs), and the unit's ExecStart runs as its User and Group.
    static func start(service: String, socket: String, instance: String, root: String) async throws -> MeowProcess {
        let socketUnit = try text(socket), serviceUnit = try text(service)
        func local(_ value: String) -> String {
            value.replacingOccurrences(of: "%i", with: instance).replacingOccurrences(of: "/run/meowcare", with: "\(root)/run")
                .replacingOccurrences(of: "/etc/meowcare", with: "\(root)/etc").replacingOccurrences(of: "/usr/local/bin", with: "\(root)/bin")
        }
        let path = local(try value("ListenStream", in: socketUnit))
        let execStart = local(try value("ExecStart", in: serviceUnit)).split(separator: " ").map(String.init)
        let user = try id("User", in: serviceUnit), group = try id("Group", in: serviceUnit)
        // The unit's UMask= applies to the process, as systemd applies it.
        let umask = try value("UMask", in: serviceUnit)
        let process = try MeowProcess("/usr/bin/systemd-socket-activate", ["-l", path, "/usr/bin/setpriv",
            "--reuid=\(user)", "--regid=\(group)", "--clear-groups", "--", "/bin/sh", "-c", "umask \(umask) && exec \"$@\"", "sh"] + execStart)
        #expect(await process.waitForLine(containing: "Listening on") != nil)
        let socketUser = try id("SocketUser", in: socketUnit), socketGroup = try id("SocketGroup", in: socketUnit)
        let mode = try #require(mode_t(try value("SocketMode", in: socketUnit), radix: 8))
        #expect(chown(path, socketUser, socketGroup) == 0 && chmod(path, mode) == 0)
        return process
    }

    /// The configuration examples as installed, with this test's directories and numeric group.
    static func install(_ example: String, as name: String, root: String, owner: UInt32) throws {
        let text = try String(contentsOfFile: "\(unitDirectory)/\(example)", encoding: .utf8)
            .replacingOccurrences(of: "/run/meowcare", with: "\(root)/run").replacingOccurrences(of: "/etc/meowcare", with: "\(root)/etc")
            .replacingOccurrences(of: "/var/lib/meowcare", with: "\(root)/state").replacingOccurrences(of: "/var/log/meowcare", with: "\(root)/log")
            .replacingOccurrences(of: "allow-group = meowcare", with: "allow-group = \(ids["meowcare"]!)")
        try write(text, to: "\(root)/etc/\(name)", owner: owner)
    }

    static func write(_ text: String, to path: String, owner: UInt32) throws {
        try text.write(toFile: path, atomically: false, encoding: .utf8)
        #expect(chown(path, owner, ids["meowcare"]!) == 0 && chmod(path, 0o600) == 0)
    }

    /// A directory as systemd's StateDirectory=/LogsDirectory= makes it: owned by the unit's user, 0700.
    static func directory(_ path: String, owner: UInt32, mode: mode_t = 0o700) {
        mkdir(path, mode)
        chown(path, owner, ids["meowcare"]!)
        chmod(path, mode)
    }

    @Test("Each ExecStart runs as its unprivileged user on its socket unit's socket; the device reaches the cloud through the group; others are refused",
          .enabled(if: getuid() == 0 && FileManager.default.fileExists(atPath: "/usr/bin/systemd-socket-activate")))
    func unitsRunUnprivileged() async throws {
        let temporary = TemporaryDirectory(prefix: "sd")
        let root = temporary.path
        chmod(root, 0o755)
        let (syncUser, storeUser, group) = (Self.ids["meowcare-sync"]!, Self.ids["meowcare-store"]!, Self.ids["meowcare"]!)
        Self.directory("\(root)/run", owner: 0, mode: 0o755)        // the socket units' DirectoryMode=0755
        // The binaries as installed (/usr/local/bin, 0755): the build directory may be one the
        // services' users cannot reach (a checkout in a 0700 directory).
        Self.directory("\(root)/bin", owner: 0, mode: 0o755)
        for binary in ["store-service", "sync-service"] {
            try Executables.install(from: try ExecutableLocator.locate().path(binary), to: "\(root)/bin/\(binary)")
        }
        Self.directory("\(root)/etc", owner: 0, mode: 0o750)
        Self.directory("\(root)/state", owner: 0, mode: 0o755)
        Self.directory("\(root)/state/sync", owner: syncUser)
        Self.directory("\(root)/state/device-a", owner: storeUser)
        Self.directory("\(root)/log", owner: 0, mode: 0o755)
        Self.directory("\(root)/log/sync", owner: syncUser)
        try Self.install("sync-service.conf.example", as: "sync-service.conf", root: root, owner: syncUser)
        try Self.install("store-device-a.conf.example", as: "store-device-a.conf", root: root, owner: storeUser)
        try Self.write(#"{"users":[{"user":"olivia","credential":"olivia-device-credential"}]}"#, to: "\(root)/etc/users.json", owner: syncUser)
        try Self.write("admin-credential-for-the-unit-test\n", to: "\(root)/etc/admin.credential", owner: syncUser)
        try Self.write("olivia-device-credential\n", to: "\(root)/etc/device-a.credential", owner: storeUser)

        let cloud = try await Self.start(service: "meowcare-sync.service", socket: "meowcare-sync.socket", instance: "", root: root)
        let device = try await Self.start(service: "meowcare-store@.service", socket: "meowcare-store@.socket", instance: "device-a", root: root)
        defer { cloud.kill(); device.kill() }

        // Root's health check (allow-uid = 0), as the install instructions run it.
        let health = try await MeowProcess.run("meowctl", ["call", "--socket", "\(root)/run/store-device-a.sock", "health"])
        #expect(health.status == 0, "\(health.stderr)")
        // The device (user meowcare-store, group meowcare) reaches the cloud's 0660 socket and
        // the cloud accepts it by its group: a sync runs, as olivia.
        let client = try WireClient(socketPath: "\(root)/run/store-device-a.sock")
        defer { client.close() }
        try await client.hello(client: "systemd-unit-test")
        _ = try await client.call("sync.now", [:] as JSONValue)
        #expect(try await client.call("sync.status", [:] as JSONValue)["user"] == "olivia")
        let requests = try String(contentsOfFile: "\(root)/log/sync/requests.jsonl", encoding: .utf8)
        #expect(requests.contains(#""client":"store-service mirror (device-a)""#) && requests.contains(#""user":"olivia""#))
        // The state the services wrote is theirs alone.
        var info = stat()
        #expect(stat("\(root)/state/sync/cloud.sqlite", &info) == 0 && info.st_uid == syncUser && info.st_mode & 0o077 == 0)
        #expect(stat("\(root)/log/sync/requests.jsonl", &info) == 0 && info.st_uid == syncUser && info.st_mode & 0o077 == 0)

        // A person in group meowcare (a supplementary group) may use meowctl; anyone else is
        // kept out by the socket's mode before the service sees them.
        let member = try await MeowProcess.run("/usr/bin/setpriv", ["--reuid=64110", "--regid=64110", "--groups=\(group)", "--",
                                                              try ExecutableLocator.locate().path("meowctl"), "call", "--socket", "\(root)/run/store-device-a.sock", "health"])
        #expect(member.status == 0, "\(member.stderr)")
        let outsider = try await MeowProcess.run("/usr/bin/setpriv", ["--reuid=64111", "--regid=64111", "--clear-groups", "--",
                                                                try ExecutableLocator.locate().path("meowctl"), "call", "--socket", "\(root)/run/store-device-a.sock", "health"])
        #expect(outsider.status != 0)
        #expect(outsider.stderr.lowercased().contains("permission denied"), "\(outsider.stderr)")
    }
}
