"""Device clocks (issue 30, part 3): set and advanced over the socket, all at once for a cluster.

The store-service's ``clock.set`` is the lead's part; until a build has it, the op answers
``unknownOp`` and these tests skip, saying so. The cloud's ``admin.setClock`` exists already.
"""
import datetime

import pytest

from conftest import event_values
from meowcare_testing import RequestRateLimited, UnknownOp


@pytest.fixture
def device_clocks(meow_cluster):
    try:
        meow_cluster["A"].advance_clock(0)
    except UnknownOp:
        pytest.skip("this store-service build has no clock.set (it answers unknownOp): device clocks are not in it yet")
    return meow_cluster


@pytest.mark.meow_cluster(devices={"A": "owner"})
def test_the_clouds_clock_is_set_and_advanced(meow_cluster):
    fixed = datetime.datetime(2030, 1, 1, tzinfo=datetime.timezone.utc)
    assert meow_cluster.cloud.set_clock(fixed) == {"now": fixed.timestamp(), "fixed": True}
    assert meow_cluster.cloud.advance_clock(90)["now"] == fixed.timestamp() + 90
    assert meow_cluster.cloud.set_clock(None)["fixed"] is False


@pytest.mark.meow_cluster(devices={"A": "owner"})
def test_a_devices_clock_is_set_advanced_and_released(device_clocks):
    a = device_clocks["A"]
    fixed = 1_900_000_000.0
    assert a.set_clock(fixed) == {"now": fixed, "fixed": True}
    assert a.advance_clock(60) == {"now": fixed + 60, "fixed": True}
    assert a.set_clock(None)["fixed"] is False


@pytest.mark.meow_cluster(devices={"A": "owner", "B": "owner"})
def test_advancing_every_clock_lets_a_retry_after_pass_in_milliseconds(device_clocks):
    cluster = device_clocks
    a = cluster["A"]
    cluster.cloud.inject_fault("requestRateLimited", op="records.modify", user=a.user, retry_after_seconds=3600)
    a.insert("CareEvent", event_values("e1"))
    with pytest.raises(RequestRateLimited) as limited:
        a.sync_send()
    assert limited.value.retry_after_seconds == 3600
    assert a.sync_send()["deferred"] == 1, "held back until the retry-after has passed"
    clocks = cluster.advance_clocks(3601)
    assert set(clocks) == {"A", "B", "cloud"}
    cluster.settle()
    assert cluster["B"].count("CareEvent") == 1
    cluster.assert_converged()
