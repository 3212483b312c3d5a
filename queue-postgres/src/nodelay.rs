//! `TCP_NODELAY` on the pool's connections.
//!
//! sqlx 0.9.0 opens its TCP connections with Nagle's algorithm on (0.8 turned it off, and so
//! does libpq). Most of the driver's round trips are one write followed by a read, which Nagle
//! does not delay. A `COPY` is not: sqlx writes the data, then `CopyDone` in a second write,
//! and Nagle holds that small second write until the server acknowledges the first, which the
//! server's TCP stack delays by up to 40 ms because it has nothing to send back yet. Measured
//! with `queue-bench --workload enqueue-batch --producers 1`: from about 12,000 jobs/s (a stall
//! on most batches) to about 170,000, level with the hand-written insert (BENCHMARKS.md, 4).
//!
//! sqlx gives no handle on its socket, so a hook run after each new connection looks the
//! socket up among the process's file descriptors: every TCP socket connected to one of the
//! addresses the pool's hosts resolve to (address and port), with Nagle still on, gets
//! `TCP_NODELAY`. Another pool's connection to the same server may be among them; libpq would
//! have set it there too. When no such socket is found (another platform, a descriptor table
//! that cannot be listed, a host that does not resolve here), the pool stops using `COPY` and
//! batches take the one-statement `INSERT`, which has no second write.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether every connection the pool opened over TCP got `TCP_NODELAY` (so `COPY` cannot
/// stall on Nagle's algorithm).
#[derive(Debug)]
pub(crate) struct NoDelay {
    /// The pool's TCP hosts (none: only Unix sockets, where Nagle does not apply).
    hosts: Vec<(String, u16)>,
    missed: AtomicBool,
}

impl NoDelay {
    pub(crate) fn new(hosts: Vec<(String, u16)>) -> Self {
        NoDelay {
            hosts,
            missed: AtomicBool::new(false),
        }
    }

    /// Called after each new connection: turns Nagle off on it (and on any other socket of the
    /// process connected to the same server). A connection it could not find turns `COPY` off.
    pub(crate) async fn after_connect(&self) {
        if self.hosts.is_empty() || self.missed.load(Ordering::Relaxed) {
            return;
        }
        let mut peers = HashSet::new();
        for (host, port) in &self.hosts {
            if let Ok(addrs) = tokio::net::lookup_host((host.as_str(), *port)).await {
                peers.extend(addrs);
            }
        }
        match set_nodelay(&peers) {
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

/// Sets `TCP_NODELAY` on every TCP socket of this process connected to one of `peers`; returns
/// how many such sockets there are (including those that had it already).
#[cfg(unix)]
fn set_nodelay(peers: &HashSet<SocketAddr>) -> std::io::Result<usize> {
    use std::os::fd::{BorrowedFd, RawFd};

    if peers.is_empty() {
        return Ok(0);
    }
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
        // SAFETY: `borrow_raw` asks that the descriptor stay open while borrowed, and this
        // process may close it on another thread at any moment: the borrow is an I/O-safety
        // exception, not a memory one. The descriptor only reaches getpeername, getsockopt and
        // setsockopt, which write nothing of ours but the value asked for. A descriptor that is
        // not a socket (a file, a pipe, the directory being listed) fails getpeername and is
        // skipped; a number closed and reused meanwhile is skipped unless it is again a TCP
        // socket to the same server, which then gets TCP_NODELAY as well.
        #[allow(unsafe_code)]
        let fd = unsafe { BorrowedFd::borrow_raw(raw) };
        let socket = socket2::SockRef::from(&fd);
        let to_server = socket
            .peer_addr()
            .ok()
            .and_then(|a| a.as_socket())
            .is_some_and(|a| peers.contains(&a));
        if !to_server || !matches!(socket.r#type(), Ok(t) if t == socket2::Type::STREAM) {
            continue;
        }
        if socket.tcp_nodelay().unwrap_or(false) || socket.set_tcp_nodelay(true).is_ok() {
            found += 1;
        }
    }
    Ok(found)
}

#[cfg(not(unix))]
fn set_nodelay(_peers: &HashSet<SocketAddr>) -> std::io::Result<usize> {
    Err(std::io::ErrorKind::Unsupported.into())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[tokio::test]
    async fn sets_nodelay_on_sockets_to_the_server_only() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let other = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let ours = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        let theirs = std::net::TcpStream::connect(other.local_addr().unwrap()).unwrap();
        // The server's side of our connection: its peer is our socket, not the server.
        let (accepted, _) = listener.accept().unwrap();
        assert!(!ours.nodelay().unwrap());

        let n = NoDelay::new(vec![("127.0.0.1".into(), port)]);
        n.after_connect().await;
        assert!(
            ours.nodelay().unwrap(),
            "the socket to the server has TCP_NODELAY"
        );
        assert!(
            !theirs.nodelay().unwrap(),
            "a socket to another port is left alone"
        );
        assert!(
            !accepted.nodelay().unwrap(),
            "an accepted socket is left alone"
        );
        assert!(n.copy_ok());
    }

    #[tokio::test]
    async fn no_socket_to_the_server_turns_copy_off() {
        // A port nothing in this process is connected to.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let n = NoDelay::new(vec![("127.0.0.1".into(), port)]);
        n.after_connect().await;
        assert!(!n.copy_ok());
    }

    #[tokio::test]
    async fn unix_sockets_only_keep_copy() {
        let n = NoDelay::new(Vec::new());
        n.after_connect().await;
        assert!(n.copy_ok());
    }
}
