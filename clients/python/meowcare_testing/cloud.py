"""The cloud: typed access to the sync-service, as its admin (:class:`Cloud`) or as a user (:class:`CloudUser`).

The admin ops are how a test arranges the server's side — faults, held requests, the clock,
limits, snapshots — and reads what happened (the request log). A user's client is how a test
looks at what the server holds for that user, the way a device's mirror sees it.
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import secrets
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Optional, Union

from .base import ServiceClient, camel_keys, seconds_since_1970, service_log_lines
from .events import EventStream

if TYPE_CHECKING:  # pragma: no cover
    from .process import ServiceProcess

CORE_DATA_ZONE = "com.apple.coredata.cloudkit.zone"


class CloudUser(ServiceClient):
    """A connection to the cloud as one user: their private and shared databases."""

    def __init__(self, user: str, socket_path: str, credential: str, **kwargs: Any):
        super().__init__(f"cloud as {user}", socket_path, credential=credential, client_name=f"meowcare-testing (as {user})", **kwargs)
        self.user = user

    def zones(self, database: str = "private") -> List[Dict[str, Any]]:
        """Every zone of ``database`` this user sees (``zones.fetch``)."""
        return list(self.call("zones.fetch", {"database": database})["zones"])

    def changed_zones(self, database: str) -> List[Dict[str, Any]]:
        """The zones ``changes.fetchDatabase`` from nil lists (custom zones; shared: accepted ones)."""
        zones: List[Dict[str, Any]] = []
        since = None
        while True:
            page = self.call("changes.fetchDatabase", {"database": database, "since": since})
            zones += page.get("changedZones") or []
            if not page.get("moreComing"):
                return zones
            since = page.get("token")

    def records(self, database: str = "private", zone_name: str = CORE_DATA_ZONE, owner_name: Optional[str] = None) -> List[Dict[str, Any]]:
        """The live records of one zone (``changes.fetchZone`` from nil, every page)."""
        zone_id: Dict[str, Any] = {"zoneName": zone_name}
        if owner_name is not None:
            zone_id["ownerName"] = owner_name
        found: List[Dict[str, Any]] = []
        token = None
        while True:
            page = self.call("changes.fetchZone", {"database": database, "zoneID": zone_id, "since": token, "limit": 1000})
            found += page.get("changed") or []
            if not page.get("moreComing"):
                return found
            token = page.get("token")

    def records_modify(self, database: str, saves: Optional[List[Dict[str, Any]]] = None,
                       deletes: Optional[List[Dict[str, Any]]] = None, **options: Any) -> Dict[str, Any]:
        """``records.modify`` (``save_policy=``, ``atomic=``… as keywords); per-item errors raise :class:`PartialFailure`."""
        return self.call("records.modify", {"database": database, "saves": saves or [], "deletes": deletes or [], **camel_keys(options)})

    def records_fetch(self, database: str, record_ids: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
        return list(self.call("records.fetch", {"database": database, "recordIDs": record_ids})["records"])

    def shares_invitations(self) -> List[Dict[str, Any]]:
        return list(self.call("shares.invitations")["invitations"])

    def shares_owned(self) -> List[Dict[str, Any]]:
        return list(self.call("shares.owned")["shares"])

    def subscriptions_save(self, database: str, subscriptions: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
        """``subscriptions.save``: ``[{"subscriptionID", "subscriptionType": "database"|"recordZone"|"query", …}]`` as stored."""
        return list(self.call("subscriptions.save", {"database": database, "subscriptions": subscriptions})["subscriptions"])

    def subscriptions_fetch(self, database: str, subscription_ids: Optional[List[str]] = None) -> List[Dict[str, Any]]:
        params: Dict[str, Any] = {"database": database}
        if subscription_ids is not None:
            params["subscriptionIDs"] = subscription_ids
        return list(self.call("subscriptions.fetch", params)["subscriptions"])

    def subscriptions_delete(self, database: str, subscription_ids: List[str]) -> List[str]:
        return list(self.call("subscriptions.delete", {"database": database, "subscriptionIDs": subscription_ids})["deleted"])

    def events(self, *topics: str, timeout: float = 30.0) -> EventStream:
        """``databaseChanged`` pushes for this user (topic ``databaseChanges``; ``"notifications"`` for subscriptions') on a new connection."""
        return EventStream(self.open_connection(f"meowcare-testing ({self.user} events)"), topics or ("databaseChanges",), timeout)


class Hold:
    """An armed ``hold`` fault (see :meth:`Cloud.hold`): wait for the held request, then release it."""

    def __init__(self, cloud: "Cloud"):
        self._cloud = cloud
        self.released: Optional[int] = None

    def wait(self, count: int = 1, timeout_seconds: float = 10) -> int:
        """Returns once ``count`` requests are held (``admin.awaitHeldRequests``); :class:`TimedOut` otherwise."""
        return int(self._cloud.await_held_requests(count, timeout_seconds)["held"])

    def release(self) -> int:
        self.released = int(self._cloud.release_held_requests()["released"])
        return self.released


class Cloud(ServiceClient):
    """The cluster's sync-service, as its admin. ``as_user(name)`` gives a user's view."""

    def __init__(self, socket_path: str, *, admin_credential: str, credentials: Dict[str, str],
                 process: Optional["ServiceProcess"] = None, log_path: Optional[str] = None,
                 on_user_created: Optional[Callable[[str, str], None]] = None, **kwargs: Any):
        super().__init__("cloud", socket_path, credential=admin_credential, client_name="meowcare-testing (admin)", **kwargs)
        self._user_kwargs = kwargs
        self._credentials = credentials
        self._on_user_created = on_user_created
        self.process = process
        self.log_path = log_path

    def __repr__(self) -> str:
        return f"Cloud(socket={self.socket!r})"

    def log_lines(self) -> List[str]:
        """The service's log so far (a process of this cluster, or the deployment's log file)."""
        return service_log_lines(self.process, self.log_path)

    def credential(self, user: str) -> str:
        """The credential of a user this cluster made (KeyError for others)."""
        return self._credentials[user]

    def as_user(self, user: str) -> CloudUser:
        """A client of the cloud acting as ``user`` (a user this cluster knows the credential of)."""
        return CloudUser(user, self.socket, self._credentials[user], **self._user_kwargs)

    # -- users ------------------------------------------------------------------------------

    def create_user(self, user: str, credential: Optional[str] = None) -> Dict[str, Any]:
        """``admin.createUser``; without a credential one is made. The cluster remembers it."""
        credential = credential or f"{user}-{secrets.token_hex(12)}"
        result = self.call("admin.createUser", {"user": user, "credential": credential})
        self._credentials[user] = credential
        if self._on_user_created is not None:
            self._on_user_created(user, credential)
        return result

    def set_account_status(self, user: str, status: str) -> Dict[str, Any]:
        """``available``, ``noAccount`` or ``temporarilyUnavailable``."""
        return self.call("admin.setAccountStatus", {"user": user, "status": status})

    def list_users(self) -> List[Dict[str, Any]]:
        return list(self.call("admin.listUsers")["users"])

    # -- state ------------------------------------------------------------------------------

    def reset(self, scope: str = "all", *, user: Optional[str] = None, zone_id: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
        """``admin.reset``: ``all``, ``user`` (with ``user``), ``zone`` (with ``zone_id``) or ``encryptedData``."""
        params: Dict[str, Any] = {"scope": scope}
        if user is not None:
            params["user"] = user
        if zone_id is not None:
            params["zoneID"] = zone_id
        return self.call("admin.reset", params)

    def export_snapshot(self, include_credentials: bool = False, path: Optional[str] = None) -> Dict[str, Any]:
        params: Dict[str, Any] = {"includeCredentials": include_credentials}
        if path is not None:
            params["path"] = path
        return self.call("admin.exportSnapshot", params)

    def import_snapshot(self, snapshot: Optional[Dict[str, Any]] = None, path: Optional[str] = None) -> Dict[str, Any]:
        """Exactly one of ``snapshot`` (as ``export_snapshot`` answered it) or ``path``."""
        if (snapshot is None) == (path is None):
            raise ValueError("import_snapshot takes exactly one of snapshot= or path=")
        if snapshot is not None and "snapshot" in snapshot and "format" not in snapshot:
            snapshot = snapshot["snapshot"]
        return self.call("admin.importSnapshot", {"snapshot": snapshot} if snapshot is not None else {"path": path})

    def set_clock(self, now: Union[None, int, float, _dt.datetime]) -> Dict[str, Any]:
        """``admin.setClock``: fix the cloud's time (None: the real clock again). ``{"now", "fixed"}``."""
        return self.call("admin.setClock", {"now": seconds_since_1970(now)})

    def advance_clock(self, seconds: float) -> Dict[str, Any]:
        return self.call("admin.setClock", {"advanceSeconds": seconds})

    def set_limits(self, **limits: int) -> Dict[str, Any]:
        """``admin.setLimits(max_items_per_request=10)`` (or camelCase names): every limit after."""
        return self.call("admin.setLimits", camel_keys(limits))

    def expire_change_tokens(self) -> Dict[str, Any]:
        return self.call("admin.expireChangeTokens")

    def schema(self) -> Dict[str, Dict[str, str]]:
        """The field types saves have defined: ``{recordType: {field: CloudKit type name}}``."""
        return dict(self.call("admin.schema")["recordTypes"])

    def export_schema(self, environment: str = "development") -> str:
        """An environment's schema in CloudKit's schema language (``DEFINE SCHEMA`` …)."""
        return str(self.call("admin.exportSchema", {"environment": environment})["text"])

    def import_schema(self, text: str) -> Dict[str, Any]:
        """Schema-language text added to development's schema: ``{"added", "newRecordTypes", "unchanged"}``."""
        return self.call("admin.importSchema", {"text": text})

    def diff_schema(self) -> Dict[str, Any]:
        return self.call("admin.diffSchema")

    def deploy_schema(self) -> Dict[str, Any]:
        return self.call("admin.deploySchema")

    def reset_development(self) -> Dict[str, Any]:
        return self.call("admin.resetDevelopment")

    # -- faults and interleavings ---------------------------------------------------------------

    def inject_fault(self, code: Optional[str] = None, **fault: Any) -> List[Dict[str, Any]]:
        """``admin.injectFault(code="requestRateLimited", op="records.modify", user="olivia", retry_after_seconds=3)``.

        Keywords are the fault's fields in snake_case or camelCase. Returns the armed faults.
        """
        params = camel_keys(fault)
        if code is not None:
            params["code"] = code
        return list(self.call("admin.injectFault", params)["faults"])

    def clear_faults(self) -> Dict[str, Any]:
        return self.call("admin.clearFaults")

    def await_held_requests(self, count: int = 1, timeout_seconds: float = 10) -> Dict[str, Any]:
        return self.call("admin.awaitHeldRequests", {"count": count, "timeoutSeconds": timeout_seconds},
                         timeout=timeout_seconds + self._timeout)

    def release_held_requests(self) -> Dict[str, Any]:
        return self.call("admin.releaseHeldRequests")

    @contextlib.contextmanager
    def hold(self, op: str, *, before_commit: bool = False, **match: Any) -> Iterator[Hold]:
        """Holds the next matching request at the server until the block ends (then releases it).

        ``match`` narrows the fault as ``admin.injectFault`` does (``user``, ``zone``, ``record_type``…);
        ``before_commit`` holds a ``records.modify`` after its verdicts, before it commits.

        ::

            with cluster.cloud.hold("records.modify", user=a.user) as held:
                sending = a.call_in_background("sync.send")
                held.wait()                     # the send's request is at the server now
                b.set(event.object_id, {"note": "meanwhile"})
            sending.result()
        """
        self.inject_fault(op=op, effect="holdBeforeCommit" if before_commit else "hold", **match)
        held = Hold(self)
        try:
            yield held
        finally:
            if held.released is None:
                held.release()

    def hold_pushes(self) -> Dict[str, Any]:
        return self.call("admin.holdPushes")

    def release_pushes(self, drop: bool = False) -> Dict[str, Any]:
        return self.call("admin.releasePushes", {"drop": drop})

    def request_log(self, after: Optional[int] = None, limit: Optional[int] = None) -> List[Dict[str, Any]]:
        """The cloud's request log (last 10,000 requests): who asked what, the verdict, permissions."""
        params: Dict[str, Any] = {"form": "entries"}
        if after is not None:
            params["after"] = after
        if limit is not None:
            params["limit"] = limit
        return list(self.call("admin.requestLog", params)["entries"])
