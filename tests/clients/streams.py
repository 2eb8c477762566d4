"""Streams through redis-py, as applications use them: an event log read with XREAD, a job
queue with a consumer group (XREADGROUP, XACK, XPENDING, XCLAIM, XAUTOCLAIM for stuck jobs,
XINFO for monitoring), in RESP2 and RESP3, through the node given (in a cluster a node that
may not own the key). Also Redis 7.2's reply fields that the differential test (Redis 7.0)
cannot check: XINFO CONSUMERS' `inactive`, XINFO STREAM FULL's `active-time`.

usage: streams.py HOST:PORT   (prints "ok" when every check passed)
"""

import sys
import time

import redis


def main():
    host, port = sys.argv[1].rsplit(":", 1)
    for protocol in (2, 3):
        r = redis.Redis(host=host, port=int(port), protocol=protocol, socket_timeout=10,
                        decode_responses=True)
        key = f"jobs:{protocol}"
        r.delete(key)
        # An event log: automatic IDs rise, XREAD reads after an ID.
        ids = [r.xadd(key, {"job": str(i), "payload": "x" * i}) for i in range(10)]
        assert ids == sorted(ids, key=lambda i: tuple(map(int, i.split("-")))), ids
        assert r.xlen(key) == 10
        got = r.xread({key: ids[4]}, count=3)
        entries = got[0][1] if protocol == 2 else got[key][0]
        assert [e[0] for e in entries] == ids[5:8], entries
        assert entries[0][1] == {"job": "5", "payload": "xxxxx"}, entries[0]
        assert r.xread({key: "$"}, block=50) in (None, [], {}), "nothing new"
        assert [e[0] for e in r.xrevrange(key, count=2)] == [ids[9], ids[8]]
        # A job queue: two workers share the entries; one acknowledges, the other stalls.
        r.xgroup_create(key, "workers", id="0")
        a = r.xreadgroup("workers", "a", {key: ">"}, count=4)
        b = r.xreadgroup("workers", "b", {key: ">"}, count=4)
        a_ids = [e[0] for e in (a[0][1] if protocol == 2 else a[key][0])]
        b_ids = [e[0] for e in (b[0][1] if protocol == 2 else b[key][0])]
        assert a_ids == ids[:4] and b_ids == ids[4:8], (a_ids, b_ids)
        assert r.xack(key, "workers", *a_ids) == 4
        summary = r.xpending(key, "workers")
        assert summary["pending"] == 4 and summary["min"] == ids[4], summary
        assert summary["consumers"] == [{"name": "b", "pending": 4}], summary
        detail = r.xpending_range(key, "workers", min="-", max="+", count=10)
        assert [d["message_id"] for d in detail] == b_ids, detail
        assert all(d["consumer"] == "b" and d["times_delivered"] == 1 for d in detail), detail
        # Idle times are the subject here, so time must pass: b's jobs idle 500 ms, and the
        # one XCLAIM takes is idle again for far less than 400 ms when XAUTOCLAIM comes
        # (a 20 ms margin failed once on a loaded machine).
        time.sleep(0.5)
        # b stalled: a claims its oldest job, then XAUTOCLAIM takes the rest.
        claimed = r.xclaim(key, "workers", "a", min_idle_time=400, message_ids=[b_ids[0]])
        assert [c[0] for c in claimed] == [b_ids[0]], claimed
        cursor, moved, deleted = r.xautoclaim(key, "workers", "a", min_idle_time=400, count=10)
        assert [m[0] for m in moved] == b_ids[1:] and cursor == "0-0" and deleted == [], moved
        detail = r.xpending_range(key, "workers", min="-", max="+", count=10)
        assert all(d["consumer"] == "a" and d["times_delivered"] == 2 for d in detail), detail
        # Monitoring: XINFO as Redis 7.2 reports it.
        groups = r.xinfo_groups(key)
        assert len(groups) == 1 and groups[0]["name"] == "workers", groups
        assert groups[0]["pending"] == 4 and groups[0]["last-delivered-id"] == ids[7], groups
        assert groups[0]["entries-read"] == 8 and groups[0]["lag"] == 2, groups
        consumers = {c["name"]: c for c in r.xinfo_consumers(key, "workers")}
        assert set(consumers) == {"a", "b"}, consumers
        assert consumers["a"]["pending"] == 4 and consumers["b"]["pending"] == 0, consumers
        # b's last successful read was before it stalled; a claimed just now.
        assert 0 <= consumers["a"]["inactive"] < consumers["b"]["inactive"], consumers
        assert consumers["b"]["idle"] >= 50 and consumers["b"]["inactive"] >= 50, consumers
        info = r.xinfo_stream(key)
        assert info["length"] == 10 and info["groups"] == 1, info
        assert info["first-entry"][0] == ids[0] and info["last-entry"][0] == ids[9], info
        full = r.xinfo_stream(key, full=True)
        group = full["groups"][0]
        names = {c["name"]: c for c in group["consumers"]}
        assert names["b"]["active-time"] <= names["a"]["active-time"], names
        assert names["a"]["seen-time"] >= names["a"]["active-time"], names
        assert group["pel-count"] == 4 and len(full["entries"]) == 10, group
        # Trimming and deletion.
        assert r.xtrim(key, maxlen=5, approximate=False) == 5
        assert r.xdel(key, ids[9]) == 1
        assert r.xlen(key) == 4
        r.xgroup_destroy(key, "workers")
        assert r.xinfo_groups(key) == []
    print("ok")


if __name__ == "__main__":
    main()
