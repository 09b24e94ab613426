//! The delivered frontier of a real-time batch: which positions every sink has acknowledged.
//!
//! A real-time host hands chunks to streaming sinks and gets one acknowledgement per chunk
//! ([`crate::Ack`]). Acknowledgements may resolve in any order — a Kafka producer acknowledges
//! the partitions of different brokers independently — and one may fail while later ones
//! succeed. The host must never count a position as delivered while an earlier chunk of the same
//! partition is unacknowledged or failed: the batch's end offset is computed from the delivered
//! positions, so a restart would skip the unacknowledged records.
//!
//! [`AckFrontier`] keeps that rule in one place. [`AckFrontier::sent`] registers a chunk (its
//! partition and position after it) and returns a [`Ticket`]; [`AckFrontier::acked`] marks it
//! acknowledged. A partition's delivered position ([`AckFrontier::delivered`]) is the position
//! of the last chunk of the longest prefix of its chunks, in the order sent, that is wholly
//! acknowledged. Acknowledging chunks A, B and D of a partition and failing C leaves the
//! partition at B: a restart from the frontier redelivers C (and D again), never skips C.
//!
//! Each chunk carries host data `M` (timings, row counts): [`AckFrontier::acked`] returns it at
//! once, so a chunk's latency is taken when *its* acknowledgement arrives, not when the ones
//! before it do.

use std::collections::{BTreeMap, HashMap, VecDeque};

use crate::error::{Error, ErrorCode, Result};

/// A chunk registered with [`AckFrontier::sent`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ticket(u64);

#[derive(Debug)]
struct Sent {
    ticket: Ticket,
    position: serde_json::Value,
    acked: bool,
}

/// Positions acknowledged per partition, advanced only over wholly acknowledged prefixes (see
/// the module docs).
#[derive(Debug)]
pub struct AckFrontier<M> {
    next: u64,
    /// Per partition, the chunks sent and not yet behind the frontier, in the order sent.
    waiting: BTreeMap<String, VecDeque<Sent>>,
    /// Per unacknowledged ticket, its partition and host data.
    open: HashMap<Ticket, (String, M)>,
    delivered: BTreeMap<String, serde_json::Value>,
}

impl<M> Default for AckFrontier<M> {
    fn default() -> Self {
        AckFrontier {
            next: 0,
            waiting: BTreeMap::new(),
            open: HashMap::new(),
            delivered: BTreeMap::new(),
        }
    }
}

impl<M> AckFrontier<M> {
    /// An empty frontier (nothing delivered).
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a chunk of `partition` whose records end at `position`, sent to the sinks.
    pub fn sent(&mut self, partition: String, position: serde_json::Value, meta: M) -> Ticket {
        let ticket = Ticket(self.next);
        self.next += 1;
        self.waiting
            .entry(partition.clone())
            .or_default()
            .push_back(Sent {
                ticket,
                position,
                acked: false,
            });
        self.open.insert(ticket, (partition, meta));
        ticket
    }

    /// Registers a chunk that needs no acknowledgement (every sink stages it until the commit):
    /// it is behind the frontier as soon as the chunks sent before it in its partition are.
    pub fn staged(&mut self, partition: String, position: serde_json::Value, meta: M) -> Result<M> {
        let ticket = self.sent(partition, position, meta);
        self.acked(ticket)
    }

    /// Marks `ticket` acknowledged and returns its host data. The partition's delivered
    /// position advances over every acknowledged chunk at the head of its queue. A ticket not
    /// sent, or acknowledged twice, is an internal error.
    pub fn acked(&mut self, ticket: Ticket) -> Result<M> {
        let (partition, meta) = self.open.remove(&ticket).ok_or_else(|| {
            Error::new(
                ErrorCode::Internal,
                format!(
                    "acknowledgement {} was not sent or was already acknowledged",
                    ticket.0
                ),
            )
        })?;
        if let Some(queue) = self.waiting.get_mut(&partition) {
            if let Some(sent) = queue.iter_mut().find(|s| s.ticket == ticket) {
                sent.acked = true;
            }
            while queue.front().is_some_and(|s| s.acked) {
                if let Some(done) = queue.pop_front() {
                    self.delivered.insert(partition.clone(), done.position);
                }
            }
            if queue.is_empty() {
                self.waiting.remove(&partition);
            }
        }
        Ok(meta)
    }

    /// The delivered position of every partition with at least one chunk behind the frontier.
    pub fn delivered(&self) -> &BTreeMap<String, serde_json::Value> {
        &self.delivered
    }

    /// Chunks sent and not acknowledged.
    pub fn unacknowledged(&self) -> usize {
        self.open.len()
    }

    /// Whether every chunk sent is acknowledged.
    pub fn is_settled(&self) -> bool {
        self.open.is_empty()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn out_of_order_acks_advance_only_over_a_whole_prefix() {
        let mut f = AckFrontier::new();
        let a = f.sent("p0".into(), json!(1), "A");
        let b = f.sent("p0".into(), json!(2), "B");
        let c = f.sent("p0".into(), json!(3), "C");
        let d = f.sent("p0".into(), json!(4), "D");
        assert_eq!(f.acked(d).unwrap(), "D");
        assert!(f.delivered().is_empty(), "D alone must not move p0");
        assert_eq!(f.acked(a).unwrap(), "A");
        assert_eq!(f.acked(b).unwrap(), "B");
        assert_eq!(f.delivered().get("p0"), Some(&json!(2)));
        // C fails (is never acknowledged): the frontier stays at B, before C.
        assert_eq!(f.unacknowledged(), 1);
        assert!(!f.is_settled());
        assert_eq!(f.acked(c).unwrap(), "C");
        assert_eq!(f.delivered().get("p0"), Some(&json!(4)));
        assert!(f.is_settled());
    }

    #[test]
    fn partitions_advance_independently() {
        let mut f = AckFrontier::new();
        let a0 = f.sent("p0".into(), json!(10), ());
        let a1 = f.sent("p1".into(), json!(20), ());
        let b1 = f.sent("p1".into(), json!(21), ());
        f.acked(b1).unwrap();
        f.acked(a1).unwrap();
        assert_eq!(f.delivered().get("p1"), Some(&json!(21)));
        assert_eq!(f.delivered().get("p0"), None);
        f.acked(a0).unwrap();
        assert_eq!(f.delivered().get("p0"), Some(&json!(10)));
    }

    #[test]
    fn staged_chunks_wait_for_earlier_acknowledgements() {
        let mut f = AckFrontier::new();
        let a = f.sent("p0".into(), json!(1), 1);
        assert_eq!(f.staged("p0".into(), json!(2), 2).unwrap(), 2);
        assert!(f.delivered().is_empty());
        f.acked(a).unwrap();
        assert_eq!(f.delivered().get("p0"), Some(&json!(2)));
        assert_eq!(f.staged("p1".into(), json!(7), 3).unwrap(), 3);
        assert_eq!(f.delivered().get("p1"), Some(&json!(7)));
    }

    #[test]
    fn a_ticket_acknowledged_twice_is_an_error() {
        let mut f = AckFrontier::new();
        let a = f.sent("p0".into(), json!(1), ());
        f.acked(a).unwrap();
        let err = f.acked(a).unwrap_err();
        assert_eq!(err.code(), ErrorCode::Internal);
    }
}
