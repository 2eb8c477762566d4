//! TLS (`tls-port`, `tls-memcache`, `tls-cluster`, reload on CONFIG SET) with real clients:
//! redis-cli `--tls`, redis-py `ssl=True`, pymemcache with an SSL context, redis-py's
//! cluster client, and the inter-node handshake itself, against certificates the test makes
//! with `openssl`.

use std::process::Command;
use std::time::Duration;

use shoal_tests::{info_field, python_client, read_to_close, TestCerts, TestCluster, TestNode};

/// redis-cli over TLS to `port`, trusting `ca.crt`, with `client.crt` unless `cert` is None.
fn redis_cli_tls(
    certs: &TestCerts,
    port: u16,
    cert: Option<&str>,
    args: &[&str],
) -> (bool, String) {
    let mut cmd = Command::new("redis-cli");
    cmd.args(["-h", "127.0.0.1", "-p", &port.to_string(), "--tls"])
        .args(["--cacert", &certs.path("ca.crt")]);
    if let Some(name) = cert {
        cmd.args(["--cert", &certs.path(&format!("{name}.crt"))])
            .args(["--key", &certs.path(&format!("{name}.key"))]);
    }
    let out = cmd
        .args(args)
        .output()
        .expect("redis-cli must be installed");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text.trim_end().to_owned())
}

/// A redis-py pipeline of 40,000 GETs (10 MB of commands, 20 MB of replies, more than the
/// sockets' buffers hold) written whole before it reads over TLS: the node reads on while
/// the replies wait (see `a_pipeline_written_before_any_reply_is_read_is_served`).
#[test]
fn a_tls_pipeline_written_before_any_reply_is_read_is_served() {
    let certs = TestCerts::make("pipeline");
    let node = TestNode::with(|c| {
        certs.configure(c);
        c.tls_port = Some(0);
    });
    let tls = node.tls_addr.expect("tls-port listener").to_string();
    let dir = certs.dir.to_string_lossy().into_owned();
    python_client("tls_clients.py", &["pipeline", &tls, &dir]);
}

#[test]
fn tls_port_and_memcache_port_serve_real_clients() {
    let certs = TestCerts::make("port");
    let node = TestNode::with(|c| {
        certs.configure(c);
        c.tls_port = Some(0);
        c.memcache_port = Some(0);
        c.tls_memcache = true;
    });
    let tls = node.tls_addr.expect("tls-port listener");

    let (ok, out) = redis_cli_tls(&certs, tls.port(), Some("client"), &["SET", "k", "v"]);
    assert!(ok && out == "OK", "{out}");
    let (ok, out) = redis_cli_tls(&certs, tls.port(), Some("client"), &["GET", "k"]);
    assert!(ok && out == "v", "{out}");
    // The plain port serves the same data without TLS.
    let mut plain = node.client();
    assert_eq!(
        redis::cmd("GET")
            .arg("k")
            .query::<String>(&mut plain)
            .unwrap(),
        "v"
    );
    // tls-auth-clients yes (the default): no client certificate, no service.
    let (_, out) = redis_cli_tls(&certs, tls.port(), None, &["PING"]);
    assert!(!out.contains("PONG"), "{out}");
    // ... until it is optional.
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("tls-auth-clients")
        .arg("optional")
        .query(&mut plain)
        .unwrap();
    let (ok, out) = redis_cli_tls(&certs, tls.port(), None, &["PING"]);
    assert!(ok && out == "PONG", "{out}");
    // A client certificate that is sent must still be valid: one signed by another CA is not.
    certs.ca("other");
    certs.signed("stranger", "other");
    let (_, out) = redis_cli_tls(&certs, tls.port(), Some("stranger"), &["PING"]);
    assert!(!out.contains("PONG"), "{out}");

    // Plain RESP on the TLS port is not served.
    let mut raw = std::net::TcpStream::connect(tls).unwrap();
    shoal_tests::send(&mut raw, b"PING\r\n");
    let (bytes, closed) = read_to_close(&mut raw, Duration::from_secs(10));
    assert!(closed, "the TLS port kept a plain client open");
    assert!(
        !String::from_utf8_lossy(&bytes).contains("PONG"),
        "{bytes:?}"
    );

    let dir = certs.dir.to_string_lossy().into_owned();
    python_client("tls_clients.py", &["redis", &tls.to_string(), &dir]);
    let mc = node.memcache_addr.expect("memcache port");
    python_client("tls_clients.py", &["memcache", &mc.to_string(), &dir]);
}

#[test]
fn tls_certificates_reload_on_config_set() {
    let certs = TestCerts::make("reload");
    certs.ca("ca2");
    certs.signed("node2", "ca2");
    certs.signed("client2", "ca2");
    let node = TestNode::with(|c| {
        certs.configure(c);
        c.tls_port = Some(0);
    });
    let dir = certs.dir.to_string_lossy().into_owned();
    python_client(
        "tls_clients.py",
        &[
            "reload",
            &node.addr.to_string(),
            &node.tls_addr.unwrap().to_string(),
            &dir,
        ],
    );
    // Immutable ones are refused as in Redis.
    let mut con = node.client();
    let e = redis::cmd("CONFIG")
        .arg("SET")
        .arg("tls-cluster")
        .arg("yes")
        .query::<()>(&mut con)
        .unwrap_err();
    assert!(e.to_string().contains("can't set immutable config"), "{e}");
}

#[test]
fn a_node_with_tls_settings_that_do_not_load_does_not_start() {
    let certs = TestCerts::make("bad");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let start = |f: &dyn Fn(&mut shoal_node::NodeConfig)| {
        let mut config = shoal_node::NodeConfig {
            bind: "127.0.0.1".into(),
            port: 0,
            tls_port: Some(0),
            ..Default::default()
        };
        f(&mut config);
        match runtime.block_on(shoal_node::start(config, None)) {
            Ok(_) => panic!("started"),
            Err(e) => e.to_string(),
        }
    };
    let e = start(&|c| {
        certs.configure(c);
        c.tls_key_file = certs.path("client.key");
    });
    assert!(e.contains("tls-cert-file and tls-key-file"), "{e}");
    let e = start(&|c| {
        certs.configure(c);
        c.tls_ca_cert_file = String::new();
    });
    assert!(e.contains("tls-ca-cert-file or tls-ca-cert-dir"), "{e}");
    let e = start(&|c| {
        certs.configure(c);
        c.tls_cert_file = certs.path("nothing.crt");
    });
    assert!(e.contains("nothing.crt"), "{e}");
    let e = start(&|c| {
        certs.configure(c);
        c.tls_protocols = "TLSv1.1".into();
    });
    assert!(e.contains("not supported"), "{e}");
}

#[test]
fn a_cluster_over_tls_links_forwards_and_serves_cluster_clients() {
    let certs = TestCerts::make("cluster");
    // Client ports take clients without certificates; links still require them.
    let cluster = TestCluster::start(3, |c| {
        certs.configure(c);
        c.tls_cluster = true;
        c.tls_auth_clients = "no".into();
    });
    let mut first = cluster.members[0].client();
    for i in 0..200 {
        let _: () = redis::cmd("SET")
            .arg(format!("key:{i}"))
            .arg(i)
            .query(&mut first)
            .unwrap();
    }
    for m in &cluster.members[1..] {
        let mut con = m.client();
        for i in 0..200 {
            let v: i64 = redis::cmd("GET")
                .arg(format!("key:{i}"))
                .query(&mut con)
                .unwrap();
            assert_eq!(v, i);
        }
        // Keys this node does not own went over the TLS links.
        let forwarded: u64 = info_field(&mut con, "shoal_forwarded").parse().unwrap();
        assert!(forwarded > 0, "node {} forwarded nothing", m.name);
    }
    // Large values cross the links both ways (a request body and a reply each several
    // TLS records and socket buffers long), from every node.
    let big: Vec<u8> = (0..12 * 1024 * 1024u32).map(|i| (i % 251) as u8).collect();
    for (i, m) in cluster.members.iter().enumerate() {
        let mut con = m.client();
        for k in 0..4 {
            let key = format!("big:{i}:{k}");
            let _: () = redis::cmd("SET")
                .arg(&key)
                .arg(&big[..])
                .query(&mut con)
                .unwrap();
            let next = &cluster.members[(i + 1) % 3];
            let got: Vec<u8> = redis::cmd("GET")
                .arg(&key)
                .query(&mut next.client())
                .unwrap();
            assert!(got == big, "{key} read back through {} differs", next.name);
        }
    }
    // The inter-node port asks for a certificate even though client ports do not.
    python_client(
        "tls_clients.py",
        &[
            "link",
            &cluster.members[0].cluster_addr.to_string(),
            &certs.dir.to_string_lossy(),
        ],
    );
    // A client without a certificate is served on the cluster-client port over TLS, and a
    // plain one is not.
    let cc = cluster.members[0].cluster_client_addr;
    let (ok, out) = redis_cli_tls(&certs, cc.port(), None, &["PING"]);
    assert!(ok && out == "PONG", "{out}");
    let mut raw = std::net::TcpStream::connect(cc).unwrap();
    shoal_tests::send(&mut raw, b"PING\r\n");
    let (bytes, closed) = read_to_close(&mut raw, Duration::from_secs(10));
    assert!(
        closed && !String::from_utf8_lossy(&bytes).contains("PONG"),
        "{bytes:?}"
    );
    // The cluster-client port speaks TLS too, as Redis Cluster's ports do with tls-cluster.
    let dir = certs.dir.to_string_lossy().into_owned();
    python_client(
        "tls_clients.py",
        &[
            "cluster",
            &cluster.members[1].cluster_client_addr.to_string(),
            &dir,
        ],
    );

    // The inter-node port refuses a peer without TLS even with the right secret, and takes
    // one with the CA's certificate.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let target = cluster.members[2].cluster_addr;
    let limit = Duration::from_secs(5);
    let plain = shoal_wire::AuthConfig::new("shoal", shoal_tests::TEST_SECRET, "plain");
    let refused = runtime.block_on(shoal_wire::probe(target, &plain, limit));
    assert!(refused.is_err(), "a plain peer was accepted");
    let settings = shoal_tls::Settings {
        cert_file: certs.path("client.crt"),
        key_file: certs.path("client.key"),
        ca_cert_file: certs.path("ca.crt"),
        links: true,
        ..Default::default()
    };
    let tls = shoal_tls::Tls::load(&settings).unwrap();
    let with_tls = plain.clone().with_tls(tls.clone());
    let name = runtime.block_on(shoal_wire::probe(target, &with_tls, limit));
    assert_eq!(name.as_deref(), Ok("n2"));
    // TLS does not stand in for the secret.
    let wrong = shoal_wire::AuthConfig::new("shoal", "another-secret-of-16+", "x").with_tls(tls);
    let e = runtime
        .block_on(shoal_wire::probe(target, &wrong, limit))
        .unwrap_err();
    assert!(e.is_refusal(), "{e}");
    // A certificate from another CA is refused (with TLS 1.3 the peer learns it at its
    // first read after the handshake, as an I/O error).
    certs.ca("other");
    certs.signed("stranger", "other");
    let stranger = shoal_tls::Settings {
        cert_file: certs.path("stranger.crt"),
        key_file: certs.path("stranger.key"),
        ..settings
    };
    let stranger = plain.with_tls(shoal_tls::Tls::load(&stranger).unwrap());
    let refused = runtime.block_on(shoal_wire::probe(target, &stranger, limit));
    assert!(
        refused.is_err(),
        "a certificate from another CA was accepted"
    );
}
