"""The pytest plugin as an app team meets it: fixtures, the marker, and a failure's report."""
import re
import textwrap


def test_fixtures_marker_and_failure_report(pytester):
    pytester.makepyfile(textwrap.dedent('''
        import pytest

        @pytest.mark.meow_cluster(devices={"X": "solo"})
        def test_marker_configures_the_cluster(meow_cluster):
            assert list(meow_cluster.devices) == ["X"]
            assert meow_cluster["X"].user == "solo"

        def test_default_cluster_and_factory(meow_cluster, meow_cluster_factory):
            assert sorted(meow_cluster.devices) == ["A", "B", "P"]
            other = meow_cluster_factory(devices={"Q": "someone"})
            assert other.directory != meow_cluster.directory

        def test_a_failure_gets_the_clusters_logs(meow_cluster):
            meow_cluster["A"].sync_now()
            assert False, "deliberate failure"
    '''))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)
    output = result.stdout.str()
    for section in ("meowcare: log of cloud", "meowcare: log of device A", "meowcare: log of device P",
                    "meowcare: cloud request log", "meowcare: client frames"):
        assert section in output, section
    assert '"op": "changes.fetchDatabase"' in output, "the request log lists the mirror's requests"
    assert '"op":"sync.now"' in output, "the frame trace shows the test's request"
    assert '"msg":"ready"' in output, "the services' own log lines"
    assert '"credential":"<redacted>"' in output, "hello's credentials are kept out of reports"
    # The page of it all: written beside its sources, naming the failure and the mirror's requests.
    assert "meowcare: report" in output
    page = re.search(r"(/tmp/meowcare-report\.\w+/report\.html)", output)
    assert page, "the report section names the page"
    html = open(page.group(1), encoding="utf-8").read()
    assert 'id="meow-data"' in html and "deliberate failure" in html and "changes.fetchDatabase" in html
