//! The write half of a connection, shared by client and server: one task drains a bounded
//! channel of frames into a buffer and writes each drained batch with one `write_all`, so a
//! burst of small requests costs one system call instead of one per frame.

use bytes::BytesMut;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

use crate::frame::Frame;

/// Stop adding frames to a batch once it holds this much: bounds the latency of the first
/// frame in a batch and the buffer kept between batches.
const MAX_BATCH_BYTES: usize = 256 * 1024;

/// A buffer that grew past this for one huge frame is dropped after its batch rather than
/// kept for the life of the connection.
const KEEP_BUFFER_BYTES: usize = 1024 * 1024;

/// Writes frames from `rx` until the channel closes (then shuts the write half down and
/// returns `Ok`) or a write fails. Frames that cannot be encoded were refused by their
/// senders already (sizes are checked before queueing); one that slips through is skipped.
pub(crate) async fn run_writer<W>(mut wr: W, mut rx: mpsc::Receiver<Frame>) -> std::io::Result<()>
where
    W: AsyncWrite + Unpin,
{
    let mut buf = BytesMut::with_capacity(16 * 1024);
    while let Some(first) = rx.recv().await {
        encode_into(&first, &mut buf);
        drain(&mut rx, &mut buf);
        // Let the tasks that are ready to run go first: under load they are the ones about
        // to queue more frames, which then share this batch's system call. Idle, the yield
        // costs one trip through the scheduler.
        tokio::task::yield_now().await;
        drain(&mut rx, &mut buf);
        wr.write_all(&buf).await?;
        // Over TLS, records may still wait in the session after `write_all` (the socket was
        // full); without a flush they would wait for the next frame. Free on plain TCP.
        wr.flush().await?;
        buf.clear();
        if buf.capacity() > KEEP_BUFFER_BYTES {
            buf = BytesMut::with_capacity(16 * 1024);
        }
    }
    wr.shutdown().await
}

/// Adds every frame already queued to the batch, up to `MAX_BATCH_BYTES`.
fn drain(rx: &mut mpsc::Receiver<Frame>, buf: &mut BytesMut) {
    while buf.len() < MAX_BATCH_BYTES {
        match rx.try_recv() {
            Ok(frame) => encode_into(&frame, buf),
            Err(_) => break,
        }
    }
}

fn encode_into(frame: &Frame, buf: &mut BytesMut) {
    if let Err(e) = frame.encode(buf) {
        tracing::error!(error = %e, kind = ?frame.kind(), "dropping a frame that cannot be encoded");
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
        let (tx, rx) = mpsc::channel(4);
        let writer = tokio::spawn(run_writer(held, rx));
        let frame = Frame::Request {
            id: 7,
            epoch: 1,
            body: Bytes::from_static(b"hello"),
        };
        tx.send(frame).await.unwrap();
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
        drop(tx);
        writer.await.unwrap().unwrap();
    }
}
