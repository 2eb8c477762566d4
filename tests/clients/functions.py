"""Redis 7 functions through redis-py, as an application uses them: a library loaded with
`function_load` (REPLACE on redeploy), called with `fcall` and `fcall_ro`, listed, dumped
and restored, in RESP2 and RESP3. Given several nodes (a cluster), the library is loaded
through the first and called through every one, on keys of any owner.

With `cluster HOST:PORT` (a cluster-client port) the same through redis-py's
RedisCluster, which sends FUNCTION LOAD, DELETE and LIST to every primary and FCALL to its
key's slot's primary, as against Redis Cluster.

usage: functions.py HOST:PORT [HOST:PORT ...]   (prints "ok" when every check passed)
       functions.py cluster HOST:PORT
"""

import sys

import redis

LIBRARY = """#!lua name=ratelimit
-- A fixed-window rate limiter: at most ARGV[1] hits per ARGV[2] seconds.
local function hit(keys, args)
  local n = redis.call('INCR', keys[1])
  if n == 1 then redis.call('EXPIRE', keys[1], args[2]) end
  if n > tonumber(args[1]) then return 0 end
  return 1
end
redis.register_function('hit', hit)
redis.register_function{
  function_name = 'hits',
  callback = function(keys) return tonumber(redis.call('GET', keys[1]) or '0') end,
  flags = {'no-writes'},
  description = 'hits in the current window',
}
"""


def cluster(addr):
    from redis.cluster import RedisCluster

    host, port = addr.rsplit(":", 1)
    rc = RedisCluster(host=host, port=int(port), socket_timeout=10)
    rc.function_flush()
    rc.function_load(LIBRARY)
    for k in range(30):
        key = f"rlc:{k}"
        rc.delete(key)
        got = [rc.fcall("hit", 1, key, 2, 60) for _ in range(3)]
        assert got == [1, 1, 0], (key, got)
        assert rc.fcall_ro("hits", 1, key) == 3
    # Every primary has the library (LIST asks them all and merges).
    listed = rc.function_list()
    assert listed, listed
    rc.function_delete("ratelimit")
    try:
        rc.fcall("hit", 1, "rlc:0", 2, 60)
        raise AssertionError("a deleted function ran")
    except redis.ResponseError as e:
        assert "Function not found" in str(e), e
    print("ok")


def main():
    if sys.argv[1] == "cluster":
        cluster(sys.argv[2])
        return
    nodes = []
    for arg in sys.argv[1:]:
        host, port = arg.rsplit(":", 1)
        nodes.append((host, int(port)))
    for protocol in (2, 3):
        clients = [
            redis.Redis(host=h, port=p, protocol=protocol, socket_timeout=10) for h, p in nodes
        ]
        first = clients[0]
        first.function_flush()
        assert first.function_load(LIBRARY) == b"ratelimit"
        try:
            first.function_load(LIBRARY)
            raise AssertionError("a second load without REPLACE succeeded")
        except redis.ResponseError as e:
            assert "already exists" in str(e), e
        assert first.function_load(LIBRARY, replace=True) == b"ratelimit"
        listed = first.function_list(library="rate*", withcode=True)
        assert len(listed) == 1, listed
        lib = listed[0]
        if isinstance(lib, list):  # RESP2: a flat list of pairs
            lib = dict(zip(lib[::2], lib[1::2]))
        name = lib.get(b"library_name", lib.get("library_name"))
        assert name in (b"ratelimit", "ratelimit"), lib
        for c, r in enumerate(clients):
            for k in range(12):
                key = f"rl:{protocol}:{c}:{k}"
                r.delete(key)
                got = [r.fcall("hit", 1, key, 3, 60) for _ in range(5)]
                assert got == [1, 1, 1, 0, 0], (key, got)
                assert r.fcall_ro("hits", 1, key) == 5
                assert 0 < r.ttl(key) <= 60
            try:
                r.fcall_ro("hit", 1, "rl:x", 3, 60)
                raise AssertionError("FCALL_RO ran a function that writes")
            except redis.ResponseError as e:
                assert "write flag" in str(e), e
        payload = first.function_dump()
        first.function_delete("ratelimit")
        try:
            first.fcall("hit", 1, "rl:gone", 3, 60)
            raise AssertionError("a deleted function ran")
        except redis.ResponseError as e:
            assert "Function not found" in str(e), e
        assert first.function_restore(payload)
        for r in clients:
            assert r.fcall_ro("hits", 1, f"rl:{protocol}:0:0") == 5
        stats = first.function_stats()
        assert stats is not None
    print("ok")


main()
