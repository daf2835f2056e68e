"""Where a cluster's services come from: an installed prefix, the Python environment or PATH as
readily as a checkout's .build, in the documented order, and which rule found them."""
import logging
import os
from pathlib import Path

import pytest

from meowcare_testing import BinariesNotFound, Cluster
from meowcare_testing.binaries import find_binaries, locate_binaries


def _install(prefix: Path, real: dict) -> Path:
    """A prefix as install.sh leaves it, whose bin holds wrappers that note each start in
    ``prefix/started`` before running this checkout's service."""
    bin_dir = prefix / "bin"
    bin_dir.mkdir(parents=True)
    for name in ("store-service", "sync-service"):
        wrapper = bin_dir / name
        wrapper.write_text(f"#!/bin/sh\necho {name} >> '{prefix}/started'\nexec '{real[name]}' \"$@\"\n")
        wrapper.chmod(0o755)
    return bin_dir


@pytest.fixture
def real():
    return find_binaries()


@pytest.fixture
def clean(monkeypatch):
    """No explicit choice in the environment (conftest points MEOWCARE_BIN_DIR at the checkout)."""
    monkeypatch.delenv("MEOWCARE_BIN_DIR", raising=False)
    monkeypatch.delenv("MEOWCARE_PREFIX", raising=False)
    return monkeypatch


def test_a_cluster_runs_the_services_of_MEOWCARE_PREFIX_and_says_so(tmp_path, real, clean, caplog):
    prefix = tmp_path / "prefix"
    bin_dir = _install(prefix, real)
    clean.setenv("MEOWCARE_PREFIX", str(prefix))
    caplog.set_level(logging.INFO, logger="meowcare_testing")
    with Cluster(devices={"A": "owner"}) as cluster:  # run from the checkout, whose .build holds the services too
        cluster["A"].insert("CareSession", {"id": "s1", "title": "Mochi"})
        cluster["A"].sync_send()
        assert (cluster.binaries.source, cluster.binaries.directory) == ("MEOWCARE_PREFIX", str(bin_dir))
    assert f"store-service and sync-service from {bin_dir} (found by MEOWCARE_PREFIX)" in caplog.text
    assert sorted((prefix / "started").read_text().split()) == ["store-service", "sync-service"]


def test_the_explicit_directory_comes_before_the_prefix(tmp_path, real, clean):
    _install(tmp_path / "prefix", real)
    clean.setenv("MEOWCARE_PREFIX", str(tmp_path / "prefix"))
    clean.setenv("MEOWCARE_BIN_DIR", os.path.dirname(real["store-service"]))
    assert locate_binaries().source == "MEOWCARE_BIN_DIR"
    assert locate_binaries(bin_dir=str(_install(tmp_path / "other", real))).source == "bin_dir"


def test_a_checkout_then_the_environment_then_PATH(tmp_path, real, clean):
    checkout = tmp_path / "checkout"
    build = _install(checkout / ".build", real).rename(checkout / ".build" / "debug")
    environment = _install(tmp_path / "venv", real)
    on_path = _install(tmp_path / "usr", real)
    clean.setenv("PATH", f"/nonexistent/meowcare{os.pathsep}{on_path}{os.pathsep}/usr/bin")
    found = locate_binaries(repositories=[checkout], environment_bin=str(environment))
    assert (found.source, found.directory) == ("repository build", str(build))
    found = locate_binaries(repositories=[], environment_bin=str(environment))
    assert (found.source, found.directory) == ("python environment", str(environment))
    found = locate_binaries(repositories=[], environment_bin=str(tmp_path / "nothing"))
    assert (found.source, found.directory) == ("PATH", str(on_path))


def test_a_prefix_without_the_services_says_how_to_install_them(tmp_path, clean):
    clean.setenv("MEOWCARE_PREFIX", str(tmp_path))
    with pytest.raises(BinariesNotFound, match=f"install.sh --prefix {tmp_path}"):
        locate_binaries()


def test_pytests_header_names_the_services_it_will_run(pytester, tmp_path, real, clean):
    bin_dir = _install(tmp_path / "prefix", real)
    clean.setenv("MEOWCARE_PREFIX", str(tmp_path / "prefix"))
    pytester.makepyfile(test_nothing="def test_nothing():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.stdout.fnmatch_lines([f"meowcare-testing *: store-service and sync-service from {bin_dir} (found by MEOWCARE_PREFIX)"])
