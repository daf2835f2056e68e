#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeowWire
@testable import ServiceRuntime
import TestSupport
import Testing
import class MeowCareCluster.MeowProcess

/// Everything that binds a socket or changes the process's umask runs one test at a time
/// (the umask is per process; binding sets it for an instant).
@Suite("Sockets and lifecycle (in-process)", .serialized)
struct SocketSuites {}

extension SocketSuites {
    @Suite("The listener")
    struct ListenerTests {
        let logger = Logger(label: "listener-test")

        @Test("binds a fresh path: a 0600 socket that accepts, a 0600 lock file naming this pid, the umask left as it was")
        func bindsAFreshPath() throws {
            let directory = TemporaryDirectory(prefix: "srl")
            let path = directory.file("s.sock")
            let maskBefore = umask(0o022)
            umask(maskBefore)
            let listener = try Listener.open(path: path, logger: logger)
            defer { close(listener.fd); listener.lock?.release() }
            let maskAfter = umask(maskBefore)
            umask(maskAfter)
            #expect(maskAfter == maskBefore)
            #expect(listener.boundPath == path)
            #expect(listener.activation == "self-bound")
            #expect(isSocket(path))
            #expect(mode(path) == 0o600)
            #expect(mode(path + ".lock") == 0o600)
            let lockText = try String(contentsOfFile: path + ".lock", encoding: .utf8)
            #expect(lockText == "\(getpid())\n")
            let client = try UnixSocket.connect(path: path)
            close(client)
        }

        @Test("creates the socket's missing directories with mode 0700")
        func createsPrivateDirectories() throws {
            let directory = TemporaryDirectory(prefix: "srl")
            let path = directory.file("a/b/s.sock")
            let listener = try Listener.open(path: path, logger: logger)
            defer { close(listener.fd); listener.lock?.release() }
            #expect(mode(directory.file("a")) == 0o700)
            #expect(mode(directory.file("a/b")) == 0o700)
            #expect(isSocket(path))
        }

        @Test("replaces a stale socket file (nothing answers on it) with a live one")
        func replacesAStaleSocket() throws {
            let directory = TemporaryDirectory(prefix: "srl")
            let path = directory.file("s.sock")
            close(try bindRawSocket(path, listening: false))  // the file stays: a crashed service's leftover
            #expect(isSocket(path))
            #expect(throws: WireError.self) { try UnixSocket.connect(path: path) }
            let listener = try Listener.open(path: path, logger: logger)
            defer { close(listener.fd); listener.lock?.release() }
            let client = try UnixSocket.connect(path: path)
            close(client)
        }

        @Test("refuses a socket something is listening on, and leaves it (and no lock file) behind")
        func refusesALiveSocket() throws {
            let directory = TemporaryDirectory(prefix: "srl")
            let path = directory.file("s.sock")
            let other = try bindRawSocket(path, listening: true)
            defer { close(other) }
            let error = #expect(throws: StartupError.self) { try Listener.open(path: path, logger: logger) }
            #expect(error?.message.contains("Another service is already listening on \(path)") == true)
            #expect(isSocket(path))
            #expect(mode(path + ".lock") == nil)
            let client = try UnixSocket.connect(path: path)  // the other listener still has its socket
            close(client)
        }

        @Test("never replaces a path that is not a socket")
        func refusesANonSocket() throws {
            let directory = TemporaryDirectory(prefix: "srl")
            let path = directory.file("s.sock")
            try "precious".write(toFile: path, atomically: false, encoding: .utf8)
            let error = #expect(throws: StartupError.self) { try Listener.open(path: path, logger: logger) }
            #expect(error?.message.contains("exists and is not a socket") == true)
            #expect(try String(contentsOfFile: path, encoding: .utf8) == "precious")
        }

        @Test("a path too long for sun_path is a start-up error, not a crash")
        func refusesALongPath() throws {
            let directory = TemporaryDirectory(prefix: "srl")
            let path = directory.file(String(repeating: "x", count: 120))
            let error = #expect(throws: StartupError.self) { try Listener.open(path: path, logger: logger) }
            #expect(error?.message.contains("a Unix socket path must be 1 to 107 bytes") == true)
            #expect(mode(path + ".lock") == nil)
        }

        @Test("a lock file another process holds is refused, naming that process's pid")
        func lockHeldByAnotherProcess() async throws {
            let directory = TemporaryDirectory(prefix: "srl")
            let path = directory.file("held.lock")
            // A second process takes the same kind of lock (fcntl F_SETLK) and says so on stdout.
            let holder = try MeowProcess("/usr/bin/env", ["python3", "-c", """
                import fcntl, os, select, sys
                f = open(sys.argv[1], "w")
                fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                print("locked", flush=True)
                # Holds the lock until killed, or until the test runner ends.
                runner = os.pidfd_open(int(os.environ["MEOW_EXIT_WITH_PID"]))
                select.select([runner], [], [])
                """, path])
            defer { holder.kill() }
            #expect(await holder.waitForOutput(containing: "locked"))
            let error = #expect(throws: StartupError.self) {
                try ProcessLock.acquire(path: path) { holderName in "taken by \(holderName)" }
            }
            #expect(error?.message == "taken by pid \(holder.pid)")
        }

        @Test("a released lock removes its file, and the path can be locked again")
        func releaseRemovesTheLockFile() throws {
            let directory = TemporaryDirectory(prefix: "srl")
            let path = directory.file("x.lock")
            let lock = try ProcessLock.acquire(path: path) { $0 }
            #expect(mode(path) == 0o600)
            lock.release()
            #expect(mode(path) == nil)
            let again = try ProcessLock.acquire(path: path) { $0 }
            #expect(mode(path) == 0o600)
            again.release()
        }
    }
}
