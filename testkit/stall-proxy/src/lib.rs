//! A TCP proxy for fault tests: a real server made unreachable on demand.
//!
//! [`StallProxy::start`] listens on a loopback port and forwards every connection to the
//! target. [`StallProxy::stall`] makes the server look gone without closing anything, the way a
//! network partition does: bytes already sent are held, new connections are accepted but never
//! connected upstream, so clients see requests that never answer and must rely on their
//! timeouts. [`StallProxy::reset`] drops every open connection at once (clients see a reset),
//! [`StallProxy::resume`] forwards again. Threads and blocking sockets only: usable from any
//! test, with or without an async runtime.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

/// How often a held or idle pump looks at the flags.
const TICK: Duration = Duration::from_millis(20);

#[derive(Debug, Default)]
struct Flags {
    stalled: AtomicBool,
    /// Bumped by `reset`: connections of an older generation close.
    generation: AtomicU64,
    stopped: AtomicBool,
    connections: AtomicU64,
}

/// A running proxy; it stops when dropped.
#[derive(Debug)]
pub struct StallProxy {
    addr: SocketAddr,
    flags: Arc<Flags>,
}

impl StallProxy {
    /// Starts forwarding a new loopback port to `target`.
    pub fn start(target: SocketAddr) -> std::io::Result<StallProxy> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        listener.set_nonblocking(true)?;
        let flags = Arc::new(Flags::default());
        let f = flags.clone();
        thread::spawn(move || accept_loop(listener, target, f));
        Ok(StallProxy { addr, flags })
    }

    /// The address clients connect to.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://` + [`StallProxy::addr`].
    pub fn http_endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Holds every byte and every new connection until [`StallProxy::resume`].
    pub fn stall(&self) {
        self.flags.stalled.store(true, Ordering::SeqCst);
    }

    /// Closes every connection open now (held ones included).
    pub fn reset(&self) {
        self.flags.generation.fetch_add(1, Ordering::SeqCst);
    }

    /// Forwards again.
    pub fn resume(&self) {
        self.flags.stalled.store(false, Ordering::SeqCst);
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> u64 {
        self.flags.connections.load(Ordering::SeqCst)
    }
}

impl Drop for StallProxy {
    fn drop(&mut self) {
        self.flags.stopped.store(true, Ordering::SeqCst);
        self.reset();
    }
}

fn accept_loop(listener: TcpListener, target: SocketAddr, flags: Arc<Flags>) {
    while !flags.stopped.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((client, _)) => {
                flags.connections.fetch_add(1, Ordering::SeqCst);
                let f = flags.clone();
                thread::spawn(move || connect(client, target, f));
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => thread::sleep(TICK),
            Err(_) => thread::sleep(TICK),
        }
    }
}

/// Waits out a stall (a held connection is not connected upstream), then pumps both ways.
fn connect(client: TcpStream, target: SocketAddr, flags: Arc<Flags>) {
    let generation = flags.generation.load(Ordering::SeqCst);
    let alive = |f: &Flags| {
        !f.stopped.load(Ordering::SeqCst) && f.generation.load(Ordering::SeqCst) == generation
    };
    while flags.stalled.load(Ordering::SeqCst) {
        if !alive(&flags) {
            let _ = client.shutdown(Shutdown::Both);
            return;
        }
        thread::sleep(TICK);
    }
    let Ok(upstream) = TcpStream::connect(target) else {
        let _ = client.shutdown(Shutdown::Both);
        return;
    };
    let _ = client.set_nodelay(true);
    let _ = upstream.set_nodelay(true);
    let (Ok(c2), Ok(u2)) = (client.try_clone(), upstream.try_clone()) else {
        return;
    };
    let f = flags.clone();
    let back = thread::spawn(move || pump(u2, c2, f, generation));
    pump(client, upstream, flags, generation);
    let _ = back.join();
}

/// Copies `from` to `to` while the connection's generation is current, holding while stalled.
fn pump(mut from: TcpStream, mut to: TcpStream, flags: Arc<Flags>, generation: u64) {
    let _ = from.set_read_timeout(Some(TICK));
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        if flags.stopped.load(Ordering::SeqCst)
            || flags.generation.load(Ordering::SeqCst) != generation
        {
            break;
        }
        if flags.stalled.load(Ordering::SeqCst) {
            thread::sleep(TICK);
            continue;
        }
        match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                if to.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => break,
        }
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn echo_server() -> SocketAddr {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        thread::spawn(move || {
            for s in l.incoming() {
                let mut s = s.unwrap();
                thread::spawn(move || {
                    let mut b = [0u8; 1024];
                    while let Ok(n) = s.read(&mut b) {
                        if n == 0 || s.write_all(&b[..n]).is_err() {
                            break;
                        }
                    }
                });
            }
        });
        addr
    }

    #[test]
    fn forwards_stalls_resets_and_resumes() {
        let proxy = StallProxy::start(echo_server()).unwrap();
        let mut c = TcpStream::connect(proxy.addr()).unwrap();
        c.set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        let mut b = [0u8; 5];
        c.write_all(b"hello").unwrap();
        c.read_exact(&mut b).unwrap();
        assert_eq!(&b, b"hello");

        proxy.stall();
        thread::sleep(TICK * 3);
        c.write_all(b"held!").unwrap();
        assert!(c.read_exact(&mut b).is_err(), "a stalled proxy answered");
        proxy.resume();
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        c.read_exact(&mut b).unwrap();
        assert_eq!(&b, b"held!", "held bytes are delivered after the stall");

        proxy.reset();
        let mut rest = Vec::new();
        let n = c.read_to_end(&mut rest).unwrap_or(0);
        assert_eq!(n, 0, "a reset connection is closed");
        let mut d = TcpStream::connect(proxy.addr()).unwrap();
        d.write_all(b"again").unwrap();
        d.read_exact(&mut b).unwrap();
        assert_eq!(&b, b"again");
        assert_eq!(proxy.connections(), 2);
    }
}
