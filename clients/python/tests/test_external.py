"""External mode: MEOWCARE_EXTERNAL points the fixture at a running deploy/meowcare-local deployment."""
import os
import pathlib
import shutil
import subprocess
import tempfile
import uuid

import pytest

from conftest import event_values
from meowcare_testing import Cluster, ClusterStopped, MeowError
from meowcare_testing.binaries import find_binaries, repository_candidates


def _deployment(*options):
    # These tests live in the repository: its deploy script is found from here even when the
    # package was installed elsewhere.
    candidates = [pathlib.Path(__file__).resolve().parents[3], *repository_candidates()]
    repositories = [path for path in candidates if (path / "deploy" / "meowcare-local").is_file()]
    if not repositories:
        pytest.skip("not run from a MeowCare checkout: deploy/meowcare-local is not here")
    script = str(repositories[0] / "deploy" / "meowcare-local")
    bin_dir = os.path.dirname(find_binaries()["store-service"])
    if not os.access(os.path.join(bin_dir, "meowctl"), os.X_OK):
        pytest.skip(f"deploy/meowcare-local needs meowctl beside the services in {bin_dir}")
    directory = tempfile.mkdtemp(prefix="mx.", dir="/tmp")
    # MEOW_EXIT_WITH_PID: the deployment ends with this test run even if it is killed.
    environment = {**os.environ, "MEOWCARE_BIN_DIR": bin_dir, "MEOW_EXIT_WITH_PID": str(os.getpid())}
    try:
        subprocess.run([script, "up", "--dir", directory, "--in-memory", *options], env=environment, check=True,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
        yield directory
    finally:
        subprocess.run([script, "down", "--dir", directory], env=environment, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=60)
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def deployment():
    yield from _deployment()


TRIPLOG = str(pathlib.Path(__file__).resolve().parents[3] / "examples" / "TripLog" / "TripLog.json")


@pytest.fixture
def triplog_deployment():
    yield from _deployment("--model", TRIPLOG)


def test_a_deployment_on_another_model_serves_tests_of_that_model_and_refuses_others(triplog_deployment, monkeypatch):
    monkeypatch.setenv("MEOWCARE_EXTERNAL", triplog_deployment)
    bundle = TRIPLOG.replace("TripLog.json", "TripLog.xcdatamodeld")
    with Cluster(devices={"A": "olivia", "B": "olivia"}, model=bundle) as cluster:
        name = f"Kyoto {uuid.uuid4().hex[:8]}"
        cluster["A"].insert("Trip", {"name": name})
        cluster.settle(devices=["A", "B"])
        assert cluster["B"].fetch_one("Trip", "name == %@", name) is not None
    with pytest.raises(MeowError) as refused:
        with Cluster(devices={"A": "olivia"}):
            pass
    assert refused.value.code == "externalMismatch"
    assert "runs the model 'TripLog', but the test's model is 'MeowCare'" in str(refused.value)


def test_a_cluster_attaches_to_a_running_deployment(deployment, monkeypatch):
    monkeypatch.setenv("MEOWCARE_EXTERNAL", deployment)
    tag = uuid.uuid4().hex[:8]  # a deployment outlives tests: their data must not collide
    with Cluster(devices={"A": "owner", "P": "participant"}) as cluster:
        a, p = cluster["A"], cluster["P"]
        assert (a.user, p.user) == ("olivia", "pablo") == (cluster.user("owner"), cluster.user("participant"))
        assert a.process is None and a.socket.startswith(deployment)
        session = a.insert("CareSession", {"id": f"s-{tag}"})
        a.insert("CareEvent", event_values(f"e-{tag}", session=session.object_id))
        share = a.share_create(session.object_id, {p.user: "readOnly"})
        p.share_accept(share["zoneName"], a.user)
        cluster.settle(devices=["A", "P"])
        assert p.fetch_one("CareEvent", "id == %@", f"e-{tag}") is not None
        cluster.assert_converged(devices=["A", "P"])
        assert any('"msg":"ready"' in line for line in a.log_lines()), "the deployment's log file"
    with pytest.raises(ClusterStopped):
        a.sync_status()
    # The deployment itself keeps running after the test.
    assert subprocess.run([os.path.join(os.path.dirname(find_binaries()["store-service"]), "meowctl"), "call", "--socket",
                           a.socket, "health"], stdout=subprocess.PIPE, timeout=30).returncode == 0


def _fake_deployment(directory):
    """The config files deploy/meowcare-local writes (no services: mapping only)."""
    config = directory / "config"
    config.mkdir()
    (config / "credentials.json").write_text('{"admin":"a-secret","olivia":"o-secret","pablo":"p-secret"}')
    (config / "sync-service.conf").write_text(f"socket = {directory}/sockets/sync-service.sock\nusers = x\n")
    for service, credential in (("device-a", "o-secret"), ("device-b", "o-secret"), ("device-p", "p-secret")):
        (config / f"{service}.conf").write_text(f"# {service}\nsocket = {directory}/sockets/{service}.sock\n"
                                                f"sync-socket = s\nsync-credential = {credential}\ndevice-name = {service}\n")
    return str(directory)


def test_a_tests_devices_and_users_map_onto_the_deployments(tmp_path):
    from meowcare_testing.external import map_devices, read_deployment
    deployment = read_deployment(_fake_deployment(tmp_path))
    chosen = map_devices(deployment, {"A": "owner", "B": "owner", "P": "participant"})
    assert {name: (device.service, device.user) for name, device in chosen.items()} == {
        "A": ("device-a", "olivia"), "B": ("device-b", "olivia"), "P": ("device-p", "pablo")}
    with pytest.raises(MeowError, match="two deployment users"):
        map_devices(deployment, {"A": "owner", "P": "owner"})
    with pytest.raises(MeowError, match="wants device 'Z'.*device-a, device-b, device-p"):
        map_devices(deployment, {"Z": "owner"})
    with pytest.raises(MeowError, match="no deployment there"):
        Cluster(devices={"A": "owner"}, external=str(tmp_path / "nothing")).start()
