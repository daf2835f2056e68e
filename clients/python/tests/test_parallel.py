"""Clusters in parallel threads do not see each other: own directories, sockets, users and data."""
import concurrent.futures

from conftest import event_values
from meowcare_testing import Cluster


def _run_one(index: int):
    with Cluster(devices={"A": "owner", "P": "participant"}) as cluster:
        a, p = cluster["A"], cluster["P"]
        session = a.insert("CareSession", {"id": f"s{index}"})
        for number in range(3):
            a.insert("CareEvent", event_values(f"e{index}-{number}", session=session.object_id))
        share = a.share_create(session.object_id, {p.user: "readWrite"})
        p.share_accept(share["zoneName"], a.user)
        p.set(p.fetch_one("CareEvent", "id == %@", f"e{index}-0").object_id, {"note": f"cluster {index}"})
        cluster.settle()
        cluster.assert_converged()
        ids = sorted(event["id"] for event in a.fetch("CareEvent"))
        records = cluster.cloud.as_user("owner").records("private", share["zoneName"])
        cloud_ids = sorted(record["fields"]["CD_id"]["value"] for record in records if record["recordType"].startswith("CD_"))
        return cluster.directory, ids, cloud_ids, a.fetch_one("CareEvent", "id == %@", f"e{index}-0")["note"]


def test_eight_clusters_in_parallel_threads_do_not_interfere():
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(_run_one, range(8)))
    assert len({directory for directory, _, _, _ in results}) == 8
    for index, (_, ids, cloud_ids, note) in enumerate(results):
        expected = [f"e{index}-{number}" for number in range(3)]
        assert ids == expected and note == f"cluster {index}"
        assert cloud_ids == sorted(expected + [f"s{index}"]), "each cloud holds its own cluster's records only"
