//! The function libraries a node has loaded (Redis 7's FUNCTION LOAD): each library's code
//! and what it registered, and the pure parts of Redis's rules: a library's `#!lua
//! name=<library>` line, the names a library and a function may take, script flags (a
//! function's, and an EVAL script's `#!lua flags=...` line) and how libraries join
//! (`FUNCTION LOAD [REPLACE]`, `FUNCTION RESTORE [APPEND | REPLACE | FLUSH]`). Compiling and
//! running the Lua is `cmd::script`'s; the FUNCTION commands are `cmd::function`'s.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use shoal_resp::inline::split_args;

use crate::copying::ChangedSince;

/// The most library code a node keeps, all libraries together.
const LIBRARIES_MAX_BYTES: usize = 64 << 20;
/// The most Lua heap the libraries may keep once loaded, all together, on each worker
/// thread (every worker compiles every library it runs; half of a worker's Lua heap).
pub const LIBRARIES_MAX_HEAP: usize = 32 << 20;

/// Script flags (Redis's `scripts_flags_def`, in its order, which FUNCTION LIST keeps).
pub mod flag {
    pub const NO_WRITES: u8 = 1;
    pub const ALLOW_OOM: u8 = 1 << 1;
    pub const ALLOW_STALE: u8 = 1 << 2;
    pub const NO_CLUSTER: u8 = 1 << 3;
    pub const ALLOW_CROSS_SLOT: u8 = 1 << 4;
    pub const NAMES: [(u8, &str); 5] = [
        (NO_WRITES, "no-writes"),
        (ALLOW_OOM, "allow-oom"),
        (ALLOW_STALE, "allow-stale"),
        (NO_CLUSTER, "no-cluster"),
        (ALLOW_CROSS_SLOT, "allow-cross-slot-keys"),
    ];

    /// The flag named `name`, compared as Redis compares it (`strcasecmp` for a function's
    /// flags, `strcmp` for a script's shebang).
    pub fn named(name: &[u8], any_case: bool) -> Option<u8> {
        NAMES
            .iter()
            .find(|(_, n)| {
                if any_case {
                    n.as_bytes().eq_ignore_ascii_case(name)
                } else {
                    n.as_bytes() == name
                }
            })
            .map(|&(bit, _)| bit)
    }
}

/// One function a library registered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Function {
    pub name: String,
    pub description: Option<Bytes>,
    pub flags: u8,
}

/// A loaded library. `id` tells one load from another (a worker's compiled copy is kept by
/// it), even of the same code.
#[derive(Debug)]
pub struct Library {
    pub id: u64,
    pub name: String,
    /// The code as loaded, its `#!lua` line included (FUNCTION LIST WITHCODE, DUMP).
    pub code: Bytes,
    pub functions: Vec<Function>,
    /// The Lua heap the library kept once loaded (measured where it was loaded).
    pub heap: usize,
}

/// A library's first line, `#!<engine> name=<name>`: the engine, the name, and where the
/// code the engine runs starts (at the line's newline, so line numbers stay the code's).
#[derive(Debug, PartialEq, Eq)]
pub struct Metadata {
    pub engine: String,
    pub name: String,
    pub body_at: usize,
}

/// Reads a library's metadata line as Redis's `functionExtractLibMetaData` does (its errors
/// as the replies give them).
pub fn metadata(code: &[u8]) -> Result<Metadata, String> {
    if !code.starts_with(b"#!") {
        return Err("ERR Missing library metadata".into());
    }
    let Some(end) = code.iter().position(|&b| b == b'\n') else {
        return Err("ERR Invalid library metadata".into());
    };
    let parts = split_args(&code[..end]).ok_or("ERR Invalid library metadata")?;
    let Some((engine, options)) = parts.split_first() else {
        return Err("ERR Invalid library metadata".into());
    };
    let mut name = None;
    for part in options {
        match part.get(..5) {
            Some(p) if p.eq_ignore_ascii_case(b"name=") => {
                if name.is_some() {
                    return Err(
                        "ERR Invalid metadata value, name argument was given multiple times".into(),
                    );
                }
                name = Some(String::from_utf8_lossy(&part[5..]).into_owned());
            }
            _ => {
                return Err(format!(
                    "ERR Invalid metadata value given: {}",
                    String::from_utf8_lossy(part)
                ))
            }
        }
    }
    let name = name.ok_or("ERR Library name was not given")?;
    Ok(Metadata {
        engine: String::from_utf8_lossy(&engine[2..]).into_owned(),
        name,
        body_at: end,
    })
}

/// True for a name a library or a function may have: letters, digits and `_`, at least one.
pub fn valid_name(name: &[u8]) -> bool {
    !name.is_empty() && name.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'_')
}

/// An EVAL script's flags from its `#!lua [flags=a,b]` line (Redis's
/// `evalExtractShebangFlags`): `None` without one (Redis's compatibility mode: no flag
/// checked before the script runs), and the line's length, which the compiled code leaves
/// out (from its newline on, so line numbers stay the script's).
pub fn shebang(body: &[u8]) -> Result<(Option<u8>, usize), String> {
    if !body.starts_with(b"#!") {
        return Ok((None, 0));
    }
    let Some(end) = body.iter().position(|&b| b == b'\n') else {
        return Err("ERR Invalid script shebang".into());
    };
    let parts = match split_args(&body[..end]) {
        Some(p) if !p.is_empty() => p,
        _ => return Err("ERR Invalid engine in script shebang".into()),
    };
    if parts[0] != b"#!lua"[..] {
        return Err(format!(
            "ERR Unexpected engine in script shebang: {}",
            String::from_utf8_lossy(&parts[0])
        ));
    }
    let mut flags = 0;
    for part in &parts[1..] {
        let Some(list) = part.strip_prefix(b"flags=") else {
            return Err(format!(
                "ERR Unknown lua shebang option: {}",
                String::from_utf8_lossy(part)
            ));
        };
        if list.is_empty() {
            continue;
        }
        for name in list.split(|&b| b == b',') {
            flags |= flag::named(name, false).ok_or_else(|| {
                format!(
                    "ERR Unexpected flag in script shebang: {}",
                    String::from_utf8_lossy(name)
                )
            })?;
        }
    }
    Ok((Some(flags), end))
}

/// How FUNCTION RESTORE treats libraries that exist already.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// Fail on a library that exists (also FUNCTION LOAD without REPLACE).
    Append,
    /// Replace a library of the same name.
    Replace,
    /// Drop every library first.
    Flush,
}

/// The libraries loaded, and an index of their functions by name.
#[derive(Default)]
pub struct Functions {
    registry: Mutex<Registry>,
    /// Changes with every change of the libraries (a worker's compiled copies are checked
    /// against it).
    generation: AtomicU64,
    next_id: AtomicU64,
    /// Set while a cluster node that started copies the libraries of another member: it
    /// has none of its own to give yet (`cluster::libraries`). Mirrors `Registry::copy`
    /// (changed under the registry's lock) for a read without the lock.
    copying: AtomicBool,
}

#[derive(Default)]
struct Registry {
    libraries: BTreeMap<String, Arc<Library>>,
    /// By lower-case name: function names are matched ignoring case, as in Redis.
    functions: HashMap<String, (Arc<Library>, usize)>,
    bytes: usize,
    heap: usize,
    /// Set while this node copies another member's libraries (see [`Copying`]).
    /// Libraries loaded, replaced or deleted (or all flushed) since the copy began: a LOAD
    /// or DELETE through another node may reach this node before or after the copy's
    /// snapshot was taken.
    copy: Option<ChangedSince<String>>,
}

impl Registry {
    /// Drops every library (the copy's state stays).
    fn clear(&mut self) {
        let copy = self.copy.take();
        *self = Registry {
            copy,
            ..Registry::default()
        };
    }

    /// Notes, while copying, that `names` changed here (or every library, `all`).
    fn note(&mut self, names: impl IntoIterator<Item = String>, all: bool) {
        if let Some(c) = &mut self.copy {
            c.note(names, all);
        }
    }

    fn unlink(&mut self, name: &str) -> Option<Arc<Library>> {
        let lib = self.libraries.remove(name)?;
        for f in &lib.functions {
            self.functions.remove(&f.name.to_ascii_lowercase());
        }
        self.bytes -= lib.code.len();
        self.heap -= lib.heap;
        Some(lib)
    }

    fn link(&mut self, lib: Arc<Library>) {
        for (i, f) in lib.functions.iter().enumerate() {
            self.functions
                .insert(f.name.to_ascii_lowercase(), (lib.clone(), i));
        }
        self.bytes += lib.code.len();
        self.heap += lib.heap;
        self.libraries.insert(lib.name.clone(), lib);
    }

    /// Adds `new` by `policy` (Redis's `libraryJoin`), all or nothing: `Err` leaves the
    /// libraries as they were. `quoted` words the exists error as FUNCTION LOAD does.
    fn join(&mut self, new: Vec<Library>, policy: Policy, quoted: bool) -> Result<(), String> {
        let mut removed = Vec::new();
        if policy == Policy::Flush {
            removed.extend(self.libraries.values().cloned());
            self.clear();
        }
        let undo = |reg: &mut Registry, removed: Vec<Arc<Library>>, e: String| {
            if policy == Policy::Flush {
                reg.clear();
            }
            for lib in removed {
                reg.link(lib);
            }
            Err(e)
        };
        for lib in &new {
            if self.libraries.contains_key(&lib.name) {
                if policy == Policy::Append {
                    let e = if quoted {
                        format!("ERR Library '{}' already exists", lib.name)
                    } else {
                        format!("ERR Library {} already exists", lib.name)
                    };
                    return undo(self, removed, e);
                }
                removed.extend(self.unlink(&lib.name));
            }
        }
        let mut names = std::collections::HashSet::new();
        for f in new.iter().flat_map(|l| &l.functions) {
            let key = f.name.to_ascii_lowercase();
            if self.functions.contains_key(&key) || !names.insert(key) {
                let e = format!("ERR Function {} already exists", f.name);
                return undo(self, removed, e);
            }
        }
        let bytes: usize = new.iter().map(|l| l.code.len()).sum();
        if self.bytes + bytes > LIBRARIES_MAX_BYTES {
            let e = "ERR the function libraries take their most already (64 MB)".to_string();
            return undo(self, removed, e);
        }
        let heap: usize = new.iter().map(|l| l.heap).sum();
        if self.heap + heap > LIBRARIES_MAX_HEAP {
            let e = format!(
                "ERR the function libraries would keep more than {} MB of Lua memory",
                LIBRARIES_MAX_HEAP >> 20
            );
            return undo(self, removed, e);
        }
        self.note(new.iter().map(|l| l.name.clone()), policy == Policy::Flush);
        for lib in new {
            self.link(Arc::new(lib));
        }
        Ok(())
    }
}

impl Functions {
    fn lock(&self) -> std::sync::MutexGuard<'_, Registry> {
        self.registry.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// After a change of the libraries (LOAD, RESTORE, DELETE, FLUSH, also by the fan-out
    /// of another node's, or a copy): a worker's compiled copies are stale.
    fn changed(&self) {
        self.generation.fetch_add(1, Ordering::Release);
    }

    /// A number for a new library's `id`.
    pub fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// The function `name` and the library it is in (with its index there).
    pub fn function(&self, name: &[u8]) -> Option<(Arc<Library>, usize)> {
        let name = std::str::from_utf8(name).ok()?.to_ascii_lowercase();
        self.lock().functions.get(&name).cloned()
    }

    /// Starts (or ends, without a copy) this node's copy of another member's libraries;
    /// see [`Functions::copying`]'s field and [`Functions::adopt`].
    pub fn set_copying(&self, copying: bool) {
        let mut reg = self.lock();
        reg.copy = copying.then(ChangedSince::default);
        self.copying.store(copying, Ordering::Release);
    }

    /// Ends this node's copy with `copied`, another member's libraries (from before or
    /// after changes that reached this node meanwhile): those of them deleted, loaded or
    /// flushed here since the copy began are left out, and so are those whose functions
    /// clash with this node's (all of them when the copy was over already). The ids of
    /// those left out.
    pub fn adopt(&self, copied: Vec<Library>) -> Vec<u64> {
        let mut reg = self.lock();
        let Some(copy) = reg.copy.take() else {
            return copied.iter().map(|l| l.id).collect();
        };
        self.copying.store(false, Ordering::Release);
        let mut left = Vec::new();
        for lib in copied {
            let id = lib.id;
            if !copy.untouched(&lib.name) || reg.join(vec![lib], Policy::Append, false).is_err() {
                left.push(id);
            }
        }
        self.changed();
        left
    }

    pub fn copying(&self) -> bool {
        self.copying.load(Ordering::Acquire)
    }

    pub fn exists(&self, library: &str) -> bool {
        self.lock().libraries.contains_key(library)
    }

    /// The libraries, by name.
    pub fn libraries(&self) -> Vec<Arc<Library>> {
        self.lock().libraries.values().cloned().collect()
    }

    /// True if a library of this `id` is loaded.
    pub fn has_id(&self, id: u64) -> bool {
        self.lock().libraries.values().any(|l| l.id == id)
    }

    /// Adds libraries (FUNCTION LOAD: one, `quoted`; FUNCTION RESTORE: a payload's).
    pub fn join(&self, new: Vec<Library>, policy: Policy, quoted: bool) -> Result<(), String> {
        let mut reg = self.lock();
        let r = reg.join(new, policy, quoted);
        self.changed();
        r
    }

    /// FUNCTION DELETE: false if there is no such library.
    pub fn delete(&self, library: &str) -> bool {
        let mut reg = self.lock();
        let found = reg.unlink(library).is_some();
        // Noted even when not here yet: the copy must not bring it.
        reg.note([library.to_string()], false);
        self.changed();
        found
    }

    pub fn flush(&self) {
        let mut reg = self.lock();
        reg.clear();
        reg.note([], true);
        self.changed();
    }

    /// The number of libraries and of functions.
    pub fn counts(&self) -> (usize, usize) {
        let reg = self.lock();
        (reg.libraries.len(), reg.functions.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lib(name: &str, functions: &[&str]) -> Library {
        Library {
            id: 0,
            name: name.into(),
            code: Bytes::from(format!("#!lua name={name}\n")),
            heap: 1 << 20,
            functions: functions
                .iter()
                .map(|f| Function {
                    name: (*f).into(),
                    description: None,
                    flags: 0,
                })
                .collect(),
        }
    }

    #[test]
    fn a_copy_leaves_out_what_changed_here_since_it_began() {
        let f = Functions::default();
        let names = |f: &Functions| {
            let mut n: Vec<String> = f.libraries().iter().map(|l| l.name.clone()).collect();
            n.sort();
            n
        };
        // Loaded here (by another node's fan-out) while copying; one deleted here that the
        // copy, taken before, still has; one whose function clashes with a local one.
        f.set_copying(true);
        assert!(f.copying());
        f.join(vec![lib("new", &["n"])], Policy::Append, true)
            .unwrap();
        assert!(!f.delete("gone"));
        let left = f.adopt(vec![
            lib("old", &["o"]),
            lib("new", &["n2"]),
            lib("gone", &["g"]),
            lib("clash", &["n"]),
        ]);
        assert_eq!(left.len(), 3);
        assert!(!f.copying());
        assert_eq!(names(&f), ["new", "old"]);
        assert!(f.function(b"n").is_some() && f.function(b"n2").is_none());
        // Over already: a late copy adds nothing.
        assert_eq!(f.adopt(vec![lib("late", &["l"])]).len(), 1);
        assert_eq!(names(&f), ["new", "old"]);
        // A flush while copying: the copy brings nothing, what came after stays.
        let f = Functions::default();
        f.set_copying(true);
        f.flush();
        f.join(vec![lib("after", &["a"])], Policy::Append, true)
            .unwrap();
        assert_eq!(f.adopt(vec![lib("before", &["b"])]).len(), 1);
        assert_eq!(names(&f), ["after"]);
        // A failed RESTORE FLUSH keeps the libraries and the copy's state.
        let f = Functions::default();
        f.join(vec![lib("a", &["x"])], Policy::Append, true)
            .unwrap();
        f.set_copying(true);
        let clash = vec![lib("b", &["y"]), lib("c", &["y"])];
        assert!(f.join(clash, Policy::Flush, false).is_err());
        assert_eq!(names(&f), ["a"]);
        assert!(f.adopt(vec![lib("d", &["z"])]).is_empty());
        assert_eq!(names(&f), ["a", "d"]);
    }

    #[test]
    fn metadata_is_read_as_redis_reads_it() {
        let m = metadata(b"#!lua name=mylib\nreturn 1").unwrap();
        assert_eq!(
            (m.engine.as_str(), m.name.as_str(), m.body_at),
            ("lua", "mylib", 16)
        );
        let m = metadata(b"#!LUA  NAME='my lib' \nx").unwrap();
        assert_eq!((m.engine.as_str(), m.name.as_str()), ("LUA", "my lib"));
        for (code, e) in [
            (&b"return 1"[..], "ERR Missing library metadata"),
            (b"#!lua name=x", "ERR Invalid library metadata"),
            (b"#!lua name=\"x\n", "ERR Invalid library metadata"),
            (
                b"#!lua name=a name=b\n",
                "ERR Invalid metadata value, name argument was given multiple times",
            ),
            (
                b"#!lua foo=bar\n",
                "ERR Invalid metadata value given: foo=bar",
            ),
            (b"#!lua\n", "ERR Library name was not given"),
        ] {
            assert_eq!(
                metadata(code).unwrap_err(),
                e,
                "{}",
                String::from_utf8_lossy(code)
            );
        }
        assert!(valid_name(b"a_B9"));
        assert!(!valid_name(b""));
        assert!(!valid_name(b"a-b"));
    }

    #[test]
    fn shebangs_give_redis_s_flags_and_errors() {
        assert_eq!(shebang(b"return 1"), Ok((None, 0)));
        assert_eq!(shebang(b"#!lua\nreturn 1"), Ok((Some(0), 5)));
        assert_eq!(
            shebang(b"#!lua flags=no-writes,allow-oom\nx"),
            Ok((Some(flag::NO_WRITES | flag::ALLOW_OOM), 31))
        );
        assert_eq!(shebang(b"#!lua flags=\nx"), Ok((Some(0), 12)));
        for (body, e) in [
            (&b"#!lua"[..], "ERR Invalid script shebang"),
            (
                b"#!luax\n",
                "ERR Unexpected engine in script shebang: #!luax",
            ),
            (
                b"#!lua flags=bogus\n",
                "ERR Unexpected flag in script shebang: bogus",
            ),
            (
                b"#!lua flags=NO-WRITES\n",
                "ERR Unexpected flag in script shebang: NO-WRITES",
            ),
            (b"#!lua name=x\n", "ERR Unknown lua shebang option: name=x"),
        ] {
            assert_eq!(shebang(body).unwrap_err(), e);
        }
        assert_eq!(flag::named(b"No-Writes", true), Some(flag::NO_WRITES));
        assert_eq!(flag::named(b"No-Writes", false), None);
    }

    #[test]
    fn libraries_join_as_redis_s_do() {
        let f = Functions::default();
        f.join(vec![lib("a", &["fa"])], Policy::Append, true)
            .unwrap();
        assert_eq!(
            f.join(vec![lib("a", &["fx"])], Policy::Append, true),
            Err("ERR Library 'a' already exists".into())
        );
        assert_eq!(
            f.join(vec![lib("b", &["fa"])], Policy::Append, true),
            Err("ERR Function fa already exists".into())
        );
        // A failed replace leaves the old library in place.
        f.join(vec![lib("b", &["fb"])], Policy::Append, true)
            .unwrap();
        assert_eq!(
            f.join(vec![lib("a", &["fb"])], Policy::Replace, true),
            Err("ERR Function fb already exists".into())
        );
        assert_eq!(f.function(b"fa").unwrap().0.name, "a");
        // Function names match ignoring case, as in Redis.
        assert_eq!(f.function(b"FA").unwrap().0.name, "a");
        assert_eq!(
            f.join(vec![lib("x", &["Fb"])], Policy::Append, true),
            Err("ERR Function Fb already exists".into())
        );
        f.join(vec![lib("a", &["fa2"])], Policy::Replace, true)
            .unwrap();
        assert!(f.function(b"fa").is_none());
        assert_eq!(f.counts(), (2, 2));
        assert_eq!(
            f.join(vec![lib("b", &[])], Policy::Append, false),
            Err("ERR Library b already exists".into())
        );
        // Two libraries of one payload may not share a function.
        assert_eq!(
            f.join(
                vec![lib("c", &["x"]), lib("d", &["x"])],
                Policy::Append,
                false
            ),
            Err("ERR Function x already exists".into())
        );
        // A failed flush keeps what there was.
        assert_eq!(
            f.join(
                vec![lib("c", &["x"]), lib("d", &["x"])],
                Policy::Flush,
                false
            ),
            Err("ERR Function x already exists".into())
        );
        assert_eq!(f.counts(), (2, 2));
        f.join(vec![lib("c", &["x"])], Policy::Flush, false)
            .unwrap();
        assert_eq!(f.counts(), (1, 1));
        assert!(f.delete("c"));
        assert!(!f.delete("c"));
        assert_eq!(f.counts(), (0, 0));
        // What the libraries keep of each worker's Lua heap is bounded (1 MB each here).
        let many: Vec<Library> = (0..32)
            .map(|i| lib(&format!("l{i}"), &[&format!("f{i}")]))
            .collect();
        f.join(many, Policy::Append, true).unwrap();
        assert_eq!(
            f.join(vec![lib("one_more", &["g"])], Policy::Append, true),
            Err("ERR the function libraries would keep more than 32 MB of Lua memory".into())
        );
        f.join(vec![lib("l0", &["f0"])], Policy::Replace, true)
            .unwrap();
    }
}
