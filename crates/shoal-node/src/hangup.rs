//! Which client sockets the peer has closed, asked of the kernel without reading them
//! (`shoal_engine::client::HangupProbe`): INFO's `connected_clients` and CLIENT LIST leave
//! out a client that closed before its worker noticed, as Redis's one thread would have.
//!
//! The `unsafe` calls of this crate: `poll(2)` with a zero timeout on descriptor numbers,
//! and `ioctl(FIONREAD)` on those whose peer shut its writing side (closed only once nothing
//! is left to read). They read nothing and change no socket; a descriptor closed meanwhile
//! answers `POLLNVAL` (counted as closed). The registry leaves out a client whose connection
//! ended before its socket is closed (`ClientInfo::closing`), so a descriptor reused by
//! then is not taken for it.

/// `closed[i]`: the peer of `fds[i]` has closed with nothing left to read (or the socket
/// failed); -1 is never closed.
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
        let gone = libc::POLLHUP | libc::POLLERR | libc::POLLNVAL;
        for (c, p) in closed.iter_mut().zip(&polled) {
            // A peer that only shut its writing side may still have requests on their way
            // in: closed once nothing is left to read.
            *c = p.revents & gone != 0 || (p.revents & libc::POLLRDHUP != 0 && unread(p.fd) == 0);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (fds, closed);
}

/// Bytes waiting to be read on socket `fd` (FIONREAD); on an error, as if some were.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn unread(fd: i32) -> libc::c_int {
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD writes one `c_int` through the pointer, which is valid for the call.
    let r = unsafe { libc::ioctl(fd, libc::FIONREAD, &mut n as *mut libc::c_int) };
    if r < 0 {
        1
    } else {
        n
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::{Shutdown, TcpListener, TcpStream};
    use std::os::fd::AsRawFd;

    /// Waits (poll(2), at most 5 s) until the peer's shutdown of `fd`'s other end arrived.
    fn until_peer_shut(fd: i32) {
        let mut pfd = [libc::pollfd {
            fd,
            events: libc::POLLRDHUP,
            revents: 0,
        }];
        #[allow(unsafe_code)]
        // SAFETY: one valid pollfd, borrowed for the call.
        let ready = unsafe { libc::poll(pfd.as_mut_ptr(), 1, 5000) };
        assert_eq!(ready, 1, "the peer's end arrived");
    }

    #[test]
    fn tells_a_closed_peer_from_an_open_one() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let clients: Vec<TcpStream> = (0..3).map(|_| TcpStream::connect(addr).unwrap()).collect();
        let mut accepted: Vec<TcpStream> = (0..3).map(|_| listener.accept().unwrap().0).collect();
        // Accepted in order on loopback: match each client to its server end by port.
        accepted.sort_by_key(|s| s.peer_addr().unwrap().port());
        let mut clients = clients;
        clients.sort_by_key(|c| c.local_addr().unwrap().port());
        let mut clients = clients.into_iter();
        let (open_client, closing_client, mut half_client) = (
            clients.next().unwrap(),
            clients.next().unwrap(),
            clients.next().unwrap(),
        );
        // Unread data is not a close; a peer gone is; one that sent a request and shut its
        // writing side is once the request has been read.
        (&open_client).write_all(b"PING\r\n").unwrap();
        drop(closing_client);
        half_client.write_all(b"PING\r\n").unwrap();
        half_client.shutdown(Shutdown::Write).unwrap();
        let fds = [
            accepted[0].as_raw_fd(),
            accepted[1].as_raw_fd(),
            accepted[2].as_raw_fd(),
            -1,
        ];
        until_peer_shut(fds[1]);
        until_peer_shut(fds[2]);
        let mut closed = [false; 4];
        super::probe(&fds, &mut closed);
        assert_eq!(closed, [false, true, false, false]);
        let mut request = [0u8; 6];
        accepted[2].read_exact(&mut request).unwrap();
        super::probe(&fds, &mut closed);
        assert_eq!(closed, [false, true, true, false]);
        drop((open_client, half_client));
    }
}
