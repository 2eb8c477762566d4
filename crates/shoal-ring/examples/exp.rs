use xxhash_rust::xxh3::{xxh3_64_with_seed};
const S: usize = 16384;
fn mix(mut z: u64) -> u64 { z = (z ^ (z >> 30)).wrapping_mul(0xbf58476d1ce4e5b9); z = (z ^ (z >> 27)).wrapping_mul(0x94d049bb133111eb); z ^ (z >> 31) }
fn loads(scheme: u32, names: &[String]) -> Vec<usize> {
    let hs: Vec<(u64,u64)> = names.iter().map(|n| (xxh3_64_with_seed(n.as_bytes(),1)|1, xxh3_64_with_seed(n.as_bytes(),2))).collect();
    let mut l = vec![0usize; names.len()];
    for s in 0..S as u64 {
        let mut best = 0u64; let mut bi = 0;
        for (i,&(a,b)) in hs.iter().enumerate() {
            let sc = match scheme {
                0 => mix(b ^ mix(s)),                       // plain rendezvous
                1 => a.wrapping_mul(s).wrapping_add(b),     // weyl
                2 => mix(((s ^ (b & 16383)) ) ^ 0x1234) ^ (a>>50), // xor translation
                3 => a.wrapping_mul(s.wrapping_mul(0x9E3779B97F4A7C15) >> 50).wrapping_add(b), // weyl on permuted slot
                _ => unreachable!(),
            };
            if sc > best || i == 0 { best = sc; bi = i; }
        }
        l[bi] += 1;
    }
    l
}
fn main() {
    let trials: usize = std::env::args().nth(1).map(|x| x.parse().unwrap()).unwrap_or(20);
    for scheme in 0..4 {
        for &n in &[3usize, 4, 10, 20, 50, 100] {
            let mut worst = 0f64; let mut sum = 0f64;
            for t in 0..trials {
                let names: Vec<String> = (0..n).map(|i| format!("node-{t}-{i}-{}", mix((t*1000+i) as u64) % 1000)).collect();
                let l = loads(scheme, &names);
                let r = *l.iter().max().unwrap() as f64 / (S as f64 / n as f64);
                worst = worst.max(r); sum += r;
            }
            println!("scheme {scheme} n {n:3} mean max/mean {:.3} worst {:.3}", sum / trials as f64, worst);
        }
    }
}
