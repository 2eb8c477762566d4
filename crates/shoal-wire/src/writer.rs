//! The write half of a connection, shared by client and server: senders queue frames in an
//! [`Outbox`] and one task drains it into a buffer and writes each drained batch with one
//! `write_all`, so a burst of small requests costs one system call instead of one per frame.
//!
//! The outbox is a vector behind a lock rather than a channel: a sender pays one uncontended
//! lock, and wakes the writer only when the outbox was empty; the writer takes everything
//! queued in one swap. (A bounded channel cost a semaphore permit, a queue slot and a release
//! under the semaphore's lock per frame, a measurable share of a forwarded request.)

use std::sync::{Mutex, MutexGuard, PoisonError};

use bytes::BytesMut;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::Notify;

use crate::frame::Frame;

/// Stop adding frames to a batch once it holds this much: bounds the latency of the first
/// frame in a batch and the buffer kept between batches.
const MAX_BATCH_BYTES: usize = 256 * 1024;

/// A buffer that grew past this for one huge frame is dropped after its batch rather than
/// kept for the life of the connection.
const KEEP_BUFFER_BYTES: usize = 1024 * 1024;

/// Frames waiting for a connection's writer task: at most `cap` of them.
#[derive(Debug)]
pub(crate) struct Outbox {
    state: Mutex<Queued>,
    cap: usize,
    /// Wakes the writer: a frame arrived in an empty outbox, or it was closed.
    ready: Notify,
    /// Wakes senders waiting for room ([`Outbox::push`]).
    room: Notify,
}

#[derive(Debug, Default)]
struct Queued {
    frames: Vec<Frame>,
    closed: bool,
}

/// Why a frame was not queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PushError {
    /// `cap` frames are queued already.
    Full,
    /// The writer is gone, or the outbox was closed.
    Closed,
}

impl Outbox {
    pub(crate) fn new(cap: usize) -> Outbox {
        Outbox {
            state: Mutex::new(Queued::default()),
            cap: cap.max(1),
            ready: Notify::new(),
            room: Notify::new(),
        }
    }

    fn state(&self) -> MutexGuard<'_, Queued> {
        // Every critical section is a push or a swap: the state is consistent after a panic.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues `frame` unless the outbox is full or closed.
    pub(crate) fn try_push(&self, frame: Frame) -> Result<(), PushError> {
        self.offer(frame).map_err(|(e, _)| e)
    }

    /// Queues `frame`, waiting while the outbox is full; `Err` if it is closed.
    pub(crate) async fn push(&self, frame: Frame) -> Result<(), PushError> {
        let mut frame = frame;
        loop {
            let room = self.room.notified();
            tokio::pin!(room);
            // Registered before the attempt, so room made after it is not missed.
            room.as_mut().enable();
            match self.offer(frame) {
                Ok(()) => return Ok(()),
                Err((PushError::Closed, _)) => return Err(PushError::Closed),
                Err((PushError::Full, back)) => frame = back,
            }
            room.await;
        }
    }

    /// Queues `frame`, or hands it back with the reason it was not queued.
    fn offer(&self, frame: Frame) -> Result<(), (PushError, Frame)> {
        let mut state = self.state();
        if state.closed {
            return Err((PushError::Closed, frame));
        }
        if state.frames.len() >= self.cap {
            return Err((PushError::Full, frame));
        }
        state.frames.push(frame);
        let first = state.frames.len() == 1;
        drop(state);
        if first {
            self.ready.notify_one();
        }
        Ok(())
    }

    /// No more frames are taken; the writer writes what is queued and ends.
    pub(crate) fn close(&self) {
        self.state().closed = true;
        self.ready.notify_one();
        self.room.notify_waiters();
    }

    /// Moves every queued frame into `into` (empty); false once closed and empty.
    fn take(&self, into: &mut Vec<Frame>) -> bool {
        let mut state = self.state();
        std::mem::swap(&mut state.frames, into);
        let open = !state.closed || !into.is_empty();
        drop(state);
        if !into.is_empty() {
            self.room.notify_waiters();
        }
        open
    }
}
/// Writes the frames queued in `outbox` until it is closed and empty (then shuts the write
/// half down and returns `Ok`) or a write fails (then it closes the outbox, so senders learn
/// of it). Frames that cannot be encoded were refused by their senders already (sizes are
/// checked before queueing); one that slips through is skipped.
pub(crate) async fn run_writer<W>(mut wr: W, outbox: &Outbox) -> std::io::Result<()>
where
    W: AsyncWrite + Unpin,
{
    let written = write_batches(&mut wr, outbox).await;
    outbox.close();
    written?;
    wr.shutdown().await
}

async fn write_batches<W>(wr: &mut W, outbox: &Outbox) -> std::io::Result<()>
where
    W: AsyncWrite + Unpin,
{
    let mut buf = BytesMut::with_capacity(16 * 1024);
    let mut frames = Vec::new();
    loop {
        // Registered before looking, so a frame queued after the look wakes this.
        let ready = outbox.ready.notified();
        tokio::pin!(ready);
        ready.as_mut().enable();
        if !outbox.take(&mut frames) {
            return Ok(());
        }
        if frames.is_empty() {
            ready.await;
            continue;
        }
        encode_all(&mut frames, &mut buf);
        // Let the tasks that are ready to run go first: under load they are the ones about
        // to queue more frames, which then share this batch's system call. Idle, the yield
        // costs one trip through the scheduler.
        tokio::task::yield_now().await;
        if buf.len() < MAX_BATCH_BYTES {
            outbox.take(&mut frames);
            encode_all(&mut frames, &mut buf);
        }
        wr.write_all(&buf).await?;
        // Over TLS, records may still wait in the session after `write_all` (the socket was
        // full); without a flush they would wait for the next frame. Free on plain TCP.
        wr.flush().await?;
        buf.clear();
        if buf.capacity() > KEEP_BUFFER_BYTES {
            buf = BytesMut::with_capacity(16 * 1024);
        }
    }
}

/// Encodes and empties `frames` (its capacity is kept for the next batch).
fn encode_all(frames: &mut Vec<Frame>, buf: &mut BytesMut) {
    for frame in frames.drain(..) {
        if let Err(e) = frame.encode(buf) {
            tracing::error!(error = %e, kind = ?frame.kind(), "dropping a frame that cannot be encoded");
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use bytes::{Bytes, BytesMut};
    use tokio::io::AsyncReadExt;

    use super::*;
    use crate::frame::{decode, FrameLimits};

    /// A writer that keeps what it is given until flushed (as a TLS session keeps records
    /// the socket had no room for) gets every batch flushed: the frame arrives with no
    /// further frame behind it to push it out.
    #[tokio::test]
    async fn every_batch_is_flushed() {
        let (near, mut far) = tokio::io::duplex(1 << 20);
        let held = tokio::io::BufWriter::with_capacity(1 << 20, near);
        let outbox = std::sync::Arc::new(Outbox::new(4));
        let o = outbox.clone();
        let writer = tokio::spawn(async move { run_writer(held, &o).await });
        let frame = Frame::Request {
            id: 7,
            epoch: 1,
            body: Bytes::from_static(b"hello"),
        };
        outbox.try_push(frame).unwrap();
        let mut buf = BytesMut::new();
        let got = tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                if let Some(f) = decode(&mut buf, &FrameLimits::default()).unwrap() {
                    return f;
                }
                assert!(far.read_buf(&mut buf).await.unwrap() > 0, "closed");
            }
        })
        .await
        .expect("the frame was held back unflushed");
        assert!(matches!(got, Frame::Request { id: 7, .. }), "{got:?}");
        outbox.close();
        writer.await.unwrap().unwrap();
    }
}
