"""A Memcached client library against one Shoal node's Memcached port (of a cluster).

    python3 mc_load.py pymemcache|pylibmc|pylibmc-binary HOST:PORT

First a round of basic commands, the checks a single memcached passes (any error fails at
once), then a load of writes and read-backs that runs until a line arrives on stdin (or
LOAD_MAX seconds pass), then every acknowledged write is read back, one key at a time and in
multi-gets. Application errors (any exception the client raises, or a write it reports as
failed) are counted, never retried by this script. Prints `progress <writes>` lines while
loading and a final `result writes=<n> reads=<n> errors=<n> lost=<n> wrong=<n>` line; exits
0 only when the basic round passed and errors, lost and wrong are all 0.
"""

import os
import sys

from tally import Tally, load, watch_stdin

# Keys of one run: several runs may share a cluster.
RUN = f"{sys.argv[1]}{os.getpid()}"


def key(i):
    return f"{RUN}:load:{i}"


def value(i):
    return f"v{i}".encode()


class Pymemcache:
    """pymemcache's base client, text protocol."""

    def __init__(self, host, port):
        from pymemcache.client.base import Client

        self.c = Client((host, port), connect_timeout=5, timeout=5, default_noreply=False)

    def basic(self):
        c, k = self.c, f"{RUN}:basic"
        assert c.set(k, b"hello", expire=0, flags=5) is True
        assert c.get(k) == b"hello"
        assert c.add(k, b"x") is False
        assert c.replace(k, b"hi") is True
        assert c.append(k, b"!") is True
        assert c.prepend(k, b"<") is True
        assert c.get(k) == b"<hi!"
        value, cas = c.gets(k)
        assert value == b"<hi!" and int(cas) > 0, (value, cas)
        assert c.cas(k, b"swapped", cas) is True
        assert c.cas(k, b"again", cas) is False
        assert c.get(k) == b"swapped"
        assert c.set(f"{k}:n", b"10") is True
        assert c.incr(f"{k}:n", 5) == 15
        assert c.decr(f"{k}:n", 20) == 0
        assert c.incr(f"{k}:missing", 1) is None
        assert c.touch(k, 100) is True
        assert c.touch(f"{k}:missing", 100) is False
        many = {f"{k}:m{i}": str(i).encode() for i in range(50)}
        assert c.set_many(many) == []
        got = c.get_many(list(many) + [f"{k}:nosuch"])
        assert got == many, got
        assert c.delete(k) is True
        assert c.delete(k, noreply=False) is False
        assert c.get(k) is None
        stats = c.stats()
        assert b"cluster_curr_items" in stats or "cluster_curr_items" in stats, stats
        assert c.version().startswith(b"1.6")

    def set(self, k, v):
        if self.c.set(k, v) is not True:
            raise RuntimeError(f"set {k} not stored")

    def get(self, k):
        return self.c.get(k)

    def get_many(self, ks):
        return self.c.get_many(ks)


class Pylibmc:
    """pylibmc (libmemcached), text protocol or binary."""

    def __init__(self, host, port, binary=False):
        import pylibmc

        self.c = pylibmc.Client([f"{host}:{port}"], binary=binary, behaviors={"cas": True})

    def basic(self):
        c, k = self.c, f"{RUN}:basic"
        assert c.set(k, b"hello")
        assert c.get(k) == b"hello"
        assert not c.add(k, b"x")
        assert c.replace(k, b"hi")
        assert c.append(k, b"!")
        assert c.prepend(k, b"<")
        assert c.get(k) == b"<hi!"
        value, cas = c.gets(k)
        assert value == b"<hi!" and cas > 0, (value, cas)
        assert c.cas(k, b"swapped", cas)
        assert not c.cas(k, b"again", cas)
        assert c.get(k) == b"swapped"
        assert c.set(f"{k}:n", 10)
        assert c.incr(f"{k}:n", 5) == 15
        assert c.decr(f"{k}:n", 20) == 0
        assert c.touch(k, 100)
        many = {f"{k}:m{i}": str(i).encode() for i in range(50)}
        assert c.set_multi(many) == []
        got = c.get_multi(list(many) + [f"{k}:nosuch"])
        assert got == many, got
        assert c.delete(k)
        assert not c.delete(k)
        assert c.get(k) is None
        # libmemcached keeps only the stats it knows by name.
        stats = c.get_stats()
        assert int(stats[0][1]["curr_items"]) > 0, stats

    def set(self, k, v):
        if not self.c.set(k, v):
            raise RuntimeError(f"set {k} not stored")

    def get(self, k):
        return self.c.get(k)

    def get_many(self, ks):
        return self.c.get_multi(ks)


def main():
    lib, addr = sys.argv[1], sys.argv[2]
    host, port = addr.rsplit(":", 1)
    watch_stdin()
    client = {
        "pymemcache": lambda h, p: Pymemcache(h, p),
        "pylibmc": lambda h, p: Pylibmc(h, p),
        "pylibmc-binary": lambda h, p: Pylibmc(h, p, binary=True),
    }[lib](host, int(port))
    client.basic()
    print("basic ok", flush=True)
    t = Tally(key, value)

    def multi_get(i):
        # A multi-get of earlier keys: split across owners by the node.
        js = [j for j in range(i - 63, i) if j not in t.unacked]
        got = client.get_many([key(j) for j in js])
        for j in js:
            t.check(j, got.get(key(j)))

    load(t, client.set, client.get, multi_get)
    acked = t.acked()
    for n in range(0, len(acked), 100):
        js = acked[n : n + 100]
        try:
            got = client.get_many([key(j) for j in js])
            for j in js:
                t.check(j, got.get(key(j)))
        except Exception as e:
            t.error(e)
    sys.exit(0 if t.report() else 1)


if __name__ == "__main__":
    main()
