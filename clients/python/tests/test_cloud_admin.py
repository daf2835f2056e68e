"""The cloud's admin ops and the account ops, through the typed clients."""
import os
import pytest

from conftest import event_values
from meowcare_testing import LimitExceeded, NotAuthenticated


@pytest.mark.meow_cluster(devices={"A": "owner"})
def test_a_user_made_at_run_time_gets_a_device_of_their_own(meow_cluster):
    meow_cluster.cloud.create_user("carol")
    assert "carol" in {user["user"] for user in meow_cluster.cloud.list_users()}
    c = meow_cluster.add_device("C", "carol")
    c.insert("CareEvent", event_values("c1"))
    meow_cluster.settle()
    assert meow_cluster["A"].count("CareEvent") == 0, "another user's private data stays theirs"
    assert [record["recordName"] for record in meow_cluster.cloud.as_user("carol").records()] == [c.fetch_one("CareEvent").uuid]
    meow_cluster.assert_converged()


@pytest.mark.meow_cluster(devices={"A": "owner", "B": "owner"})
def test_snapshot_reset_limits_and_schema(meow_cluster):
    a, cloud = meow_cluster["A"], meow_cluster.cloud
    a.insert("CareEvent", event_values("e1"))
    meow_cluster.settle()
    assert cloud.schema()["CD_CareEvent"]["CD_value"] == "DOUBLE"
    snapshot = cloud.export_snapshot()
    assert cloud.reset("all")["zonesRemoved"] >= 1
    assert cloud.as_user("owner").changed_zones("private") == [], "every zone is gone"
    assert cloud.import_snapshot(snapshot)["records"] >= 1
    assert len(cloud.as_user("owner").records()) == 1
    assert cloud.set_limits(max_items_per_request=1)["maxItemsPerRequest"] == 1
    owner = cloud.as_user("owner")
    zone = {"zoneName": "com.apple.coredata.cloudkit.zone"}
    with pytest.raises(LimitExceeded):
        owner.records_modify("private", saves=[{"recordName": f"r{n}", "zoneID": zone, "recordType": "Note", "fields": {}} for n in range(2)])


@pytest.mark.meow_cluster(devices={"A": "owner", "B": "owner"})
def test_held_pushes_are_released_in_commit_order(meow_cluster):
    a = meow_cluster["A"]
    with meow_cluster.cloud.as_user("owner").events() as pushes:
        assert meow_cluster.cloud.hold_pushes()["holding"] is True
        a.insert("CareEvent", event_values("e1"))
        a.sync_send()
        assert pushes.next(timeout=0.2) is None, "held"
        assert meow_cluster.cloud.release_pushes()["delivered"] >= 1
        assert pushes.wait_for("databaseChanged").data["scope"] == "private"


@pytest.mark.meow_cluster(devices={"A": "owner", "B": "owner"})
def test_a_signed_out_device_is_left_out_of_settle_and_convergence(meow_cluster):
    a, b = meow_cluster["A"], meow_cluster["B"]
    a.insert("CareEvent", event_values("e1"))
    assert b.sign_out()["signedIn"] is False
    with pytest.raises(NotAuthenticated):
        b.sync_now()
    meow_cluster.settle()
    meow_cluster.assert_converged()
    assert b.count("CareEvent") == 0
    assert b.sign_in()["signedIn"] is True
    meow_cluster.settle()
    assert b.count("CareEvent") == 1
    meow_cluster.assert_converged()


@pytest.mark.meow_cluster(devices={"A": "owner"})
def test_the_schema_is_exported_imported_deployed_and_reset(meow_cluster):
    a, cloud = meow_cluster["A"], meow_cluster.cloud
    a.insert("CareEvent", event_values("e1"))
    meow_cluster.settle()
    assert 'RECORD TYPE "CD_CareEvent"' in cloud.export_schema()
    assert cloud.export_schema("production") == "DEFINE SCHEMA\n"
    assert cloud.diff_schema()["deployable"] is True
    assert "CD_CareEvent" in cloud.deploy_schema()["newRecordTypes"]
    assert cloud.import_schema('DEFINE SCHEMA RECORD TYPE CD_Visit ("CD_clinic" STRING);')["newRecordTypes"] == ["CD_Visit"]
    cloud.reset_development()
    assert cloud.diff_schema()["identical"] is True


@pytest.mark.meow_cluster(devices={"A": "owner"})
def test_subscriptions_are_saved_fetched_and_deleted(meow_cluster):
    owner = meow_cluster.cloud.as_user("owner")
    saved = owner.subscriptions_save("private", [{"subscriptionID": "q", "subscriptionType": "query",
                                                  "recordType": "CD_CareEvent", "predicate": "CD_value > 200"}])
    assert [s["subscriptionID"] for s in saved] == ["q"]
    assert "q" in [s["subscriptionID"] for s in owner.subscriptions_fetch("private")]
    assert owner.subscriptions_delete("private", ["q"]) == ["q"]
    assert "q" not in [s["subscriptionID"] for s in owner.subscriptions_fetch("private")]


@pytest.mark.meow_cluster(devices={"A": "owner"})
def test_a_failure_report_shows_no_credential_the_cluster_knows(meow_cluster):
    meow_cluster.cloud.create_user("zoe", "zoe-credential-in-clear-0001")
    meow_cluster["A"].sign_in(meow_cluster.credentials["owner"])
    meow_cluster.cloud.export_snapshot(include_credentials=True)
    report = "\n".join(f"{title}\n{text}" for title, text in meow_cluster.failure_report())
    for user, credential in meow_cluster.credentials.items():
        assert credential not in report, f"{user}'s credential is in the report"
    assert meow_cluster._admin_credential not in report
    assert "<redacted>" in report
    # The page of it all, and the files it was made from beside it.
    page = meow_cluster.write_report(["failed"])
    assert page is not None
    directory = os.path.dirname(page)
    for name in os.listdir(directory):
        text = open(os.path.join(directory, name), encoding="utf-8").read()
        for credential in [meow_cluster._admin_credential, *meow_cluster.credentials.values()]:
            assert credential not in text, f"a credential in {name}"
