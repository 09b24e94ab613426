//! Real-time read of the EFO source (`tributary_sdk::streaming`): one task per stream
//! supervises one SubscribeToShard pump per readable shard; each pump pushes every event's
//! records as a [`StreamChunk`] (partition `<stream>/<shard>`, position
//! `{"after": seq, "parents": [...], "finished": bool}`) into the runtime's bounded queue, so a
//! full queue holds the subscription back. When a shard ends, the supervisor marks it finished,
//! lists the stream's shards and starts pumps for the children that became readable (parents
//! before children, as in micro-batches). [`end_offset`] folds the delivered positions into
//! the batch's start offset.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::{ArrayRef, BinaryArray, RecordBatch, StringArray, TimestampMillisecondArray};
use arrow_schema::SchemaRef;
use aws_sdk_kinesis::Client;
use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, Notify};
use tokio::task::{JoinHandle, JoinSet};
use tributary_sdk::{ChunkSender, Error, ErrorCode, Offset, Result, StreamChunk};

use super::subscription::{ShardEvent, ShardTask, SharedConsumer, SubscriptionStats};
use crate::offsets::{KinesisOffsets, ShardOffset, ShardPosition, StreamOffsets};
use crate::planner::{self, StreamRef};
use crate::reader::FetchedRecord;

/// A shard's position in a chunk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ChunkPosition {
    /// The last sequence number delivered, if any.
    pub after: Option<String>,
    /// The shard's parents (a child first seen while streaming is added with them).
    #[serde(default)]
    pub parents: Vec<String>,
    /// The shard is closed and read to its end.
    #[serde(default)]
    pub finished: bool,
}

/// What a supervisor needs.
pub(crate) struct Supervisor {
    pub client: Arc<Client>,
    pub consumer: Arc<SharedConsumer>,
    pub stream: StreamRef,
    pub offsets: StreamOffsets,
    pub queue: ChunkSender,
    pub schema: SchemaRef,
    pub stats: Arc<SubscriptionStats>,
    pub renew_after: std::time::Duration,
}

fn chunk(
    schema: &SchemaRef,
    stream: &str,
    shard: &str,
    records: &[FetchedRecord],
    position: &ChunkPosition,
) -> Result<StreamChunk> {
    let n = records.len();
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(
            records.iter().map(|r| r.partition_key.as_str()),
        )),
        Arc::new(BinaryArray::from_iter_values(
            records.iter().map(|r| r.data.as_slice()),
        )),
        Arc::new(StringArray::from(vec![stream; n])),
        Arc::new(StringArray::from(vec![shard; n])),
        Arc::new(StringArray::from_iter_values(
            records.iter().map(|r| r.sequence.as_str()),
        )),
        Arc::new(
            TimestampMillisecondArray::from(
                records.iter().map(|r| r.arrival_ms).collect::<Vec<_>>(),
            )
            .with_timezone("UTC"),
        ),
    ];
    Ok(StreamChunk {
        batch: RecordBatch::try_new(schema.clone(), columns)?,
        partition: format!("{stream}/{shard}"),
        position: serde_json::to_value(position).map_err(|e| {
            Error::new(ErrorCode::Internal, "cannot encode a chunk position").with_cause(e)
        })?,
        read_at_us: chrono::Utc::now().timestamp_micros(),
        appended_ms: records.iter().filter_map(|r| r.arrival_ms).collect(),
        created_ms: Vec::new(),
    })
}

impl Supervisor {
    fn pump(
        &self,
        set: &mut JoinSet<()>,
        shard: String,
        entry: &ShardOffset,
        ended: mpsc::UnboundedSender<String>,
    ) {
        let (tx, mut rx) = mpsc::channel(4);
        let task = ShardTask {
            client: Arc::clone(&self.client),
            consumer: Arc::clone(&self.consumer),
            shard: shard.clone(),
            from: entry.position.clone(),
            tx,
            notify: Arc::new(Notify::new()),
            stats: Arc::clone(&self.stats),
            renew_after: self.renew_after,
        };
        set.spawn(task.run());
        let (queue, schema, stream) = (
            self.queue.clone(),
            self.schema.clone(),
            self.stream.id.clone(),
        );
        let mut position = ChunkPosition {
            after: match &entry.position {
                ShardPosition::After(s) => Some(s.clone()),
                _ => None,
            },
            parents: entry.parents.clone(),
            finished: false,
        };
        set.spawn(async move {
            while let Some(ev) = rx.recv().await {
                let (records, end) = match ev {
                    ShardEvent::Records { records, .. } => (records, false),
                    ShardEvent::End => (Vec::new(), true),
                    ShardEvent::Failed(e) => {
                        queue.send(Err(e)).await;
                        return;
                    }
                };
                if records.is_empty() && !end {
                    continue;
                }
                if let Some(last) = records.last() {
                    position.after = Some(last.sequence.clone());
                }
                position.finished = end;
                let c = chunk(&schema, &stream, &shard, &records, &position);
                if !queue.send(c).await {
                    return;
                }
                if end {
                    let _ = ended.send(shard.clone());
                    return;
                }
            }
        });
    }

    /// Runs until stopped (aborting it aborts every pump).
    pub async fn run(mut self) {
        let mut set = JoinSet::new();
        let (ended_tx, mut ended_rx) = mpsc::unbounded_channel::<String>();
        let mut running: Vec<String> = Vec::new();
        loop {
            let readable: Vec<(String, ShardOffset)> = self
                .offsets
                .shards
                .iter()
                .filter(|(id, e)| {
                    !e.finished
                        && !running.contains(id)
                        && e.parents
                            .iter()
                            .all(|p| self.offsets.shards.get(p).is_none_or(|po| po.finished))
                })
                .map(|(id, e)| (id.clone(), e.clone()))
                .collect();
            for (id, e) in readable {
                self.pump(&mut set, id.clone(), &e, ended_tx.clone());
                running.push(id);
            }
            let Some(shard) = ended_rx.recv().await else {
                return;
            };
            if let Some(e) = self.offsets.shards.get_mut(&shard) {
                e.finished = true;
            }
            match planner::list_shards(&self.client, &self.stream).await {
                Ok(listing) => {
                    planner::discover_shards(&mut self.offsets, &listing);
                }
                Err(e) => {
                    self.queue.send(Err(e)).await;
                    return;
                }
            }
        }
    }
}

/// The running real-time read.
#[derive(Debug, Default)]
pub(crate) struct Streaming {
    supervisors: Vec<JoinHandle<()>>,
}

impl Streaming {
    /// Starts one supervisor per stream of `start`.
    pub fn start(supervisors: Vec<Supervisor>) -> Self {
        Streaming {
            supervisors: supervisors
                .into_iter()
                .map(|s| tokio::spawn(s.run()))
                .collect(),
        }
    }

    /// Stops every supervisor and pump (their queue senders are dropped).
    pub async fn stop(&mut self) {
        for h in self.supervisors.drain(..) {
            h.abort();
            let _ = h.await;
        }
    }
}

/// `start` advanced by the delivered positions (`<stream>/<shard>` → [`ChunkPosition`]).
pub fn end_offset(
    start: &Offset,
    delivered: &BTreeMap<String, serde_json::Value>,
) -> Result<Offset> {
    let mut o = KinesisOffsets::from_offset(start)?;
    for (partition, value) in delivered {
        let Some((stream, shard)) = partition.rsplit_once('/') else {
            return Err(Error::new(
                ErrorCode::Internal,
                format!("unexpected partition '{partition}'"),
            ));
        };
        let p: ChunkPosition = serde_json::from_value(value.clone()).map_err(|e| {
            Error::new(ErrorCode::Internal, "unexpected chunk position").with_cause(e)
        })?;
        let s = o.streams.entry(stream.to_string()).or_default();
        let entry = s
            .shards
            .entry(shard.to_string())
            .or_insert_with(|| ShardOffset::new(ShardPosition::TrimHorizon, p.parents.clone()));
        if let Some(seq) = p.after {
            entry.position = ShardPosition::After(seq);
        }
        entry.finished |= p.finished;
    }
    o.drop_consumed_parents();
    o.to_offset()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::config::StreamKeying;

    #[test]
    fn delivered_positions_advance_the_start_and_children_join_with_their_parents() {
        let mut o = KinesisOffsets::new(StreamKeying::Names);
        let s = o.streams.entry("ev".into()).or_default();
        s.shards.insert(
            "p".into(),
            ShardOffset::new(ShardPosition::TrimHorizon, vec![]),
        );
        s.shards.insert(
            "q".into(),
            ShardOffset::new(ShardPosition::After("3".into()), vec![]),
        );
        let start = o.to_offset().unwrap();
        let mut d = BTreeMap::new();
        d.insert(
            "ev/p".to_string(),
            serde_json::json!({"after": "9", "finished": true}),
        );
        d.insert(
            "ev/c".to_string(),
            serde_json::json!({"after": "12", "parents": ["p"]}),
        );
        let end = KinesisOffsets::from_offset(&end_offset(&start, &d).unwrap()).unwrap();
        let ev = &end.streams["ev"];
        assert!(
            !ev.shards.contains_key("p"),
            "the finished parent left once its child is in"
        );
        assert_eq!(ev.shards["c"].position, ShardPosition::After("12".into()));
        assert_eq!(
            ev.shards["q"].position,
            ShardPosition::After("3".into()),
            "undelivered shard keeps its start"
        );
    }
}
