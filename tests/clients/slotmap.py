"""What a Redis Cluster client pays for the slot map: CLUSTER SLOTS's size, redis-py's start
and refresh time and memory. Run by scripts/slotmap.sh, which starts the nodes.

    python3 slotmap.py HOST:PORT
"""

import socket
import sys
import time


def rss_kb():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def raw_slots(host, port):
    """CLUSTER SLOTS over a raw socket: (bytes, seconds)."""
    s = socket.create_connection((host, port))
    t = time.monotonic()
    s.sendall(b"*2\r\n$7\r\nCLUSTER\r\n$5\r\nSLOTS\r\n")
    data = b""
    # The reply ends when a PING sent after it is answered.
    s.sendall(b"*1\r\n$4\r\nPING\r\n")
    while not data.endswith(b"+PONG\r\n"):
        chunk = s.recv(1 << 20)
        if not chunk:
            break
        data += chunk
    took = time.monotonic() - t
    s.close()
    return len(data) - len(b"+PONG\r\n"), took


def main():
    host, port = sys.argv[1].rsplit(":", 1)
    port = int(port)
    size, took = raw_slots(host, port)
    from redis.cluster import RedisCluster

    before = rss_kb()
    t = time.monotonic()
    rc = RedisCluster(host=host, port=port)
    start = time.monotonic() - t
    grown = rss_kb() - before
    ranges = len(rc.cluster_slots())
    t = time.monotonic()
    rc.nodes_manager.initialize()
    refresh = time.monotonic() - t
    nodes = len(rc.get_nodes())
    rc.set("slotmap:probe", "1")
    assert rc.get("slotmap:probe") == b"1"
    print(
        f"nodes={nodes} ranges={ranges} cluster_slots_bytes={size} cluster_slots_ms={took*1000:.1f} "
        f"redis_py_start_ms={start*1000:.0f} redis_py_rss_kb={grown} redis_py_refresh_ms={refresh*1000:.0f}"
    )


main()
