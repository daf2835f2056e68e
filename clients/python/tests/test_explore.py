"""The schedule explorer from Python (docs/EXPLORING.md): flows built in Python, custom steps that
use the device client, invariants over the run, ``meowctl explore`` underneath."""
from pathlib import Path
import textwrap

import pytest

from meowcare_testing.explore import ExploreFailed, Flow, Run, explore, replay


def visits_flow(*, fixed: bool) -> Flow:
    """Two devices of one user record visits to one session. The wrong app counts them in the
    session's title with a read-modify-write, so two devices adding before they see each
    other's visit lose one (the later title wins, as the documented rule says). The fixed app
    inserts an event per visit."""
    flow = Flow("visits" + (" (fixed)" if fixed else ""))
    a, b = flow.actor("A", user="olivia"), flow.actor("B", user="olivia")
    # The session's title is the app's alone: the checks judge the writes the history records
    # (built-in steps'), so a field a custom step writes is left to the team's invariant.
    a.insert("s1", "CareSession", fields=["id"])

    @flow.step
    def add_visit(ctx):
        session = ctx.object("s1")
        if session is None:
            return {"added": False}  # not here yet: nothing to add to
        if fixed:
            ctx.device.insert("CareEvent", {"id": f"visit-{ctx.actor}-{len(ctx.memory)}", "eventTypeRaw": "vetVisit",
                                            "occurredAt": "2026-07-27T09:00:00Z", "updatedAt": "2026-07-27T09:00:00Z",
                                            "session": session.object_id})
        else:
            ctx.device.set(session.object_id, {"title": (session.get("title") or "visits:") + "+"})
        ctx.memory[str(len(ctx.memory))] = True
        return {"added": True}

    @flow.invariant
    def every_visit_counted(run: Run):
        added = sum(1 for entry in run.history if entry["op"] == "custom.add_visit" and (Run.result(entry) or {}).get("added"))
        for obj in run.objects("CareSession"):
            counted = (obj["values"].get("title") or "").count("+") if not fixed else \
                len([e for e in run.objects("CareEvent") if e["device"] == obj["device"]])
            if counted != added:
                yield f"device {obj['device']} counts {counted} visits; the app added {added}"

    a.custom("add_visit")
    b.custom("add_visit").custom("add_visit")
    return flow


def test_a_correct_python_flow_passes():
    report = explore(visits_flow(fixed=True), seeds=range(1, 21), faults="none")
    assert report.passed, report.text
    assert report.schedules == 20


def test_the_budget_is_schedules_or_seconds():
    counted = explore(visits_flow(fixed=True), schedules=3, faults="none")
    assert counted.passed, counted.text
    assert counted.schedules == 3
    timed = explore(visits_flow(fixed=True), seconds=0.5, faults="none")
    assert timed.passed, timed.text
    assert timed.schedules >= 1
    assert (timed.raw["firstSeed"], timed.raw["lastSeed"]) == ("1", str(timed.schedules))


def test_a_wrong_python_flow_fails_with_its_check_and_replays_the_same_history():
    flow = visits_flow(fixed=False)
    report = explore(flow, schedules=80, faults="none")
    assert not report.passed, "no schedule lost a visit"
    assert report.check == "every_visit_counted"
    assert "visits; the app added" in report.failures[0]["explanation"]
    assert any(line.startswith("1. step") for line in report.lines)
    assert f"--replay {report.seed}" in report.replay_command
    page = Path(report.page).read_text(encoding="utf-8")  # the shrunk run as a page, kept after the run
    assert page.startswith("<!DOCTYPE html>") and "every_visit_counted" in page
    with pytest.raises(ExploreFailed) as failed:
        report.assert_passed()
    for part in (f"seed {report.seed}", "every_visit_counted", "Schedule:", "Replay:"):
        assert part in str(failed.value), part

    again = replay(flow, report.seed, faults="none")
    assert again.check == report.check and again.choices == report.choices
    assert [normalized(entry, again.history) for entry in again.history] == \
        [normalized(entry, report.history) for entry in report.history]


def normalized(entry, history):
    """An entry with the cloud's request-log numbers counted from the run's first."""
    first = min((seq for item in history for seq in item.get("cloudRequests") or []), default=0)
    return dict(entry, cloudRequests=[seq - first for seq in entry.get("cloudRequests") or []])


def test_a_failing_step_is_reported_by_the_custom_steps_check():
    flow = Flow("a step that assumes the session arrived")
    flow.actor("A", user="olivia").insert("s1", "CareSession", fields=["title"])

    @flow.step
    def rename(ctx):
        ctx.device.set(ctx.object("s1").object_id, {"title": "renamed"})  # AttributeError when s1 has not arrived

    flow.actor("B", user="olivia").custom("rename")
    report = explore(flow, schedules=30, faults="none")
    assert report.check == "customSteps", report.text
    assert "AttributeError" in report.failures[0]["explanation"]


def test_the_plugin_fails_the_test_with_the_report(pytester):
    pytester.makepyfile(textwrap.dedent('''
        from meowcare_testing.explore import Flow

        def test_explored(meow_explore):
            flow = Flow("no conflicts, ever")
            flow.actor("A", user="olivia").insert("s1", "CareSession", fields=["title"]).update("s1", fields=["title"])
            flow.actor("B", user="olivia").update("s1", fields=["title"]).update("s1", fields=["title"])

            @flow.invariant
            def sends_never_conflict(run):
                return [f"send #{e['index']} met an edit" for e in run.entries("sync.send") if (run.result(e) or {}).get("conflictsResolved")]

            meow_explore(flow, schedules=60, faults="none")
    '''))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    output = result.stdout.str()
    for part in ("meowcare explore: report", "meowcare explore: history of the shrunk run", "sends_never_conflict", "Replay:",
                 "meowcare explore: page of the shrunk run", "file:///tmp/meowcare-explore."):
        assert part in output, part
