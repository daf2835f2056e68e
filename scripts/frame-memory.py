#!/usr/bin/env python3
"""Measures what half-sent frames cost a service: starts it (in memory), opens N connections that
each say hello, announce a 16 MiB frame and send MIB MiB of it, then reports VmRSS and RssAnon
before, while they are held, and after they are closed. Figures for docs/RELIABILITY.md.

usage: scripts/frame-memory.py BINARY N MIB [service options…]
  e.g. scripts/frame-memory.py .build/debug/sync-service 64 8 --max-connections-per-peer 64
"""
import json, socket, struct, subprocess, sys, tempfile, time

binary, count, mib, extra = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
directory = tempfile.mkdtemp(prefix="fm", dir="/tmp")
path = directory + "/s.sock"
service = subprocess.Popen([binary, "--socket", path, "--in-memory"] + extra, stderr=subprocess.PIPE, text=True)
while '"msg":"ready"' not in (line := service.stderr.readline()):
    if not line: sys.exit("the service did not start")

def memory():
    fields = dict(line.split(":", 1) for line in open(f"/proc/{service.pid}/status"))
    return " / ".join(f"{name} {int(fields[name].split()[0]) / 1024:.1f} MiB" for name in ("VmRSS", "RssAnon"))

def frame(message):
    body = json.dumps(message).encode()
    return struct.pack(">I", len(body)) + body

def receive(sock):
    def exactly(n):
        data = b""
        while len(data) < n:
            chunk = sock.recv(n - len(data))
            if not chunk: raise ConnectionError
            data += chunk
        return data
    return json.loads(exactly(struct.unpack(">I", exactly(4))[0]))

def greeted():
    sock = socket.socket(socket.AF_UNIX)
    sock.connect(path)
    sock.sendall(frame({"id": 1, "op": "hello", "params": {"minVersion": 1, "maxVersion": 1, "client": "frame-memory"}}))
    receive(sock)
    return sock

witness = greeted()
def open_connections():
    witness.sendall(frame({"id": 2, "op": "info"}))
    return receive(witness)["result"]["connections"]["open"]

print(f"{binary} {' '.join(extra)}")
print(f"  start: {memory()}")
half = struct.pack(">I", 16 << 20) + b" " * (mib << 20)
held = []
for _ in range(count):
    sock = greeted()
    try: sock.sendall(half)
    except OSError: pass
    held.append(sock)
refused = 0
for sock in held:
    sock.settimeout(0.2)
    try:
        if receive(sock)["error"]["code"] == "bufferBudgetExceeded": refused += 1
    except (OSError, ConnectionError, socket.timeout): pass
print(f"  {count} connections each holding {mib} MiB of a 16 MiB frame ({refused} refused with bufferBudgetExceeded): {memory()}")
for sock in held: sock.close()
while open_connections() != 1: time.sleep(0.05)
print(f"  after they closed: {memory()}")
service.terminate(); service.wait()
