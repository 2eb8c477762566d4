//! The real `redis-cli` (package redis-tools) against a node. `.ci/run` installs it; a missing
//! redis-cli fails these tests rather than skipping them.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use shoal_tests::TestNode;

fn cli(node: &TestNode, args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new("redis-cli")
        .args(["-h", "127.0.0.1", "-p", &node.addr.port().to_string()])
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("redis-cli must be installed (apt-get install redis-tools)");
    if let Some(input) = stdin {
        child.stdin.take().unwrap().write_all(input).unwrap();
    }
    child.wait_with_output().expect("redis-cli runs")
}

fn out(node: &TestNode, args: &[&str]) -> String {
    let o = cli(node, args, None);
    assert!(o.status.success(), "redis-cli {args:?} failed: {o:?}");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn everyday_commands() {
    let node = TestNode::start();
    assert_eq!(out(&node, &["PING"]), "PONG\n");
    assert_eq!(out(&node, &["SET", "greeting", "hello world"]), "OK\n");
    assert_eq!(out(&node, &["GET", "greeting"]), "hello world\n");
    assert_eq!(out(&node, &["INCRBY", "n", "41"]), "41\n");
    assert_eq!(out(&node, &["EXPIRE", "n", "100"]), "1\n");
    assert_eq!(out(&node, &["TTL", "n"]), "100\n");
    assert_eq!(out(&node, &["DBSIZE"]), "2\n");
    let info = out(&node, &["INFO", "server"]);
    assert!(info.contains("redis_version:7.2.4"), "{info}");
    let err = out(&node, &["NOSUCH", "x"]);
    assert!(
        err.contains("ERR unknown command 'NOSUCH', with args beginning with: 'x'"),
        "{err}"
    );
}

#[test]
fn resp3_mode() {
    let node = TestNode::start();
    let o = out(&node, &["-3", "HELLO", "3"]);
    assert!(o.contains("proto") && o.contains('3'), "{o}");
    assert_eq!(out(&node, &["-3", "SET", "k", "v"]), "OK\n");
    assert_eq!(out(&node, &["-3", "GET", "k"]), "v\n");
}

#[test]
fn commands_from_stdin_lines() {
    let node = TestNode::start();
    let o = cli(&node, &[], Some(b"SET a 1\nINCR a\nGET a\n"));
    assert!(o.status.success());
    assert_eq!(String::from_utf8_lossy(&o.stdout), "OK\n2\n2\n");
}

#[test]
fn pipe_mode_mass_insert() {
    let node = TestNode::start();
    let mut input = Vec::new();
    for i in 0..10_000 {
        let (k, v) = (format!("key:{i}"), format!("value:{i}"));
        input.extend_from_slice(
            format!(
                "*3\r\n$3\r\nSET\r\n${}\r\n{k}\r\n${}\r\n{v}\r\n",
                k.len(),
                v.len()
            )
            .as_bytes(),
        );
    }
    let o = cli(&node, &["--pipe"], Some(&input));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{o:?}");
    assert!(text.contains("errors: 0, replies: 10000"), "{text}");
    assert_eq!(out(&node, &["DBSIZE"]), "10000\n");
    assert_eq!(out(&node, &["GET", "key:9999"]), "value:9999\n");
}

#[test]
fn scan_and_bigkeys() {
    let node = TestNode::start();
    for i in 0..30 {
        out(&node, &["SET", &format!("user:{i}"), &"x".repeat(i + 1)]);
    }
    out(&node, &["SET", "other", "1"]);
    let keys = out(&node, &["--scan", "--pattern", "user:*"]);
    assert_eq!(keys.lines().count(), 30, "{keys}");
    let big = out(&node, &["--bigkeys"]);
    assert!(big.contains("user:29"), "{big}");
}

#[test]
fn auth_with_password_flag() {
    let node = TestNode::with(|c| c.requirepass = "pw".into());
    let denied = out(&node, &["GET", "k"]);
    assert!(denied.contains("NOAUTH"), "{denied}");
    assert_eq!(
        out(&node, &["--no-auth-warning", "-a", "pw", "SET", "k", "v"]),
        "OK\n"
    );
    assert_eq!(
        out(&node, &["--no-auth-warning", "-a", "pw", "GET", "k"]),
        "v\n"
    );
}

/// `redis-cli` against one port of a 3-node cluster, succeeding.
fn cli_at(port: u16, args: &[&str]) -> String {
    let o = Command::new("redis-cli")
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("redis-cli must be installed (apt-get install redis-tools)");
    assert!(o.status.success(), "redis-cli {args:?} failed: {o:?}");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// `redis-cli -c` follows MOVED from the cluster-client port to each key's owner, and
/// `redis-cli --cluster check` finds every slot covered, the nodes agreeing, no open slot.
#[test]
fn cluster_mode_follows_moved_and_check_passes() {
    let cluster = shoal_tests::TestCluster::start(3, |_| {});
    let port = cluster.members[0].cluster_client_addr.port();
    for i in 0..30 {
        let key = format!("cli:{i}");
        assert_eq!(cli_at(port, &["-c", "SET", &key, &format!("v{i}")]), "OK\n");
    }
    for i in 0..30 {
        let key = format!("cli:{i}");
        assert_eq!(cli_at(port, &["-c", "GET", &key]), format!("v{i}\n"));
    }
    // Without -c the keys of other nodes are redirections, which redis-cli prints (the SETs
    // above crossed to both other nodes, so each has answered under node 0's view and
    // node 0 redirects to it; see `may_redirect`).
    let plain: Vec<String> = (0..30)
        .map(|i| cli_at(port, &["GET", &format!("cli:{i}")]))
        .collect();
    assert!(
        plain.iter().any(|o| o.starts_with("MOVED ")),
        "some key is owned elsewhere: {plain:?}"
    );
    let check = cli_at(
        port,
        &[
            "--cluster",
            "check",
            &cluster.members[0].cluster_client_addr.to_string(),
        ],
    );
    for needle in [
        "[OK] All nodes agree about slots configuration.",
        "[OK] All 16384 slots covered.",
        "[OK] 30 keys in 3 masters.",
    ] {
        assert!(check.contains(needle), "{needle}: {check}");
    }
}
