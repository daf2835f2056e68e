#!/usr/bin/env python3
"""Writes docs/SCENARIO-TESTS.md: for each situation of the reference SCENARIOS.md, the tests
that pin it. A test names its scenario in its display name, its function name (scenario12) or
the /// comment above it ("Scenario 6: ..."). Exits 1 when a scenario has no test.

usage: scripts/scenario-index.py [path/to/SCENARIOS.md]   (default ../shared/reference/SCENARIOS.md)
"""
import collections, glob, os, re, sys

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
reference = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "..", "shared", "reference", "SCENARIOS.md")

def numbers(text):
    found = set()
    for match in re.finditer(r"[Ss]cenarios? ((?:\d+(?:[–-]\d+)?(?:, | and | or |,|/)?)+)", text):
        for part in re.findall(r"\d+(?:[–-]\d+)?", match.group(1)):
            if re.search("[–-]", part):
                low, high = map(int, re.split("[–-]", part))
                found.update(range(low, high + 1))
            else:
                found.add(int(part))
    for match in re.finditer(r"scenario(\d+)", text):
        found.add(int(match.group(1)))
    return found

tests = collections.defaultdict(list)
for path in sorted(glob.glob(os.path.join(root, "Tests", "**", "*.swift"), recursive=True)):
    lines = open(path, encoding="utf-8").read().split("\n")
    for index, line in enumerate(lines):
        test = re.search(r'@Test(?:\("([^"]*)")?', line)
        if not test:
            continue
        end = index
        while end < len(lines) and "func " not in lines[end]:
            end += 1
        function = re.search(r"func (\w+)", lines[end]).group(1)
        start = index - 1
        comment = []
        while start >= 0 and lines[start].strip().startswith("///"):
            comment.insert(0, lines[start].strip()[3:].strip())
            start -= 1
        name = test.group(1) or ""
        for number in numbers(" ".join(comment) + " " + name + " " + function):
            tests[number].append((os.path.relpath(path, root), function, name))

scenarios = []
section = ""
text = open(reference, encoding="utf-8").read() if os.path.exists(reference) else ""
for line in text.split("\n"):
    if line.startswith("## "):
        section = line[3:].strip()
    item = re.match(r"(\d+)\. (.*)", line)
    if item:
        words = item.group(2).split()
        summary = " ".join(words[:14]) + (" …" if len(words) > 14 else "")
        scenarios.append((int(item.group(1)), section, summary))
if not scenarios:
    sys.exit(f"no scenarios read from {reference}")

out = ["# Scenario tests", "",
       "Each situation of the reference `SCENARIOS.md` and the tests that run it against real processes",
       "(store-service and sync-service executables on temp sockets). Written by",
       "`scripts/scenario-index.py`, which fails when a scenario has no test."]
missing = []
last = None
for number, section, summary in scenarios:
    if section != last:
        out += ["", f"## {section}", "", "| # | situation | tests |", "|---|---|---|"]
        last = section
    found = tests.get(number, [])
    if not found:
        missing.append(number)
    cells = "<br>".join(f"`{function}` ({path})" for path, function, _ in found) or "**none**"
    out.append(f"| {number} | {summary.replace('|', '/')} | {cells} |")
open(os.path.join(root, "docs", "SCENARIO-TESTS.md"), "w", encoding="utf-8").write("\n".join(out).rstrip() + "\n")
if missing:
    sys.exit(f"scenarios without a test: {missing}")
print(f"{len(scenarios)} scenarios, each with a test: docs/SCENARIO-TESTS.md")
