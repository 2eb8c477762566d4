//! The script or function that runs now, as the other clients see it (Redis's
//! `busy-reply-threshold`).
//!
//! A script runs with every other command kept out (`shoal_store::gate`). Past the
//! threshold it keeps running, as in Redis, and becomes *busy*: the commands kept out stop
//! waiting and are answered [`BUSY_EVAL`] or [`BUSY_FUNCTION`], but for the few Redis lets
//! through (`allow_busy` in the command table: SCRIPT KILL, FUNCTION KILL and STATS,
//! SHUTDOWN, AUTH, ...). SCRIPT KILL / FUNCTION KILL stop a busy script that has not
//! written ([`Running::kill`]); one that has is UNKILLABLE, and only SHUTDOWN ends it
//! ([`Running::abort`]). A write and a kill exclude each other through one atomic state, so
//! a script is never killed after a write it made.
//!
//! Unlike Redis, whose one thread answers the others while it runs a script, a worker
//! thread serves many connections, which wait while it runs one. So a client's script that
//! runs [`MOVE_AFTER`] without having changed anything stops and runs again, from the start,
//! on a thread of its own while its worker serves the others ([`ScriptMove`]; the front end
//! moves it): nothing tells the two runs apart but the time they took. One that changed
//! something first runs to its end where it is, and the clients served by its worker wait
//! until it ends; the others are answered BUSY, and new connections are served elsewhere
//! ([`Running::busy_thread`]).

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering::SeqCst};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;

/// The answer to a command kept out by a busy script (EVAL's kind).
pub const BUSY_EVAL: &str =
    "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";
/// The answer to a command kept out by a busy function.
pub const BUSY_FUNCTION: &str =
    "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.";
/// SCRIPT KILL of a script that wrote.
pub const UNKILLABLE: &str = "UNKILLABLE Sorry the script already executed write commands \
     against the dataset. You can either wait the script termination or kill the server in a \
     hard way using the SHUTDOWN NOSAVE command.";
/// SCRIPT KILL with no script running (past its threshold).
pub const NOTBUSY: &str = "NOTBUSY No scripts in execution right now.";
/// What a killed script ends with.
pub const KILLED_BY_USER: &str = "ERR Script killed by user with SCRIPT KILL...";

/// How long a client's script runs on its connection's worker, changing nothing, before it
/// stops there to run again on a thread of its own (sooner when `busy-reply-threshold` is
/// shorter). At most this much of a long script's work is done twice.
pub const MOVE_AFTER: Duration = Duration::from_millis(100);

/// Where a script may run, as the front end says before each command (`Session`'s
/// `script_move`) and the script answers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ScriptMove {
    /// It runs to its end where it is (inside a transaction, for another node, in a
    /// cluster).
    #[default]
    Stay,
    /// The front end can run it again elsewhere: a script that runs long without effects
    /// ([`stops_to_move`]) stops, its reply to be ignored, and says `Stopped`.
    May,
    /// It stopped to move after running `ran`: the front end runs the command again with
    /// `Again`.
    Stopped { ran: Duration },
    /// Run again after it stopped: it runs to its end, its time counted with the `ran` of
    /// its first run (`busy-reply-threshold`, FUNCTION STATS).
    Again { ran: Duration },
    /// Run again, it found a CLIENT PAUSE that holds it until `until_ms` (Unix ms), which
    /// came in between its two runs: the front end waits for the pause to end and runs it
    /// `Again`, as a paused client's command waits.
    Held { ran: Duration, until_ms: u64 },
}

impl ScriptMove {
    /// The script did not run (it stopped to move, or found a pause): its reply is no
    /// answer, and its call is not counted.
    pub fn set_aside(&self) -> bool {
        matches!(self, ScriptMove::Stopped { .. } | ScriptMove::Held { .. })
    }
}

/// Whether a script that may move stops to move, after running `elapsed` (pure): past
/// [`MOVE_AFTER`], or the busy threshold when that is shorter (so it is never seen busy
/// before it moves), unless it had an effect a second run would repeat (`effects`: a
/// write, a message published, an error counted).
pub fn stops_to_move(elapsed: Duration, threshold: Duration, effects: bool) -> bool {
    !effects && elapsed >= MOVE_AFTER.min(threshold)
}

const RUNNING: u8 = 1;
const FUNCTION: u8 = 1 << 1;
const BUSY: u8 = 1 << 2;
const WROTE: u8 = 1 << 3;
const KILLED: u8 = 1 << 4;

/// See the module docs. One per engine (one script runs at a time); clones share it (the
/// running script's hook holds one).
#[derive(Default, Clone)]
pub struct Running(Arc<State>);

#[derive(Default)]
struct State {
    state: AtomicU8,
    /// The node stops: a script busy now or later is ended ([`Running::abort`]).
    stopping: AtomicBool,
    /// What the others may ask of it while it runs.
    about: Mutex<Option<About>>,
}

/// The running script, for FUNCTION STATS (name, command, start) and the listener (the
/// thread running it, once it is busy: new connections are served elsewhere).
struct About {
    name: String,
    command: Vec<Bytes>,
    started: Instant,
    thread: Option<std::thread::ThreadId>,
}

/// A script's run; it ends when this is dropped.
#[must_use]
pub struct Run<'a>(&'a Running);

impl Drop for Run<'_> {
    fn drop(&mut self) {
        let state = &self.0 .0;
        *state.about.lock().unwrap_or_else(PoisonError::into_inner) = None;
        state.state.store(0, SeqCst);
    }
}

/// What SCRIPT KILL (`by_function_kill` false) or FUNCTION KILL does to the script in
/// `state`: the state to set, or the error to answer (Redis's `scriptKill`).
pub fn kill_decision(state: u8, by_function_kill: bool) -> Result<u8, &'static str> {
    if state & BUSY == 0 {
        return Err(NOTBUSY);
    }
    if state & WROTE != 0 {
        return Err(UNKILLABLE);
    }
    match (state & FUNCTION != 0, by_function_kill) {
        (true, false) => Err(BUSY_FUNCTION),
        (false, true) => Err(BUSY_EVAL),
        _ => Ok(state | KILLED),
    }
}

impl Running {
    /// A script (`function` false) or function starts (`started`: when its first run
    /// started, for one that moved): `name` and `command` for FUNCTION STATS.
    pub fn start(
        &self,
        function: bool,
        name: String,
        command: Vec<Bytes>,
        started: Instant,
    ) -> Run<'_> {
        *self.0.about.lock().unwrap_or_else(PoisonError::into_inner) = Some(About {
            name,
            command,
            started,
            thread: None,
        });
        let kind = if function {
            RUNNING | FUNCTION
        } else {
            RUNNING
        };
        self.0.state.store(kind, SeqCst);
        Run(self)
    }

    /// The script ran past the threshold: the others are answered BUSY from now on (and
    /// it ends if the node stops).
    pub fn turn_busy(&self) {
        if self.0.state.fetch_or(BUSY, SeqCst) & BUSY == 0 {
            let mut about = self.0.about.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(about) = about.as_mut() {
                about.thread = Some(std::thread::current().id());
            }
        }
        if self.0.stopping.load(SeqCst) {
            self.0.state.fetch_or(KILLED | WROTE, SeqCst);
        }
    }

    /// The answer to a command kept out now, `None` unless a script is busy.
    pub fn busy_reply(&self) -> Option<&'static str> {
        let state = self.0.state.load(SeqCst);
        if state & BUSY == 0 {
            None
        } else if state & FUNCTION != 0 {
            Some(BUSY_FUNCTION)
        } else {
            Some(BUSY_EVAL)
        }
    }

    /// The answer to a command a script kept out: BUSY for its kind (for EVAL's when the
    /// script has just ended).
    pub fn refusal(&self) -> &'static str {
        self.busy_reply().unwrap_or(BUSY_EVAL)
    }

    /// The thread running the busy script, if one is busy.
    pub fn busy_thread(&self) -> Option<std::thread::ThreadId> {
        if !self.is_busy() {
            return None;
        }
        let about = self.0.about.lock().unwrap_or_else(PoisonError::into_inner);
        about.as_ref()?.thread
    }

    /// True while a script is busy.
    pub fn is_busy(&self) -> bool {
        self.0.state.load(SeqCst) & BUSY != 0
    }

    /// The running script is about to write: false (and nothing to write) when it was
    /// killed, so a kill never follows a write.
    pub fn may_write(&self) -> bool {
        let mut state = self.0.state.load(SeqCst);
        loop {
            if state & KILLED != 0 {
                return false;
            }
            if state & WROTE != 0 || state & RUNNING == 0 {
                return true;
            }
            match self
                .0
                .state
                .compare_exchange(state, state | WROTE, SeqCst, SeqCst)
            {
                Ok(_) => return true,
                Err(now) => state = now,
            }
        }
    }

    /// True once the running script was killed (its hook then ends it).
    pub fn killed(&self) -> bool {
        self.0.state.load(SeqCst) & KILLED != 0
    }

    /// SCRIPT KILL (`by_function_kill` false) or FUNCTION KILL: `Err` holds the answer.
    pub fn kill(&self, by_function_kill: bool) -> Result<(), &'static str> {
        let mut state = self.0.state.load(SeqCst);
        loop {
            let next = kill_decision(state, by_function_kill)?;
            match self.0.state.compare_exchange(state, next, SeqCst, SeqCst) {
                Ok(_) => return Ok(()),
                Err(now) => state = now,
            }
        }
    }

    /// The node stops (SHUTDOWN NOSAVE, SIGTERM): a script busy now, or once it is, ends at
    /// its next check, written or not; one that ends within the threshold runs whole.
    pub fn abort(&self) {
        self.0.stopping.store(true, SeqCst);
        if self.0.state.load(SeqCst) & BUSY != 0 {
            self.0.state.fetch_or(KILLED | WROTE, SeqCst);
        }
    }

    /// FUNCTION STATS's `running_script`: the name, the command and how long it has run
    /// (ms), while a script runs.
    pub fn about(&self) -> Option<(String, Vec<Bytes>, u64)> {
        let about = self.0.about.lock().unwrap_or_else(PoisonError::into_inner);
        let about = about.as_ref()?;
        let ms = u64::try_from(about.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        Some((about.name.clone(), about.command.clone(), ms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_script_moves_when_it_ran_long_without_effects() {
        let ms = Duration::from_millis;
        let threshold = ms(5_000);
        assert!(!stops_to_move(ms(0), threshold, false));
        assert!(!stops_to_move(MOVE_AFTER - ms(1), threshold, false));
        assert!(stops_to_move(MOVE_AFTER, threshold, false));
        assert!(!stops_to_move(ms(10_000), threshold, true), "it wrote");
        // A threshold shorter than MOVE_AFTER: it moves before anyone sees it busy.
        assert!(stops_to_move(ms(10), ms(10), false));
        assert!(!stops_to_move(ms(9), ms(10), false));
    }

    #[test]
    fn kill_follows_redis() {
        assert_eq!(kill_decision(0, false), Err(NOTBUSY));
        assert_eq!(kill_decision(RUNNING, false), Err(NOTBUSY));
        assert_eq!(
            kill_decision(RUNNING | BUSY, false),
            Ok(RUNNING | BUSY | KILLED)
        );
        assert_eq!(
            kill_decision(RUNNING | BUSY | WROTE, false),
            Err(UNKILLABLE)
        );
        assert_eq!(
            kill_decision(RUNNING | BUSY | FUNCTION, false),
            Err(BUSY_FUNCTION)
        );
        assert_eq!(kill_decision(RUNNING | BUSY, true), Err(BUSY_EVAL));
        assert!(kill_decision(RUNNING | BUSY | FUNCTION, true).is_ok());
        // A function that wrote: UNKILLABLE before the kind's error, as in Redis.
        assert_eq!(
            kill_decision(RUNNING | BUSY | FUNCTION | WROTE, false),
            Err(UNKILLABLE)
        );
    }

    #[test]
    fn a_write_and_a_kill_exclude_each_other() {
        let r = Running::default();
        assert_eq!(r.busy_reply(), None);
        {
            let _run = r.start(false, "f_x".into(), vec![], Instant::now());
            assert_eq!(r.busy_reply(), None);
            r.turn_busy();
            assert_eq!(r.busy_reply(), Some(BUSY_EVAL));
            assert_eq!(r.kill(false), Ok(()));
            assert!(r.killed());
            assert!(!r.may_write(), "killed: no write");
        }
        assert_eq!(r.busy_reply(), None);
        assert_eq!(r.about(), None);
        let _run = r.start(
            true,
            "lib_fn".into(),
            vec![Bytes::from("fcall")],
            Instant::now(),
        );
        assert!(r.may_write());
        r.turn_busy();
        assert_eq!(r.busy_reply(), Some(BUSY_FUNCTION));
        assert_eq!(r.kill(true), Err(UNKILLABLE));
        assert!(!r.killed());
        r.abort();
        assert!(r.killed());
        assert_eq!(r.about().map(|a| a.0), Some("lib_fn".to_string()));
        drop(_run);
        // Stopping: a script within its threshold runs on; once busy it ends.
        let _run = r.start(false, "f_y".into(), vec![], Instant::now());
        assert!(!r.killed());
        r.turn_busy();
        assert!(r.killed());
    }
}
