// What ioredis and node-redis pay for the slot map: time to ready and heap growth.
// Run by scripts/slotmap.sh, one client per process.   node --expose-gc slotmap.js ioredis|node-redis HOST:PORT
"use strict";
const [kind, addr] = process.argv.slice(2);
const host = addr.slice(0, addr.lastIndexOf(":"));
const port = Number(addr.slice(addr.lastIndexOf(":") + 1));

async function measure(name, make) {
  // Load the library first, so its own code is not counted.
  global.gc && global.gc();
  const heap0 = process.memoryUsage().heapUsed;
  const t = process.hrtime.bigint();
  const { client, ready, close } = make();
  await ready;
  const ms = Number(process.hrtime.bigint() - t) / 1e6;
  await client.set("slotmap:probe", "1");
  if ((await client.get("slotmap:probe")) !== "1") throw new Error("probe");
  global.gc && global.gc();
  const kb = Math.round((process.memoryUsage().heapUsed - heap0) / 1024);
  await close();
  return `${name}_ready_ms=${ms.toFixed(0)} ${name}_heap_kb=${kb}`;
}

async function main() {
  if (kind === "ioredis") {
    const Redis = require("ioredis");
    console.log(await measure("ioredis", () => {
      const c = new Redis.Cluster([{ host, port }], { lazyConnect: true });
      return { client: c, ready: c.connect(), close: () => c.quit() };
    }));
  } else {
    const { createCluster } = require("redis");
    console.log(await measure("node_redis", () => {
      const c = createCluster({ rootNodes: [{ url: `redis://${host}:${port}` }] });
      c.on("error", () => {});
      return { client: c, ready: c.connect(), close: () => c.quit() };
    }));
  }
  process.exit(0);
}

main().catch((e) => { console.error(e); process.exit(1); });
