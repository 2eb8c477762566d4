"""ACL users through redis-py, as an operator and an application use them: a user made with
`acl_setuser` (passwords, key and channel patterns, categories and commands, a selector),
read back with `acl_getuser`, `acl_list`, `acl_users`; an application logging in with a
username (also from a redis:// URL) that may run what it was given and gets
NoPermissionError for the rest; `acl_dryrun`, `acl_log`, `acl_whoami`, `acl_cat`,
`acl_genpass`; a deleted user's connection closed. In RESP2 and RESP3.

Given several nodes (a cluster), the users are made through the first node and used
through every node, on keys of any owner (the ACL is checked where the client is
connected, ACL SETUSER and DELUSER reach every node).

usage: acl.py HOST:PORT [HOST:PORT ...]   (prints "ok" when every check passed)
"""

import sys

import redis
from redis.backoff import NoBackoff
from redis.exceptions import AuthenticationError, ConnectionError, NoPermissionError


# Failures to log in are the point of some checks: no retries with back-off.
ONCE = dict(retry=redis.retry.Retry(NoBackoff(), 0), socket_timeout=10)


def check(addrs, protocol):
    hosts = [a.rsplit(":", 1) for a in addrs]
    admin = redis.Redis(host=hosts[0][0], port=int(hosts[0][1]), protocol=protocol,
                        decode_responses=True, socket_timeout=10)
    for name in admin.acl_users():
        if name != "default":
            admin.acl_deluser(name)
    admin.acl_log_reset()
    assert admin.acl_whoami() == "default"
    assert admin.acl_setuser(
        "app",
        enabled=True,
        passwords=["+s3cret"],
        keys=["app:*", "%R~shared:*"],
        channels=["news.*"],
        categories=["+@all", "-@dangerous"],
        commands=["-del"],
        selectors=[("+del", "~tmp:*")],
    )
    user = admin.acl_getuser("app")
    assert user["enabled"] and "on" in user["flags"], user
    assert user["keys"] == ["~app:*", "%R~shared:*"], user
    assert user["channels"] == ["&news.*"], user
    assert user["categories"] == ["+@all", "-@dangerous"], user
    assert user["commands"] == ["-del"], user
    assert len(user["passwords"]) == 1 and len(user["passwords"][0]) == 64, user
    assert len(user["selectors"]) == 1, user
    assert admin.acl_getuser("nobody") is None
    assert sorted(admin.acl_users()) == ["app", "default"]
    listed = [u for u in admin.acl_list() if u.startswith("user app ")]
    assert listed and "~app:* %R~shared:* resetchannels &news.* +@all -@dangerous -del" in listed[0], listed
    assert "dangerous" in admin.acl_cat()
    assert "flushall" in admin.acl_cat("dangerous")
    assert len(admin.acl_genpass()) == 64 and len(admin.acl_genpass(128)) == 32
    assert admin.acl_dryrun("app", "set", "app:1", "v") == "OK"
    assert admin.acl_dryrun("app", "get", "other") == "User app has no permissions to access the 'other' key"
    admin.set("shared:1", "s")

    for n, (host, port) in enumerate(hosts):
        app = redis.Redis(host=host, port=int(port), username="app", password="s3cret",
                          protocol=protocol, decode_responses=True, socket_timeout=10)
        assert app.acl_whoami() == "app"
        for k in range(20):
            key = f"app:{n}:{k}"
            assert app.set(key, k)
            assert app.get(key) == str(k)
        assert app.get("shared:1") == "s"
        for denied in (lambda: app.set("shared:1", "x"), lambda: app.get("other:1"),
                       lambda: app.flushall(), lambda: app.delete("app:0:0"),
                       lambda: app.config_get("maxmemory"), lambda: app.publish("other", "m")):
            try:
                denied()
                raise AssertionError("a refused command ran")
            except NoPermissionError:
                pass
        # The selector allows DEL on tmp:* keys.
        assert app.delete("tmp:1") == 0
        assert app.publish("news.today", "m") == 0
        url = redis.from_url(f"redis://app:s3cret@{host}:{port}/0", protocol=protocol,
                             decode_responses=True, socket_timeout=10)
        assert url.acl_whoami() == "app"
        try:
            redis.Redis(host=host, port=int(port), username="app", password="wrong",
                        protocol=protocol, **ONCE).ping()
            raise AssertionError("a wrong password logged in")
        except AuthenticationError:
            pass
        # A user turned off cannot log in; connections already in go on.
        admin.acl_setuser("app", enabled=False)
        try:
            redis.Redis(host=host, port=int(port), username="app", password="s3cret",
                        protocol=protocol, **ONCE).ping()
            raise AssertionError("a disabled user logged in")
        except AuthenticationError:
            pass
        assert app.get(f"app:{n}:0") == "0"
        admin.acl_setuser("app", enabled=True)

    log = redis.Redis(host=hosts[0][0], port=int(hosts[0][1]), protocol=protocol,
                      socket_timeout=10).acl_log()
    reasons = {(e[b"reason"] if b"reason" in e else e["reason"]) for e in log}
    reasons = {r.decode() if isinstance(r, bytes) else r for r in reasons}
    assert {"key", "command", "channel", "auth"} <= reasons, log
    assert admin.acl_log(count=1) and len(admin.acl_log(count=1)) == 1

    # Deleting a user closes its connections.
    host, port = hosts[-1]
    app = redis.Redis(host=host, port=int(port), username="app", password="s3cret",
                      protocol=protocol, **ONCE)
    app.get("app:x")
    assert admin.acl_deluser("app") == 1
    # The connection is closed; redis-py's reconnection then fails to log in.
    try:
        app.get("app:x")
        raise AssertionError("a deleted user's connection stayed open")
    except (ConnectionError, AuthenticationError):
        pass
    assert admin.acl_users() == ["default"]


def main():
    addrs = sys.argv[1:]
    for protocol in (2, 3):
        check(addrs, protocol)
    print("ok")


if __name__ == "__main__":
    main()
