"""assert_converged on an app's own model with many-to-many (examples/TripLog): links are compared
as the cloud holds them, CDMR records, so a converged cluster with links passes and a missing link
record is reported as one."""
import pathlib

import pytest

from meowcare_testing import Cluster

TRIPLOG = str(pathlib.Path(__file__).resolve().parents[3] / "examples" / "TripLog" / "TripLog.json")
ZONE = "com.apple.coredata.cloudkit.zone"


def test_many_to_many_links_converge_as_the_cloud_holds_them():
    with Cluster(devices={"A": "owner", "B": "owner"}, model=TRIPLOG) as cluster:
        a, b = cluster["A"], cluster["B"]
        shrine = a.insert("Tag", {"id": "C56A4180-65AA-42EC-A945-5FD21DEC0538", "name": "shrine"})
        autumn = a.insert("Tag", {"id": "0E984725-C51C-4BF4-9960-E1C80E27ABA0", "name": "autumn"})
        a.insert("Photo", {"caption": "Torii gates", "rating": 5, "tags": [shrine.object_id, autumn.object_id]})
        cluster.settle()
        photo_on_b = b.fetch_one("Photo", "caption == 'Torii gates'")
        assert len(photo_on_b["tags"]) == 2, "B has both links"

        # Both devices hold two link rows, the cloud two CDMR records: nothing differs.
        cluster.assert_converged()
        reports = cluster.convergence()
        assert all(report.identical for report in reports), "\n".join(report.text() for report in reports)
        assert sum(zone.matching for zone in reports[0].zones) == 5, "three objects and two links match"

        # A link record the cloud no longer holds is a difference on the device that still has it.
        owner = cluster.cloud.as_user("owner")
        links = [record for record in owner.records("private", ZONE) if record["recordType"] == "CDMR"]
        assert len(links) == 2
        assert {link["fields"]["CD_entityNames"]["value"] for link in links} == {"Photo:Tag"}
        owner.records_modify("private", deletes=[{"recordName": links[0]["recordName"], "zoneID": {"zoneName": ZONE}}])
        owner.close()
        [report] = cluster.convergence(devices=["A"])
        text = report.text()
        assert not report.identical
        joined = links[0]["fields"]["CD_recordNames"]["value"]
        assert f"only on the device: CDMR {links[0]['recordName']} (Photo:Tag {joined})" in text, text


def test_a_link_another_client_wrote_in_the_other_order_matches():
    """CDMR sides may come in either order (another client's); the comparison puts them in one order."""
    with Cluster(devices={"A": "owner"}, model=TRIPLOG) as cluster:
        a = cluster["A"]
        def text(value):
            return {"type": "string", "value": value}
        zone = {"zoneName": ZONE}
        owner = cluster.cloud.as_user("owner")
        owner.call("zones.save", {"database": "private", "zoneIDs": [zone]})
        owner.records_modify("private", saves=[
            {"recordName": "photo-1", "recordType": "CD_Photo", "zoneID": zone,
             "fields": {"CD_entityName": text("Photo"), "CD_caption": text("Lantern"), "CD_rating": {"type": "int64", "value": 4}}},
            {"recordName": "tag-1", "recordType": "CD_Tag", "zoneID": zone,
             "fields": {"CD_entityName": text("Tag"), "CD_name": text("festival")}},
            {"recordName": "link-1", "recordType": "CDMR", "zoneID": zone,
             "fields": {"CD_entityNames": text("Tag:Photo"), "CD_relationships": text("photos:tags"),
                        "CD_recordNames": text("tag-1:photo-1")}}])
        owner.close()
        cluster.settle()
        assert len(a.fetch_one("Photo", "caption == 'Lantern'")["tags"]) == 1
        cluster.assert_converged()
