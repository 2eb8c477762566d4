//! INCRBYFLOAT's and HINCRBYFLOAT's arithmetic as Redis does it on x86-64: in C's `long
//! double` (the x87 80-bit format: a 64-bit mantissa, exponents down to 2^-16445), read
//! with `strtold` (Redis's `string2ld`) and written with `"%.17Lf"` less its trailing zeros
//! (`ld2string`'s human-friendly mode). So `INCRBYFLOAT k 0.2` on `0.1` answers `0.3`, and
//! on `1000.1` it answers `1000.29999999999999999`, digit for digit as Redis, where a
//! 64-bit float would give `0.30000000000000004`.
//!
//! Rust has no long double, so this is the format in software: a value is `m × 2^e` with
//! a 64-bit `m`, every step exact in big integers and rounded once to nearest, ties to
//! even, as the hardware rounds. Hexadecimal input, which `strtold` also reads, is refused
//! as not a float.

use std::cmp::Ordering;

/// The lowest exponent of the last mantissa bit (denormals included).
const MIN_EXP: i64 = -16445;
/// The highest exponent of the first mantissa bit.
const MAX_TOP: i64 = 16383;
/// Redis's `MAX_LONG_DOUBLE_CHARS`: longer input is not a float.
const MAX_CHARS: usize = 5 * 1024;

/// Why an increment was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IncrError {
    /// The current value is not a float.
    Current,
    /// The increment is not a float.
    Increment,
    /// The increment is infinite ([`check`]).
    IncrementNotFinite,
    /// The sum is infinite.
    NotFinite,
}

/// A finite long double: `(-1)^neg × m × 2^e` (`m` 0 for a zero).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Ld {
    neg: bool,
    m: u64,
    e: i64,
}

/// What reading a text gives.
#[derive(Debug, PartialEq, Eq)]
enum Parsed {
    Finite(Ld),
    Infinite,
    NotAFloat,
}

/// Whether `by` is a finite long double, as HINCRBYFLOAT checks its increment first.
pub fn check(by: &[u8]) -> Result<(), IncrError> {
    match parse(by) {
        Parsed::Finite(_) => Ok(()),
        Parsed::Infinite => Err(IncrError::IncrementNotFinite),
        Parsed::NotAFloat => Err(IncrError::Increment),
    }
}

/// `current` (absent: 0) plus `by`, as Redis's text of the sum.
pub fn incr(current: Option<&[u8]>, by: &[u8]) -> Result<String, IncrError> {
    let a = match current.map(parse) {
        None => Ld {
            neg: false,
            m: 0,
            e: 0,
        },
        Some(Parsed::Finite(a)) => a,
        // An infinite current value reads, and the sum is infinite.
        Some(Parsed::Infinite) => return Err(IncrError::NotFinite),
        Some(Parsed::NotAFloat) => return Err(IncrError::Current),
    };
    let b = match parse(by) {
        Parsed::Finite(b) => b,
        Parsed::Infinite => return Err(IncrError::NotFinite),
        Parsed::NotAFloat => return Err(IncrError::Increment),
    };
    let sum = add(a, b).ok_or(IncrError::NotFinite)?;
    Ok(human(sum))
}

// ---- reading (strtold, string2ld) ----------------------------------------------------

fn parse(text: &[u8]) -> Parsed {
    if text.is_empty() || text.len() >= MAX_CHARS {
        return Parsed::NotAFloat;
    }
    let (neg, rest) = match text[0] {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    if rest.eq_ignore_ascii_case(b"inf") || rest.eq_ignore_ascii_case(b"infinity") {
        return Parsed::Infinite;
    }
    if rest.len() > 2 && rest[0] == b'0' && (rest[1] | 0x20) == b'x' {
        return match parse_hex(&rest[2..]) {
            Parsed::Finite(v) => Parsed::Finite(Ld { neg, ..v }),
            other => other,
        };
    }
    // Digits, an optional point and digits (at least one digit in all), an optional
    // exponent.
    let mut digits: Vec<u8> = Vec::new();
    let mut point_shift: i64 = 0;
    let mut i = 0;
    let mut seen_digit = false;
    while i < rest.len() && rest[i].is_ascii_digit() {
        digits.push(rest[i] - b'0');
        seen_digit = true;
        i += 1;
    }
    if i < rest.len() && rest[i] == b'.' {
        i += 1;
        while i < rest.len() && rest[i].is_ascii_digit() {
            digits.push(rest[i] - b'0');
            point_shift -= 1;
            seen_digit = true;
            i += 1;
        }
    }
    if !seen_digit {
        return Parsed::NotAFloat;
    }
    let mut exp10: i64 = 0;
    if i < rest.len() && (rest[i] | 0x20) == b'e' {
        let Some((e, end)) = exponent(rest, i + 1) else {
            return Parsed::NotAFloat;
        };
        exp10 = e;
        i = end;
    }
    if i != rest.len() {
        return Parsed::NotAFloat;
    }
    // The value: the digits as an integer times 10^k.
    let first = digits.iter().position(|&d| d != 0);
    let Some(first) = first else {
        return Parsed::Finite(Ld { neg, m: 0, e: 0 });
    };
    let digits = &digits[first..];
    let k = exp10 + point_shift;
    let magnitude = k + digits.len() as i64; // the value is below 10^magnitude
    if magnitude > 4934 {
        // Past the largest long double (about 1.19e4932): ERANGE, refused.
        return Parsed::NotAFloat;
    }
    if magnitude < -4952 {
        // Below half the smallest denormal (about 3.6e-4951): 0 with ERANGE, refused.
        return Parsed::NotAFloat;
    }
    let mut n = Big::zero();
    for chunk in digits.chunks(9) {
        let mut v = 0u32;
        for &d in chunk {
            v = v * 10 + u32::from(d);
        }
        n.mul_small(10u32.pow(chunk.len() as u32));
        n.add_small(v);
    }
    let rounded = if k >= 0 {
        n.mul_pow(10, k as u64);
        round(&n, 0, false)
    } else if -k <= 26 && n.bits() <= 128 {
        // The common case, in 128-bit integers: 5^26 has 61 bits, so the shifted numerator
        // fits (at most 61 + 66 bits when shifted, the digits' own bits when not).
        let five = 5u128.pow((-k) as u32);
        let five_bits = 128 - i64::from(five.leading_zeros());
        let shift = (five_bits - n.bits() as i64 + 66).max(0);
        let num = n.low_u128() << shift;
        round(
            &Big::from_u128(num / five),
            k - shift,
            !num.is_multiple_of(five),
        )
    } else {
        // n / 10^-k = n / 5^-k × 2^k: a quotient of at least 66 bits and its remainder.
        let mut five = Big::from_u64(1);
        five.mul_pow(5, (-k) as u64);
        let shift = (five.bits() as i64 - n.bits() as i64 + 66).max(0);
        n.shl(shift as u64);
        let (q, rem) = n.div_rem(&five);
        round(&q, k - shift, !rem.is_zero())
    };
    match rounded {
        Some(Ld { m: 0, .. }) => Parsed::NotAFloat, // underflow to zero: ERANGE, refused
        Some(v) => Parsed::Finite(Ld { neg, ..v }),
        None => Parsed::NotAFloat,
    }
}

/// An exponent's optional sign and decimal digits from `text[at..]` (its magnitude capped
/// at 1,000,000, far past every finite long double), and where it ends; `None` without a
/// digit (strtold leaves such an exponent unread, so the text is not a whole float).
fn exponent(text: &[u8], at: usize) -> Option<(i64, usize)> {
    let mut j = at;
    let neg = match text.get(j) {
        Some(b'-') => {
            j += 1;
            true
        }
        Some(b'+') => {
            j += 1;
            false
        }
        _ => false,
    };
    let start = j;
    let mut v: i64 = 0;
    while j < text.len() && text[j].is_ascii_digit() {
        v = (v * 10 + i64::from(text[j] - b'0')).min(1_000_000);
        j += 1;
    }
    if j == start {
        return None;
    }
    Some((if neg { -v } else { v }, j))
}

/// C's hexadecimal float after its `0x`: hex digits, an optional point and hex digits (at
/// least one digit in all), an optional binary exponent `p[+-]digits`.
fn parse_hex(text: &[u8]) -> Parsed {
    let hex = |c: u8| (c as char).to_digit(16);
    let mut n = Big::zero();
    let mut exp2: i64 = 0;
    let mut i = 0;
    let mut seen = false;
    while let Some(d) = text.get(i).and_then(|&c| hex(c)) {
        n.mul_small(16);
        n.add_small(d);
        seen = true;
        i += 1;
    }
    if text.get(i) == Some(&b'.') {
        i += 1;
        while let Some(d) = text.get(i).and_then(|&c| hex(c)) {
            n.mul_small(16);
            n.add_small(d);
            exp2 -= 4;
            seen = true;
            i += 1;
        }
    }
    if !seen {
        return Parsed::NotAFloat;
    }
    if i < text.len() && (text[i] | 0x20) == b'p' {
        let Some((p, end)) = exponent(text, i + 1) else {
            return Parsed::NotAFloat;
        };
        exp2 += p;
        i = end;
    }
    if i != text.len() {
        return Parsed::NotAFloat;
    }
    if n.is_zero() {
        return Parsed::Finite(Ld {
            neg: false,
            m: 0,
            e: 0,
        });
    }
    let top = n.bits() as i64 + exp2;
    if !(MIN_EXP - 2..=MAX_TOP + 2).contains(&top) {
        return Parsed::NotAFloat;
    }
    match round(&n, exp2, false) {
        Some(v) if v.m != 0 => Parsed::Finite(v),
        _ => Parsed::NotAFloat,
    }
}

/// `n × 2^e` (plus a little more when `sticky`: bits below it were not zero) rounded to
/// the nearest long double, ties to even; `None` past the largest.
fn round(n: &Big, e: i64, sticky: bool) -> Option<Ld> {
    let len = n.bits() as i64;
    if len == 0 {
        return Some(Ld {
            neg: false,
            m: 0,
            e: 0,
        });
    }
    // The exponent of the mantissa's last bit: 64 bits, or fewer for a denormal.
    let lo = (e + len - 64).max(MIN_EXP);
    let r = lo - e;
    let (m, lo) = if r <= 0 {
        // `n` has at most 64 bits here, and fits shifted.
        (n.low_u64() << (-r), lo)
    } else {
        let r = r as u64;
        let mut m = n.shr_u64(r);
        let half = n.bit(r - 1);
        let below = sticky || n.any_below(r - 1);
        if half && (below || m & 1 == 1) {
            m = m.wrapping_add(1);
            if m == 0 {
                // 2^64: one bit more.
                return finish(1u64 << 63, lo + 1);
            }
        }
        (m, lo)
    };
    finish(m, if m == 0 { 0 } else { lo })
}

fn finish(m: u64, e: i64) -> Option<Ld> {
    if m != 0 && e + (64 - i64::from(m.leading_zeros())) - 1 > MAX_TOP {
        return None;
    }
    Some(Ld { neg: false, m, e })
}

// ---- adding --------------------------------------------------------------------------

fn add(a: Ld, b: Ld) -> Option<Ld> {
    if a.m == 0 && b.m == 0 {
        // -0 + -0 is -0; any other sum of zeros +0.
        return Some(Ld {
            neg: a.neg && b.neg,
            m: 0,
            e: 0,
        });
    }
    if a.m == 0 {
        return Some(b);
    }
    if b.m == 0 {
        return Some(a);
    }
    let (hi, lo) = if a.e >= b.e { (a, b) } else { (b, a) };
    let gap = (hi.e - lo.e) as u64;
    // A term more than 130 bits below the other's last bit moves it by less than half a
    // unit: the sum rounds to the larger, unless they cancel, which they cannot then.
    if gap > 130 && hi.m.leading_zeros() == 0 {
        return Some(hi);
    }
    if gap <= 63 {
        // The common case, in 128-bit integers: hi's mantissa shifted by the gap fits.
        let x = u128::from(hi.m) << gap;
        let y = u128::from(lo.m);
        let base = hi.e - gap as i64;
        let (neg, n) = if hi.neg == lo.neg {
            (hi.neg, x + y)
        } else if x > y {
            (hi.neg, x - y)
        } else if x < y {
            (lo.neg, y - x)
        } else {
            return Some(Ld {
                neg: false,
                m: 0,
                e: 0,
            });
        };
        return round(&Big::from_u128(n), base, false).map(|v| Ld { neg, ..v });
    }
    let gap = gap.min(200);
    let mut x = Big::from_u64(hi.m);
    x.shl(gap);
    let y = Big::from_u64(lo.m);
    let base = hi.e - gap as i64;
    let (neg, n) = if hi.neg == lo.neg {
        x.add(&y);
        (hi.neg, x)
    } else {
        match x.cmp(&y) {
            Ordering::Greater => {
                x.sub(&y);
                (hi.neg, x)
            }
            Ordering::Less => {
                let mut y = y;
                y.sub(&x);
                (lo.neg, y)
            }
            // x - x is +0 when rounding to nearest.
            Ordering::Equal => {
                return Some(Ld {
                    neg: false,
                    m: 0,
                    e: 0,
                })
            }
        }
    };
    round(&n, base, false).map(|v| Ld { neg, ..v })
}

// ---- writing (ld2string, LD_STR_HUMAN) -----------------------------------------------

/// `"%.17Lf"` of the value, its trailing zeros and a trailing point removed, `-0` as `0`.
fn human(v: Ld) -> String {
    let (int, frac17) = if (-70..0).contains(&v.e) {
        // The common case, in 128-bit integers: the fraction has at most 70 bits, times
        // 10^17 (57 bits) it fits.
        let s = (-v.e) as u32;
        let m = u128::from(v.m);
        let mask = (1u128 << s) - 1;
        let frac = (m & mask) * 100_000_000_000_000_000;
        let mut d = (frac >> s) as u64;
        let half = (frac >> (s - 1)) & 1 == 1;
        let below = frac & ((1u128 << (s - 1)) - 1) != 0;
        if half && (below || d & 1 == 1) {
            d += 1;
        }
        let mut int = m >> s;
        if d == 100_000_000_000_000_000 {
            int += 1;
            d = 0;
        }
        (Big::from_u128(int), d)
    } else if v.e >= 0 {
        let mut i = Big::from_u64(v.m);
        i.shl(v.e as u64);
        (i, 0u64)
    } else {
        let s = (-v.e) as u64;
        let whole = Big::from_u64(v.m);
        let mut int = whole.clone();
        int.shr(s);
        // The fraction's bits, times 10^17, over 2^s: 17 digits, rounded to nearest even.
        let mut frac = whole;
        frac.keep_low(s);
        frac.mul_pow(10, 17);
        let mut digits = frac.clone();
        digits.shr(s);
        let mut d = digits.low_u64();
        let half = s >= 1 && frac.bit(s - 1);
        let below = s >= 1 && frac.any_below(s - 1);
        if half && (below || d & 1 == 1) {
            d += 1;
        }
        if d == 100_000_000_000_000_000 {
            int.add_small(1);
            d = 0;
        }
        (int, d)
    };
    let mut out = String::new();
    if v.neg {
        out.push('-');
    }
    out.push_str(&int.to_decimal());
    let frac = format!("{frac17:017}");
    let frac = frac.trim_end_matches('0');
    if !frac.is_empty() {
        out.push('.');
        out.push_str(frac);
    }
    if out == "-0" {
        out = "0".into();
    }
    out
}

// ---- big unsigned integers (little-endian 32-bit limbs) ------------------------------

#[derive(Clone, Debug)]
struct Big(Vec<u32>);

impl Big {
    fn zero() -> Big {
        Big(Vec::new())
    }

    fn from_u128(v: u128) -> Big {
        let mut b = Big(vec![
            v as u32,
            (v >> 32) as u32,
            (v >> 64) as u32,
            (v >> 96) as u32,
        ]);
        b.trim();
        b
    }

    fn from_u64(v: u64) -> Big {
        let mut b = Big(vec![v as u32, (v >> 32) as u32]);
        b.trim();
        b
    }

    fn trim(&mut self) {
        while self.0.last() == Some(&0) {
            self.0.pop();
        }
    }

    fn is_zero(&self) -> bool {
        self.0.is_empty()
    }

    fn bits(&self) -> u64 {
        match self.0.last() {
            None => 0,
            Some(&top) => (self.0.len() as u64 - 1) * 32 + u64::from(32 - top.leading_zeros()),
        }
    }

    fn bit(&self, i: u64) -> bool {
        self.0
            .get((i / 32) as usize)
            .is_some_and(|&l| (l >> (i % 32)) & 1 == 1)
    }

    /// Whether any bit below bit `i` is set.
    fn any_below(&self, i: u64) -> bool {
        let limb = (i / 32) as usize;
        if self.0[..limb.min(self.0.len())].iter().any(|&l| l != 0) {
            return true;
        }
        let mask = (1u32 << (i % 32)).wrapping_sub(1);
        self.0.get(limb).is_some_and(|&l| l & mask != 0)
    }

    fn mul_small(&mut self, f: u32) {
        let mut carry = 0u64;
        for l in &mut self.0 {
            let v = u64::from(*l) * u64::from(f) + carry;
            *l = v as u32;
            carry = v >> 32;
        }
        if carry != 0 {
            self.0.push(carry as u32);
        }
        self.trim();
    }

    fn add_small(&mut self, a: u32) {
        let mut carry = u64::from(a);
        for l in &mut self.0 {
            if carry == 0 {
                break;
            }
            let v = u64::from(*l) + carry;
            *l = v as u32;
            carry = v >> 32;
        }
        if carry != 0 {
            self.0.push(carry as u32);
        }
    }

    /// Times `base^exp` (`base` 5 or 10).
    fn mul_pow(&mut self, base: u32, mut exp: u64) {
        let (chunk, step) = if base == 5 {
            (1_220_703_125, 13)
        } else {
            (1_000_000_000, 9)
        };
        while exp >= step {
            self.mul_small(chunk);
            exp -= step;
        }
        if exp > 0 {
            self.mul_small(base.pow(exp as u32));
        }
    }

    fn shl(&mut self, n: u64) {
        if self.is_zero() {
            return;
        }
        let (limbs, bits) = ((n / 32) as usize, (n % 32) as u32);
        if bits != 0 {
            let mut carry = 0u32;
            for l in &mut self.0 {
                let v = (*l << bits) | carry;
                carry = *l >> (32 - bits);
                *l = v;
            }
            if carry != 0 {
                self.0.push(carry);
            }
        }
        if limbs > 0 {
            self.0.splice(0..0, std::iter::repeat_n(0, limbs));
        }
    }

    fn shr(&mut self, n: u64) {
        let limbs = (n / 32) as usize;
        if limbs >= self.0.len() {
            self.0.clear();
            return;
        }
        self.0.drain(..limbs);
        let bits = (n % 32) as u32;
        if bits != 0 {
            let len = self.0.len();
            for i in 0..len {
                let hi = if i + 1 < len {
                    self.0[i + 1] << (32 - bits)
                } else {
                    0
                };
                self.0[i] = (self.0[i] >> bits) | hi;
            }
        }
        self.trim();
    }

    /// Keeps the bits below bit `n`.
    fn keep_low(&mut self, n: u64) {
        let limbs = (n / 32) as usize;
        let bits = (n % 32) as u32;
        if limbs < self.0.len() {
            self.0.truncate(limbs + 1);
            self.0[limbs] &= (1u32 << bits).wrapping_sub(1);
        }
        self.trim();
    }

    fn low_u128(&self) -> u128 {
        (0..4).fold(0u128, |acc, i| {
            acc | (u128::from(self.0.get(i).copied().unwrap_or(0)) << (32 * i))
        })
    }

    fn low_u64(&self) -> u64 {
        let l = |i: usize| u64::from(self.0.get(i).copied().unwrap_or(0));
        l(0) | (l(1) << 32)
    }

    /// Bits `r..r + 64` (the value fits in them after the shift, which callers ensure).
    fn shr_u64(&self, r: u64) -> u64 {
        let mut c = self.clone();
        c.shr(r);
        c.low_u64()
    }

    fn cmp(&self, o: &Big) -> Ordering {
        self.0
            .len()
            .cmp(&o.0.len())
            .then_with(|| self.0.iter().rev().cmp(o.0.iter().rev()))
    }

    fn add(&mut self, o: &Big) {
        let mut carry = 0u64;
        for i in 0..self.0.len().max(o.0.len()) {
            if i == self.0.len() {
                self.0.push(0);
            }
            let v = u64::from(self.0[i]) + u64::from(o.0.get(i).copied().unwrap_or(0)) + carry;
            self.0[i] = v as u32;
            carry = v >> 32;
        }
        if carry != 0 {
            self.0.push(carry as u32);
        }
    }

    /// `self - o`, with `self >= o`.
    fn sub(&mut self, o: &Big) {
        let mut borrow = 0i64;
        for i in 0..self.0.len() {
            let v = i64::from(self.0[i]) - i64::from(o.0.get(i).copied().unwrap_or(0)) - borrow;
            if v < 0 {
                self.0[i] = (v + (1i64 << 32)) as u32;
                borrow = 1;
            } else {
                self.0[i] = v as u32;
                borrow = 0;
            }
        }
        self.trim();
    }

    /// Quotient and remainder by `d` (non-zero), bit by bit: callers' quotients are short.
    fn div_rem(&self, d: &Big) -> (Big, Big) {
        let mut rem = self.clone();
        let mut q = Big::zero();
        let top = self.bits().saturating_sub(d.bits());
        for i in (0..=top).rev() {
            let mut s = d.clone();
            s.shl(i);
            if rem.cmp(&s) != Ordering::Less {
                rem.sub(&s);
                let mut bit = Big::from_u64(1);
                bit.shl(i);
                q.add(&bit);
            }
        }
        (q, rem)
    }

    fn to_decimal(&self) -> String {
        if self.is_zero() {
            return "0".into();
        }
        let mut chunks = Vec::new();
        let mut n = self.clone();
        while !n.is_zero() {
            let mut rem = 0u64;
            for l in n.0.iter_mut().rev() {
                let v = (rem << 32) | u64::from(*l);
                *l = (v / 1_000_000_000) as u32;
                rem = v % 1_000_000_000;
            }
            n.trim();
            chunks.push(rem as u32);
        }
        let mut s = chunks.pop().map(|c| c.to_string()).unwrap_or_default();
        for c in chunks.iter().rev() {
            s.push_str(&format!("{c:09}"));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(cur: &str, by: &str) -> String {
        incr(Some(cur.as_bytes()), by.as_bytes()).unwrap()
    }

    /// Redis 7.0's answers on x86-64, read off a redis-server.
    #[test]
    fn sums_read_as_redis_writes_them() {
        assert_eq!(s("0.1", "0.2"), "0.3");
        assert_eq!(s("1000.1", "0.2"), "1000.29999999999999999");
        assert_eq!(s("1.1", "2.2"), "3.3");
        assert_eq!(s("12345.678", "0.001"), "12345.67900000000000027");
        assert_eq!(s("99.99", "0.01"), "100");
        assert_eq!(s("3", "1.23456789012345678"), "4.23456789012345678");
        assert_eq!(s("10.5", "0.1"), "10.6");
        assert_eq!(s("1e20", "1.5"), "100000000000000000000");
        assert_eq!(s("5000", "0.1"), "5000.10000000000000009");
        assert_eq!(s("5", "-5"), "0");
        assert_eq!(s("-0.5", "0.5"), "0");
        assert_eq!(s("1", "-1.5"), "-0.5");
        assert_eq!(s("5.0e3", "2.0e2"), "5200");
        assert_eq!(incr(None, b"3").unwrap(), "3");
        assert_eq!(s("-0", "-0"), "0");
        assert_eq!(s(".5", "5."), "5.5");
    }

    #[test]
    fn past_a_doubles_range_within_a_long_doubles() {
        // Redis 7.0 on x86-64: 199999999999999999993371759311691291321120199694831134...
        let big = s("1e308", "1e308");
        assert!(
            big.starts_with("199999999999999999993371759311691291321120199694831134"),
            "{big}"
        );
        assert_eq!(big.len(), 309);
        assert_eq!(s("1e400", "0").len(), 401);
        assert_eq!(incr(Some(b"1e4932"), b"1e4932"), Err(IncrError::NotFinite));
        // Denormals read; what rounds to zero does not.
        assert!(check(b"1e-4940").is_ok());
        assert_eq!(check(b"1e-5000"), Err(IncrError::Increment));
        assert!(check(b"0e-99999").is_ok());
    }

    #[test]
    fn what_is_not_a_float_or_not_finite_is_refused() {
        assert_eq!(incr(Some(b"abc"), b"1"), Err(IncrError::Current));
        assert_eq!(s("0", "0x10"), "16");
        assert_eq!(s("0", "-0x1.8p1"), "-3");
        assert_eq!(s("0", "0x.8"), "0.5");
        for bad in [
            &b" 1"[..],
            b"1 ",
            b"",
            b"nan",
            b"1e99999",
            b".",
            b"1e",
            b"1e+",
            b"0x",
            b"0xg",
            b"0x1p",
            b"--1",
        ] {
            assert_eq!(incr(Some(b"1"), bad), Err(IncrError::Increment), "{bad:?}");
        }
        assert_eq!(incr(Some(b"1"), b"inf"), Err(IncrError::NotFinite));
        assert_eq!(incr(Some(b"-Infinity"), b"1"), Err(IncrError::NotFinite));
        assert_eq!(incr(Some(&[b'1'; 6000]), b"1"), Err(IncrError::Current));
        assert_eq!(check(b"inf"), Err(IncrError::IncrementNotFinite));
        assert_eq!(check(b"x"), Err(IncrError::Increment));
        assert_eq!(check(b"1.5"), Ok(()));
    }

    /// Any bytes, or any mix of a float's characters: an answer or a refusal, never a
    /// panic (fixed seed, bounded).
    #[test]
    fn no_input_panics() {
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        let mut next = || {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            x.wrapping_mul(0x9E37_79B9_7F4A_7C15)
        };
        let alphabet = b"0123456789.eE+-xXpPabcfinINF ";
        for round in 0..20_000 {
            let len = (next() % 40) as usize;
            let text: Vec<u8> = (0..len)
                .map(|_| {
                    let r = next();
                    if round % 5 == 0 {
                        r as u8
                    } else {
                        alphabet[(r % alphabet.len() as u64) as usize]
                    }
                })
                .collect();
            let _ = check(&text);
            let _ = incr(Some(&text), b"1.5");
            if round % 50 == 0 {
                // A sum thousands of digits long.
                let _ = incr(Some(b"-7e4000"), &text);
            }
        }
    }

    /// Against the 64-bit float where it is exact enough to tell: a sum of two doubles'
    /// worth of digits reads back as the double's value.
    #[test]
    fn small_integers_and_halves_are_exact() {
        for a in -50i64..50 {
            for b in [-3i64, 0, 7, 1 << 40] {
                let want = (a + b) as f64 / 2.0;
                let got = s(
                    &format!("{}", a as f64 / 2.0),
                    &format!("{}", b as f64 / 2.0),
                );
                assert_eq!(got.parse::<f64>().unwrap(), want, "{a} {b}");
            }
        }
    }
}
