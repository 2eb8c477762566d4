"""Real clients over TLS against Shoal, with certificates the Rust test made.

    python3 tls_clients.py redis HOST:PORT DIR       redis-py, ssl=True, on tls-port
    python3 tls_clients.py cluster HOST:PORT DIR     redis-py RedisCluster, ssl=True, on a
                                                     tls-cluster node's cluster-client-port
    python3 tls_clients.py memcache HOST:PORT DIR    pymemcache with an SSLContext (tls-memcache)
    python3 tls_clients.py reload PLAIN TLS DIR      CONFIG SET of tls-* files takes effect
    python3 tls_clients.py link HOST:PORT DIR        an inter-node port refuses TLS without a
                                                     client certificate
    python3 tls_clients.py pipeline HOST:PORT DIR    a redis-py pipeline far larger than the
                                                     sockets' buffers, written whole before its
                                                     replies are read

DIR holds ca.crt, client.crt/key (signed by ca) and, for `reload`, ca2.crt, node2.crt/key
and client2.crt/key signed by ca2. Prints `ok` when every check passed.
"""

import os
import ssl
import sys

import redis
from pymemcache.client.base import Client as McClient


def split(addr):
    host, port = addr.rsplit(":", 1)
    return host, int(port)


def tls_redis(addr, d, ca="ca", client="client", **kw):
    host, port = split(addr)
    return redis.Redis(
        host=host,
        port=port,
        ssl=True,
        ssl_ca_certs=os.path.join(d, f"{ca}.crt"),
        ssl_certfile=os.path.join(d, f"{client}.crt"),
        ssl_keyfile=os.path.join(d, f"{client}.key"),
        socket_timeout=10,
        **kw,
    )


def refused(make):
    """True if a new connection made by `make` cannot run PING."""
    try:
        make().ping()
    except (redis.exceptions.ConnectionError, ssl.SSLError, OSError):
        return True
    return False


def check_redis(addr, d):
    r = tls_redis(addr, d)
    assert r.ping()
    assert r.set("tls:a", "1")
    assert r.get("tls:a") == b"1"
    big = os.urandom(3 * 1024 * 1024)
    assert r.set("tls:big", big)
    assert r.get("tls:big") == big
    p = r.pipeline(transaction=False)
    for i in range(500):
        p.set(f"tls:p:{i}", "x" * (i % 700))
    for i in range(500):
        p.get(f"tls:p:{i}")
    out = p.execute()
    assert out[500:] == [b"x" * (i % 700) for i in range(500)]
    r3 = tls_redis(addr, d, protocol=3)
    assert r3.get("tls:a") == b"1"
    hello = r3.execute_command("HELLO", 3)
    assert hello.get(b"proto", hello.get("proto")) == 3, hello


def check_cluster(addr, d):
    host, port = split(addr)
    rc = redis.RedisCluster(
        host=host,
        port=port,
        ssl=True,
        ssl_ca_certs=os.path.join(d, "ca.crt"),
        ssl_certfile=os.path.join(d, "client.crt"),
        ssl_keyfile=os.path.join(d, "client.key"),
        socket_timeout=10,
    )
    for i in range(300):
        assert rc.set(f"tlsc:{i}", i)
    for i in range(300):
        assert rc.get(f"tlsc:{i}") == str(i).encode()
    # Every primary answers over TLS.
    assert len(rc.get_primaries()) >= 2, rc.get_primaries()
    assert rc.dbsize(target_nodes=rc.PRIMARIES) >= 300


def check_memcache(addr, d):
    ctx = ssl.create_default_context(cafile=os.path.join(d, "ca.crt"))
    ctx.load_cert_chain(os.path.join(d, "client.crt"), os.path.join(d, "client.key"))
    mc = McClient(split(addr), tls_context=ctx, timeout=10, connect_timeout=10)
    assert mc.set("tlsm:a", b"1")
    assert mc.get("tlsm:a") == b"1"
    big = os.urandom(512 * 1024)
    assert mc.set("tlsm:big", big)
    assert mc.get("tlsm:big") == big
    many = {f"tlsm:{i}": str(i).encode() for i in range(200)}
    assert mc.set_many(many) == []
    assert mc.get_many(list(many)) == many
    # Without TLS the port does not answer the protocol.
    plain = McClient(split(addr), timeout=3, connect_timeout=3)
    try:
        got = plain.get("tlsm:a")
    except Exception:
        pass
    else:
        raise AssertionError(f"a plain client was answered on the TLS port: {got!r}")


def check_link_needs_certificate(addr, d):
    """A TLS client without a certificate is refused by the inter-node port with TLS 1.3's
    certificate_required alert (whatever tls-auth-clients says for client ports)."""
    import socket
    ctx = ssl.create_default_context(cafile=os.path.join(d, "ca.crt"))
    ctx.check_hostname = False
    with socket.create_connection(split(addr), timeout=10) as raw:
        with ctx.wrap_socket(raw) as tls:
            try:
                got = tls.recv(1)
            except ssl.SSLError as e:
                assert "CERTIFICATE_REQUIRED" in str(e).upper(), e
            else:
                raise AssertionError(f"the link took a client without a certificate: {got!r}")


def check_reload(plain_addr, tls_addr, d):
    host, port = split(plain_addr)
    admin = redis.Redis(host=host, port=port, socket_timeout=10)
    old = tls_redis(tls_addr, d)
    assert old.set("tls:reload", "before")
    # New files: a node certificate from another CA, and only that CA trusted for clients.
    # A certificate and its key change together, in one CONFIG SET (as with Redis, either
    # alone does not match the other and is refused).
    try:
        admin.config_set("tls-cert-file", os.path.join(d, "node2.crt"))
        assert False, "a certificate that does not match the key was accepted"
    except redis.exceptions.ResponseError as e:
        assert "Unable to update TLS configuration" in str(e), e
    assert admin.execute_command(
        "CONFIG", "SET",
        "tls-cert-file", os.path.join(d, "node2.crt"),
        "tls-key-file", os.path.join(d, "node2.key"),
        "tls-ca-cert-file", os.path.join(d, "ca2.crt"),
    )
    assert admin.config_get("tls-ca-cert-file")["tls-ca-cert-file"].endswith("ca2.crt")
    # The connection made before keeps its session.
    assert old.get("tls:reload") == b"before"
    # A client that trusts only the old CA no longer accepts the node ...
    assert refused(lambda: tls_redis(tls_addr, d))
    # ... a client of the old CA is no longer accepted by the node ...
    assert refused(lambda: tls_redis(tls_addr, d, ca="ca2", client="client"))
    # ... and one of the new CA is.
    new = tls_redis(tls_addr, d, ca="ca2", client="client2")
    assert new.get("tls:reload") == b"before"
    # Files that do not load are refused with Redis's text, and nothing changes.
    try:
        admin.config_set("tls-cert-file", os.path.join(d, "missing.crt"))
        assert False, "a missing certificate file was accepted"
    except redis.exceptions.ResponseError as e:
        assert "Unable to update TLS configuration" in str(e), e
        assert "tls-cert-file" in str(e), e
    assert admin.config_get("tls-cert-file")["tls-cert-file"].endswith("node2.crt")
    assert tls_redis(tls_addr, d, ca="ca2", client="client2").ping()
    # Renewal in place: setting the same path again reads the file again (here the old
    # CA is added to the bundle, so the old CA's client is accepted again).
    with open(os.path.join(d, "ca.crt"), "rb") as f:
        old_ca = f.read()
    with open(os.path.join(d, "ca2.crt"), "ab") as f:
        f.write(old_ca)
    assert refused(lambda: tls_redis(tls_addr, d, ca="ca2", client="client"))
    assert admin.config_set("tls-ca-cert-file", os.path.join(d, "ca2.crt"))
    assert tls_redis(tls_addr, d, ca="ca2", client="client").ping()


def check_pipeline(addr, d):
    # redis-py writes a pipeline whole (sendall) before it reads a reply: the node must read
    # on while the replies wait, or both ends wait for ever (the socket timeout ends it).
    r = tls_redis(addr, d)
    key = "k" * 240
    r.set(key, "v" * 500)
    n = 40_000
    pipe = r.pipeline(transaction=False)
    for _ in range(n):
        pipe.get(key)
    replies = pipe.execute()
    assert len(replies) == n and all(v == b"v" * 500 for v in replies)


def main():
    mode = sys.argv[1]
    if mode == "redis":
        check_redis(sys.argv[2], sys.argv[3])
    elif mode == "cluster":
        check_cluster(sys.argv[2], sys.argv[3])
    elif mode == "link":
        check_link_needs_certificate(sys.argv[2], sys.argv[3])
    elif mode == "memcache":
        check_memcache(sys.argv[2], sys.argv[3])
    elif mode == "pipeline":
        check_pipeline(sys.argv[2], sys.argv[3])
    elif mode == "reload":
        check_reload(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        sys.exit(f"unknown mode {mode}")
    print("ok")


if __name__ == "__main__":
    main()
