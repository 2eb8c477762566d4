// node-redis's client-side cache (RESP3, CLIENT TRACKING ON) reading through one node
// while another client writes through another: every read after a write sees the new
// value, and reads between writes are served from the cache.
//   node csc.js READER_HOST:PORT WRITER_HOST:PORT      prints "ok"
"use strict";
const { createClient } = require("redis");
const [reader, writer] = process.argv.slice(2);

function fail(why) {
  console.log(why);
  process.exit(1);
}

async function main() {
  const r = createClient({ url: `redis://${reader}`, RESP: 3, clientSideCache: { maxEntries: 0 } });
  const w = createClient({ url: `redis://${writer}` });
  await r.connect();
  await w.connect();
  const keys = Array.from({ length: 60 }, (_, i) => `csc:${i}`);
  const cache = r.clientSideCache;
  for (let round = 1; round <= 3; round++) {
    for (const k of keys) await w.set(k, `v${round}`);
    // The writes' invalidations arrive on the reader's connection a moment after them:
    // each key is read until it shows its new value, for 10 s at most.
    const deadline = Date.now() + 10000;
    for (const k of keys) {
      while ((await r.get(k)) !== `v${round}`) {
        if (Date.now() > deadline) fail(`round ${round}: ${k} still reads an old value`);
        await new Promise((done) => setTimeout(done, 10));
      }
    }
    // Now cached: read again without a write between, served by the cache.
    const before = cache.stats().hitCount;
    for (const k of keys) {
      if ((await r.get(k)) !== `v${round}`) fail(`round ${round}: ${k} changed`);
    }
    const hits = cache.stats().hitCount - before;
    if (hits !== keys.length) fail(`round ${round}: ${hits} cache hits, not ${keys.length}`);
  }
  // A FLUSHALL through the writer empties the cache (a null invalidation).
  await w.flushAll();
  const deadline = Date.now() + 10000;
  while (cache.size() > 0) {
    if (Date.now() > deadline) fail(`FLUSHALL left ${cache.size()} cached keys`);
    await r.ping();
    await new Promise((done) => setTimeout(done, 10));
  }
  for (const k of keys) if ((await r.get(k)) !== null) fail(`${k} survived FLUSHALL`);
  await r.quit();
  await w.quit();
  console.log("ok");
}

main().catch((e) => fail(`error: ${e.stack || e}`));
