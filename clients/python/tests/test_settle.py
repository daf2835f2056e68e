"""settle, assert_converged and assert_invariants, and what they say when something is off."""
import pytest

from conftest import event_values
from meowcare_testing import MeowError, NotSettled


@pytest.mark.meow_cluster(devices={"A": "owner", "B": "owner", "P": "participant"}, sync_mode="automatic")
def test_settle_waits_for_automatic_mirrors_without_sleeping(meow_cluster):
    a, b = meow_cluster["A"], meow_cluster["B"]
    session = a.insert("CareSession", {"id": "s1"})
    for index in range(5):
        b.insert("CareEvent", event_values(f"b{index}"))
    meow_cluster.settle()
    assert b.count("CareSession") == 1 and a.count("CareEvent") == 5
    assert all(device.sync_status()["quiescent"] for device in meow_cluster)
    meow_cluster.assert_converged()
    assert session.uuid in {row["uuid"] for row in b.rows("CareSession")}


@pytest.mark.meow_cluster(devices={"A": "owner", "B": "owner"})
def test_settle_gives_up_after_its_rounds_with_the_devices_state(meow_cluster):
    meow_cluster["A"].insert("CareEvent", event_values("e1"))
    with pytest.raises(NotSettled) as raised:
        meow_cluster.settle(max_rounds=1)
    assert raised.value.details["worked"] == ["A", "B"]  # A sent, B fetched: the next round must look again
    assert "did not settle in 1 rounds" in str(raised.value)
    assert "What to do:" in str(raised.value)
    assert raised.value.details["cloudWrites"], "A's send is a write the round saw"
    with pytest.raises(MeowError) as none:
        meow_cluster.settle(max_rounds=0)
    assert none.value.code == "invalidArguments"
    assert meow_cluster.settle() >= 1


@pytest.mark.meow_cluster(devices={"A": "owner", "B": "owner"})
def test_assert_converged_shows_a_readable_diff(meow_cluster):
    a, b = meow_cluster["A"], meow_cluster["B"]
    event = a.insert("CareEvent", event_values("e1", note="first"))
    meow_cluster.settle()
    a.set(event.object_id, {"note": "unsent"})
    with pytest.raises(AssertionError) as diff:
        meow_cluster.assert_converged()
    text = str(diff.value)
    assert "device A (user owner) differs from the cloud" in text
    assert "CD_note: device 'unsent', cloud 'first'" in text
    assert "1 change(s) pending" in text
    assert "device B" not in text, "B matches the cloud"
    b.insert("CareEvent", event_values("e2"))
    with pytest.raises(AssertionError, match=r"only on the device: CareEvent \S+ \(e2\)"):
        meow_cluster.assert_converged(devices=["B"])
    meow_cluster.settle()
    meow_cluster.assert_converged()


@pytest.mark.meow_cluster(devices={"A": "owner"})
def test_assert_invariants_runs_doctors_checks(meow_cluster):
    a = meow_cluster["A"]
    session = a.insert("CareSession", {"id": "s1"})
    a.insert("CareEvent", event_values("e1", session=session.object_id))
    meow_cluster.settle()
    meow_cluster.assert_invariants()
    a.insert("CareEvent", event_values("orphan"))  # seed 000: an event without a session
    with pytest.raises(AssertionError, match=r"\[orphan\] CareEvent 'orphan'"):
        meow_cluster.assert_invariants()


@pytest.mark.meow_cluster(devices={"A": "owner"})
def test_assert_invariants_reports_what_is_neither_sent_nor_queued(meow_cluster):
    from meowcare_testing.invariants import _check_exports
    a = meow_cluster["A"]
    a.insert("CareSession", {"id": "s1"})
    meow_cluster.settle()
    status = a.call("sync.status", {"unsent": True})
    assert all(store["unsent"] == [] for store in status["stores"]), "a settled device has nothing unsent"
    assert "unsent" not in a.sync_status()["stores"][0], "listed only when asked"
    # What a mirror that found no zone for an object would report: doctor's check names it.
    status["stores"][0]["unsent"] = ["x-coredata://S/Tag/p1"]
    findings = _check_exports(status, set())
    assert [(finding.kind, finding.object_id) for finding in findings] == [("unsent", "x-coredata://S/Tag/p1")]
