#!/usr/bin/env python3
"""Writes docs/SCENARIO-TESTS.md: for each cross-process situation listed below (SITUATIONS), the
tests that run it. A test names its scenario in its display name ("Scenario 6: ..."), its function
name (scenario12) or the /// comment above it. Exits 1 when a scenario has no test.

The situations are this project's own list: what the real processes (store-service instances for
devices, one sync-service) must get right, and the outcome a user expects. They come from the two
field reports (docs/FIELD-REPORTS.md) and from the cases sync engines built on CloudKit test.
Edit the list here, then run the script.

usage: scripts/scenario-index.py
"""
import collections, glob, os, re, sys

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (section, [(number, situation and expected outcome)]). Cast: A and B are two devices of one
# user; O is a share's owner and P a participant, each on a device of their own. "send" and
# "fetch" are the explicit sync steps (sync.send, sync.fetch).
SITUATIONS = [
    ("Store routing and the field reports", [
        (1, "A new CareEvent saved without a store lands in the private store and, once sent, in the "
            "private database's Core Data zone — never in the shared database ([seed 002](FIELD-REPORTS.md#seed-002))."),
        (2, "A CareEvent a client forces into the shared store outside any share zone is not silently stuck: "
            "the device logs seed 002's exact fault line, reports the object as unexportable, and the "
            "sync-service refuses such a record with permissionFailure."),
        (3, "At start-up a saved orphan CareEvent is attached to the default session with no store "
            "reassignment; an unsaved one is first assigned to the session's store ([seed 000](FIELD-REPORTS.md#seed-000))."),
        (4, "Assigning a saved object to any store, even its own, fails with Core Data's exact text; a "
            "relationship across the two stores is refused at save with Core Data's exact text (133010)."),
        (5, "Moving a CareEvent from a private session to a shared one is a delete in the private zone "
            "plus a create in the share's zone, never a store reassignment."),
        (6, "In-memory mode loads both stores with distinct identities; loading one identity twice stops "
            "start-up with \"Can't add the same store twice\" (134081)."),
    ]),
    ("Basic sync", [
        (7, "A creates 1, 10 and 444 CareEvents and sends; B fetches and has exactly that set; A has "
            "nothing pending."),
        (8, "1,360 pending records go in requests of at most 400 items; when the server's limit is "
            "lowered, limitExceeded makes the device halve its batches until everything arrives."),
        (9, "A rename made on A reaches B and one made on B reaches A; both show the latest value."),
        (10, "A deletes a record; after B fetches it is gone on B, and the delete is applied once."),
    ]),
    ("Conflicts", [
        (11, "A edits one field and B another field of the same record, and both send: both edits "
             "survive on A, on B and in the cloud."),
        (12, "A and B edit the same field: the conflict policy decides (by default the later edit), "
             "with the same result whichever device sends last; serverWins and clientWins are options."),
        (13, "The losing send gets serverRecordChanged with the server's, the client's and the "
             "ancestor's copies; the device merges, queues the result once, and the next send converges."),
        (14, "Every order of a server edit, a client edit and the fetch that brings the server's edit "
             "gives the same per-field result, also when saves land while a send or fetch is at the server."),
        (15, "An atomic batch for one zone holds a conflicting edit and a new record: the new record "
             "fails with batchRequestFailed, the zone is unchanged, both stay queued and are saved later."),
        (16, "A \"new\" record whose name the server already has (sent without a change tag) gets "
             "serverRejectedRequest; the device fetches the server's copy and merges."),
        (17, "A and B create the same logical object (same stable id) offline: after syncing there is "
             "exactly one record."),
        (18, "Two client connections of one store-service save the same object: the saving context's "
             "merge policy decides (error, store trump, object trump, overwrite, rollback), as in Core Data."),
    ]),
    ("Delete versus edit", [
        (19, "A deletes a record while an offline B edits it; B's send gets unknownItem and the entity's "
             "policy applies: the delete wins by default, the edit brings the record back with resurrect."),
        (20, "B fetches A's delete while B has a queued save of that record: the delete wins and no "
             "queued change is left pointing at nothing."),
        (21, "A queued save whose row no longer exists is dropped; nothing is uploaded."),
        (22, "Deleting a session with its events sends the events' deletes with the session's, in one "
             "request that the server accepts. (The server's own rule, that deleting a parent record "
             "alone while children point at it is referenceViolation, never fires for the mirror, which "
             "stores relationships as record names; the test checks that rule directly.)"),
        (23, "A moves an event into a session that B deletes. No referenceViolation: when A fetches B's "
             "delete, the relationship's cascade rule deletes the moved event on A, A sends that delete, "
             "and every device and the cloud end with neither the session nor the event. An event logged "
             "into a session while the session's delete is being fetched goes with it the same way."),
    ]),
    ("Zones, tokens, crashes", [
        (24, "The zone was deleted behind the device's back: the first send gets zoneNotFound, the device "
             "recreates the zone and uploads its records again, and B sees them."),
        (25, "A fetch reports a zone deleted: its local rows are removed. Purged: removed and never "
             "uploaded again. Encrypted-data reset: kept and all uploaded again."),
        (26, "changeTokenExpired: the device fetches from scratch, with no duplicates and no queued "
             "change lost."),
        (27, "The store-service is killed right after a client's save: after the restart the write and "
             "its outgoing-queue entry both exist (never one without the other)."),
        (28, "Writes made while the sync-service is down are queued durably and sent once it is back."),
        (29, "A paged fetch (moreComing) killed midway resumes from the last applied page; every record "
             "arrives exactly once."),
        (30, "A send whose answer was lost (applied on the server) is retried and leaves exactly one copy "
             "of each record, also when the record was deleted or edited elsewhere meanwhile."),
    ]),
    ("Retries, quotas, accounts", [
        (31, "requestRateLimited, serviceUnavailable or zoneBusy with a retry-after of N seconds: the "
             "change stays queued, is not sent again before N seconds, then succeeds."),
        (32, "The sync-service unreachable for many cycles: queued changes stay intact and nothing is "
             "given up."),
        (33, "quotaExceeded: the change stays queued durably, the client is told, and the next send "
             "tries it again."),
        (34, "No account, or an account temporarily unavailable: sends fail with notAuthenticated or "
             "accountTemporarilyUnavailable, and nothing is lost."),
        (35, "Signing out or switching accounts clears the local data and tokens; signing in uploads "
             "the rows saved meanwhile once."),
    ]),
    ("Sharing and participant permissions", [
        (36, "O shares a CareSession: the share and its root are saved together (a share saved without "
             "its root gets invalidArguments), and the session and its events move into a new share zone."),
        (37, "P accepts: the zone appears in P's shared database and the records land in P's shared "
             "store only."),
        (38, "P, with readWrite, adds a CareEvent to the shared session: it goes to P's shared store, is "
             "saved into O's zone, and O fetches it into O's private store."),
        (39, "P, with readOnly, inserts, edits or deletes: refused at once on P's device with a "
             "permission error, nothing queued, the cloud unchanged."),
        (40, "O downgrades P to readOnly while P is offline; P, still believing it may write, edits and "
             "creates: the server answers permissionFailure, P's edit is reverted to the server's copy, "
             "P's new object deleted, and P's client told."),
        (41, "O deletes the shared root: the share and its records go, and P's next fetch removes the "
             "whole zone from P's shared store."),
        (42, "O removes P while P is offline with queued edits: P's next fetch removes the zone and its "
             "data, and the queued edits are discarded, never moved to P's private database."),
        (43, "Sharing a session right after one of its events was saved (which gives the session a new "
             "change tag in the cloud) fetches the root first: no spurious conflict."),
    ]),
]


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

count = sum(len(items) for _, items in SITUATIONS)
out = ["# Scenario tests", "",
       f"The {count} cross-process situations this project must get right, each with the outcome a user",
       "expects and the tests that run it against real processes (store-service and sync-service",
       "executables on temporary sockets). A and B are two devices of one user; O is a share's owner",
       "and P a participant, each on a device of their own; \"send\" and \"fetch\" are the explicit sync",
       "steps. Where the rules behind a situation come from is in [RULES.md](RULES.md); seed 000 and",
       "seed 002 are told in [FIELD-REPORTS.md](FIELD-REPORTS.md).", "",
       "Written by `python3 scripts/scenario-index.py` from the list in that script, which fails when a",
       "scenario has no test: edit the list there, not this page."]
missing = []
for section, items in SITUATIONS:
    out += ["", f"## {section}", "", "| # | situation and expected outcome | tests |", "|---|---|---|"]
    for number, situation in items:
        found = tests.get(number, [])
        if not found:
            missing.append(number)
        cells = "<br>".join(f"`{function}` ({path})" for path, function, _ in found) or "**none**"
        out.append(f"| {number} | {situation.replace('|', '/')} | {cells} |")
open(os.path.join(root, "docs", "SCENARIO-TESTS.md"), "w", encoding="utf-8").write("\n".join(out).rstrip() + "\n")
if missing:
    sys.exit(f"scenarios without a test: {missing}")
print(f"{count} scenarios, each with a test: docs/SCENARIO-TESTS.md")
