"""The wire protocol: 4-byte big-endian length + one UTF-8 JSON object, over a Unix socket.

The same framing as docs/PROTOCOL.md section 9 (the example the suite runs), made a connection
object: ``hello`` first, one request at a time per connection (a lock, so threads may share it),
events that arrive between replies queued for whoever reads events, and a trace of recent frames
that a failing test can print.
"""
from __future__ import annotations

import collections
import itertools
import json
import re
import socket
import struct
import threading
import time
from typing import Any, Callable, Deque, Dict, List, Optional, Tuple

from .errors import ConnectionClosed, MeowError, NetworkUnavailable, ProtocolError, TimedOut, error_from_reply

PROTOCOL_VERSION = 1
#: What a reply may be at most (the services' default frame limit, 16 MiB).
MAX_FRAME_BYTES = 16 * 1024 * 1024


def encode(message: Dict[str, Any]) -> bytes:
    """One frame: the length prefix, then the compact JSON body."""
    body = json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return struct.pack(">I", len(body)) + body


class FrameTrace:
    """The last frames of every connection of a cluster, for a failing test's report.

    Frames are kept as text (cut to ``max_chars``) in one bounded deque shared by the cluster's
    connections, so the trace costs a fixed amount however long a test runs.
    """

    def __init__(self, max_frames: int = 400, max_chars: int = 600):
        self._frames: Deque[Tuple[float, str, str, str]] = collections.deque(maxlen=max_frames)
        self._lock = threading.Lock()
        self.max_chars = max_chars

    _CREDENTIAL = re.compile(r'("credential"\s*:\s*)"(?:[^"\\]|\\.)*"')

    def record(self, label: str, direction: str, body: str) -> None:
        # Credentials never reach a test report (an external deployment's are real), as meowctl tap redacts them.
        body = self._CREDENTIAL.sub(r'\1"<redacted>"', body)
        if len(body) > self.max_chars:
            body = body[: self.max_chars] + f"… ({len(body)} chars)"
        with self._lock:
            self._frames.append((time.time(), label, direction, body))

    def report_text(self) -> str:
        """The frames as ``meowctl report`` reads a frame trace: a ``# started EPOCH`` line, then
        ``SECONDS CONNECTION DIRECTION JSON`` per frame, seconds since that start."""
        with self._lock:
            frames = list(self._frames)
        start = frames[0][0] if frames else time.time()
        # A lane is one word: "device A" is device A's lane, "cloud olivia" becomes "cloud:olivia" (as the Swift trace names it).
        def lane(label: str) -> str:
            return label[len("device "):].replace(" ", ":") if label.startswith("device ") else label.replace(" ", ":")
        return "\n".join([f"# started {start:.6f}"] + [f"{t - start:.6f} {lane(label)} {direction} {body}" for t, label, direction, body in frames])

    def lines(self) -> List[str]:
        with self._lock:
            frames = list(self._frames)
        return [f"{time.strftime('%H:%M:%S', time.localtime(t))}.{int(t % 1 * 1000):03d} {label} {direction} {body}"
                for t, label, direction, body in frames]


class Connection:
    """One connection to a service, after ``hello``.

    ``call`` sends a request and returns its ``result`` or raises the typed error of the reply.
    Requests on one connection are answered in order, so one lock around send-and-receive is all
    the concurrency control needed; a caller that wants two requests in flight opens two
    connections (as the services' docs advise for a save during a long sync).
    """

    _ids = itertools.count(1)

    def __init__(self, path: str, *, client: str = "meowcare-testing", credential: Optional[str] = None,
                 timeout: float = 60.0, trace: Optional[FrameTrace] = None, label: Optional[str] = None,
                 guard: Optional[Callable[[], None]] = None):
        self.path = path
        self.timeout = timeout
        self.label = label or path
        self._trace = trace
        self._guard = guard
        self._lock = threading.Lock()
        self._buffer = b""
        self._events: Deque[Dict[str, Any]] = collections.deque()
        self._closed = False
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._sock.settimeout(timeout)
            self._sock.connect(path)
        except OSError as error:
            self._sock.close()
            raise NetworkUnavailable("networkUnavailable", f"Could not connect to {path}: {error.strerror or error}",
                                     {"errno": error.errno, "path": path}) from None
        params: Dict[str, Any] = {"minVersion": PROTOCOL_VERSION, "maxVersion": PROTOCOL_VERSION, "client": client}
        if credential is not None:
            params["credential"] = credential
        try:
            self.hello: Dict[str, Any] = self.call("hello", params)
        except BaseException:
            self.close()
            raise

    # -- requests --------------------------------------------------------------------------

    def call(self, op: str, params: Optional[Dict[str, Any]] = None, *, timeout: Optional[float] = None) -> Dict[str, Any]:
        """Sends ``op`` and waits for its reply: the result, or the reply's error raised typed."""
        if self._guard is not None:
            self._guard()
        reply = self.request(op, params, timeout=timeout)
        if reply.get("ok"):
            result = reply.get("result")
            return result if isinstance(result, dict) else {"value": result}
        raise error_from_reply(reply.get("error") or {}, op=op)

    def request(self, op: str, params: Optional[Dict[str, Any]] = None, *, timeout: Optional[float] = None) -> Dict[str, Any]:
        """Sends ``op`` and returns the whole reply envelope (``ok``, ``result`` or ``error``)."""
        with self._lock:
            if self._closed:
                raise ConnectionClosed("connectionClosed", f"The connection to {self.path} is closed.", {"path": self.path, "op": op})
            request_id = next(self._ids)
            self._send({"id": request_id, "op": op, "params": params or {}})
            deadline = time.monotonic() + (timeout if timeout is not None else self.timeout)
            while True:
                message = self._receive(deadline, op)
                if "event" in message:
                    self._events.append(message)
                    continue
                if message.get("id") == request_id:
                    return message
                if message.get("id") is None and message.get("ok") is False:
                    # A fatal error of the connection layer (id null): the service closes next.
                    self._close_locked()
                    raise error_from_reply(message.get("error") or {}, op=op)
                # A reply to nobody (cannot happen with one request at a time): ignore it.

    def next_event(self, timeout: Optional[float]) -> Optional[Dict[str, Any]]:
        """The next event (queued or read), or None after ``timeout`` seconds (None: wait forever)."""
        with self._lock:
            if self._events:
                return self._events.popleft()
            if self._closed:
                raise ConnectionClosed("connectionClosed", f"The connection to {self.path} is closed.", {"path": self.path})
            deadline = None if timeout is None else time.monotonic() + timeout
            while True:
                try:
                    message = self._receive(deadline, "events")
                except TimedOut:
                    return None
                if "event" in message:
                    return message

    # -- framing ---------------------------------------------------------------------------

    def _send(self, message: Dict[str, Any]) -> None:
        frame = encode(message)
        if self._trace is not None:
            self._trace.record(self.label, "→", frame[4:].decode("utf-8", "replace"))
        try:
            self._sock.sendall(frame)
        except OSError as error:
            self._close_locked()
            raise ConnectionClosed("connectionClosed", f"Sending to {self.path} failed: {error}",
                                   {"path": self.path, "op": message.get("op")}) from None

    def _receive(self, deadline: Optional[float], op: str) -> Dict[str, Any]:
        # Nothing is consumed until the whole frame is buffered: a wait for an event that times
        # out part-way leaves the partial frame for the next read.
        self._fill(4, deadline, op)
        (length,) = struct.unpack(">I", self._buffer[:4])
        if length == 0 or length > MAX_FRAME_BYTES:
            self._close_locked()
            raise ProtocolError("frameTooLarge" if length else "emptyFrame",
                                f"The service at {self.path} sent a frame of {length} bytes.", {"length": length})
        self._fill(4 + length, deadline, op)
        body, self._buffer = self._buffer[4:4 + length], self._buffer[4 + length:]
        text = body.decode("utf-8")
        if self._trace is not None:
            self._trace.record(self.label, "←", text)
        message = json.loads(text)
        if not isinstance(message, dict):
            raise ProtocolError("notAnObject", f"The service at {self.path} sent JSON that is not an object.", {})
        return message

    def _fill(self, count: int, deadline: Optional[float], op: str) -> None:
        """Reads until ``count`` bytes are buffered; a deadline already past still takes what is there."""
        while len(self._buffer) < count:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            self._sock.settimeout(remaining)
            try:
                chunk = self._sock.recv(max(65536, count - len(self._buffer)))
            except (socket.timeout, BlockingIOError):
                raise TimedOut("timedOut", f"No reply to {op} from {self.path} in time.", {"op": op, "path": self.path}) from None
            except OSError as error:
                self._close_locked()
                raise ConnectionClosed("connectionClosed", f"The connection to {self.path} failed during {op}: {error}",
                                       {"path": self.path, "op": op}) from None
            if not chunk:
                self._close_locked()
                raise ConnectionClosed("connectionClosed", f"{self.path} closed the connection during {op} "
                                       "(did the service stop or crash? see its log).", {"path": self.path, "op": op})
            self._buffer += chunk

    # -- life ------------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._closed

    def _close_locked(self) -> None:
        if not self._closed:
            self._closed = True
            try:
                self._sock.close()
            except OSError:
                pass

    def close(self) -> None:
        """Closes the socket. Safe to call twice and from another thread (a blocked read ends)."""
        if not self._closed:
            self._closed = True
            try:
                self._sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            try:
                self._sock.close()
            except OSError:
                pass

    def __enter__(self) -> "Connection":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def probe_health(path: str, timeout: float = 2.0) -> Optional[Dict[str, Any]]:
    """``health`` on a fresh connection, or None when nothing answers yet (readiness polling)."""
    try:
        with Connection(path, client="meowcare-testing readiness", timeout=timeout) as connection:
            return connection.call("health")
    except (MeowError, OSError, ValueError):
        return None
