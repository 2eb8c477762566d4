//! Store micro-benchmarks: GET hit and miss, SET overwrite, SET under eviction pressure.
//! Keys follow the memory benchmark (`key:%012d`, 100-byte values); inputs are fixed.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use shoal_store::{Store, StoreConfig, ENTRY_OVERHEAD};
use std::hint::black_box;

const KEYS: usize = 100_000;

fn key(i: usize) -> Vec<u8> {
    format!("key:{i:012}").into_bytes()
}

fn loaded(config: StoreConfig) -> (Store, Vec<Vec<u8>>) {
    let store = Store::new(config);
    let keys: Vec<Vec<u8>> = (0..KEYS).map(key).collect();
    for k in &keys {
        store.set(k, &[b'v'; 100], None, 0);
    }
    (store, keys)
}

/// A fixed pseudo-random walk over key indices (an LCG), so every run sees the same order.
fn order(n: usize) -> Vec<usize> {
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    (0..n)
        .map(|_| {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (x >> 33) as usize % KEYS
        })
        .collect()
}

fn bench_store(c: &mut Criterion) {
    let mut group = c.benchmark_group("store");
    group.throughput(Throughput::Elements(1));
    let (store, keys) = loaded(StoreConfig::default());
    let walk = order(4096);

    let mut n = 0;
    group.bench_function("get_hit", |b| {
        b.iter(|| {
            n = (n + 1) % walk.len();
            black_box(store.get(&keys[walk[n]], 1))
        })
    });

    let misses: Vec<Vec<u8>> = (0..4096)
        .map(|i| format!("missing:{i:08}").into_bytes())
        .collect();
    group.bench_function("get_miss", |b| {
        b.iter(|| {
            n = (n + 1) % misses.len();
            black_box(store.get(&misses[n], 1))
        })
    });

    let value = [b'w'; 100];
    group.bench_function("set_overwrite", |b| {
        b.iter(|| {
            n = (n + 1) % walk.len();
            store.set(&keys[walk[n]], &value, None, 2);
        })
    });

    // Room for a tenth of the keys: every new SET evicts one (Redis style: evict, then write).
    let one = (16 + 100 + ENTRY_OVERHEAD) as u64;
    let small = Store::new(StoreConfig {
        maxmemory: one * (KEYS as u64 / 10),
        ..StoreConfig::default()
    });
    // Keys are reused only after 200k SETs, long after they were evicted: each SET inserts.
    let fresh: Vec<Vec<u8>> = (KEYS..KEYS + 200_000).map(key).collect();
    let mut t = 0u64;
    group.bench_function("set_with_eviction", |b| {
        b.iter(|| {
            t += 1;
            let k = &fresh[t as usize % fresh.len()];
            small
                .ensure_memory(t)
                .expect("allkeys-lru always makes room");
            small.set(k, &value, None, t);
        })
    });
    group.finish();
}

criterion_group!(benches, bench_store);
criterion_main!(benches);
