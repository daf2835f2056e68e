"""A device's stores against its user's cloud databases, record by record (``meowctl diff``'s comparison).

The private store is compared with the user's private database and the shared store with the
shared database, keyed by record name (an object's ``uuid``). Fields are compared as the mirror
maps them: attribute ``note`` ↔ field ``CD_note``, a to-one relationship by the related record's
name, each value as the field type its attribute is sent as (integers exactly, never through
float; booleans as 0/1; doubles by value; dates to the millisecond; bytes by their content; an asset
field ``CD_<name>_ckAsset`` as attribute ``<name>``'s value), and a many-to-many link as the
``CDMR`` record the cloud holds (``CD_entityNames``, ``CD_relationships``, ``CD_recordNames``, the
sides in one order: the side whose entity, then relationship, name sorts first). The report reads like
``meowctl diff``'s table, so a failing ``assert_converged`` says which record and field differ.
"""
from __future__ import annotations

import base64
import binascii
import datetime as _dt
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from .errors import MeowError

if TYPE_CHECKING:  # pragma: no cover
    from .cloud import CloudUser
    from .device import Device

PREFIX = "CD_"
ENTITY_NAME_FIELD = "CD_entityName"
# Core Data-prefixed fields that hold no attribute or relationship: the entity's name, and the
# move receipt a record moved into a share carries.
BOOKKEEPING_FIELDS = frozenset({ENTITY_NAME_FIELD, "CD_moveReceipt"})
DEFAULT_OWNER = "__defaultOwner__"
CORE_DATA_ZONE = "com.apple.coredata.cloudkit.zone"
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)

Key = Tuple[str, str]  # (database, record name)


@dataclass
class Item:
    """One side's view of one record: where it is and its comparable fields."""

    database: str
    zone: str
    entity: str
    object_id: Optional[str]
    fields: Dict[str, str]


@dataclass
class FieldDifference:
    field: str
    device: Optional[str]
    cloud: Optional[str]


@dataclass
class ZoneReport:
    database: str
    zone: str
    matching: int = 0
    only_in_cloud: List[Tuple[str, Item]] = field(default_factory=list)
    only_on_device: List[Tuple[str, Item]] = field(default_factory=list)
    differing: List[Tuple[str, Item, List[FieldDifference]]] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not (self.only_in_cloud or self.only_on_device or self.differing)


@dataclass
class ConvergenceReport:
    """One device against the cloud: per zone, what matches and what does not."""

    device: str
    user: str
    zones: List[ZoneReport]
    unreadable: List[str]
    pending: int

    @property
    def identical(self) -> bool:
        return all(zone.clean for zone in self.zones) and not self.unreadable

    def text(self) -> str:
        """A readable account of every difference (empty when identical)."""
        if self.identical:
            return ""
        lines = [f"device {self.device} (user {self.user}) differs from the cloud:"]
        for zone in self.zones:
            if zone.clean:
                continue
            lines.append(f"  {zone.database} database, zone {zone.zone}: {zone.matching} matching, {len(zone.only_in_cloud)} only in "
                         f"the cloud, {len(zone.only_on_device)} only on the device, {len(zone.differing)} differing")
            for name, item in sorted(zone.only_in_cloud, key=lambda entry: entry[0]):
                lines.append(f"    only in the cloud:  {item.entity} {_describe(name, item)}")
            for name, item in sorted(zone.only_on_device, key=lambda entry: entry[0]):
                lines.append(f"    only on the device: {item.entity} {_describe(name, item)} {item.object_id or ''}".rstrip())
            for name, item, differences in sorted(zone.differing, key=lambda entry: entry[0]):
                for difference in differences:
                    lines.append(f"    differs: {item.entity} {_describe(name, item)} {difference.field}: "
                                 f"device {_show(difference.device)}, cloud {_show(difference.cloud)}")
        for zone_name in self.unreadable:
            lines.append(f"  unreadable zone: {zone_name}")
        if self.pending:
            lines.append(f"  (device {self.device} has {self.pending} change(s) pending: cluster.settle() sends them)")
        return "\n".join(lines)


def _describe(name: str, item: Item) -> str:
    """A record by its name and, where it has one, its ``id`` attribute (what people recognise)."""
    business_id = item.fields.get("CD_id")
    if business_id is None and item.entity == LINK_RECORD_TYPE:
        business_id = f"{item.fields.get('CD_entityNames')} {item.fields.get('CD_recordNames')}"
    return f"{name} ({business_id})" if business_id is not None else name


def _show(value: Optional[str]) -> str:
    return "–" if value is None else repr(value)


# -- normalisation: both sides' values as one comparable text --------------------------------------

def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _number(value)
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _number(value: float) -> str:
    return str(int(value)) if value == int(value) and abs(value) < 1e15 else repr(value)


def _format_millis(milliseconds: int) -> str:
    """UTC text with milliseconds, from whole milliseconds (integers: no binary fraction to round)."""
    moment = _EPOCH + _dt.timedelta(milliseconds=milliseconds)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _millis(seconds: float) -> str:
    return _format_millis(round(seconds * 1000))


def _local_millis(text: str) -> Optional[int]:
    """Whole milliseconds of a store's ISO-8601 text (digits past the millisecond dropped, as the store does)."""
    try:
        moment = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=_dt.timezone.utc)
    return (moment - _EPOCH) // _dt.timedelta(milliseconds=1)


ASSET_SUFFIX = "_ckAsset"


def attribute_field(name: str) -> str:
    """The attribute field a record field holds: ``CD_thumbnail_ckAsset`` is ``CD_thumbnail``'s value."""
    return name[:-len(ASSET_SUFFIX)] if name.endswith(ASSET_SUFFIX) else name


def field_type(attribute_type: str) -> str:
    """The cloud field type the mirror sends an attribute of this type as; both sides are compared in its terms."""
    if attribute_type in ("integer16", "integer32", "integer", "integer64", "boolean"):
        return "int64"
    if attribute_type in ("double", "float"):
        return "double"
    if attribute_type == "date":
        return "date"
    if attribute_type in ("binary", "transformable"):
        return "bytes"
    return "string"


def _integer(value: Any) -> str:
    """An integer as its exact digits, never through float (which holds 2**53 + 1 as 2**53)."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        try:
            return str(int(value, 10))
        except ValueError:
            return value
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return _text(value)


def _bytes(value: Any) -> str:
    """Base64 data as its bytes, written one way."""
    if not isinstance(value, str):
        return _text(value)
    try:
        return base64.b64encode(base64.b64decode(value, validate=False)).decode("ascii")
    except (binascii.Error, ValueError):
        return value


def _by_type(value: Any, kind: Optional[str]) -> str:
    if kind == "int64":
        return _integer(value)
    if kind == "double" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return _number(float(value))
    if kind in ("bytes", "asset"):
        return _bytes(value)
    return _text(value)


def normalize_local(value: Any, attribute_type: str) -> str:
    """A device's value as comparable text, by the field type its attribute is sent as."""
    kind = field_type(attribute_type)
    if kind == "date" and isinstance(value, str):
        milliseconds = _local_millis(value)
        return value if milliseconds is None else _format_millis(milliseconds)
    return _by_type(value, kind)


def normalize_cloud(field_value: Dict[str, Any]) -> Optional[str]:
    """A cloud field's value as comparable text, by the field's declared type; None for a null (a cleared field)."""
    value = field_value.get("value")
    kind = field_value.get("type")
    if value is None:
        return None
    if kind == "date" and isinstance(value, (int, float)):
        return _millis(float(value))
    return _by_type(value, kind)


def _cloud_fields(fields: Dict[str, Any]) -> Dict[str, str]:
    """A record's attribute and relationship fields; an asset field as its attribute's (the asset wins if both hold one)."""
    result: Dict[str, str] = {}
    for name, value in fields.items():
        if not name.startswith(PREFIX) or name in BOOKKEEPING_FIELDS or not isinstance(value, dict):
            continue
        text = normalize_cloud(value)
        if text is None:
            continue
        attribute = attribute_field(name)
        if attribute != name or attribute not in result:
            result[attribute] = text
    return result


# -- many-to-many links, as the cloud holds them ------------------------------------------------

LINK_RECORD_TYPE = "CDMR"
LINK_FIELDS = ("CD_entityNames", "CD_relationships", "CD_recordNames")

Side = Tuple[str, str]  # (entity, relationship)


def link_entities(entities: List[Dict[str, Any]]) -> Dict[str, Tuple[Side, Side]]:
    """The hidden link entities of a ``model.get`` reply (``_Photo_tags``), each with its ``a`` and ``b`` sides.

    One per to-many relationship whose inverse is to-many, named after the side whose entity, then
    relationship, name sorts first (as the store names it).
    """
    by_name = {entity["name"]: entity for entity in entities if entity.get("name")}
    links: Dict[str, Tuple[Side, Side]] = {}
    for name, entity in by_name.items():
        for relationship in entity.get("relationships") or []:
            if not relationship.get("toMany"):
                continue
            destination, inverse = relationship.get("destination"), relationship.get("inverse")
            back = next((r for r in (by_name.get(destination) or {}).get("relationships") or [] if r.get("name") == inverse), None)
            if back is None or not back.get("toMany"):
                continue
            own, other = (name, relationship["name"]), (destination, inverse)
            if own <= other:
                links[f"_{name}_{relationship['name']}"] = (own, other)
    return links


def _link_fields(sides: List[Tuple[Side, str]]) -> Dict[str, str]:
    ordered = sorted(sides, key=lambda entry: entry[0])
    return {"CD_entityNames": ":".join(side[0] for side, _ in ordered),
            "CD_relationships": ":".join(side[1] for side, _ in ordered),
            "CD_recordNames": ":".join(name for _, name in ordered)}


def link_fields_of_record(fields: Dict[str, Any]) -> Dict[str, str]:
    """A CDMR record's three fields with the sides in one order (another client may write either)."""
    def parts(name: str) -> List[str]:
        value = (fields.get(name) or {}).get("value")
        return value.split(":", 1) if isinstance(value, str) else []
    entities, relationships, names = parts("CD_entityNames"), parts("CD_relationships"), parts("CD_recordNames")
    if len(entities) != 2 or len(relationships) != 2 or len(names) != 2:
        return {name: _text((fields.get(name) or {}).get("value")) for name in LINK_FIELDS}
    return _link_fields([((entities[0], relationships[0]), names[0]), ((entities[1], relationships[1]), names[1])])


# -- the two sides -----------------------------------------------------------------------------

def device_items(device: "Device") -> Dict[Key, Item]:
    """Every object of the device, keyed by database and record name (its uuid)."""
    stores = device.store_list()["stores"]
    database_of = {store["name"]: ("shared" if store.get("scope") == "shared" else "private") for store in stores}
    owners = {share["zoneName"]: share.get("ownerName", "?") for share in device.share_list()}
    entities = device.model_get().get("entities") or []
    links = link_entities(entities)
    rows: List[Tuple[Dict[str, Any], Dict[str, Any]]] = []
    for entity in entities:
        rows += [(entity, row) for row in device.rows(entity["name"])]
    uuid_of = {row["objectID"]: row["uuid"] for _, row in rows if row.get("objectID") and row.get("uuid")}
    items: Dict[Key, Item] = {}
    for entity, row in rows:
        uuid, store = row.get("uuid"), row.get("store")
        if not uuid or not store:
            continue
        database = database_of.get(store, "private")
        if row.get("zone"):
            zone = f"{row.get('zoneOwner') or owners.get(row['zone'], '?')}/{row['zone']}"
        else:
            zone = f"{DEFAULT_OWNER}/{CORE_DATA_ZONE}" if database == "private" else "(no zone)"
        sides = links.get(entity["name"])
        if sides is not None:
            fields = _link_fields([(sides[0], uuid_of.get(row.get("a")) or str(row.get("a") or "?")),
                                   (sides[1], uuid_of.get(row.get("b")) or str(row.get("b") or "?"))])
            items[(database, uuid)] = Item(database, zone, LINK_RECORD_TYPE, row.get("objectID"), fields)
            continue
        fields: Dict[str, str] = {}
        for attribute in entity.get("attributes") or []:
            value = row.get(attribute["name"])
            if value is not None:
                fields[PREFIX + attribute["name"]] = normalize_local(value, attribute.get("type", "string"))
        for relationship in entity.get("relationships") or []:
            if relationship.get("toMany"):
                continue
            target = row.get(relationship["name"])
            if isinstance(target, str):
                fields[PREFIX + relationship["name"]] = uuid_of.get(target, target)
        items[(database, uuid)] = Item(database, zone, entity["name"], row.get("objectID"), fields)
    return items


def cloud_items(user: "CloudUser") -> Tuple[Dict[Key, Item], List[str]]:
    """Every ``CD_`` record of the user's private and shared databases, and the zones it could not read."""
    items: Dict[Key, Item] = {}
    unreadable: List[str] = []
    for database in ("private", "shared"):
        for zone in user.changed_zones(database):
            zone_key = f"{zone.get('ownerName')}/{zone.get('zoneName')}"
            try:
                records = user.records(database, zone["zoneName"], zone.get("ownerName"))
            except MeowError as error:
                unreadable.append(f"{database} {zone_key}: {error.code} — {error.message}")
                continue
            for record in records:
                record_type = record.get("recordType") or ""
                if record_type == LINK_RECORD_TYPE:
                    items[(database, record["recordName"])] = Item(database, zone_key, LINK_RECORD_TYPE, None,
                                                                   link_fields_of_record(record.get("fields") or {}))
                    continue
                if not record_type.startswith(PREFIX):
                    continue
                fields = _cloud_fields(record.get("fields") or {})
                items[(database, record["recordName"])] = Item(database, zone_key, record_type[len(PREFIX):], None, fields)
    return items, unreadable


def compare_items(local: Dict[Key, Item], cloud: Dict[Key, Item]) -> List[ZoneReport]:
    reports: Dict[Tuple[str, str], ZoneReport] = {}

    def report(item: Item) -> ZoneReport:
        key = (item.database, item.zone)
        if key not in reports:
            reports[key] = ZoneReport(item.database, item.zone)
        return reports[key]

    for key, remote in cloud.items():
        mine = local.get(key)
        if mine is None:
            report(remote).only_in_cloud.append((key[1], remote))
            continue
        differences = [FieldDifference(name, mine.fields.get(name), remote.fields.get(name))
                       for name in sorted(set(mine.fields) | set(remote.fields))
                       if mine.fields.get(name) != remote.fields.get(name)]
        if differences:
            report(remote).differing.append((key[1], Item(remote.database, remote.zone, remote.entity, mine.object_id, mine.fields), differences))
        else:
            report(remote).matching += 1
    for key, mine in local.items():
        if key not in cloud:
            report(mine).only_on_device.append((key[1], mine))
    return [reports[key] for key in sorted(reports)]


def compare(device: "Device", user: "CloudUser") -> ConvergenceReport:
    """The device against the cloud as its user sees it."""
    pending = device.pending()
    local = device_items(device)
    remote, unreadable = cloud_items(user)
    return ConvergenceReport(device.name, device.user, compare_items(local, remote), unreadable, pending)
