"""Device clocks (issue 30, part 3): read, set and advanced over the socket, all at once for a cluster.

The store-service's ``clock.set`` is the lead's part; a build without it answers ``unknownOp``
and the device-clock tests skip, saying so. The cloud's ``admin.setClock`` exists in every build.
"""
import datetime

import pytest

from conftest import event_values
from meowcare_testing import RequestRateLimited, UnknownOp


@pytest.fixture
def device_clocks(meow_cluster):
    try:
        meow_cluster["A"].clock()
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
def test_a_devices_clock_is_set_advanced_and_released_and_stamps_history(device_clocks):
    a = device_clocks["A"]
    assert a.clock()["offsetSeconds"] == 0
    fixed = datetime.datetime(2031, 5, 1, 12, 0, tzinfo=datetime.timezone.utc)
    was = a.set_clock(fixed)
    assert fixed.timestamp() <= was["now"] < fixed.timestamp() + 5, "a set clock runs on from its new reading"
    assert was["offsetSeconds"] != 0
    moved = a.advance_clock(3600)
    assert moved["now"] - was["now"] >= 3600
    a.insert("CareEvent", event_values("e1"))
    stamped = a.history_fetch("Private")["transactions"][-1]["timestamp"]
    assert stamped.startswith("2031-05-01T13:"), stamped
    assert a.set_clock(None)["offsetSeconds"] == 0


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
