#!/usr/bin/env python3
"""RSS per idle connection of a running server (shoald, redis-server or memcached).

Usage: scripts/idle-memory.py PID PORT [N=5000] [resp|mc] [WAIT_S=14]

Opens 50 warm-up connections, reads the server's VmRSS, then opens N more (each sends one
PING, or `version` with `mc`, and reads the reply), waits WAIT_S seconds (shoald gives an
idle connection's buffers back after 2 s; jemalloc returns freed pages after about 10 s),
reads VmRSS again and prints the difference per connection. Loopback only; raise the open
files limit first (`ulimit -n 20000`) and start the server with enough maxclients.
"""
import socket
import sys
import time


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS"):
                return int(line.split()[1])
    raise SystemExit(f"no VmRSS for pid {pid}")


def connect(port, proto):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"PING\r\n" if proto == "resp" else b"version\r\n")
    reply = b""
    while not reply.endswith(b"\r\n"):
        chunk = s.recv(100)
        if not chunk:
            raise SystemExit("the server closed a connection")
        reply += chunk
    return s


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    pid, port = int(sys.argv[1]), int(sys.argv[2])
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 5000
    proto = sys.argv[4] if len(sys.argv) > 4 else "resp"
    wait_s = float(sys.argv[5]) if len(sys.argv) > 5 else 14.0
    socks = [connect(port, proto) for _ in range(50)]
    time.sleep(0.5)
    before = rss_kb(pid)
    socks += [connect(port, proto) for _ in range(n)]
    time.sleep(wait_s)
    after = rss_kb(pid)
    print(f"{proto}: {n} idle connections, {(after - before) * 1024 / n:.0f} bytes each "
          f"(VmRSS {before} -> {after} KB)")


if __name__ == "__main__":
    main()
