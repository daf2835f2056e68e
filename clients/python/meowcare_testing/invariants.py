"""``meowctl doctor``'s checks, run through the same ops it uses (``store.list``, ``model.get``,
``share.list``, ``fetch`` as rows, ``sync.status``; on the cloud ``changes.fetchDatabase``).

Each check is one MeowCare bug class (seed 000's orphans, seed 002's wrong-store inserts,
cross-store links, exports stuck or refused), so a test that ends with ``assert_invariants``
catches them even when its own assertions did not look there. Kinds and wording follow
Services/MeowCtlKit/DoctorCommand.swift.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Set

from .errors import MeowError

if TYPE_CHECKING:  # pragma: no cover
    from .cloud import CloudUser
    from .device import Device

CORE_DATA_ZONE = "com.apple.coredata.cloudkit.zone"
DEFAULT_ZONE = "_defaultZone"


@dataclass(frozen=True)
class Finding:
    """One violation: what, where, and what to do about it."""

    kind: str
    summary: str
    fix: str
    store: Optional[str] = None
    object_id: Optional[str] = None
    zone: Optional[str] = None

    def text(self) -> str:
        return f"[{self.kind}] {self.summary}\n      fix: {self.fix}"


def _describe(entity: str, row: Dict[str, Any]) -> str:
    business_id = row.get("id")
    return f"{entity}{f' {business_id!r}' if business_id is not None else ''} ({row.get('objectID', '?')})"


def _store_uuid(object_id: str) -> Optional[str]:
    """``x-coredata://<storeUUID>/Entity/p1`` → the store UUID; temporary IDs have none."""
    if not object_id.startswith("x-coredata://"):
        return None
    rest = object_id[len("x-coredata://"):]
    slash = rest.find("/")
    return rest[:slash] if slash > 0 else None


def check_device(device: "Device") -> List[Finding]:
    """The device-side checks: store placement, relationships, orphans, the mirror's state."""
    findings: List[Finding] = []
    stores = device.store_list()["stores"]
    model = device.model_get()
    share_zones = {share["zoneName"] for share in device.share_list()}
    shared_store = next((store["name"] for store in stores if store.get("scope") == "shared"), None)
    store_of_uuid = {store["storeUUID"]: store["name"] for store in stores if store.get("storeUUID")}
    entities = model.get("entities") or []
    rows_by_entity = {entity["name"]: device.rows(entity["name"]) for entity in entities}

    for entity, rows in rows_by_entity.items():
        for row in rows:
            if shared_store is None or row.get("store") != shared_store:
                continue
            name, zone = _describe(entity, row), row.get("zone")
            if not zone:
                findings.append(Finding("wrongStore", f"{name} is in the {shared_store} store but in no share zone (seed 002: the mirror "
                                        "can never export it)", "Move it to the private store (object.moveToStore) and let new objects be "
                                        "routed deterministically.", shared_store, row.get("objectID")))
            elif zone in (CORE_DATA_ZONE, DEFAULT_ZONE):
                findings.append(Finding("sharedDefaultZone", f"{name} is in the shared store's {zone}, which the shared database refuses",
                                        "Move it to the private store, or into a real share zone.", shared_store, row.get("objectID"), zone))
            elif zone not in share_zones:
                findings.append(Finding("unknownShareZone", f"{name} is in zone {zone}, which the device has no share for",
                                        "sync.fetch refreshes share metadata; if the share is gone, leave it.", shared_store,
                                        row.get("objectID"), zone))

    present: Set[str] = {row["objectID"] for rows in rows_by_entity.values() for row in rows if row.get("objectID")}
    for entity in entities:
        for relationship in entity.get("relationships") or []:
            if relationship.get("toMany"):
                continue
            key = relationship["name"]
            for row in rows_by_entity.get(entity["name"], []):
                target, store = row.get(key), row.get("store")
                if not isinstance(target, str) or not store:
                    continue
                uuid = _store_uuid(target)
                target_store = store_of_uuid.get(uuid) if uuid else None
                if target_store == store and target in present:
                    continue
                where = (f"at {target} in the {target_store or 'unknown'} store" if target_store != store
                         else f"at {target}, which is not in the store")
                findings.append(Finding("crossStore", f"{_describe(entity['name'], row)} in the {store} store points through {key!r} {where}",
                                        "Clear the relationship or point it at an object of the same store (object.moveToStore to move).",
                                        store, row.get("objectID"), row.get("zone")))

    # A share takes its whole graph: a shared-store link must stay within its share zone.
    zone_of = {row["objectID"]: row["zone"] for rows in rows_by_entity.values() for row in rows
               if row.get("store") == shared_store and row.get("objectID") and row.get("zone")}
    for entity in entities:
        for relationship in entity.get("relationships") or []:
            if relationship.get("toMany"):
                continue
            key = relationship["name"]
            for row in rows_by_entity.get(entity["name"], []):
                zone, target = zone_of.get(row.get("objectID")), row.get(key)
                target_zone = zone_of.get(target) if isinstance(target, str) else None
                if zone and target_zone and target_zone != zone:
                    findings.append(Finding("shareGraphSplit", f"{_describe(entity['name'], row)} in zone {zone} points through {key!r} "
                                            f"at {target} in zone {target_zone}",
                                            f"Point {key!r} at an object of the same share, or clear it.", shared_store,
                                            row.get("objectID"), zone))

    try:
        status: Optional[Dict[str, Any]] = device.call("sync.status", {"unsent": True})
    except MeowError:
        status = None  # no mirror: the export checks do not apply

    repair = model.get("orphanRepair")
    if repair and repair.get("childEntity") and repair.get("relationship"):
        child, key = repair["childEntity"], repair["relationship"]
        waiting = {link.get("recordName") for store in (status or {}).get("stores") or [] for link in store.get("pendingLinks") or []
                   if link.get("entity") == child and link.get("relationship") == key}
        for row in rows_by_entity.get(child, []):
            if row.get(key) is None and row.get("uuid") not in waiting:
                findings.append(Finding("orphan", f"{_describe(child, row)} in the {row.get('store')} store has no {key} (seed 000)",
                                        "Run repair.orphans, which sets the relationship without an assign.", row.get("store"),
                                        row.get("objectID"), row.get("zone")))

    if status is not None:
        findings += _check_exports(status, {finding.object_id for finding in findings if finding.object_id})
    return findings


def _check_exports(status: Dict[str, Any], already: Set[str]) -> List[Finding]:
    findings: List[Finding] = []
    last_error = status.get("lastError")
    for store in status.get("stores") or []:
        name = store.get("store", "?")
        pending, deferred = int(store.get("pending") or 0), int(store.get("deferred") or 0)
        if pending and last_error:
            findings.append(Finding("exportStuck", f"{pending} change(s) of the {name} store wait to be exported and the last sync step "
                                    f"failed: {last_error.get('code')}: {last_error.get('message')}",
                                    "Fix the cause (cloud down, account, quota), then sync again.", name))
        if deferred:
            findings.append(Finding("exportDeferred", f"{deferred} change(s) of the {name} store are deferred by a server retry-after",
                                    "Advance the clocks (cluster.advance_clocks) or wait, then sync.", name))
        for object_id in store.get("unexportable") or []:
            if object_id not in already:
                findings.append(Finding("unexportable", f"{object_id} in the {name} store is reported unexportable by the mirror",
                                        "Move it to the private store or into a share zone.", name, object_id))
        for refused in store.get("unimportable") or []:
            findings.append(Finding("unimportable", f"cloud record {refused.get('recordName')} ({refused.get('entity')}, zone "
                                    f"{refused.get('zone')}) was not imported into the {name} store: {refused.get('code')}: "
                                    f"{refused.get('message')}", "Correct or delete the record in the cloud.", name, None, refused.get("zone")))
        undeployed = {}
        for refused in store.get("refusedExports") or []:
            if refused.get("environment") == "production":
                undeployed.setdefault((refused.get("recordType"), refused.get("field")), []).append(refused)
        for (record_type, field), records in sorted(undeployed.items(), key=lambda item: (item[0][0] or "", item[0][1] or "")):
            what = f"field '{field}' of record type '{record_type}'" if field else f"record type '{record_type}'"
            findings.append(Finding("undeployedSchema", f"production's schema has no {what}: {len(records)} record(s) of the {name} store "
                                    "wait to be exported", "Deploy development's schema: meowctl schema deploy, then sync again.", name))
        for object_id in store.get("unsent") or []:
            if object_id not in already:
                findings.append(Finding("unsent", f"{object_id} in the {name} store is neither in the cloud nor waiting to be sent",
                                        "Report it (meowctl log, sync status --json); saving the object again queues it anew.", name, object_id))
        for link in store.get("pendingLinks") or []:
            findings.append(Finding("pendingLink", f"{link.get('entity')} {link.get('recordName')} in the {name} store waits for its "
                                    f"{link.get('relationship')} record {link.get('target')} ({link.get('waitingSeconds')} s)",
                                    "Fetch again; a link that keeps waiting names a record the cloud does not have.", name, None, link.get("zone")))
    return findings


def check_cloud(user: "CloudUser", device_user: Optional[str]) -> List[Finding]:
    """The cloud-side checks, as the device's user: no core-data or default zone in the shared database."""
    findings: List[Finding] = []
    if device_user is not None and device_user != user.user:
        findings.append(Finding("cloudUserMismatch", f"the cloud checks ran as {user.user}, but the device mirrors {device_user}",
                                f"Check the cloud as {device_user}."))
    for zone in user.changed_zones("shared"):
        name = zone.get("zoneName")
        if name in (CORE_DATA_ZONE, DEFAULT_ZONE):
            findings.append(Finding("cloudSharedDefaultZone", f"{user.user}'s shared database lists {zone.get('ownerName')}'s {name}",
                                    "The owner should stop that share and share sessions with share.create.", None, None,
                                    f"{zone.get('ownerName')}/{name}"))
    return findings
