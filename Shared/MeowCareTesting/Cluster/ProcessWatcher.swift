#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CShim
import Foundation

/// The one thread of this process that watches every `MeowProcess`: blocked in poll on each
/// process's stderr and stdout pipes and its pidfd, it reads whatever output is ready first
/// and reaps an exit the moment it happens. A thread per process cost a cluster's start one
/// thread start and end per service; this thread is started with the first process and stays.
final class ProcessWatcher: @unchecked Sendable {
    // @unchecked: `added` is guarded by `lock`; `watching` belongs to the watcher's thread.
    static let shared = ProcessWatcher()

    /// One process's descriptors (stderr, stdout, pidfd; -1 once ended or absent) and its
    /// unfinished last stderr line.
    private final class Watch {
        let process: MeowProcess
        let log: LogFile
        var descriptors: [Int32]
        var pending: [UInt8] = []

        init(process: MeowProcess, error: Int32, output: Int32, exit: Int32, log: LogFile) {
            self.process = process
            self.log = log
            descriptors = [error, output, exit]
        }

        var isDone: Bool { !descriptors.contains { $0 >= 0 } }
    }

    private let lock = NSLock()
    private var added: [Watch] = []
    /// Written to when a process is added, so a poll that started without it returns.
    private let wakeRead: Int32, wakeWrite: Int32

    private init() {
        var fds: [Int32] = [-1, -1]
        // Without a wake pipe a process added while the thread polls would wait for another's
        // output; a failed pipe2 (out of descriptors) leaves the thread polling with a timeout.
        if meow_pipe_cloexec(&fds) != 0 { fds = [-1, -1] }
        (wakeRead, wakeWrite) = (fds[0], fds[1])
        let thread = Thread { [self] in run() }
        thread.name = "meowcare-processes"
        thread.start()
    }

    /// Watches `process` until both pipes have ended and (with a pidfd) its exit is reaped.
    func watch(_ process: MeowProcess, error: Int32, output: Int32, exit: Int32, log: LogFile) {
        let watch = Watch(process: process, error: error, output: output, exit: exit, log: log)
        lock.lock()
        added.append(watch)
        lock.unlock()
        var byte: UInt8 = 1
        if wakeWrite >= 0 { _ = write(wakeWrite, &byte, 1) }
    }

    private func run() {
        var watching: [Watch] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            lock.lock()
            watching += added
            added.removeAll()
            lock.unlock()
            var entries = [pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
            for watch in watching {
                entries += watch.descriptors.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            }
            // poll skips negative descriptors. EINTR and ENOMEM pass; the others (EFAULT,
            // EINVAL) cannot happen with these entries.
            let ready = poll(&entries, nfds_t(entries.count), wakeRead >= 0 ? -1 : 10)
            if ready <= 0 { continue }
            if entries[0].revents != 0 {
                var drain = [UInt8](repeating: 0, count: 64)
                _ = read(wakeRead, &drain, drain.count)
            }
            for (index, watch) in watching.enumerated() {
                let base = 1 + index * 3
                serve(watch, revents: [entries[base].revents, entries[base + 1].revents, entries[base + 2].revents], buffer: &buffer)
            }
            watching.removeAll { $0.isDone }
        }
    }

    /// Output ready in the same wake-up is read before the exit is reaped, so lines written
    /// before the exit are there when the exit is seen.
    private func serve(_ watch: Watch, revents: [Int16], buffer: inout [UInt8]) {
        for index in 0..<2 where watch.descriptors[index] >= 0 && revents[index] != 0 {
            let descriptor = watch.descriptors[index]
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count > 0 {
                watch.log.append(buffer[0..<count])
                if index == 0 {
                    watch.process.received(lines: buffer[0..<count], pending: &watch.pending)
                } else {
                    watch.process.received(output: buffer[0..<count])
                }
                continue
            }
            close(descriptor)
            watch.descriptors[index] = -1
            watch.process.ended(pipe: index == 0 ? watch.pending : [], log: watch.log)
        }
        if watch.descriptors[2] >= 0 && revents[2] != 0 {
            var status: Int32 = 0
            while waitpid(watch.process.pid, &status, 0) < 0 && errno == EINTR {}
            close(watch.descriptors[2])
            watch.descriptors[2] = -1
            watch.process.exited(status)
        }
    }
}
