//! Placement micro-benchmarks: building a `Placement` (2 replicas) for 3, 10 and 100 members,
//! and the hot-path `owners()` lookup. Member names and the slot walk are fixed.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use shoal_ring::{Member, Placement, SLOTS};
use std::hint::black_box;

fn members(n: usize) -> Vec<Member> {
    (0..n)
        .map(|i| Member::new(format!("10.0.{}.{}:7000", i / 256, i % 256)))
        .collect()
}

fn bench_ring(c: &mut Criterion) {
    let mut group = c.benchmark_group("ring");
    for n in [3usize, 10, 100] {
        let m = members(n);
        group.bench_with_input(BenchmarkId::new("new", n), &m, |b, m| {
            b.iter(|| Placement::new(black_box(m), 2, 0).expect("valid members"))
        });
    }

    let p = Placement::new(&members(100), 2, 0).expect("valid members");
    group.throughput(Throughput::Elements(1));
    let mut slot: u16 = 0;
    group.bench_function("owners", |b| {
        b.iter(|| {
            // A fixed odd stride visits every slot.
            slot = (slot.wrapping_add(7919)) % SLOTS as u16;
            black_box(p.owners(black_box(slot)))[0]
        })
    });
    group.finish();
}

criterion_group!(benches, bench_ring);
criterion_main!(benches);
