//! The routing decision, without I/O: given the placement, this node, whether it is taking
//! requests, and a command's row and arguments, where the command runs. The router carries
//! the [`Plan`] out; the decision is unit-tested here against every row of the command table.
//! On the cluster-client port [`cluster_rule`] comes first (Redis Cluster's MOVED, CROSSSLOT,
//! READONLY reads and node-local listings), unit-tested on representative commands.

use bytes::Bytes;
use shoal_store::key_slot;

use shoal_engine::cmd::{self, flag, Access, CommandSpec, Gather, Merge, Route};

/// A key's copies (member indices, owner first): kept inline, as a forwarded command's
/// copies and slots were two allocations of their own.
pub type Copies = smallvec::SmallVec<[u16; 4]>;

/// The hash slots of a command's keys, inline as [`Copies`].
pub type Slots = smallvec::SmallVec<[u16; 4]>;

/// Where one request runs: the router's decision, made by [`plan`] without any I/O.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Plan {
    /// On the local store, nothing to replicate (keyless, node-local state).
    Here,
    /// This node owns every key: run here, then replicate.
    Owned,
    /// To the key's copies, owner first (the next copy when the owner cannot be reached and
    /// `access` allows it: `router::on_failure`).
    Forward { owners: Copies, access: Access },
    /// Split by owner, the parts run in parallel and merged.
    Split(Merge),
    /// To every node, the answers gathered (DBSIZE, KEYS, SCAN, ...).
    AllNodes,
    /// INFO with its keyspace section: gathered from every node.
    InfoKeyspace,
    /// EXEC: decided per queued command when it runs.
    Exec,
    /// The node is still looking for its cluster.
    TryAgain,
    /// The node is cut off from the majority of its cluster.
    ClusterDown,
    /// A command that must be atomic names keys of different owners.
    CrossSlot,
    /// WATCH of a key this node does not own: what each key holds is read where it is
    /// owned, and EXEC compares it there.
    WatchElsewhere,
}

/// Whether a node takes commands on keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Standing {
    /// It serves its part of the keyspace.
    Serving,
    /// It is still looking for its cluster: keys answer TRYAGAIN.
    Looking,
    /// It reaches no majority of the members it last settled with
    /// (`handoff::cut_off`): the others may serve its keys without it, so keys answer
    /// CLUSTERDOWN, as a Redis Cluster node that lost the majority does.
    CutOff,
}

/// Decides where `args` (a command of row `spec`, arity already checked) runs on node `me`
/// under `placement`, standing as `standing`.
pub fn plan(
    placement: &shoal_ring::Placement,
    me: u16,
    standing: Standing,
    spec: &CommandSpec,
    args: &[Bytes],
) -> Plan {
    // A CONFIG SET of a setting every member shares goes to them while this node serves;
    // the rest of CONFIG, and any CONFIG while it does not, is this node's.
    if let Route::AllNodes(Gather::Setting(names)) = spec.route {
        return if standing == Standing::Serving && cmd::sets_any(names, args) {
            Plan::AllNodes
        } else {
            Plan::Here
        };
    }
    // Pub/Sub reaches whoever is reachable, whatever the node's standing.
    let pubsub = matches!(
        spec.route,
        Route::AllNodes(Gather::Publish | Gather::PubSub)
    );
    if standing != Standing::Serving
        && !pubsub
        && !matches!(spec.route, Route::Here | Route::Info | Route::Cluster)
    {
        return match standing {
            Standing::CutOff => Plan::ClusterDown,
            _ => Plan::TryAgain,
        };
    }
    match spec.route {
        // DEBUG OBJECT and DIGEST-VALUE of one key look at it where it is, as on one node.
        Route::Here => match debug_key(spec, args).map(|k| placement.owners(key_slot(k))) {
            Some(owners) if owners[0] != me => Plan::Forward {
                owners: Copies::from_slice(owners),
                access: Access::Read,
            },
            _ => Plan::Here,
        },
        Route::Split(merge) => Plan::Split(merge),
        // PUBSUB HELP and the errors are answered here.
        Route::AllNodes(Gather::PubSub) if !cmd::pubsub_gathers(args) => Plan::Here,
        // SCRIPT EXISTS, FUNCTION LIST, ... and the errors: this node's.
        Route::AllNodes(Gather::Everywhere(subs)) if !cmd::names_subcommand(subs, args) => {
            Plan::Here
        }
        Route::AllNodes(_) => Plan::AllNodes,
        Route::Exec => Plan::Exec,
        Route::Info if cmd::info_wants_keyspace(args) => Plan::InfoKeyspace,
        Route::Info => Plan::Here,
        Route::Cluster => {
            // COUNTKEYSINSLOT and GETKEYSINSLOT look at the slot's owner; the rest
            // describes this node.
            let at_owner = (args.len() == 3 && args[1].eq_ignore_ascii_case(b"countkeysinslot"))
                || (args.len() == 4 && args[1].eq_ignore_ascii_case(b"getkeysinslot"));
            let slot = at_owner.then(|| cmd::parse_slot(&args[2])).flatten();
            match slot.map(|slot| placement.owners(slot)) {
                Some(owners) if owners[0] != me => Plan::Forward {
                    owners: Copies::from_slice(owners),
                    access: Access::Read,
                },
                _ => Plan::Here,
            }
        }
        Route::Owner | Route::Watch => {
            let positions = spec.key_positions(args);
            let Some(first) = positions.clone().next() else {
                return Plan::Here;
            };
            // One slot reckoned per key: the first key's decides, the others only compare.
            let slot = key_slot(&args[first]);
            let owners = placement.owners(slot);
            let same_owner = |key: &[u8]| {
                let other = key_slot(key);
                other == slot || placement.owners(other)[0] == owners[0]
            };
            // A STORE destination outside the key specification (SORT, GEORADIUS) too.
            let same = positions.skip(1).all(|p| same_owner(&args[p]))
                && cmd::db::store_key(spec, args).is_none_or(|k| same_owner(k));
            match (same, owners[0] == me) {
                (true, true) => Plan::Owned,
                _ if spec.route == Route::Watch => Plan::WatchElsewhere,
                (true, false) => Plan::Forward {
                    owners: Copies::from_slice(owners),
                    access: cmd::access(spec, args),
                },
                (false, _) => Plan::CrossSlot,
            }
        }
    }
}

/// What Redis Cluster's rules make of a command on a cluster-client connection (Redis's
/// `getNodeByQuery`), decided before [`plan`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClusterRule {
    /// As on the plain port: [`plan`] decides.
    Route,
    /// A READONLY connection's read of a key this node holds a replica copy of: run here.
    ReadHere,
    /// Key listings (DBSIZE, KEYS, SCAN, RANDOMKEY) and INFO: over the slots this node
    /// answers for, as each Redis Cluster node answers for its own.
    Local,
    /// `-MOVED slot addr`: the slot's primary copy is on member `to`.
    Moved { slot: u16, to: u16 },
    /// `-CROSSSLOT`: the keys are in more than one slot.
    CrossSlot,
}

/// Decides [`ClusterRule`] for `args` (a command of row `spec`) on member `me`; `primary`
/// gives a slot's primary copy (the reachable owner, else the copy failover uses) and
/// `holds_copy` whether `me` is one of a slot's copies. `queued` are the commands of the
/// transaction EXEC would run (empty otherwise): they must all be in one slot.
pub fn cluster_rule(
    spec: &CommandSpec,
    args: &[Bytes],
    queued: &[Vec<Bytes>],
    me: u16,
    readonly: bool,
    primary: impl Fn(u16) -> u16,
    holds_copy: impl Fn(u16) -> bool,
) -> ClusterRule {
    // The slots of a command's keys (none for rows that name no key to route by).
    fn key_slots<'a>(spec: &CommandSpec, args: &'a [Bytes]) -> impl Iterator<Item = u16> + 'a {
        let keyed = matches!(spec.route, Route::Owner | Route::Split(_) | Route::Watch);
        spec.key_positions(args)
            .filter(move |_| keyed)
            .map(move |p| key_slot(&args[p]))
    }
    // The one slot of `slots`: `Ok(None)` without keys, `Err(())` for more than one slot.
    fn one_slot(mut slots: impl Iterator<Item = u16>) -> Result<Option<u16>, ()> {
        let Some(first) = slots.next() else {
            return Ok(None);
        };
        match slots.all(|s| s == first) {
            true => Ok(Some(first)),
            false => Err(()),
        }
    }
    let slot = match spec.route {
        // Published messages reach the whole cluster, as in Redis Cluster.
        Route::AllNodes(Gather::Publish) => return ClusterRule::Route,
        Route::AllNodes(_) if spec.flags & flag::WRITE == 0 => return ClusterRule::Local,
        Route::Info => return ClusterRule::Local,
        Route::Exec => one_slot(
            queued
                .iter()
                .filter_map(|a| cmd::lookup(&a[0]).map(|s| key_slots(s, a)))
                .flatten(),
        ),
        _ => one_slot(key_slots(spec, args)),
    };
    let slot = match slot {
        Ok(Some(slot)) => slot,
        Ok(None) => return ClusterRule::Route,
        Err(()) => return ClusterRule::CrossSlot,
    };
    let to = primary(slot);
    if to == me {
        ClusterRule::Route
    } else if readonly && !cmd::may_write(spec) && spec.route != Route::Exec && holds_copy(slot) {
        ClusterRule::ReadHere
    } else {
        ClusterRule::Moved { slot, to }
    }
}

/// Where a client's transaction can run whole on another node: when every queued command
/// is on keys (routed to their owner or split by owner, nothing node-wide or connection-wide
/// such as SELECT or FLUSHALL; PING and ECHO may come along, `flag::ANYWHERE`) and every
/// key's slot has the same copies, owned by another node: those copies and the slots.
/// `None` otherwise (it then runs here, or command by command). The keys the transaction
/// WATCHes (`watched`, as stored) are compared where it runs: they must be there too.
pub fn transaction_elsewhere<'a>(
    placement: &shoal_ring::Placement,
    me: u16,
    queue: &[Vec<Bytes>],
    watched: impl IntoIterator<Item = &'a Bytes>,
) -> Option<(Copies, Slots)> {
    let mut slots = Slots::new();
    let mut note = |key: &[u8]| {
        let slot = key_slot(key);
        if !slots.contains(&slot) {
            slots.push(slot);
        }
    };
    for args in queue {
        let spec = cmd::lookup(args.first()?)?;
        if spec.flags & flag::ANYWHERE != 0 {
            continue;
        }
        if !matches!(spec.route, Route::Owner | Route::Split(_)) {
            return None;
        }
        spec.key_positions(args).for_each(|p| note(&args[p]));
    }
    watched.into_iter().for_each(|k| note(k));
    let owners = placement.owners(*slots.first()?);
    let shared = slots.iter().all(|&s| placement.owners(s) == owners);
    (shared && owners[0] != me).then(|| (Copies::from_slice(owners), slots))
}

/// How a transaction sent whole fails over: as a read when no queued command may write
/// (another copy may answer it), else as a write.
pub fn transaction_access(queue: &[Vec<Bytes>]) -> Access {
    let writes = queue.iter().any(|a| {
        a.first()
            .and_then(|n| cmd::lookup(n))
            .is_none_or(cmd::may_write)
    });
    if writes {
        Access::Write
    } else {
        Access::Read
    }
}

/// The key of `DEBUG OBJECT <key>` or `DEBUG DIGEST-VALUE <key>` (one key): its row names no
/// key (DEBUG's subcommands are not in Redis's key specifications), so routing asks here.
fn debug_key<'a>(spec: &CommandSpec, args: &'a [Bytes]) -> Option<&'a Bytes> {
    let sub = args.get(1)?;
    let keyed = sub.eq_ignore_ascii_case(b"object") || sub.eq_ignore_ascii_case(b"digest-value");
    (spec.name == "debug" && args.len() == 3 && keyed).then(|| &args[2])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request's arguments, from a line of words.
    fn argv(line: &str) -> Vec<Bytes> {
        line.split(' ')
            .map(|w| Bytes::from(w.to_string()))
            .collect()
    }

    #[test]
    fn a_transaction_goes_whole_only_to_one_other_owner() {
        let p = three_nodes();
        let q = |cmds: &[&str]| -> Vec<Vec<Bytes>> { cmds.iter().map(|c| argv(c)).collect() };
        let (mine, other) = (tag(&p, true), tag(&p, false));
        let elsewhere = q(&[
            &format!("SET {other}a 1"),
            &format!("INCR {other}b"),
            &format!("MSET {other}c 1 {other}d 2"),
            &format!("LPUSH {other}l x"),
        ]);
        let none = || std::iter::empty::<&Bytes>();
        let (owners, slots) =
            transaction_elsewhere(&p, 0, &elsewhere, none()).expect("one other owner");
        let slot = key_slot(other.as_bytes());
        assert_eq!(&owners[..], p.owners(slot));
        assert_eq!(&slots[..], [slot]);
        // Two nodes' keys, this node's keys, no key, or a command that is not on keys.
        let third = (0..)
            .map(|i| format!("{{u{i}}}"))
            .find(|t| {
                let o = p.owners(key_slot(t.as_bytes()));
                o[0] != 0 && o != p.owners(slot)
            })
            .unwrap();
        // Reads fail over as reads; one write (or a script that may write) makes it a write.
        let reads = q(&[&format!("GET {other}a"), &format!("LRANGE {other}l 0 -1")]);
        assert_eq!(transaction_access(&reads), Access::Read);
        assert_eq!(transaction_access(&elsewhere), Access::Write);
        let script = q(&[&format!("GET {other}a"), &format!("EVAL x 1 {other}a")]);
        assert_eq!(transaction_access(&script), Access::Write);
        // Watched keys go with it (a queue of nothing but them too), or keep it here.
        let keys = |ks: &[&String]| -> Vec<Bytes> {
            let named = ks.iter().enumerate();
            named
                .map(|(i, k)| Bytes::from(format!("{k}w{i}")))
                .collect()
        };
        let set = q(&[&format!("SET {other}a 1")]);
        assert_eq!(
            transaction_elsewhere(&p, 0, &set, &keys(&[&other, &other])).map(|(o, _)| o),
            Some(owners.clone())
        );
        assert!(transaction_elsewhere(&p, 0, &[], &keys(&[&other])).is_some());
        // PING and ECHO come along (Redis's tests: WATCH x, MULTI, PING, EXEC), but make no
        // transaction go elsewhere by themselves.
        let pinged = q(&["PING", "ECHO hi", "PING x"]);
        assert!(transaction_elsewhere(&p, 0, &pinged, &keys(&[&other])).is_some());
        assert_eq!(transaction_elsewhere(&p, 0, &set, &keys(&[&mine])), None);
        assert_eq!(transaction_elsewhere(&p, 0, &set, &keys(&[&third])), None);
        for queue in [
            q(&[&format!("SET {other}a 1"), &format!("SET {third}a 1")]),
            q(&[&format!("SET {mine}a 1")]),
            q(&[]),
            q(&["PING", "ECHO x"]),
            q(&[&format!("SET {other}a 1"), "SELECT 1"]),
            q(&[&format!("SET {other}a 1"), "FLUSHALL"]),
            q(&[&format!("SET {other}a 1"), "NOSUCH x"]),
        ] {
            assert_eq!(
                transaction_elsewhere(&p, 0, &queue, none()),
                None,
                "{queue:?}"
            );
        }
    }

    #[test]
    fn debug_of_one_key_goes_to_its_owner() {
        let p = three_nodes();
        let debug = cmd::lookup(b"debug").unwrap();
        let (mine, other) = (tag(&p, true), tag(&p, false));
        let owners = Copies::from_slice(p.owners(key_slot(other.as_bytes())));
        for sub in ["OBJECT", "object", "DIGEST-VALUE"] {
            assert_eq!(
                plan(
                    &p,
                    0,
                    Standing::Serving,
                    debug,
                    &argv(&format!("DEBUG {sub} {other}"))
                ),
                Plan::Forward {
                    owners: owners.clone(),
                    access: Access::Read
                },
                "{sub}"
            );
            assert_eq!(
                plan(
                    &p,
                    0,
                    Standing::Serving,
                    debug,
                    &argv(&format!("DEBUG {sub} {mine}"))
                ),
                Plan::Here
            );
        }
        for here in [
            format!("DEBUG DIGEST-VALUE {other} {mine}"),
            "DEBUG SLEEP 0".into(),
            "DEBUG DIGEST".into(),
        ] {
            assert_eq!(
                plan(&p, 0, Standing::Serving, debug, &argv(&here)),
                Plan::Here,
                "{here}"
            );
        }
    }

    /// How a command is routed.
    #[derive(Clone, Copy, PartialEq, Eq, Debug)]
    enum Class {
        Local,
        /// One key, at this argument.
        Key(usize),
        Split(Merge),
        SameOwner,
        FanOut,
        Info,
        Exec,
        Watch,
        Cluster,
    }

    /// How the command of `spec` is routed, from its row's [`Route`] and key specification.
    fn class(spec: &CommandSpec) -> Class {
        match spec.route {
            Route::Here => Class::Local,
            Route::Owner if spec.first_key == spec.last_key && spec.numkeys == 0 => {
                Class::Key(spec.first_key as usize)
            }
            Route::Owner => Class::SameOwner,
            Route::Split(merge) => Class::Split(merge),
            Route::AllNodes(_) => Class::FanOut,
            Route::Info => Class::Info,
            Route::Exec => Class::Exec,
            Route::Watch => Class::Watch,
            Route::Cluster => Class::Cluster,
        }
    }

    /// The routing that matched command names before routes were table data, kept as the
    /// oracle the table's routes are checked against.
    fn class_by_name(spec: &CommandSpec) -> Class {
        match (spec.first_key, spec.last_key, spec.step) {
            _ if spec.numkeys > 0 => Class::SameOwner,
            (0, _, _) => match spec.name {
                "dbsize" | "keys" | "scan" | "randomkey" | "flushall" | "flushdb" | "publish"
                | "spublish" | "pubsub" | "script" | "function" | "acl" | "config" => Class::FanOut,
                "info" => Class::Info,
                "exec" => Class::Exec,
                "cluster" => Class::Cluster,
                _ => Class::Local,
            },
            (f, l, _) if f == l => Class::Key(f as usize),
            (1, -1, 1) => match spec.name {
                "mget" => Class::Split(Merge::Values),
                "del" | "unlink" | "exists" | "touch" => Class::Split(Merge::Sum),
                "watch" => Class::Watch,
                _ => Class::SameOwner,
            },
            (1, -1, 2) if spec.name == "mset" => Class::Split(Merge::AllOk),
            _ => Class::SameOwner,
        }
    }

    /// A 3-node placement with two copies of each slot, seen from node 0.
    fn three_nodes() -> shoal_ring::Placement {
        let members: Vec<shoal_ring::Member> = ["n0", "n1", "n2"]
            .into_iter()
            .map(shoal_ring::Member::new)
            .collect();
        shoal_ring::Placement::new(&members, 1, 1).unwrap()
    }

    /// A hash tag whose slot node 0 owns (`mine`) or does not.
    fn tag(p: &shoal_ring::Placement, mine: bool) -> String {
        (0..)
            .map(|i| format!("{{t{i}}}"))
            .find(|t| (p.owners(key_slot(t.as_bytes()))[0] == 0) == mine)
            .unwrap()
    }

    /// A request for `spec` of the smallest size its arity allows (at least 3 arguments
    /// where it takes any number), every argument a key under `tag`.
    fn request(spec: &CommandSpec, tag: &str) -> Vec<Bytes> {
        let argc = if spec.arity > 0 {
            spec.arity as usize
        } else {
            (spec.arity.unsigned_abs() as usize).max(3) | 1
        };
        let mut args = vec![Bytes::from(spec.name)];
        // XREAD's and XREADGROUP's keys follow their STREAMS option.
        if spec.numkeys == cmd::STREAMS_KEYS {
            if spec.name == "xreadgroup" {
                args.extend(["GROUP", "g", "c"].map(Bytes::from));
            }
            args.push(Bytes::from("STREAMS"));
            args.extend((1..3).map(|i| Bytes::from(format!("k{i}{tag}"))));
            args.extend(["0", "0"].map(Bytes::from));
            return args;
        }
        // MIGRATE's follow its KEYS option.
        if spec.numkeys == cmd::MIGRATE_KEYS {
            args.extend(["h", "1", "", "0", "5000", "KEYS"].map(Bytes::from));
            args.extend((1..3).map(|i| Bytes::from(format!("k{i}{tag}"))));
            return args;
        }
        args.extend((1..argc).map(|i| Bytes::from(format!("k{i}{tag}"))));
        // A counted row's keys are the rest of the request.
        let count = usize::from(spec.numkeys);
        if count > 0 {
            args[count] = Bytes::from((argc - count - 1).to_string());
        }
        args
    }

    /// The routing decision for every command of the table, on a 3-node placement: keyless
    /// rows here, keyed rows at their owner (here, or forwarded to the owner then its
    /// replica, marked read, blind write or write), split rows split, cluster-wide rows on
    /// all nodes; multi-key atomic rows refused across owners; nothing but keyless rows
    /// while the node is joining.
    #[test]
    fn plan_covers_every_command_of_the_table() {
        let p = three_nodes();
        let (mine, theirs) = (tag(&p, true), tag(&p, false));
        let other_slot = key_slot(theirs.as_bytes());
        for spec in cmd::TABLE.iter().chain(cmd::INTERNAL) {
            let here = request(spec, &mine);
            let there = request(spec, &theirs);
            let positions: Vec<usize> = spec.key_positions(&here).collect();
            let expected_here = match spec.route {
                Route::Here | Route::Cluster => Plan::Here,
                Route::Info => Plan::Here,
                Route::Owner | Route::Watch if positions.is_empty() => Plan::Here,
                Route::Owner | Route::Watch => Plan::Owned,
                Route::Split(m) => Plan::Split(m),
                Route::AllNodes(Gather::PubSub) if !cmd::pubsub_gathers(&here) => Plan::Here,
                Route::AllNodes(Gather::Everywhere(subs))
                    if !cmd::names_subcommand(subs, &here) =>
                {
                    Plan::Here
                }
                Route::AllNodes(Gather::Setting(names)) if !cmd::sets_any(names, &here) => {
                    Plan::Here
                }
                Route::AllNodes(_) => Plan::AllNodes,
                Route::Exec => Plan::Exec,
            };
            assert_eq!(
                plan(&p, 0, Standing::Serving, spec, &here),
                expected_here,
                "{}",
                spec.name
            );
            let expected_there = match spec.route {
                Route::Owner if !positions.is_empty() => Plan::Forward {
                    owners: Copies::from_slice(p.owners(other_slot)),
                    access: cmd::access(spec, &there),
                },
                Route::Watch => Plan::WatchElsewhere,
                _ => expected_here.clone(),
            };
            assert_eq!(
                plan(&p, 0, Standing::Serving, spec, &there),
                expected_there,
                "{}",
                spec.name
            );
            if spec.route == Route::Owner && positions.len() > 1 {
                let mut mixed = here.clone();
                mixed[positions[1]] = Bytes::from(format!("k{theirs}"));
                assert_eq!(
                    plan(&p, 0, Standing::Serving, spec, &mixed),
                    Plan::CrossSlot,
                    "{}",
                    spec.name
                );
            }
            let joining = plan(&p, 0, Standing::Looking, spec, &here);
            let cut_off = plan(&p, 0, Standing::CutOff, spec, &here);
            match spec.route {
                Route::Here
                | Route::Info
                | Route::Cluster
                | Route::AllNodes(Gather::Publish | Gather::PubSub | Gather::Setting(_)) => {
                    assert_eq!(joining, expected_here, "{}", spec.name);
                    assert_eq!(cut_off, expected_here, "{}", spec.name);
                }
                _ => {
                    assert_eq!(joining, Plan::TryAgain, "{}", spec.name);
                    assert_eq!(cut_off, Plan::ClusterDown, "{}", spec.name);
                }
            }
        }
        // INFO gathers the keyspace from every node only when it is asked for.
        let info = cmd::lookup(b"info").unwrap();
        let args = |a: &[&str]| {
            a.iter()
                .map(|s| Bytes::from(s.to_string()))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            plan(&p, 0, Standing::Serving, info, &args(&["INFO"])),
            Plan::InfoKeyspace
        );
        assert_eq!(
            plan(&p, 0, Standing::Serving, info, &args(&["INFO", "keyspace"])),
            Plan::InfoKeyspace
        );
        assert_eq!(
            plan(&p, 0, Standing::Serving, info, &args(&["INFO", "server"])),
            Plan::Here
        );
        // PUBSUB's counts come from every node; its HELP and errors from this one.
        let pubsub = cmd::lookup(b"pubsub").unwrap();
        for (req, expected) in [
            (&["PUBSUB", "NUMSUB", "a"][..], Plan::AllNodes),
            (&["PUBSUB", "channels"], Plan::AllNodes),
            (&["PUBSUB", "NUMPAT"], Plan::AllNodes),
            (&["PUBSUB", "NUMPAT", "x"], Plan::Here),
            (&["PUBSUB", "HELP"], Plan::Here),
            (&["PUBSUB", "NOPE"], Plan::Here),
        ] {
            assert_eq!(
                plan(&p, 0, Standing::Looking, pubsub, &args(req)),
                expected,
                "{req:?}"
            );
        }
        // CLUSTER COUNTKEYSINSLOT counts at the slot's owner.
        let cluster = cmd::lookup(b"cluster").unwrap();
        let count = args(&["CLUSTER", "COUNTKEYSINSLOT", &other_slot.to_string()]);
        assert_eq!(
            plan(&p, 0, Standing::Serving, cluster, &count),
            Plan::Forward {
                owners: Copies::from_slice(p.owners(other_slot)),
                access: Access::Read
            }
        );
    }

    /// SCRIPT LOAD | FLUSH, FUNCTION LOAD | DELETE | RESTORE | FLUSH and ACL SETUSER |
    /// DELUSER run on every node; their other subcommands (and their errors) here.
    #[test]
    fn script_and_function_changes_run_everywhere() {
        let p = three_nodes();
        for (line, want) in [
            ("SCRIPT LOAD x", Plan::AllNodes),
            ("script flush", Plan::AllNodes),
            ("SCRIPT EXISTS x", Plan::Here),
            ("SCRIPT KILL", Plan::AllNodes),
            ("FUNCTION LOAD x", Plan::AllNodes),
            ("FUNCTION delete x", Plan::AllNodes),
            ("FUNCTION RESTORE x", Plan::AllNodes),
            ("FUNCTION FLUSH", Plan::AllNodes),
            ("FUNCTION LIST", Plan::Here),
            ("FUNCTION DUMP", Plan::Here),
            ("FUNCTION STATS", Plan::Here),
            ("FUNCTION BOGUS", Plan::Here),
            ("ACL SETUSER u on", Plan::AllNodes),
            ("acl deluser u", Plan::AllNodes),
            ("ACL GETUSER u", Plan::Here),
            ("ACL LOG", Plan::Here),
            ("ACL WHOAMI", Plan::Here),
        ] {
            let a = argv(line);
            let spec = cmd::lookup(&a[0]).unwrap();
            assert_eq!(plan(&p, 0, Standing::Serving, spec, &a), want, "{line}");
        }
    }

    /// CONFIG SET of `notify-keyspace-events` (alone or among other settings, in any case)
    /// runs on every node while this one serves; any other CONFIG here, and any while it
    /// joins or is cut off.
    #[test]
    fn config_set_of_a_shared_setting_runs_everywhere() {
        let p = three_nodes();
        for (line, want) in [
            ("CONFIG SET notify-keyspace-events KEA", Plan::AllNodes),
            (
                "config set maxmemory 1mb NOTIFY-KEYSPACE-EVENTS Ex",
                Plan::AllNodes,
            ),
            ("CONFIG SET maxmemory 1mb", Plan::Here),
            ("CONFIG SET maxmemory notify-keyspace-events", Plan::Here),
            ("CONFIG GET notify-keyspace-events", Plan::Here),
            ("CONFIG SET notify-keyspace-events", Plan::Here),
            ("CONFIG RESETSTAT", Plan::Here),
        ] {
            let a = argv(line);
            let spec = cmd::lookup(&a[0]).unwrap();
            assert_eq!(plan(&p, 0, Standing::Serving, spec, &a), want, "{line}");
        }
        let a = argv("CONFIG SET notify-keyspace-events KEA");
        let spec = cmd::lookup(&a[0]).unwrap();
        for standing in [Standing::Looking, Standing::CutOff] {
            assert_eq!(plan(&p, 0, standing, spec, &a), Plan::Here, "{standing:?}");
        }
    }

    #[test]
    fn every_rows_route_equals_the_name_matching_it_replaced() {
        for spec in cmd::TABLE {
            assert!(class(spec) == class_by_name(spec), "{}", spec.name);
        }
    }

    /// Redis Cluster's rules on the cluster-client port: keys owned here route as usual,
    /// keys elsewhere are MOVED to their primary (or read here by a READONLY connection
    /// holding a copy), keys of two slots are CROSSSLOT, key listings are node-local, and a
    /// transaction's queued commands must share one slot.
    #[test]
    fn cluster_rules_redirect_by_slot() {
        let p = three_nodes();
        let (mine, theirs) = (tag(&p, true), tag(&p, false));
        let (my_slot, their_slot) = (key_slot(mine.as_bytes()), key_slot(theirs.as_bytes()));
        let primary = |s: u16| p.owners(s)[0];
        let holds = |s: u16| p.owners(s).contains(&0);
        let rule = |spec: &str, args: &[&str], queued: &[Vec<Bytes>], readonly: bool| {
            let args: Vec<Bytes> = args.iter().map(|a| Bytes::from(a.to_string())).collect();
            cluster_rule(
                cmd::lookup(spec.as_bytes()).unwrap(),
                &args,
                queued,
                0,
                readonly,
                primary,
                holds,
            )
        };
        let k = |t: &str, n: u32| format!("k{n}{t}");
        assert_eq!(
            rule("get", &["get", &k(&mine, 1)], &[], false),
            ClusterRule::Route
        );
        let moved = ClusterRule::Moved {
            slot: their_slot,
            to: primary(their_slot),
        };
        assert_eq!(rule("get", &["get", &k(&theirs, 1)], &[], false), moved);
        assert_eq!(rule("set", &["set", &k(&theirs, 1), "v"], &[], true), moved);
        let read = rule("get", &["get", &k(&theirs, 1)], &[], true);
        if holds(their_slot) {
            assert_eq!(read, ClusterRule::ReadHere);
        } else {
            assert_eq!(read, moved);
        }
        // Two keys of one slot (a hash tag) go together; of two slots, never.
        let same = ["mget", &k(&theirs, 1), &k(&theirs, 2)];
        assert_eq!(rule("mget", &same, &[], false), moved);
        let two = ["mget", &k(&mine, 1), &k(&theirs, 2)];
        assert_eq!(rule("mget", &two, &[], false), ClusterRule::CrossSlot);
        assert_eq!(rule("dbsize", &["dbsize"], &[], false), ClusterRule::Local);
        assert_eq!(rule("keys", &["keys", "*"], &[], false), ClusterRule::Local);
        assert_eq!(rule("info", &["info"], &[], false), ClusterRule::Local);
        // Published messages reach every node; PUBSUB answers for this one, as Redis Cluster.
        assert_eq!(
            rule("publish", &["publish", "c", "m"], &[], false),
            ClusterRule::Route
        );
        assert_eq!(
            rule("pubsub", &["pubsub", "numsub", "c"], &[], false),
            ClusterRule::Local
        );
        assert_eq!(
            rule("flushall", &["flushall"], &[], false),
            ClusterRule::Route
        );
        assert_eq!(rule("ping", &["ping"], &[], false), ClusterRule::Route);
        let q = |keys: &[String]| -> Vec<Vec<Bytes>> {
            keys.iter()
                .map(|key| vec![Bytes::from("incr"), Bytes::from(key.clone())])
                .collect()
        };
        let one_slot = q(&[k(&mine, 1), k(&mine, 2)]);
        assert_eq!(
            rule("exec", &["exec"], &one_slot, false),
            ClusterRule::Route
        );
        let two_slots = q(&[k(&mine, 1), k(&theirs, 2)]);
        assert_eq!(
            rule("exec", &["exec"], &two_slots, true),
            ClusterRule::CrossSlot
        );
        assert_ne!(my_slot, their_slot);
    }
}
