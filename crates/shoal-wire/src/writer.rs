//! The write half of a connection, shared by client and server: senders queue frames in an
//! [`Outbox`] and one task drains it into a buffer and writes each drained batch with one
//! `write_all`, so a burst of small requests costs one system call instead of one per frame.
//!
//! The outbox is a queue behind a lock rather than a channel: a sender pays one uncontended
//! lock, and wakes the writer only when the outbox was empty; the writer takes a batch's
//! worth of frames (up to `MAX_BATCH_BYTES`) under one lock. (A bounded channel cost a semaphore permit, a queue slot and a release
//! under the semaphore's lock per frame, a measurable share of a forwarded request.)

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard, PoisonError};

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::Notify;

use crate::frame::Frame;

/// Stop taking frames for a batch once they hold this much: bounds the latency of the first
/// frame in a batch and the buffer kept between batches. The rest stay in the outbox, where
/// they count against its bound.
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
    frames: VecDeque<Frame>,
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
    pub(crate) fn offer(&self, frame: Frame) -> Result<(), (PushError, Frame)> {
        let mut state = self.state();
        if state.closed {
            return Err((PushError::Closed, frame));
        }
        if state.frames.len() >= self.cap {
            return Err((PushError::Full, frame));
        }
        state.frames.push_back(frame);
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

    /// Moves queued frames into `into`, in order, until they hold about `bytes` more; false
    /// once closed and empty.
    fn take(&self, into: &mut Vec<Frame>, bytes: usize) -> bool {
        let mut state = self.state();
        let mut taken = 0;
        while taken < bytes {
            let Some(frame) = state.frames.pop_front() else {
                break;
            };
            taken += approximate_len(&frame);
            into.push(frame);
        }
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
    // Large bodies written after the bytes `buf` held when their frame's head was encoded.
    let mut apart: Vec<(usize, Bytes)> = Vec::new();
    loop {
        // Registered before looking, so a frame queued after the look wakes this.
        let ready = outbox.ready.notified();
        tokio::pin!(ready);
        ready.as_mut().enable();
        if !outbox.take(&mut frames, MAX_BATCH_BYTES) {
            return Ok(());
        }
        if frames.is_empty() {
            ready.await;
            continue;
        }
        encode_all(&mut frames, &mut buf, &mut apart);
        // Let the tasks that are ready to run go first: under load they are the ones about
        // to queue more frames, which then share this batch's system call. Idle, the yield
        // costs one trip through the scheduler.
        tokio::task::yield_now().await;
        if buf.len() < MAX_BATCH_BYTES {
            outbox.take(&mut frames, MAX_BATCH_BYTES - buf.len());
            encode_all(&mut frames, &mut buf, &mut apart);
        }
        let mut at = 0;
        for (end, body) in apart.drain(..) {
            wr.write_all(&buf[at..end]).await?;
            wr.write_all(&body).await?;
            at = end;
        }
        wr.write_all(&buf[at..]).await?;
        // Over TLS, records may still wait in the session after `write_all` (the socket was
        // full); without a flush they would wait for the next frame. Free on plain TCP.
        wr.flush().await?;
        buf.clear();
        if buf.capacity() > KEEP_BUFFER_BYTES {
            buf = BytesMut::with_capacity(16 * 1024);
        }
    }
}

/// About the bytes `frame` encodes to (its body, or a header's worth).
fn approximate_len(frame: &Frame) -> usize {
    const HEADER: usize = 32;
    match frame {
        Frame::Request { body, .. } | Frame::Response { body, .. } => HEADER + body.len(),
        Frame::Error { message, .. } | Frame::Refused { message, .. } => HEADER + message.len(),
        _ => HEADER,
    }
}

/// Encodes and empties `frames` (its capacity is kept for the next batch); a large body is
/// not copied but noted in `apart`, to be written once `buf` is written up to where its
/// frame's head ends.
fn encode_all(frames: &mut Vec<Frame>, buf: &mut BytesMut, apart: &mut Vec<(usize, Bytes)>) {
    for frame in frames.drain(..) {
        match frame.encode_head(buf) {
            Ok(Some(body)) => apart.push((buf.len(), body)),
            Ok(None) => {}
            Err(e) => {
                tracing::error!(error = %e, kind = ?frame.kind(), "dropping a frame that cannot be encoded");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use bytes::{Bytes, BytesMut};
    use tokio::io::AsyncReadExt;

    use super::*;
    use crate::frame::{decode, FrameLimits, WRITE_APART};

    fn request(id: u64, len: usize) -> Frame {
        Frame::Request {
            id,
            epoch: 1,
            body: Bytes::from(vec![0u8; len]),
        }
    }

    /// A batch takes frames in order up to about `MAX_BATCH_BYTES`; the rest stay queued,
    /// counting against the bound, and a full outbox refuses more until a batch is taken.
    #[test]
    fn batches_are_bounded_and_the_rest_stays_queued() {
        let outbox = Outbox::new(8);
        for id in 0..8 {
            outbox.try_push(request(id, 100 * 1024)).unwrap();
        }
        assert_eq!(outbox.try_push(request(8, 1)), Err(PushError::Full));
        let mut frames = Vec::new();
        assert!(outbox.take(&mut frames, MAX_BATCH_BYTES));
        let ids: Vec<u64> = frames
            .iter()
            .map(|f| match f {
                Frame::Request { id, .. } => *id,
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(ids, [0, 1, 2], "about 256 KiB of 100 KiB frames, in order");
        outbox.try_push(request(8, 1)).unwrap();
        outbox.close();
        assert_eq!(outbox.try_push(request(9, 1)), Err(PushError::Closed));
        frames.clear();
        assert!(outbox.take(&mut frames, usize::MAX));
        assert_eq!(
            frames.len(),
            6,
            "what was queued before the close is still written"
        );
        frames.clear();
        assert!(!outbox.take(&mut frames, usize::MAX), "closed and empty");
    }

    /// A sender that waits for room goes on once the writer takes a batch, and learns of a
    /// close.
    #[tokio::test]
    async fn a_full_outbox_makes_senders_wait_for_room() {
        let outbox = std::sync::Arc::new(Outbox::new(1));
        outbox.try_push(request(0, 1)).unwrap();
        let o = outbox.clone();
        let waiting = tokio::spawn(async move { o.push(request(1, 1)).await });
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        assert!(!waiting.is_finished(), "queued past the bound");
        let mut frames = Vec::new();
        outbox.take(&mut frames, MAX_BATCH_BYTES);
        tokio::time::timeout(Duration::from_secs(10), waiting)
            .await
            .expect("room was made")
            .unwrap()
            .unwrap();
        let o = outbox.clone();
        let refused = tokio::spawn(async move { o.push(request(2, 1)).await });
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        outbox.close();
        let r = tokio::time::timeout(Duration::from_secs(10), refused)
            .await
            .expect("a close wakes the waiting sender")
            .unwrap();
        assert_eq!(r, Err(PushError::Closed));
    }

    /// Large bodies, written after their frames' heads rather than copied into the batch's
    /// buffer, arrive whole and in order among small frames.
    #[tokio::test]
    async fn large_bodies_written_apart_arrive_in_order() {
        let (near, mut far) = tokio::io::duplex(1 << 16);
        let outbox = std::sync::Arc::new(Outbox::new(16));
        let o = outbox.clone();
        let writer = tokio::spawn(async move { run_writer(near, &o).await });
        let sizes = [
            5,
            WRITE_APART,
            3,
            WRITE_APART * 3 + 1,
            0,
            70_000,
            WRITE_APART - 1,
        ];
        let body = |i: usize, len: usize| Bytes::from(vec![i as u8; len]);
        for (i, &len) in sizes.iter().enumerate() {
            let frame = Frame::Response {
                id: i as u64 + 1,
                epoch: 9,
                body: body(i, len),
            };
            outbox.push(frame).await.unwrap();
        }
        outbox.close();
        let mut buf = BytesMut::new();
        let mut got = Vec::new();
        let limits = FrameLimits::default();
        tokio::time::timeout(Duration::from_secs(10), async {
            while got.len() < sizes.len() {
                match decode(&mut buf, &limits).unwrap() {
                    Some(f) => got.push(f),
                    None => assert!(far.read_buf(&mut buf).await.unwrap() > 0, "closed early"),
                }
            }
        })
        .await
        .expect("every frame within the deadline");
        for (i, (f, &len)) in got.iter().zip(&sizes).enumerate() {
            let want = Frame::Response {
                id: i as u64 + 1,
                epoch: 9,
                body: body(i, len),
            };
            assert!(*f == want, "frame {i}");
        }
        writer.await.unwrap().unwrap();
    }

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
