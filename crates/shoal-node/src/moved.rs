//! Scripts moved off their connection's worker (`shoal_engine::busy::ScriptMove`).
//!
//! A worker thread serves many connections; a script it runs holds them all up, and one
//! that runs past `busy-reply-threshold` would hold them up to its end, where Redis, whose
//! one thread answers every client while a script runs, answers them BUSY. So a client's
//! script that runs long without having changed anything stops on its worker and runs again
//! from the start here, on one thread of the process's own (scripts run one at a time
//! anyway: `shoal_store::gate`), while its worker serves the others, which wait for it or
//! are answered BUSY as on any other worker. The connection hands its session over with the
//! command and waits for the reply as a blocked client does (its next commands wait too);
//! the session comes back with the reply ([`Returned`]).
//!
//! Single nodes only: in a cluster a script runs where its keys are, with what it writes
//! replicated from there, and it runs to its end where it started.

use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use shoal_cluster::router::{dispatch, encode, InFlight, Outcome};
use shoal_cluster::Server;
use shoal_engine::busy::ScriptMove;
use shoal_engine::cmd::Session;
use shoal_resp::Reply;
use tokio::sync::{mpsc, oneshot};

/// What comes back from a moved script: the session, and the reply to send (empty when
/// the reply passed the client's output limit: `over_limit`, and the client is closed).
pub struct Returned {
    pub session: Session,
    pub reply: Bytes,
    pub over_limit: bool,
}

struct Job {
    node: Arc<Server>,
    session: Session,
    args: Vec<Bytes>,
    done: oneshot::Sender<Returned>,
}

/// Scripts waiting for the thread (their connections wait with them).
const QUEUE: usize = 64;

static THREAD: OnceLock<Option<mpsc::Sender<Job>>> = OnceLock::new();

/// The scripts' thread, started at the first script that moves (`None` if it cannot be).
fn thread() -> Option<&'static mpsc::Sender<Job>> {
    THREAD
        .get_or_init(|| {
            let (tx, mut rx) = mpsc::channel::<Job>(QUEUE);
            let spawned = std::thread::Builder::new()
                .name("shoal-scripts".into())
                .spawn(move || {
                    while let Some(job) = rx.blocking_recv() {
                        let returned = run(&job.node, job.session, &job.args);
                        let _ = job.done.send(returned);
                    }
                });
            match spawned {
                Ok(_) => Some(tx),
                Err(e) => {
                    tracing::warn!(error = %e, "no thread for long scripts: they stay on their workers");
                    None
                }
            }
        })
        .as_ref()
}

/// Runs the command of a script that stopped to move (`args`, after running `ran`) again
/// on the scripts' thread, with the client's `session`; `None` if the session was lost on
/// the way (the thread ended), and the client must be closed. A CLIENT PAUSE that came in
/// between the two runs holds it until the pause ends.
pub async fn run_elsewhere(
    node: Arc<Server>,
    mut session: Session,
    args: Vec<Bytes>,
    ran: std::time::Duration,
) -> Option<Returned> {
    session.script_move = ScriptMove::Again { ran };
    loop {
        let returned = match thread() {
            Some(thread) => {
                let (done, returned) = oneshot::channel();
                let job = Job {
                    node: node.clone(),
                    session,
                    args: args.clone(),
                    done,
                };
                match thread.send(job).await {
                    Ok(()) => returned.await.ok()?,
                    // No thread any more: where it is, as before.
                    Err(mpsc::error::SendError(job)) => run(&node, job.session, &args),
                }
            }
            None => run(&node, session, &args),
        };
        let ScriptMove::Held { ran, until_ms } = returned.session.script_move else {
            return Some(returned);
        };
        crate::paused::wait_for_unpause(node.clone(), until_ms).await;
        session = returned.session;
        session.script_move = ScriptMove::Again { ran };
    }
}

/// Runs the command to its end on this thread.
fn run(node: &Arc<Server>, mut session: Session, args: &[Bytes]) -> Returned {
    let now = shoal_engine::clock::now_ms();
    let outcome = dispatch(node, &mut session, &mut InFlight::default(), args, now);
    if !session.script_move.set_aside() {
        session.script_move = ScriptMove::Stay;
    }
    let reply = match outcome {
        Outcome::Reply(reply) => reply,
        // A single node's script answers at once (it cannot block).
        Outcome::Later(_) | Outcome::Acked(_) => {
            Reply::error("ERR the script's reply could not be had on this node")
        }
    };
    let over_limit = session.budget.exceeded();
    let reply = match over_limit {
        true => Bytes::new(),
        false => encode(&reply, session.proto),
    };
    Returned {
        session,
        reply,
        over_limit,
    }
}
