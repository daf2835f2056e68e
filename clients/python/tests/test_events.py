"""Events as an iterator, on a connection of their own."""
import pytest

from conftest import event_values
from meowcare_testing import TimedOut


@pytest.mark.meow_cluster(devices={"A": "owner", "B": "owner"})
def test_remote_change_events_tell_of_saves_and_imports(meow_cluster):
    a, b = meow_cluster["A"], meow_cluster["B"]
    with a.events("remoteChange") as a_events, b.events("remoteChange", "cloudKitEvents") as b_events:
        assert a_events.topics == ["remoteChange"]
        assert a_events.next(timeout=0) is None, "nothing happened yet"
        other_connection = a.connect()
        saved = other_connection.insert("CareEvent", event_values("e1"))
        change = next(iter(a_events))
        assert change.name == "remoteChange" and change.data["author"] == "app"
        assert saved.object_id in change.data["changedObjectIDs"]

        a.sync_send()
        b.sync_fetch()
        imported = b_events.wait_for("remoteChange", where=lambda event: event.data["author"] == "sync")
        assert imported.data["contextName"] == "cloudMirror"
        ended = b_events.wait_for("eventChanged", where=lambda event: event.data["type"] == "import" and event.data["endDate"])
        assert ended.data["succeeded"] is True


@pytest.mark.meow_cluster(devices={"A": "owner", "B": "owner"})
def test_the_cloud_pushes_database_changes_to_the_users_other_connections(meow_cluster):
    a = meow_cluster["A"]
    with meow_cluster.cloud.as_user("owner").events() as pushes:
        a.insert("CareEvent", event_values("e1"))
        a.sync_send()
        push = pushes.wait_for("databaseChanged")
        assert push.data["scope"] == "private"


@pytest.mark.meow_cluster(devices={"A": "owner"})
def test_waiting_for_an_event_that_never_comes_times_out_with_what_arrived(meow_cluster):
    with meow_cluster["A"].events(timeout=0.2) as events:
        with pytest.raises(TimedOut, match="skipped: none"):
            events.wait_for("remoteChange")
