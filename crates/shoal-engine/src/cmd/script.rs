//! Lua scripting: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT LOAD | EXISTS | FLUSH |
//! KILL | HELP, with Redis's Lua 5.1 and its `redis` API (`call`, `pcall`, `error_reply`,
//! `status_reply`, `sha1hex`, `log`, ...), its conversions between Lua values and replies,
//! and its errors (`NOSCRIPT` for an unknown SHA1, which clients such as redis-py's `Lock`
//! answer with SCRIPT LOAD).
//!
//! A script runs whole, with no other client's command in between on any worker, as EXEC's
//! commands do (`shoal_store::gate`). Each worker thread keeps one Lua state (its compiled
//! scripts cached by SHA1); the scripts themselves (SHA1 to body) are the engine's
//! ([`Scripts`]), as Redis's script cache is the server's. The global table is read-only
//! to scripts, as in Redis 7 (`KEYS` and `ARGV` are set for each call); since scripts share
//! a worker's state, whatever could reach across them or load code is left out (see
//! [`SANDBOX`]). A script that runs past `busy-reply-threshold` keeps running while the
//! others are answered BUSY, until it ends or SCRIPT KILL stops it ([`crate::busy`]), as in
//! Redis; a script's Lua heap ([`LUA_MEMORY`]) and reply ([`REPLY_MAX_BYTES`]) are bounded. Redis's
//! bundled libraries (cjson, cmsgpack, bit, struct) are `lua_libs`'. In a cluster a script may touch only the keys
//! it declares ([`check_call`]).

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::fmt;
use std::time::{Duration, Instant};

use bytes::Bytes;
use mlua::chunk::ChunkMode;
use mlua::{HookTriggers, Lua, LuaOptions, StdLib, Value, VmState};
use shoal_resp::Reply;

use super::{db, err, flag, is, lookup_listed, parse_i64, CommandSpec, Ctx};
use crate::busy::ScriptMove;
use crate::functions::{self, Library};
use crate::scripts::Scripts;

/// The most a worker's Lua state may allocate.
pub const LUA_MEMORY: usize = 64 << 20;
/// A script's keys and arguments are set up in Lua without [`LUA_MEMORY`]'s guard when
/// they take at most this much (each counted with 32 bytes more).
const SETUP_UNGUARDED: usize = 64 << 10;
/// The error that unwinds a script stopping to move (its reply goes nowhere).
const MOVING: &str = "ERR script moved";
/// Compiled scripts a worker keeps before it starts again from none.
const COMPILED_MAX: usize = 1024;
/// How long a library's code may run while it registers its functions (Redis's).
const LOAD_TIME_LIMIT: Duration = Duration::from_millis(500);

const NOSCRIPT: &str = "NOSCRIPT No matching script. Please use EVAL.";
/// The message of a Lua heap that ran out.
const OUT_OF_MEMORY: &str = "Out of memory: the script's Lua heap is full";

/// The hex SHA1 of `data`, lower case (Redis's script names and `redis.sha1hex`).
pub fn sha1_hex(data: &[u8]) -> String {
    sha1_smol::Sha1::from(data).digest().to_string()
}

/// One worker's Lua state and its compiled scripts.
struct Vm {
    lua: Lua,
    /// The `redis` table behind the read-only view scripts see (`call` and `pcall` are set
    /// in it for each run).
    redis: mlua::Table,
    compiled: HashMap<String, mlua::Function>,
    /// The globals of library code (Redis's): an empty table whose lookups go to
    /// `load_api` while a library loads and to the globals after, through `fenv_meta`.
    fenv: mlua::Table,
    fenv_meta: mlua::Table,
    load_api: mlua::Table,
    /// The libraries compiled on this thread, by library id: their functions by name.
    libs: HashMap<u64, HashMap<String, mlua::Function>>,
    /// The libraries' generation `libs` was last checked against.
    libs_generation: u64,
    /// The table the globals live in behind the empty `_G` (the sandbox's): KEYS and ARGV
    /// are set there for each run, so a script cannot assign them either.
    globals: mlua::Table,
}

thread_local! {
    static VM: RefCell<Option<Vm>> = const { RefCell::new(None) };
}

/// The sandbox, in Lua. Nothing that loads code but text (`loadstring` compiles text only)
/// or files, or reaches the state other scripts share: no `load`, `dofile`, `rawset`, `collectgarbage`, `setfenv`, `print` (`string.dump` stays, as in Redis: what
/// it makes, `loadstring` refuses); `setmetatable` and
/// `getmetatable` reach a script's own tables only. The library tables are read-only views
/// and the globals sit behind an empty, read-only `_G` (Redis 7's rules: a global can be
/// neither created, replaced nor read before it exists).
/// `pcall`, `xpcall` and `coroutine.resume` pass SCRIPT KILL's error on, so a script cannot
/// catch it and run on.
const SANDBOX: &str = r#"
do
  local pcall_, xpcall_, killed, caught = pcall, xpcall, __shoal_killed, __shoal_caught
  local type_ = type
  -- (`killed` also forgets what was raised: once pcall or xpcall returned, no error is on
  -- its way out, whatever a handler raised.)
  local function pass(ok, ...)
    killed()
    return ok, ...
  end
  -- Redis's pcall: an error table with a text `err` (redis.call's, the library's, or one
  -- the script raised) is caught as that text.
  local function check(ok, ...)
    if ok then return pass(ok, ...) end
    local e = caught((...))
    if type_(e) == "table" then
      local text = e.err
      local t = type_(text)
      if t == "string" or t == "number" then e = text end
    end
    return pass(ok, e)
  end
  pcall = function(...) return check(pcall_(...)) end
  -- An xpcall handler gets what was raised as it was raised (redis.call's error as Redis's
  -- table, {err = text}).
  xpcall = function(f, handler, ...)
    return pass(xpcall_(f, function(e) return handler(caught(e)) end, ...))
  end
  -- A coroutine's error ends its resume with what was raised, as Redis's resume gives it
  -- (an error table stays a table, unlike pcall's); SCRIPT KILL's is passed on
  -- (`coroutine.wrap` raises every error again by itself).
  local resume_ = coroutine.resume
  local function resumed(ok, ...)
    if ok then return pass(ok, ...) end
    return pass(ok, caught((...)))
  end
  coroutine.resume = function(...) return resumed(resume_(...)) end
end
__shoal_killed = nil
__shoal_caught = nil
loadstring = __shoal_loadstring
__shoal_loadstring = nil
local protected, function_tables, guarded = ...
do
  local setmetatable_ = setmetatable
  -- The global table, the libraries' read-only views and the function libraries' globals
  -- and load API: `table.insert`, `remove` and `sort` write with rawset, past a read-only
  -- table's guard, so they refuse these (`lua_libs::guarded_table_functions`).
  protected[_G] = true
  for _, t in ipairs(function_tables) do protected[t] = true end
  local function readonly(t)
    local view = setmetatable_({}, {
      __index = t,
      __newindex = function() error("Attempt to modify a readonly table", 2) end,
      __metatable = false,
    })
    protected[view] = true
    return view
  end
  table.insert, table.remove, table.sort = guarded.insert, guarded.remove, guarded.sort
  string = readonly(string)
  table = readonly(table)
  math = readonly(math)
  redis = readonly(redis)
  cjson = readonly(cjson)
  cmsgpack = readonly(cmsgpack)
  bit = readonly(bit)
  struct = readonly(struct)
  coroutine = readonly(coroutine)
  local rawset_, next_ = rawset, next
  for _, name in ipairs({"load", "loadfile", "dofile", "require", "module",
      "setfenv", "getfenv", "newproxy", "rawset", "collectgarbage", "gcinfo",
      "print"}) do
    _G[name] = nil
  end
  -- Strings' metatable is every script's: getmetatable("") cannot reach it.
  getmetatable("").__metatable = false
  -- A shared table's metatable cannot be changed, with Redis's words for it, and reads as
  -- an empty read-only table (Redis gives its own read-only one).
  local getmetatable_ = getmetatable
  local hidden = readonly({})
  local string_meta = readonly({__index = string})
  local pcall_ = pcall
  local gsub = string.gsub
  setmetatable = function(...)
    local t = ...
    if type(t) == "table" and getmetatable_(t) == false then
      error("Attempt to modify a readonly table", 0)
    end
    local ok, r = pcall_(setmetatable_, ...)
    if not ok then
      r = gsub(gsub(r, "^sandbox:%d+: ", ""), "to '%?'", "to 'setmetatable'")
      error(r, 2)
    end
    return r
  end
  getmetatable = function(t)
    if type(t) == "string" then return string_meta end
    local mt = getmetatable_(t)
    if mt == false then return hidden end
    return mt
  end
  -- The globals live in a table of their own behind an empty _G, so a script can neither
  -- add one nor replace one (`redis = 1` would break every later script on this worker).
  local G, globals = _G, {}
  for k, v in next_, G do globals[k] = v end
  for k in next_, globals do rawset_(G, k, nil) end
  protected[globals] = true
  setmetatable_(globals, {
    __index = function(t, k)
      error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
    end,
    __metatable = false,
  })
  setmetatable_(G, {
    __index = globals,
    __newindex = function(t, k, v)
      error("Attempt to modify a readonly table", 2)
    end,
    __metatable = false,
  })
  return globals
end
"#;

/// What library code sees while it loads (Redis's library API): `redis` with
/// `register_function`, `log` and the constants, nothing else; and the library's globals
/// (see [`Vm::fenv`]). Run before the sandbox, which wraps `setmetatable`.
const FUNCTION_ENV: &str = r#"
local register, redis_ = ...
local setmetatable_, error_, tostring_ = setmetatable, error, tostring
local function nonexistent(t, k)
  error_("Script attempted to access nonexistent global variable '" .. tostring_(k) .. "'", 2)
end
local function readonly() error_("Attempt to modify a readonly table", 2) end
local strict = {__index = nonexistent, __newindex = readonly, __metatable = false}
local api_redis = {register_function = register, log = redis_.log}
for _, k in ipairs({"LOG_DEBUG", "LOG_VERBOSE", "LOG_NOTICE", "LOG_WARNING", "REDIS_VERSION",
    "REDIS_VERSION_NUM"}) do
  api_redis[k] = redis_[k]
end
local api = setmetatable_({redis = setmetatable_(api_redis, strict)}, strict)
local meta = {__newindex = readonly, __metatable = false}
return setmetatable_({}, meta), meta, api, api_redis
"#;

/// One function a library registered while it loaded.
type Registered = (functions::Function, mlua::Function);

thread_local! {
    /// The functions registered so far by the library loading on this thread.
    static LOADING: RefCell<Option<Vec<Registered>>> = const { RefCell::new(None) };
    /// Set by the hook that ends a script SCRIPT KILL or SHUTDOWN stopped.
    static KILLED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Set with `KILLED` by the hook that stops a script to run again elsewhere
    /// (`crate::busy::ScriptMove`).
    static MOVED: Cell<bool> = const { Cell::new(false) };
    /// The running script did something a second run would do again: wrote, published, had
    /// an error counted (`crate::busy::stops_to_move`).
    static EFFECTS: Cell<bool> = const { Cell::new(false) };
    /// The last error `redis.call` or `error` raised in the running script ([`raise`],
    /// [`throw`]): what `pcall` catches of it and the reply if nothing does.
    static RAISED: RefCell<Option<Raised>> = const { RefCell::new(None) };
    /// What the ending script's reply holds that INFO counts: [`take_reply_errors`].
    static REPLY_ERRORS: RefCell<ReplyErrors> = const {
        RefCell::new(ReplyErrors { counted: false, nested_counted: 0, nested: Vec::new() })
    };
    /// The running script asked for RESP3 (`redis.setresp(3)`): commands answer it in RESP3,
    /// converted to Lua as Redis 7 does, and its booleans reply as RESP3 booleans.
    static RESP3: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The errors in a script's reply, as Redis's `luaReplyToRedisReply` counts them in INFO.
/// An error a command answered was counted in errorstats when it answered (Redis's
/// `ignore_err_stats_update`); the script's EVAL or FCALL counts a failed call for it, once
/// per such error. An error the script made itself is counted when the script replies
/// with it, and its EVAL or FCALL fails once.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ReplyErrors {
    /// The reply is an error a command answered (counted already).
    pub counted: bool,
    /// Errors inside the reply (an array's elements) that commands answered.
    pub nested_counted: u32,
    /// Errors inside the reply that the script made (`redis.error_reply`, `{err = ...}`).
    pub nested: Vec<String>,
}

/// The [`ReplyErrors`] of the script that just ended on this thread (none after any other
/// command).
pub fn take_reply_errors() -> ReplyErrors {
    REPLY_ERRORS.with(|e| std::mem::take(&mut *e.borrow_mut()))
}

/// Field Redis sets in the error table of a command's error reply, which INFO errorstats
/// counted when the command answered it.
const COUNTED_FIELD: &str = "ignore_err_stats_update";

/// The Lua error table of a command's error reply `e`, counted already (see
/// [`COUNTED_FIELD`]).
fn counted_error(lua: &Lua, e: impl mlua::IntoLua) -> mlua::Result<Value> {
    let t = lua.create_table()?;
    t.set("err", e)?;
    t.set(COUNTED_FIELD, true)?;
    Ok(Value::Table(t))
}

fn new_vm() -> mlua::Result<Vm> {
    let lua = Lua::new_with(
        StdLib::TABLE | StdLib::STRING | StdLib::MATH,
        LuaOptions::default(),
    )?;
    lua.set_memory_limit(LUA_MEMORY)?;
    let redis = lua.create_table()?;
    redis.set(
        "sha1hex",
        lua.create_function(|lua, args: mlua::MultiValue| {
            match &args.iter().collect::<Vec<_>>()[..] {
                // What is no string hashes as "", as Redis's NULL of length 0 does.
                [one] => Ok(match lua.coerce_string((*one).clone())? {
                    Some(s) => sha1_hex(&s.as_bytes()),
                    None => sha1_hex(b""),
                }),
                _ => lib_error("wrong number of arguments"),
            }
        })?,
    )?;
    redis.set(
        "error_reply",
        lua.create_function(|lua, args: mlua::MultiValue| match one_string(&args) {
            Some(s) => tagged(lua, "err", error_text(&s.as_bytes())),
            None => tagged(lua, "err", WRONG_REPLY_ARGS),
        })?,
    )?;
    redis.set(
        "status_reply",
        lua.create_function(|lua, args: mlua::MultiValue| match one_string(&args) {
            Some(s) => tagged(lua, "ok", s),
            None => tagged(lua, "err", WRONG_REPLY_ARGS),
        })?,
    )?;
    redis.set("log", lua.create_function(script_log)?)?;
    redis.set(
        "setresp",
        lua.create_function(|lua, args: mlua::MultiValue| {
            let v = one_number(lua, args, "redis.setresp() requires one argument.")?;
            match v {
                2 | 3 => {
                    RESP3.with(|r| r.set(v == 3));
                    Ok(())
                }
                _ => lib_error("RESP version must be 2 or 3."),
            }
        })?,
    )?;
    // The debugger's calls, outside a debugging session (Shoal has none): no breakpoint, no
    // output.
    redis.set(
        "breakpoint",
        lua.create_function(|_, _: mlua::MultiValue| Ok(false))?,
    )?;
    redis.set(
        "debug",
        lua.create_function(|_, _: mlua::MultiValue| Ok(()))?,
    )?;
    redis.set("replicate_commands", lua.create_function(|_, ()| Ok(true))?)?;
    // Replication follows the effects here: the flags are checked, and change nothing.
    redis.set(
        "set_repl",
        lua.create_function(|lua, args: mlua::MultiValue| {
            // Redis's words, though it wants one.
            let flags = one_number(lua, args, "redis.set_repl() requires two arguments.")?;
            if flags & !3 != 0 {
                return lib_error(
                    "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.",
                );
            }
            Ok(())
        })?,
    )?;
    for (name, v) in [
        ("LOG_DEBUG", 0),
        ("LOG_VERBOSE", 1),
        ("LOG_NOTICE", 2),
        ("LOG_WARNING", 3),
        ("REPL_NONE", 0),
        ("REPL_AOF", 1),
        ("REPL_SLAVE", 2),
        ("REPL_REPLICA", 2),
        ("REPL_ALL", 3),
    ] {
        redis.set(name, v)?;
    }
    redis.set("REDIS_VERSION", crate::REDIS_VERSION)?;
    let num = crate::REDIS_VERSION
        .split('.')
        .map(|p| p.parse::<i64>().unwrap_or(0))
        .fold(0, |acc, p| acc * 256 + p);
    redis.set("REDIS_VERSION_NUM", num)?;
    lua.globals().set("redis", redis.clone())?;
    super::lua_libs::install(&lua)?;
    lua.globals().set("error", lua.create_function(throw)?)?;
    lua.globals().set(
        "__shoal_killed",
        // Raises SCRIPT KILL's error if the script was killed: `pcall` passes it on. Else
        // what was raised is caught: forgotten.
        lua.create_function(|_, ()| {
            RAISED.with(|r| *r.borrow_mut() = None);
            if KILLED.with(std::cell::Cell::get) {
                return Err(mlua::Error::RuntimeError(
                    crate::busy::KILLED_BY_USER.into(),
                ));
            }
            Ok(())
        })?,
    )?;
    // `loadstring(text [, chunkname])`: Lua text compiled into a function of the script's
    // globals; a precompiled chunk is refused (nil and the reason), as Redis refuses it.
    lua.globals().set(
        "__shoal_loadstring",
        lua.create_function(
            |lua, (text, name): (mlua::LuaString, Option<mlua::LuaString>)| {
                let code = text.as_bytes().to_vec();
                if code.first() == Some(&0x1b) {
                    return Ok((None, Some("binary chunks are not loaded".to_string())));
                }
                // A chunk name ends at a NUL (Lua's C strings).
                let name = match &name {
                    Some(n) => n.as_bytes().to_vec(),
                    None => code.clone(),
                };
                let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
                let name = String::from_utf8_lossy(&name[..end]).into_owned();
                let chunk = lua.load(code).set_mode(ChunkMode::Text).set_name(name);
                match chunk.into_function() {
                    Ok(f) => Ok((Some(f), None)),
                    Err(e) => Ok((None, Some(message(&e)))),
                }
            },
        )?,
    )?;
    // What `pcall` and `xpcall` catch of an error raised by Rust, as Redis raises it: what
    // `error` was given ([`throw`]), `{err = text}` for the errors of `redis.call` and of the
    // library's functions, the text of any other.
    lua.globals().set(
        "__shoal_caught",
        lua.create_function(|lua, e: Value| match e {
            Value::Error(e) => {
                // Caught: no longer the error the script ends with.
                let text = message(&e);
                let raised = RAISED
                    .with(|r| r.borrow_mut().take())
                    .filter(|r| r.text == text);
                match raised {
                    Some(Raised { value: Some(v), .. }) => Ok(v),
                    Some(Raised {
                        table: true,
                        counted: true,
                        ..
                    }) => counted_error(lua, text),
                    Some(Raised { table: true, .. }) => tagged(lua, "err", text),
                    Some(_) => Ok(Value::String(lua.create_string(text)?)),
                    None if coded(&e) => tagged(lua, "err", text),
                    None => Ok(Value::String(lua.create_string(text)?)),
                }
            }
            other => Ok(other),
        })?,
    )?;
    let (fenv, fenv_meta, load_api, api_redis) =
        lua.load(FUNCTION_ENV).set_name("@function_env").call::<(
            mlua::Table,
            mlua::Table,
            mlua::Table,
            mlua::Table,
        )>((
            lua.create_function(register_function)?,
            redis.clone(),
        ))?;
    // The tables `table.insert`, `remove` and `sort` may not write into (weak keys): the
    // library API and globals too.
    let protected = lua.create_table()?;
    let weak = lua.create_table()?;
    weak.set("__mode", "k")?;
    protected.set_metatable(Some(weak))?;
    let guarded = super::lua_libs::guarded_table_functions(&lua, protected.clone())?;
    let function_tables = lua.create_sequence_from([fenv.clone(), load_api.clone(), api_redis])?;
    let globals = lua
        .load(SANDBOX)
        .set_name("@sandbox")
        .call::<mlua::Table>((protected, function_tables, guarded))?;
    fenv_meta.raw_set("__index", lua.globals())?;
    Ok(Vm {
        lua,
        redis,
        compiled: HashMap::new(),
        fenv,
        fenv_meta,
        load_api,
        libs: HashMap::new(),
        libs_generation: 0,
        globals,
    })
}

/// `redis.register_function(name, callback)` or `redis.register_function{function_name =
/// ..., callback = ..., flags = {...}, description = ...}`, as Redis 7.2 reads them.
fn register_function(lua: &Lua, args: mlua::MultiValue) -> mlua::Result<()> {
    let fail = |e: &str| Err(mlua::Error::RuntimeError(e.to_string()));
    if LOADING.with(|l| l.borrow().is_none()) {
        return fail("redis.register_function can only be called on FUNCTION LOAD command");
    }
    // A string, or a number as its text (Lua's `lua_isstring`).
    let text = |v: Value| -> mlua::Result<Option<String>> {
        Ok(match v {
            Value::String(_) | Value::Integer(_) | Value::Number(_) => lua
                .coerce_string(v)?
                .map(|s| String::from_utf8_lossy(&s.as_bytes()).into_owned()),
            _ => None,
        })
    };
    let mut args = args.into_iter();
    let (first, second) = (args.next(), args.next());
    if first.is_none() || args.next().is_some() {
        return fail("wrong number of arguments to redis.register_function");
    }
    let (mut name, mut callback, mut description, mut flags) = (None, None, None, 0u8);
    match (first, second) {
        (Some(Value::Table(t)), None) => {
            for pair in t.pairs::<Value, Value>() {
                let (k, v) = pair?;
                let Some(key) = text(k)? else {
                    return fail(
                        "named argument key given to redis.register_function is not a string",
                    );
                };
                match key.to_ascii_lowercase().as_str() {
                    "function_name" => match text(v)? {
                        Some(n) => name = Some(n),
                        None => return fail("function_name argument given to redis.register_function must be a string"),
                    },
                    "description" => match text(v)? {
                        Some(d) => description = Some(Bytes::from(d)),
                        None => return fail("description argument given to redis.register_function must be a string"),
                    },
                    "callback" => match v {
                        Value::Function(f) => callback = Some(f),
                        _ => return fail("callback argument given to redis.register_function must be a function"),
                    },
                    "flags" => {
                        let Value::Table(list) = v else {
                            return fail("flags argument to redis.register_function must be a table representing function flags");
                        };
                        for i in 1.. {
                            let f = match list.raw_get::<Value>(i)? {
                                Value::Nil => break,
                                f => text(f)?,
                            };
                            match f.and_then(|f| functions::flag::named(f.as_bytes(), true)) {
                                Some(bit) => flags |= bit,
                                None => return fail("unknown flag given"),
                            }
                        }
                    }
                    _ => return fail("unknown argument given to redis.register_function"),
                }
            }
            if name.is_none() {
                return fail("redis.register_function must get a function name argument");
            }
            if callback.is_none() {
                return fail("redis.register_function must get a callback argument");
            }
        }
        (Some(_), None) => {
            return fail("calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).");
        }
        (Some(n), Some(f)) => {
            let Some(n) = text(n)? else {
                return fail("first argument to redis.register_function must be a string");
            };
            let Value::Function(f) = f else {
                return fail("second argument to redis.register_function must be a function");
            };
            (name, callback) = (Some(n), Some(f));
        }
        (None, _) => unreachable!("checked above"),
    }
    let (Some(name), Some(callback)) = (name, callback) else {
        unreachable!("both checked above")
    };
    if !functions::valid_name(name.as_bytes()) {
        // Redis 7.0's and 7.2's text for a function's name too (`functionLibCreateFunction`;
        // later releases say "Function names").
        return fail("Library names can only contain letters, numbers, or underscores(_) and must be at least one character long");
    }
    LOADING.with(|l| {
        let mut l = l.borrow_mut();
        let registered = l.as_mut().expect("checked above");
        if registered.iter().any(|(f, _)| f.name == name) {
            return fail("Function already exists in the library");
        }
        let info = functions::Function {
            name,
            description,
            flags,
        };
        registered.push((info, callback));
        Ok(())
    })
}

/// Runs a library's code (`body`: after its `#!lua` line) on this thread's Lua state so
/// that it registers its functions, and keeps them as library `id`; what it registered and
/// the Lua heap it kept, or Redis's error.
pub(super) fn load_library(
    functions: &functions::Functions,
    id: u64,
    body: &[u8],
) -> Result<(Vec<functions::Function>, usize), Reply> {
    let mut out = Err(err("ERR cannot start Lua"));
    with_vm(|vm| {
        forget_dropped(vm, functions);
        let mut before = settled_memory(&vm.lua);
        // A retry is measured from the emptier heap.
        let compiled = compile_or_retry(vm, body, |vm| before = settled_memory(&vm.lua));
        out = compiled.map(|registered| {
            let mut by_name = HashMap::new();
            let infos = registered
                .into_iter()
                .map(|(info, f)| {
                    by_name.insert(info.name.clone(), f);
                    info
                })
                .collect();
            vm.libs.insert(id, by_name);
            (infos, 0)
        });
        if let Ok((_, heap)) = &mut out {
            *heap = settled_memory(&vm.lua).saturating_sub(before);
        }
        Reply::ok()
    });
    out
}

/// Drops this thread's compiled copy of library `id` (compiled by FUNCTION LOAD or
/// RESTORE on this thread, then not kept).
pub(super) fn forget_library(id: u64) {
    VM.with(|cell| {
        if let Some(vm) = cell.borrow_mut().as_mut() {
            vm.libs.remove(&id);
        }
    });
}

/// Drops this thread's compiled copies of libraries deleted or replaced since it last
/// looked.
fn forget_dropped(vm: &mut Vm, functions: &functions::Functions) {
    let generation = functions.generation();
    if vm.libs_generation != generation {
        vm.libs.retain(|id, _| functions.has_id(*id));
        vm.libs_generation = generation;
    }
}

/// The Lua heap in use after a full collection.
fn settled_memory(lua: &Lua) -> usize {
    let _ = lua.gc_collect();
    let _ = lua.gc_collect();
    lua.used_memory()
}

/// After the Lua heap ran out: forget the compiled scripts and libraries (compiled again
/// when next run) and collect, so that what is live is all that stays.
fn out_of_memory(vm: &mut Vm) {
    vm.compiled.clear();
    vm.libs.clear();
    let _ = vm.lua.gc_collect();
    let _ = vm.lua.gc_collect();
}

/// [`compile_library`], once more if the Lua heap ran out (the caches were then dropped
/// and the heap collected), after `again`.
fn compile_or_retry(
    vm: &mut Vm,
    body: &[u8],
    again: impl FnOnce(&mut Vm),
) -> Result<Vec<Registered>, Reply> {
    match compile_library(vm, body) {
        Err(Reply::Error(e)) if e.contains(OUT_OF_MEMORY) => {
            again(vm);
            compile_library(vm, body)
        }
        other => other,
    }
}

fn compile_library(vm: &mut Vm, body: &[u8]) -> Result<Vec<Registered>, Reply> {
    let f = vm
        .lua
        .load(body)
        .set_name("@user_function")
        .set_mode(ChunkMode::Text)
        .set_environment(vm.fenv.clone())
        .into_function()
        .map_err(|e| {
            Reply::error(format!(
                "ERR Error compiling function: {}",
                without_traceback(&message(&e))
            ))
        })?;
    let lua = &vm.lua;
    let started = Instant::now();
    let _ = lua.set_global_hook(
        HookTriggers::new().every_nth_instruction(100_000),
        move |_, _| {
            if started.elapsed() > LOAD_TIME_LIMIT {
                Err(mlua::Error::RuntimeError("FUNCTION LOAD timeout".into()))
            } else {
                Ok(VmState::Continue)
            }
        },
    );
    let _ = vm.fenv_meta.raw_set("__index", vm.load_api.clone());
    LOADING.with(|l| *l.borrow_mut() = Some(Vec::new()));
    let ran = f.call::<()>(());
    let registered = LOADING.with(|l| l.borrow_mut().take()).unwrap_or_default();
    let _ = vm.fenv_meta.raw_set("__index", lua.globals());
    lua.remove_global_hook();
    if let Err(e) = ran {
        if matches!(root(&e), mlua::Error::MemoryError(_)) {
            out_of_memory(vm);
        }
        // A library function's error has its code; a Lua error gets ERR.
        let code = if coded(&e) { "" } else { "ERR " };
        return Err(Reply::error(format!(
            "ERR Error registering functions: {code}{}",
            without_traceback(&message(&e))
        )));
    }
    if registered.is_empty() {
        return Err(err("ERR No functions registered"));
    }
    Ok(registered)
}

/// A Lua error's text without the stack traceback mlua adds.
fn without_traceback(m: &str) -> &str {
    m.split("\nstack traceback:").next().unwrap_or(m).trim_end()
}

/// The function `lib.functions[index]` as compiled on this thread (the library compiled
/// again here if this thread has not yet, or has dropped it).
fn library_function(
    vm: &mut Vm,
    functions: &functions::Functions,
    lib: &Library,
    index: usize,
) -> Result<mlua::Function, Reply> {
    forget_dropped(vm, functions);
    let name = &lib.functions[index].name;
    if !vm.libs.contains_key(&lib.id) {
        let meta = functions::metadata(&lib.code).map_err(Reply::error)?;
        let registered = compile_or_retry(vm, &lib.code[meta.body_at..], |_| {})?;
        vm.libs.insert(
            lib.id,
            registered.into_iter().map(|(i, f)| (i.name, f)).collect(),
        );
    }
    vm.libs[&lib.id]
        .get(name)
        .cloned()
        .ok_or_else(|| err("ERR Function not found"))
}

/// The root message of a Lua error (a callback's error is wrapped in its caller's).
fn message(e: &mlua::Error) -> String {
    match e {
        mlua::Error::CallbackError { cause, .. } => message(cause),
        mlua::Error::RuntimeError(m) | mlua::Error::SyntaxError { message: m, .. } => m.clone(),
        mlua::Error::MemoryError(_) => OUT_OF_MEMORY.into(),
        mlua::Error::ExternalError(e) => e.to_string(),
        other => other.to_string(),
    }
}

/// A reply as a script sees it: Redis's RESP2 conversion, or with `resp3` (the script
/// called `redis.setresp(3)`) Redis 7's RESP3 one: a map is `{map = {k = v}}`, a set
/// `{set = {member = true}}`, a double `{double = n}`, a big number `{big_number = "..."}`,
/// a verbatim string `{verbatim_string = {format = "txt", string = "..."}}`, null `nil`, a
/// boolean a Lua boolean.
fn to_lua(lua: &Lua, reply: Reply, resp3: bool) -> mlua::Result<Value> {
    let field = |name: &str, v: Value| -> mlua::Result<Value> {
        let t = lua.create_table_with_capacity(0, 1)?;
        t.raw_set(name, v)?;
        Ok(Value::Table(t))
    };
    Ok(match reply {
        Reply::Int(n) => Value::Number(n as f64),
        Reply::Double(d) if resp3 => field("double", Value::Number(d))?,
        Reply::DoubleText(b) if resp3 => {
            let d = std::str::from_utf8(&b).ok().and_then(|t| t.parse().ok());
            field("double", Value::Number(d.unwrap_or(f64::NAN)))?
        }
        Reply::BigNumber(b) if resp3 => field("big_number", Value::String(lua.create_string(&b)?))?,
        Reply::Verbatim(b) if resp3 => {
            let v = lua.create_table_with_capacity(0, 2)?;
            v.raw_set("format", "txt")?;
            v.raw_set("string", lua.create_string(&b)?)?;
            field("verbatim_string", Value::Table(v))?
        }
        Reply::Bulk(b) | Reply::Verbatim(b) | Reply::DoubleText(b) | Reply::BigNumber(b) => {
            Value::String(lua.create_string(&b)?)
        }
        Reply::Double(d) => Value::String(lua.create_string(shoal_resp::double_bytes(d))?),
        Reply::Nil | Reply::NilArray if resp3 => Value::Nil,
        Reply::Nil | Reply::NilArray => Value::Boolean(false),
        Reply::Bool(b) if resp3 => Value::Boolean(b),
        Reply::Bool(b) => Value::Number(if b { 1.0 } else { 0.0 }),
        Reply::Simple(s) => tagged(lua, "ok", &*s)?,
        Reply::Error(e) => counted_error(lua, &*e)?,
        // A set's and a map's tables grow as Redis's (`lua_newtable`, then each member in the
        // reply's order): integer keys then land where they do in Redis, and a script walks
        // them (`pairs`) in Redis's order.
        Reply::Set(items) if resp3 => {
            let t = lua.create_table()?;
            for item in items {
                let k = to_lua(lua, item, resp3)?;
                // A member Lua cannot key a table by (nil, NaN) is left out, as Lua's own
                // settable would refuse it.
                let _ = t.raw_set(k, true);
            }
            field("set", Value::Table(t))?
        }
        // Never given to a script (DEBUG PROTOCOL leaves it out there).
        Reply::Attribute(_) => Value::Nil,
        Reply::Array(items) | Reply::Set(items) | Reply::Push(items) | Reply::Seq(items) => {
            let t = lua.create_table_with_capacity(items.len(), 0)?;
            for (i, item) in items.into_iter().enumerate() {
                t.raw_set(i + 1, to_lua(lua, item, resp3)?)?;
            }
            Value::Table(t)
        }
        Reply::Map(pairs) if resp3 => {
            let t = lua.create_table()?;
            for (k, v) in pairs {
                let (k, v) = (to_lua(lua, k, resp3)?, to_lua(lua, v, resp3)?);
                let _ = t.raw_set(k, v);
            }
            field("map", Value::Table(t))?
        }
        Reply::Map(pairs) => {
            let t = lua.create_table_with_capacity(pairs.len() * 2, 0)?;
            for (i, (k, v)) in pairs.into_iter().enumerate() {
                t.raw_set(2 * i + 1, to_lua(lua, k, resp3)?)?;
                t.raw_set(2 * i + 2, to_lua(lua, v, resp3)?)?;
            }
            Value::Table(t)
        }
    })
}

/// The most bytes a script's reply may take while it is converted (a table may hold one
/// large string many times over, or itself).
const REPLY_MAX_BYTES: usize = LUA_MEMORY;

/// A script's result as a reply (Redis's Lua-to-RESP conversion), or `None` once it passes
/// `left` bytes (an element counts 16 besides its data). A table's `err`, `ok`, `double`,
/// `big_number`, `verbatim_string`, `map` and `set` fields make those replies, in Redis's
/// order; a boolean is a RESP3 boolean when the script asked for RESP3 (`resp3`), else true
/// is 1 and false nil, as in Redis.
/// A Lua number as Redis makes it an integer reply: a C cast to `long long`, toward zero,
/// and, as on x86-64 (where its replies were compared), -2^63 for NaN and anything out of
/// range (`return 2^63` and `return 0/0` answer -9223372036854775808; Shoal saturated,
/// found by a helper's replay of django-redis's traffic).
fn lua_integer(n: f64) -> i64 {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if (-TWO_63..TWO_63).contains(&n) {
        n as i64
    } else {
        i64::MIN
    }
}

fn to_reply(v: Value, depth: usize, left: &mut usize, resp3: bool) -> Option<Reply> {
    *left = left.checked_sub(16)?;
    let text = |s: &mlua::LuaString, left: &mut usize| -> Option<Bytes> {
        let b = s.as_bytes();
        *left = left.checked_sub(b.len())?;
        Some(Bytes::copy_from_slice(&b))
    };
    Some(match v {
        Value::Integer(n) => Reply::Int(n),
        Value::Number(n) => Reply::Int(lua_integer(n)),
        Value::String(s) => Reply::Bulk(text(&s, left)?),
        Value::Boolean(b) if resp3 => Reply::Bool(b),
        Value::Boolean(true) => Reply::Int(1),
        // Nested past what the reply's encoder should recurse into: Redis's error where its
        // Lua stack gives out (at ~8,000 levels there; here at 64), not a silent nil.
        Value::Table(_) if depth >= REPLY_MAX_DEPTH => {
            let e = "ERR reached lua stack limit";
            if depth > 0 {
                REPLY_ERRORS.with(|r| r.borrow_mut().nested.push(e.into()));
            }
            Reply::Error(e.into())
        }
        Value::Table(t) => {
            let get = |name: &str| t.raw_get::<Value>(name).unwrap_or(Value::Nil);
            if let Value::String(e) = get("err") {
                let counted = get(COUNTED_FIELD) == Value::Boolean(true);
                REPLY_ERRORS.with(|r| {
                    let mut r = r.borrow_mut();
                    match (depth, counted) {
                        (0, counted) => r.counted = counted,
                        (_, true) => r.nested_counted += 1,
                        (_, false) => r.nested.push(String::from_utf8_lossy(&e.as_bytes()).into()),
                    }
                });
                return Some(Reply::Error(
                    String::from_utf8_lossy(&e.as_bytes()).into_owned().into(),
                ));
            }
            if let Value::String(s) = get("ok") {
                return Some(Reply::Simple(
                    String::from_utf8_lossy(&s.as_bytes()).into_owned().into(),
                ));
            }
            match get("double") {
                Value::Number(d) => return Some(Reply::Double(d)),
                Value::Integer(n) => return Some(Reply::Double(n as f64)),
                _ => {}
            }
            if let Value::String(n) = get("big_number") {
                // Sent on one line, CR and LF as spaces, as Redis sends it (the encoder's).
                return Some(Reply::BigNumber(text(&n, left)?));
            }
            if let Value::Table(v) = get("verbatim_string") {
                let format = v.raw_get::<Value>("format").unwrap_or(Value::Nil);
                let string = v.raw_get::<Value>("string").unwrap_or(Value::Nil);
                if let (Value::String(_), Value::String(s)) = (format, string) {
                    return Some(Reply::Verbatim(text(&s, left)?));
                }
            }
            if let Value::Table(m) = get("map") {
                let mut pairs = Vec::new();
                for pair in m.pairs::<Value, Value>() {
                    let (k, v) = pair.ok()?;
                    let k = to_reply(k, depth + 1, left, resp3)?;
                    pairs.push((k, to_reply(v, depth + 1, left, resp3)?));
                }
                return Some(Reply::Map(pairs));
            }
            if let Value::Table(set) = get("set") {
                let mut members = Vec::new();
                for pair in set.pairs::<Value, Value>() {
                    let (k, _) = pair.ok()?;
                    members.push(to_reply(k, depth + 1, left, resp3)?);
                }
                return Some(Reply::Set(members));
            }
            let mut out = Vec::new();
            for i in 1.. {
                match t.raw_get::<Value>(i) {
                    Ok(Value::Nil) | Err(_) => break,
                    Ok(v) => out.push(to_reply(v, depth + 1, left, resp3)?),
                }
            }
            Reply::Array(out)
        }
        _ => Reply::Nil,
    })
}

/// Tables nested deeper than this in a script's reply end in an error element. Every level
/// is a call on a worker's stack here (converting, encoding, dropping the reply): a first try
/// at 1,000 overflowed a debug build's worker stack at 2,000 levels asked.
const REPLY_MAX_DEPTH: usize = 64;

/// [`to_reply`] within [`REPLY_MAX_BYTES`].
fn result_reply(v: Value) -> Reply {
    let mut left = REPLY_MAX_BYTES;
    let resp3 = RESP3.with(std::cell::Cell::get);
    to_reply(v, 0, &mut left, resp3).unwrap_or_else(|| {
        // The errors met on the way are not in the reply: only this one is.
        REPLY_ERRORS.with(|e| *e.borrow_mut() = ReplyErrors::default());
        err("ERR the script's reply is too large")
    })
}

/// What `redis.call` may run: no command a script may not run (nor the node's internal
/// ones); in a cluster (`declared`: the script's keys) only commands on declared keys, or
/// keyless ones that write nothing. Redis Cluster takes any key of the declared keys' slot
/// and replicates the script's effects; Shoal replicates the declared keys' states, so a key
/// not declared would reach no replica.
/// `acl` is the caller's ACL check, made where Redis makes it (after NOSCRIPT). `Ok` holds
/// the command's row.
fn check_call(
    args: &[Bytes],
    declared: Option<&[Bytes]>,
    read_only: bool,
    debug_allowed: bool,
    acl: impl FnOnce() -> Option<String>,
) -> Result<&'static CommandSpec, String> {
    let Some(spec) = lookup_listed(&args[0]) else {
        return Err("ERR Unknown Redis command called from script".into());
    };
    // A subcommand Redis does not have is no command to Redis's lookup; then the arity,
    // whether a script may run it, the ACL, as in Redis.
    let misfit = super::subcommand_misfit(spec, args);
    if misfit == Some(super::Misfit::Unknown) {
        return Err("ERR Unknown Redis command called from script".into());
    }
    if !spec.takes(args.len()) || misfit.is_some() {
        return Err("ERR Wrong number of args calling Redis command from script".into());
    }
    // DEBUG SET-DISABLE-DENY-SCRIPTS 1 lets a script call DEBUG (Redis's test suite's
    // `debug protocol` from Lua); nothing else a script may not run, as a nested script or
    // transaction could not run here.
    let debug_call = debug_allowed && spec.name == "debug";
    if (spec.flags & flag::NOSCRIPT != 0 || super::noscript_subcommand(spec, args)) && !debug_call {
        return Err("ERR This Redis command is not allowed from script".into());
    }
    if let Some(refused) = acl() {
        return Err(refused);
    }
    // Redis counts `may-replicate` commands (PUBLISH, PFCOUNT, ...) as writes here, so a
    // read-only script may run while CLIENT PAUSE WRITE holds writes back.
    if read_only && spec.flags & (flag::WRITE | flag::MAY_REPLICATE) != 0 {
        return Err("ERR Write commands are not allowed from read-only scripts.".into());
    }
    if let Some(declared) = declared {
        let slot = declared.first().map(|k| shoal_store::key_slot(k));
        let mut keys = spec.key_positions(args).peekable();
        if keys.peek().is_none() && (spec.flags & flag::WRITE != 0 || spec.name == "select") {
            return Err("ERR This command is not allowed from a script in a Shoal cluster".into());
        }
        // Its keys, and a destination outside its key specification (SORT ... STORE).
        let named = keys
            .map(|i| &args[i])
            .chain(super::db::store_key(spec, args));
        for key in named {
            if Some(shoal_store::key_slot(key)) != slot {
                return Err(
                    "ERR Script attempted to access a non local key in a cluster node".into(),
                );
            }
            if !declared.contains(key) {
                return Err(
                    "ERR Script attempted to access a key it did not declare: in a \
                            Shoal cluster a script may touch only the keys it names"
                        .into(),
                );
            }
        }
    }
    Ok(spec)
}

/// Compiles a function's library on this thread if it has not been yet, before the
/// function runs alone (compiling runs the library's code, up to half a second).
pub(super) fn prepare(ctx: &Ctx<'_>, lib: &Library, index: usize) -> Result<(), Reply> {
    let functions = &ctx.engine.functions;
    let mut out = Ok(());
    with_vm(|vm| {
        out = library_function(vm, functions, lib, index).map(|_| ());
        Reply::ok()
    });
    out
}

/// What runs: a script (its SHA1 and its code after any `#!lua` line) or a library's
/// function.
pub(super) enum Target<'a> {
    Script { sha: &'a str, body: &'a [u8] },
    Function { lib: &'a Library, index: usize },
}

impl Target<'_> {
    /// The chunk the errors name, and the name they give the script.
    fn names(&self) -> (&'static str, &str) {
        match self {
            Target::Script { sha, .. } => ("user_script", sha),
            Target::Function { lib, index } => ("user_function", &lib.functions[*index].name),
        }
    }
}

/// How a script or function may run (from its flags).
#[derive(Clone, Copy)]
pub(super) struct Allowed {
    /// Only commands that write nothing.
    pub read_only: bool,
    /// Its commands skip the `maxmemory` check (`allow-oom`; the store's own bound holds).
    pub oom: bool,
}

impl Allowed {
    /// `flags`: a function's, or a script's `#!lua` line's (none: Redis's compatibility
    /// mode); `ro_command`: EVAL_RO, FCALL_RO, ...
    pub(super) fn from(flags: Option<u8>, ro_command: bool) -> Allowed {
        use functions::flag::{ALLOW_OOM, NO_WRITES};
        let f = flags.unwrap_or(0);
        Allowed {
            read_only: ro_command || f & NO_WRITES != 0,
            oom: f & ALLOW_OOM != 0,
        }
    }
}

/// Runs a script or a function with its keys and arguments.
fn run(
    ctx: &mut Ctx<'_>,
    target: Target<'_>,
    keys: &[Bytes],
    argv: &[Bytes],
    allowed: Allowed,
    started: Instant,
    may_move: bool,
) -> Reply {
    let read_only = allowed.read_only;
    let (chunk, sha) = target.names();
    let functions = &ctx.engine.functions;
    // In a cluster a script is run by the owner of its keys (one slot: `cross_slot`, checked
    // by the callers) and may touch only them (see `check_call`).
    let declared = ctx.host.cluster().map(|_| keys);
    with_vm(|vm| {
        forget_dropped(vm, functions);
        let f = match target {
            Target::Script { sha, body } => compiled(vm, sha, body),
            Target::Function { lib, index } => library_function(vm, functions, lib, index),
        };
        let f = match f {
            Ok(f) => f,
            Err(e) => return e,
        };
        let is_function = matches!(target, Target::Function { .. });
        let lua = &vm.lua;
        KILLED.with(|k| k.set(false));
        MOVED.with(|m| m.set(false));
        EFFECTS.with(|e| e.set(false));
        RAISED.with(|r| *r.borrow_mut() = None);
        REPLY_ERRORS.with(|e| *e.borrow_mut() = ReplyErrors::default());
        RESP3.with(|r| r.set(false));
        super::lua_libs::reset_settings();
        // Past the threshold the others are answered BUSY; SCRIPT KILL or SHUTDOWN ends it.
        let running = ctx.engine.running.clone();
        let threshold = Duration::from_millis(ctx.engine.with_settings(|s| s.busy_reply_threshold));
        // Global, so every thread's instructions count.
        let _ = lua.set_global_hook(
            HookTriggers::new().every_nth_instruction(10_000),
            move |_, _| {
                if running.killed() {
                    KILLED.with(|k| k.set(true));
                    return Err(mlua::Error::RuntimeError(
                        crate::busy::KILLED_BY_USER.into(),
                    ));
                }
                let elapsed = started.elapsed();
                if may_move
                    && crate::busy::stops_to_move(elapsed, threshold, EFFECTS.with(Cell::get))
                {
                    // Ended as a kill is (`pcall` passes it on); run again elsewhere.
                    MOVED.with(|m| m.set(true));
                    KILLED.with(|k| k.set(true));
                    return Err(mlua::Error::RuntimeError(MOVING.into()));
                }
                if elapsed >= threshold {
                    running.turn_busy();
                }
                Ok(VmState::Continue)
            },
        );
        let running = &ctx.engine.running;
        let ctx = RefCell::new(&mut *ctx);
        // Under a memory limit mlua guards each call into Lua that may allocate with a
        // protected call of two new C closures: garbage for the collector, a few per
        // argument and callback set up here. The script's own small setup runs without the
        // limit (bounded by `SETUP_UNGUARDED`), the script under it.
        let setup: usize = keys.iter().chain(argv).map(|a| a.len() + 32).sum();
        let unguarded = setup <= SETUP_UNGUARDED && lua.set_memory_limit(0).is_ok();
        let result = lua.scope(|scope| {
            let table = |items: &[Bytes]| -> mlua::Result<mlua::Table> {
                let t = lua.create_table_with_capacity(items.len(), 0)?;
                for (i, item) in items.iter().enumerate() {
                    t.raw_set(i + 1, lua.create_string(item)?)?;
                }
                Ok(t)
            };
            let globals = &vm.globals;
            // A script's keys and arguments are globals; a function's are its arguments
            // (and KEYS and ARGV do not exist for it, as in Redis).
            let (keys, argv) = (table(keys)?, table(argv)?);
            if is_function {
                globals.raw_set("KEYS", Value::Nil)?;
                globals.raw_set("ARGV", Value::Nil)?;
            } else {
                globals.raw_set("KEYS", keys.clone())?;
                globals.raw_set("ARGV", argv.clone())?;
            }
            // One call of a command: its reply, or the error it answered or met (`Err`).
            // `true` with an error: it was counted in INFO errorstats already.
            let call = |lua: &Lua,
                        args: mlua::MultiValue|
             -> mlua::Result<Result<Value, (String, bool)>> {
                let cmd = match command_args(args) {
                    Ok(cmd) => cmd,
                    Err(e) => return Ok(Err((e.into(), false))),
                };
                // Stopping to move: nothing more runs, not even from an `xpcall` handler,
                // which Lua 5.1 calls before the error unwinds.
                if MOVED.with(Cell::get) {
                    return Err(mlua::Error::RuntimeError(MOVING.into()));
                }
                let mut guard = ctx.borrow_mut();
                let ctx = &mut **guard;
                let acl = || super::acl::script_refusal(ctx.engine, ctx.session, &cmd);
                let debug_allowed = ctx
                    .engine
                    .scripts_may_debug
                    .load(std::sync::atomic::Ordering::Relaxed);
                let spec = match check_call(&cmd, declared, read_only, debug_allowed, acl) {
                    Ok(spec) => spec,
                    Err(e) => {
                        // Counted where it is refused, as Redis's `scriptCall`: an error,
                        // and a rejected call of a known command.
                        EFFECTS.with(|e| e.set(true));
                        ctx.engine.commands.error(&e);
                        let row = super::lookup(&cmd[0])
                            .and_then(|spec| super::stat_row(ctx.engine, spec, &cmd));
                        if let Some(row) = row {
                            row.rejected
                                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                        return Ok(Err((e, true)));
                    }
                };
                // What a second run would do again where others see it: a write, a
                // message, a keyspace notification, a MONITOR line.
                if spec.flags & (flag::WRITE | flag::PUBSUB | flag::MAY_REPLICATE) != 0
                    || (spec.has_keys() && ctx.engine.notifications_on())
                    || ctx.host.monitoring()
                {
                    EFFECTS.with(|e| e.set(true));
                }
                // A write and SCRIPT KILL exclude each other: a killed script writes no more.
                if spec.flags & flag::WRITE != 0 && !running.may_write() {
                    KILLED.with(|k| k.set(true));
                    return Err(mlua::Error::RuntimeError(
                        crate::busy::KILLED_BY_USER.into(),
                    ));
                }
                // MONITOR shows a script's calls after its EVAL or FCALL, as `[0 lua]`, but
                // the administrative ones, passwords redacted (as a client's).
                if ctx.host.monitoring() {
                    if let Some(shown) = super::monitor_args(spec, &cmd) {
                        ctx.host.monitor("lua", &shown);
                    }
                }
                // Commands answer a script in RESP2 (Redis's default in scripts) unless it
                // asked for RESP3, whatever the caller speaks, and never block.
                let resp3 = RESP3.with(std::cell::Cell::get);
                let script_proto = if resp3 {
                    shoal_resp::Protocol::Resp3
                } else {
                    shoal_resp::Protocol::Resp2
                };
                let no_block = std::mem::replace(&mut ctx.session.no_block, true);
                let proto = std::mem::replace(&mut ctx.session.proto, script_proto);
                // Each call's reply has the caller's whole output budget (it goes to the
                // script, not the client); one past it is an error, never a silent nil.
                let budget = ctx.session.budget;
                let (host, now_ms) = (ctx.host, ctx.now_ms);
                let scripted = std::mem::replace(&mut ctx.session.scripted, true);
                let allow_oom = std::mem::replace(&mut ctx.session.allow_oom, allowed.oom);
                let reply = super::execute(host, ctx.session, &cmd, now_ms);
                ctx.session.scripted = scripted;
                ctx.session.allow_oom = allow_oom;
                let over = ctx.session.budget.exceeded();
                ctx.session.budget = budget;
                ctx.session.no_block = no_block;
                ctx.session.proto = proto;
                drop(guard);
                if over {
                    let e = "ERR a command's reply in the script passed the client's output limit";
                    return Err(raise(lua, e.into(), false));
                }
                match reply {
                    Reply::Error(e) => {
                        EFFECTS.with(|e| e.set(true));
                        Ok(Err((e.to_string(), true)))
                    }
                    other => to_lua(lua, other, resp3).map(Ok),
                }
            };
            // `redis.acl_check_cmd(command, ...)`: whether the script's caller may run it.
            let acl_check = |lua: &Lua, args: mlua::MultiValue| -> mlua::Result<bool> {
                let cmd = command_args(args).map_err(|e| raise(lua, e.into(), false))?;
                let mut guard = ctx.borrow_mut();
                let ctx = &mut **guard;
                super::acl::may_run(ctx.engine, ctx.session, &cmd).ok_or_else(|| {
                    let e = "ERR Invalid command passed to redis.acl_check_cmd()";
                    raise(lua, e.into(), false)
                })
            };
            let redis = &vm.redis;
            redis.raw_set("acl_check_cmd", scope.create_function(acl_check)?)?;
            // `redis.call` raises the error it gets; `pcall` catches it as the error's text
            // (the sandbox's `pcall`), as Redis 7 raises a string. Where it was raised is kept
            // for the reply if nothing catches it.
            redis.raw_set(
                "call",
                scope.create_function(move |lua, args| match call(lua, args)? {
                    Ok(v) => Ok(v),
                    Err((e, counted)) => Err(raise(lua, e, counted)),
                })?,
            )?;
            redis.raw_set(
                "pcall",
                scope.create_function(move |lua, args| match call(lua, args)? {
                    Ok(v) => Ok(v),
                    Err((e, true)) => counted_error(lua, e),
                    Err((e, false)) => tagged(lua, "err", e),
                })?,
            )?;
            if unguarded {
                lua.set_memory_limit(LUA_MEMORY)?;
            }
            if is_function {
                f.call::<Value>((keys, argv))
            } else {
                f.call::<Value>(())
            }
        });
        if unguarded {
            // Also when the setup failed before the script ran.
            let _ = lua.set_memory_limit(LUA_MEMORY);
        }
        lua.remove_global_hook();
        if MOVED.with(Cell::get) {
            // Its reply goes nowhere: the front end runs it again elsewhere.
            RAISED.with(|r| *r.borrow_mut() = None);
            REPLY_ERRORS.with(|e| *e.borrow_mut() = ReplyErrors::default());
            debug_assert!(!EFFECTS.with(Cell::get), "a moved script had an effect");
            ctx.borrow_mut().session.script_move = ScriptMove::Stopped {
                ran: started.elapsed(),
            };
            return Reply::Nil;
        }
        let reply = match result {
            Ok(v) => result_reply(v),
            Err(e) => {
                if matches!(root(&e), mlua::Error::MemoryError(_)) {
                    out_of_memory(vm);
                }
                script_error(&with_traceback(&e), coded(&e), chunk, sha)
            }
        };
        // Lua 5.1 collects when its heap has doubled since its last cycle: past half the
        // limit that is never. Collect while there is room to.
        if vm.lua.used_memory() > LUA_MEMORY / 4 {
            let _ = vm.lua.gc_collect();
        }
        reply
    })
}

/// The command a script passes `redis.call` (or `pcall`, `acl_check_cmd`), as Redis reads
/// its arguments: strings, and numbers as Redis 7.2 writes them.
fn command_args(args: mlua::MultiValue) -> Result<Vec<Bytes>, &'static str> {
    let mut cmd: Vec<Bytes> = Vec::with_capacity(args.len());
    for a in args {
        match a {
            Value::String(s) => cmd.push(Bytes::copy_from_slice(&s.as_bytes())),
            Value::Integer(n) => cmd.push(Bytes::from(n.to_string())),
            Value::Number(n) => cmd.push(lua_number(n)),
            _ => return Err("ERR Lua redis lib command arguments must be strings or integers"),
        }
    }
    if cmd.is_empty() {
        return Err("ERR Please specify at least one argument for this redis lib call");
    }
    Ok(cmd)
}

/// Runs `f` on this thread's Lua state, made on first use.
fn with_vm(f: impl FnOnce(&mut Vm) -> Reply) -> Reply {
    VM.with(|cell| {
        let mut cell = cell.borrow_mut();
        if cell.is_none() {
            match new_vm() {
                Ok(vm) => *cell = Some(vm),
                Err(e) => return Reply::error(format!("ERR cannot start Lua: {}", message(&e))),
            }
        }
        match cell.as_mut() {
            Some(vm) => f(vm),
            None => err("ERR cannot start Lua"),
        }
    })
}

/// The script `sha` compiled on this thread (from text only: a precompiled chunk is
/// refused, as Redis refuses it), or the compile error as Redis words it.
fn compiled(vm: &mut Vm, sha: &str, body: &[u8]) -> Result<mlua::Function, Reply> {
    if let Some(f) = vm.compiled.get(sha) {
        return Ok(f.clone());
    }
    if vm.compiled.len() >= COMPILED_MAX {
        vm.compiled.clear();
    }
    let loaded = vm
        .lua
        .load(body)
        .set_name("@user_script")
        .set_mode(ChunkMode::Text)
        .into_function();
    match loaded {
        Ok(f) => {
            vm.compiled.insert(sha.to_string(), f.clone());
            Ok(f)
        }
        Err(e) => {
            if matches!(root(&e), mlua::Error::MemoryError(_)) {
                vm.compiled.clear();
                let _ = vm.lua.gc_collect();
            }
            Err(Reply::error(format!(
                "ERR Error compiling script (new function): {}",
                message(&e)
            )))
        }
    }
}

/// A Lua error's message followed by the stack traceback of the callback that raised it,
/// if a Rust function did (a Lua error's message carries its own): where the script was
/// when it failed.
fn with_traceback(e: &mlua::Error) -> String {
    match e {
        mlua::Error::CallbackError { traceback, .. }
            if traceback.starts_with("stack traceback:") =>
        {
            format!("{}\n{traceback}", message(e))
        }
        _ => message(e),
    }
}

/// The error a callback's error wraps, innermost.
fn root(e: &mlua::Error) -> &mlua::Error {
    match e {
        mlua::Error::CallbackError { cause, .. } => root(cause),
        other => other,
    }
}

/// `{ok = text}` or `{err = text}`: a status or an error reply as a script holds it.
/// What `redis.error_reply` and `status_reply` return (not raise) for anything but one
/// string, as Redis does.
const WRONG_REPLY_ARGS: &str = "ERR wrong number or type of arguments";

/// The one string argument of `args` (a Lua string, not a number), if that is what it is.
fn one_string(args: &mlua::MultiValue) -> Option<mlua::LuaString> {
    match &args.iter().collect::<Vec<_>>()[..] {
        [Value::String(s)] => Some(s.clone()),
        _ => None,
    }
}

/// `redis.error_reply`'s text as Redis 7 makes it (`luaPushErrorBuff`): its first word is
/// the code when there are two or more (a leading `-` dropped), else the code is `ERR`;
/// line ends trimmed from the message. `'MYERR'` is `ERR MYERR`, `''` is `ERR `.
fn error_text(given: &[u8]) -> mlua::BString {
    let rest = given.strip_prefix(b"-").unwrap_or(given);
    let (code, msg) = match rest.iter().position(|&b| b == b' ') {
        Some(sp) => (&rest[..sp], &rest[sp + 1..]),
        None => (&b"ERR"[..], rest),
    };
    let trim = |b: &u8| *b == b'\r' || *b == b'\n';
    let start = msg.iter().position(|b| !trim(b)).unwrap_or(msg.len());
    let end = msg.iter().rposition(|b| !trim(b)).map_or(start, |e| e + 1);
    [code, b" ", &msg[start..end]].concat().into()
}

/// `redis.log(level, message, ...)`, Redis's `luaLogCommand`: its checks and errors, then
/// the message (the other arguments that are strings or numbers, joined by spaces) to this
/// node's log at the level's weight (LOG_WARNING a warning, LOG_NOTICE an info line, the
/// others debug).
fn script_log(lua: &Lua, args: mlua::MultiValue) -> mlua::Result<()> {
    let fail = lib_error;
    if args.len() < 2 {
        return fail("redis.log() requires two arguments or more.");
    }
    let mut args = args.into_iter();
    let first = args.next().unwrap_or(Value::Nil);
    let Some(level) = lua.coerce_number(first)? else {
        return fail("First argument must be a number (log level).");
    };
    // C's (int) cast: truncated toward zero.
    let level = level.trunc();
    if !(0.0..=3.0).contains(&level) {
        return fail("Invalid debug level.");
    }
    let mut words = Vec::new();
    for v in args {
        if let Some(s) = lua.coerce_string(v)? {
            words.push(String::from_utf8_lossy(&s.as_bytes()).into_owned());
        }
    }
    let message = words.join(" ");
    match level as u8 {
        3 => tracing::warn!(target: "shoal::script", "{message}"),
        2 => tracing::info!(target: "shoal::script", "{message}"),
        _ => tracing::debug!(target: "shoal::script", "{message}"),
    }
    Ok(())
}

/// The error a function of the `redis` library raises (Redis's `luaPushError` then
/// `luaError`): the text with its code, `ERR`, in front, which `pcall` catches as a string
/// and which, uncaught, is the script's error reply as it is (see [`coded`]).
fn lib_error<T>(text: &str) -> mlua::Result<T> {
    Err(mlua::Error::external(LibError(format!("ERR {text}"))))
}

/// The error of a function of the `redis` library ([`lib_error`]).
#[derive(Debug)]
struct LibError(String);

impl fmt::Display for LibError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LibError {}

/// The one argument of `redis.setresp` or `set_repl` as Redis's C reads it (Lua's
/// `tonumber`, then a cast: truncated, 0 for what is no number), or `arity` as the
/// library's error when there is not exactly one.
fn one_number(lua: &Lua, args: mlua::MultiValue, arity: &str) -> mlua::Result<i64> {
    if args.len() != 1 {
        return lib_error(arity);
    }
    Ok(lua
        .coerce_number(args.into_iter().next().unwrap_or(Value::Nil))?
        .map_or(0, |n| n as i64))
}

/// Whether `e` is a library function's error ([`lib_error`]), whose text has its code in
/// front and is kept as it is, rather than a Lua error, whose text Redis gives `ERR` in
/// front.
fn coded(e: &mlua::Error) -> bool {
    matches!(root(e), mlua::Error::ExternalError(x) if x.downcast_ref::<LibError>().is_some())
}

/// An error the running script raised ([`raise`], [`throw`]), kept for what catches it
/// (`__shoal_caught`) or for the script's reply ([`script_error`]).
struct Raised {
    /// The raised error's text (how it is recognised when caught or at the end).
    text: String,
    /// The reply's error, without its place.
    reply: String,
    /// The line of the call that raised it.
    line: usize,
    /// INFO errorstats counted it already (a command's error).
    counted: bool,
    /// `pcall` catches it as `{err = text}` (`redis.call`'s, as Redis raises a table).
    table: bool,
    /// What `error` raised, if no text: what `pcall` catches.
    value: Option<Value>,
}

/// The text of the error [`throw`] raises for what is no text; `pcall` gets the value
/// back, and a script it ends answers the value's reply.
const THROWN_MARK: &str = "\0shoal: a value raised by error()";

/// Lua's `error(value [, level])` as Redis's scripts see it: a text (or a number, unless
/// `level` is 0) gets the place `level` calls up in front (`user_script:3: `, as
/// `luaL_where`) and is raised; anything else is raised as it is: `pcall` catches the
/// value itself (Redis's `pcall` then gives a table's `err` text) and, uncaught, a table's
/// `err` text is the script's error reply (`ERR unknown error` without one, as Valkey),
/// placed at the line of the call. Rust's, so that a tail call (`return error(...)`)
/// keeps its caller's line.
fn throw(lua: &Lua, (value, level): (Value, Option<Value>)) -> mlua::Result<()> {
    let place = |level: usize| {
        lua.inspect_stack(level, |d| {
            let line = d.current_line()?;
            let src = d.source().short_src?.into_owned();
            Some((src, line))
        })
        .flatten()
    };
    let at = |level: usize| place(level).map_or(String::new(), |(s, l)| format!("{s}:{l}: "));
    let level = match level {
        None | Some(Value::Nil) => 1,
        Some(v) => {
            let kind = v.type_name();
            lua.coerce_integer(v)?.ok_or_else(|| {
                mlua::Error::RuntimeError(format!(
                    "{}bad argument #2 to 'error' (number expected, got {kind})",
                    at(1)
                ))
            })?
        }
    };
    // Text as UTF-8 (bytes that are not become U+FFFD: an error's text is a Rust string).
    let lossy = |s: mlua::LuaString| String::from_utf8_lossy(&s.as_bytes()).into_owned();
    let text = match &value {
        Value::String(s) => Some(lossy(s.clone())),
        Value::Integer(_) | Value::Number(_) if level > 0 => {
            lua.coerce_string(value.clone())?.map(lossy)
        }
        _ => None,
    };
    // The line of the call: the script's, past the sandbox's and the function libraries'
    // environment's own functions (their read-only tables' guards raise for the script).
    let line = (1..=8)
        .map_while(|l| lua.inspect_stack(l, |d| d.source().short_src.map(|s| s.into_owned())))
        .zip(1..)
        .find_map(|(src, l)| {
            let own = matches!(src.as_deref(), Some("sandbox" | "function_env"));
            (!own).then(|| place(l)).flatten()
        })
        .map_or(0, |(_, line)| line);
    if let Some(text) = text {
        let text = match usize::try_from(level) {
            Ok(level) if level > 0 => format!("{}{text}", at(level)),
            _ => text,
        };
        RAISED.with(|r| {
            *r.borrow_mut() = Some(Raised {
                reply: format!("ERR {text}"),
                text: text.clone(),
                line,
                counted: false,
                table: false,
                value: None,
            })
        });
        return Err(mlua::Error::RuntimeError(text));
    }
    let reply = match &value {
        Value::Table(t) => match t.get::<Value>("err")? {
            Value::String(s) => lossy(s),
            n @ (Value::Integer(_) | Value::Number(_)) => {
                lua.coerce_string(n)?.map_or(String::new(), lossy)
            }
            _ => "ERR unknown error".to_string(),
        },
        other => format!("ERR {}", other.to_string()?),
    };
    // A command's error table (`redis.pcall`'s) that INFO counted already, as Redis's
    // `ignore_err_stats_update`.
    let counted = match &value {
        Value::Table(t) => t.get::<Value>(COUNTED_FIELD)? == Value::Boolean(true),
        _ => false,
    };
    RAISED.with(|r| {
        *r.borrow_mut() = Some(Raised {
            text: THROWN_MARK.into(),
            reply,
            line,
            counted,
            table: false,
            value: Some(value),
        })
    });
    Err(mlua::Error::RuntimeError(THROWN_MARK.into()))
}

/// Whether `m`'s first word is an error code: upper case letters (`ERR`, `NOSCRIPT`).
fn has_code(m: &str) -> bool {
    m.split(' ')
        .next()
        .is_some_and(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_uppercase()))
}

fn tagged(lua: &Lua, tag: &str, text: impl mlua::IntoLua) -> mlua::Result<Value> {
    let t = lua.create_table()?;
    t.set(tag, text)?;
    Ok(Value::Table(t))
}

/// The error `e` raised by the running script's `redis.call` (or `acl_check_cmd`): its text,
/// which `pcall` catches, and (in [`RAISED`]) the reply if nothing catches it, placed at
/// the line of the call ([`script_error`]); `counted` if INFO errorstats counted it
/// already.
fn raise(lua: &Lua, e: String, counted: bool) -> mlua::Error {
    let line = lua
        .inspect_stack(1, |d| d.current_line())
        .flatten()
        .unwrap_or(0);
    RAISED.with(|r| {
        *r.borrow_mut() = Some(Raised {
            text: e.clone(),
            reply: e.clone(),
            line,
            counted,
            table: true,
            value: None,
        })
    });
    mlua::Error::RuntimeError(e)
}

/// The reply to a script that ended with an error: a `redis.call` error as placed by
/// [`raise`]; a Lua error (`user_script:<line>: <message>`) with `ERR` and the same
/// place added (a library function's error, `coded`, with the place only); Lua's stack
/// traceback left out.
fn script_error(full: &str, coded: bool, chunk: &str, sha: &str) -> Reply {
    let m = without_traceback(full);
    let at = format!("{chunk}:");
    // A `redis.call` error or what `error` raised, that nothing caught: placed at the call
    // that raised it.
    if let Some(r) = RAISED
        .with(|r| r.borrow_mut().take())
        .filter(|r| r.text.trim_end() == m)
    {
        REPLY_ERRORS.with(|e| e.borrow_mut().counted = r.counted);
        let (reply, line) = (r.reply, r.line);
        return Reply::Error(format!("{reply} script: {sha}, on @{chunk}:{line}.").into());
    }
    let line = m
        .strip_prefix(&at)
        .and_then(|rest| rest.split(':').next())
        .and_then(|n| n.parse::<u64>().ok());
    // Otherwise the innermost line of the script the traceback names (`error(text, 0)`
    // raises without a position; Redis's handler finds the line the same way).
    let traced = || {
        let trace = full.split_once("\nstack traceback:")?.1;
        trace.lines().find_map(|l| {
            let rest = l.trim_start().strip_prefix(&at)?;
            rest.split(':').next()?.parse::<u64>().ok()
        })
    };
    let killed = KILLED.with(std::cell::Cell::get);
    match line.or_else(|| traced().filter(|_| !killed)) {
        Some(line) if coded => {
            Reply::Error(format!("{m} script: {sha}, on @{chunk}:{line}.").into())
        }
        Some(line) => Reply::Error(format!("ERR {m} script: {sha}, on @{chunk}:{line}.").into()),
        None if has_code(m) => Reply::Error(m.to_string().into()),
        None => Reply::Error(format!("ERR {m}").into()),
    }
}

/// A Lua number as a command argument, as Redis 7.2 writes it (`fpconv_dtoa`: the shortest
/// text that reads back the same; Lua's own `%.14g` would lose digits), which is how a
/// double reply is written.
fn lua_number(n: f64) -> Bytes {
    shoal_resp::double_bytes(n)
}

/// The keys and arguments after EVAL's script (or SHA1, or FCALL's function) and numkeys,
/// with the keys as the client named them (outside database 0 the command arrives with its
/// keys stored for the database; the script sees them as given, and its calls store them
/// again). `not_integer` is the command's error for a numkeys that is not a number.
pub(super) fn keys_and_args(
    args: &[Bytes],
    not_integer: &'static str,
) -> Result<(Vec<Bytes>, Vec<Bytes>), Reply> {
    let Some(n) = parse_i64(&args[2]) else {
        return Err(err(not_integer));
    };
    if n < 0 {
        return Err(err("ERR Number of keys can't be negative"));
    }
    let n = n as usize;
    if n > args.len() - 3 {
        return Err(err(
            "ERR Number of keys can't be greater than number of args",
        ));
    }
    let keys = args[3..3 + n]
        .iter()
        .map(|k| Bytes::copy_from_slice(db::split_key(k).1))
        .collect();
    Ok((keys, args[3 + n..].to_vec()))
}

/// In a cluster a script's or function's keys must share one slot: CROSSSLOT before
/// anything else is looked at (an unknown SHA1 or function), as Redis Cluster checks the
/// keys before the command runs.
pub(super) fn cross_slot(ctx: &Ctx<'_>, keys: &[Bytes]) -> Option<Reply> {
    ctx.host.cluster()?;
    let slot = shoal_store::key_slot(keys.first()?);
    keys.iter()
        .any(|k| shoal_store::key_slot(k) != slot)
        .then(|| err("CROSSSLOT Keys in request don't hash to the same slot"))
}

fn eval_generic(ctx: &mut Ctx<'_>, args: &[Bytes], by_sha: bool, ro_command: bool) -> Reply {
    // No script's SHA1 has another length: NOSCRIPT before the key count is read, as Redis's
    // `evalShaCommand` answers (a cluster's check of the keys' slots still comes first).
    if by_sha && args[1].len() != 40 {
        if let Ok((keys, _)) = keys_and_args(args, "") {
            if let Some(refusal) = cross_slot(ctx, &keys) {
                return refusal;
            }
        }
        return err(NOSCRIPT);
    }
    let (keys, argv) = match keys_and_args(args, "ERR value is not an integer or out of range") {
        Ok(v) => v,
        Err(e) => return e,
    };
    if let Some(refusal) = cross_slot(ctx, &keys) {
        return refusal;
    }
    let scripts = &ctx.engine.scripts;
    let (sha, body) = if by_sha {
        let sha = String::from_utf8_lossy(&args[1]).to_ascii_lowercase();
        match scripts.get(&sha) {
            Some(body) => (sha, body),
            None => return err(NOSCRIPT),
        }
    } else {
        let sha = sha1_hex(&args[1]);
        if let Err(e) = load(scripts, &sha, &args[1]) {
            return e;
        }
        (sha, args[1].clone())
    };
    // Loaded scripts passed this check.
    let (flags, skip) = functions::shebang(&body).unwrap_or((None, 0));
    if let Some(refusal) = refused(ctx, flags, ro_command) {
        return refusal;
    }
    let target = Target::Script {
        sha: &sha,
        body: &body[skip..],
    };
    run_alone(
        ctx,
        target,
        args,
        &keys,
        &argv,
        Allowed::from(flags, ro_command),
    )
}

/// Redis's checks of a script's flags before it runs (`scriptPrepareForRun`): `flags` are
/// a function's, or a script's from its `#!lua` line (none without one: nothing checked).
pub(super) fn refused(ctx: &mut Ctx<'_>, flags: Option<u8>, ro_command: bool) -> Option<Reply> {
    use functions::flag::{ALLOW_OOM, NO_CLUSTER, NO_WRITES};
    let flags = flags?;
    // Redis counts such a script as a command that needs memory (`scriptFlagsToCmdFlags`),
    // refused before it runs; then `scriptPrepareForRun`'s checks.
    let store = &ctx.engine.store;
    if flags & (ALLOW_OOM | NO_WRITES) == 0
        && store.maxmemory() > 0
        && store.ensure_memory(ctx.now_ms).is_err()
    {
        return Some(err(super::ERR_OOM));
    }
    if flags & NO_CLUSTER != 0 && ctx.host.cluster().is_some() {
        return Some(err(
            "ERR Can not run script on cluster, 'no-cluster' flag is set.",
        ));
    }
    // A script that may write needs the replicas a write needs.
    if flags & NO_WRITES == 0 && super::lacks_replicas(ctx.host) {
        return Some(err(super::ERR_NOREPLICAS));
    }
    if flags & NO_WRITES == 0 && ro_command {
        return Some(err(
            "ERR Can not execute a script with write flag using *_ro command.",
        ));
    }
    None
}

/// Runs a script or function with no other client's command in between on any worker (as
/// EXEC); a SELECT in it changes its database, not its caller's (Redis 7).
/// Another script busy past its threshold answers it BUSY instead (`crate::busy`); `command`
/// is the caller's, for FUNCTION STATS.
pub(super) fn run_alone(
    ctx: &mut Ctx<'_>,
    target: Target<'_>,
    command: &[Bytes],
    keys: &[Bytes],
    argv: &[Bytes],
    allowed: Allowed,
) -> Reply {
    let engine = ctx.engine;
    let db = ctx.session.db;
    // A client's own script (not one inside EXEC) may stop to run again elsewhere; one
    // that did counts its time from its first start.
    let now = Instant::now();
    let (started, may_move, again) = match ctx.session.script_move {
        ScriptMove::Again { ran } => (now.checked_sub(ran).unwrap_or(now), false, Some(ran)),
        ScriptMove::May => (now, ctx.session.depth == 1, None),
        _ => (now, false, None),
    };
    let busy = || engine.running.is_busy();
    let reply = engine.store.exclusive_unless(&busy, || {
        // A CLIENT PAUSE that came in between its two runs holds it now, as it holds any
        // command that may write (checked inside the gate, which a PAUSE enters too).
        if let Some(ran) = again {
            if let Some(until_ms) = super::paused_until(engine, ctx.session, command, ctx.now_ms) {
                ctx.session.script_move = ScriptMove::Held { ran, until_ms };
                return Reply::Nil;
            }
        }
        let (function, name) = match target {
            Target::Script { sha, .. } => (false, format!("f_{sha}")),
            Target::Function { lib, index } => (true, lib.functions[index].name.clone()),
        };
        let _run = engine
            .running
            .start(function, name, command.to_vec(), started);
        run(ctx, target, keys, argv, allowed, started, may_move)
    });
    let reply = reply.unwrap_or_else(|| err(engine.running.refusal()));
    ctx.session.db = db;
    ctx.session
        .info
        .db
        .store(db, std::sync::atomic::Ordering::Relaxed);
    reply
}

/// Compiles `body` on this thread and keeps it in the engine's cache: a script with a
/// syntax error or a bad `#!lua` line is refused and not kept, as Redis does.
fn load(scripts: &Scripts, sha: &str, body: &[u8]) -> Result<(), Reply> {
    let skip = functions::shebang(body).map_err(Reply::error)?.1;
    let check = with_vm(|vm| match compiled(vm, sha, &body[skip..]) {
        Ok(_) => Reply::ok(),
        Err(e) => e,
    });
    if matches!(check, Reply::Error(_)) {
        return Err(check);
    }
    scripts
        .add(sha.to_string(), body)
        .map_err(|_| err("ERR the script cache is full (SCRIPT FLUSH empties it)"))
}

/// Whether EVAL, EVALSHA or FCALL `args` runs a script or function declared `no-writes`
/// (Redis's `evalGetCommandFlags`, `fcallGetCommandFlags`: such a call is no
/// `may-replicate` command, so CLIENT PAUSE WRITE lets it run). A script without a `#!lua`
/// line, or one not loaded, may write.
pub fn declares_no_writes(node: &crate::Engine, args: &[Bytes]) -> bool {
    let Some(name) = args.first() else {
        return false;
    };
    let flags = if name.eq_ignore_ascii_case(b"fcall") {
        args.get(1)
            .and_then(|f| node.functions.function(f))
            .map(|(lib, index)| lib.functions[index].flags)
    } else if name.eq_ignore_ascii_case(b"evalsha") {
        args.get(1)
            .and_then(|sha| {
                node.scripts
                    .get(&String::from_utf8_lossy(sha).to_ascii_lowercase())
            })
            .and_then(|body| functions::shebang(&body).ok()?.0)
    } else {
        args.get(1)
            .and_then(|body| functions::shebang(body).ok()?.0)
    };
    flags.is_some_and(|f| f & functions::flag::NO_WRITES != 0)
}

/// EVAL script numkeys [key ...] [arg ...].
pub fn eval(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    eval_generic(ctx, args, false, false)
}

/// EVALSHA sha1 numkeys [key ...] [arg ...].
pub fn evalsha(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    eval_generic(ctx, args, true, false)
}

pub fn eval_ro(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    eval_generic(ctx, args, false, true)
}

pub fn evalsha_ro(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    eval_generic(ctx, args, true, true)
}

const SCRIPT_HELP: &[&str] = &[
    "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "EXISTS <sha1> [<sha1> ...]",
    "    Return information about the existence of the scripts in the script cache.",
    "FLUSH [ASYNC|SYNC]",
    "    Flush the Lua scripts cache. Very dangerous on replicas.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the scripts cache.",
    "    * SYNC: Synchronously flush the scripts cache.",
    "KILL",
    "    Kill the currently executing Lua script.",
    "LOAD <script>",
    "    Load a script into the scripts cache without executing it.",
    "HELP",
    "    Print this help.",
];

/// SCRIPT LOAD | EXISTS | FLUSH | KILL | HELP.
pub fn script(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let sub = args[1].to_ascii_lowercase();
    let scripts = &ctx.engine.scripts;
    let arity = |name: &str| super::wrong_arity(&format!("script|{name}"));
    match &sub[..] {
        b"load" if args.len() == 3 => {
            let sha = sha1_hex(&args[2]);
            if let Err(e) = load(scripts, &sha, &args[2]) {
                return e;
            }
            Reply::Bulk(Bytes::from(sha))
        }
        b"load" => arity("load"),
        b"exists" if args.len() >= 3 => Reply::Array(
            args[2..]
                .iter()
                .map(|s| {
                    let sha = String::from_utf8_lossy(s).to_ascii_lowercase();
                    Reply::Int(i64::from(scripts.contains(&sha)))
                })
                .collect(),
        ),
        b"exists" => arity("exists"),
        b"flush" => {
            // Redis's one error for a third argument that is no mode and for any fourth.
            if args.len() > 3
                || (args.len() == 3 && !is(&args[2], "ASYNC") && !is(&args[2], "SYNC"))
            {
                return err("ERR SCRIPT FLUSH only support SYNC|ASYNC option");
            }
            scripts.flush();
            Reply::ok()
        }
        b"kill" if args.len() == 2 => match ctx.engine.running.kill(false) {
            Ok(()) => Reply::ok(),
            Err(e) => err(e),
        },
        b"kill" => arity("kill"),
        b"help" if args.len() == 2 => super::conn::help_reply(SCRIPT_HELP),
        // Redis's Lua debugger (LDB) is not here: off is what it is already.
        b"debug" => match args[2].to_ascii_lowercase().as_slice() {
            b"no" => Reply::ok(),
            b"yes" | b"sync" => err("ERR SCRIPT DEBUG is not supported: Shoal has no Lua debugger"),
            _ => err("ERR Use SCRIPT DEBUG YES/SYNC/NO"),
        },
        _ => super::unknown_subcommand("script", &args[1]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha1_is_redis_s() {
        // `SCRIPT LOAD "return 1"` on redis-server.
        assert_eq!(
            sha1_hex(b"return 1"),
            "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"
        );
    }

    #[test]
    fn lua_results_convert_as_redis_converts_them() {
        let vm = new_vm().unwrap();
        let eval = |src: &str| result_reply(vm.lua.load(src).eval::<Value>().unwrap());
        assert_eq!(eval("return 3.99"), Reply::Int(3));
        assert_eq!(eval("return -3.99"), Reply::Int(-3));
        assert_eq!(eval("return 'x'"), Reply::Bulk(Bytes::from_static(b"x")));
        assert_eq!(eval("return true"), Reply::Int(1));
        assert_eq!(eval("return false"), Reply::Nil);
        assert_eq!(eval("return nil"), Reply::Nil);
        assert_eq!(
            eval("return {1, 'a', {2}, nil, 5}"),
            Reply::Array(vec![
                Reply::Int(1),
                Reply::Bulk(Bytes::from_static(b"a")),
                Reply::Array(vec![Reply::Int(2)]),
            ])
        );
        assert_eq!(
            eval("return redis.status_reply('FINE')"),
            Reply::Simple("FINE".into())
        );
        assert_eq!(
            eval("return redis.error_reply('BAD x')"),
            Reply::Error("BAD x".into())
        );
        assert_eq!(
            eval("return redis.sha1hex('return 1')"),
            Reply::Bulk(Bytes::from_static(
                b"e0e1f9fabfc9d4800c877a703b823ac0578ff8db"
            ))
        );
    }

    #[test]
    fn numbers_become_arguments_as_redis_7_2_writes_them() {
        for (n, want) in [
            (3.0, "3"),
            (-2.5, "-2.5"),
            (0.1, "0.1"),
            (1e20, "1e+20"),
            (123456789012345.0, "123456789012345"),
            (1.0 / 3.0, "0.3333333333333333"),
        ] {
            assert_eq!(lua_number(n), want.as_bytes(), "{n}");
        }
    }

    #[test]
    fn globals_are_read_only_and_files_are_out_of_reach() {
        let vm = new_vm().unwrap();
        let e = vm.lua.load("x = 1").exec().unwrap_err();
        assert!(
            message(&e).contains("Attempt to modify a readonly table"),
            "{e}"
        );
        let e = vm.lua.load("return undefined_name").exec().unwrap_err();
        assert!(
            message(&e).contains("nonexistent global variable 'undefined_name'"),
            "{e}"
        );
        // An existing global cannot be replaced either (it was, and broke every later
        // script of the worker: Redis's test suite).
        for script in [
            "redis = 1",
            "cjson = nil",
            "_G.string = 1",
            "pcall = tostring",
            "KEYS = {}",
        ] {
            let e = vm.lua.load(script).exec().unwrap_err();
            assert!(
                message(&e).contains("Attempt to modify a readonly table")
                    || message(&e).contains("nonexistent global variable"),
                "{script}: {e}"
            );
        }
        let kind: String = vm.lua.load("return type(redis)").eval().unwrap();
        assert_eq!(kind, "table");
        // A script's own tables may have metatables, as in Redis; the shared ones may not.
        let v: i64 = vm
            .lua
            .load("local t = setmetatable({}, {__index = function() return 7 end}) return t.x")
            .eval()
            .unwrap();
        assert_eq!(v, 7);
        for script in [
            "setmetatable(_G, {})",
            "setmetatable(redis, {})",
            "getmetatable('').__index = {}",
        ] {
            assert!(vm.lua.load(script).exec().is_err(), "{script}");
        }
        for name in ["dofile", "load", "rawset"] {
            let e = vm.lua.load(format!("return {name}")).exec().unwrap_err();
            assert!(
                message(&e).contains("nonexistent global variable"),
                "{name}: {e}"
            );
        }
        let e = vm.lua.load("string.rep = nil").exec().unwrap_err();
        assert!(
            message(&e).contains("Attempt to modify a readonly table"),
            "{e}"
        );
        // string.dump works, and loadstring refuses what it makes (Redis's "Binary code
        // loading failed").
        let (f, why): (Value, String) = vm
            .lua
            .load("return loadstring(string.dump(function() return 1 end))")
            .eval()
            .unwrap();
        assert!(matches!(f, Value::Nil), "{f:?}");
        assert_eq!(why, "binary chunks are not loaded");
        // A precompiled chunk is refused.
        let mut vm = vm;
        let e = compiled(&mut vm, "x", b"\x1bLuaQ\x00\x01\x04").unwrap_err();
        assert!(matches!(e, Reply::Error(_)), "{e:?}");
    }
}
