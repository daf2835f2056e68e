"""Shared helpers. The fixtures themselves (meow_cluster, meow_cluster_factory) come from the
installed package's pytest plugin, as they do for an app team."""
from typing import Any, Dict, Optional

pytest_plugins = ["pytester"]


def event_values(event_id: str, *, session: Optional[str] = None, note: Optional[str] = None, value: float = 120) -> Dict[str, Any]:
    """A CareEvent's values as the MeowCare model takes them."""
    values: Dict[str, Any] = {"id": event_id, "eventTypeRaw": "bloodGlucose", "occurredAt": "2026-07-27T09:00:00Z",
                              "updatedAt": "2026-07-27T09:00:00Z", "value": value}
    if session is not None:
        values["session"] = session
    if note is not None:
        values["note"] = note
    return values
