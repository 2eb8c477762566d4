//! Redis 7's functions: FUNCTION LOAD | DELETE | LIST | STATS | DUMP | RESTORE | FLUSH |
//! KILL | HELP and FCALL, FCALL_RO. The libraries are the engine's
//! ([`crate::functions::Functions`]); their Lua runs on each worker's state in
//! `cmd::script`, compiled there on first use. In a cluster LOAD, DELETE, RESTORE and FLUSH
//! run on every node (the command's row), so a function is found at any key's owner.

use bytes::Bytes;
use shoal_resp::Reply;

use super::script::{self, Target};
use super::{err, is, sub_syntax, subcommand, tri, Ctx};
use crate::functions::{self, flag, Library, Policy};

const FUNCTION_HELP: &[&str] = &[
    "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "LOAD [REPLACE] <FUNCTION CODE>",
    "    Create a new library with the given library name and code.",
    "DELETE <LIBRARY NAME>",
    "    Delete the given library.",
    "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
    "    Return general information on all the libraries:",
    "    * Library name",
    "    * The engine used to run the Library",
    "    * Library description",
    "    * Functions list",
    "    * Library code (if WITHCODE is given)",
    "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
    "STATS",
    "    Return information about the current function running:",
    "    * Function name",
    "    * Command used to run the function",
    "    * Duration in MS that the function is running",
    "    If no function is running, return nil",
    "    In addition, returns a list of available engines.",
    "KILL",
    "    Kill the current running function.",
    "FLUSH [ASYNC|SYNC]",
    "    Delete all the libraries.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the libraries.",
    "    * SYNC: Synchronously flush the libraries.",
    "DUMP",
    "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
    "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
    "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
    "    control how to handle existing libraries (default APPEND):",
    "    * FLUSH: delete all existing libraries.",
    "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
    "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
    "      libraries with the new libraries (notice that even on this option there is a chance of failure",
    "      in case of functions name collision with another library).",
    "HELP",
    "    Print this help.",
];

/// The subcommands and their arities (Redis 7.2's).
const SUBCOMMANDS: &[(&str, i32)] = &[
    ("load", -3),
    ("delete", 3),
    ("list", -2),
    ("stats", 2),
    ("kill", 2),
    ("flush", -2),
    ("dump", 2),
    ("restore", -3),
    ("help", 2),
];

/// FUNCTION <subcommand> ...
pub fn function(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let sub = tri!(subcommand("function", args, SUBCOMMANDS));
    let functions = &ctx.engine.functions;
    match &sub[..] {
        b"load" => load(ctx, args),
        b"delete" => {
            if functions.delete(&String::from_utf8_lossy(&args[2])) {
                Reply::ok()
            } else {
                err("ERR Library not found")
            }
        }
        b"list" => list(ctx, args),
        b"stats" => {
            // A busy EVAL (not a function): Redis answers BUSY (`functionStatsCommand`).
            if ctx.engine.running.busy_reply() == Some(crate::busy::BUSY_EVAL) {
                return err(crate::busy::BUSY_EVAL);
            }
            let (libraries, count) = functions.counts();
            let lua = Reply::Map(vec![
                (Reply::bulk("libraries_count"), Reply::Int(libraries as i64)),
                (Reply::bulk("functions_count"), Reply::Int(count as i64)),
            ]);
            // The script running now: seen only once it is busy (it keeps the others out
            // until then, FUNCTION STATS included).
            let running = match ctx.engine.running.about() {
                None => Reply::Nil,
                Some((name, command, ms)) => Reply::Map(vec![
                    (Reply::bulk("name"), Reply::bulk(name)),
                    (
                        Reply::bulk("command"),
                        Reply::Array(command.into_iter().map(Reply::Bulk).collect()),
                    ),
                    (Reply::bulk("duration_ms"), Reply::Int(ms as i64)),
                ]),
            };
            Reply::Map(vec![
                (Reply::bulk("running_script"), running),
                (
                    Reply::bulk("engines"),
                    Reply::Map(vec![(Reply::bulk("LUA"), lua)]),
                ),
            ])
        }
        b"kill" => match ctx.engine.running.kill(true) {
            Ok(()) => Reply::ok(),
            Err(e) => err(e),
        },
        b"flush" => {
            if args.len() > 3 {
                return sub_syntax("FUNCTION", &args[1]);
            }
            if args.len() == 3 && !is(&args[2], "ASYNC") && !is(&args[2], "SYNC") {
                return err("ERR FUNCTION FLUSH only supports SYNC|ASYNC option");
            }
            functions.flush();
            Reply::ok()
        }
        b"dump" => {
            let libraries = functions.libraries();
            let payload = crate::rdb::dump_functions(libraries.iter().map(|l| &l.code[..]));
            Reply::Bulk(Bytes::from(payload))
        }
        b"restore" => restore(ctx, args),
        _ => super::conn::help_reply(FUNCTION_HELP),
    }
}

/// FUNCTION LOAD [REPLACE] code.
fn load(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let mut replace = false;
    let code = &args[args.len() - 1];
    for opt in &args[2..args.len() - 1] {
        if !is(opt, "REPLACE") {
            return Reply::error(format!(
                "ERR Unknown option given: {}",
                String::from_utf8_lossy(opt)
            ));
        }
        replace = true;
    }
    let functions = &ctx.engine.functions;
    let policy = if replace {
        Policy::Replace
    } else {
        Policy::Append
    };
    let library = tri!(create(functions, code, |name| {
        if !replace && functions.exists(name) {
            return Err(Reply::error(format!("ERR Library '{name}' already exists")));
        }
        Ok(())
    }));
    let (name, id) = (library.name.clone(), library.id);
    match functions.join(vec![library], policy, true) {
        Ok(()) => Reply::Bulk(Bytes::from(name)),
        Err(e) => {
            script::forget_library(id);
            Reply::error(e)
        }
    }
}

/// A library from its code (Redis's `functionsCreateWithLibraryCtx`): its metadata and
/// name checked, `check` passed (the library's name), its code run on this worker to
/// register its functions.
fn create(
    functions: &functions::Functions,
    code: &[u8],
    check: impl FnOnce(&str) -> Result<(), Reply>,
) -> Result<Library, Reply> {
    let meta = functions::metadata(code).map_err(Reply::error)?;
    if !functions::valid_name(meta.name.as_bytes()) {
        return Err(err("ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"));
    }
    if !meta.engine.eq_ignore_ascii_case("lua") {
        return Err(Reply::error(format!(
            "ERR Engine '{}' not found",
            meta.engine
        )));
    }
    check(&meta.name)?;
    let id = functions.next_id();
    let (registered, heap) = script::load_library(functions, id, &code[meta.body_at..])?;
    Ok(Library {
        id,
        name: meta.name,
        code: Bytes::copy_from_slice(code),
        functions: registered,
        heap,
    })
}

/// FUNCTION LIST [LIBRARYNAME pattern] [WITHCODE].
fn list(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let (mut with_code, mut pattern) = (false, None);
    let mut i = 2;
    while i < args.len() {
        if !with_code && is(&args[i], "WITHCODE") {
            with_code = true;
        } else if pattern.is_none() && is(&args[i], "LIBRARYNAME") {
            let Some(p) = args.get(i + 1) else {
                return err("ERR library name argument was not given");
            };
            pattern = Some(p);
            i += 1;
        } else {
            return Reply::error(format!(
                "ERR Unknown argument {}",
                String::from_utf8_lossy(&args[i])
            ));
        }
        i += 1;
    }
    let libraries = ctx.engine.functions.libraries();
    let mut out = Vec::new();
    for lib in libraries {
        if pattern.is_some_and(|p| !shoal_store::glob_match(p, lib.name.as_bytes(), true)) {
            continue;
        }
        let described = lib
            .functions
            .iter()
            .map(|f| {
                let flags = flag::NAMES
                    .iter()
                    .filter(|(bit, _)| f.flags & bit != 0)
                    .map(|(_, n)| Reply::Simple((*n).into()))
                    .collect();
                Reply::Map(vec![
                    (Reply::bulk("name"), Reply::bulk(f.name.clone())),
                    (
                        Reply::bulk("description"),
                        f.description.clone().map_or(Reply::Nil, Reply::Bulk),
                    ),
                    (Reply::bulk("flags"), Reply::Set(flags)),
                ])
            })
            .collect();
        let mut fields = vec![
            (Reply::bulk("library_name"), Reply::bulk(lib.name.clone())),
            (Reply::bulk("engine"), Reply::bulk("LUA")),
            (Reply::bulk("functions"), Reply::Array(described)),
        ];
        if with_code {
            fields.push((Reply::bulk("library_code"), Reply::Bulk(lib.code.clone())));
        }
        out.push(Reply::Map(fields));
    }
    Reply::Array(out)
}

/// FUNCTION RESTORE payload [FLUSH | APPEND | REPLACE].
fn restore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    if args.len() > 4 {
        return sub_syntax("FUNCTION", &args[1]);
    }
    let policy =
        match args.get(3) {
            None => Policy::Append,
            Some(p) if is(p, "APPEND") => Policy::Append,
            Some(p) if is(p, "REPLACE") => Policy::Replace,
            Some(p) if is(p, "FLUSH") => Policy::Flush,
            Some(_) => return err(
                "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.",
            ),
        };
    let libraries = tri!(compile_payload(ctx, &args[2]));
    let ids: Vec<u64> = libraries.iter().map(|l| l.id).collect();
    match ctx.engine.functions.join(libraries, policy, false) {
        Ok(()) => Reply::ok(),
        Err(e) => {
            ids.into_iter().for_each(script::forget_library);
            Reply::error(e)
        }
    }
}

/// The libraries of a FUNCTION DUMP payload, compiled on this thread.
fn compile_payload(ctx: &mut Ctx<'_>, payload: &[u8]) -> Result<Vec<Library>, Reply> {
    let max = ctx
        .engine
        .with_settings(|s| usize::try_from(s.proto_max_bulk_len.0).unwrap_or(usize::MAX));
    let codes = crate::rdb::restore_functions(payload, max).map_err(Reply::error)?;
    let functions = &ctx.engine.functions;
    let mut libraries: Vec<Library> = Vec::with_capacity(codes.len());
    for code in codes {
        // Two libraries of one name in the payload: the second is refused as a LOAD would.
        let created = create(functions, &code, |name| {
            if libraries.iter().any(|l| l.name == name) {
                return Err(Reply::error(format!("ERR Library '{name}' already exists")));
            }
            Ok(())
        });
        match created {
            Ok(library) => libraries.push(library),
            Err(e) => {
                // Compiled on this thread but not kept: forgotten.
                for l in &libraries {
                    script::forget_library(l.id);
                }
                return Err(e);
            }
        }
    }
    Ok(libraries)
}

/// FCALL function numkeys [key ...] [arg ...].
pub fn fcall(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    call(ctx, args, false)
}

/// FCALL_RO function numkeys [key ...] [arg ...]: only a function flagged `no-writes`.
pub fn fcall_ro(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    call(ctx, args, true)
}

fn call(ctx: &mut Ctx<'_>, args: &[Bytes], ro_command: bool) -> Reply {
    // Keys in several slots first (when numkeys reads), as Redis Cluster finds them.
    if let Ok((keys, _)) = script::keys_and_args(args, "") {
        if let Some(refusal) = script::cross_slot(ctx, &keys) {
            return refusal;
        }
    }
    let Some((lib, index)) = ctx.engine.functions.function(&args[1]) else {
        return err("ERR Function not found");
    };
    let (keys, argv) = tri!(script::keys_and_args(
        args,
        "ERR Bad number of keys provided"
    ));
    let flags = lib.functions[index].flags;
    if let Some(refusal) = script::refused(ctx, Some(flags), ro_command) {
        return refusal;
    }
    // Compiled here first if need be, not while every other client waits.
    tri!(script::prepare(ctx, &lib, index));
    let target = Target::Function { lib: &lib, index };
    let allowed = script::Allowed::from(Some(flags), ro_command);
    script::run_alone(ctx, target, args, &keys, &argv, allowed)
}

/// `function.copy` (internal): another node's copy of this node's libraries, FUNCTION
/// DUMP's payload; `LOADING` while this node is copying them itself (it has none to give
/// yet; see `cluster::libraries`).
pub fn copy(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Reply {
    let functions = &ctx.engine.functions;
    if functions.copying() {
        return err("LOADING this node is copying its function libraries");
    }
    let libraries = functions.libraries();
    Reply::Bulk(Bytes::from(crate::rdb::dump_functions(
        libraries.iter().map(|l| &l.code[..]),
    )))
}

/// `function.adopt payload` (internal): ends this node's copy of another member's
/// libraries (`cluster::libraries`) with that member's FUNCTION DUMP payload; what changed
/// here since the copy began wins ([`crate::functions::Functions::adopt`]). The number of
/// libraries adopted.
pub fn adopt(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let libraries = tri!(compile_payload(ctx, &args[1]));
    let n = libraries.len();
    let left = ctx.engine.functions.adopt(libraries);
    let adopted = n - left.len();
    left.into_iter().for_each(script::forget_library);
    Reply::Int(adopted as i64)
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_subcommand_has_its_row() {
        let spec = super::super::lookup(b"function").expect("FUNCTION's row");
        let subs: Vec<&str> = super::SUBCOMMANDS.iter().map(|(n, _)| *n).collect();
        assert_eq!(spec.subcommands, &subs[..]);
    }
}
