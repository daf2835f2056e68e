"""An isolated cloud and N named devices, started for a test and stopped after it.

``Cluster`` is the whole plumbing a sharing test needs before its first assertion: users and
credentials, a sync-service, one store-service per device mirroring to it, short unique socket
paths in a temp directory of its own, readiness by ``health``, and a stop that runs also when
the test fails. Services get ``MEOW_EXIT_WITH_PID`` (this process), so even a test run killed
with SIGKILL leaves nothing running. With ``MEOWCARE_EXTERNAL=<dir>`` the same object attaches
to a running ``deploy/meowcare-local`` deployment instead, so a person can watch a test with
meowctl.
"""
from __future__ import annotations

import atexit
import concurrent.futures
import datetime as _dt
import json
import os
import re
import secrets
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from . import convergence, external, invariants
from .base import Lifetime
from .binaries import LOG, Binaries, locate_binaries
from .cloud import Cloud
from .device import Device
from .errors import MeowError, NotAuthenticated, NotSettled, ServiceStartError
from .external import ENV_EXTERNAL
from .process import ServiceProcess
from .wire import FrameTrace, probe_health

#: The devices of a cluster made without ``devices=``: the owner's two devices and a participant's.
DEFAULT_DEVICES: Dict[str, str] = {"A": "owner", "B": "owner", "P": "participant"}

# Cloud ops that change nothing: a settle round whose request log holds only these (and whose
# devices report no work) changed nothing in the cloud.
_READ_ONLY_OPS = frozenset({
    "changes.fetchDatabase", "changes.fetchZone", "records.fetch", "zones.fetch", "shares.fetch",
    "shares.invitations", "shares.owned", "admin.requestLog", "admin.listUsers", "admin.schema",
    "admin.awaitHeldRequests", "subscriptions.fetch", "admin.exportSchema", "admin.diffSchema",
    "hello", "ping",
})
_SETTLE_ADVICE = ("What to do: something kept changing or stayed queued. A device that sends the same entries every "
                  "round is being refused (see its last error and cluster.logs()); deferred entries wait for a "
                  "retry-after (cluster.advance_clocks()); writes by another client or an automatic mirror during "
                  "the rounds need them to stop first; a long backlog may need settle(max_rounds=...) higher.")
_SEND_WORK = ("saved", "deleted", "conflictsResolved", "reverted", "dropped")
_FETCH_WORK = ("changedRecords", "deletedRecords", "merged", "tokensExpired", "zonesRemoved", "zonesReset")


#: Where an in-memory cluster's directory goes when it is a writable tmpfs with room.
SHM_DIRECTORY = "/dev/shm"
#: The room a tmpfs must have free (a container's /dev/shm is often 64 MiB, which long runs' logs
#: could fill): the same rule as the Swift library's.
SHM_MINIMUM_FREE_BYTES = 512 << 20


def _is_roomy_tmpfs(path: str, mounts_file: str = "/proc/self/mounts") -> bool:
    try:
        with open(mounts_file, encoding="utf-8") as mounts:
            tmpfs = any(fields[1] == path and fields[2] == "tmpfs" for fields in (line.split() for line in mounts) if len(fields) > 2)
        if not tmpfs or not os.access(path, os.W_OK | os.X_OK):
            return False
        stats = os.statvfs(path)
        return stats.f_bavail * stats.f_frsize >= SHM_MINIMUM_FREE_BYTES
    except OSError:
        return False


@dataclass
class DeviceSpec:
    """How to start one device. ``None`` fields take the cluster's setting."""

    user: str
    sync_mode: Optional[str] = None
    storage: Optional[str] = None
    orphan_repair: Optional[bool] = None
    args: Sequence[str] = field(default_factory=tuple)


DeviceArg = Union[str, DeviceSpec, Mapping[str, Any]]


def _spec(value: DeviceArg) -> DeviceSpec:
    if isinstance(value, DeviceSpec):
        return value
    if isinstance(value, str):
        return DeviceSpec(value)
    return DeviceSpec(**dict(value))


def _socket_name(name: str, index: int) -> str:
    """A short file name for a device's socket (paths must fit sockaddr_un's 108 bytes)."""
    return f"{name}.sock" if re.fullmatch(r"[A-Za-z0-9_-]{1,16}", name) else f"d{index}.sock"


def _did_work(result: Mapping[str, Any]) -> bool:
    send, fetch = result.get("send") or {}, result.get("fetch") or {}
    return any(send.get(key) for key in _SEND_WORK) or any(fetch.get(key) for key in _FETCH_WORK)


class Cluster:
    """A cloud and named devices. Use as a context manager (or ``start()``/``stop()``)::

        with Cluster(devices={"A": "owner", "P": "participant"}) as cluster:
            a, p = cluster["A"], cluster["P"]
            ...
            cluster.settle()
            cluster.assert_converged()

    ``devices`` maps device names to their cloud user (or a :class:`DeviceSpec`); every user is
    created with a fresh credential. ``users`` adds users without a device. ``sync_mode`` is
    ``"manual"`` (the default: nothing syncs until a test says so) or ``"automatic"``.
    ``storage`` is ``"memory"`` (default) or ``"sqlite"`` (files under the cluster's directory).
    ``external`` attaches to a running deployment's directory (default: ``$MEOWCARE_EXTERNAL``;
    ``False`` never does).
    """

    def __init__(self, devices: Optional[Mapping[str, DeviceArg]] = None, *, users: Sequence[str] = (),
                 sync_mode: str = "manual", storage: str = "memory", orphan_repair: bool = False,
                 model: Optional[str] = None, device_args: Sequence[str] = (), cloud_args: Sequence[str] = (),
                 bin_dir: Optional[str] = None, timeout: float = 60.0, start_timeout: float = 30.0,
                 external: Union[None, bool, str] = None, keep_directory: bool = False):
        if sync_mode not in ("manual", "automatic"):
            raise ValueError(f"sync_mode must be 'manual' or 'automatic', not {sync_mode!r}")
        if storage not in ("memory", "sqlite"):
            raise ValueError(f"storage must be 'memory' or 'sqlite', not {storage!r}")
        self.specs: Dict[str, DeviceSpec] = {name: _spec(value) for name, value in (devices or DEFAULT_DEVICES).items()}
        self.sync_mode = sync_mode
        self.storage = storage
        self.orphan_repair = orphan_repair
        self.model = model
        self.device_args = list(device_args)
        self.cloud_args = list(cloud_args)
        self.timeout = timeout
        self.start_timeout = start_timeout
        self.keep_directory = keep_directory
        self._bin_dir = bin_dir
        self._requested_users = list(dict.fromkeys([spec.user for spec in self.specs.values()] + list(users)))
        if external is None:
            external = os.environ.get(ENV_EXTERNAL) or False
        self.external: Optional[str] = str(external) if external else None

        self.directory: Optional[str] = None
        self.devices: Dict[str, Device] = {}
        self.cloud: Optional[Cloud] = None
        #: cloud user name in this cluster → its credential
        self.credentials: Dict[str, str] = {}
        self._user_names: Dict[str, str] = {}  # requested user → real user (differs in external mode)
        self._processes: List[ServiceProcess] = []
        #: where the services were started from, and which rule found them (None until started, and in external mode)
        self.binaries: Optional[Binaries] = None
        self._binaries: Dict[str, str] = {}
        self._admin_credential = ""
        self._lifetime = Lifetime("(not started)")
        self.trace = FrameTrace()
        self._log_cursor = 0
        self._lock = threading.Lock()
        self._started = False

    # -- life --------------------------------------------------------------------------------

    def __enter__(self) -> "Cluster":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def start(self) -> "Cluster":
        """Starts (or attaches to) every service and waits until each answers ``health`` ready."""
        if self._started:
            return self
        self._started = True
        try:
            if self.external:
                self._attach_external(self.external)
            else:
                self._start_local()
        except BaseException:
            self.stop()
            raise
        atexit.register(self.stop)
        return self

    def stop(self) -> None:
        """Stops every service this cluster started (SIGTERM, then SIGKILL) and removes its directory.

        Every client of the cluster fails with :class:`ClusterStopped` from now on. In external
        mode only the connections close; the deployment keeps running.
        """
        with self._lock:
            if self._lifetime.stopped:
                return
            self._lifetime.stopped = True
        atexit.unregister(self.stop)
        for client in [*self.devices.values(), *([self.cloud] if self.cloud else [])]:
            client.close()
        devices = [process for process in self._processes if process.name != "cloud"]
        for process in devices:  # all devices at once: each stop waits only for itself
            process.terminate()
        for process in devices + [process for process in self._processes if process.name == "cloud"]:
            process.stop()
        if self.directory and not self.external and not self.keep_directory:
            shutil.rmtree(self.directory, ignore_errors=True)

    @property
    def running(self) -> bool:
        return self._started and not self._lifetime.stopped

    # -- starting -----------------------------------------------------------------------------

    def _directory_parent(self) -> Optional[str]:
        """Where the cluster's directory is made: short, since socket paths must fit in 108 bytes,
        so /tmp wherever TMPDIR points. A cluster whose stores are all in memory keeps only
        sockets, lock files, logs and credentials: on /dev/shm, when it is a writable tmpfs with
        room, their removal never waits for a disk mounted with ``discard``."""
        in_memory = all((spec.storage or self.storage) == "memory" for spec in self.specs.values())
        if in_memory and _is_roomy_tmpfs(SHM_DIRECTORY):
            return SHM_DIRECTORY
        return "/tmp" if os.path.isdir("/tmp") else None

    def _start_local(self) -> None:
        self.binaries = locate_binaries(self._bin_dir)
        self._binaries = self.binaries.paths
        LOG.info("meowcare-testing: %s", self.binaries.summary)
        self.directory = tempfile.mkdtemp(prefix="mc.", dir=self._directory_parent())
        os.makedirs(os.path.join(self.directory, "logs"))
        self._lifetime.description = self.directory
        self._admin_credential = secrets.token_hex(16)
        for user in self._requested_users:
            self._user_names[user] = user
            self.credentials[user] = f"{user}-{secrets.token_hex(12)}"
        users_file = self._private_file("users.json", json.dumps(
            {"users": [{"user": user, "credential": credential} for user, credential in self.credentials.items()]}))
        cloud_socket = os.path.join(self.directory, "cloud.sock")
        argv = [self._binaries["sync-service"], "--socket", cloud_socket,
                "--admin-credential-file", self._private_file("admin.credential", self._admin_credential),
                "--users", users_file]
        argv += ["--in-memory"] if self.storage == "memory" else ["--data-dir", os.path.join(self.directory, "cloud")]
        process = self._spawn("cloud", argv + self.cloud_args)
        self._wait_ready("cloud", process, cloud_socket)
        self.cloud = Cloud(cloud_socket, admin_credential=self._admin_credential, credentials=self.credentials,
                           process=process, lifetime=self._lifetime, trace=self.trace, timeout=self.timeout,
                           on_user_created=self._user_created)
        self._start_devices(self.specs)

    def _user_created(self, user: str, credential: str) -> None:
        self._user_names.setdefault(user, user)

    def _start_devices(self, specs: Mapping[str, DeviceSpec]) -> None:
        # In parallel: a cluster is ready as soon as its slowest device, not the sum of them.
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(specs))) as pool:
            futures = {name: pool.submit(self._start_device, name, spec) for name, spec in specs.items()}
            errors = []
            for name, future in futures.items():
                try:
                    self.devices[name] = future.result()
                except BaseException as error:
                    errors.append(error)
            if errors:
                raise errors[0]

    def _start_device(self, name: str, spec: DeviceSpec) -> Device:
        assert self.directory is not None
        socket_path = os.path.join(self.directory, _socket_name(name, list(self.specs).index(name)))
        storage = spec.storage or self.storage
        argv = [self._binaries["store-service"], "--socket", socket_path]
        argv += ["--in-memory"] if storage == "memory" else ["--data-dir", os.path.join(self.directory, f"device-{name}")]
        argv += ["--sync-socket", os.path.join(self.directory, "cloud.sock"),
                 "--sync-credential-file", self._private_file(f"{spec.user}.credential", self.credentials[spec.user]),
                 "--device-name", name, "--sync-mode", spec.sync_mode or self.sync_mode]
        if not (self.orphan_repair if spec.orphan_repair is None else spec.orphan_repair):
            argv.append("--no-orphan-repair")
        if self.model:
            argv += ["--model", self.model]
        process = self._spawn(f"device {name}", argv + self.device_args + list(spec.args))
        self._wait_ready(f"device {name}", process, socket_path)
        return Device(name, socket_path, user=spec.user, process=process, log_path=process.log_path,
                      lifetime=self._lifetime, trace=self.trace, timeout=self.timeout)

    def _private_file(self, name: str, text: str) -> str:
        assert self.directory is not None
        path = os.path.join(self.directory, name)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
        return path

    def _spawn(self, name: str, argv: List[str]) -> ServiceProcess:
        assert self.directory is not None
        log_path = os.path.join(self.directory, "logs", name.replace(" ", "-") + ".log")
        process = ServiceProcess(name, argv, log_path=log_path)
        with self._lock:
            self._processes.append(process)
        return process

    def _wait_ready(self, name: str, process: ServiceProcess, socket_path: str) -> None:
        """Waits for ``health`` ready; a service that exits or stalls raises with its own log lines."""
        deadline = time.monotonic() + self.start_timeout
        last_health: Optional[Dict[str, Any]] = None
        while True:
            seen = process.line_count()
            if process.exit_status is not None:
                process.stop()  # collects the last lines
                raise ServiceStartError(name, f"it exited with status {process.exit_status} before it was ready "
                                        f"({' '.join(process.argv)})", process.lines, process.exit_status)
            if os.path.exists(socket_path):
                last_health = probe_health(socket_path)
                if last_health is not None and last_health.get("ready"):
                    return
            if time.monotonic() > deadline:
                process.kill()
                reason = f"not ready after {self.start_timeout} s"
                if last_health is not None:
                    reason += f"; its last health: {json.dumps(last_health)}"
                raise ServiceStartError(name, reason, process.lines, process.exit_status)
            process.wait_for_activity(seen, 0.05)

    # -- external mode ------------------------------------------------------------------------

    def _attach_external(self, directory: str) -> None:
        """Attaches to ``deploy/meowcare-local up --dir DIRECTORY`` (see :mod:`meowcare_testing.external`)."""
        deployment = external.read_deployment(directory)
        self.directory = directory
        self._lifetime.description = f"{directory} (external)"
        chosen = external.map_devices(deployment, {name: spec.user for name, spec in self.specs.items()})
        for name, deployed in chosen.items():
            self._user_names[self.specs[name].user] = deployed.user
            self.devices[name] = Device(name, deployed.socket, user=deployed.user, log_path=deployment.log_path(deployed.service),
                                        lifetime=self._lifetime, trace=self.trace, timeout=self.timeout)
        for user in self._requested_users:
            if user not in self._user_names:
                raise MeowError("externalMismatch", f"{ENV_EXTERNAL}: user {user!r} has no device in the deployment.", {"user": user})
        self.credentials.update(deployment.credentials)
        self._admin_credential = deployment.admin_credential
        self.cloud = Cloud(deployment.cloud_socket, admin_credential=deployment.admin_credential, credentials=self.credentials,
                           log_path=deployment.log_path("sync-service"), lifetime=self._lifetime, trace=self.trace,
                           timeout=self.timeout, on_user_created=self._user_created)
        for name, device in self.devices.items():
            if not (probe_health(device.socket) or {}).get("ready"):
                raise MeowError("externalNotReady", f"{ENV_EXTERNAL}: device {name} ({device.socket}) does not answer health ready; "
                                f"see 'deploy/meowcare-local status --dir {directory}'.", {"device": name})
        # The devices must run the test's model (its own, or MeowCare's): another model's entities are not there.
        expected = external.model_name(self.model)
        for name, device in self.devices.items():
            running = device.call("model.get").get("name")
            if expected is not None and running is not None and running != expected:
                raise MeowError("externalMismatch", f"{ENV_EXTERNAL}: device {name} of the deployment runs the model {running!r}, but the "
                                f"test's model is {expected!r}. Run the test with the deployment's model (model=...), or start the "
                                f"deployment on the test's: deploy/meowcare-local up --dir {directory} --model PATH.",
                                {"device": name, "model": running, "expected": expected})

    # -- access -------------------------------------------------------------------------------

    def __getitem__(self, name: str) -> Device:
        return self.device(name)

    def __iter__(self) -> Iterator[Device]:
        return iter(list(self.devices.values()))

    def device(self, name: str) -> Device:
        self._lifetime.check(f"device {name}")
        try:
            return self.devices[name]
        except KeyError:
            raise KeyError(f"no device {name!r} in this cluster (devices: {', '.join(self.devices)})") from None

    def user(self, name: str) -> str:
        """The real user name for a user the test named (the same, except in external mode)."""
        return self._user_names[name]

    def add_device(self, name: str, user: DeviceArg, **spec: Any) -> Device:
        """Starts another device at run time (a new user gets an account first)."""
        self._lifetime.check(f"cluster {self._lifetime.description}")
        if self.external:
            raise MeowError("externalMode", "add_device starts a service: not in external mode.", {"device": name})
        device_spec = _spec(user) if not spec else DeviceSpec(user=str(user), **spec)
        if device_spec.user not in self.credentials:
            assert self.cloud is not None
            self.cloud.create_user(device_spec.user)
        self.specs[name] = device_spec
        self._start_devices({name: device_spec})
        return self.devices[name]

    def _signed_in(self, devices: Optional[Sequence[str]]) -> List[Device]:
        chosen = [self.device(name) for name in devices] if devices is not None else list(self.devices.values())
        return [device for device in chosen if device.sync_status().get("signedIn", True)]

    # -- settling and assertions ------------------------------------------------------------------

    def _cloud_writes_since_cursor(self) -> List[str]:
        """Requests that changed the cloud since the last look at its request log."""
        assert self.cloud is not None
        writes: List[str] = []
        while True:
            entries = self.cloud.request_log(after=self._log_cursor, limit=10000)
            if not entries:
                return writes
            self._log_cursor = max(int(entry.get("seq") or 0) for entry in entries)
            writes += [f"{entry.get('client', entry.get('user', '?'))}: {entry.get('op')}" for entry in entries
                       if entry.get("op") not in _READ_ONLY_OPS]

    def settle(self, max_rounds: int = 20, devices: Optional[Sequence[str]] = None) -> int:
        """Syncs until every device has sent and fetched everything; returns the rounds it took.

        A round runs ``sync.now`` on every signed-in device in turn. The cluster is settled after
        a round in which no device did any work (nothing sent, fetched, merged or removed), the
        cloud's request log shows no write by anyone (so every device's fetch saw the cloud's
        final state, also with automatic mirrors running) and every device's ``sync.status`` is
        ``quiescent``. No sleeps: each round is the services' own work. Raises
        :class:`NotSettled` with every device's status after ``max_rounds``.
        """
        assert self.cloud is not None
        if max_rounds < 1:
            raise MeowError("invalidArguments", f"settle(max_rounds={max_rounds}): give at least one round.", {"max_rounds": max_rounds})
        self._cloud_writes_since_cursor()
        last: Dict[str, Any] = {}
        for round_number in range(1, max_rounds + 1):
            worked: List[str] = []
            for device in [self.device(name) for name in devices] if devices is not None else list(self.devices.values()):
                try:
                    result = device.sync_now()
                except NotAuthenticated:
                    if device.sync_status().get("signedIn", True):
                        raise
                    continue  # signed out: nothing of it is to settle
                if _did_work(result):
                    worked.append(device.name)
            writes = self._cloud_writes_since_cursor()
            statuses = {device.name: device.sync_status() for device in self._signed_in(devices)}
            busy = {name: status for name, status in statuses.items() if not status.get("quiescent")}
            if not worked and not writes and not busy:
                return round_number
            last = {"round": round_number, "worked": worked, "cloudWrites": writes[-20:],
                    "notQuiescent": {name: {key: status.get(key) for key in ("inFlight", "lastError", "stores")}
                                     for name, status in busy.items()}}
        raise NotSettled("notSettled", f"The cluster did not settle in {max_rounds} rounds of sync.now. Last round: "
                         f"{json.dumps(last, indent=1, default=str)}\n{_SETTLE_ADVICE}", last)

    def convergence(self, devices: Optional[Sequence[str]] = None) -> List[convergence.ConvergenceReport]:
        """Each signed-in device compared with the cloud as its user (what ``assert_converged`` checks)."""
        assert self.cloud is not None
        reports = []
        for device in self._signed_in(devices):
            user = self.cloud.as_user(device.user)
            try:
                reports.append(convergence.compare(device, user))
            finally:
                user.close()
        return reports

    def assert_converged(self, devices: Optional[Sequence[str]] = None) -> None:
        """Each device's stores equal its user's cloud databases, field by field (AssertionError with the diff)."""
        failures = [report.text() for report in self.convergence(devices) if not report.identical]
        if failures:
            raise AssertionError("The devices and the cloud have not converged:\n" + "\n\n".join(failures))

    def invariant_findings(self, devices: Optional[Sequence[str]] = None) -> Dict[str, List[invariants.Finding]]:
        """``meowctl doctor``'s findings per device (device and cloud checks)."""
        assert self.cloud is not None
        found: Dict[str, List[invariants.Finding]] = {}
        chosen = [self.device(name) for name in devices] if devices is not None else list(self.devices.values())
        for device in chosen:
            findings = invariants.check_device(device)
            user = self.cloud.as_user(device.user)
            try:
                findings += invariants.check_cloud(user, device.sync_status().get("user"))
            finally:
                user.close()
            found[device.name] = findings
        return found

    def assert_invariants(self, devices: Optional[Sequence[str]] = None) -> None:
        """Runs doctor's checks on every device (and the cloud as its user); AssertionError lists the findings."""
        lines = []
        for name, findings in self.invariant_findings(devices).items():
            if findings:
                lines.append(f"device {name}: {len(findings)} finding(s)")
                lines += [f"  {index}. {finding.text()}" for index, finding in enumerate(findings, 1)]
        if lines:
            raise AssertionError("Invariants broken (meowctl doctor's checks):\n" + "\n".join(lines))

    # -- clocks ---------------------------------------------------------------------------------

    def advance_clocks(self, seconds: float) -> Dict[str, Any]:
        """Moves every clock of the cluster — each device's and the cloud's — ``seconds`` ahead.

        Retry-after deferrals, token expiry and the dates services stamp then behave as if that
        time had passed. Devices first: a store-service without ``clock.set`` raises
        :class:`UnknownOp` before anything moved. Returns each clock's answer by device name
        (``{"now", "offsetSeconds"}``) and ``"cloud"`` (``{"now", "fixed"}``).
        """
        assert self.cloud is not None
        results: Dict[str, Any] = {name: device.advance_clock(seconds) for name, device in self.devices.items()}
        results["cloud"] = self.cloud.advance_clock(seconds)
        return results

    def set_clocks(self, now: Union[None, int, float, _dt.datetime]) -> Dict[str, Any]:
        """Sets every clock of the cluster to ``now`` (None: back to the real clock).

        The devices' clocks run on from that reading; the cloud's stays fixed at it (as
        ``admin.setClock`` does) until moved.
        """
        assert self.cloud is not None
        results: Dict[str, Any] = {name: device.set_clock(now) for name, device in self.devices.items()}
        results["cloud"] = self.cloud.set_clock(now)
        return results

    # -- diagnostics --------------------------------------------------------------------------

    def logs(self) -> Dict[str, List[str]]:
        """Each service's log lines so far, by service (``cloud``, ``device A``…)."""
        logs: Dict[str, List[str]] = {}
        if self.cloud is not None:
            logs["cloud"] = self.cloud.log_lines()
        for name, device in self.devices.items():
            logs[f"device {name}"] = device.log_lines()
        return logs

    def failure_report(self, max_lines: int = 150) -> List[Tuple[str, str]]:
        """Sections for a failing test: each service's log, the cloud's request log, the client frames."""
        sections: List[Tuple[str, str]] = []
        for service, lines in self.logs().items():
            shown = lines[-max_lines:]
            note = f"(last {len(shown)} of {len(lines)} lines)\n" if len(lines) > len(shown) else ""
            sections.append((f"log of {service}", note + "\n".join(shown)))
        if self.running and self.cloud is not None:
            try:
                entries = self.cloud.request_log(limit=10000)
                sections.append(("cloud request log", "\n".join(json.dumps(entry, sort_keys=True) for entry in entries[-max_lines:])))
            except MeowError as error:
                sections.append(("cloud request log", f"(not available: {error})"))
        sections.append(("client frames (last ones, all connections)", "\n".join(self.trace.lines()[-max_lines:])))
        # Every credential the cluster knows is hidden wherever it appears (a snapshot's users
        # rows, a message quoting a reply, a log line), not only in members named "credential".
        # A very short one (a deliberately wrong "x") is left alone: hiding it everywhere would garble the report.
        known = sorted({c for c in [self._admin_credential, *self.credentials.values()] if c and len(c) >= 6}, key=len, reverse=True)
        return [(title, self._redact(text, known)) for title, text in sections]

    def write_report(self, failures: Optional[List[str]] = None) -> Optional[str]:
        """``meowctl report``'s page of this cluster (timeline, refusals, conflicts, shares), in a new
        ``/tmp/meowcare-report.*`` directory beside the files it was made from; its path, or None
        when meowctl is not beside the services. ``failures``: what failed, shown on the page."""
        meowctl = Path(self._binaries["sync-service"]).parent / "meowctl" if getattr(self, "_binaries", None) else None
        if meowctl is None or not os.access(meowctl, os.X_OK):
            return None
        directory = tempfile.mkdtemp(prefix="meowcare-report.")
        known = sorted({c for c in [self._admin_credential, *self.credentials.values()] if c and len(c) >= 6}, key=len, reverse=True)
        files: Dict[str, str] = {"frames.txt": self.trace.report_text()}
        if self.cloud is not None:
            files["cloud.log"] = "\n".join(self.cloud.log_lines())
        for name, device in self.devices.items():
            files[f"{name}.log"] = "\n".join(device.log_lines())
        if self.running and self.cloud is not None:
            try:
                files["cloud-requests.jsonl"] = "\n".join(json.dumps(e, sort_keys=True) for e in self.cloud.request_log(limit=10000))
            except MeowError:
                pass
        failing = [{"check": "test", "explanation": text} for text in failures or []]
        files["failures.json"] = json.dumps(failing)
        for name, text in files.items():
            with open(os.path.join(directory, name), "w", encoding="utf-8") as handle:
                handle.write(self._redact(text, known))
        page = os.path.join(directory, "report.html")
        subprocess.run([str(meowctl), "report", "--dir", directory, "--failures", os.path.join(directory, "failures.json"),
                        "--title", "MeowCare cluster", "-o", page], check=True, capture_output=True, timeout=120)
        return page

    @staticmethod
    def _redact(text: str, known: List[str]) -> str:
        for credential in known:
            text = text.replace(credential, "<redacted>")
        return text

    def __repr__(self) -> str:
        devices = ", ".join(f"{name}={device.user}" for name, device in self.devices.items())
        return f"Cluster({self._lifetime.description}, devices: {devices or 'none'})"
