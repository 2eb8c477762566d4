//! Helpers shared by the process-level tests: a real `shoald` started with `--port 0`, its
//! log read line by line, and a small RESP2 client. Every wait has a deadline; nothing sleeps
//! until something is ready.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, ChildStderr, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

pub const SHOALD: &str = env!("CARGO_BIN_EXE_shoald");
/// Generous for a debug build on a loaded 2-core machine; a healthy start takes milliseconds.
pub const START_DEADLINE: Duration = Duration::from_secs(10);
/// How long a rejected configuration may take to make the process exit.
pub const ERROR_EXIT_DEADLINE: Duration = Duration::from_secs(5);
/// How long a signalled daemon may take to exit.
pub const SHUTDOWN_DEADLINE: Duration = Duration::from_secs(10);
/// Longest wait for one reply; a server that stops answering fails the test after this.
pub const IO_TIMEOUT: Duration = Duration::from_secs(5);
/// Pause between `try_wait` polls, always inside a deadline loop.
pub const POLL: Duration = Duration::from_millis(10);
/// SIGINT (2) and SIGTERM (15) in `/proc/PID/status`'s signal masks (bit `n - 1`).
pub const HANDLED_SIGNALS: u64 = (1 << (2 - 1)) | (1 << (15 - 1));

// ---- the daemon ---------------------------------------------------------------------------

/// A `shoald` command with a clean environment: no inherited `SHOAL_*`, then `env`.
pub fn shoald(args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(SHOALD);
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("SHOAL_") {
            cmd.env_remove(key);
        }
    }
    cmd.args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null());
    cmd
}

/// `shoald args` run by sh after `ulimit <limit>` (`-n 256` sets the soft and hard
/// open-files limits, `-Sn 256` the soft one), with a clean environment as [`shoald`].
pub fn shoald_under_ulimit(limit: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new("sh");
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("SHOAL_") {
            cmd.env_remove(key);
        }
    }
    cmd.arg("-c")
        .arg(format!("ulimit {limit} && exec \"$0\" \"$@\""))
        .arg(SHOALD)
        .args(args)
        .stdin(Stdio::null());
    cmd
}

/// Forwards stderr line by line. Keeps draining after the receiver is gone so the daemon can
/// never block on a full pipe.
pub fn forward_lines(stderr: ChildStderr) -> Receiver<String> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            let _ = tx.send(line);
        }
    });
    rx
}

/// A running daemon; killed on drop if a test left it running (e.g. after a failed assert).
pub struct Daemon {
    pub child: Child,
    pub addr: SocketAddr,
    /// The `listening on` line.
    pub start_line: String,
    /// What was logged before it.
    pub early_log: Vec<String>,
    pub stderr: Receiver<String>,
}

impl Daemon {
    /// Starts `shoald` and waits (with a deadline) for its `listening on ADDR` line.
    pub fn start(args: &[&str], env: &[(&str, &str)]) -> Daemon {
        Daemon::spawn(shoald(args, env))
    }

    /// Starts `cmd` (a [`shoald`] command, or one wrapping it) and waits for its
    /// `listening on ADDR` line.
    pub fn spawn(mut cmd: Command) -> Daemon {
        let mut child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn shoald");
        let stderr = forward_lines(child.stderr.take().expect("stderr is piped"));
        let deadline = Instant::now() + START_DEADLINE;
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match stderr.recv_timeout(left) {
                Ok(line) => {
                    if let Some(addr) = listening_addr(&line) {
                        return Daemon {
                            child,
                            addr,
                            start_line: line,
                            early_log: seen,
                            stderr,
                        };
                    }
                    seen.push(line);
                }
                Err(RecvTimeoutError::Timeout) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!("no 'listening on' line within {START_DEADLINE:?}; stderr: {seen:#?}");
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let status = child.wait();
                    panic!("shoald exited before listening ({status:?}); stderr: {seen:#?}");
                }
            }
        }
    }

    pub fn connect(&self) -> Client {
        Client::connect(self.addr)
    }

    /// The first line logged before the start line, else the next log line, containing
    /// `needle` (lines before it are passed over), within `START_DEADLINE`.
    pub fn wait_line(&self, needle: &str) -> String {
        if let Some(line) = self.early_log.iter().find(|l| l.contains(needle)) {
            return line.clone();
        }
        let deadline = Instant::now() + START_DEADLINE;
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.stderr.recv_timeout(left) {
                Ok(line) if line.contains(needle) => return line,
                Ok(line) => seen.push(line),
                Err(e) => panic!("no log line with {needle:?} ({e:?}); saw {seen:#?}"),
            }
        }
    }

    /// The Memcached listener's address, from its start-up line (call once, after `start`).
    pub fn memcache_addr(&self) -> SocketAddr {
        listening_addr(&self.wait_line("memcached protocol listening on"))
            .expect("an address in the memcached start-up line")
    }

    /// Sends a signal once the daemon has installed its handlers for SIGTERM and SIGINT.
    ///
    /// The wait is needed because shoald logs its `listening on` line before it installs
    /// them: a signal in between gets the default action (killed, no graceful shutdown).
    /// `signal_right_after_the_start_line_is_graceful` covers that gap; these tests are
    /// about what happens once the handlers are in place.
    pub fn signal(&self, name: &str) {
        self.wait_for_signal_handlers();
        self.signal_now(name);
    }

    /// Sends a signal with kill(1), so this file needs no `unsafe`.
    pub fn signal_now(&self, name: &str) {
        let status = Command::new("kill")
            .arg(format!("-{name}"))
            .arg(self.child.id().to_string())
            .status()
            .expect("run kill(1)");
        assert!(status.success(), "kill -{name} failed: {status}");
    }

    /// The signals the daemon has handlers for now (`SigCgt` in `/proc/PID/status`).
    pub fn caught_signals(&self) -> u64 {
        let path = format!("/proc/{}/status", self.child.id());
        let status = std::fs::read_to_string(&path).expect("read /proc/PID/status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("SigCgt:"))
            .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
            .expect("SigCgt in /proc/PID/status")
    }

    /// Waits until the daemon catches SIGINT and SIGTERM.
    pub fn wait_for_signal_handlers(&self) {
        let deadline = Instant::now() + START_DEADLINE;
        while self.caught_signals() & HANDLED_SIGNALS != HANDLED_SIGNALS {
            assert!(
                Instant::now() < deadline,
                "SIGINT/SIGTERM handlers not installed within {START_DEADLINE:?}"
            );
            thread::sleep(Duration::from_millis(1));
        }
    }

    /// Waits for the process to exit, at most `within`.
    pub fn wait_exit(&mut self, within: Duration) -> ExitStatus {
        wait_with_deadline(&mut self.child, within)
            .unwrap_or_else(|| panic!("shoald still running {within:?} after being told to stop"))
    }

    /// Everything logged after the start line, once the process has exited: waits (with a
    /// deadline) for stderr to reach EOF, so no line still in the pipe is missed.
    pub fn rest_of_log(&self) -> Vec<String> {
        let deadline = Instant::now() + IO_TIMEOUT;
        let mut lines = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.stderr.recv_timeout(left) {
                Ok(line) => lines.push(line),
                Err(RecvTimeoutError::Disconnected) => return lines,
                Err(RecvTimeoutError::Timeout) => {
                    panic!("stderr still open {IO_TIMEOUT:?} after exit; so far: {lines:#?}")
                }
            }
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `... listening on 127.0.0.1:PORT (RESP) ...` -> the address.
pub fn listening_addr(line: &str) -> Option<SocketAddr> {
    let rest = line.split_once("listening on ")?.1;
    rest.split_whitespace().next()?.parse().ok()
}

/// Polls `try_wait` until the child exits or `within` passes (then `None`).
pub fn wait_with_deadline(child: &mut Child, within: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + within;
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return Some(status);
        }
        if Instant::now() >= deadline {
            return None;
        }
        thread::sleep(POLL);
    }
}

/// What a short-lived run (`--help`, a rejected configuration) left behind.
pub struct Finished {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `shoald` expecting it to exit on its own within `within`; kills it and fails if not.
pub fn run_to_exit(args: &[&str], env: &[(&str, &str)], within: Duration) -> Finished {
    let mut child = shoald(args, env)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn shoald");
    let read_all = |mut r: Box<dyn Read + Send>| {
        thread::spawn(move || {
            let mut s = String::new();
            let _ = r.read_to_string(&mut s);
            s
        })
    };
    let stdout = read_all(Box::new(child.stdout.take().expect("stdout is piped")));
    let stderr = read_all(Box::new(child.stderr.take().expect("stderr is piped")));
    let status = wait_with_deadline(&mut child, within);
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    let stdout = stdout.join().expect("stdout reader");
    let stderr = stderr.join().expect("stderr reader");
    let Some(status) = status else {
        panic!("shoald {args:?} still running after {within:?}; stderr:\n{stderr}");
    };
    Finished {
        status,
        stdout,
        stderr,
    }
}

/// A configuration file in the temp dir, unique per process and call, removed on drop.
pub struct TempConfig(pub PathBuf);

impl TempConfig {
    pub fn new(text: &str) -> TempConfig {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let name = format!(
            "shoald-test-{}-{}.toml",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let path = std::env::temp_dir().join(name);
        std::fs::write(&path, text).expect("write temp config");
        TempConfig(path)
    }

    pub fn path(&self) -> &str {
        self.0.to_str().expect("temp dir path is UTF-8")
    }
}

impl Drop for TempConfig {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

// ---- a RESP2 client ---------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resp {
    Simple(String),
    Error(String),
    Int(i64),
    Bulk(Vec<u8>),
    Nil,
    Array(Vec<Resp>),
}

impl Resp {
    pub fn ok() -> Resp {
        Resp::Simple("OK".into())
    }

    pub fn bulk(s: &str) -> Resp {
        Resp::Bulk(s.as_bytes().to_vec())
    }
}

/// One request as a RESP array of bulk strings.
pub fn encode(args: &[&[u8]], out: &mut Vec<u8>) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

pub struct Client {
    pub reader: BufReader<TcpStream>,
    pub writer: TcpStream,
}

impl Client {
    pub fn connect(addr: SocketAddr) -> Client {
        let stream = TcpStream::connect(addr).expect("connect to shoald");
        stream
            .set_read_timeout(Some(IO_TIMEOUT))
            .expect("set read timeout");
        let writer = stream.try_clone().expect("clone stream");
        Client {
            reader: BufReader::new(stream),
            writer,
        }
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).expect("write to shoald");
    }

    pub fn call(&mut self, args: &[&str]) -> Resp {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        let mut out = Vec::new();
        encode(&args, &mut out);
        self.send_raw(&out);
        self.read()
    }

    /// PING, then its reply: `+PONG`, or the refusal a full server sends first.
    pub fn read_or_pong(&mut self) -> Resp {
        let mut out = Vec::new();
        encode(&[b"PING"], &mut out);
        let _ = self.writer.write_all(&out);
        self.read()
    }

    /// The next reply; fails on EOF, timeout or a malformed reply.
    pub fn read(&mut self) -> Resp {
        match self.try_read() {
            Ok(Some(r)) => r,
            Ok(None) => panic!("connection closed while a reply was expected"),
            Err(e) => panic!("reading a reply: {e}"),
        }
    }

    /// The next reply, or `None` on a clean EOF before its first byte.
    pub fn try_read(&mut self) -> io::Result<Option<Resp>> {
        let mut line = Vec::new();
        if self.reader.read_until(b'\n', &mut line)? == 0 {
            return Ok(None);
        }
        self.parse(line).map(Some)
    }

    pub fn line(&mut self) -> io::Result<Vec<u8>> {
        let mut line = Vec::new();
        self.reader.read_until(b'\n', &mut line)?;
        Ok(line)
    }

    pub fn parse(&mut self, line: Vec<u8>) -> io::Result<Resp> {
        let bad = |what: &str| io::Error::new(io::ErrorKind::InvalidData, what.to_string());
        let Some(body) = line.strip_suffix(b"\r\n") else {
            return Err(bad(&format!(
                "unterminated line {:?}",
                String::from_utf8_lossy(&line)
            )));
        };
        let (kind, rest) = body.split_first().ok_or_else(|| bad("empty line"))?;
        let text = String::from_utf8_lossy(rest).into_owned();
        let num = |t: &str| {
            t.parse::<i64>()
                .map_err(|_| bad(&format!("bad number {t:?}")))
        };
        Ok(match kind {
            b'+' => Resp::Simple(text),
            b'-' => Resp::Error(text),
            b':' => Resp::Int(num(&text)?),
            b'$' => match num(&text)? {
                -1 => Resp::Nil,
                n => {
                    let n = usize::try_from(n).map_err(|_| bad("negative bulk length"))?;
                    let mut data = vec![0; n + 2];
                    self.reader.read_exact(&mut data)?;
                    if !data.ends_with(b"\r\n") {
                        return Err(bad("bulk string not followed by CRLF"));
                    }
                    data.truncate(n);
                    Resp::Bulk(data)
                }
            },
            b'*' => match num(&text)? {
                -1 => Resp::Nil,
                n => {
                    let mut items = Vec::new();
                    for _ in 0..n {
                        let l = self.line()?;
                        items.push(self.parse(l)?);
                    }
                    Resp::Array(items)
                }
            },
            other => return Err(bad(&format!("unexpected reply type {:?}", *other as char))),
        })
    }

    /// One parameter's value through `CONFIG GET`.
    pub fn config_get(&mut self, key: &str) -> String {
        match self.call(&["CONFIG", "GET", key]) {
            Resp::Array(items) => match &items[..] {
                [Resp::Bulk(k), Resp::Bulk(v)] if k == key.as_bytes() => {
                    String::from_utf8(v.clone()).expect("config value is UTF-8")
                }
                other => panic!("CONFIG GET {key}: unexpected {other:?}"),
            },
            other => panic!("CONFIG GET {key}: unexpected {other:?}"),
        }
    }

    /// Every parameter through `CONFIG GET *`.
    pub fn config_all(&mut self) -> BTreeMap<String, String> {
        let Resp::Array(items) = self.call(&["CONFIG", "GET", "*"]) else {
            panic!("CONFIG GET * is not an array");
        };
        let text = |r: &Resp| match r {
            Resp::Bulk(b) => String::from_utf8(b.clone()).expect("UTF-8"),
            other => panic!("CONFIG GET *: unexpected item {other:?}"),
        };
        items
            .chunks_exact(2)
            .map(|kv| (text(&kv[0]), text(&kv[1])))
            .collect()
    }
}

/// One of INFO's counters (`total_net_input_bytes`, `total_commands_processed`) as seen from
/// a separate connection, not counting that connection's own INFO requests: lets a test wait
/// until the daemon has read, or executed, what another connection sent.
pub struct StatGauge {
    pub observer: Client,
    pub field: &'static str,
    /// What each of the gauge's own INFO requests adds to `field`.
    pub own_share: u64,
    pub baseline: u64,
    pub polls: u64,
}

impl StatGauge {
    /// Bytes read from clients: counted as soon as they are read, before being executed.
    pub fn bytes_read(daemon: &Daemon) -> StatGauge {
        let mut request = Vec::new();
        encode(&[b"INFO", b"stats"], &mut request);
        StatGauge::new(daemon, "total_net_input_bytes", request.len() as u64)
    }

    /// Commands executed: counted once a read batch has been executed, before its replies
    /// are written.
    pub fn commands_executed(daemon: &Daemon) -> StatGauge {
        StatGauge::new(daemon, "total_commands_processed", 1)
    }

    pub fn new(daemon: &Daemon, field: &'static str, own_share: u64) -> StatGauge {
        let mut gauge = StatGauge {
            observer: daemon.connect(),
            field,
            own_share,
            baseline: 0,
            polls: 0,
        };
        // The first request's own share is part of the baseline: for bytes its request was
        // read before it ran, for commands the connection's earlier requests are counted.
        gauge.baseline = gauge.total();
        gauge.polls = 0;
        gauge
    }

    pub fn total(&mut self) -> u64 {
        self.polls += 1;
        let Resp::Bulk(info) = self.observer.call(&["INFO", "stats"]) else {
            panic!("INFO is not a bulk string");
        };
        let info = String::from_utf8_lossy(&info).into_owned();
        info.lines()
            .find_map(|l| l.strip_prefix(self.field)?.strip_prefix(':'))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {} in {info}", self.field))
    }

    /// Waits (with a deadline) until the others' share since `new` reaches `n`.
    pub fn wait_for(&mut self, n: usize) {
        let deadline = Instant::now() + IO_TIMEOUT;
        loop {
            let total = self.total();
            let others = total - self.baseline - self.polls * self.own_share;
            if others >= n as u64 {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{}: {others} of {n} within {IO_TIMEOUT:?}",
                self.field
            );
            thread::sleep(Duration::from_millis(1));
        }
    }
}
