"""redis-py, pymemcache and pylibmc (libmemcached) on a Shoal node's Unix sockets
(`unixsocket`, `memcache-unixsocket`), each seeing what the others wrote, and over TCP too.

    python3 unix.py RESP_SOCKET MEMCACHE_SOCKET TCP_PORT

Prints `ok` and exits 0 when every check held; an assertion error otherwise.
"""

import sys

import pylibmc
import redis
from pymemcache.client.base import Client as PyMemcache

resp_path, mc_path, tcp_port = sys.argv[1], sys.argv[2], int(sys.argv[3])

r = redis.Redis(unix_socket_path=resp_path, decode_responses=True)
assert r.ping()
info = r.client_info()
assert info["addr"] == f"{resp_path}:0", info
assert info["laddr"] == f"{resp_path}:0", info
assert info["flags"] == "U", info
r.set("unix:resp", "from redis-py")

r3 = redis.Redis(unix_socket_path=resp_path, protocol=3, decode_responses=True)
assert r3.get("unix:resp") == "from redis-py"

pm = PyMemcache(mc_path)
assert pm.set("unix:mc", b"from pymemcache")
assert pm.get("unix:resp") == b"from redis-py"

for binary in (False, True):
    lm = pylibmc.Client([mc_path], binary=binary)
    assert lm.get("unix:mc") == b"from pymemcache", binary
    lm.set("unix:pylibmc", "binary" if binary else "text")
    assert pm.get("unix:pylibmc") == (b"binary" if binary else b"text"), binary

tcp = redis.Redis(host="127.0.0.1", port=tcp_port, decode_responses=True)
assert tcp.get("unix:mc") == "from pymemcache"
assert tcp.get("unix:pylibmc") == "binary"
assert tcp.client_info()["flags"] == "N"
unix_clients = [c for c in tcp.client_list() if c["addr"] == f"{resp_path}:0"]
assert len(unix_clients) == 2 and all(c["flags"] == "U" for c in unix_clients), unix_clients
assert tcp.client_kill_filter(_type=None, addr=f"{resp_path}:0") == 2
print("ok")
