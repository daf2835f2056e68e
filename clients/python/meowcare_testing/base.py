"""What every client of a cluster shares: its lazily opened connection and the cluster's lifetime."""
from __future__ import annotations

import concurrent.futures
import datetime as _dt
import threading
from typing import Any, Dict, List, Optional, Union

from .errors import ClusterStopped
from .wire import Connection, FrameTrace


class Lifetime:
    """Whether the cluster a client belongs to still runs; a stopped one fails every call clearly."""

    def __init__(self, description: str):
        self.description = description
        self.stopped = False

    def check(self, who: str) -> None:
        if self.stopped:
            raise ClusterStopped("clusterStopped",
                                 f"{who} belongs to the cluster {self.description}, which has stopped (its 'with' block "
                                 "or its pytest fixture ended); start a new Cluster to talk to services again.",
                                 {"cluster": self.description, "client": who})


def camel(name: str) -> str:
    """``retry_after_seconds`` → ``retryAfterSeconds`` (keyword arguments → the protocol's names)."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def camel_keys(values: Dict[str, Any]) -> Dict[str, Any]:
    """Keyword arguments as protocol params: snake_case keys become camelCase, None is left out."""
    return {camel(key): value for key, value in values.items() if value is not None}


def seconds_since_1970(value: Union[None, int, float, _dt.datetime]) -> Optional[float]:
    """A clock value as the services take it: seconds since 1970 (a naive datetime is taken as UTC)."""
    if value is None or isinstance(value, (int, float)):
        return value
    if value.tzinfo is None:
        value = value.replace(tzinfo=_dt.timezone.utc)
    return value.timestamp()


def service_log_lines(process: Any, log_path: Optional[str]) -> List[str]:
    """A service's log so far: its process's captured lines, else its log file (external mode)."""
    if process is not None:
        return list(process.lines)
    if log_path:
        try:
            with open(log_path, encoding="utf-8", errors="replace") as handle:
                return handle.read().splitlines()
        except OSError:
            return []
    return []


class ServiceClient:
    """A client of one service of a cluster: ``call`` on a connection opened at first use.

    Calls on one client are made one at a time (the service answers a connection's requests in
    order); :meth:`call_in_background` runs a request on a connection of its own, which is how
    a test has two requests in flight (a save during a held sync, say).
    """

    def __init__(self, label: str, socket_path: str, *, lifetime: Lifetime, trace: Optional[FrameTrace],
                 timeout: float, credential: Optional[str] = None, client_name: str = "meowcare-testing"):
        self.label = label
        self.socket = socket_path
        self._lifetime = lifetime
        self._trace = trace
        self._timeout = timeout
        self._credential = credential
        self._client_name = client_name
        self._connection: Optional[Connection] = None
        self._connect_lock = threading.Lock()

    def _guard(self) -> None:
        self._lifetime.check(self.label)

    def open_connection(self, client: Optional[str] = None) -> Connection:
        """A new connection of this client's identity (hello done); the caller closes it."""
        self._guard()
        return Connection(self.socket, client=client or self._client_name, credential=self._credential,
                          timeout=self._timeout, trace=self._trace, label=self.label, guard=self._guard)

    @property
    def connection(self) -> Connection:
        self._guard()
        with self._connect_lock:
            if self._connection is None or self._connection.closed:
                self._connection = self.open_connection()
            return self._connection

    @property
    def hello_result(self) -> Dict[str, Any]:
        """What the service answered to this client's ``hello`` (service, version, user, limits…)."""
        return self.connection.hello

    def call(self, op: str, params: Optional[Dict[str, Any]] = None, *, timeout: Optional[float] = None) -> Dict[str, Any]:
        """Any operation by its protocol name: the reply's result, or its error raised typed."""
        self._guard()
        return self.connection.call(op, params or {}, timeout=timeout)

    def call_in_background(self, op: str, params: Optional[Dict[str, Any]] = None, *,
                           timeout: Optional[float] = None) -> "concurrent.futures.Future[Dict[str, Any]]":
        """Runs ``op`` on a new connection in a thread; the future holds its result or its error."""
        future: "concurrent.futures.Future[Dict[str, Any]]" = concurrent.futures.Future()
        connection = self.open_connection(f"{self._client_name} (background {op})")

        def run() -> None:
            try:
                future.set_result(connection.call(op, params or {}, timeout=timeout))
            except BaseException as error:  # handed to the waiting test
                future.set_exception(error)
            finally:
                connection.close()

        threading.Thread(target=run, name=f"meowcare {self.label} {op}", daemon=True).start()
        return future

    def ping(self, echo: Any = None) -> Dict[str, Any]:
        return self.call("ping", {} if echo is None else {"echo": echo})

    def health(self) -> Dict[str, Any]:
        return self.call("health")

    def info(self) -> Dict[str, Any]:
        return self.call("info")

    def close(self) -> None:
        """Closes this client's connection (a later call opens a new one while the cluster runs)."""
        with self._connect_lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None

