#!/usr/bin/env python3
"""Builds the Python package (clients/python) as a wheel with the standard library alone.

The package is pure Python with no dependencies, so its wheel is a zip of the package's files
and a dist-info directory (PEP 427, core metadata 2.1). Building it here needs neither network
nor setuptools' `wheel` (the machine's setuptools may be too old to build wheels itself): the
release artefact is made offline. Name, version, summary, extras and entry points come from
pyproject.toml and meowcare_testing.__version__, as setuptools would take them; the same
sources give the same bytes (fixed timestamps, sorted entries).

Usage: python3 scripts/build-wheel.py OUT_DIR    prints the wheel's path
"""
import base64
import hashlib
import os
import re
import sys
import tomllib
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROJECT = os.path.join(ROOT, "clients", "python")
STAMP = (1980, 1, 1, 0, 0, 0)


def version_of(package_dir):
    text = open(os.path.join(package_dir, "__init__.py"), encoding="utf-8").read()
    found = re.search(r'^__version__ = "([^"]+)"$', text, re.M)
    if not found:
        sys.exit(f"build-wheel: no __version__ = \"…\" line in {package_dir}/__init__.py")
    return found.group(1)


def metadata(project, version):
    lines = ["Metadata-Version: 2.1", f"Name: {project['name']}", f"Version: {version}",
             f"Summary: {project['description']}", f"Requires-Python: {project['requires-python']}"]
    lines += [f"Requires-Dist: {requirement}" for requirement in project.get("dependencies", [])]
    for extra, requirements in sorted(project.get("optional-dependencies", {}).items()):
        lines.append(f"Provides-Extra: {extra}")
        lines += [f'Requires-Dist: {requirement}; extra == "{extra}"' for requirement in requirements]
    readme = open(os.path.join(PROJECT, project["readme"]), encoding="utf-8").read()
    lines.append("Description-Content-Type: text/markdown")
    return "\n".join(lines) + "\n\n" + readme


def entry_points(project):
    sections = []
    for group, entries in sorted(project.get("entry-points", {}).items()):
        sections.append(f"[{group}]\n" + "".join(f"{name} = {target}\n" for name, target in sorted(entries.items())))
    return "\n".join(sections)


def record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    config = tomllib.load(open(os.path.join(PROJECT, "pyproject.toml"), "rb"))
    project, setuptools = config["project"], config["tool"]["setuptools"]
    (package,) = setuptools["packages"]
    package_dir = os.path.join(PROJECT, package)
    version = version_of(package_dir)
    distribution = re.sub(r"[-_.]+", "_", project["name"])
    info = f"{distribution}-{version}.dist-info"

    files = {}
    data_patterns = setuptools.get("package-data", {}).get(package, [])
    for name in sorted(os.listdir(package_dir)):
        if name.endswith(".py") or name in data_patterns:
            files[f"{package}/{name}"] = open(os.path.join(package_dir, name), "rb").read()
    files[f"{info}/METADATA"] = metadata(project, version).encode()
    files[f"{info}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: meowcare scripts/build-wheel.py\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    files[f"{info}/entry_points.txt"] = entry_points(project).encode()
    files[f"{info}/top_level.txt"] = f"{package}\n".encode()
    record = [record_line(name, data) for name, data in files.items()] + [f"{info}/RECORD,,"]
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()

    os.makedirs(sys.argv[1], exist_ok=True)
    path = os.path.join(sys.argv[1], f"{distribution}-{version}-py3-none-any.whl")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as wheel:
        for name, data in files.items():
            entry = zipfile.ZipInfo(name, STAMP)
            entry.external_attr = 0o644 << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            wheel.writestr(entry, data)
    print(path)


if __name__ == "__main__":
    main()
