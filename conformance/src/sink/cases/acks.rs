//! Real-time writes: acknowledgements that resolve out of order, one of them failing.
//!
//! The host writes a streaming sink through [`SinkWriter`] in [`WriteMode::RealTime`] and keeps
//! its delivered positions with the SDK's [`AckFrontier`]: a position is delivered only when
//! every chunk before it in its partition is acknowledged, and a failed batch may be committed
//! at that frontier. The case checks the two halves of that bargain a sink must keep: an
//! acknowledgement means the records are in the destination (not buffered for later), and a
//! restart from the frontier delivers what was not acknowledged.

use serde_json::json;
use tributary_sdk::{AckFrontier, PartAck, SinkFactory, SinkWriter, WriteMode, WriteShape};

use crate::cases::{CaseEnv, CaseResult, Failure, Outcome};
use crate::sink::cases::{expect_rows, new_target, open_sink, stop};
use crate::sink::fixture::SinkFixture;
use crate::sink::rows::{record_batch, test_schema};

/// The chunks A, B, C, D of the case: 3 rows each, ids `4000 + 100·i ..`.
fn chunks() -> Result<Vec<arrow::array::RecordBatch>, Failure> {
    (0..4).map(|i| record_batch(4000 + 100 * i, 3)).collect()
}

/// Chunks A, B, C and D of one partition written as a real-time batch; the acknowledgements of
/// A, B and D resolve (D's first of the three); C's fails (fault injection: C is not handed to
/// the sink, its acknowledgement is an error). The host's frontier must stay at B, and A, B and
/// D must already be readable, before any end of batch or stop (a crash now loses nothing that
/// was acknowledged). A new instance restarting from the frontier writes C and D: the target
/// then holds every row of A–D, C included (D twice is allowed: real-time delivery is
/// at-least-once).
pub async fn sink_streaming_acks_out_of_order(
    connector: &dyn SinkFactory,
    fixture: &mut dyn SinkFixture,
) -> CaseResult {
    let env = CaseEnv::new()?;
    let (target, options) = new_target(fixture, "acks").await?;
    let sink = open_sink(&*fixture, connector, &options, &env.context).await?;
    let mut writer = SinkWriter::new(sink, WriteMode::RealTime)
        .map_err(|e| Failure(format!("the real-time writer cannot wrap the sink: {e}")))?;
    if writer.shape() != WriteShape::Streaming {
        stop(writer.sink_mut()).await?;
        return Ok(Outcome::Skipped(format!(
            "sink '{}' has no streaming write: in real-time mode it stages records until the checkpoint ({})",
            connector.name(),
            writer.shape().as_str()
        )));
    }
    let chunks = chunks()?;
    let schema = fixture.input_schema(test_schema());
    writer
        .begin(1, 0, schema.clone())
        .await
        .map_err(|e| Failure(format!("begin of real-time batch 1 failed: {e}")))?;
    let mut frontier = AckFrontier::new();
    let mut pending = Vec::new();
    for (i, chunk) in chunks.iter().enumerate() {
        let ticket = frontier.sent("p".into(), json!(i + 1), i);
        if i == 2 {
            continue;
        }
        let mut acks = Vec::new();
        for part in fixture
            .input(std::slice::from_ref(chunk))
            .map_err(|e| Failure(format!("the fixture cannot shape the rows: {e}")))?
        {
            match writer
                .write(&part)
                .await
                .map_err(|e| Failure(format!("writing chunk {} failed: {e}", name(i))))?
            {
                PartAck::Pending(ack) => acks.push(ack),
                PartAck::Staged => {
                    return Err(Failure(format!(
                        "the streaming write staged chunk {} instead of acknowledging it",
                        name(i)
                    )))
                }
            }
        }
        pending.push((i, ticket, acks));
    }
    // D's acknowledgement is awaited first, then A's and B's; C's never resolves.
    pending.sort_by_key(|(i, _, _)| if *i == 3 { 0 } else { *i + 1 });
    for (i, ticket, acks) in pending {
        futures::future::try_join_all(acks).await.map_err(|e| {
            Failure(format!(
                "the acknowledgement of chunk {} failed: {e}",
                name(i)
            ))
        })?;
        frontier
            .acked(ticket)
            .map_err(|e| Failure(format!("the frontier refused chunk {}: {e}", name(i))))?;
    }
    if frontier.delivered().get("p") != Some(&json!(2)) {
        return Err(Failure(format!(
            "with A, B and D acknowledged and C failed the frontier is {:?}, not B",
            frontier.delivered()
        )));
    }
    let acknowledged = [chunks[0].clone(), chunks[1].clone(), chunks[3].clone()];
    expect_rows(
        fixture,
        &target,
        &acknowledged,
        false,
        "the acknowledgements of A, B and D resolved (no end of batch, no stop)",
    )
    .await?;
    // A crash: the first instance is dropped without ending its batch or stopping.
    drop(writer);

    let sink = open_sink(&*fixture, connector, &options, &env.context).await?;
    let mut writer = SinkWriter::new(sink, WriteMode::RealTime)
        .map_err(|e| Failure(format!("the real-time writer cannot wrap the sink: {e}")))?;
    writer
        .begin(2, 0, schema)
        .await
        .map_err(|e| Failure(format!("begin of the restarted batch failed: {e}")))?;
    let mut acks = Vec::new();
    for part in fixture
        .input(&chunks[2..])
        .map_err(|e| Failure(format!("the fixture cannot shape the rows: {e}")))?
    {
        if let PartAck::Pending(ack) = writer
            .write(&part)
            .await
            .map_err(|e| Failure(format!("writing C and D after the restart failed: {e}")))?
        {
            acks.push(ack);
        }
    }
    futures::future::try_join_all(acks)
        .await
        .map_err(|e| Failure(format!("an acknowledgement after the restart failed: {e}")))?;
    let output = writer
        .finish()
        .await
        .map_err(|e| Failure(format!("finish after the restart failed: {e}")))?;
    writer
        .commit(2, vec![output])
        .await
        .map_err(|e| Failure(format!("ending the restarted batch failed: {e}")))?;
    stop(writer.sink_mut()).await?;
    expect_rows(
        fixture,
        &target,
        &chunks,
        false,
        "the restart from the frontier (C and D written again)",
    )
    .await?;
    Ok(Outcome::Passed)
}

fn name(i: usize) -> char {
    ['A', 'B', 'C', 'D'].get(i).copied().unwrap_or('?')
}
