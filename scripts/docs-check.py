#!/usr/bin/env python3
"""Checks the docs against the tests and the repository. Exits 1 listing what is wrong.

1. Every bullet of docs/differences-*.md and docs/RULES.md names at least one test, as
   `Type.function`, `Type` "display name" (a leading or trailing "…" marks a part of the name) or a
   whole suite `Type`, and every test it names exists under Tests/.
2. Every relative markdown link `[text](path)` or `[text](path#anchor)` in README.md and docs/*.md
   points at a file that exists, and an anchor at a heading of the target (GitHub's slugs).
3. Every file name README.md and docs/*.md cite (`name.md`, `.swift`, `.py`, `.sh`, in backticks
   or plain text, not part of a URL) is a file of the repository (matched by base name against
   `git ls-files`).
4. No file git tracks under README.md, docs/, Services/, Shared/, Tests/ or scripts/ mentions
   SEMANTICS or SCENARIOS (external reference files that are not in the repository; the rules are
   docs/RULES.md, the scenarios docs/SCENARIO-TESTS.md).
5. A ```swift block right after `<!-- example: NAME in PATH -->` is, line for line once
   indented alike, the code between `// example: NAME` and `// end example` in the test file
   PATH: the test runs the example, and the page shows what ran.
Run by scripts/test.sh before the suite, so a renamed test or file cannot leave the docs behind.

usage: scripts/docs-check.py
"""
import glob, os, re, subprocess, sys

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
problems = []


def rel(path):
    return os.path.relpath(path, root)


def read(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read()


# 1. Tests named by the differences pages and the rules page.
sources = {path: read(path) for path in glob.glob(os.path.join(root, "Tests", "**", "*.swift"), recursive=True)}
types, functions, displays = set(), set(), []
for text in sources.values():
    types |= set(re.findall(r"\b(?:struct|extension|enum|class)\s+(\w+)", text))
    functions |= set(re.findall(r"\bfunc\s+(\w+)", text))
    displays += [re.sub(r"\s+", " ", name.replace('\\"', '"')) for name in re.findall(r'@(?:Test|Suite)\("((?:[^"\\]|\\.)*)"', text)]

test_pages = sorted(glob.glob(os.path.join(root, "docs", "differences-*.md"))) + [os.path.join(root, "docs", "RULES.md")]
for page in test_pages:
    if not os.path.exists(page):
        problems.append(f"{rel(page)}: missing")
        continue
    name = rel(page)
    text = read(page)
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

# The pages whose links and cited files are checked.
pages = [os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "docs", "*.md")))
pages = [page for page in pages if os.path.exists(page)]


def without_code_blocks(text):
    """The text with fenced code blocks blanked (line numbers kept): links there are examples."""
    out, fenced = [], False
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            out.append("")
        else:
            out.append("" if fenced else line)
    return out


def slug(heading):
    """GitHub's anchor for a heading: markup dropped, lower case, punctuation removed, spaces → -."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").replace("*", "")
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


anchor_cache = {}


def anchors(path):
    if path not in anchor_cache:
        found, seen = set(), {}
        for line in without_code_blocks(read(path)):
            heading = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
            if not heading:
                continue
            base = slug(heading.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
        anchor_cache[path] = found
    return anchor_cache[path]


# 2. Relative links.
for page in pages:
    for number, line in enumerate(without_code_blocks(read(page)), 1):
        line = re.sub(r"`[^`]*`", "", line)  # code spans are not links
        for target in re.findall(r"\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)", line):
            if re.match(r"[a-zA-Z][\w+.-]*:", target):
                continue  # https:, mailto:, …
            path_part, _, anchor = target.partition("#")
            destination = page if not path_part else os.path.normpath(os.path.join(os.path.dirname(page), path_part))
            where = f"{rel(page)}:{number}"
            if not os.path.exists(destination):
                problems.append(f"{where}: link to a missing file: {target}")
            elif anchor and destination.endswith(".md") and os.path.isfile(destination) and anchor.lower() not in anchors(destination):
                problems.append(f"{where}: link to a missing heading: {target}")

# 3. Cited file names.
try:
    tracked = subprocess.run(["git", "-C", root, "ls-files"], capture_output=True, text=True, check=True).stdout.split("\n")
except (OSError, subprocess.CalledProcessError):
    tracked = [rel(path) for path in glob.glob(os.path.join(root, "**", "*"), recursive=True)]
tracked = [path for path in tracked if path]
# Files written by this change but not yet committed still count.
tracked += [rel(path) for path in pages]
basenames = {os.path.basename(path) for path in tracked}
# Names the docs give files the reader makes, which the repository rightly does not hold.
allowed = {
    "client.py",  # docs/PROTOCOL.md: the example program, saved by the reader (and ProtocolDocumentTests) under that name
}
external = re.compile(r"\b(SEMANTICS|SCENARIOS)\b")
for page in pages:
    for number, line in enumerate(read(page).split("\n"), 1):
        scrubbed = re.sub(r"\b[a-zA-Z][\w+.-]*://\S+", "", line)  # URLs
        for cited in re.findall(r"(?<![\w./+-])[\w./+-]*\w\.(?:md|swift|py|sh)\b", scrubbed):
            if external.search(cited):
                continue  # reported by check 4
            if os.path.basename(cited) not in basenames and cited not in allowed:
                problems.append(f"{rel(page)}:{number}: cites a file that is not in the repository: {cited}")

# 4. The external reference files.
for path in tracked:
    if not (path == "README.md" or path.split("/")[0] in ("docs", "Services", "Shared", "Tests", "scripts")):
        continue
    full = os.path.join(root, path)
    if path == "scripts/docs-check.py" or not os.path.isfile(full):  # this check names what it forbids
        continue
    try:
        text = read(full)
    except UnicodeDecodeError:
        continue
    for number, line in enumerate(text.split("\n"), 1):
        if external.search(line):
            problems.append(f"{path}:{number}: names an external reference (SEMANTICS/SCENARIOS): {line.strip()[:120]}")

# 5. Examples quoted from tests.
EXAMPLE = re.compile(r"<!-- example: (\S+) in (\S+) -->\n```swift\n(.*?)^```", re.M | re.S)


def dedented(lines):
    lines = [line.rstrip() for line in lines]
    indent = min((len(line) - len(line.lstrip()) for line in lines if line.strip()), default=0)
    return [line[indent:] for line in lines]


for page in pages:
    text = read(page)
    for name, path, block in EXAMPLE.findall(text):
        source_path = os.path.join(root, path)
        where = f"{rel(page)}: example {name}"
        if not os.path.isfile(source_path):
            problems.append(f"{where}: no file {path}")
            continue
        found = re.search(rf"^[ \t]*// example: {re.escape(name)}\n(.*?)^[ \t]*// end example", read(source_path), re.M | re.S)
        if not found:
            problems.append(f"{where}: {path} has no '// example: {name}' … '// end example'")
        elif dedented(found.group(1).splitlines()) != dedented(block.splitlines()):
            problems.append(f"{where}: the block differs from {path}; copy the test's code into the page")

for problem in dict.fromkeys(problems):
    print(problem)
sys.exit(1 if problems else 0)
