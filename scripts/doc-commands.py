#!/usr/bin/env python3
"""Runs every shell block a reader would paste from README.md and the docs, as written.

Each ```sh (or bash) block runs, unless the line right before it is
`<!-- not run: REASON -->` naming why it cannot run here and what covers it instead. The blocks
of one file run in order in one bash (a later block uses what an earlier one set, as a reader's
terminal would), from the repository's root, with the built executables first on PATH.

Two substitutions keep a run from touching a person's own deployment, and are the only ones:
`/tmp/meow` becomes a fresh temporary directory, and a bare `swift build` does nothing (the
test command has just built everything; a nested build would wait on the running one's lock).
Whatever a file's blocks start is stopped afterwards (`deploy/meowcare-local down`, background
jobs killed), and every service started gets MEOW_EXIT_WITH_PID, so none outlives the run.

Usage: python3 scripts/doc-commands.py [--bin DIR] [--list] [DOCUMENT ...]
Exit 0 when every block ran (or is marked), 1 otherwise, with the failing block's output.
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FENCE = re.compile(r"^```(sh|bash)\n(.*?)^```", re.M | re.S)
MARKER = re.compile(r"<!-- not run: (\S.*?) -->\s*$")
PRELUDE = """set -euo pipefail
swift() { if [ "$#" -eq 1 ] && [ "$1" = build ]; then return 0; fi; command swift "$@"; }
cleanup() {
  if [ -d "$MEOW_DOC_DIR/config" ]; then deploy/meowcare-local down --dir "$MEOW_DOC_DIR" >/dev/null 2>&1 || true; fi
  kill $(jobs -p) 2>/dev/null || true
}
trap cleanup EXIT
"""


def documents():
    names = ["README.md"] + sorted(glob.glob("docs/*.md")) + sorted(glob.glob("deploy/**/README.md", recursive=True)) \
        + sorted(glob.glob("clients/*/README.md"))
    return [name for name in names if os.path.isfile(os.path.join(ROOT, name))]


def blocks(name):
    """(line, code, reason) for each shell block of a document; reason is None when it runs."""
    text = open(os.path.join(ROOT, name), encoding="utf-8").read()
    found = []
    for match in FENCE.finditer(text):
        before = text[:match.start()].rstrip("\n").splitlines()
        marker = MARKER.search(before[-1]) if before else None
        found.append((text[:match.start()].count("\n") + 1, match.group(2), marker.group(1).strip() if marker else None))
    return found


def run(name, runnable, bin_dir):
    directory = tempfile.mkdtemp(prefix="dc.", dir="/tmp")
    try:
        script = PRELUDE + "".join(code.replace("/tmp/meow", directory) for _, code in runnable)
        environment = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""),
                           MEOW_DOC_DIR=directory, MEOW_EXIT_WITH_PID=str(os.getpid()), MEOWCARE_BIN_DIR=bin_dir)
        try:
            done = subprocess.run(["bash", "-c", script], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=600)
        except subprocess.TimeoutExpired as error:
            return False, f"timed out after {error.timeout} s\n{error.stdout or ''}{error.stderr or ''}"
        return done.returncode == 0, f"exit {done.returncode}\n--- stdout\n{done.stdout}--- stderr\n{done.stderr}"
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description="Run the docs' shell blocks as written.")
    parser.add_argument("--bin", default=os.path.join(ROOT, ".build", "debug"), help="where the built executables are")
    parser.add_argument("--list", action="store_true", help="list the blocks and whether each runs; run nothing")
    parser.add_argument("only", nargs="*", help="run only these documents (paths from the repository's root)")
    args = parser.parse_args()
    failures = 0
    for name in [name for name in documents() if not args.only or name in args.only]:
        found = blocks(name)
        runnable = [(line, code) for line, code, reason in found if reason is None]
        for line, code, reason in found:
            print(f"{name}:{line}: {'runs' if reason is None else 'not run: ' + reason}")
        if args.list or not runnable:
            continue
        ok, output = run(name, runnable, os.path.abspath(args.bin))
        print(f"{name}: {len(runnable)} block(s) {'passed' if ok else 'FAILED'}")
        if not ok:
            failures += 1
            print(output)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
