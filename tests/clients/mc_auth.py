"""pylibmc (libmemcached) on the binary protocol against a Shoal node with a password:
SASL PLAIN with the right password works (user `default`, or a name the node has no user
of), a wrong one and none are refused.

    python3 mc_auth.py HOST:PORT PASSWORD

Prints `ok` and exits 0 when every check held; an assertion error otherwise.
"""

import glob
import os
import sys

# The pylibmc wheel bundles a Cyrus SASL built elsewhere, which looks for its mechanism
# plugins (PLAIN among them) where that system keeps them; point it at this system's
# (Debian: libsasl2-modules).
if "SASL_PATH" not in os.environ:
    for plain in glob.glob("/usr/lib/*/sasl2/libplain.so*") + glob.glob("/usr/lib*/sasl2/libplain.so*"):
        os.environ["SASL_PATH"] = os.path.dirname(plain)
        break

import pylibmc  # noqa: E402 (after SASL_PATH)

addr, password = sys.argv[1], sys.argv[2]


def client(**credentials):
    return pylibmc.Client([addr], binary=True, **credentials)


def refused(c):
    try:
        c.set("auth:k", "v")
    except pylibmc.Error as e:
        return str(e)
    return None


assert pylibmc.support_sasl, "this pylibmc has no SASL"
assert refused(client()) is not None, "no credentials must be refused"
assert refused(client(username="default", password="wrong")) is not None, "a wrong password"
assert refused(client(username="someone", password="wrong")) is not None, "another name, a wrong password"
# memcached's clients name a SASL user of their own: a name the node has no user of logs in
# as `default`, with its password.
named = client(username="someone", password=password)
assert named.set("auth:named", "v"), "another name with the password stores"
c = client(username="default", password=password)
assert c.set("auth:k", "v"), "the right password stores"
assert c.get("auth:k") in (b"v", "v")
assert c.set("auth:n", "1")
assert c.incr("auth:n", 1) == 2
print("ok", flush=True)
