//! Bitmap commands on string values, as Redis 7.2: SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP.
//! Bit 0 is the most significant bit of the first byte. The range rules (`bit_range`) and the
//! searches (`count_ones`, `first_bit`) are pure functions with their own tests.

use bytes::Bytes;
use shoal_resp::Reply;
use shoal_store::Access;

use super::{entry_string, err, int_arg, is, parse_i64, slot_string, tri, Ctx, ERR_SYNTAX};
use crate::notify::STRING;

const ERR_OFFSET: &str = "ERR bit offset is not an integer or out of range";
const ERR_BIT: &str = "ERR bit is not an integer or out of range";

/// A bit offset argument: an integer from 0 whose byte is below `proto-max-bulk-len`.
fn bit_offset(ctx: &Ctx<'_>, arg: &[u8]) -> Result<u64, Reply> {
    let limit = ctx.engine.with_settings(|s| s.proto_max_bulk_len.0).max(1);
    match parse_i64(arg) {
        Some(n) if n >= 0 && ((n as u64) >> 3) < limit => Ok(n as u64),
        _ => Err(err(ERR_OFFSET)),
    }
}

pub fn setbit(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let offset = tri!(bit_offset(ctx, &args[2]));
    let on = match parse_i64(&args[3]) {
        Some(b @ (0 | 1)) => b as u8,
        _ => return err(ERR_BIT),
    };
    let byte = (offset >> 3) as usize;
    let mask = 1u8 << (7 - (offset & 7));
    let (reply, wrote) = ctx.engine.store.write(&args[1], ctx.now_ms, |slot| {
        let held = match slot_string(slot) {
            Ok(v) => v.and_then(|v| v.get(byte).copied()),
            Err(e) => return (e, false),
        };
        let old = held.unwrap_or(0);
        let was = u8::from(old & mask != 0);
        // Redis writes only when the string grows or the bit changes.
        let write = held.is_none() || was != on;
        if write {
            let new = if on == 1 { old | mask } else { old & !mask };
            slot.overwrite(byte, &[new]);
        }
        // Redis makes the value `raw` even when the bit was already set.
        slot.set_edited();
        (Reply::Int(i64::from(was)), write)
    });
    if wrote {
        ctx.notify(STRING, "setbit", &args[1]);
    }
    reply
}

pub fn getbit(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let offset = tri!(bit_offset(ctx, &args[2]));
    let byte = (offset >> 3) as usize;
    let mask = 1u8 << (7 - (offset & 7));
    ctx.engine
        .store
        .read(&args[1], ctx.now_ms, Access::Read, |e| {
            let b = tri!(entry_string(e))
                .and_then(|v| v.get(byte).copied())
                .unwrap_or(0);
            Reply::Int(i64::from(b & mask != 0))
        })
}

/// A range of bits `first..=last` of a value, or `None` when it is empty.
///
/// Redis's rules: `start` and `end` index bytes (`bits` false) or bits; negative ones count
/// from the end; after that both are clamped into the value (a start beyond the end gives an
/// empty range). BITCOUNT (`neg_check`) also takes two negative indexes with `start > end`
/// as empty before any clamping; BITPOS does not (both may clamp to 0).
fn bit_range(len: usize, start: i64, end: i64, bits: bool, neg_check: bool) -> Option<(u64, u64)> {
    let total = if bits { len as i64 * 8 } else { len as i64 };
    if neg_check && start < 0 && end < 0 && start > end {
        return None;
    }
    let mut start = if start < 0 { total + start } else { start };
    let mut end = if end < 0 { total + end } else { end };
    start = start.max(0);
    end = end.max(0);
    if end >= total {
        end = total - 1;
    }
    if start > end {
        return None;
    }
    Some(if bits {
        (start as u64, end as u64)
    } else {
        (start as u64 * 8, end as u64 * 8 + 7)
    })
}

/// The number of set bits among bits `first..=last` of `v` (within `v`).
fn count_ones(v: &[u8], first: u64, last: u64) -> u64 {
    let (fb, lb) = ((first >> 3) as usize, (last >> 3) as usize);
    let head = 0xFFu8 >> (first & 7);
    let tail = 0xFFu8 << (7 - (last & 7));
    if fb == lb {
        return u64::from((v[fb] & head & tail).count_ones());
    }
    let middle: u64 = v[fb + 1..lb]
        .iter()
        .map(|b| u64::from(b.count_ones()))
        .sum();
    u64::from((v[fb] & head).count_ones()) + middle + u64::from((v[lb] & tail).count_ones())
}

/// The first bit equal to `bit` among bits `first..=last` of `v`, if any.
fn first_bit(v: &[u8], first: u64, last: u64, bit: bool) -> Option<u64> {
    let (fb, lb) = ((first >> 3) as usize, (last >> 3) as usize);
    for (i, &raw) in v.iter().enumerate().take(lb + 1).skip(fb) {
        // Looking for ones: the byte as it is; for zeros: its complement.
        let mut b = if bit { raw } else { !raw };
        if i == fb {
            b &= 0xFF >> (first & 7);
        }
        if i == lb {
            b &= 0xFF << (7 - (last & 7));
        }
        if b != 0 {
            return Some(i as u64 * 8 + u64::from(b.leading_zeros()));
        }
    }
    None
}

/// `BYTE` or `BIT` (default `BYTE`): whether a range counts bits.
fn unit(arg: Option<&Bytes>) -> Result<bool, Reply> {
    match arg {
        None => Ok(false),
        Some(a) if is(a, "BIT") => Ok(true),
        Some(a) if is(a, "BYTE") => Ok(false),
        Some(_) => Err(err(ERR_SYNTAX)),
    }
}

/// BITCOUNT key [start end [BYTE | BIT]]. As in Redis 7.2 the arguments are checked before
/// the key is looked up (7.0 answered 0 for a missing key whatever they were).
pub fn bitcount(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let (start, end, bits) = match args.len() {
        2 => (0, -1, false),
        4 | 5 => (
            tri!(int_arg(&args[2])),
            tri!(int_arg(&args[3])),
            tri!(unit(args.get(4))),
        ),
        _ => return err(ERR_SYNTAX),
    };
    ctx.engine
        .store
        .read(&args[1], ctx.now_ms, Access::Read, |e| {
            let v = tri!(entry_string(e)).unwrap_or_default();
            match bit_range(v.len(), start, end, bits, true) {
                Some((first, last)) => Reply::Int(count_ones(v, first, last) as i64),
                None => Reply::Int(0),
            }
        })
}

/// BITPOS key bit [start [end [BYTE | BIT]]]. A missing key is all zeros: 0 for a clear bit,
/// -1 for a set one. Looking for a clear bit without an end, the bits past the value count
/// as clear (so an all-ones value answers its length in bits); with an end they do not (-1).
/// The arguments are checked before the key is looked up (Redis 7.2).
pub fn bitpos(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let bit = match parse_i64(&args[2]) {
        Some(0) => false,
        Some(1) => true,
        Some(_) => return err("ERR The bit argument must be 1 or 0."),
        None => return err(super::ERR_NOT_INTEGER),
    };
    if args.len() > 6 {
        return err(ERR_SYNTAX);
    }
    let start = match args.get(3) {
        Some(a) => tri!(int_arg(a)),
        None => 0,
    };
    let bits = tri!(unit(args.get(5)));
    let end_given = args.len() >= 5;
    let end = match args.get(4) {
        Some(a) => tri!(int_arg(a)),
        None => -1,
    };
    ctx.engine
        .store
        .read(&args[1], ctx.now_ms, Access::Read, |e| {
            let Some(v) = tri!(entry_string(e)) else {
                return Reply::Int(if bit { -1 } else { 0 });
            };
            let Some((first, last)) = bit_range(v.len(), start, end, bits, false) else {
                return Reply::Int(-1);
            };
            match first_bit(v, first, last, bit) {
                Some(pos) => Reply::Int(pos as i64),
                None if bit || end_given => Reply::Int(-1),
                // The first bit past the value (the range then ends with the value).
                None => Reply::Int(((last >> 3) + 1) as i64 * 8),
            }
        })
}

/// BITOP AND | OR | XOR | NOT destkey key [key ...]: missing keys are empty strings and
/// shorter values are zero-padded; an empty result deletes the destination. Answers the
/// result's length.
pub fn bitop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    #[derive(PartialEq)]
    enum Op {
        And,
        Or,
        Xor,
        Not,
    }
    let op = match &args[1] {
        a if is(a, "AND") => Op::And,
        a if is(a, "OR") => Op::Or,
        a if is(a, "XOR") => Op::Xor,
        a if is(a, "NOT") => Op::Not,
        _ => return err(ERR_SYNTAX),
    };
    if op == Op::Not && args.len() != 4 {
        return err("ERR BITOP NOT must be called with a single source key.");
    }
    // Each source folded into `out` where it is stored, without a copy (a key named many
    // times costs no memory per mention). `out` grows with zeros to the longest source:
    // missing bytes count as zeros, so AND keeps them zero and OR and XOR take the longer
    // source's bytes.
    let mut out: Vec<u8> = Vec::new();
    for (n, key) in args[3..].iter().enumerate() {
        let read = ctx.engine.store.read(key, ctx.now_ms, Access::Read, |e| {
            let v = entry_string(e)?.unwrap_or_default();
            if out.len() < v.len() {
                out.resize(v.len(), 0);
            }
            if n == 0 {
                out[..v.len()].copy_from_slice(v);
                return Ok(());
            }
            let pairs = out.iter_mut().zip(v);
            match op {
                Op::And => {
                    pairs.for_each(|(o, b)| *o &= b);
                    out[v.len()..].fill(0);
                }
                Op::Or => pairs.for_each(|(o, b)| *o |= b),
                Op::Xor => pairs.for_each(|(o, b)| *o ^= b),
                Op::Not => {}
            }
            Ok(())
        });
        tri!(read);
    }
    if op == Op::Not {
        out.iter_mut().for_each(|b| *b = !*b);
    }
    let max = out.len();
    let dest = &args[2];
    if out.is_empty() {
        if ctx.engine.store.remove(dest, ctx.now_ms) {
            ctx.notify(crate::notify::GENERIC, "del", dest);
        }
    } else {
        ctx.engine.store.write(dest, ctx.now_ms, |slot| {
            slot.set(&out, None);
            // Redis's BITOP stores a `raw` string, however short.
            slot.set_edited();
        });
        ctx.notify(STRING, "set", dest);
    }
    Reply::Int(max as i64)
}

/// How BITFIELD's SET and INCRBY treat a value that does not fit.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Overflow {
    Wrap,
    Sat,
    Fail,
}

/// One BITFIELD operation.
#[derive(Debug)]
enum FieldOp {
    Get,
    Set(i64),
    IncrBy(i64),
}

/// A BITFIELD field: signed or not, its width, its first bit.
#[derive(Debug)]
struct Field {
    signed: bool,
    bits: u32,
    offset: u64,
    op: FieldOp,
    overflow: Overflow,
}

const ERR_FIELD_TYPE: &str =
    "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.";

/// `i1`..`i64` or `u1`..`u63`.
fn field_type(arg: &[u8]) -> Result<(bool, u32), Reply> {
    let signed = match arg.first() {
        // Lowercase only, as Redis.
        Some(b'i') => true,
        Some(b'u') => false,
        _ => return Err(err(ERR_FIELD_TYPE)),
    };
    match parse_i64(&arg[1..]) {
        Some(n) if n >= 1 && n <= if signed { 64 } else { 63 } => Ok((signed, n as u32)),
        _ => Err(err(ERR_FIELD_TYPE)),
    }
}

/// A field offset: bits, or `#n` for the n-th field of this width.
fn field_offset(ctx: &Ctx<'_>, arg: &[u8], bits: u32) -> Result<u64, Reply> {
    let Some(rest) = arg.strip_prefix(b"#").filter(|r| !r.is_empty()) else {
        return bit_offset(ctx, arg);
    };
    let n = parse_i64(rest)
        .and_then(|n| n.checked_mul(i64::from(bits)))
        .ok_or_else(|| err(ERR_OFFSET))?;
    bit_offset(ctx, n.to_string().as_bytes())
}

/// Parses BITFIELD's operations (Redis's checks, in its order).
fn parse_fields(ctx: &Ctx<'_>, args: &[Bytes]) -> Result<Vec<Field>, Reply> {
    let mut out = Vec::new();
    let mut overflow = Overflow::Wrap;
    let mut j = 2;
    while j < args.len() {
        let rem = args.len() - j - 1;
        let sub = &args[j];
        let op = if is(sub, "GET") && rem >= 2 {
            FieldOp::Get
        } else if is(sub, "SET") && rem >= 3 {
            FieldOp::Set(0)
        } else if is(sub, "INCRBY") && rem >= 3 {
            FieldOp::IncrBy(0)
        } else if is(sub, "OVERFLOW") && rem >= 1 {
            let kind = &args[j + 1];
            overflow = if is(kind, "WRAP") {
                Overflow::Wrap
            } else if is(kind, "SAT") {
                Overflow::Sat
            } else if is(kind, "FAIL") {
                Overflow::Fail
            } else {
                return Err(err("ERR Invalid OVERFLOW type specified"));
            };
            j += 2;
            continue;
        } else {
            return Err(err(ERR_SYNTAX));
        };
        let (signed, bits) = field_type(&args[j + 1])?;
        let offset = field_offset(ctx, &args[j + 2], bits)?;
        let op = match op {
            FieldOp::Get => FieldOp::Get,
            FieldOp::Set(_) => FieldOp::Set(int_arg(&args[j + 3])?),
            FieldOp::IncrBy(_) => FieldOp::IncrBy(int_arg(&args[j + 3])?),
        };
        j += if matches!(op, FieldOp::Get) { 3 } else { 4 };
        out.push(Field {
            signed,
            bits,
            offset,
            op,
            overflow,
        });
    }
    Ok(out)
}

/// `bits` bits of `v` from bit `offset`, most significant first (zeros past the end).
fn get_bits(v: &[u8], offset: u64, bits: u32) -> u64 {
    let mut out = 0u64;
    for i in 0..u64::from(bits) {
        let at = offset + i;
        let byte = v.get((at >> 3) as usize).copied().unwrap_or(0);
        out = (out << 1) | u64::from((byte >> (7 - (at & 7))) & 1);
    }
    out
}

/// Writes the low `bits` bits of `value` at bit `offset` (the value is long enough).
fn set_bits(v: &mut [u8], offset: u64, bits: u32, value: u64) {
    for i in 0..u64::from(bits) {
        let at = offset + i;
        let mask = 1u8 << (7 - (at & 7));
        let b = &mut v[(at >> 3) as usize];
        if (value >> (u64::from(bits) - 1 - i)) & 1 == 1 {
            *b |= mask;
        } else {
            *b &= !mask;
        }
    }
}

/// Sign-extends a `bits`-wide field.
fn signed_of(raw: u64, bits: u32) -> i64 {
    if bits < 64 && raw & (1 << (bits - 1)) != 0 {
        (raw | (u64::MAX << bits)) as i64
    } else {
        raw as i64
    }
}

/// `value + incr` in a field of `bits` bits: `Ok` when it fits, else `Err` with what WRAP
/// or SAT make of it (Redis's `check{Signed,Unsigned}BitfieldOverflow`).
fn add_in_field(value: i64, incr: i64, bits: u32, signed: bool, how: Overflow) -> Result<i64, i64> {
    if signed {
        let max: i64 = if bits == 64 {
            i64::MAX
        } else {
            (1i64 << (bits - 1)) - 1
        };
        let min = -max - 1;
        let sum = i128::from(value) + i128::from(incr);
        if sum >= i128::from(min) && sum <= i128::from(max) {
            return Ok(sum as i64);
        }
        Err(match how {
            Overflow::Sat if sum > i128::from(max) => max,
            Overflow::Sat => min,
            _ => {
                let c = (value as u64).wrapping_add(incr as u64);
                signed_of(
                    c & if bits == 64 {
                        u64::MAX
                    } else {
                        !(u64::MAX << bits)
                    },
                    bits,
                )
            }
        })
    } else {
        let max: u64 = (1u64 << bits) - 1;
        let v = value as u64;
        let sum = i128::from(v) + i128::from(incr);
        if v <= max && sum >= 0 && sum <= i128::from(max) {
            return Ok(sum as i64);
        }
        Err(match how {
            Overflow::Sat if v > max || incr > 0 => max as i64,
            Overflow::Sat => 0,
            _ => (v.wrapping_add(incr as u64) & max) as i64,
        })
    }
}

/// The value of field `f` of `v` that starts at bit `offset`, sign-extended if signed.
fn field_value(v: &[u8], offset: u64, f: &Field) -> i64 {
    let raw = get_bits(v, offset, f.bits);
    if f.signed {
        signed_of(raw, f.bits)
    } else {
        raw as i64
    }
}

/// Runs one BITFIELD operation on `v`, whose bit `offset` is the field's first: the reply,
/// and for a write that ran, whether `v` changed (a SET of the value there, an INCRBY of 0,
/// change nothing, as Redis counts them); `None` for a GET or a write OVERFLOW FAIL refused.
fn run_field(v: &mut [u8], offset: u64, f: &Field) -> (Reply, Option<bool>) {
    let old = field_value(v, offset, f);
    let (fits, answer_new) = match f.op {
        FieldOp::Get => return (Reply::Int(old), None),
        FieldOp::Set(x) => (add_in_field(x, 0, f.bits, f.signed, f.overflow), false),
        FieldOp::IncrBy(x) => (add_in_field(old, x, f.bits, f.signed, f.overflow), true),
    };
    let new = match fits {
        Ok(n) => n,
        Err(_) if f.overflow == Overflow::Fail => return (Reply::Nil, None),
        Err(n) => n,
    };
    set_bits(v, offset, f.bits, new as u64);
    (
        Reply::Int(if answer_new { new } else { old }),
        Some(new != old),
    )
}

/// The bytes SETBIT or BITFIELD may grow their string to, read from the arguments without
/// checking them (0 where unreadable: the command's own checks answer then). BITFIELD's
/// furthest SET or INCRBY field counts (`#n` offsets in fields of the type's width).
pub fn grows_to(spec_name: &str, args: &[Bytes]) -> usize {
    let bytes = |bit_end: u64| usize::try_from(bit_end.div_ceil(8)).unwrap_or(usize::MAX);
    if spec_name == "setbit" {
        return args
            .get(2)
            .and_then(|a| parse_i64(a))
            .and_then(|n| u64::try_from(n).ok())
            .map_or(0, |bit| bytes(bit.saturating_add(1)));
    }
    let mut furthest = 0u64;
    let mut i = 2;
    while i < args.len() {
        let op = &args[i];
        if op.eq_ignore_ascii_case(b"SET") || op.eq_ignore_ascii_case(b"INCRBY") {
            let width = args
                .get(i + 1)
                .and_then(|t| t.get(1..))
                .and_then(|w| std::str::from_utf8(w).ok()?.parse::<u64>().ok())
                .unwrap_or(0);
            let offset = args.get(i + 2).and_then(|o| match o.strip_prefix(b"#") {
                Some(n) => parse_i64(n)
                    .and_then(|n| u64::try_from(n).ok())
                    .map(|n| n.saturating_mul(width)),
                None => parse_i64(o).and_then(|n| u64::try_from(n).ok()),
            });
            if let Some(offset) = offset {
                furthest = furthest.max(offset.saturating_add(width));
            }
            i += 4;
        } else if op.eq_ignore_ascii_case(b"GET") {
            i += 3;
        } else {
            // OVERFLOW and its mode.
            i += 2;
        }
    }
    bytes(furthest)
}

pub fn bitfield(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    bitfield_generic(ctx, args, false)
}

pub fn bitfield_ro(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    bitfield_generic(ctx, args, true)
}

/// BITFIELD key [GET type offset | [OVERFLOW WRAP | SAT | FAIL] SET type offset value |
/// INCRBY type offset increment ...], and BITFIELD_RO (GET only).
fn bitfield_generic(ctx: &mut Ctx<'_>, args: &[Bytes], read_only: bool) -> Reply {
    let fields = tri!(parse_fields(ctx, args));
    let writes = fields
        .iter()
        .filter(|f| !matches!(f.op, FieldOp::Get))
        .map(|f| f.offset + u64::from(f.bits) - 1)
        .max();
    let Some(highest) = writes else {
        return ctx
            .engine
            .store
            .read(&args[1], ctx.now_ms, Access::Read, |e| {
                // Reads only: straight from the stored value, without a copy.
                let v = tri!(entry_string(e)).unwrap_or_default();
                let read = |f: &Field| Reply::Int(field_value(v, f.offset, f));
                Reply::Array(fields.iter().map(read).collect())
            });
    };
    if read_only {
        return err("ERR BITFIELD_RO only supports the GET subcommand");
    }
    let need = (highest >> 3) as usize + 1;
    let mut changes = false;
    let mut grown = false;
    let reply = ctx.engine.store.write(&args[1], ctx.now_ms, |slot| {
        // Grown (or created) first to hold every written field, as Redis does even when
        // every write fails; then each field is edited in place, on the bytes it covers.
        if tri!(slot_string(slot)).is_none_or(|v| v.len() < need) {
            slot.overwrite(need - 1, &[0]);
            grown = true;
        }
        // `raw` from here, whatever the writes do, as in Redis.
        slot.set_edited();
        let replies = fields
            .iter()
            .map(|f| {
                let first = (f.offset >> 3) as usize;
                let last = ((f.offset + u64::from(f.bits) - 1) >> 3) as usize;
                let mut window = [0u8; 9];
                let n = last - first + 1;
                if let Some(v) = slot.value() {
                    let end = v.len().min(last + 1);
                    if first < end {
                        window[..end - first].copy_from_slice(&v[first..end]);
                    }
                }
                let (reply, wrote) = run_field(&mut window[..n], f.offset & 7, f);
                if wrote == Some(true) {
                    slot.overwrite(first, &window[..n]);
                }
                // Redis's `dirty || oldval != newval`, for each write that ran.
                changes |= wrote.is_some_and(|changed| changed || grown);
                reply
            })
            .collect();
        Reply::Array(replies)
    });
    if changes {
        ctx.notify(STRING, "setbit", &args[1]);
    }
    reply
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_follow_redis_rules_in_bytes_and_bits() {
        // "foobar": 6 bytes, 48 bits.
        let r = |start, end, bits| bit_range(6, start, end, bits, true);
        assert_eq!(r(0, -1, false), Some((0, 47)));
        assert_eq!(r(1, 1, false), Some((8, 15)));
        assert_eq!(r(5, 30, true), Some((5, 30)));
        assert_eq!(r(-2, -1, false), Some((32, 47)));
        assert_eq!(r(10, 20, false), None);
        assert_eq!(r(-1, -2, false), None);
        assert_eq!(r(2, 1, false), None);
        assert_eq!(r(-100, 100, true), Some((0, 47)));
        assert_eq!(bit_range(0, 0, -1, false, true), None);
        // Two negative indexes past the start: BITCOUNT counts nothing, BITPOS searches the
        // first byte (both clamp to 0).
        assert_eq!(r(-10, -20, false), None);
        assert_eq!(bit_range(6, -10, -20, false, false), Some((0, 7)));
    }

    #[test]
    fn field_arithmetic_wraps_saturates_or_fails_as_redis() {
        use Overflow::*;
        // u8: 250 + 10.
        assert_eq!(add_in_field(250, 10, 8, false, Wrap), Err(4));
        assert_eq!(add_in_field(250, 10, 8, false, Sat), Err(255));
        assert_eq!(add_in_field(250, 5, 8, false, Sat), Ok(255));
        assert_eq!(add_in_field(3, -10, 8, false, Sat), Err(0));
        assert_eq!(add_in_field(3, -10, 8, false, Wrap), Err(249));
        // SET of a value that does not fit: as an addition of 0.
        assert_eq!(add_in_field(-1, 0, 8, false, Wrap), Err(255));
        assert_eq!(add_in_field(-1, 0, 8, false, Sat), Err(255));
        assert_eq!(add_in_field(300, 0, 8, false, Wrap), Err(44));
        // i8: 120 + 10, -120 - 10.
        assert_eq!(add_in_field(120, 10, 8, true, Wrap), Err(-126));
        assert_eq!(add_in_field(120, 10, 8, true, Sat), Err(127));
        assert_eq!(add_in_field(-120, -10, 8, true, Sat), Err(-128));
        assert_eq!(add_in_field(-120, -10, 8, true, Wrap), Err(126));
        assert_eq!(add_in_field(100, 0, 8, true, Wrap), Ok(100));
        assert_eq!(add_in_field(200, 0, 8, true, Wrap), Err(-56));
        // i64 and u63 at their edges.
        assert_eq!(add_in_field(i64::MAX, 1, 64, true, Wrap), Err(i64::MIN));
        assert_eq!(add_in_field(i64::MAX, 1, 64, true, Sat), Err(i64::MAX));
        assert_eq!(add_in_field(i64::MAX, 0, 63, false, Wrap), Ok(i64::MAX));
        assert_eq!(add_in_field(i64::MAX, 1, 63, false, Wrap), Err(0));
        // i1 holds -1 and 0.
        assert_eq!(add_in_field(0, -1, 1, true, Wrap), Ok(-1));
        assert_eq!(add_in_field(-1, -1, 1, true, Wrap), Err(0));
    }

    #[test]
    fn fields_read_and_write_most_significant_bit_first() {
        let mut v = vec![0u8; 3];
        set_bits(&mut v, 4, 8, 0xAB);
        assert_eq!(v, [0x0A, 0xB0, 0x00]);
        assert_eq!(get_bits(&v, 4, 8), 0xAB);
        assert_eq!(signed_of(get_bits(&v, 4, 4), 4), -6);
        assert_eq!(get_bits(&v, 20, 8), 0, "past the end reads zeros");
        set_bits(&mut v, 0, 1, 1);
        assert_eq!(v[0], 0x8A);
    }

    #[test]
    fn counts_and_searches_cut_the_edge_bytes() {
        let v = b"foobar";
        assert_eq!(count_ones(v, 0, 47), 26);
        assert_eq!(count_ones(v, 8, 15), 6);
        assert_eq!(count_ones(v, 5, 30), 17);
        assert_eq!(count_ones(&[0xFF], 2, 4), 3);
        let v = [0xFF, 0xF0, 0x00];
        assert_eq!(first_bit(&v, 0, 23, false), Some(12));
        assert_eq!(first_bit(&v, 0, 23, true), Some(0));
        assert_eq!(first_bit(&v, 3, 23, true), Some(3));
        assert_eq!(first_bit(&v, 12, 23, true), None);
        assert_eq!(first_bit(&v, 0, 11, false), None);
        assert_eq!(first_bit(&[0x00, 0x01], 0, 15, true), Some(15));
    }
}
