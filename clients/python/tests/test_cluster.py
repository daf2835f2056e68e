"""A cluster's life: up, ready, isolated, stopped; a bad start; a client after the stop."""
import os
import select
import shutil
import subprocess
import sys
import textwrap

import pytest

from meowcare_testing import BinariesNotFound, Cluster, ClusterStopped, ServiceStartError
from meowcare_testing.binaries import find_binaries
from meowcare_testing.cluster import _is_roomy_tmpfs


def _environment_of(pid: int) -> dict:
    with open(f"/proc/{pid}/environ", "rb") as handle:
        pairs = [item.split(b"=", 1) for item in handle.read().split(b"\0") if b"=" in item]
    return {key.decode(): value.decode() for key, value in pairs}


def _wait_for_exit(pid: int, timeout: float) -> bool:
    """True once the (non-child) process ``pid`` has ended: a pidfd turns readable, no polling."""
    try:
        descriptor = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        readable, _, _ = select.select([descriptor], [], [], timeout)
        return bool(readable)
    finally:
        os.close(descriptor)


def test_a_cluster_starts_ready_devices_and_stops_everything():
    cluster = Cluster(devices={"A": "owner", "P": "participant"})
    with cluster:
        processes = [cluster.cloud.process, cluster["A"].process, cluster["P"].process]
        assert all(process.is_running for process in processes)
        assert [device.user for device in cluster] == ["owner", "participant"]
        for device in cluster:
            assert device.health()["ready"] is True
            status = device.sync_status()
            assert status["mode"] == "manual" and status["device"] == device.name
            assert device.info()["persistence"]["mode"] == "inMemory"
            # Services stop by themselves when this test process ends, however it ends.
            assert _environment_of(device.process.pid)["MEOW_EXIT_WITH_PID"] == str(os.getpid())
        # In memory: on /dev/shm when it is a tmpfs with room, else under /tmp; short either way.
        parent = "/dev/shm/" if _is_roomy_tmpfs("/dev/shm") else "/tmp/"
        assert len(cluster.directory) < 40 and cluster.directory.startswith(parent + "mc.")
        assert {user["user"] for user in cluster.cloud.list_users()} == {"owner", "participant"}
        directory = cluster.directory
    assert all(not process.is_running for process in processes)
    assert all(process.exit_status == 0 for process in processes), "a clean SIGTERM stop"
    assert not os.path.exists(directory)


def test_sqlite_storage_puts_the_stores_in_files_and_automatic_mode_is_on_request():
    with Cluster(devices={"A": "owner"}, storage="sqlite", sync_mode="automatic") as cluster:
        info = cluster["A"].info()
        assert info["persistence"]["mode"] == "sqlite"
        assert info["persistence"]["dataDir"].startswith(cluster.directory)
        # Stores in files stay on the disk their durability is about, never on a tmpfs.
        assert cluster.directory.startswith("/tmp/mc.")
        assert cluster["A"].sync_status()["mode"] == "automatic"


def test_a_client_used_after_its_cluster_stopped_raises_a_clear_error():
    with Cluster(devices={"A": "owner"}) as cluster:
        device, cloud = cluster["A"], cluster.cloud
        device.ping()
    with pytest.raises(ClusterStopped, match="has stopped"):
        device.sync_status()
    with pytest.raises(ClusterStopped):
        cloud.request_log()
    with pytest.raises(ClusterStopped):
        cluster["A"]


def test_a_service_that_cannot_start_raises_with_its_own_log_lines(tmp_path):
    bad_model = tmp_path / "model.json"
    bad_model.write_text('{"name": "Broken", "entities": []}')
    with pytest.raises(ServiceStartError) as raised:
        Cluster(devices={"A": "owner"}, model=str(bad_model)).start()
    error = raised.value
    assert error.service == "device A"
    assert error.exit_status not in (None, 0)
    assert error.log_lines, "the service's own words"
    assert "bad model" in str(error) or "model" in "\n".join(error.log_lines)
    assert "\n".join(error.log_lines[-3:]) in str(error)


def test_a_cloud_that_cannot_start_stops_the_cluster_and_says_why():
    with pytest.raises(ServiceStartError) as raised:
        Cluster(devices={"A": "owner"}, cloud_args=["--max-items", "not-a-number"]).start()
    assert raised.value.service == "cloud"
    assert "max-items" in str(raised.value)


def test_missing_binaries_say_how_to_build_them(tmp_path, monkeypatch):
    monkeypatch.setenv("MEOWCARE_BIN_DIR", str(tmp_path))
    with pytest.raises(BinariesNotFound, match="swift build --package-path"):
        find_binaries()
    with pytest.raises(BinariesNotFound):
        Cluster(devices={"A": "owner"}).start()


def test_services_stop_when_the_test_process_is_killed(tmp_path):
    """A test run killed with SIGKILL never reaches its clean-up; MEOW_EXIT_WITH_PID stops the services."""
    script = textwrap.dedent("""
        import sys
        from meowcare_testing import Cluster
        cluster = Cluster(devices={"A": "owner"}).start()
        print(cluster.directory, cluster.cloud.process.pid, cluster["A"].process.pid, flush=True)
        sys.stdin.read()  # until the test kills this process
    """)
    directory = ""
    child = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        directory, *pids = child.stdout.readline().split()
        pids = [int(pid) for pid in pids]
        assert len(pids) == 2
        child.kill()
        child.wait()
        for pid in pids:
            assert _wait_for_exit(pid, 20), f"service {pid} outlived its killed test process"
    finally:
        if child.poll() is None:
            child.kill()
        shutil.rmtree(directory, ignore_errors=True)  # the killed run could not remove it


def test_only_a_tmpfs_with_room_is_a_clusters_place(tmp_path, monkeypatch):
    # A directory on the disk is no tmpfs, and nothing is one that is missing.
    assert not _is_roomy_tmpfs(str(tmp_path))
    assert not _is_roomy_tmpfs("/no/such/place")
    # The same directory listed as a tmpfs mount is one: chosen while it has 512 MiB free.
    place = tmp_path / "shm"
    place.mkdir()
    mounts = tmp_path / "mounts"
    mounts.write_text(f"proc /proc proc rw 0 0\ntmpfs {place} tmpfs rw,nosuid,nodev 0 0\n", encoding="utf-8")
    other = tmp_path / "other-mounts"
    other.write_text(f"/dev/vda {place} ext4 rw 0 0\n", encoding="utf-8")
    free = {"blocks": 512 << 8}  # 4 KiB blocks

    class Stats:
        f_frsize = 4096

        @property
        def f_bavail(self):
            return free["blocks"]

    monkeypatch.setattr(os, "statvfs", lambda path: Stats())
    assert _is_roomy_tmpfs(str(place), mounts_file=str(mounts))
    assert not _is_roomy_tmpfs(str(place), mounts_file=str(other))
    free["blocks"] -= 1
    assert not _is_roomy_tmpfs(str(place), mounts_file=str(mounts))
    # Not writable: not chosen, whatever its room.
    free["blocks"] = 1 << 30
    place.chmod(0o500)
    try:
        assert _is_roomy_tmpfs(str(place), mounts_file=str(mounts)) == (os.geteuid() == 0)
    finally:
        place.chmod(0o700)
