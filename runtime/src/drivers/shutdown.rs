//! [`Shutdown`]: a cloneable flag that asks a running pipeline to stop after the current batch,
//! and [`Shutdown::on_signals`], which raises it on `SIGINT` (Ctrl-C) or `SIGTERM` (what
//! `kill`, systemd and Kubernetes send) so a stop ends as cleanly as a requested one.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A cloneable flag that asks a running pipeline to stop after the current batch.
#[derive(Debug, Clone, Default)]
pub struct Shutdown(Arc<(AtomicBool, tokio::sync::Notify)>);

impl Shutdown {
    /// Asks the pipeline to stop.
    pub fn trigger(&self) {
        self.0 .0.store(true, Ordering::SeqCst);
        self.0 .1.notify_waiters();
    }

    /// True once stop was asked.
    pub fn is_triggered(&self) -> bool {
        self.0 .0.load(Ordering::SeqCst)
    }

    /// Resolves once stop is asked (at once if it already was).
    pub(crate) async fn wait(&self) {
        let notified = self.0 .1.notified();
        if self.is_triggered() {
            return;
        }
        notified.await
    }

    /// Sleeps for `d`, or less when stop is asked meanwhile.
    pub(crate) async fn sleep(&self, d: Duration) {
        if d.is_zero() || self.is_triggered() {
            return;
        }
        let notified = self.0 .1.notified();
        tokio::select! {
            _ = tokio::time::sleep(d) => {}
            _ = notified => {}
        }
    }

    /// Raises the flag on the first `SIGINT` or `SIGTERM`, logging `notice` (what will stop);
    /// a second signal of either kind exits at once (130 after `SIGINT`, 143 after `SIGTERM`,
    /// the shell's codes), leaving the batch in flight to replay.
    ///
    /// Must be called inside a Tokio runtime. Signals that cannot be watched (no such handler on
    /// this platform) are skipped with a warning; Ctrl-C is always watched.
    pub fn on_signals(&self, notice: &'static str) {
        let stop = self.clone();
        // Installed before returning, so a signal that comes at once is already handled.
        let mut signals = Signals::new();
        tokio::spawn(async move {
            let first = signals.next().await;
            crate::logging::notice(&format!("{first}: {notice} (a second signal aborts)"));
            stop.trigger();
            let second = signals.next().await;
            std::process::exit(second.exit_code());
        });
    }
}

/// The stop signals a run listens for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StopSignal {
    Interrupt,
    Terminate,
}

impl StopSignal {
    fn exit_code(self) -> i32 {
        match self {
            StopSignal::Interrupt => 130,
            StopSignal::Terminate => 143,
        }
    }
}

impl std::fmt::Display for StopSignal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StopSignal::Interrupt => "SIGINT",
            StopSignal::Terminate => "SIGTERM",
        })
    }
}

struct Signals {
    #[cfg(unix)]
    term: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    fn new() -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            let term = match signal(SignalKind::terminate()) {
                Ok(s) => Some(s),
                Err(e) => {
                    tracing::warn!("SIGTERM cannot be watched ({e}); it will end the run at once");
                    None
                }
            };
            Signals { term }
        }
        #[cfg(not(unix))]
        Signals {}
    }

    async fn next(&mut self) -> StopSignal {
        #[cfg(unix)]
        if let Some(term) = self.term.as_mut() {
            return tokio::select! {
                r = tokio::signal::ctrl_c() => Self::interrupt(r).await,
                _ = term.recv() => StopSignal::Terminate,
            };
        }
        Self::interrupt(tokio::signal::ctrl_c().await).await
    }

    /// A Ctrl-C handler that cannot be installed never fires (rather than firing at once).
    async fn interrupt(r: std::io::Result<()>) -> StopSignal {
        if let Err(e) = r {
            tracing::warn!("Ctrl-C cannot be watched ({e})");
            std::future::pending::<()>().await;
        }
        StopSignal::Interrupt
    }
}
