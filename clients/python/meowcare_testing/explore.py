"""The schedule explorer from Python (docs/EXPLORING.md): a flow of actors and their steps, the
team's own steps and invariants as Python functions, run by ``meowctl explore`` under seeded
schedules through the real services.

::

    from meowcare_testing.explore import Flow, explore

    flow = Flow("two devices count visits")
    a, b = flow.actor("A", user="olivia"), flow.actor("B", user="olivia")
    a.insert("s1", "CareSession", values={"title": "visits:"})

    @flow.step
    def add_visit(ctx):                      # ctx.device is the actor's Device client
        session = ctx.object("s1")
        ...

    a.custom("add_visit"); b.custom("add_visit")
    explore(flow, schedules=50).assert_passed()

The custom steps and invariants are served on a Unix socket by a thread of this process while
``meowctl explore`` runs (the protocol is in docs/EXPLORING.md), so the scheduler, the checks
and the shrinker are the same ones the Swift and JSON flows use.
"""
from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Union

from .base import Lifetime
from .binaries import find_binaries
from .device import Device, ManagedObject
from .errors import ClientError, MeowError

__all__ = ["Flow", "Actor", "StepContext", "Run", "ExploreReport", "ExploreFailed", "explore", "replay", "StepServer"]

StepFunction = Callable[["StepContext"], Any]
InvariantFunction = Callable[["Run"], Optional[Iterable[str]]]


class Actor:
    """One device of one user and its steps, in order. Each method appends a step and returns
    the actor, so steps chain: ``a.insert("s1", "CareSession").update("s1", fields=["title"])``."""

    def __init__(self, flow: "Flow", device: str, user: str):
        self.flow = flow
        self.device = device
        self.user = user
        self.steps: List[Dict[str, Any]] = []

    def _add(self, op: str, **fields: Any) -> "Actor":
        self.steps.append({"op": op, **{key: value for key, value in fields.items() if value is not None}})
        return self

    def insert(self, obj: str, entity: str, *, fields: Sequence[str] = (), values: Optional[Mapping[str, Any]] = None,
               share: Optional[str] = None) -> "Actor":
        """Inserts ``obj`` (a name the flow gives it), a fresh value for each of ``fields``, ``values`` as given."""
        return self._add("insert", object=obj, entity=entity, fields=list(fields) or None, values=dict(values) if values else None, share=share)

    def update(self, obj: str, *, fields: Sequence[str] = (), values: Optional[Mapping[str, Any]] = None) -> "Actor":
        return self._add("update", object=obj, fields=list(fields) or None, values=dict(values) if values else None)

    def delete(self, obj: str) -> "Actor":
        return self._add("delete", object=obj)

    def link(self, obj: str, relationship: str, to: Optional[str]) -> "Actor":
        return self._add("link", object=obj, relationship=relationship, to=to)

    def share_create(self, share: str) -> "Actor":
        return self._add("shareCreate", share=share)

    def share_accept(self, share: str) -> "Actor":
        return self._add("shareAccept", share=share)

    def share_leave(self, share: str) -> "Actor":
        return self._add("shareLeave", share=share)

    def share_stop(self, share: str) -> "Actor":
        return self._add("shareStop", share=share)

    def add_participant(self, share: str, user: str, permission: str) -> "Actor":
        return self._add("addParticipant", share=share, user=user, permission=permission)

    def set_permission(self, share: str, user: str, permission: str) -> "Actor":
        return self._add("setPermission", share=share, user=user, permission=permission)

    def remove_participant(self, share: str, user: str) -> "Actor":
        return self._add("removeParticipant", share=share, user=user)

    def account_switch(self, user: str) -> "Actor":
        return self._add("accountSwitch", user=user)

    def custom(self, name: str, **params: Any) -> "Actor":
        """The team's own step ``name`` (a function registered with ``@flow.step``), with ``params``."""
        return self._add("custom", name=name, params=params)


class Flow:
    """A flow: actors, their steps, the shares they make, the team's own steps and invariants."""

    def __init__(self, name: str = "flow", *, model: Optional[str] = None, orphan_repair: bool = False):
        self.name = name
        self.model = model
        self.orphan_repair = orphan_repair
        self.actors: List[Actor] = []
        self.shares: List[Dict[str, Any]] = []
        self.steps: Dict[str, StepFunction] = {}
        self.invariants: Dict[str, InvariantFunction] = {}

    def actor(self, device: str, user: str) -> Actor:
        made = Actor(self, device, user)
        self.actors.append(made)
        return made

    def share(self, name: str, root: str, participants: Optional[Mapping[str, str]] = None) -> "Flow":
        """A share a ``share_create`` step makes: its root object, whom it invites (user → permission)."""
        self.shares.append({"name": name, "root": root,
                            "participants": [{"user": user, "permission": permission} for user, permission in (participants or {}).items()]})
        return self

    def step(self, function: Optional[StepFunction] = None, *, name: Optional[str] = None) -> Any:
        """Registers a custom step (``@flow.step`` or ``@flow.step(name="openEditor")``): a
        function of a :class:`StepContext` whose return value (JSON) the history records."""
        def register(body: StepFunction) -> StepFunction:
            self.steps[name or body.__name__] = body
            return body
        return register(function) if function is not None else register

    def invariant(self, function: Optional[InvariantFunction] = None, *, name: Optional[str] = None) -> Any:
        """Registers an invariant: a function of a :class:`Run` answering the violations it finds
        (sentences; none or an empty list when the run is fine)."""
        def register(body: InvariantFunction) -> InvariantFunction:
            self.invariants[name or body.__name__] = body
            return body
        return register(function) if function is not None else register

    def entity_of(self, obj: str) -> Optional[str]:
        for actor in self.actors:
            for step in actor.steps:
                if step["op"] == "insert" and step["object"] == obj:
                    return str(step["entity"])
        return None

    def to_json(self) -> Dict[str, Any]:
        """The flow file meowctl explore reads."""
        missing = sorted({step["name"] for actor in self.actors for step in actor.steps
                          if step["op"] == "custom" and step["name"] not in self.steps})
        if missing:
            raise ValueError(f"flow {self.name!r} names custom steps with no function: {', '.join(missing)}; "
                             "register each with @flow.step")
        out: Dict[str, Any] = {"name": self.name, "shares": self.shares, "orphanRepair": self.orphan_repair,
                               "actors": [{"device": a.device, "user": a.user, "steps": a.steps} for a in self.actors],
                               "invariants": sorted(self.invariants)}
        if self.model is not None:
            out["model"] = self.model
        return out


class StepContext:
    """What a custom step gets: the actor's device client, the step's params, the run's names."""

    def __init__(self, flow: Flow, request: Mapping[str, Any], device: Device):
        #: the actor's device (a :class:`~meowcare_testing.Device`, as in any test)
        self.device = device
        self.actor: str = request.get("actor", "")
        self.user: str = request.get("user", "")
        self.params: Dict[str, Any] = dict(request.get("params") or {})
        self.seed: int = int(request.get("seed") or 0)
        #: the app's memory on this device for this run: what earlier steps of the actor left
        self.memory: Dict[str, Any] = dict(request.get("memory") or {})
        self._objects: Dict[str, str] = dict(request.get("objects") or {})
        self._shares: Dict[str, Any] = dict(request.get("shares") or {})
        self._flow = flow

    def uuid(self, obj: str) -> Optional[str]:
        """The UUID the run gave the flow's object ``obj``."""
        return self._objects.get(obj)

    def zone(self, share: str) -> Optional[Dict[str, str]]:
        """``{"zoneName", "owner"}`` of the share, once its ``share_create`` step has run."""
        return self._shares.get(share)

    def object(self, obj: str) -> Optional[ManagedObject]:
        """The object as this device holds it now; None when it has not arrived (or is gone)."""
        uuid, entity = self._objects.get(obj), self._flow.entity_of(obj)
        if uuid is None or entity is None:
            return None
        return self.device.fetch_one(entity, "uuid == %@", uuid)


class Run:
    """One run as the explorer recorded it (a ``RunRecord``): ``seed``, ``history`` (entries:
    ``index``, ``actor``, ``op``, ``params``, ``outcome`` {``kind``: ok/fail/unknown/resolved, …}),
    ``final`` (``cloud`` zones and ``devices`` with their ``objects``)."""

    def __init__(self, record: Mapping[str, Any]):
        self.raw = dict(record)
        self.seed: int = int(record.get("seed") or 0)
        self.history: List[Dict[str, Any]] = list(record.get("history") or [])
        self.final: Dict[str, Any] = dict(record.get("final") or {})

    def entries(self, op: Optional[str] = None, actor: Optional[str] = None) -> List[Dict[str, Any]]:
        """History entries, optionally of one op (``"custom.add_visit"``, ``"sync.send"``) or actor."""
        return [entry for entry in self.history if (op is None or entry.get("op") == op) and (actor is None or entry.get("actor") == actor)]

    @staticmethod
    def result(entry: Mapping[str, Any]) -> Any:
        """An entry's result when it succeeded, else None."""
        outcome = entry.get("outcome") or {}
        return outcome.get("result") if outcome.get("kind") == "ok" else None

    def objects(self, entity: Optional[str] = None) -> List[Dict[str, Any]]:
        """Every device's final objects (each with ``device`` added), optionally of one entity."""
        return [dict(obj, device=device.get("name")) for device in self.final.get("devices") or []
                for obj in device.get("objects") or [] if entity is None or obj.get("entity") == entity]


def _read_frame(connection: socket.socket) -> Dict[str, Any]:
    def read(count: int) -> bytes:
        data = b""
        while len(data) < count:
            chunk = connection.recv(count - len(data))
            if not chunk:
                raise EOFError("the explorer closed the connection mid-frame")
            data += chunk
        return data
    return json.loads(read(struct.unpack(">I", read(4))[0]).decode("utf-8"))


def _write_frame(connection: socket.socket, message: Mapping[str, Any]) -> None:
    body = json.dumps(message, default=str).encode("utf-8")
    connection.sendall(struct.pack(">I", len(body)) + body)


class StepServer:
    """Serves a flow's custom steps and invariants on a Unix socket, on a thread, one request
    per connection (docs/EXPLORING.md). A context manager; ``path`` is the socket."""

    def __init__(self, flow: Flow, *, timeout: float = 60.0):
        self.flow = flow
        self.timeout = timeout
        self._directory = tempfile.mkdtemp(prefix="meow-steps.")
        self.path = os.path.join(self._directory, "steps.sock")
        self._socket: Optional[socket.socket] = None
        self._thread: Optional[threading.Thread] = None
        self._lifetime = Lifetime(f"steps of {flow.name!r}")

    def __enter__(self) -> "StepServer":
        self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._socket.bind(self.path)
        self._socket.listen(16)
        self._thread = threading.Thread(target=self._serve, name=f"meowcare steps {self.flow.name}", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        if self._socket is not None:
            try:
                self._socket.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self._socket.close()
            self._socket = None
        if self._thread is not None:
            self._thread.join(timeout=5)
        for name in ("steps.sock",):
            try:
                os.unlink(os.path.join(self._directory, name))
            except OSError:
                pass
        try:
            os.rmdir(self._directory)
        except OSError:
            pass

    def _serve(self) -> None:
        listener = self._socket
        while listener is not None:
            try:
                connection, _ = listener.accept()
            except OSError:
                return  # closed
            with connection:
                try:
                    _write_frame(connection, self.answer(_read_frame(connection)))
                except (OSError, EOFError, ValueError):
                    continue  # the explorer reports a step whose answer it could not read

    def answer(self, request: Mapping[str, Any]) -> Dict[str, Any]:
        """The answer to one request: a step's or an invariant's."""
        if "invariant" in request:
            return {"violations": self._judge(str(request["invariant"]), Run(request.get("run") or {}))}
        if "step" in request:
            return self._step(str(request["step"]), request)
        return {"ok": False, "error": {"code": "invalidArguments", "message": "expected a request with \"step\" or \"invariant\""}}

    def _step(self, name: str, request: Mapping[str, Any]) -> Dict[str, Any]:
        body = self.flow.steps.get(name)
        if body is None:
            return {"ok": False, "error": {"code": "unknownStep", "message": f"flow {self.flow.name!r} has no step {name!r}"}}
        target = request.get("device") or {}
        device = Device(str(target.get("name", request.get("actor", "?"))), str(target.get("socket")), user=str(request.get("user", "")),
                        lifetime=self._lifetime, trace=None, timeout=self.timeout)
        context = StepContext(self.flow, request, device)
        try:
            result = body(context)
            return {"ok": True, "result": result, "memory": context.memory}
        except MeowError as error:
            return {"ok": False, "error": {"code": error.code, "message": error.message}}
        except Exception as error:  # the app's own failure: the customSteps check reports it
            return {"ok": False, "error": {"code": "customStepFailed", "message": f"{type(error).__name__}: {error}"}}
        finally:
            device.close()

    def _judge(self, name: str, run: Run) -> List[str]:
        body = self.flow.invariants.get(name)
        if body is None:
            return [f"flow {self.flow.name!r} has no invariant {name!r}"]
        try:
            return [str(violation) for violation in (body(run) or [])]
        except Exception as error:
            return [f"invariant {name} raised {type(error).__name__}: {error}"]


class ExploreFailed(AssertionError):
    """A schedule failed a check; the message is the report (seed, check, shrunk schedule, replay)."""

    def __init__(self, report: "ExploreReport"):
        self.report = report
        super().__init__(report.text)


class ExploreReport:
    """What ``meowctl explore --json`` reported, and the failing (or replayed) run's history."""

    def __init__(self, raw: Mapping[str, Any], history: List[Dict[str, Any]], command: List[str], draw_options: str = "",
                 page: Optional[str] = None):
        self.raw = dict(raw)
        #: the shrunk run as a page (``meowctl report``'s), kept in a ``/tmp/meowcare-explore.*``
        #: directory; None when every schedule passed
        self.page = page
        #: the keyword arguments a replay must repeat (``, faults='none'``), for the replay line
        self.draw_options = draw_options
        self.history = history
        self.command = command
        failure = self.raw.get("failure") or {}
        self.passed: bool = bool(self.raw.get("passed"))
        self.schedules: int = int(self.raw.get("schedules") or 0)
        self.seed: Optional[int] = int(failure["seed"]) if failure.get("seed") is not None else None
        self.check: Optional[str] = failure.get("check")
        shrunk = failure.get("shrunk") or {}
        #: the shrunk run's failures of the failing check: ``{"check", "explanation", "entries"}``
        self.failures: List[Dict[str, Any]] = [item for item in shrunk.get("failures") or [] if item.get("check") == self.check]
        #: the shrunk schedule's choices (``"step A"``, ``"send B"``, …) and its lines, step by step
        self.choices: List[str] = list(shrunk.get("choices") or [])
        self.lines: List[str] = list(shrunk.get("lines") or [])
        self.replay_command: Optional[str] = (self.raw.get("replay") or {}).get("command")

    @property
    def text(self) -> str:
        """The report for people: what ran, and on a failure the seed, the check's explanation,
        the shrunk schedule step by step and how to replay it."""
        raw = self.raw
        lines = [f"Explored {raw.get('flow')!r}: {self.schedules} schedules (seeds {raw.get('firstSeed')}…{raw.get('lastSeed')}) "
                 f"in {float(raw.get('seconds') or 0):.2f} s."]
        if self.passed:
            return "\n".join(lines + ["Every schedule passed every check."])
        failure = raw.get("failure") or {}
        shrunk = failure.get("shrunk") or {}
        lines.append(f"FAILED: seed {self.seed}, check {self.check!r}.")
        lines += [f"  {item.get('check')}: {item.get('explanation')}" for item in self.failures]
        lines.append(f"Shrunk in {failure.get('shrinkRuns')} runs from {failure.get('original')} to {shrunk.get('size')}.")
        lines.append("Schedule:")
        lines += [f"  {line}" for line in self.lines]
        lines.append(f"Replay: meowcare_testing.explore.replay(flow, {self.seed}{self.draw_options})")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.text

    def assert_passed(self) -> "ExploreReport":
        if not self.passed:
            raise ExploreFailed(self)
        return self


def _meowctl(bin_dir: Optional[str]) -> str:
    store = find_binaries(bin_dir)["store-service"]
    meowctl = os.path.join(os.path.dirname(store), "meowctl")
    if not os.access(meowctl, os.X_OK):
        raise ClientError("binariesNotFound", f"no meowctl beside {store}; build it with 'swift build --product meowctl'",
                          {"binDir": os.path.dirname(store)})
    return meowctl


def _faults_argument(faults: Union[None, str, Mapping[str, float]]) -> Optional[str]:
    if faults is None or isinstance(faults, str):
        return faults
    return ",".join(f"{kind}={weight}" for kind, weight in faults.items()) if faults else "none"


def _run_meowctl(flow: Flow, arguments: List[str], *, bin_dir: Optional[str], timeout: Optional[float],
                 draw_options: str = "") -> ExploreReport:
    meowctl = _meowctl(bin_dir)
    with tempfile.TemporaryDirectory(prefix="meow-explore.") as directory, StepServer(flow) as server:
        flow_file = os.path.join(directory, "flow.json")
        history_file = os.path.join(directory, "history.jsonl")
        Path(flow_file).write_text(json.dumps(flow.to_json(), indent=2), encoding="utf-8")
        command = [meowctl, "explore", flow_file, "--json", "--history", history_file, "--steps-socket", server.path, *arguments]
        environment = dict(os.environ, MEOWCARE_BIN_DIR=os.path.dirname(meowctl))
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=environment)
        if done.returncode not in (0, 1) or not done.stdout.strip():
            raise ClientError("exploreFailedToRun", f"meowctl explore exited {done.returncode}: {done.stderr.strip() or done.stdout.strip()}",
                              {"command": command, "status": done.returncode})
        history = []
        if os.path.exists(history_file):
            history = [json.loads(line) for line in Path(history_file).read_text(encoding="utf-8").splitlines() if line.strip()]
        raw = json.loads(done.stdout)
        return ExploreReport(raw, history, command, draw_options, page=_keep_page((raw.get("replay") or {}).get("page")))


def _keep_page(page: Optional[str]) -> Optional[str]:
    """Copies the page meowctl wrote beside the flow file out of the run's temporary directory."""
    if not page or not os.path.exists(page):
        return None
    kept = os.path.join(tempfile.mkdtemp(prefix="meowcare-explore."), "report.html")
    Path(kept).write_bytes(Path(page).read_bytes())
    return kept


def explore(flow: Flow, *, seeds: Optional[range] = None, schedules: Optional[int] = None, seconds: Optional[float] = None,
            faults: Union[None, str, Mapping[str, float]] = None, fault_rate: Optional[float] = None, sqlite: bool = False,
            shrink_budget: Optional[int] = None, bin_dir: Optional[str] = None, timeout: Optional[float] = 900) -> ExploreReport:
    """Runs ``flow`` under seeded schedules (``seeds=range(1, 101)``, or ``schedules``/``seconds``
    from seed 1) and returns the report; ``report.assert_passed()`` raises :class:`ExploreFailed`.
    ``faults``: ``{"dropAfterCommit": 2, …}``, ``"none"``, or None for the explorer's default."""
    arguments: List[str] = []
    if seeds is not None:
        if len(seeds) == 0 or seeds.step != 1:
            raise ValueError("seeds must be a non-empty range with step 1, e.g. range(1, 101)")
        arguments += ["--seeds", f"{seeds.start}..{seeds[-1]}"]
    if schedules is not None:
        arguments += ["--schedules", str(schedules)]
    if seconds is not None:
        arguments += ["--seconds", str(seconds)]
    return _run_meowctl(flow, arguments + _draw_arguments(faults, fault_rate, sqlite, shrink_budget), bin_dir=bin_dir, timeout=timeout,
                        draw_options=_draw_options(faults=faults, fault_rate=fault_rate, sqlite=sqlite, shrink_budget=shrink_budget))


def replay(flow: Flow, seed: int, *, faults: Union[None, str, Mapping[str, float]] = None, fault_rate: Optional[float] = None,
           sqlite: bool = False, shrink_budget: Optional[int] = None, bin_dir: Optional[str] = None,
           timeout: Optional[float] = 900) -> ExploreReport:
    """Runs seed ``seed`` alone, as ``explore`` drew it (give the same ``faults``), and shrinks it
    the same way: the same shrunk schedule and history (``report.history``)."""
    arguments = ["--replay", str(seed)] + _draw_arguments(faults, fault_rate, sqlite, shrink_budget)
    return _run_meowctl(flow, arguments, bin_dir=bin_dir, timeout=timeout,
                        draw_options=_draw_options(faults=faults, fault_rate=fault_rate, sqlite=sqlite, shrink_budget=shrink_budget))


def _draw_options(**options: Any) -> str:
    """The options given, as keyword arguments for the printed replay line."""
    return "".join(f", {name}={value!r}" for name, value in options.items() if value is not None and value is not False)


def _draw_arguments(faults: Union[None, str, Mapping[str, float]], fault_rate: Optional[float], sqlite: bool,
                    shrink_budget: Optional[int]) -> List[str]:
    arguments: List[str] = []
    fault_text = _faults_argument(faults)
    if fault_text is not None:
        arguments += ["--faults", fault_text]
    if fault_rate is not None:
        arguments += ["--fault-rate", str(fault_rate)]
    if sqlite:
        arguments.append("--sqlite")
    if shrink_budget is not None:
        arguments += ["--shrink-budget", str(shrink_budget)]
    return arguments
