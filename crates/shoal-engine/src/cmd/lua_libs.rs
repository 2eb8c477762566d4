//! The Lua libraries Redis bundles for scripts, as Redis 7 ships them: `cjson` (lua-cjson
//! 2.1: `encode`, `decode`, `null`), `cmsgpack` (lua-cmsgpack 0.4: `pack`, `unpack`,
//! `unpack_one`, `unpack_limit`), `bit` (LuaBitOp 1.0: `tobit`, `tohex`, `bnot`, `band`,
//! `bor`, `bxor`, `lshift`, `rshift`, `arshift`, `rol`, `ror`, `bswap`) and `struct`
//! (lua-struct 0.2: `pack`, `unpack`, `size`), written here on mlua. Their output and
//! errors are byte for byte Redis's (the differential test compares). cjson's settings
//! `encode_max_depth`, `decode_max_depth`, `encode_sparse_array`, `encode_number_precision`,
//! `encode_invalid_numbers`, `decode_invalid_numbers` (kept, but the decoder reads JSON
//! numbers only either way) and `encode_keep_buffer` (which changes no output) are there,
//! for the running script only: each script starts with lua-cjson's defaults (in Redis
//! they last for the server's Lua state, and one script's change reaches the next).
//!
//! Every length read from an input is checked against the bytes left before anything is
//! allocated, and nesting is bounded, so no script input can make these allocate without
//! bound or recurse past a worker's stack: cmsgpack packs 16 levels (as the original);
//! cjson encodes and decodes, and cmsgpack unpacks, 128 levels (Redis: cjson 1,000, cmsgpack
//! unbounded), past which they answer cjson's nesting errors and `Too deeply nested data
//! in input.`.

use mlua::{Lua, LuaString, MultiValue, Table, Value};

/// Installs `cjson`, `cmsgpack` and `bit` as globals (the sandbox then makes them read-only).
pub(super) fn install(lua: &Lua) -> mlua::Result<()> {
    let g = lua.globals();
    g.set("cjson", cjson(lua)?)?;
    g.set("cmsgpack", cmsgpack(lua)?)?;
    g.set("bit", bit(lua)?)?;
    g.set("struct", structs(lua)?)?;
    Ok(())
}

fn fail<T>(e: impl Into<String>) -> mlua::Result<T> {
    Err(mlua::Error::RuntimeError(e.into()))
}

/// A library function whose errors name the caller's place, as `luaL_error` does
/// (`user_script:<line>: <message>`).
fn function<A, R>(
    lua: &Lua,
    f: impl Fn(&Lua, A) -> mlua::Result<R> + mlua::MaybeSend + 'static,
) -> mlua::Result<mlua::Function>
where
    A: mlua::FromLuaMulti,
    R: mlua::IntoLuaMulti,
{
    lua.create_function(move |lua, args: A| {
        f(lua, args).map_err(|e| match e {
            mlua::Error::RuntimeError(m) => {
                let place = lua
                    .inspect_stack(1, |d| {
                        let src = d.source().short_src.map(|s| s.into_owned());
                        Some((src?, d.current_line()?))
                    })
                    .flatten();
                match place {
                    Some((src, line)) => mlua::Error::RuntimeError(format!("{src}:{line}: {m}")),
                    None => mlua::Error::RuntimeError(m),
                }
            }
            other => other,
        })
    })
}

/// A number as C's `printf("%.14g")` writes it (lua-cjson's numbers, Lua's `tostring`).
pub(super) fn format_g14(n: f64) -> String {
    format_g(n, 14)
}

/// A number as C's `printf("%.<p>g")` writes it (`p` at least 1).
fn format_g(n: f64, p: i32) -> String {
    let p = p.max(1);
    if !n.is_finite() {
        return if n.is_nan() {
            "nan"
        } else if n > 0.0 {
            "inf"
        } else {
            "-inf"
        }
        .into();
    }
    if n == 0.0 {
        return if n.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let sci = format!("{:.*e}", (p - 1) as usize, n);
    let (mantissa, exp) = sci.split_once('e').expect("{:e} has an exponent");
    let exp: i32 = exp.parse().expect("a decimal exponent");
    let trim = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if !(-4..p).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa), exp.abs())
    } else {
        trim(&format!("{:.*}", (p - 1 - exp) as usize, n))
    }
}

// ---- table.insert, remove, sort -------------------------------------------------------------

/// `table.insert`, `remove` and `sort` that refuse to write into the tables of `protected`
/// (the global table and the read-only views: the originals write with rawset, past a
/// view's guard), as Redis's read-only tables refuse the write itself: a removal from an
/// empty array or a sort of fewer than two elements writes nothing and is let be. Their
/// arguments are checked first, with Lua 5.1's errors placed at the caller; then the
/// originals run.
pub(super) fn guarded_table_functions(lua: &Lua, protected: Table) -> mlua::Result<Table> {
    let lib: Table = lua.globals().get("table")?;
    let out = lua.create_table()?;
    for (name, least) in [("insert", 0usize), ("remove", 1), ("sort", 2)] {
        let original: mlua::Function = lib.get(name)?;
        let protected = protected.clone();
        let f = function(lua, move |_, args: MultiValue| {
            let arg = |i: usize| args.get(i).cloned();
            let got = |i: usize| arg(i).map_or("no value", |v| type_name(&v));
            let Some(Value::Table(t)) = arg(0) else {
                return fail(format!(
                    "bad argument #1 to '{name}' (table expected, got {})",
                    got(0)
                ));
            };
            let number = |v: &Value| match v {
                Value::Integer(_) | Value::Number(_) => true,
                Value::String(s) => s.to_str().is_ok_and(|s| s.trim().parse::<f64>().is_ok()),
                _ => false,
            };
            match name {
                "insert" => {
                    if args.len() != 2 && args.len() != 3 {
                        return fail("wrong number of arguments to 'insert'");
                    }
                    if args.len() == 3 && !number(&args[1]) {
                        return fail(format!(
                            "bad argument #2 to 'insert' (number expected, got {})",
                            got(1)
                        ));
                    }
                }
                "remove" => {
                    if let Some(v) = arg(1).filter(|v| !v.is_nil() && !number(v)) {
                        return fail(format!(
                            "bad argument #2 to 'remove' (number expected, got {})",
                            type_name(&v)
                        ));
                    }
                }
                _ => {
                    if let Some(v) = arg(1).filter(|v| !v.is_nil() && !v.is_function()) {
                        return fail(format!(
                            "bad argument #2 to 'sort' (function expected, got {})",
                            type_name(&v)
                        ));
                    }
                }
            }
            if protected.raw_get::<bool>(t.clone())? && t.raw_len() >= least {
                // Unplaced, as Redis raises it (not a RuntimeError, which `function` places).
                return Err(mlua::Error::external("Attempt to modify a readonly table"));
            }
            original.call::<MultiValue>(args)
        })?;
        out.set(name, f)?;
    }
    Ok(out)
}

// ---- cjson ----------------------------------------------------------------------------------

/// The deepest nesting cjson encodes or decodes (Redis's lua-cjson: 1,000; each level is
/// a Rust call here, on a worker's 2 MB stack).
const JSON_MAX_DEPTH: usize = 128;

/// cjson's settings for the running script (lua-cjson's `json_config_t`).
#[derive(Clone, Copy, Debug, PartialEq)]
struct JsonConfig {
    encode_max_depth: i64,
    decode_max_depth: i64,
    keep_buffer: bool,
    sparse_convert: bool,
    sparse_ratio: i64,
    sparse_safe: i64,
    /// `%.<precision>g`.
    precision: i64,
    /// NaN and infinities: refused (0), written as C writes them (1), or `null` (2).
    invalid_numbers: usize,
    decode_invalid: bool,
}

/// lua-cjson's defaults.
const JSON_DEFAULTS: JsonConfig = JsonConfig {
    encode_max_depth: 1000,
    decode_max_depth: 1000,
    keep_buffer: true,
    sparse_convert: false,
    sparse_ratio: 2,
    sparse_safe: 10,
    precision: 14,
    invalid_numbers: 0,
    decode_invalid: true,
};

thread_local! {
    static JSON: std::cell::Cell<JsonConfig> = const { std::cell::Cell::new(JSON_DEFAULTS) };
}

/// Back to lua-cjson's defaults, before each script.
pub(super) fn reset_settings() {
    JSON.with(|j| j.set(JSON_DEFAULTS));
}

fn json_config() -> JsonConfig {
    JSON.with(std::cell::Cell::get)
}

/// The deepest a value may nest for this script: its setting, within Shoal's bound.
fn json_depth(setting: i64) -> usize {
    usize::try_from(setting).map_or(JSON_MAX_DEPTH, |d| d.min(JSON_MAX_DEPTH))
}

/// An integer setting argument: absent, or within `min..=max` (lua-cjson's
/// `json_integer_option`: `luaL_checkinteger`, which truncates, then the bounds).
fn int_option(
    name: &str,
    arg: Option<Value>,
    n: usize,
    min: i64,
    max: i64,
) -> mlua::Result<Option<i64>> {
    let v = match arg {
        None | Some(Value::Nil) => return Ok(None),
        Some(Value::Integer(i)) => i,
        Some(Value::Number(f)) => f as i64,
        Some(Value::String(s)) if s.to_str().is_ok_and(|t| t.trim().parse::<f64>().is_ok()) => {
            s.to_str()?.trim().parse::<f64>().unwrap_or(0.0) as i64
        }
        Some(other) => {
            return fail(format!(
                "bad argument #{n} to '{name}' (number expected, got {})",
                other.type_name()
            ))
        }
    };
    if (min..=max).contains(&v) {
        Ok(Some(v))
    } else {
        fail(format!(
            "bad argument #{n} to '{name}' (expected integer between {min} and {max})"
        ))
    }
}

/// A boolean setting argument (lua-cjson's `json_enum_option` with `off`/`on`).
fn bool_option(name: &str, arg: Option<Value>, n: usize) -> mlua::Result<Option<bool>> {
    Ok(enum_option(name, arg, n, &["off", "on"])?.map(|i| i == 1))
}

/// An option of lua-cjson's `json_enum_option`: `false`/`true` for the first two, or one of
/// `options` by name; its index.
fn enum_option(
    name: &str,
    arg: Option<Value>,
    n: usize,
    options: &[&str],
) -> mlua::Result<Option<usize>> {
    match arg {
        None | Some(Value::Nil) => Ok(None),
        Some(Value::Boolean(b)) => Ok(Some(usize::from(b))),
        Some(Value::String(s)) => match options
            .iter()
            .position(|o| o.as_bytes() == &s.as_bytes()[..])
        {
            Some(i) => Ok(Some(i)),
            None => fail(format!(
                "bad argument #{n} to '{name}' (invalid option '{}')",
                String::from_utf8_lossy(&s.as_bytes())
            )),
        },
        // A number reads as its text (Lua 5.1's `luaL_checkoption`).
        Some(Value::Integer(i)) => fail(format!(
            "bad argument #{n} to '{name}' (invalid option '{i}')"
        )),
        Some(Value::Number(f)) => fail(format!(
            "bad argument #{n} to '{name}' (invalid option '{}')",
            format_g14(f)
        )),
        Some(other) => fail(format!(
            "bad argument #{n} to '{name}' (string expected, got {})",
            other.type_name()
        )),
    }
}

/// cjson's settings functions: each sets what it is given and returns the setting.
fn cjson_settings(lua: &Lua, t: &Table) -> mlua::Result<()> {
    const INT_MAX: i64 = i32::MAX as i64;
    // One integer setting each: its name, its field, its greatest value (lua-cjson's).
    type IntField = fn(&mut JsonConfig) -> &mut i64;
    let ints: [(&'static str, IntField, i64); 3] = [
        ("encode_max_depth", |c| &mut c.encode_max_depth, INT_MAX),
        ("decode_max_depth", |c| &mut c.decode_max_depth, INT_MAX),
        ("encode_number_precision", |c| &mut c.precision, 14),
    ];
    for (name, field, max) in ints {
        t.set(
            name,
            function(lua, move |_, n: Option<Value>| {
                let mut c = json_config();
                if let Some(n) = int_option(name, n, 1, 1, max)? {
                    *field(&mut c) = n;
                    JSON.with(|j| j.set(c));
                }
                Ok(*field(&mut c))
            })?,
        )?;
    }
    // One on/off setting each (`decode_invalid_numbers` and `encode_keep_buffer` are kept
    // and answered; neither changes what Shoal's cjson writes or reads).
    type BoolField = fn(&mut JsonConfig) -> &mut bool;
    let bools: [(&'static str, BoolField); 2] = [
        ("decode_invalid_numbers", |c| &mut c.decode_invalid),
        ("encode_keep_buffer", |c| &mut c.keep_buffer),
    ];
    for (name, field) in bools {
        t.set(
            name,
            function(lua, move |_, b: Option<Value>| {
                let mut c = json_config();
                if let Some(b) = bool_option(name, b, 1)? {
                    *field(&mut c) = b;
                    JSON.with(|j| j.set(c));
                }
                Ok(*field(&mut c))
            })?,
        )?;
    }
    t.set(
        "encode_invalid_numbers",
        function(lua, |lua, v: Option<Value>| {
            let mut c = json_config();
            let options = ["off", "on", "null"];
            if let Some(i) = enum_option("encode_invalid_numbers", v, 1, &options)? {
                c.invalid_numbers = i;
                JSON.with(|j| j.set(c));
            }
            Ok(match c.invalid_numbers {
                2 => Value::String(lua.create_string("null")?),
                i => Value::Boolean(i == 1),
            })
        })?,
    )?;
    t.set(
        "encode_sparse_array",
        function(
            lua,
            |_, (convert, ratio, safe): (Option<Value>, Option<Value>, Option<Value>)| {
                let mut c = json_config();
                if let Some(b) = bool_option("encode_sparse_array", convert, 1)? {
                    c.sparse_convert = b;
                }
                if let Some(r) = int_option("encode_sparse_array", ratio, 2, 0, INT_MAX)? {
                    c.sparse_ratio = r;
                }
                if let Some(s) = int_option("encode_sparse_array", safe, 3, 0, INT_MAX)? {
                    c.sparse_safe = s;
                }
                JSON.with(|j| j.set(c));
                Ok((c.sparse_convert, c.sparse_ratio, c.sparse_safe))
            },
        )?,
    )?;
    Ok(())
}

fn cjson(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.set(
        "encode",
        function(lua, |lua, v: Value| {
            let mut out = Vec::new();
            json_encode(&v, 1, &mut out)?;
            lua.create_string(&out)
        })?,
    )?;
    t.set(
        "decode",
        function(lua, |lua, s: LuaString| {
            let b = s.as_bytes();
            let mut p = JsonParser { b: &b, at: 0 };
            let v = p.value(lua, 1)?;
            p.skip_ws();
            if p.at < p.b.len() {
                return p.expected("the end");
            }
            Ok(v)
        })?,
    )?;
    t.set(
        "null",
        Value::LightUserData(mlua::LightUserData(std::ptr::null_mut())),
    )?;
    cjson_settings(lua, &t)?;
    t.set("_NAME", "cjson")?;
    t.set("_VERSION", "2.1.0")?;
    Ok(t)
}

fn json_string(s: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for &c in s {
        match c {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'/' => out.extend_from_slice(b"\\/"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            0..=0x1f | 0x7f => out.extend_from_slice(format!("\\u{c:04x}").as_bytes()),
            _ => out.push(c),
        }
    }
    out.push(b'"');
}

fn json_number(n: f64, out: &mut Vec<u8>) -> mlua::Result<()> {
    let c = json_config();
    if !n.is_finite() {
        match c.invalid_numbers {
            0 => return fail("Cannot serialise number: must not be NaN or Inf"),
            2 => {
                out.extend_from_slice(b"null");
                return Ok(());
            }
            _ => {}
        }
    }
    let precision = i32::try_from(c.precision).unwrap_or(14);
    out.extend_from_slice(format_g(n, precision).as_bytes());
    Ok(())
}

/// lua-cjson's `lua_array_length`: the array's length, or `None` for an object (a key
/// that is not a positive whole number; an empty table is an object).
fn json_array_len(t: &Table) -> mlua::Result<Option<usize>> {
    let (mut max, mut items) = (0f64, 0usize);
    for pair in t.clone().pairs::<Value, Value>() {
        let (k, _) = pair?;
        let k = match k {
            Value::Integer(i) => i as f64,
            Value::Number(n) => n,
            _ => return Ok(None),
        };
        if k < 1.0 || k.floor() != k {
            return Ok(None);
        }
        max = max.max(k);
        items += 1;
    }
    // Excessively sparse (lua-cjson's defaults: ratio 2, safe 10; ratio 0 never): an
    // error, or an object when `encode_sparse_array` says convert.
    let c = json_config();
    if c.sparse_ratio > 0
        && max > (items as f64) * c.sparse_ratio as f64
        && max > c.sparse_safe as f64
    {
        if c.sparse_convert {
            return Ok(None);
        }
        return fail("Cannot serialise table: excessively sparse array");
    }
    Ok((max >= 1.0).then_some(max as usize))
}

/// The most bytes an encoder (cjson.encode, cmsgpack.pack) writes: its output lives
/// outside the Lua heap until it is returned, so it has a bound of its own (the Lua heap's).
const ENCODED_MAX: usize = super::script::LUA_MEMORY;

fn encoded_too_large(out: &[u8]) -> mlua::Result<()> {
    if out.len() > ENCODED_MAX {
        return Err(mlua::Error::MemoryError(
            "the encoded value would pass the Lua heap's 64 MB".into(),
        ));
    }
    Ok(())
}

fn json_encode(v: &Value, depth: usize, out: &mut Vec<u8>) -> mlua::Result<()> {
    encoded_too_large(out)?;
    match v {
        Value::Nil => out.extend_from_slice(b"null"),
        Value::LightUserData(u) if u.0.is_null() => out.extend_from_slice(b"null"),
        Value::Boolean(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Integer(i) => json_number(*i as f64, out)?,
        Value::Number(n) => json_number(*n, out)?,
        Value::String(s) => json_string(&s.as_bytes(), out),
        Value::Table(t) => {
            if depth > json_depth(json_config().encode_max_depth) {
                return fail(format!("Cannot serialise, excessive nesting ({depth})"));
            }
            match json_array_len(t)? {
                Some(len) => {
                    out.push(b'[');
                    for i in 1..=len {
                        if i > 1 {
                            out.push(b',');
                        }
                        json_encode(&t.raw_get::<Value>(i)?, depth + 1, out)?;
                    }
                    out.push(b']');
                }
                None => {
                    out.push(b'{');
                    let mut first = true;
                    for pair in t.clone().pairs::<Value, Value>() {
                        let (k, val) = pair?;
                        if !first {
                            out.push(b',');
                        }
                        first = false;
                        match &k {
                            Value::String(s) => json_string(&s.as_bytes(), out),
                            Value::Integer(i) => json_string(format_g14(*i as f64).as_bytes(), out),
                            Value::Number(n) if !n.is_finite() => {
                                return fail("Cannot serialise number: must not be NaN or Inf")
                            }
                            Value::Number(n) => json_string(format_g14(*n).as_bytes(), out),
                            other => {
                                return fail(format!(
                                    "Cannot serialise {}: table key must be a number or string",
                                    type_name(other)
                                ))
                            }
                        }
                        out.push(b':');
                        json_encode(&val, depth + 1, out)?;
                    }
                    out.push(b'}');
                }
            }
        }
        other => {
            return fail(format!(
                "Cannot serialise {}: type not supported",
                type_name(other)
            ));
        }
    }
    Ok(())
}

/// Lua's own name of a value's type (a light userdata is a `userdata`).
fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Nil => "nil",
        Value::Boolean(_) => "boolean",
        Value::Integer(_) | Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Table(_) => "table",
        Value::Function(_) => "function",
        Value::Thread(_) => "thread",
        _ => "userdata",
    }
}

struct JsonParser<'a> {
    b: &'a [u8],
    at: usize,
}

impl JsonParser<'_> {
    fn skip_ws(&mut self) {
        while self
            .b
            .get(self.at)
            .is_some_and(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
        {
            self.at += 1;
        }
    }

    /// lua-cjson's parse error: what was expected, what token was found, where.
    fn expected<T>(&self, what: &str) -> mlua::Result<T> {
        let found = match self.b.get(self.at) {
            None => "T_END",
            Some(b'{') => "T_OBJ_BEGIN",
            Some(b'}') => "T_OBJ_END",
            Some(b'[') => "T_ARR_BEGIN",
            Some(b']') => "T_ARR_END",
            Some(b'"') => "T_STRING",
            Some(b':') => "T_COLON",
            Some(b',') => "T_COMMA",
            Some(_) if self.b[self.at..].starts_with(b"true") => "T_BOOLEAN",
            Some(_) if self.b[self.at..].starts_with(b"false") => "T_BOOLEAN",
            Some(_) if self.b[self.at..].starts_with(b"null") => "T_NULL",
            Some(b'-' | b'0'..=b'9') => "T_NUMBER",
            Some(_) => "invalid token",
        };
        fail(format!(
            "Expected {what} but found {found} at character {}",
            self.at + 1
        ))
    }

    fn value(&mut self, lua: &Lua, depth: usize) -> mlua::Result<Value> {
        self.skip_ws();
        let start = self.at;
        let Some(&c) = self.b.get(self.at) else {
            return self.expected("value");
        };
        match c {
            b'{' | b'[' if depth > json_depth(json_config().decode_max_depth) => fail(format!(
                "Found too many nested data structures ({depth}) at character {}",
                start + 1
            )),
            b'{' => {
                self.at += 1;
                let t = lua.create_table()?;
                self.skip_ws();
                if self.b.get(self.at) == Some(&b'}') {
                    self.at += 1;
                    return Ok(Value::Table(t));
                }
                loop {
                    self.skip_ws();
                    if self.b.get(self.at) != Some(&b'"') {
                        return self.expected("object key string");
                    }
                    let key = self.string(lua)?;
                    self.skip_ws();
                    if self.b.get(self.at) != Some(&b':') {
                        return self.expected("colon");
                    }
                    self.at += 1;
                    let v = self.value(lua, depth + 1)?;
                    t.raw_set(key, v)?;
                    self.skip_ws();
                    match self.b.get(self.at) {
                        Some(b',') => self.at += 1,
                        Some(b'}') => {
                            self.at += 1;
                            return Ok(Value::Table(t));
                        }
                        _ => return self.expected("comma or object end"),
                    }
                }
            }
            b'[' => {
                self.at += 1;
                let t = lua.create_table()?;
                self.skip_ws();
                if self.b.get(self.at) == Some(&b']') {
                    self.at += 1;
                    return Ok(Value::Table(t));
                }
                let mut i = 1;
                loop {
                    let v = self.value(lua, depth + 1)?;
                    t.raw_set(i, v)?;
                    i += 1;
                    self.skip_ws();
                    match self.b.get(self.at) {
                        Some(b',') => self.at += 1,
                        Some(b']') => {
                            self.at += 1;
                            return Ok(Value::Table(t));
                        }
                        _ => return self.expected("comma or array end"),
                    }
                }
            }
            b'"' => Ok(Value::String(self.string(lua)?)),
            b't' if self.b[self.at..].starts_with(b"true") => {
                self.at += 4;
                Ok(Value::Boolean(true))
            }
            b'f' if self.b[self.at..].starts_with(b"false") => {
                self.at += 5;
                Ok(Value::Boolean(false))
            }
            b'n' if self.b[self.at..].starts_with(b"null") => {
                self.at += 4;
                Ok(Value::LightUserData(mlua::LightUserData(
                    std::ptr::null_mut(),
                )))
            }
            b'-' | b'0'..=b'9' => self.number(),
            _ => self.expected("value"),
        }
    }

    /// A number as lua-cjson reads one (C's `strtod`, Redis's build accepting what JSON
    /// does not, such as leading zeros): the longest prefix that is a decimal number.
    fn number(&mut self) -> mlua::Result<Value> {
        let start = self.at;
        let rest = &self.b[start..];
        let digits = |from: usize| {
            rest[from..]
                .iter()
                .take_while(|c| c.is_ascii_digit())
                .count()
        };
        let mut end = usize::from(rest.first() == Some(&b'-'));
        let int = digits(end);
        end += int;
        let mut frac = 0;
        if rest.get(end) == Some(&b'.') {
            frac = digits(end + 1);
            if int + frac > 0 {
                end += 1 + frac;
            }
        }
        if int + frac > 0 && matches!(rest.get(end), Some(b'e' | b'E')) {
            let sign = usize::from(matches!(rest.get(end + 1), Some(b'+' | b'-')));
            let exp = digits(end + 1 + sign);
            if exp > 0 {
                end += 1 + sign + exp;
            }
        }
        let text = std::str::from_utf8(&rest[..end]).unwrap_or("");
        match text.parse::<f64>() {
            Ok(n) if int + frac > 0 => {
                self.at += end;
                Ok(Value::Number(n))
            }
            _ => fail(format!(
                "Expected value but found invalid number at character {}",
                start + 1
            )),
        }
    }

    fn string(&mut self, lua: &Lua) -> mlua::Result<LuaString> {
        let start = self.at;
        self.at += 1;
        let mut out = Vec::new();
        loop {
            let Some(&c) = self.b.get(self.at) else {
                return fail(format!(
                    "Expected value but found unexpected end of string at character {}",
                    start + 1
                ));
            };
            self.at += 1;
            match c {
                b'"' => return lua.create_string(&out),
                b'\\' => {
                    let at = self.at - 1;
                    let esc = self.b.get(self.at).copied();
                    self.at += 1;
                    match esc {
                        Some(b'"') => out.push(b'"'),
                        Some(b'\\') => out.push(b'\\'),
                        Some(b'/') => out.push(b'/'),
                        Some(b'b') => out.push(0x08),
                        Some(b'f') => out.push(0x0c),
                        Some(b'n') => out.push(b'\n'),
                        Some(b'r') => out.push(b'\r'),
                        Some(b't') => out.push(b'\t'),
                        Some(b'u') => {
                            let cp = self.unicode_escape(start)?;
                            let mut buf = [0u8; 4];
                            out.extend_from_slice(cp.encode_utf8(&mut buf).as_bytes());
                        }
                        _ => {
                            return fail(format!(
                                "Expected value but found invalid escape code at character {}",
                                at + 1
                            ))
                        }
                    }
                }
                _ => out.push(c),
            }
        }
    }

    fn hex4(&mut self) -> Option<u32> {
        let h = self.b.get(self.at..self.at + 4)?;
        let v = u32::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok()?;
        self.at += 4;
        Some(v)
    }

    /// `\uXXXX` (after the `u`), a surrogate pair joined.
    fn unicode_escape(&mut self, start: usize) -> mlua::Result<char> {
        let bad = || {
            fail(format!(
                "Expected value but found invalid unicode escape code at character {}",
                start + 1
            ))
        };
        let Some(hi) = self.hex4() else { return bad() };
        let cp = if (0xd800..0xdc00).contains(&hi) {
            if self.b.get(self.at..self.at + 2) != Some(b"\\u") {
                return bad();
            }
            self.at += 2;
            match self.hex4() {
                Some(lo) if (0xdc00..0xe000).contains(&lo) => {
                    0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00)
                }
                _ => return bad(),
            }
        } else {
            hi
        };
        char::from_u32(cp).map_or_else(bad, Ok)
    }
}

// ---- cmsgpack -------------------------------------------------------------------------------

/// lua-cmsgpack's nesting bound: deeper tables are packed as nil.
const MSGPACK_MAX_NESTING: usize = 16;

fn cmsgpack(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.set(
        "pack",
        function(lua, |lua, args: MultiValue| {
            if args.is_empty() {
                return fail("bad argument #0 to 'pack' (MessagePack pack needs input.)");
            }
            let mut out = Vec::new();
            for v in args.iter() {
                mp_encode(v, 0, &mut out)?;
            }
            lua.create_string(&out)
        })?,
    )?;
    t.set(
        "unpack",
        function(lua, |lua, s: LuaString| {
            let b = s.as_bytes();
            let (values, _) = mp_unpack(lua, &b, 0, 0)?;
            Ok(MultiValue::from_iter(values))
        })?,
    )?;
    t.set(
        "unpack_one",
        function(lua, |lua, (s, offset): (LuaString, Option<i64>)| {
            unpack_limited(lua, &s.as_bytes(), 1, offset.unwrap_or(0))
        })?,
    )?;
    t.set(
        "unpack_limit",
        function(
            lua,
            |lua, (s, limit, offset): (LuaString, i64, Option<i64>)| {
                unpack_limited(lua, &s.as_bytes(), limit, offset.unwrap_or(0))
            },
        )?,
    )?;
    t.set("_NAME", "cmsgpack")?;
    t.set("_VERSION", "lua-cmsgpack 0.4.0")?;
    Ok(t)
}

/// `unpack_one` / `unpack_limit`: the offset after the objects read (-1 at the end), then
/// the objects.
fn unpack_limited(lua: &Lua, b: &[u8], limit: i64, offset: i64) -> mlua::Result<MultiValue> {
    if limit < 0 || offset < 0 {
        return fail(format!(
            "Invalid request to unpack with offset of {offset} and limit of {limit}."
        ));
    }
    let offset = offset as usize;
    if offset > b.len() {
        return fail("Start offset greater than input length.");
    }
    let (values, next) = mp_unpack(lua, b, limit as usize, offset)?;
    let next = if next >= b.len() { -1 } else { next as i64 };
    let mut out = vec![Value::Number(next as f64)];
    out.extend(values);
    Ok(MultiValue::from_iter(out))
}

fn mp_int(n: i64, out: &mut Vec<u8>) {
    if n >= 0 {
        if n <= 127 {
            out.push(n as u8);
        } else if n <= 0xff {
            out.extend_from_slice(&[0xcc, n as u8]);
        } else if n <= 0xffff {
            out.push(0xcd);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        } else if n <= 0xffff_ffff {
            out.push(0xce);
            out.extend_from_slice(&(n as u32).to_be_bytes());
        } else {
            out.push(0xcf);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    } else if n >= -32 {
        out.push(n as i8 as u8);
    } else if n >= -128 {
        out.extend_from_slice(&[0xd0, n as i8 as u8]);
    } else if n >= -32768 {
        out.push(0xd1);
        out.extend_from_slice(&(n as i16).to_be_bytes());
    } else if n >= -2_147_483_648 {
        out.push(0xd2);
        out.extend_from_slice(&(n as i32).to_be_bytes());
    } else {
        out.push(0xd3);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

fn mp_number(n: f64, out: &mut Vec<u8>) {
    // lua-cmsgpack's IS_INT64_EQUIVALENT: equal to its int64 cast (in int64's range).
    if (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&n) && (n as i64) as f64 == n
    {
        mp_int(n as i64, out);
    } else if (n as f32) as f64 == n {
        out.push(0xca);
        out.extend_from_slice(&(n as f32).to_be_bytes());
    } else {
        out.push(0xcb);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

fn mp_len(len: usize, small: u8, small_max: usize, codes: [u8; 2], out: &mut Vec<u8>) {
    if len <= small_max {
        out.push(small | len as u8);
    } else if len <= 0xffff {
        out.push(codes[0]);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(codes[1]);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    }
}

/// lua-cmsgpack's `table_is_an_array`: every key a positive whole number and no holes.
fn mp_array_len(t: &Table) -> mlua::Result<Option<usize>> {
    let (mut max, mut count) = (0i64, 0i64);
    for pair in t.clone().pairs::<Value, Value>() {
        let (k, _) = pair?;
        let n = match k {
            Value::Integer(i) => i as f64,
            Value::Number(n) => n,
            _ => return Ok(None),
        };
        if n <= 0.0 || (n as i64) as f64 != n {
            return Ok(None);
        }
        max = max.max(n as i64);
        count += 1;
    }
    Ok((max == count).then_some(count as usize))
}

fn mp_encode(v: &Value, level: usize, out: &mut Vec<u8>) -> mlua::Result<()> {
    encoded_too_large(out)?;
    match v {
        Value::String(s) => {
            let b = s.as_bytes();
            if b.len() < 32 {
                out.push(0xa0 | b.len() as u8);
            } else if b.len() <= 0xff {
                out.extend_from_slice(&[0xd9, b.len() as u8]);
            } else if b.len() <= 0xffff {
                out.push(0xda);
                out.extend_from_slice(&(b.len() as u16).to_be_bytes());
            } else {
                out.push(0xdb);
                out.extend_from_slice(&(b.len() as u32).to_be_bytes());
            }
            out.extend_from_slice(&b);
        }
        Value::Boolean(b) => out.push(if *b { 0xc3 } else { 0xc2 }),
        Value::Integer(i) => mp_int(*i, out),
        Value::Number(n) => mp_number(*n, out),
        Value::Table(t) if level < MSGPACK_MAX_NESTING => match mp_array_len(t)? {
            Some(len) => {
                mp_len(len, 0x90, 15, [0xdc, 0xdd], out);
                for i in 1..=len {
                    mp_encode(&t.raw_get::<Value>(i)?, level + 1, out)?;
                }
            }
            None => {
                // Counted, then encoded pair by pair: holding every key and value at once
                // takes a slot each of Lua's reference stack, which runs out near 8,000.
                let mut len = 0;
                for pair in t.clone().pairs::<Value, Value>() {
                    pair?;
                    len += 1;
                }
                mp_len(len, 0x80, 15, [0xde, 0xdf], out);
                for pair in t.clone().pairs::<Value, Value>() {
                    let (k, val) = pair?;
                    mp_encode(&k, level + 1, out)?;
                    mp_encode(&val, level + 1, out)?;
                }
            }
        },
        // Nil, tables nested too deep, functions, userdata: nil.
        _ => out.push(0xc0),
    }
    Ok(())
}

/// Decodes up to `limit` objects (0: all) from `offset`: the values and the offset after.
fn mp_unpack(
    lua: &Lua,
    b: &[u8],
    limit: usize,
    offset: usize,
) -> mlua::Result<(Vec<Value>, usize)> {
    let mut r = MpReader { b, at: offset };
    let mut values = Vec::new();
    while r.at < b.len() && (limit == 0 || values.len() < limit) {
        values.push(r.value(lua, 0)?);
    }
    Ok((values, r.at))
}

struct MpReader<'a> {
    b: &'a [u8],
    at: usize,
}

impl MpReader<'_> {
    fn take(&mut self, n: usize) -> mlua::Result<&[u8]> {
        if self.b.len() - self.at < n {
            return fail("Missing bytes in input.");
        }
        let s = &self.b[self.at..self.at + n];
        self.at += n;
        Ok(s)
    }

    fn be(&mut self, n: usize) -> mlua::Result<u64> {
        Ok(self
            .take(n)?
            .iter()
            .fold(0u64, |a, &b| (a << 8) | u64::from(b)))
    }

    /// A count of items each at least one byte long: no more than the bytes left.
    fn count(&mut self, n: usize) -> mlua::Result<usize> {
        let c = self.be(n)? as usize;
        if c > self.b.len() - self.at {
            return fail("Missing bytes in input.");
        }
        Ok(c)
    }

    fn value(&mut self, lua: &Lua, depth: usize) -> mlua::Result<Value> {
        if depth > JSON_MAX_DEPTH {
            return fail("Too deeply nested data in input.");
        }
        let c = self.take(1)?[0];
        let num = |n: f64| Value::Number(n);
        Ok(match c {
            0x00..=0x7f => num(f64::from(c)),
            0xe0..=0xff => num(f64::from(c as i8)),
            0xcc => num(self.be(1)? as f64),
            0xcd => num(self.be(2)? as f64),
            0xce => num(self.be(4)? as f64),
            0xcf => num(self.be(8)? as f64),
            0xd0 => num(f64::from(self.be(1)? as u8 as i8)),
            0xd1 => num(f64::from(self.be(2)? as u16 as i16)),
            0xd2 => num(f64::from(self.be(4)? as u32 as i32)),
            0xd3 => num(self.be(8)? as i64 as f64),
            0xc0 => Value::Nil,
            0xc2 => Value::Boolean(false),
            0xc3 => Value::Boolean(true),
            0xca => num(f64::from(f32::from_bits(self.be(4)? as u32))),
            0xcb => num(f64::from_bits(self.be(8)?)),
            0xa0..=0xbf => self.str(lua, usize::from(c & 0x1f))?,
            0xd9 | 0xc4 => {
                let n = self.be(1)? as usize;
                self.str(lua, n)?
            }
            0xda | 0xc5 => {
                let n = self.be(2)? as usize;
                self.str(lua, n)?
            }
            0xdb | 0xc6 => {
                let n = self.be(4)? as usize;
                self.str(lua, n)?
            }
            0x90..=0x9f => self.array(lua, usize::from(c & 0x0f), depth)?,
            0xdc => {
                let n = self.count(2)?;
                self.array(lua, n, depth)?
            }
            0xdd => {
                let n = self.count(4)?;
                self.array(lua, n, depth)?
            }
            0x80..=0x8f => self.map(lua, usize::from(c & 0x0f), depth)?,
            0xde => {
                let n = self.count(2)?;
                self.map(lua, n, depth)?
            }
            0xdf => {
                let n = self.count(4)?;
                self.map(lua, n, depth)?
            }
            _ => return fail("Bad data format in input."),
        })
    }

    fn str(&mut self, lua: &Lua, n: usize) -> mlua::Result<Value> {
        let s = self.take(n)?;
        Ok(Value::String(lua.create_string(s)?))
    }

    fn array(&mut self, lua: &Lua, n: usize, depth: usize) -> mlua::Result<Value> {
        let t = lua.create_table()?;
        for i in 1..=n {
            let v = self.value(lua, depth + 1)?;
            t.raw_set(i, v)?;
        }
        Ok(Value::Table(t))
    }

    fn map(&mut self, lua: &Lua, n: usize, depth: usize) -> mlua::Result<Value> {
        let t = lua.create_table()?;
        for _ in 0..n {
            let k = self.value(lua, depth + 1)?;
            let v = self.value(lua, depth + 1)?;
            if !matches!(k, Value::Nil) {
                t.raw_set(k, v)?;
            }
        }
        Ok(Value::Table(t))
    }
}

// ---- bit ------------------------------------------------------------------------------------

/// LuaBitOp's normalisation of a number to a signed 32-bit integer.
fn tobit(n: f64) -> i32 {
    (n + 6_755_399_441_055_744.0).to_bits() as u32 as i32
}

fn bit(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    let unary = |f: fn(i32) -> i32| lua.create_function(move |_, x: f64| Ok(f(tobit(x))));
    t.set("tobit", unary(|x| x)?)?;
    t.set("bnot", unary(|x| !x)?)?;
    t.set("bswap", unary(i32::swap_bytes)?)?;
    let fold = |f: fn(i32, i32) -> i32| {
        lua.create_function(move |_, (first, rest): (f64, mlua::Variadic<f64>)| {
            Ok(rest.iter().fold(tobit(first), |a, &b| f(a, tobit(b))))
        })
    };
    t.set("band", fold(|a, b| a & b)?)?;
    t.set("bor", fold(|a, b| a | b)?)?;
    t.set("bxor", fold(|a, b| a ^ b)?)?;
    let shift = |f: fn(i32, u32) -> i32| {
        lua.create_function(move |_, (x, n): (f64, f64)| Ok(f(tobit(x), (tobit(n) & 31) as u32)))
    };
    t.set("lshift", shift(|x, n| ((x as u32) << n) as i32)?)?;
    t.set("rshift", shift(|x, n| ((x as u32) >> n) as i32)?)?;
    t.set("arshift", shift(|x, n| x >> n)?)?;
    t.set("rol", shift(|x, n| (x as u32).rotate_left(n) as i32)?)?;
    t.set("ror", shift(|x, n| (x as u32).rotate_right(n) as i32)?)?;
    t.set(
        "tohex",
        lua.create_function(|_, (x, n): (f64, Option<f64>)| {
            let mut n = n.map_or(8, tobit);
            let digits: &[u8; 16] = if n < 0 {
                n = -n;
                b"0123456789ABCDEF"
            } else {
                b"0123456789abcdef"
            };
            let n = n.clamp(0, 8) as usize;
            let mut b = tobit(x) as u32;
            let mut out = vec![b'0'; n];
            for i in (0..n).rev() {
                out[i] = digits[(b & 15) as usize];
                b >>= 4;
            }
            Ok(String::from_utf8(out).expect("hex digits"))
        })?,
    )?;
    Ok(t)
}

// ---- struct ---------------------------------------------------------------------------------

/// lua-struct's largest integer size.
const STRUCT_MAX_INT: usize = 32;

/// lua-struct's format state: byte order and the largest alignment (`!`).
struct StructFormat<'a> {
    f: &'a [u8],
    at: usize,
    little: bool,
    align: usize,
}

impl<'a> StructFormat<'a> {
    fn new(f: &'a [u8]) -> Self {
        StructFormat {
            f,
            at: 0,
            little: true,
            align: 1,
        }
    }

    fn next(&mut self) -> Option<u8> {
        let c = *self.f.get(self.at)?;
        self.at += 1;
        Some(c)
    }

    fn num(&mut self, default: usize) -> mlua::Result<usize> {
        if !self.f.get(self.at).is_some_and(u8::is_ascii_digit) {
            return Ok(default);
        }
        let mut a: usize = 0;
        while let Some(&d) = self.f.get(self.at).filter(|d| d.is_ascii_digit()) {
            a = a
                .checked_mul(10)
                .and_then(|a| a.checked_add(usize::from(d - b'0')))
                .filter(|&a| a <= i32::MAX as usize)
                .map_or_else(|| fail("integral size overflow"), Ok)?;
            self.at += 1;
        }
        Ok(a)
    }

    /// The size of option `opt` (reading its count), 0 for the control options.
    fn size(&mut self, opt: u8) -> mlua::Result<usize> {
        Ok(match opt {
            b'b' | b'B' | b'x' => 1,
            b'h' | b'H' => 2,
            b'l' | b'L' | b'T' | b'd' => 8,
            b'f' => 4,
            b'c' => self.num(1)?,
            b'i' | b'I' => {
                let n = self.num(4)?;
                if n > STRUCT_MAX_INT {
                    return fail(format!(
                        "integral size {n} is larger than limit of {STRUCT_MAX_INT}"
                    ));
                }
                n
            }
            _ => 0,
        })
    }

    /// Padding before an item of `size` at `len` bytes.
    fn pad(&self, len: usize, opt: u8, size: usize) -> usize {
        if size == 0 || opt == b'c' {
            return 0;
        }
        let size = size.min(self.align);
        (size - (len & (size - 1))) & (size - 1)
    }

    /// The control options; anything else is an invalid option (of function `name`).
    fn control(&mut self, opt: u8, name: &str) -> mlua::Result<()> {
        match opt {
            b' ' => {}
            b'>' => self.little = false,
            b'<' => self.little = true,
            b'!' => {
                let a = self.num(8)?;
                if !a.is_power_of_two() {
                    return fail(format!("alignment {a} is not a power of 2"));
                }
                self.align = a;
            }
            _ => {
                return fail(format!(
                    "bad argument #1 to '{name}' (invalid format option '{}')",
                    opt as char
                ))
            }
        }
        Ok(())
    }
}

fn structs(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.set("pack", function(lua, struct_pack)?)?;
    t.set("unpack", function(lua, struct_unpack)?)?;
    t.set(
        "size",
        function(lua, |_, fmt: LuaString| {
            let fmt = fmt.as_bytes();
            let mut f = StructFormat::new(&fmt);
            let mut pos = 0usize;
            while let Some(opt) = f.next() {
                let size = f.size(opt)?;
                pos += f.pad(pos, opt, size);
                if opt == b's' {
                    return fail("bad argument #1 to 'size' (option 's' has no fixed size)");
                } else if opt == b'c' && size == 0 {
                    return fail("bad argument #1 to 'size' (option 'c0' has no fixed size)");
                }
                if !opt.is_ascii_alphanumeric() {
                    f.control(opt, "size")?;
                }
                pos += size;
            }
            Ok(pos as f64)
        })?,
    )?;
    t.set("_NAME", "struct")?;
    Ok(t)
}

fn struct_pack(lua: &Lua, args: MultiValue) -> mlua::Result<LuaString> {
    let mut args = args.into_iter();
    let fmt = match args.next().map(|v| lua.coerce_string(v)) {
        Some(Ok(Some(s))) => s,
        _ => return fail("bad argument #1 to 'pack' (string expected, got no value)"),
    };
    let fmt = fmt.as_bytes();
    let mut f = StructFormat::new(&fmt);
    let mut out: Vec<u8> = Vec::new();
    let mut arg = 1;
    let number = |args: &mut dyn Iterator<Item = Value>, arg: &mut usize| {
        *arg += 1;
        let v = args.next().unwrap_or(Value::Nil);
        let got = type_name(&v);
        match lua.coerce_number(v) {
            Ok(Some(n)) => Ok(n),
            // A missing argument reads as nil (lua-struct pushes a mark after them).
            _ => fail(format!(
                "bad argument #{arg} to 'pack' (number expected, got {got})"
            )),
        }
    };
    while let Some(opt) = f.next() {
        let mut size = f.size(opt)?;
        let pad = f.pad(out.len(), opt, size);
        out.resize(out.len() + pad, 0);
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let n = number(&mut args, &mut arg)?;
                // C's conversions: a negative through the signed type.
                let mut v: u64 = if n < 0.0 { n as i64 as u64 } else { n as u64 };
                let mut bytes = vec![0u8; size];
                for b in bytes.iter_mut() {
                    *b = v as u8;
                    v = v.checked_shr(8).unwrap_or(0);
                }
                if !f.little {
                    bytes.reverse();
                }
                out.extend_from_slice(&bytes);
            }
            b'x' => out.push(0),
            b'f' => {
                let n = number(&mut args, &mut arg)? as f32;
                let b = if f.little {
                    n.to_le_bytes()
                } else {
                    n.to_be_bytes()
                };
                out.extend_from_slice(&b);
            }
            b'd' => {
                let n = number(&mut args, &mut arg)?;
                let b = if f.little {
                    n.to_le_bytes()
                } else {
                    n.to_be_bytes()
                };
                out.extend_from_slice(&b);
            }
            b'c' | b's' => {
                arg += 1;
                let v = args.next().unwrap_or(Value::Nil);
                let got = type_name(&v);
                let Ok(Some(s)) = lua.coerce_string(v) else {
                    return fail(format!(
                        "bad argument #{arg} to 'pack' (string expected, got {got})"
                    ));
                };
                let s = s.as_bytes();
                if size == 0 {
                    size = s.len();
                }
                if s.len() < size {
                    // lua-struct names the argument after the one it checks.
                    return fail(format!(
                        "bad argument #{} to 'pack' (string too short)",
                        arg + 1
                    ));
                }
                out.extend_from_slice(&s[..size]);
                if opt == b's' {
                    out.push(0);
                }
            }
            _ => f.control(opt, "pack")?,
        }
    }
    lua.create_string(&out)
}

fn struct_unpack(
    lua: &Lua,
    (fmt, data, pos): (LuaString, LuaString, Option<f64>),
) -> mlua::Result<MultiValue> {
    let (fmt, data) = (fmt.as_bytes(), data.as_bytes());
    let pos = pos.unwrap_or(1.0);
    if pos < 1.0 {
        return fail("bad argument #3 to 'unpack' (offset must be 1 or greater)");
    }
    let mut pos = pos as usize - 1;
    let mut f = StructFormat::new(&fmt);
    let mut out: Vec<Value> = Vec::new();
    let short = || fail("bad argument #2 to 'unpack' (data string too short)");
    while let Some(opt) = f.next() {
        let mut size = f.size(opt)?;
        pos += f.pad(pos, opt, size);
        if size > data.len() || pos > data.len() - size {
            return short();
        }
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let bytes = &data[pos..pos + size];
                let mut l: u64 = 0;
                let mut push = |b: u8| l = (l << 8) | u64::from(b);
                if f.little {
                    bytes.iter().rev().for_each(|&b| push(b));
                } else {
                    bytes.iter().for_each(|&b| push(b));
                }
                let n = if opt.is_ascii_lowercase() {
                    // Sign-extended (C's shift counts wrap at 64 on this hardware).
                    let mask = u64::MAX << ((size * 8).wrapping_sub(1) % 64);
                    if size > 0 && l & mask != 0 {
                        l |= mask;
                    }
                    l as i64 as f64
                } else {
                    l as f64
                };
                out.push(Value::Number(n));
            }
            b'x' => {}
            b'f' => {
                let b: [u8; 4] = data[pos..pos + 4].try_into().expect("4 bytes");
                let v = if f.little {
                    f32::from_le_bytes(b)
                } else {
                    f32::from_be_bytes(b)
                };
                out.push(Value::Number(f64::from(v)));
            }
            b'd' => {
                let b: [u8; 8] = data[pos..pos + 8].try_into().expect("8 bytes");
                let v = if f.little {
                    f64::from_le_bytes(b)
                } else {
                    f64::from_be_bytes(b)
                };
                out.push(Value::Number(v));
            }
            b'c' => {
                if size == 0 {
                    let Some(Value::Number(n)) = out.last() else {
                        return fail("format 'c0' needs a previous size");
                    };
                    size = *n as usize;
                    out.pop();
                    if size > data.len() || pos > data.len() - size {
                        return short();
                    }
                }
                out.push(Value::String(lua.create_string(&data[pos..pos + size])?));
            }
            b's' => {
                let Some(end) = data[pos..].iter().position(|&b| b == 0) else {
                    return fail("unfinished string in data");
                };
                size = end + 1;
                out.push(Value::String(lua.create_string(&data[pos..pos + end])?));
            }
            _ => f.control(opt, "unpack")?,
        }
        pos += size;
    }
    out.push(Value::Number((pos + 1) as f64));
    Ok(MultiValue::from_iter(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_print_as_c_s_percent_14g() {
        // Never a panic, whatever the number (an infinite table key reached it once).
        assert_eq!(format_g14(f64::INFINITY), "inf");
        assert_eq!(format_g14(f64::NAN), "nan");
        for (n, want) in [
            (1.0, "1"),
            (-1.5, "-1.5"),
            (0.1, "0.1"),
            (1e20, "1e+20"),
            (123456789012345.0, "1.2345678901234e+14"),
            (12345678901234.0, "12345678901234"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.0 / 3.0, "0.33333333333333"),
            (-0.0, "-0"),
            (100.0, "100"),
        ] {
            assert_eq!(format_g14(n), want, "{n}");
        }
    }

    #[test]
    fn bit_ops_are_luabitop_s() {
        assert_eq!(tobit(4294967295.0), -1);
        assert_eq!(tobit(2147483648.0), i32::MIN);
        assert_eq!(tobit(-1.0), -1);
        assert_eq!(tobit(1.5), 2);
        assert_eq!(tobit(2.5), 2);
    }
}
