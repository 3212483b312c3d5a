//! `TCP_NODELAY` on the pool's connections.
//!
//! sqlx 0.9.0 opens its TCP connections with Nagle's algorithm on (0.8 turned it off, and so
//! does libpq). Most of the driver's round trips are one write followed by a read, which Nagle
//! does not delay. A `COPY` is not: sqlx writes the data, then `CopyDone` in a second write,
//! and Nagle holds that small second write until the server acknowledges the first, which the
//! server's TCP stack delays by up to 40 ms because it has nothing to send back yet. Measured
//! with `queue-bench --workload enqueue-batch --producers 1`: from about 12,000 jobs/s (a stall
//! on most batches) to about 170,000, level with the hand-written insert (see BENCHMARKS.md).
//!
//! sqlx gives no handle on its socket, so a hook run after each new connection looks the
//! socket up among the process's file descriptors: every TCP socket connected to one of the
//! ports the pool connects to, with Nagle still on, gets `TCP_NODELAY`. That may include
//! another pool's connection to the same port, which is what libpq would have done for it.
//! When no such socket is found (another platform, a descriptor table that cannot be listed),
//! the pool does not use `COPY` at all and batches take the one-statement `INSERT`, which has
//! no second write.

use std::sync::atomic::{AtomicBool, Ordering};

/// Whether every connection the pool opened over TCP got `TCP_NODELAY` (so `COPY` cannot
/// stall on Nagle's algorithm).
#[derive(Debug)]
pub(crate) struct NoDelay {
    /// The ports of the pool's TCP hosts (empty: only Unix sockets, where Nagle does not apply).
    ports: Vec<u16>,
    missed: AtomicBool,
}

impl NoDelay {
    pub(crate) fn new(ports: Vec<u16>) -> Self {
        NoDelay {
            ports,
            missed: AtomicBool::new(false),
        }
    }

    /// Called after each new connection: turns Nagle off on it (and on any other socket of the
    /// process connected to the same ports). A connection it could not find turns `COPY` off.
    pub(crate) fn after_connect(&self) {
        if self.ports.is_empty() || self.missed.load(Ordering::Relaxed) {
            return;
        }
        match set_nodelay(&self.ports) {
            Ok(found) if found > 0 => {}
            outcome => {
                self.missed.store(true, Ordering::Relaxed);
                tracing::debug!(
                    target: crate::LOG_TARGET,
                    ?outcome,
                    "TCP_NODELAY could not be set on a new connection; batches will not use COPY"
                );
            }
        }
    }

    /// Whether `COPY` is safe from the Nagle stall on every connection so far.
    pub(crate) fn copy_ok(&self) -> bool {
        !self.missed.load(Ordering::Relaxed)
    }
}

/// Sets `TCP_NODELAY` on every TCP socket of this process connected to one of `ports`;
/// returns how many such sockets there are (including those that had it already).
#[cfg(unix)]
fn set_nodelay(ports: &[u16]) -> std::io::Result<usize> {
    use std::os::fd::{BorrowedFd, RawFd};

    let dir = std::fs::read_dir("/proc/self/fd").or_else(|_| std::fs::read_dir("/dev/fd"))?;
    let mut found = 0;
    for entry in dir.flatten() {
        let Some(raw) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<RawFd>().ok())
        else {
            continue;
        };
        #[allow(unsafe_code)]
        // SAFETY: the descriptor is only passed to getpeername, getsockopt and setsockopt, which
        // read or set socket options and touch no memory of ours. If another thread closes it
        // meanwhile, those calls fail (EBADF, ENOTSOCK) or reach whatever file took the number,
        // which is then skipped unless it too is a TCP socket to the same port.
        let fd = unsafe { BorrowedFd::borrow_raw(raw) };
        let socket = socket2::SockRef::from(&fd);
        let to_port = socket
            .peer_addr()
            .ok()
            .and_then(|a| a.as_socket())
            .is_some_and(|a| ports.contains(&a.port()));
        if !to_port || !matches!(socket.r#type(), Ok(t) if t == socket2::Type::STREAM) {
            continue;
        }
        if socket.tcp_nodelay().unwrap_or(false) || socket.set_tcp_nodelay(true).is_ok() {
            found += 1;
        }
    }
    Ok(found)
}

#[cfg(not(unix))]
fn set_nodelay(_ports: &[u16]) -> std::io::Result<usize> {
    Err(std::io::ErrorKind::Unsupported.into())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn sets_nodelay_on_sockets_to_the_port_only() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let other = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let ours = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        let theirs = std::net::TcpStream::connect(other.local_addr().unwrap()).unwrap();
        assert!(!ours.nodelay().unwrap());

        let n = NoDelay::new(vec![port]);
        n.after_connect();
        assert!(
            ours.nodelay().unwrap(),
            "the socket to the port has TCP_NODELAY"
        );
        assert!(
            !theirs.nodelay().unwrap(),
            "a socket to another port is left alone"
        );
        assert!(n.copy_ok());
    }

    #[test]
    fn no_socket_to_the_port_turns_copy_off() {
        // A port nothing in this process is connected to.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let n = NoDelay::new(vec![port]);
        n.after_connect();
        assert!(!n.copy_ok());
    }

    #[test]
    fn unix_sockets_only_keep_copy() {
        let n = NoDelay::new(Vec::new());
        n.after_connect();
        assert!(n.copy_ok());
    }
}
