"""A service started as a child process, its output collected line by line.

The output (stderr and stdout together: the services log JSON lines on stderr, and start-up
refusals are plain lines there too) is read by a thread into memory and into a log file, so a
failing start or a failing test can show the service's own words. ``MEOW_EXIT_WITH_PID`` is set
to this Python process: a service stops by itself once the test run has ended, even a run killed
with SIGKILL that never reached its clean-up.
"""
from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from typing import IO, Dict, List, Optional, Sequence


class ServiceProcess:
    """One running executable; ``lines`` is everything it wrote so far."""

    def __init__(self, name: str, argv: Sequence[str], *, log_path: Optional[str] = None,
                 environment: Optional[Dict[str, str]] = None):
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        self._lines: List[str] = []
        self._condition = threading.Condition()
        self._drained = False
        env = dict(os.environ)
        env["MEOW_EXIT_WITH_PID"] = str(os.getpid())
        env.update(environment or {})
        self._log: Optional[IO[str]] = open(log_path, "a", encoding="utf-8") if log_path else None
        self._popen = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                       stderr=subprocess.STDOUT, env=env, close_fds=True)
        self.pid = self._popen.pid
        self._reader = threading.Thread(target=self._drain, name=f"meowcare log {name}", daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        assert self._popen.stdout is not None
        for raw in self._popen.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            with self._condition:
                self._lines.append(line)
                if self._log is not None:
                    self._log.write(line + "\n")
                    self._log.flush()
                self._condition.notify_all()
        self._popen.stdout.close()
        with self._condition:
            self._drained = True
            if self._log is not None:
                self._log.close()
                self._log = None
            self._condition.notify_all()

    @property
    def lines(self) -> List[str]:
        """Every line the service wrote so far."""
        with self._condition:
            return list(self._lines)

    @property
    def exit_status(self) -> Optional[int]:
        """None while running; the exit code, or 128 + signal as shells report a killed process."""
        code = self._popen.poll()
        if code is None:
            return None
        return 128 - code if code < 0 else code

    @property
    def is_running(self) -> bool:
        return self._popen.poll() is None

    def wait_for_activity(self, seen: int, timeout: float) -> None:
        """Returns when the service wrote past line ``seen``, its output ended, or ``timeout`` passed.

        Readiness checks wait here between attempts: a service that logs "ready" or dies wakes
        the wait at once, instead of a fixed sleep deciding how long a start takes.
        """
        with self._condition:
            self._condition.wait_for(lambda: len(self._lines) > seen or self._drained, timeout=timeout)

    def line_count(self) -> int:
        with self._condition:
            return len(self._lines)

    def terminate(self) -> None:
        """SIGTERM without waiting (stopping several services at once)."""
        if self.is_running:
            try:
                self._popen.send_signal(signal.SIGTERM)
            except ProcessLookupError:
                pass

    def stop(self, timeout: float = 15.0) -> Optional[int]:
        """SIGTERM (a clean stop: the service removes its socket), then SIGKILL if it lingers."""
        if self.is_running:
            self.terminate()
            try:
                self._popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        self._finish_output()
        return self.exit_status

    def kill(self) -> None:
        """SIGKILL, as a crash: no clean-up in the service."""
        if self.is_running:
            try:
                self._popen.kill()
            except ProcessLookupError:
                pass
        try:
            self._popen.wait(10)
        except subprocess.TimeoutExpired:  # pragma: no cover - a process that survives SIGKILL
            pass
        self._finish_output()

    def _finish_output(self) -> None:
        # The pipe ends at exit; the last lines arrive right after it.
        deadline = time.monotonic() + 2
        with self._condition:
            self._condition.wait_for(lambda: self._drained, timeout=max(0.0, deadline - time.monotonic()))

    def __del__(self) -> None:  # a process nobody stopped is never left behind
        try:
            if self._popen.poll() is None:
                self._popen.kill()
        except Exception:
            pass
