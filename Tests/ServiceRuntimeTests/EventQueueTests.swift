#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeowWire
@testable import ServiceRuntime
import TestSupport
import Testing

/// A connection's event queue (bounded in bytes) and the hub that publishes to subscribers.
@Suite("Events: the per-connection queue and the hub")
struct EventQueueTests {
    /// A handle on one end of a socket pair, the test reading the other.
    struct Wired {
        let handle: ConnectionHandle
        let client: TestClient
        init(id: Int = 1, maxEventQueueBytes: Int) throws {
            let (serverEnd, clientEnd) = try socketPair()
            handle = ConnectionHandle(id: id, fd: serverEnd, peer: PeerCredentials(pid: getpid(), uid: getuid(), gid: getgid()),
                                      maxEventQueueBytes: maxEventQueueBytes)
            client = TestClient(fd: clientEnd)
        }
        func push(_ event: String, _ data: String) { handle.push(event: event, dataJSON: Array(data.utf8)) }
        /// Closes the handle's end once its queued events are written.
        func finish() {
            handle.flushEvents()
            handle.markBroken()
            close(handle.fd)
        }
    }

    /// The next frame is `resyncRequired` with this seq and count of dropped events.
    func expectResync(_ client: TestClient, seq: Int, dropped: Int) throws {
        let frame = try #require(client.frame())
        let text = String(decoding: frame, as: UTF8.self)
        #expect(text.hasPrefix(#"{"event":"resyncRequired","seq":\#(seq),"data":{"reason":"#), "\(text)")
        #expect(text.hasSuffix(#","dropped":\#(dropped)}}"#), "\(text)")
        let event = try JSONParser.parse(frame)
        #expect(event["data"]?["dropped"] == .int(dropped))
        #expect(event["data"]?["reason"]?.stringValue?.hasSuffix("Refetch state.") == true)
    }

    @Test("events are written in order, each with the next seq from 1, their data as given")
    func inOrder() throws {
        let wired = try Wired(maxEventQueueBytes: 1 << 20)
        for index in 1...50 { wired.push("tick", #"{"n":\#(index)}"#) }
        for index in 1...50 {
            let event = try wired.client.next()
            #expect(event == ["event": "tick", "seq": .int(index), "data": ["n": .int(index)]])
        }
        wired.finish()
        #expect(wired.client.closesWithoutFrame())
    }

    @Test("an event larger than the queue's bound is replaced by resyncRequired; later events take the next seq")
    func oversizedEvent() throws {
        let wired = try Wired(maxEventQueueBytes: 1024)
        wired.push("big", #"{"blob":"\#(String(repeating: "x", count: 2000))"}"#)
        wired.push("small", #"{"n":1}"#)
        try expectResync(wired.client, seq: 1, dropped: 1)
        let next = try wired.client.next()
        #expect(next == ["event": "small", "seq": 2, "data": ["n": 1]])
        wired.finish()
    }

    @Test("on overflow every event still queued is dropped and counted, and one resyncRequired takes their place")
    func overflowDropsTheQueue() throws {
        let limit = 1_600_000
        let wired = try Wired(maxEventQueueBytes: limit)
        // The first event is larger than the socket's buffers: its writer blocks until the
        // client reads, and the events pushed meanwhile wait in the queue.
        let first = #"{"blob":"\#(String(repeating: "a", count: 1_500_000))"}"#
        wired.push("first", first)
        #expect(UnixSocket.waitReadable(fd: wired.client.fd, timeoutMilliseconds: 10_000))  // it is being written
        let third = #"{"blob":"\#(String(repeating: "c", count: 300_000))"}"#
        wired.push("second", #"{"n":2}"#)
        wired.push("third", third)
        wired.push("fourth", first)  // 0.3 MB queued + 1.5 MB > 1.6 MB: overflow
        wired.push("fifth", #"{"n":5}"#)
        let firstEvent = try wired.client.next()
        #expect(firstEvent["event"] == "first")
        #expect(firstEvent["seq"] == 1)
        #expect(firstEvent["data"]?["blob"]?.stringValue?.count == 1_500_000)
        try expectResync(wired.client, seq: 4, dropped: 3)  // second, third and fourth
        #expect(try wired.client.next() == ["event": "fifth", "seq": 5, "data": ["n": 5]])
        wired.finish()
        #expect(wired.client.closesWithoutFrame())
    }

    @Test("a client that stops reading is disconnected once a write waits past the send timeout")
    func slowReaderIsDisconnected() throws {
        let wired = try Wired(maxEventQueueBytes: 4 << 20)
        var timeout = timeval(tv_sec: 0, tv_usec: 20_000)  // what admit sets from --send-timeout-ms
        #expect(setsockopt(wired.handle.fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size)) == 0)
        wired.push("big", #"{"blob":"\#(String(repeating: "b", count: 2_000_000))"}"#)
        wired.handle.flushEvents()  // returns once the write has given up
        #expect(wired.client.closesWithoutFrame())  // part of the frame, then EOF
        close(wired.handle.fd)
    }

    @Test("the hub publishes to subscribed connections that the filter accepts, encoding the data once, and counts them")
    func hubPublishes() throws {
        let hub = EventHub()
        let a = try Wired(id: 1, maxEventQueueBytes: 1 << 20)
        let b = try Wired(id: 2, maxEventQueueBytes: 1 << 20)
        let c = try Wired(id: 3, maxEventQueueBytes: 1 << 20)
        for wired in [a, b, c] { hub.add(wired.handle) }
        #expect(hub.count == 3)
        #expect(a.handle.subscribe(["things", "service"]) == ["things", "service"])
        _ = b.handle.subscribe(["things"])
        _ = c.handle.subscribe(["other"])
        #expect(hub.publish(topic: "nothing", event: "x", data: ["k": "v"]) == 0)
        let sent = hub.publish(topic: "things", event: "changed", data: ["b": "2", "a": "1"]) { $0.id != 2 }
        #expect(sent == 1)
        // A marker pushed after the publish shows what came before it on each connection.
        for wired in [a, b, c] { wired.push("marker", "{}") }
        #expect(try a.client.next() == ["event": "changed", "seq": 1, "data": ["a": "1", "b": "2"]])
        #expect(try a.client.next()["event"] == "marker")
        #expect(try b.client.next() == ["event": "marker", "seq": 1, "data": [:]])
        #expect(try c.client.next()["event"] == "marker")
        #expect(a.handle.unsubscribe(["things"]) == ["service"])
        #expect(!a.handle.isSubscribed(to: "things"))
        hub.remove(b.handle)
        #expect(hub.all.map(\.id).sorted() == [1, 3])
        for wired in [a, b, c] { wired.finish() }
    }

    @Test("an event frame is the envelope {event, seq, data} with the name escaped")
    func eventFrame() throws {
        let frame = ConnectionHandle.eventFrame("odd \"name\"\n", seq: 9, data: Array(#"{"x":[1]}"#.utf8))
        var decoder = FrameDecoder()
        decoder.append(frame)
        let body = try #require(try decoder.nextFrame())
        #expect(String(decoding: body, as: UTF8.self) == #"{"event":"odd \"name\"\n","seq":9,"data":{"x":[1]}}"#)
        #expect(try JSONParser.parse(body)["event"] == "odd \"name\"\n")
    }
}
