#!/usr/bin/env python3
"""Checks that the repository's VERSION is the version the executables and the Python package name.

VERSION is the release's version. Two copies cannot read it at build time and are held to it
here: MeowVersion.current (Shared/MeowWire/MeowVersion.swift, what every executable's --version
prints) and meowcare_testing.__version__ (the Python package's, which its metadata takes).
scripts/package-test.sh then checks the built executables and the installed wheel themselves.

Usage: python3 scripts/version-check.py     prints the version; exit 1 naming each copy that differs
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COPIES = [
    ("Shared/MeowWire/MeowVersion.swift", r'public static let current = "([^"]+)"'),
    ("clients/python/meowcare_testing/__init__.py", r'^__version__ = "([^"]+)"$'),
]


def main():
    version = open(os.path.join(ROOT, "VERSION"), encoding="utf-8").read().strip()
    if not re.fullmatch(r"\d+\.\d+\.\d+([-+.][0-9A-Za-z.]+)?", version):
        sys.exit(f"version-check: VERSION holds {version!r}, not a version such as 1.2.3")
    wrong = []
    for path, pattern in COPIES:
        found = re.search(pattern, open(os.path.join(ROOT, path), encoding="utf-8").read(), re.M)
        if not found or found.group(1) != version:
            wrong.append(f"{path} says {found.group(1) if found else 'nothing'}")
    if wrong:
        sys.exit(f"version-check: VERSION is {version}, but " + "; ".join(wrong) + ". Set every copy to the same version.")
    print(version)


if __name__ == "__main__":
    main()
