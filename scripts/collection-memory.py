"""RSS per element of Shoal and redis-server for large collections and many small hashes.

    python3 scripts/collection-memory.py target/release/shoald [hash,set,zintset,list,zset,small-hashes,stream,strings,volatile-strings]

Starts a fresh redis-server and a fresh shoald (maxmemory 0) on free loopback ports for each
data shape, loads it through redis-py pipelines, and prints the resident memory added per
element and the ratio (README, "Memory", "Collections"). `strings` are the yardstick's keys
(`key:%012d`, 100-byte values), `volatile-strings` the same with `EX 3600`: one key an
element. Needs redis-server and redis-py.
"""
import os, socket, subprocess, sys, time
import redis

def rss(pid):
    with open(f"/proc/{pid}/status") as f:
        for l in f:
            if l.startswith("VmRSS:"):
                return int(l.split()[1]) * 1024

def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p

def start(kind):
    port = free_port()
    if kind == "redis":
        p = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], stdout=subprocess.DEVNULL)
    else:
        p = subprocess.Popen([sys.argv[1], "--port", str(port), "--set", "maxmemory=0"], stderr=subprocess.DEVNULL)
    c = redis.Redis(port=port)
    for _ in range(100):
        try:
            c.ping(); break
        except Exception:
            time.sleep(0.1)
    return p, c

N = 1_000_000
def load(c, what):
    pipe = c.pipeline(transaction=False)
    if what == "hash":
        for i in range(N):
            pipe.hset("h", f"field:{i:08d}", "v" * 10)
            if i % 10000 == 9999: pipe.execute()
    elif what == "set":
        for i in range(N):
            pipe.sadd("s", f"member:{i:08d}")
            if i % 10000 == 9999: pipe.execute()
    elif what == "zintset":
        for i in range(N):
            pipe.sadd("si", i * 7)
            if i % 10000 == 9999: pipe.execute()
    elif what == "list":
        for i in range(N):
            pipe.rpush("l", f"element:{i:08d}")
            if i % 10000 == 9999: pipe.execute()
    elif what == "zset":
        for i in range(N):
            pipe.zadd("z", {f"member:{i:08d}": i * 1.5})
            if i % 10000 == 9999: pipe.execute()
    elif what == "stream":
        for i in range(N):
            pipe.xadd("x", {"job": f"{i:08d}", "state": "queued"})
            if i % 10000 == 9999: pipe.execute()
    elif what in ("strings", "volatile-strings"):
        ex = 3600 if what == "volatile-strings" else None
        for i in range(N):
            pipe.set(f"key:{i:012d}", "x" * 100, ex=ex)
            if i % 10000 == 9999: pipe.execute()
    elif what == "small-hashes":
        for i in range(100_000):
            pipe.hset(f"user:{i}", mapping={f"f{j}": f"value{j}" for j in range(10)})
            if i % 1000 == 999: pipe.execute()
    pipe.execute()

results = {}
for what in sys.argv[2].split(",") if len(sys.argv) > 2 else ["hash", "set", "zintset", "list", "small-hashes", "zset"]:
    row = {}
    for kind in ["redis", "shoal"]:
        p, c = start(kind)
        time.sleep(0.3)
        before = rss(p.pid)
        load(c, what)
        time.sleep(0.5)
        after = rss(p.pid)
        row[kind] = after - before
        p.kill(); p.wait()
    n = 100_000 * 10 if what == "small-hashes" else N
    print(f"{what}: redis {row['redis']/n:.1f} B/element, shoal {row['shoal']/n:.1f} B/element, ratio {row['shoal']/row['redis']:.2f}", flush=True)
