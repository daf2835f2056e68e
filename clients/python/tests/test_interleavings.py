"""An exact interleaving with the cloud's hold: no sleeps, no timing luck."""
import pytest

from conftest import event_values


@pytest.mark.meow_cluster(devices={"A": "owner", "B": "owner"})
def test_a_send_held_at_the_server_while_another_device_writes_meets_the_conflict(meow_cluster):
    a, b = meow_cluster["A"], meow_cluster["B"]
    event = a.insert("CareEvent", event_values("e1"))
    meow_cluster.settle()
    a.set(event.object_id, {"note": "from A"})
    b.set(b.fetch_one("CareEvent", "id == 'e1'").object_id, {"note": "from B", "value": 7})
    with meow_cluster.cloud.hold("records.modify", user=a.user) as held:
        sending = a.call_in_background("sync.send")
        held.wait()                           # A's batch is at the server, not yet decided
        assert b.sync_send()["saved"] == 1    # B's edit commits first
    result = sending.result(timeout=30)       # released: A's stale tag meets serverRecordChanged
    assert result["conflictsResolved"] == 1
    meow_cluster.settle()
    assert (a.fetch_one("CareEvent", "id == 'e1'")["note"], a.fetch_one("CareEvent", "id == 'e1'")["value"]) == ("from B", 7)
    meow_cluster.assert_converged()
