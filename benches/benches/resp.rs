//! Criterion benchmarks for `shoal-resp`: request parsing and reply encoding on fixed inputs.
//!
//! Run: `cargo bench -p shoal-benches --bench resp`

use bytes::{Bytes, BytesMut};
use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use shoal_resp::reply::encode_bulk;
use shoal_resp::{Limits, Protocol, Reply, RequestParser};

const REQUESTS: usize = 1000;

fn pipelined_sets() -> Vec<u8> {
    let value = [b'v'; 100];
    let mut out = Vec::new();
    for i in 0..REQUESTS {
        let key = format!("key:{i:012}");
        out.extend_from_slice(
            format!("*3\r\n$3\r\nSET\r\n${}\r\n{key}\r\n$100\r\n", key.len()).as_bytes(),
        );
        out.extend_from_slice(&value);
        out.extend_from_slice(b"\r\n");
    }
    out
}

fn pipelined_gets() -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..REQUESTS {
        let key = format!("key:{i:012}");
        out.extend_from_slice(format!("*2\r\n$3\r\nGET\r\n${}\r\n{key}\r\n", key.len()).as_bytes());
    }
    out
}

/// Parses every request in `input`, returning how many there were.
fn parse_all(input: &[u8], limits: &Limits) -> usize {
    let mut parser = RequestParser::new();
    let mut buf = BytesMut::from(input);
    let mut n = 0;
    while let Some(args) = parser.parse(&mut buf, limits, true).expect("valid input") {
        n += args.len();
    }
    n
}

fn parse(c: &mut Criterion) {
    let limits = Limits::default();
    let mut group = c.benchmark_group("resp/parse");
    group.throughput(Throughput::Elements(REQUESTS as u64));
    let sets = pipelined_sets();
    group.bench_function("pipelined_1000_set_100b", |b| {
        b.iter(|| parse_all(black_box(&sets), &limits))
    });
    let gets = pipelined_gets();
    group.bench_function("pipelined_1000_get", |b| {
        b.iter(|| parse_all(black_box(&gets), &limits))
    });
    group.throughput(Throughput::Elements(1));
    group.bench_function("inline_ping", |b| {
        b.iter(|| parse_all(black_box(b"PING\r\n"), &limits))
    });
    group.finish();
}

fn encode(c: &mut Criterion) {
    let value = Bytes::from(vec![b'v'; 100]);
    let bulk = Reply::Bulk(value.clone());
    let array = Reply::Array(
        (0..REQUESTS)
            .map(|i| {
                if i % 10 == 0 {
                    Reply::Nil
                } else {
                    Reply::Bulk(value.clone())
                }
            })
            .collect(),
    );
    let mut group = c.benchmark_group("resp/encode");
    group.throughput(Throughput::Elements(REQUESTS as u64));
    for (name, proto) in [("resp2", Protocol::Resp2), ("resp3", Protocol::Resp3)] {
        let mut out = BytesMut::with_capacity(256 * 1024);
        group.bench_function(format!("1000_bulk_replies_{name}"), |b| {
            b.iter(|| {
                out.clear();
                for _ in 0..REQUESTS {
                    black_box(&bulk).encode(proto, &mut out);
                }
                out.len()
            })
        });
        group.bench_function(format!("array_of_1000_{name}"), |b| {
            b.iter(|| {
                out.clear();
                black_box(&array).encode(proto, &mut out);
                out.len()
            })
        });
    }
    let mut out = BytesMut::with_capacity(256 * 1024);
    group.bench_function("1000_encode_bulk_fn", |b| {
        b.iter(|| {
            out.clear();
            for _ in 0..REQUESTS {
                encode_bulk(&mut out, black_box(&value));
            }
            out.len()
        })
    });
    group.finish();
}

criterion_group!(benches, parse, encode);
criterion_main!(benches);
