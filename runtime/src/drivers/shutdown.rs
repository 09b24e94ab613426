//! [`Shutdown`]: a cloneable flag that asks a running pipeline to stop after the current batch.

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
}
