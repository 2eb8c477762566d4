"""redis-py's cluster client against a Shoal cluster's cluster-client port.

    python3 load.py sync|async HOST:PORT

First a round of basic commands (any error fails at once), then a load of writes and
read-backs that runs until a line arrives on stdin (or LOAD_MAX seconds pass), then every
acknowledged write is read back. Application errors (any exception the client raises) are
counted, never retried by this script. Prints `progress <writes>` lines while loading and
a final `result writes=<n> reads=<n> errors=<n> lost=<n> wrong=<n>` line; exits 0 only when
the basic round passed and errors, lost and wrong are all 0.
"""

import asyncio
import os
import sys
import time

from tally import LOAD_MAX, Tally, load, stop, watch_stdin

# Keys of one run: several runs may share a cluster.
RUN = f"{sys.argv[1]}{os.getpid()}"


def key(i):
    return f"{RUN}:load:{i}"


def value(i):
    return f"v{i}".encode()


def basic_sync(rc):
    assert rc.ping()
    assert rc.set(f"{RUN}:basic:a", "1")
    assert rc.get(f"{RUN}:basic:a") == b"1"
    assert rc.incr(f"{RUN}:basic:n", 5) == 5
    rc.mset({f"{{{RUN}u}}a": "1", f"{{{RUN}u}}b": "2"})
    assert rc.mget([f"{{{RUN}u}}a", f"{{{RUN}u}}b"]) == [b"1", b"2"]
    # A cross-slot MGET is split by slot by the client (mget_nonatomic).
    assert rc.mget_nonatomic([f"{RUN}:basic:a", f"{{{RUN}u}}b", f"{RUN}:nosuch"]) == [b"1", b"2", None]
    p = rc.pipeline()
    for i in range(20):
        p.set(f"{RUN}:pipe:{i}", i)
    for i in range(20):
        p.get(f"{RUN}:pipe:{i}")
    out = p.execute()
    assert out[20:] == [str(i).encode() for i in range(20)], out
    assert rc.delete(f"{RUN}:basic:a") == 1
    assert rc.exists(f"{RUN}:basic:a") == 0
    # DBSIZE and KEYS go to one node unless told otherwise (redis-py's own rule, as against
    # Redis Cluster); over every primary they cover each key once.
    assert rc.dbsize(target_nodes=rc.PRIMARIES) >= 23
    keys = rc.keys(f"{RUN}:pipe:*", target_nodes=rc.PRIMARIES)
    assert sorted(keys) == sorted(f"{RUN}:pipe:{i}".encode() for i in range(20)), keys
    assert sorted(rc.scan_iter(match=f"{RUN}:pipe:*")) == sorted(keys)


async def basic_async(rc):
    assert await rc.ping()
    assert await rc.set(f"{RUN}:basic:a", "1")
    assert await rc.get(f"{RUN}:basic:a") == b"1"
    assert await rc.incr(f"{RUN}:basic:n", 5) == 5
    await rc.mset({f"{{{RUN}u}}a": "1", f"{{{RUN}u}}b": "2"})
    assert await rc.mget([f"{{{RUN}u}}a", f"{{{RUN}u}}b"]) == [b"1", b"2"]
    p = rc.pipeline()
    for i in range(20):
        p.set(f"{RUN}:pipe:{i}", i)
    for i in range(20):
        p.get(f"{RUN}:pipe:{i}")
    out = await p.execute()
    assert out[20:] == [str(i).encode() for i in range(20)], out
    assert await rc.delete(f"{RUN}:basic:a") == 1
    assert await rc.dbsize(target_nodes=rc.PRIMARIES) >= 23


def run_sync(host, port):
    from redis.cluster import RedisCluster

    rc = RedisCluster(host=host, port=port)
    basic_sync(rc)
    print("basic ok", flush=True)
    t = Tally(key, value)
    load(t, rc.set, rc.get)
    for j in t.acked():
        try:
            t.check(j, rc.get(key(j)))
        except Exception as e:
            t.error(e)
    return t.report()


async def run_async(host, port):
    from redis.asyncio.cluster import RedisCluster

    rc = RedisCluster(host=host, port=port)
    await basic_async(rc)
    print("basic ok", flush=True)
    t = Tally(key, value)
    deadline = time.monotonic() + LOAD_MAX
    i = 0
    while not stop.is_set() and time.monotonic() < deadline:
        try:
            t.unacked.add(i)
            await rc.set(key(i), value(i))
            t.unacked.discard(i)
            t.writes = i + 1
            if i % 4 == 3 and i // 2 not in t.unacked:
                j = i // 2
                t.check(j, await rc.get(key(j)))
        except Exception as e:
            t.error(e)
        i += 1
        if i % 500 == 0:
            print(f"progress {t.writes}", flush=True)
    t.phase = "final"
    for j in t.acked():
        try:
            t.check(j, await rc.get(key(j)))
        except Exception as e:
            t.error(e)
    await rc.aclose()
    return t.report()


def main():
    mode, addr = sys.argv[1], sys.argv[2]
    host, port = addr.rsplit(":", 1)
    watch_stdin()
    if mode == "sync":
        ok = run_sync(host, int(port))
    else:
        ok = asyncio.run(run_async(host, int(port)))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
