"""Lua scripts through redis-py, as applications use them: `Lock` (EVALSHA, SCRIPT LOAD on
NOSCRIPT), `register_script`, in RESP2 and RESP3, through the node given (in a cluster a
node that may not own the keys).

usage: scripts.py HOST:PORT   (prints "ok" when every check passed)
"""

import sys

import redis


def main():
    host, port = sys.argv[1].rsplit(":", 1)
    for protocol in (2, 3):
        r = redis.Redis(host=host, port=int(port), protocol=protocol, socket_timeout=10)
        r.script_flush()
        name = f"lock:{protocol}"
        # Lock: acquire, a second client cannot, extend, release, then the other can.
        lock = r.lock(name, timeout=5, blocking=False)
        assert lock.acquire(), "acquire"
        other = r.lock(name, timeout=5, blocking=False)
        assert not other.acquire(), "a held lock was acquired twice"
        assert lock.owned()
        assert lock.extend(5), "extend"
        assert 5000 < r.pttl(name) <= 10000, r.pttl(name)
        lock.release()
        assert r.get(name) is None
        assert other.acquire(), "the released lock"
        other.release()
        # A script registered once, called with keys and arguments; after SCRIPT FLUSH
        # redis-py loads it again on NOSCRIPT.
        incr_by = r.register_script(
            "local v = redis.call('INCRBY', KEYS[1], ARGV[1]) return {v, ARGV[2]}"
        )
        key = f"counter:{protocol}"
        r.delete(key)
        assert incr_by(keys=[key], args=[5, "x"]) == [5, b"x"]
        r.script_flush()
        assert incr_by(keys=[key], args=[2, "y"]) == [7, b"y"]
        assert r.script_exists(incr_by.sha) == [True]
        try:
            r.eval("return redis.call('INCR', KEYS[1])", 1, name + ":s")
            r.set(name + ":s", "text")
            r.eval("return redis.call('INCR', KEYS[1])", 1, name + ":s")
            raise AssertionError("INCR of text did not fail")
        except redis.ResponseError as e:
            assert "not an integer" in str(e), e
    print("ok")


main()
