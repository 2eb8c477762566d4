// ioredis's and node-redis's cluster clients against a Shoal cluster's cluster-client port.
//
//     node load.js ioredis|node-redis HOST:PORT
//
// The same protocol as load.py: a round of basic commands (any error fails at once), then
// writes and read-backs until a line arrives on stdin (or LOAD_MAX_MS pass), then every
// acknowledged write is read back. Prints `progress <writes>` while loading and a final
// `result writes=.. reads=.. errors=.. lost=.. wrong=..` line; exits 0 only when nothing
// was lost, wrong or raised to the application.
"use strict";
const assert = require("node:assert");
const readline = require("node:readline");

// A safety bound only: the test stops the load through stdin long before.
const LOAD_MAX_MS = 600000;
const [kind, addr] = process.argv.slice(2);
const [host, port] = [addr.slice(0, addr.lastIndexOf(":")), Number(addr.slice(addr.lastIndexOf(":") + 1))];
const RUN = `${kind}${process.pid}`;
const key = (i) => `${RUN}:load:${i}`;
const value = (i) => `v${i}`;

let stopped = false;
readline.createInterface({ input: process.stdin }).on("line", () => { stopped = true; });

// One interface over both clients.
async function connect() {
  if (kind === "ioredis") {
    const Redis = require("ioredis");
    const c = new Redis.Cluster([{ host, port }], { lazyConnect: true });
    await c.connect();
    return {
      set: (k, v) => c.set(k, v),
      get: (k) => c.get(k),
      incrby: (k, n) => c.incrby(k, n),
      mset: (kv) => c.mset(kv),
      mget: (ks) => c.mget(ks),
      pipeline: async (ops) => {
        const p = c.pipeline();
        for (const [op, ...args] of ops) p[op](...args);
        return (await p.exec()).map(([err, v]) => { if (err) throw err; return v; });
      },
      quit: () => c.quit(),
    };
  }
  const { createCluster } = require("redis");
  const c = createCluster({ rootNodes: [{ url: `redis://${host}:${port}` }] });
  c.on("error", () => {});
  await c.connect();
  return {
    set: (k, v) => c.set(k, v),
    get: (k) => c.get(k),
    incrby: (k, n) => c.incrBy(k, n),
    mset: (kv) => c.mSet(kv),
    mget: (ks) => c.mGet(ks),
    pipeline: async (ops) => {
      // node-redis pipelines per slot; a Promise.all of commands is its auto-pipelining.
      return Promise.all(ops.map(([op, ...args]) => (op === "set" ? c.set(...args) : c.get(...args))));
    },
    quit: () => c.quit(),
  };
}

async function basic(c) {
  assert.equal(await c.set(`${RUN}:a`, "1"), "OK");
  assert.equal(await c.get(`${RUN}:a`), "1");
  assert.equal(await c.incrby(`${RUN}:n`, 5), 5);
  await c.mset({ [`{${RUN}u}a`]: "1", [`{${RUN}u}b`]: "2" });
  assert.deepEqual(await c.mget([`{${RUN}u}a`, `{${RUN}u}b`]), ["1", "2"]);
  const ops = [];
  for (let i = 0; i < 20; i++) ops.push(["set", `{${RUN}p}${i}`, String(i)]);
  for (let i = 0; i < 20; i++) ops.push(["get", `{${RUN}p}${i}`]);
  const out = await c.pipeline(ops);
  assert.deepEqual(out.slice(20), [...Array(20).keys()].map(String));
}

async function main() {
  const c = await connect();
  await basic(c);
  console.log("basic ok");
  const t = { writes: 0, reads: 0, errors: 0, lost: 0, wrong: 0, last: null, phase: "load" };
  // Writes that failed: not acknowledged, so not read back.
  const unacked = new Set();
  const check = (i, got) => {
    t.reads++;
    if (got === null) {
      t.lost++;
      console.log(`lost in ${t.phase}: ${key(i)} (write ${t.writes})`);
    } else if (got !== value(i)) {
      t.wrong++;
      console.log(`wrong in ${t.phase}: ${key(i)} = ${got}`);
    }
  };
  const error = (e) => {
    t.errors++;
    t.last = String(e);
    console.log(`error in ${t.phase} at write ${t.writes}: ${e} (${e && e.constructor && e.constructor.name}) ${JSON.stringify(e)} ${e && e.stack}`.replace(/\n/g, " | "));
  };
  const deadline = Date.now() + LOAD_MAX_MS;
  for (let i = 0; !stopped && Date.now() < deadline; i++) {
    try {
      unacked.add(i);
      await c.set(key(i), value(i));
      unacked.delete(i);
      t.writes = i + 1;
      if (i % 4 === 3 && !unacked.has(i >> 1)) check(i >> 1, await c.get(key(i >> 1)));
    } catch (e) {
      error(e);
    }
    if ((i + 1) % 500 === 0) console.log(`progress ${t.writes}`);
  }
  t.phase = "final";
  for (let j = 0; j < t.writes; j++) {
    if (unacked.has(j)) continue;
    try {
      check(j, await c.get(key(j)));
    } catch (e) {
      error(e);
    }
  }
  console.log(`result writes=${t.writes} reads=${t.reads} errors=${t.errors} lost=${t.lost} wrong=${t.wrong} last_error=${t.last}`);
  await c.quit();
  process.exit(t.errors === 0 && t.lost === 0 && t.wrong === 0 ? 0 : 1);
}

main().catch((e) => { console.error(e); process.exit(2); });
