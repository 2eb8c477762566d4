"""Pub/Sub through redis-py, as an application uses it: subscribers on one node, a publisher
on another (the same node for a single one), RESP2 and RESP3, sync and asyncio.

usage: pubsub.py SUB_HOST:PORT PUB_HOST:PORT   (prints "ok" when every check passed)
"""

import asyncio
import sys
import time

import redis
import redis.asyncio

DEADLINE = 10.0


def addr(s):
    host, port = s.rsplit(":", 1)
    return host, int(port)


def next_message(p, want_type):
    """The next message of `want_type`, skipping nothing else silently."""
    end = time.monotonic() + DEADLINE
    while time.monotonic() < end:
        m = p.get_message(timeout=1.0)
        if m is None:
            continue
        assert m["type"] == want_type, (want_type, m)
        return m
    raise AssertionError(f"no {want_type} message within {DEADLINE}s")


def sync_checks(sub_addr, pub_addr, protocol):
    host, port = sub_addr
    r = redis.Redis(host=host, port=port, protocol=protocol, decode_responses=True)
    ph, pp = pub_addr
    publisher = redis.Redis(host=ph, port=pp, protocol=protocol, decode_responses=True)
    ch = f"chan{protocol}"
    p = r.pubsub()
    p.subscribe(ch)
    p.psubscribe(f"{ch}*")
    assert next_message(p, "subscribe")["channel"] == ch
    assert next_message(p, "psubscribe")["channel"] == f"{ch}*"
    assert p.subscribed

    assert publisher.publish(ch, "hello") == 2
    m = next_message(p, "message")
    assert (m["channel"], m["data"]) == (ch, "hello"), m
    m = next_message(p, "pmessage")
    assert (m["pattern"], m["channel"], m["data"]) == (f"{ch}*", ch, "hello"), m

    assert publisher.pubsub_numsub(ch) == [(ch, 1)]
    assert publisher.pubsub_numpat() == 1
    assert ch in publisher.pubsub_channels()

    # A handler, as redis-py dispatches them.
    seen = []
    p.subscribe(**{f"{ch}-h": lambda msg: seen.append(msg["data"])})
    next_message(p, "subscribe")
    assert publisher.publish(f"{ch}-h", "to-handler") == 2
    end = time.monotonic() + DEADLINE
    while not seen and time.monotonic() < end:
        p.get_message(timeout=1.0)
    assert seen == ["to-handler"], seen
    next_message(p, "pmessage")  # the pattern's copy, which has no handler

    # redis-py's health check: PING inside a subscription (a RESP2 reply; in RESP3 PING
    # answers +PONG, which redis-py 8 misreads as a message, against Redis too).
    if protocol == 2:
        p.ping()
        pong = next_message(p, "pong")
        assert pong is not None

    # Messages in publishing order.
    pipe = publisher.pipeline(transaction=False)
    for i in range(200):
        pipe.publish(ch, str(i))
    assert pipe.execute() == [2] * 200
    got = []
    while len(got) < 400:
        got.append(p.get_message(timeout=DEADLINE))
    plain = [m["data"] for m in got if m["type"] == "message"]
    assert plain == [str(i) for i in range(200)], plain[:10]

    p.unsubscribe()
    p.punsubscribe()
    end = time.monotonic() + DEADLINE
    while p.subscribed and time.monotonic() < end:
        p.get_message(timeout=1.0)
    assert not p.subscribed
    assert publisher.publish(ch, "nobody") == 0
    p.close()


async def async_checks(sub_addr, pub_addr):
    host, port = sub_addr
    r = redis.asyncio.Redis(host=host, port=port, decode_responses=True)
    ph, pp = pub_addr
    publisher = redis.asyncio.Redis(host=ph, port=pp, decode_responses=True)
    p = r.pubsub()
    await p.subscribe("jobs")
    first = await p.get_message(timeout=DEADLINE)
    assert first["type"] == "subscribe", first

    async def produce():
        for i in range(100):
            assert await publisher.publish("jobs", f"job{i}") == 1

    received = []

    async def consume():
        async for m in p.listen():
            if m["type"] == "message":
                received.append(m["data"])
                if len(received) == 100:
                    return

    await asyncio.wait_for(asyncio.gather(consume(), produce()), DEADLINE)
    assert received == [f"job{i}" for i in range(100)], received[:5]
    await p.aclose()
    await r.aclose()
    await publisher.aclose()


def main():
    sub_addr, pub_addr = addr(sys.argv[1]), addr(sys.argv[2])
    for protocol in (2, 3):
        sync_checks(sub_addr, pub_addr, protocol)
    asyncio.run(async_checks(sub_addr, pub_addr))
    print("ok")


if __name__ == "__main__":
    main()
