"""Shared helpers. The fixtures themselves (meow_cluster, meow_cluster_factory) come from the
installed package's pytest plugin, as they do for an app team."""
import os
import pathlib
from typing import Any, Dict, Optional

pytest_plugins = ["pytester"]

# These tests live in the repository: when the package was installed elsewhere (a fresh venv run
# from another directory), its services are still this checkout's build.
_BUILD = pathlib.Path(__file__).resolve().parents[3] / ".build" / "debug"
if "MEOWCARE_BIN_DIR" not in os.environ and (_BUILD / "store-service").is_file():
    os.environ["MEOWCARE_BIN_DIR"] = str(_BUILD)


def event_values(event_id: str, *, session: Optional[str] = None, note: Optional[str] = None, value: float = 120) -> Dict[str, Any]:
    """A CareEvent's values as the MeowCare model takes them."""
    values: Dict[str, Any] = {"id": event_id, "eventTypeRaw": "bloodGlucose", "occurredAt": "2026-07-27T09:00:00Z",
                              "updatedAt": "2026-07-27T09:00:00Z", "value": value}
    if session is not None:
        values["session"] = session
    if note is not None:
        values["note"] = note
    return values
