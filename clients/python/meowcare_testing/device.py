"""A device: typed access to one store-service (its Core Data stack and its cloud mirror).

Method names follow the op names (``sync.now`` → ``sync_now``, ``share.setPermission`` →
``share_set_permission``) so docs/protocol-*.md is the reference for what each does; results
are the ops' JSON results, except objects (:class:`ManagedObject`) and saves (:class:`SaveResult`),
which tests read most. A few conveniences (``insert``, ``set``, ``delete`` on the device) do the
open-context/save/close round a test otherwise repeats.
"""
from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

from .base import ServiceClient, seconds_since_1970, service_log_lines
from .events import EventStream

if TYPE_CHECKING:  # pragma: no cover
    from .process import ServiceProcess

Values = Mapping[str, Any]
#: Sort keys: ``"occurredAt"`` (ascending), ``"-occurredAt"`` (descending), or the protocol's dict.
Sort = Union[str, Mapping[str, Any]]


@dataclass(frozen=True)
class ManagedObject:
    """An object as the store-service reports it (``ObjectRecord``); ``obj["note"]`` reads a value."""

    object_id: str
    entity: str
    store: Optional[str]
    version: int
    uuid: Optional[str]
    zone: Optional[str]
    zone_owner: Optional[str]
    values: Dict[str, Any]
    raw: Dict[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, record: Mapping[str, Any]) -> "ManagedObject":
        return cls(object_id=str(record.get("objectID")), entity=str(record.get("entity")), store=record.get("store"),
                   version=int(record.get("version") or 0), uuid=record.get("uuid"), zone=record.get("zone"),
                   zone_owner=record.get("zoneOwner"), values=dict(record.get("values") or {}), raw=dict(record))

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)


@dataclass(frozen=True)
class SaveResult:
    """``context.save``'s result; ``object_ids`` maps each temporary ID to its permanent one."""

    raw: Dict[str, Any]

    @property
    def inserted(self) -> List[Dict[str, Any]]:
        return list(self.raw.get("inserted") or [])

    @property
    def updated(self) -> List[str]:
        return list(self.raw.get("updated") or [])

    @property
    def deleted(self) -> List[str]:
        return list(self.raw.get("deleted") or [])

    @property
    def merged(self) -> List[Dict[str, Any]]:
        return list(self.raw.get("merged") or [])

    @property
    def unexportable(self) -> List[str]:
        return list(self.raw.get("unexportable") or [])

    @property
    def object_ids(self) -> Dict[str, str]:
        ids = {entry["temporaryID"]: entry["objectID"] for entry in self.inserted if "temporaryID" in entry}
        for group in self.raw.get("insertedGroups") or []:
            ids.update(zip(group.get("temporaryIDs") or [], group.get("objectIDs") or []))
        return ids

    def permanent_id(self, temporary_id: str) -> str:
        """The permanent ID the save gave ``temporary_id`` (KeyError if it was not inserted here)."""
        return self.object_ids[temporary_id]


def _sort_descriptors(sort: Optional[Sequence[Sort]]) -> Optional[List[Dict[str, Any]]]:
    if sort is None:
        return None
    if isinstance(sort, (str, Mapping)):
        sort = [sort]
    descriptors = []
    for key in sort:
        if isinstance(key, Mapping):
            descriptors.append(dict(key))
        elif key.startswith("-"):
            descriptors.append({"key": key[1:], "ascending": False})
        else:
            descriptors.append({"key": key, "ascending": True})
    return descriptors


def fetch_params(entity: str, predicate: Optional[str], arguments: Sequence[Any], *, sort: Optional[Sequence[Sort]] = None,
                 limit: Optional[int] = None, offset: Optional[int] = None, stores: Optional[Sequence[str]] = None,
                 context: Optional[str] = None) -> Dict[str, Any]:
    params: Dict[str, Any] = {"entity": entity}
    if predicate is not None:
        params["predicate"] = predicate
    if arguments:
        params["arguments"] = list(arguments)
    descriptors = _sort_descriptors(sort)
    if descriptors is not None:
        params["sortDescriptors"] = descriptors
    if limit is not None:
        params["limit"] = limit
    if offset is not None:
        params["offset"] = offset
    if stores is not None:
        params["stores"] = [stores] if isinstance(stores, str) else list(stores)
    if context is not None:
        params["context"] = context
    return params


class Context:
    """A managed object context (``context.open``) on the device's connection; ``with`` closes it.

    Unsaved work lives in the service, on the connection that opened the context, so a context
    is used from the device client that made it.
    """

    def __init__(self, device: "Device", result: Mapping[str, Any]):
        self.device = device
        self.id: str = str(result["context"])
        self.name: Optional[str] = result.get("name")
        self.author: Optional[str] = result.get("author")
        self.merge_policy: Optional[str] = result.get("mergePolicy")
        self.closed = False

    def _call(self, op: str, params: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        return self.device.call(op, {"context": self.id, **(params or {})})

    def insert(self, entity: str, values: Optional[Values] = None, *, store: Optional[str] = None, uuid: Optional[str] = None,
               zone: Optional[str] = None, zone_owner: Optional[str] = None) -> str:
        """``object.insert``: the new object's temporary ID (permanent after :meth:`save`)."""
        params: Dict[str, Any] = {"entity": entity, "values": dict(values or {})}
        for key, value in (("store", store), ("uuid", uuid), ("zone", zone), ("zoneOwner", zone_owner)):
            if value is not None:
                params[key] = value
        return str(self._call("object.insert", params)["objectID"])

    def insert_many(self, objects: Iterable[Mapping[str, Any]]) -> List[str]:
        """``object.insert`` with ``objects`` (all or none): the temporary IDs in order."""
        return list(self._call("object.insert", {"objects": [dict(item) for item in objects]})["objectIDs"])

    def set(self, object_id: str, values: Values) -> ManagedObject:
        """``object.set`` (``None`` clears a value): the object as this context now sees it."""
        return ManagedObject.from_json(self._call("object.set", {"objectID": object_id, "values": dict(values)}))

    def delete(self, object_id: str) -> Dict[str, Any]:
        return self._call("object.delete", {"objectID": object_id})

    def assign(self, object_id: str, store: str) -> Dict[str, Any]:
        """``object.assign``; a saved object raises :class:`InvalidReassignment`, as Core Data does."""
        return self._call("object.assign", {"objectID": object_id, "store": store})

    def get(self, object_id: str) -> ManagedObject:
        return ManagedObject.from_json(self._call("object.get", {"objectID": object_id}))

    def obtain_permanent_ids(self, object_ids: Sequence[str]) -> List[Dict[str, Any]]:
        return list(self._call("object.obtainPermanentIDs", {"objectIDs": list(object_ids)})["objects"])

    def move_to_store(self, object_id: str, store: str, values: Optional[Values] = None) -> Dict[str, Any]:
        params: Dict[str, Any] = {"objectID": object_id, "store": store}
        if values is not None:
            params["values"] = dict(values)
        return self._call("object.moveToStore", params)

    def fetch(self, entity: str, predicate: Optional[str] = None, *arguments: Any, sort: Optional[Sequence[Sort]] = None,
              limit: Optional[int] = None, offset: Optional[int] = None, stores: Optional[Sequence[str]] = None) -> List[ManagedObject]:
        """``fetch`` registering the results in this context (objects it holds come as it sees them)."""
        params = fetch_params(entity, predicate, arguments, sort=sort, limit=limit, offset=offset, stores=stores, context=self.id)
        return [ManagedObject.from_json(item) for item in self.device.call("fetch", params)["objects"]]

    def save(self, report: str = "objects") -> SaveResult:
        """``context.save``; raises the save's typed error (``MergeConflict``, ``PermissionFailure``…)."""
        return SaveResult(self._call("context.save", {"report": report}))

    def refresh(self, object_ids: Optional[Sequence[str]] = None) -> Dict[str, Any]:
        return self._call("context.refresh", {} if object_ids is None else {"objectIDs": list(object_ids)})

    def rollback(self) -> Dict[str, Any]:
        return self._call("context.rollback")

    def reset(self) -> Dict[str, Any]:
        return self._call("context.reset")

    def repair_orphans(self) -> Dict[str, Any]:
        """``repair.orphans`` in this context, as the app does it (the caller saves)."""
        return self._call("repair.orphans")

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._call("context.close")

    def __enter__(self) -> "Context":
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            self.close()
        except Exception:
            if exc[0] is None:  # a failing test's own error stays the one reported
                raise


class Device(ServiceClient):
    """One device of a cluster: a store-service mirroring to the cloud as ``user``."""

    #: The merge policy of the conveniences' own contexts (the policy apps usually set).
    CONVENIENCE_MERGE_POLICY = "mergeByPropertyObjectTrump"

    def __init__(self, name: str, socket_path: str, *, user: str, process: Optional["ServiceProcess"] = None,
                 log_path: Optional[str] = None, **kwargs: Any):
        super().__init__(f"device {name}", socket_path, client_name=f"meowcare-testing ({name})", **kwargs)
        #: the device's name in the cluster (also its ``--device-name``)
        self.name = name
        #: the cloud user this device mirrors (the real name: use it when inviting)
        self.user = user
        #: the running process (None in external mode)
        self.process = process
        self.log_path = log_path

    def __repr__(self) -> str:
        return f"Device({self.name!r}, user={self.user!r}, socket={self.socket!r})"

    def connect(self) -> "Device":
        """Another client of the same device on a connection of its own (for concurrent requests)."""
        other = Device(self.name, self.socket, user=self.user, process=self.process, log_path=self.log_path,
                       lifetime=self._lifetime, trace=self._trace, timeout=self._timeout)
        other.connection  # connect now: a failure belongs to this call
        return other

    def log_lines(self) -> List[str]:
        """The service's log so far (a process of this cluster, or the deployment's log file)."""
        return service_log_lines(self.process, self.log_path)

    # -- contexts and objects -------------------------------------------------------------

    def context(self, name: str = "test", *, merge_policy: str = "error", author: Optional[str] = None) -> Context:
        """``context.open`` (Core Data's default merge policy ``error`` unless given)."""
        params: Dict[str, Any] = {"name": name, "mergePolicy": merge_policy}
        if author is not None:
            params["author"] = author
        return Context(self, self.call("context.open", params))

    def insert(self, entity: str, values: Optional[Values] = None, *, store: Optional[str] = None,
               uuid: Optional[str] = None) -> ManagedObject:
        """Inserts one object in a context of its own, saves it and returns it as stored."""
        with self.context("insert", merge_policy=self.CONVENIENCE_MERGE_POLICY) as context:
            temporary = context.insert(entity, values, store=store, uuid=uuid)
            saved = context.save()
        return self.get(saved.permanent_id(temporary))

    def set(self, object_id: str, values: Values) -> ManagedObject:
        """Sets values on a saved object in a context of its own, saves, returns it as stored."""
        with self.context("set", merge_policy=self.CONVENIENCE_MERGE_POLICY) as context:
            context.set(object_id, values)
            context.save()
        return self.get(object_id)

    def delete(self, object_id: str) -> SaveResult:
        """Deletes a saved object (delete rules apply) in a context of its own and saves."""
        with self.context("delete", merge_policy=self.CONVENIENCE_MERGE_POLICY) as context:
            context.delete(object_id)
            return context.save()

    def get(self, object_id: str) -> ManagedObject:
        """``object.get`` without a context: the object as stored."""
        return ManagedObject.from_json(self.call("object.get", {"objectID": object_id}))

    def fetch(self, entity: str, predicate: Optional[str] = None, *arguments: Any, sort: Optional[Sequence[Sort]] = None,
              limit: Optional[int] = None, offset: Optional[int] = None, stores: Optional[Sequence[str]] = None) -> List[ManagedObject]:
        """``fetch``: ``device.fetch("CareEvent", "session.id == %@ AND value > %@", "s1", 100, sort=["-occurredAt"])``."""
        params = fetch_params(entity, predicate, arguments, sort=sort, limit=limit, offset=offset, stores=stores)
        return [ManagedObject.from_json(item) for item in self.call("fetch", params)["objects"]]

    def fetch_one(self, entity: str, predicate: Optional[str] = None, *arguments: Any,
                  stores: Optional[Sequence[str]] = None) -> Optional[ManagedObject]:
        """The first object matching, or None."""
        found = self.fetch(entity, predicate, *arguments, limit=1, stores=stores)
        return found[0] if found else None

    def count(self, entity: str, predicate: Optional[str] = None, *arguments: Any, stores: Optional[Sequence[str]] = None) -> int:
        return int(self.call("fetch.count", fetch_params(entity, predicate, arguments, stores=stores))["count"])

    def rows(self, entity: str, predicate: Optional[str] = None, *arguments: Any, stores: Optional[Sequence[str]] = None,
             sort: Optional[Sequence[Sort]] = None, page: int = 2000) -> List[Dict[str, Any]]:
        """Every stored row of ``entity`` as ``{column: value}`` (``resultFormat: rows``, paged)."""
        result: List[Dict[str, Any]] = []
        while True:
            params = fetch_params(entity, predicate, arguments, sort=sort, stores=stores, limit=page, offset=len(result))
            params["resultFormat"] = "rows"
            reply = self.call("fetch", params)
            columns = reply.get("columns") or []
            batch = reply.get("rows") or []
            result += [dict(zip(columns, row)) for row in batch]
            if len(batch) < page:
                return result

    # -- stores, history, model, permissions ----------------------------------------------

    def store_list(self) -> Dict[str, Any]:
        return self.call("store.list")

    def model_get(self) -> Dict[str, Any]:
        return self.call("model.get")

    def history_fetch(self, store: Optional[str] = None, after_token: Optional[int] = None, limit: Optional[int] = None) -> Dict[str, Any]:
        params: Dict[str, Any] = {}
        for key, value in (("store", store), ("afterToken", after_token), ("limit", limit)):
            if value is not None:
                params[key] = value
        return self.call("history.fetch", params)

    def history_purge(self, store: str, before_token: int) -> Dict[str, Any]:
        return self.call("history.purge", {"store": store, "beforeToken": before_token})

    def repair_orphans(self) -> Dict[str, Any]:
        """``repair.orphans`` directly in the stores (what start-up runs)."""
        return self.call("repair.orphans")

    def permission_check(self, object_ids: Optional[Sequence[str]] = None) -> Dict[str, Any]:
        return self.call("permission.check", {} if object_ids is None else {"objectIDs": list(object_ids)})

    def share_list(self) -> List[Dict[str, Any]]:
        """The shared store's share metadata: ``[{"zoneName", "ownerName", "permission"}]``."""
        return list(self.call("share.list")["shares"])

    def share_set_metadata(self, zone_name: str, permission: str, *, owner_name: Optional[str] = None,
                           object_ids: Optional[Sequence[str]] = None) -> Dict[str, Any]:
        params: Dict[str, Any] = {"zoneName": zone_name, "permission": permission}
        if owner_name is not None:
            params["ownerName"] = owner_name
        if object_ids is not None:
            params["objectIDs"] = list(object_ids)
        return self.call("share.setMetadata", params)

    # -- the mirror -----------------------------------------------------------------------

    def sync_send(self) -> Dict[str, Any]:
        return self.call("sync.send")

    def sync_fetch(self) -> Dict[str, Any]:
        return self.call("sync.fetch")

    def sync_now(self) -> Dict[str, Any]:
        """``sync.send`` then ``sync.fetch``: ``{"send": {...}, "fetch": {...}}``."""
        return self.call("sync.now")

    def sync_status(self) -> Dict[str, Any]:
        return self.call("sync.status")

    def initialize_schema(self, dry_run: bool = False) -> Dict[str, Any]:
        """``sync.initializeSchema`` (NSPersistentCloudKitContainer's ``initializeCloudKitSchema``)."""
        return self.call("sync.initializeSchema", {"dryRun": dry_run})

    def pending(self) -> int:
        """Changes queued for the cloud, over both stores (``sync.status``)."""
        return sum(int(store.get("pending") or 0) for store in self.sync_status().get("stores") or [])

    # -- sharing --------------------------------------------------------------------------

    def share_create(self, object_id: str, participants: Union[None, Mapping[str, str], Sequence[Mapping[str, str]]] = None) -> Dict[str, Any]:
        """Shares a saved private-store object; ``participants`` as ``{user: permission}`` or the op's list.

        The result has ``zoneName`` (what the participant accepts), ``rootRecordName``, ``share``.
        """
        params: Dict[str, Any] = {"objectID": object_id}
        if participants is not None:
            if isinstance(participants, Mapping):
                params["participants"] = [{"user": user, "permission": permission} for user, permission in participants.items()]
            else:
                params["participants"] = [dict(item) for item in participants]
        return self.call("share.create", params)

    def share_invite(self, zone_name: str, user: str, permission: str) -> Dict[str, Any]:
        return self.call("share.invite", {"zoneName": zone_name, "user": user, "permission": permission})

    def share_set_permission(self, zone_name: str, user: str, permission: str) -> Dict[str, Any]:
        return self.call("share.setPermission", {"zoneName": zone_name, "user": user, "permission": permission})

    def share_remove_participant(self, zone_name: str, user: str) -> Dict[str, Any]:
        return self.call("share.removeParticipant", {"zoneName": zone_name, "user": user})

    def share_stop(self, zone_name: str) -> Dict[str, Any]:
        return self.call("share.stop", {"zoneName": zone_name})

    def share_owned(self) -> List[Dict[str, Any]]:
        return list(self.call("share.owned")["shares"])

    def share_invitations(self) -> List[Dict[str, Any]]:
        return list(self.call("share.invitations")["invitations"])

    def share_accept(self, zone_name: str, owner_name: str) -> Dict[str, Any]:
        """Accepts a share and fetches it: its records land in this device's shared store."""
        return self.call("share.accept", {"zoneName": zone_name, "ownerName": owner_name})

    def share_leave(self, zone_name: str, owner_name: str) -> Dict[str, Any]:
        return self.call("share.leave", {"zoneName": zone_name, "ownerName": owner_name})

    def accept_invitations(self) -> List[Dict[str, Any]]:
        """Accepts every pending invitation of this device's user; the ``share.accept`` results."""
        accepted = []
        for invitation in self.share_invitations():
            if invitation.get("acceptanceStatus") == "pending":
                zone = invitation["zoneID"]
                accepted.append(self.share_accept(zone["zoneName"], zone["ownerName"]))
        return accepted

    # -- account --------------------------------------------------------------------------

    def sign_out(self) -> Dict[str, Any]:
        return self.call("account.signOut")

    def sign_in(self, credential: Optional[str] = None) -> Dict[str, Any]:
        return self.call("account.signIn", {} if credential is None else {"credential": credential})

    # -- clock ----------------------------------------------------------------------------

    def clock(self) -> Dict[str, Any]:
        """``clock.set`` with ``{}``: the device's clock now, ``{"now", "offsetSeconds"}`` (0: not set)."""
        return self.call("clock.set", {})

    def set_clock(self, now: Union[None, int, float, _dt.datetime]) -> Dict[str, Any]:
        """``clock.set`` with ``now`` (seconds since 1970 or a datetime; None: the real clock again).

        The device's clock then runs on from that reading (two saves still get increasing times).
        Result ``{"now", "offsetSeconds"}``. A store-service built before ``clock.set`` raises
        :class:`~meowcare_testing.errors.UnknownOp`.
        """
        return self.call("clock.set", {"now": seconds_since_1970(now)})

    def advance_clock(self, seconds: float) -> Dict[str, Any]:
        """``clock.set`` with ``advanceSeconds`` (back when negative): the device's time moves at once."""
        return self.call("clock.set", {"advanceSeconds": seconds})

    # -- events ---------------------------------------------------------------------------

    def events(self, *topics: str, timeout: float = 30.0) -> EventStream:
        """Subscribes a new connection: ``remoteChange`` (default), ``cloudKitEvents``, ``service``."""
        return EventStream(self.open_connection(f"meowcare-testing ({self.name} events)"), topics or ("remoteChange",), timeout)
