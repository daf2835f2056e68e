"""Events as an iterator, on a connection of their own.

A subscription gets its own connection so that events never interleave with a test's requests
and a slow request never delays an event. Iteration never hangs a test: ``__next__`` raises
:class:`~meowcare_testing.errors.TimedOut` when no event arrives within ``timeout`` seconds.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence

from .errors import TimedOut
from .wire import Connection


@dataclass(frozen=True)
class Event:
    """One event: its name (``remoteChange``, ``eventChanged``, ``databaseChanged``…), ``seq`` and ``data``."""

    name: str
    seq: int
    data: Dict[str, Any]
    raw: Dict[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_message(cls, message: Dict[str, Any]) -> "Event":
        return cls(str(message.get("event")), int(message.get("seq") or 0), dict(message.get("data") or {}), message)


class EventStream:
    """Events of the given topics, in the order the service sent them. Close it (or use ``with``)."""

    def __init__(self, connection: Connection, topics: Sequence[str], timeout: float = 30.0):
        self._connection = connection
        self.timeout = timeout
        self.topics: List[str] = list(connection.call("subscribe", {"topics": list(topics)})["topics"])

    def next(self, timeout: Optional[float] = None) -> Optional[Event]:
        """The next event, or None when none arrives within ``timeout`` (default: the stream's)."""
        message = self._connection.next_event(self.timeout if timeout is None else timeout)
        return Event.from_message(message) if message is not None else None

    def __iter__(self) -> Iterator[Event]:
        return self

    def __next__(self) -> Event:
        event = self.next()
        if event is None:
            raise TimedOut("timedOut", f"No event on {', '.join(self.topics)} within {self.timeout} s.", {"topics": self.topics})
        return event

    def wait_for(self, name: Optional[str] = None, where: Optional[Callable[[Event], bool]] = None,
                 timeout: Optional[float] = None) -> Event:
        """The first event named ``name`` (and matching ``where``); others are skipped.

        Raises :class:`TimedOut` listing the events it skipped, so a wrong expectation shows what
        did arrive.
        """
        limit = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + limit
        skipped: List[str] = []
        while True:
            remaining = deadline - time.monotonic()
            event = self.next(max(0.0, remaining)) if remaining > 0 else None
            if event is None:
                raise TimedOut("timedOut", f"No {name or 'matching'} event within {limit} s; skipped: "
                               + (", ".join(skipped[-20:]) or "none"), {"skipped": skipped})
            if (name is None or event.name == name) and (where is None or where(event)):
                return event
            skipped.append(f"{event.name}#{event.seq}")

    def drain(self) -> List[Event]:
        """Every event already waiting, without blocking."""
        events: List[Event] = []
        while True:
            event = self.next(0.0)
            if event is None:
                return events
            events.append(event)

    def close(self) -> None:
        self._connection.close()

    def __enter__(self) -> "EventStream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
