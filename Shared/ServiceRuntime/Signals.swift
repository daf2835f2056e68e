#if canImport(Glibc)
import Glibc
#endif
import CShim
import Foundation

/// SIGTERM/SIGINT start a graceful shutdown; SIGPIPE is ignored (writes use MSG_NOSIGNAL too).
/// A sigaction handler writes the signal to a pipe (the self-pipe trick) and a thread of ours
/// reads it: installation is synchronous, so a signal sent the moment the service says "ready"
/// is never missed — unlike a Dispatch signal source, which registers asynchronously.
public enum ShutdownSignals {
    public static func install(_ onSignal: @escaping @Sendable (Int32) -> Void) {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else {
            signal(SIGPIPE, SIG_IGN)
            return
        }
        _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
        let readEnd = fds[0]
        let thread = Thread {
            var byte: UInt8 = 0
            while true {
                let n = read(readEnd, &byte, 1)
                if n == 1 { onSignal(Int32(byte)); continue }
                if n < 0 && errno == EINTR { continue }
                return
            }
        }
        thread.name = "shutdown-signals"
        thread.start()
        _ = meow_install_shutdown_signals(fds[1])
    }
}
