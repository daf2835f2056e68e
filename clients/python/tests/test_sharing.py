"""Two users and a share: the flow app teams test, end to end through the real services."""
import pytest

from conftest import event_values
from meowcare_testing import CloudKitError, PartialFailure, PermissionFailure, ServerRecordChanged


@pytest.fixture
def shared_session(meow_cluster):
    """The owner's device A shares session s1 (with event e1) with P's user, read-only; all settled."""
    a, p = meow_cluster["A"], meow_cluster["P"]
    session = a.insert("CareSession", {"id": "s1", "title": "Mochi"})
    a.insert("CareEvent", event_values("e1", session=session.object_id))
    share = a.share_create(session.object_id, {p.user: "readOnly"})
    p.share_accept(share["zoneName"], owner_name=a.user)
    meow_cluster.settle()
    return share["zoneName"]


def test_a_share_reaches_the_participant_and_every_device_converges(meow_cluster, shared_session):
    a, b, p = meow_cluster["A"], meow_cluster["B"], meow_cluster["P"]
    for device in (a, b, p):
        assert [event["id"] for event in device.fetch("CareEvent", sort=["id"])] == ["e1"]
    event = p.fetch_one("CareEvent", "id == %@", "e1")
    assert event.store == "Shared" and event.zone == shared_session and event.zone_owner == a.user
    assert p.fetch_one("CareSession", "id == 's1'")["title"] == "Mochi"
    assert [share["permission"] for share in p.share_list()] == ["readOnly"]
    meow_cluster.assert_converged()
    meow_cluster.assert_invariants()


def test_a_read_only_participants_write_is_refused_with_cloudkits_error(meow_cluster, shared_session):
    a, p = meow_cluster["A"], meow_cluster["P"]
    event = p.fetch_one("CareEvent", "id == 'e1'")
    with pytest.raises(PermissionFailure) as refused:
        p.set(event.object_id, {"note": "P was here"})
    assert refused.value.code == "permissionFailure"
    assert refused.value.ck_error_code == 10  # CKError.permissionFailure
    assert refused.value.details["permission"] == "readOnly"
    assert isinstance(refused.value, CloudKitError)
    assert p.get(event.object_id)["note"] is None, "nothing was saved"

    # The owner makes the share read-write: the same edit now goes through to everyone.
    a.share_set_permission(shared_session, p.user, "readWrite")
    meow_cluster.settle()
    p.set(event.object_id, {"note": "P was here"})
    meow_cluster.settle()
    assert a.fetch_one("CareEvent", "id == 'e1'")["note"] == "P was here"
    meow_cluster.assert_converged()


def test_a_conflicting_edit_is_resolved_per_field_and_converges(meow_cluster, shared_session):
    a, b, p = meow_cluster["A"], meow_cluster["B"], meow_cluster["P"]
    a.set(a.fetch_one("CareEvent", "id == 'e1'").object_id, {"note": "from A", "value": 111})
    b.set(b.fetch_one("CareEvent", "id == 'e1'").object_id, {"note": "from B"})  # the later edit of note
    assert a.sync_send()["saved"] == 1
    sent = b.sync_send()  # B's copy is stale: the server says serverRecordChanged, B merges per field
    assert sent["conflictsResolved"] == 1
    meow_cluster.settle()
    for device in (a, b, p):
        event = device.fetch_one("CareEvent", "id == 'e1'")
        assert (event["note"], event["value"]) == ("from B", 111), device.name
    meow_cluster.assert_converged()


def test_the_cloud_reports_a_stale_write_as_server_record_changed_with_its_records(meow_cluster):
    owner = meow_cluster.cloud.as_user("owner")
    zone = {"zoneName": "com.apple.coredata.cloudkit.zone"}
    owner.call("zones.save", {"database": "private", "zoneIDs": [zone]})
    record = {"recordName": "r1", "zoneID": zone, "recordType": "Note", "fields": {"text": {"type": "string", "value": "v1"}}}
    first = owner.records_modify("private", saves=[record])["saved"][0]
    owner.records_modify("private", saves=[{**record, "recordChangeTag": first["recordChangeTag"],
                                            "fields": {"text": {"type": "string", "value": "v2"}}}])
    with pytest.raises(PartialFailure) as failed:
        owner.records_modify("private", saves=[{**record, "recordChangeTag": first["recordChangeTag"],
                                                "fields": {"text": {"type": "string", "value": "stale"}}}])
    conflict = failed.value.partial_errors["r1"]
    assert isinstance(conflict, ServerRecordChanged) and conflict.ck_error_code == 14
    assert conflict.server_record["fields"]["text"]["value"] == "v2"
    assert conflict.client_record["fields"]["text"]["value"] == "stale"
    assert conflict.ancestor_record["recordChangeTag"] == first["recordChangeTag"]
