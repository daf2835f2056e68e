#if canImport(Glibc)
import Glibc
#endif
import CShim
import Foundation
import MeowWire
import Synchronization

/// `meowctl tap`: a transparent proxy that logs every frame. Bytes are forwarded as they arrive,
/// before and independently of parsing, so what the service receives is exactly what the client
/// sent — malformed frames included. Parsing is only for the log.
enum TapCommand {
    static func run(_ arguments: [String]) throws(CommandError) {
        let args = try Arguments(arguments, flags: ["show-credentials"])
        try args.check(known: ["listen", "to", "log", "show-credentials"], command: "tap")
        let listenPath = try args.required("listen", for: "tap")
        let upstreamPath = try args.required("to", for: "tap")
        let sink: TapLog
        let redacting = !args.has("show-credentials")
        if let path = args.value("log") {
            // 0600 even with --show-credentials off: frames carry users' data.
            let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
            if fd >= 0 { _ = fchmod(fd, 0o600) }
            guard fd >= 0, let file = fdopen(fd, "a") else {
                let reason = String(cString: strerror(errno))
                if fd >= 0 { close(fd) }
                throw .usage("Cannot open --log \(path): \(reason).")
            }
            sink = TapLog(file: file, redacting: redacting)
        } else {
            sink = TapLog(file: fdopen(1, "a"), redacting: redacting)
        }
        signal(SIGPIPE, SIG_IGN)
        let listener = try bind(listenPath)
        sink.write(["event": "listening", "listen": .string(listenPath), "to": .string(upstreamPath)])
        MeowCtl.printError("meowctl: tap ready on \(listenPath) → \(upstreamPath)")
        var connectionID = 0
        while true {
            let client = meow_accept_cloexec(listener)
            if client < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                throw .unavailable("accept on \(listenPath): \(String(cString: strerror(errno)))")
            }
            connectionID += 1
            let id = connectionID
            let upstream: Int32
            do {
                upstream = try UnixSocket.connect(path: upstreamPath)
            } catch {
                sink.write(["event": "upstreamUnavailable", "conn": .int(id), "error": .string(error.message)])
                close(client)
                continue
            }
            sink.write(["event": "open", "conn": .int(id)])
            let pair = TapPair(id: id, client: client, upstream: upstream, log: sink)
            pair.start()
        }
    }

    private static func bind(_ path: String) throws(CommandError) -> Int32 {
        var info = stat()
        if lstat(path, &info) == 0 {
            guard info.st_mode & S_IFMT == S_IFSOCK else { throw .usage("\(path) exists and is not a socket.") }
            if let fd = try? UnixSocket.connect(path: path) {
                close(fd)
                throw .usage("Something is already listening on \(path).")
            }
            unlink(path)
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address: sockaddr_un
        do { address = try UnixSocket.makeAddress(path: path) } catch { throw .usage(error.message) }
        let previous = umask(0o177)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        umask(previous)
        guard result == 0, listen(fd, 128) == 0 else {
            throw .unavailable("Cannot listen on \(path): \(String(cString: strerror(errno))).")
        }
        return fd
    }
}

/// One proxied connection: a thread per direction.
final class TapPair: Sendable {
    let id: Int
    let client: Int32
    let upstream: Int32
    let log: TapLog
    private let remaining = Mutex(2)

    init(id: Int, client: Int32, upstream: Int32, log: TapLog) {
        self.id = id
        self.client = client
        self.upstream = upstream
        self.log = log
    }

    func start() {
        for (from, to, direction) in [(client, upstream, "c2s"), (upstream, client, "s2c")] {
            let thread = Thread { [self] in
                pump(from: from, to: to, direction: direction)
                let last = remaining.withLock { count -> Bool in count -= 1; return count == 0 }
                if last {
                    close(client)
                    close(upstream)
                    log.write(["event": "close", "conn": .int(id)])
                }
            }
            thread.start()
        }
    }

    private func pump(from source: Int32, to destination: Int32, direction: String) {
        var parser = FrameDecoder(maxFrameBytes: Int(UInt32.max))
        var parsing = true
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { UnixSocket.read(fd: source, into: $0) }
            if n <= 0 { break }
            // Log, then forward: the bytes are passed on unchanged, and a frame's log line exists
            // before its last byte reaches the other side (so a reader of the log never races it).
            if parsing {
                parser.append(buffer[0..<n])
                do {
                    while let body = try parser.nextFrame() { logFrame(body, direction: direction) }
                } catch {
                    parsing = false
                    log.write(["event": "malformed", "conn": .int(id), "dir": .string(direction),
                               "error": .string(error.wireError.code.rawValue), "message": .string(error.wireError.message),
                               "bytes": log.rawBytes(buffer[0..<min(n, 64)])])
                }
            }
            let written = buffer.withUnsafeBytes { UnixSocket.writeAll(fd: destination, UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
            if written != .written { break }
        }
        if parsing, parser.bufferedByteCount > 0 {
            log.write(["event": "partialFrame", "conn": .int(id), "dir": .string(direction),
                       "announcedLength": parser.announcedLength.map { .int($0) } ?? .null,
                       "bufferedBytes": .int(parser.bufferedByteCount)])
        }
        log.write(["event": "eof", "conn": .int(id), "dir": .string(direction)])
        shutdown(destination, Int32(SHUT_WR))
    }

    private func logFrame(_ body: [UInt8], direction: String) {
        var entry: [String: JSONValue] = ["event": "frame", "conn": .int(id), "dir": .string(direction), "length": .int(body.count)]
        if let value = try? JSONParser.parse(body) {
            entry["frame"] = log.redacting ? CredentialRedaction.redacted(value) : value
        } else {
            entry["invalid"] = .string(String(validating: body, as: UTF8.self) == nil ? "invalidUTF8" : "invalidJSON")
            entry["raw"] = log.rawBytes(body[...])
        }
        log.write(entry)
    }
}

/// JSON lines with a timestamp, one write per line.
final class TapLog: @unchecked Sendable {
    // @unchecked: the FILE* is only used under `lock`.
    private let file: UnsafeMutablePointer<FILE>
    private let lock = Mutex(())
    /// Credentials in logged frames are replaced (`CredentialRedaction`) unless --show-credentials.
    let redacting: Bool
    init(file: UnsafeMutablePointer<FILE>, redacting: Bool) {
        self.file = file
        self.redacting = redacting
    }

    /// Bytes that are not a JSON frame, base64: redaction cannot tell where a credential sits
    /// in them, so unless --show-credentials they are left out (the entry keeps their kind and length).
    func rawBytes(_ bytes: ArraySlice<UInt8>) -> JSONValue {
        redacting ? CredentialRedaction.placeholder : .string(Data(bytes).base64EncodedString())
    }

    func write(_ fields: [String: JSONValue]) {
        var entry = fields
        entry["ts"] = .string(Date().formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true)))
        let line = MeowCtl.compactJSON(entry) + "\n"
        lock.withLock { _ in
            fputs(line, file)
            fflush(file)
        }
    }
}
