#!/usr/bin/env python3
"""Checks the differences pages against the tests: every bullet of docs/differences-*.md names
at least one test, as `Type.function`, `Type` "display name" (a leading or trailing "…" marks
a part of the name) or a whole suite `Type`, and every test it names exists under Tests/. Exits 1 listing what is wrong.
Run by scripts/test.sh before the suite, so a renamed test cannot leave the page behind.

usage: scripts/docs-check.py
"""
import glob, os, re, sys

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sources = {path: open(path, encoding="utf-8").read() for path in glob.glob(os.path.join(root, "Tests", "**", "*.swift"), recursive=True)}
types, functions, displays = set(), set(), []
for text in sources.values():
    types |= set(re.findall(r"\b(?:struct|extension|enum|class)\s+(\w+)", text))
    functions |= set(re.findall(r"\bfunc\s+(\w+)", text))
    displays += [re.sub(r"\s+", " ", name.replace('\\"', '"')) for name in re.findall(r'@(?:Test|Suite)\("((?:[^"\\]|\\.)*)"', text)]

problems = []
for page in sorted(glob.glob(os.path.join(root, "docs", "differences-*.md"))):
    name = os.path.relpath(page, root)
    text = open(page, encoding="utf-8").read()
    for bullet in re.split(r"\n(?=- )", text)[1:]:
        bullet = re.split(r"\n(?:#|\n)", bullet)[0]
        if not bullet.startswith("- "):
            continue
        line = re.sub(r"\s+", " ", bullet)
        named = 0
        for type_name, function in re.findall(r"`(\w+)\.(\w+)`", line):
            if not type_name.endswith(("Tests", "Test")):
                continue  # an op (`records.modify`) or a number, not a test
            named += 1
            if type_name not in types or function not in functions:
                problems.append(f"{name}: no test {type_name}.{function}")
        for type_name, quoted in re.findall(r'`(\w+Tests?)`((?:\s*(?:,|and|/)?\s*"[^"]+")+)', line):
            if type_name not in types:
                problems.append(f"{name}: no test type {type_name}")
            for part in re.findall(r'"([^"]+)"', quoted):
                named += 1
                fragment = part.strip().strip("…").strip().rstrip(".")
                if not any(fragment in display for display in displays):
                    problems.append(f'{name}: no test named "{part}" ({type_name})')
        # A whole suite named alone (`ConvergenceTests` (8 seeds per variant)) names its tests.
        for type_name in re.findall(r"`(\w+Tests)`(?!\.)", line):
            named += 1
            if type_name not in types:
                problems.append(f"{name}: no test type {type_name}")
        if named == 0:
            problems.append(f"{name}: a line names no test: {line[:100]}…")

for problem in problems:
    print(problem)
sys.exit(1 if problems else 0)
