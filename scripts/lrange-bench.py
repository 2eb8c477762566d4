"""LRANGE mylist 0 99 against shoald and a redis-server it starts, interleaved rounds.

resp-bench cannot run redis-benchmark's lrange_100 test (its output has an LPUSH line
first), so this runs `redis-benchmark ... lrange mylist 0 99` on a list of 600 3-byte
elements in both servers (50 clients, pipeline 1 and 16, 3 rounds each, alternating which
server goes first) and prints server CPU per request and its ratio (cpu_r), median of the
rounds. Usage: scripts/lrange-bench.py path/to/shoald (or `scripts/bench.sh lrange`).
"""
import os, re, socket, subprocess, statistics, sys, tempfile, time
shoald = sys.argv[1]
tmp = tempfile.mkdtemp()
def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p
rport = free_port()
redis = subprocess.Popen(["redis-server", "--port", str(rport), "--save", "", "--appendonly", "no", "--bind", "127.0.0.1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
log = open(os.path.join(tmp, "shoald.log"), "w")
shoal = subprocess.Popen([shoald, "--port", "0", "--maxmemory", "0"], stderr=log)
try:
    sport = None
    deadline = time.time() + 20
    while time.time() < deadline and sport is None:
        m = re.search(r"listening on 127\.0\.0\.1:(\d+)", open(os.path.join(tmp, "shoald.log")).read())
        if m: sport = int(m.group(1))
        else: time.sleep(0.1)
    deadline = time.time() + 20
    while time.time() < deadline:
        if subprocess.run(["redis-cli", "-p", str(rport), "ping"], capture_output=True).stdout.strip() == b"PONG": break
        time.sleep(0.1)
    for port in (rport, sport):
        subprocess.run(["redis-cli", "-p", str(port), "del", "mylist"], capture_output=True, check=True)
        subprocess.run(["redis-cli", "-p", str(port), "rpush", "mylist"] + ["xxx"] * 600, capture_output=True, check=True)
    tick_us = 1e6 / os.sysconf("SC_CLK_TCK")
    def cpu(pid):
        f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) * tick_us
    servers = {"shoal": (sport, shoal.pid), "redis": (rport, redis.pid)}
    for pipe, n in ((1, 200000), (16, 600000)):
        res = {k: [] for k in servers}
        for r in range(3):
            order = ["shoal", "redis"] if r % 2 == 0 else ["redis", "shoal"]
            for name in order:
                port, pid = servers[name]
                c0, t0 = cpu(pid), time.monotonic()
                subprocess.run(["timeout", "120", "redis-benchmark", "-p", str(port), "-c", "50", "-n", str(n), "-P", str(pipe), "-q", "lrange", "mylist", "0", "99"], check=True, capture_output=True)
                res[name].append(((cpu(pid) - c0) / n, n / (time.monotonic() - t0)))
        med = {k: (statistics.median(u for u, _ in v), statistics.median(q for _, q in v)) for k, v in res.items()}
        print(f"lrange 0 99 (100 x 3-byte elements), 50 clients, pipeline {pipe}: shoal {med['shoal'][0]:.2f} us/op {med['shoal'][1]:.0f} rps; redis {med['redis'][0]:.2f} us/op {med['redis'][1]:.0f} rps; cpu_r {med['shoal'][0]/med['redis'][0]:.3f}; rounds shoal {[round(u,2) for u,_ in res['shoal']]} redis {[round(u,2) for u,_ in res['redis']]}", flush=True)
finally:
    shoal.terminate(); redis.terminate(); shoal.wait(); redis.wait()
