"""docs/EXPLORING.md's Python block runs as written: it is a pytest module, run here as an app
team would run it (the installed package's plugin gives it the meow_explore fixture)."""
import pathlib
import re

PAGE = pathlib.Path(__file__).resolve().parents[3] / "docs" / "EXPLORING.md"


def test_the_pages_python_block_passes(pytester):
    blocks = re.findall(r"^```python\n(.*?)^```", PAGE.read_text(encoding="utf-8"), re.S | re.M)
    assert blocks, "docs/EXPLORING.md has no ```python block"
    for number, block in enumerate(blocks):
        pytester.makepyfile(**{f"test_exploring_{number}": block})
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=len(blocks))
