#!/usr/bin/env python3
"""Mirroring benchmark (issue 5), beside a same-run baseline.

1. Local batched saves (1,000 CareEvents per save) on a store-service without mirroring: the baseline rate.
2. Device A saves N CareEvents the same way, `sync.send`s them; device B `sync.fetch`es them:
   end-to-end events/s = N / (send + fetch), and its ratio to the baseline (target: at least 1/3).
3. Sending and fetching 1 change after 100 synced records, and after LARGE synced records
   (target: at most 2x).

Usage: scripts/mirror-bench.py [--events N] [--large M] [--bin DIR]
The binaries come from --bin, $MEOWCARE_BIN_DIR, or .build/release (build with `swift build -c release`).
"""
import argparse, json, os, shutil, socket, struct, subprocess, sys, tempfile, time

parser = argparse.ArgumentParser(description="store-service mirroring benchmark")
parser.add_argument("--events", type=int, default=10000)
parser.add_argument("--large", type=int, default=10000, help="synced records before the 1-change measurement (issue: 100000)")
parser.add_argument("--bin", default=os.environ.get("MEOWCARE_BIN_DIR") or os.path.join(os.path.dirname(__file__), "..", ".build", "release"))
args = parser.parse_args()

work = tempfile.mkdtemp(prefix="mbench", dir="/tmp")
children = []

def start(name, arguments):
    sock = os.path.join(work, name + ".sock")
    log = open(os.path.join(work, name + ".log"), "w")
    children.append(subprocess.Popen([os.path.join(args.bin, arguments[0])] + arguments[1:] + ["--socket", sock], stderr=log))
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            probe = socket.socket(socket.AF_UNIX)
            probe.connect(sock)
            probe.close()
            return sock
        except OSError:
            time.sleep(0.05)
    sys.exit(f"{name} did not start; see {log.name}")

class Client:
    def __init__(self, sock):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(sock)
        self.next = 0
        self.call("hello", {"minVersion": 1, "maxVersion": 1, "client": "mirror-bench"})

    def call(self, op, params=None):
        self.next += 1
        body = json.dumps({"id": self.next, "op": op, "params": params or {}}).encode()
        self.sock.sendall(struct.pack(">I", len(body)) + body)
        while True:
            message = json.loads(self.read(struct.unpack(">I", self.read(4))[0]))
            if "event" in message:
                continue
            if not message.get("ok"):
                sys.exit(f"{op} failed: {message.get('error')}")
            return message["result"]

    def read(self, count):
        data = bytearray()
        while len(data) < count:
            chunk = self.sock.recv(count - len(data))
            if not chunk:
                sys.exit("connection closed")
            data += chunk
        return bytes(data)

def save_events(client, prefix, count):
    context = client.call("context.open")["context"]
    started = time.time()
    for first in range(0, count, 1000):
        objects = [{"entity": "CareEvent", "values": {"id": f"{prefix}{k}", "eventTypeRaw": "bloodGlucose", "value": 100 + k % 50,
                                                      "occurredAt": "2026-11-30T08:00:00Z", "updatedAt": "2026-11-30T08:00:00Z"}}
                   for k in range(first, min(count, first + 1000))]
        client.call("object.insert", {"context": context, "objects": objects, "returnObjectIDs": False})
        client.call("context.save", {"context": context})
        client.call("context.reset", {"context": context})
    client.call("context.close", {"context": context})
    return time.time() - started

try:
    with open(os.path.join(work, "users.json"), "w") as users:
        users.write('{"users":[{"user":"owner","credential":"owner-secret"},{"user":"bob","credential":"bob-secret"}]}')
    cloud = start("cloud", ["sync-service", "--in-memory", "--users", os.path.join(work, "users.json"), "--admin-credential", "bench-admin-credential"])
    def device(name, user="owner"):
        return Client(start(name, ["store-service", "--in-memory", "--no-orphan-repair", "--device-name", name,
                                   "--sync-socket", cloud, "--sync-credential", f"{user}-secret"]))
    local = Client(start("local", ["store-service", "--in-memory", "--no-orphan-repair"]))
    a, b = device("A"), device("B")

    baseline = args.events / save_events(local, "l", args.events)
    save_events(a, "e", args.events)
    started = time.time(); sent = a.call("sync.send"); send_seconds = time.time() - started
    started = time.time(); fetched = b.call("sync.fetch"); fetch_seconds = time.time() - started
    received = b.call("fetch.count", {"entity": "CareEvent"})["count"]
    end_to_end = args.events / (send_seconds + fetch_seconds)
    print(f"local batched saves:        {baseline:10.0f} events/s (baseline, same run)")
    print(f"A send + B fetch:           {end_to_end:10.0f} events/s (send {send_seconds:.2f}s, fetch {fetch_seconds:.2f}s, B has {received})")
    print(f"ratio:                      {end_to_end / baseline:10.2f} (target >= 0.33)")

    def one_change(label):
        save_events(a, label, 1)
        started = time.time()
        a.call("sync.send")
        b.call("sync.fetch")
        return time.time() - started

    c, d = device("C", "bob"), device("D", "bob")
    save_events(c, "s", 100); c.call("sync.send"); d.call("sync.fetch")
    if args.large > args.events:
        save_events(a, "m", args.large - args.events); a.call("sync.send"); b.call("sync.fetch")
    small = []
    for i in range(5):
        save_events(c, f"x{i}-", 1)
        started = time.time(); c.call("sync.send"); d.call("sync.fetch"); small.append(time.time() - started)
    large = [one_change(f"y{i}-") for i in range(5)]
    small.sort(); large.sort()
    print(f"1 change after 100:         {small[2] * 1000:10.2f} ms (median of 5)")
    print(f"1 change after {max(args.large, args.events)}:{'':<{11 - len(str(max(args.large, args.events)))}}{large[2] * 1000:10.2f} ms (median of 5; target <= 2x)")
finally:
    for child in children:
        child.terminate()
    for child in children:
        child.wait(timeout=20)
    shutil.rmtree(work, ignore_errors=True)
