"""assert_converged on an app's own model with many-to-many (examples/TripLog): links are compared
as the cloud holds them, CDMR records, so a converged cluster with links passes and a missing link
record is reported as one."""
import base64
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


# Every attribute type of TripLog, as in Tests/MirrorTests/TripLogTests.swift: an Integer 64 past
# 2**53 and a thumbnail over --asset-threshold, which the cloud holds as an asset field.
TRIP = {"id": "6F9619FF-8B86-D011-B42D-00C04FC964FF", "name": "Kyoto in autumn", "startDate": "2026-11-01T00:00:00.000Z",
        "endDate": "2026-11-09T23:59:59.999Z", "budget": "2500.75", "currency": "JPY", "isArchived": False}
DAY = {"id": "0E984725-C51C-4BF4-9960-E1C80E27ABA0", "date": "2026-11-02T00:00:00.000Z", "dayNumber": 2, "distanceKm": 12.5,
       "notes": "Fushimi Inari at dawn"}
THUMBNAIL = bytes(range(256)) + bytes(range(44))
PHOTO = {"id": "1B4E28BA-2FA1-11D2-883F-0016D3CCA427", "caption": "Torii gates", "takenAt": "2026-11-02T06:12:30.250Z",
         "thumbnail": base64.b64encode(THUMBNAIL).decode(), "sourceURL": "https://example.com/p/1.heic",
         "fileSize": "9007199254740993", "rating": 5, "latitude": 34.967146, "longitude": 135.772695, "metadata": "YnBsaXN0MDDUAQ=="}


def test_every_attribute_type_converges_exactly_and_a_real_difference_in_each_is_reported():
    with Cluster(devices={"O": "owner", "B": "owner"}, model=TRIPLOG, device_args=["--asset-threshold", "64"]) as cluster:
        owner_device = cluster["O"]
        trip = owner_device.insert("Trip", TRIP)
        day = owner_device.insert("Day", {**DAY, "trip": trip.object_id})
        owner_device.insert("Photo", {**PHOTO, "day": day.object_id})
        cluster.settle()

        owner = cluster.cloud.as_user("owner")
        records = {record["recordType"]: record for record in owner.records("private", ZONE)}
        photo = records["CD_Photo"]
        assert photo["fields"]["CD_fileSize"] == {"type": "int64", "value": 9007199254740993}, "sent exactly, as an int64"
        assert photo["fields"]["CD_thumbnail_ckAsset"]["type"] == "asset", "the thumbnail went as an asset"
        assert "CD_thumbnail" not in photo["fields"] or photo["fields"]["CD_thumbnail"].get("value") is None

        # Nothing differs: no rounding of the int64, no asset field reported extra or plain field missing.
        cluster.assert_converged()
        reports = cluster.convergence()
        for report in reports:
            assert report.identical, report.text()
            assert sum(zone.matching for zone in report.zones) == 3, "trip, day and photo match"

        # One real change in every type on the cloud (fileSize by 1, one byte of the asset, a
        # millisecond…): each is named, with the cloud's exact value.
        changed = {
            "CD_Photo": {"CD_fileSize": {"type": "int64", "value": 9007199254740994},
                         "CD_thumbnail_ckAsset": {"type": "asset", "value": base64.b64encode(THUMBNAIL[:-1] + b"\x00").decode()},
                         "CD_takenAt": {"type": "date", "value": photo["fields"]["CD_takenAt"]["value"] + 0.001},
                         "CD_sourceURL": {"type": "string", "value": "https://example.com/p/2.heic"},
                         "CD_id": {"type": "string", "value": "1B4E28BA-2FA1-11D2-883F-0016D3CCA428"},
                         "CD_metadata": {"type": "bytes", "value": "YnBsaXN0MDDUAg=="},
                         "CD_rating": {"type": "int64", "value": 4},
                         "CD_latitude": {"type": "double", "value": 34.967147}},
            "CD_Trip": {"CD_budget": {"type": "string", "value": "2500.76"},
                        "CD_isArchived": {"type": "int64", "value": 1}},
            "CD_Day": {"CD_distanceKm": {"type": "double", "value": 12.75},
                       "CD_dayNumber": {"type": "int64", "value": 3}},
        }
        saves = [{**records[kind], "fields": {**records[kind]["fields"], **fields}} for kind, fields in changed.items()]
        owner.records_modify("private", saves=saves)
        owner.close()
        [report] = cluster.convergence(devices=["O"])
        text = report.text()
        assert not report.identical
        named = {(item.entity, difference.field): difference for zone in report.zones for _, item, differences in zone.differing
                 for difference in differences}
        expected = {(kind[len("CD_"):], field.replace("_ckAsset", "")) for kind, fields in changed.items() for field in fields}
        assert set(named) == expected, text
        assert named[("Photo", "CD_fileSize")].device == "9007199254740993", text
        assert named[("Photo", "CD_fileSize")].cloud == "9007199254740994", text
        assert "_ckAsset" not in text, text
