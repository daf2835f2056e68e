"""pytest fixtures (installed with ``pip install 'meowcare-testing[pytest]'``, loaded by the ``pytest11`` entry point).

- ``meow_cluster``: a fresh, started :class:`~meowcare_testing.Cluster` per test, stopped after
  it (pass or fail). Configure it with the marker
  ``@pytest.mark.meow_cluster(devices={"A": "owner", "P": "participant"}, sync_mode="automatic")``
  (any of ``Cluster``'s keyword arguments).
- ``meow_cluster_factory``: ``make(**kwargs)`` starts more clusters in one test; all stop after it.
- ``meow_explore``: ``meow_explore(flow, schedules=50)`` explores a :class:`~meowcare_testing.explore.Flow`
  (``meowcare_testing.explore.explore``) and fails the test with the report when a schedule
  fails a check; ``meow_explore.replay(flow, seed)`` runs one seed again (docs/EXPLORING.md).

When a test fails, its report gets each cluster's service logs, the cloud's request log and the
last frames of every client connection, as extra sections (shown by pytest under the failure),
and the path of ``meowctl report``'s page of it all (``Cluster.write_report``); an exploration's
report and the shrunk run's history likewise.
"""
from __future__ import annotations

import json
from typing import Any, Callable, Generator, Iterator, List

import pytest

from . import __version__
from .binaries import locate_binaries
from .cluster import Cluster
from .errors import BinariesNotFound
from .explore import ExploreFailed, ExploreReport, Flow, explore, replay

_CLUSTERS = pytest.StashKey[List[Cluster]]()
_EXPLORATIONS = pytest.StashKey[List[ExploreReport]]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "meow_cluster(**options): keyword arguments for the meow_cluster fixture's Cluster "
                            "(devices=, users=, sync_mode=, storage=, model=, device_args=, …)")


def pytest_report_header(config: pytest.Config) -> str:
    """Which services a run's clusters start (unless a test passes its own ``bin_dir``)."""
    try:
        return f"meowcare-testing {__version__}: {locate_binaries().summary}"
    except BinariesNotFound as error:
        return f"meowcare-testing {__version__}: {error}"


def _track(request: pytest.FixtureRequest, cluster: Cluster) -> None:
    request.node.stash.setdefault(_CLUSTERS, []).append(cluster)


@pytest.fixture
def meow_cluster_factory(request: pytest.FixtureRequest) -> Iterator[Callable[..., Cluster]]:
    """Starts clusters on demand (``make(devices={...})``); each is stopped when the test ends."""
    made: List[Cluster] = []

    def make(**options: Any) -> Cluster:
        cluster = Cluster(**options)
        made.append(cluster)
        _track(request, cluster)
        return cluster.start()

    yield make
    for cluster in reversed(made):
        cluster.stop()


@pytest.fixture
def meow_cluster(request: pytest.FixtureRequest, meow_cluster_factory: Callable[..., Cluster]) -> Cluster:
    """A started cluster for this test, configured by the ``meow_cluster`` marker (closest wins)."""
    marker = request.node.get_closest_marker("meow_cluster")
    options = dict(marker.kwargs) if marker is not None else {}
    if marker is not None and marker.args:
        options.setdefault("devices", marker.args[0])
    return meow_cluster_factory(**options)


class MeowExplore:
    """The ``meow_explore`` fixture: explores flows for one test and keeps their reports."""

    def __init__(self, request: pytest.FixtureRequest):
        self._request = request

    def _keep(self, report: ExploreReport) -> ExploreReport:
        self._request.node.stash.setdefault(_EXPLORATIONS, []).append(report)
        return report

    def __call__(self, flow: Flow, **options: Any) -> ExploreReport:
        """Explores ``flow`` (``explore``'s keyword arguments); a failing schedule fails the test."""
        report = self._keep(explore(flow, **options))
        if not report.passed:
            raise ExploreFailed(report)
        return report

    def replay(self, flow: Flow, seed: int, **options: Any) -> ExploreReport:
        """Seed ``seed`` again (shrunk the same way); the report, failing or not, with its history."""
        return self._keep(replay(flow, seed, **options))


@pytest.fixture
def meow_explore(request: pytest.FixtureRequest) -> MeowExplore:
    """Explores flows in this test: ``meow_explore(flow, schedules=50)``, ``meow_explore.replay(flow, seed)``."""
    return MeowExplore(request)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: "pytest.CallInfo[None]") -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    if not report.failed or call.when == "teardown":
        return
    clusters: List[Cluster] = item.stash.get(_CLUSTERS, [])
    for index, cluster in enumerate(clusters):
        prefix = "meowcare" if index == 0 else f"meowcare cluster {index + 1}"
        try:
            sections = cluster.failure_report()
        except Exception as error:  # a report must never hide the test's own failure
            sections = [("report", f"could not collect the cluster's report: {error!r}")]
        for title, text in sections:
            report.sections.append((f"{prefix}: {title}", text))
        try:
            page = cluster.write_report(failures=[report.longreprtext[-4000:]])
            shown = f"{page}\n(open it in a browser: file://{page})" if page else "(no meowctl beside the services: no page)"
        except Exception as error:  # the page must never hide the test's own failure
            shown = f"could not write the report page: {error!r}"
        report.sections.append((f"{prefix}: report", shown))
    for index, exploration in enumerate(item.stash.get(_EXPLORATIONS, [])):
        if exploration.passed:
            continue
        prefix = "meowcare explore" if index == 0 else f"meowcare explore {index + 1}"
        report.sections.append((f"{prefix}: report", exploration.text))
        if exploration.page:
            report.sections.append((f"{prefix}: page of the shrunk run", f"{exploration.page}\n(open it in a browser: file://{exploration.page})"))
        report.sections.append((f"{prefix}: history of the shrunk run",
                                "\n".join(json.dumps(entry, sort_keys=True) for entry in exploration.history)))
