//! Pub/Sub over real sockets, where timing matters: a subscriber that falls behind gets
//! every message before the reply to its next command, as Redis writes them; a message
//! never comes before its subscription's confirmation; a RESP3 subscriber gets its
//! messages while one of its commands is blocked; `timeout` does not close a subscriber;
//! CLIENT REPLY OFF keeps the confirmations. (The replies themselves are compared with
//! redis-server in `differential.rs`, clients in `clients.rs` and `cluster.rs`.)

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use redis::{Parser, Value};
use shoal_tests::{wait_until, TestNode};

const WAIT: Duration = Duration::from_secs(10);

/// A raw connection read value by value with redis-rs's parser.
struct Raw {
    s: TcpStream,
    parser: Parser,
}

impl Raw {
    fn open(node: &TestNode) -> Raw {
        let s = node.raw();
        s.set_read_timeout(Some(WAIT)).unwrap();
        Raw {
            s,
            parser: Parser::new(),
        }
    }

    fn send(&mut self, args: &[&str]) {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            out.extend_from_slice(format!("${}\r\n{a}\r\n", a.len()).as_bytes());
        }
        self.s.write_all(&out).unwrap();
    }

    fn next(&mut self) -> Value {
        self.parser
            .parse_value(&mut self.s)
            .expect("a reply within the deadline")
    }
}

fn bulk(s: &str) -> Value {
    Value::BulkString(s.as_bytes().to_vec())
}

/// The kind of a message or confirmation (`message`, `subscribe`, ...), if it is one.
fn kind(v: &Value) -> Option<String> {
    let items = match v {
        Value::Array(items) => items,
        Value::Push { kind, .. } => return Some(kind.to_string().to_lowercase()),
        _ => return None,
    };
    match items.first() {
        Some(Value::BulkString(b)) => Some(String::from_utf8_lossy(b).into_owned()),
        _ => None,
    }
}

/// What a push says in RESP3 (`Push { kind, data }`), as the array RESP2 would send.
fn as_array(v: Value) -> Value {
    match v {
        Value::Push { kind, data } => {
            let mut items = vec![bulk(&kind.to_string().to_lowercase())];
            items.extend(data);
            Value::Array(items)
        }
        v => v,
    }
}

#[test]
fn a_subscriber_behind_gets_every_message_before_its_next_reply() {
    let node = TestNode::start();
    let mut publisher = node.client();
    let payload = "p".repeat(10 * 1024);
    for ending in ["UNSUBSCRIBE", "RESET"] {
        let mut sub = Raw::open(&node);
        sub.send(&["SUBSCRIBE", "c"]);
        assert_eq!(kind(&sub.next()).as_deref(), Some("subscribe"));
        // 700 messages of 10 KB: more than the sockets hold, so most wait in the mailbox.
        const COUNT: usize = 700;
        for i in 0..COUNT {
            let n: i64 = redis::cmd("PUBLISH")
                .arg("c")
                .arg(format!("{i}:{payload}"))
                .query(&mut publisher)
                .unwrap();
            assert_eq!(n, 1);
        }
        sub.send(&[ending]);
        for i in 0..COUNT {
            let v = sub.next();
            assert_eq!(
                kind(&v).as_deref(),
                Some("message"),
                "{ending}: message {i}"
            );
            let Value::Array(items) = v else {
                panic!("{ending}: message {i} is not an array");
            };
            let Value::BulkString(payload) = &items[2] else {
                panic!("{ending}: message {i} has no payload");
            };
            assert!(
                payload.starts_with(format!("{i}:").as_bytes()),
                "{ending}: message {i} out of order"
            );
        }
        let reply = sub.next();
        match ending {
            "RESET" => assert_eq!(reply, Value::SimpleString("RESET".into())),
            _ => assert_eq!(kind(&reply).as_deref(), Some("unsubscribe")),
        }
        sub.send(&["PING"]);
        assert_eq!(sub.next(), Value::SimpleString("PONG".into()));
    }
}

#[test]
fn no_message_comes_before_its_subscriptions_confirmation() {
    let node = TestNode::start();
    let url = node.url();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let publishers: Vec<_> = (0..2)
        .map(|_| {
            let (url, stop) = (url.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut con = redis::Client::open(url).unwrap().get_connection().unwrap();
                let end = Instant::now() + Duration::from_secs(30);
                while !stop.load(std::sync::atomic::Ordering::Relaxed) && Instant::now() < end {
                    let _: i64 = redis::cmd("PUBLISH")
                        .arg("c")
                        .arg("x")
                        .query(&mut con)
                        .unwrap();
                }
            })
        })
        .collect();
    let mut sub = Raw::open(&node);
    for round in 0..500 {
        sub.send(&["SUBSCRIBE", "c"]);
        let first = sub.next();
        assert_eq!(
            kind(&first).as_deref(),
            Some("subscribe"),
            "round {round}: {first:?}"
        );
        sub.send(&["UNSUBSCRIBE", "c"]);
        loop {
            match kind(&sub.next()).as_deref() {
                Some("message") => continue,
                Some("unsubscribe") => break,
                other => panic!("round {round}: {other:?}"),
            }
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for p in publishers {
        p.join().unwrap();
    }
}

#[test]
fn a_resp3_subscriber_gets_messages_while_a_command_of_it_is_blocked() {
    let node = TestNode::start();
    let mut sub = Raw::open(&node);
    sub.send(&["HELLO", "3"]);
    sub.next();
    sub.send(&["SUBSCRIBE", "c"]);
    assert_eq!(kind(&sub.next()).as_deref(), Some("subscribe"));
    sub.send(&["BLPOP", "nokey", "0"]);
    let mut admin = node.client();
    assert!(wait_until(WAIT, || {
        shoal_tests::info_field(&mut admin, "blocked_clients") == "1"
    }));
    let n: i64 = redis::cmd("PUBLISH")
        .arg("c")
        .arg("hi")
        .query(&mut admin)
        .unwrap();
    assert_eq!(n, 1);
    assert_eq!(
        as_array(sub.next()),
        Value::Array(vec![bulk("message"), bulk("c"), bulk("hi")]),
        "the message, while BLPOP still waits"
    );
    let _: i64 = redis::cmd("RPUSH")
        .arg("nokey")
        .arg("v")
        .query(&mut admin)
        .unwrap();
    assert_eq!(
        sub.next(),
        Value::Array(vec![bulk("nokey"), bulk("v")]),
        "then BLPOP's reply"
    );
}

/// `timeout` closes idle clients, but not subscribers (as in Redis): a normal client idle
/// past it is closed, while a subscriber idle as long still gets messages.
#[test]
fn timeout_does_not_close_a_subscriber() {
    let node = TestNode::with(|c| c.timeout = 1);
    let mut sub = Raw::open(&node);
    sub.send(&["SUBSCRIBE", "quiet"]);
    assert_eq!(kind(&sub.next()).as_deref(), Some("subscribe"));
    let mut idle = node.raw();
    idle.write_all(b"PING\r\n").unwrap();
    let (_, closed) = shoal_tests::read_to_close(&mut idle, WAIT);
    assert!(closed, "an idle normal client is closed");
    let mut publisher = node.client();
    let n: i64 = redis::cmd("PUBLISH")
        .arg("quiet")
        .arg("still")
        .query(&mut publisher)
        .unwrap();
    assert_eq!(n, 1, "the subscriber, idle as long, is still there");
    assert_eq!(
        sub.next(),
        Value::Array(vec![bulk("message"), bulk("quiet"), bulk("still")])
    );
}

/// A message a RESP3 subscriber publishes to itself comes after the PUBLISH reply, and after
/// EXEC's whole reply inside a transaction, as Redis 7.2 sends it (redis/redis#12326).
#[test]
fn a_message_published_to_oneself_follows_the_reply() {
    let node = TestNode::start();
    let mut c = Raw::open(&node);
    c.send(&["HELLO", "3"]);
    c.next();
    c.send(&["SUBSCRIBE", "c"]);
    assert_eq!(kind(&c.next()).as_deref(), Some("subscribe"));
    let message = || Value::Array(vec![bulk("message"), bulk("c"), bulk("m")]);
    c.send(&["PUBLISH", "c", "m"]);
    assert_eq!(c.next(), Value::Int(1));
    assert_eq!(as_array(c.next()), message());
    c.send(&["MULTI"]);
    assert_eq!(c.next(), Value::Okay);
    c.send(&["PUBLISH", "c", "m"]);
    c.send(&["PING"]);
    assert_eq!(c.next(), Value::SimpleString("QUEUED".into()));
    assert_eq!(c.next(), Value::SimpleString("QUEUED".into()));
    c.send(&["EXEC"]);
    assert_eq!(
        c.next(),
        Value::Array(vec![Value::Int(1), Value::SimpleString("PONG".into())])
    );
    assert_eq!(as_array(c.next()), message());
}

/// CLIENT REPLY OFF silences replies but not Pub/Sub's confirmations (Redis 7).
#[test]
fn client_reply_off_keeps_subscription_confirmations() {
    let node = TestNode::start();
    let mut sub = Raw::open(&node);
    sub.send(&["CLIENT", "REPLY", "OFF"]);
    sub.send(&["SUBSCRIBE", "a"]);
    assert_eq!(
        sub.next(),
        Value::Array(vec![bulk("subscribe"), bulk("a"), Value::Int(1)])
    );
    sub.send(&["UNSUBSCRIBE"]);
    assert_eq!(
        sub.next(),
        Value::Array(vec![bulk("unsubscribe"), bulk("a"), Value::Int(0)])
    );
    sub.send(&["CLIENT", "REPLY", "ON"]);
    assert_eq!(sub.next(), Value::Okay);
}

/// A user whose channel rules no longer allow what it could subscribe to loses its
/// subscribed connections (Redis closes them); its other connections stay, and a change
/// that keeps its channels closes nothing.
#[test]
fn a_user_that_loses_channels_loses_its_subscribers() {
    use shoal_tests::{read_exact_by, send};
    const T: Duration = Duration::from_secs(10);
    let node = TestNode::start();
    let mut admin = node.client();
    let _: () = redis::cmd("ACL")
        .arg(&["SETUSER", "sub", "on", ">pw", "&news*", "~*", "+@all"])
        .query(&mut admin)
        .unwrap();
    let login = |s: &mut std::net::TcpStream| {
        send(s, b"*3\r\n$4\r\nAUTH\r\n$3\r\nsub\r\n$2\r\npw\r\n");
        assert_eq!(read_exact_by(s, 5, T), b"+OK\r\n");
    };
    let mut subscriber = node.raw();
    subscriber.set_read_timeout(Some(T)).unwrap();
    login(&mut subscriber);
    send(&mut subscriber, b"*2\r\n$9\r\nSUBSCRIBE\r\n$5\r\nnews1\r\n");
    let confirm = b"*3\r\n$9\r\nsubscribe\r\n$5\r\nnews1\r\n:1\r\n";
    assert_eq!(read_exact_by(&mut subscriber, confirm.len(), T), confirm);
    let mut other = node.raw();
    other.set_read_timeout(Some(T)).unwrap();
    login(&mut other);
    // Channels kept (another pattern added): nothing closes.
    let _: () = redis::cmd("ACL")
        .arg(&["SETUSER", "sub", "&sports*"])
        .query(&mut admin)
        .unwrap();
    let _: i64 = redis::cmd("PUBLISH")
        .arg("news1")
        .arg("m")
        .query(&mut admin)
        .unwrap();
    let message = b"*3\r\n$7\r\nmessage\r\n$5\r\nnews1\r\n$1\r\nm\r\n";
    assert_eq!(read_exact_by(&mut subscriber, message.len(), T), message);
    // Channels lost: the subscriber is closed, the other connection is not.
    let _: () = redis::cmd("ACL")
        .arg(&["SETUSER", "sub", "resetchannels", "&other"])
        .query(&mut admin)
        .unwrap();
    let (_, closed) = shoal_tests::read_to_close(&mut subscriber, T);
    assert!(closed, "the subscriber was closed");
    send(&mut other, b"*1\r\n$4\r\nPING\r\n");
    assert_eq!(read_exact_by(&mut other, 7, T), b"+PONG\r\n");
}

/// A subscriber that does not read shows its backlog in CLIENT LIST's `omem` and `oll` and
/// INFO's `client_recent_max_output_buffer`, as Redis shows the messages in its output
/// buffer (they were left out while they waited in the connection's mailbox).
#[test]
fn a_subscriber_s_backlog_shows_in_its_output_memory() {
    let node = TestNode::start();
    let mut sub = Raw::open(&node);
    sub.send(&["CLIENT", "SETNAME", "lagging"]);
    assert_eq!(sub.next(), Value::Okay);
    sub.send(&["SUBSCRIBE", "flood"]);
    assert_eq!(kind(&sub.next()).as_deref(), Some("subscribe"));
    // About 20 MB: more than the loopback socket buffers hold, under the pubsub limit.
    let mut con = node.client();
    let message = "m".repeat(1000);
    let mut publish = redis::pipe();
    for _ in 0..20_000 {
        publish.cmd("PUBLISH").arg("flood").arg(&message).ignore();
    }
    let _: () = publish.query(&mut con).unwrap();
    let field = |line: &str, name: &str| -> u64 {
        line.split(' ')
            .find_map(|f| f.strip_prefix(&format!("{name}=")))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    let shown = wait_until(WAIT, || {
        let list: String = redis::cmd("CLIENT").arg("LIST").query(&mut con).unwrap();
        list.lines()
            .find(|l| l.contains("name=lagging"))
            .is_some_and(|l| field(l, "omem") > 1_000_000 && field(l, "oll") > 0)
    });
    assert!(shown, "the backlog shows in omem and oll");
    let info: String = redis::cmd("INFO").arg("clients").query(&mut con).unwrap();
    let most = info
        .lines()
        .find_map(|l| l.strip_prefix("client_recent_max_output_buffer:"))
        .and_then(|v| v.trim().parse::<u64>().ok())
        .expect("the field");
    assert!(most > 1_000_000, "{info}");
}
