//! Which client sockets the peer has closed, asked of the kernel without reading them
//! (`shoal_engine::client::HangupProbe`): INFO's `connected_clients` and CLIENT LIST leave
//! out a client that closed before its worker noticed, as Redis's one thread would have.
//!
//! The one `unsafe` call of this crate: `poll(2)` with a zero timeout on descriptor numbers.
//! It reads nothing and changes no socket; a descriptor that is closed meanwhile answers
//! `POLLNVAL` (counted as closed), one reused meanwhile tells of its new socket.

/// `closed[i]`: the peer of `fds[i]` has closed (or the socket failed); -1 is never closed.
#[allow(unsafe_code)]
pub fn probe(fds: &[i32], closed: &mut [bool]) {
    #[cfg(target_os = "linux")]
    {
        let mut polled: Vec<libc::pollfd> = fds
            .iter()
            .map(|&fd| libc::pollfd {
                fd,
                events: libc::POLLRDHUP,
                revents: 0,
            })
            .collect();
        // SAFETY: `polled` is a valid, exclusively borrowed array of `polled.len()`
        // `pollfd`s for the whole call; a zero timeout does not block. Negative
        // descriptors are ignored by poll(2); others are only examined.
        let ready = unsafe { libc::poll(polled.as_mut_ptr(), polled.len() as libc::nfds_t, 0) };
        if ready <= 0 {
            return;
        }
        let gone = libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR | libc::POLLNVAL;
        for (c, p) in closed.iter_mut().zip(&polled) {
            *c = p.revents & gone != 0;
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (fds, closed);
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsRawFd;

    #[test]
    fn tells_a_closed_peer_from_an_open_one() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let (open_client, closing_client) = (
            TcpStream::connect(addr).unwrap(),
            TcpStream::connect(addr).unwrap(),
        );
        let (open, _) = listener.accept().unwrap();
        let (closing, _) = listener.accept().unwrap();
        // Unread data is not a close.
        (&open_client).write_all(b"PING\r\n").unwrap();
        drop(closing_client);
        let fds = [open.as_raw_fd(), closing.as_raw_fd(), -1];
        // The FIN has arrived once poll(2) with a timeout says so; then the probe must see it.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let mut closed = [false; 3];
        while !closed[1] && std::time::Instant::now() < deadline {
            let mut pfd = [libc::pollfd {
                fd: fds[1],
                events: libc::POLLRDHUP,
                revents: 0,
            }];
            #[allow(unsafe_code)]
            // SAFETY: one valid pollfd, borrowed for the call.
            unsafe {
                libc::poll(pfd.as_mut_ptr(), 1, 100)
            };
            super::probe(&fds, &mut closed);
        }
        assert_eq!(closed, [false, true, false]);
        drop(open_client);
    }
}
