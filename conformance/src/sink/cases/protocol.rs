//! The host's write: the SDK's one sink protocol ([`SinkWriter`]), in the shape the host picks
//! for a micro-batch (a sink's part writer when it has one, its whole-batch `write` otherwise).

use tributary_sdk::{Delivery, SinkFactory, SinkWriter, WriteMode};

use crate::cases::{CaseEnv, CaseResult, Failure, Outcome};
use crate::sink::cases::{expect_rows, new_target, open_sink, write};
use crate::sink::fixture::SinkFixture;
use crate::sink::rows::{micro_batch, test_schema};

/// Batch 1 (two record batches) written through the protocol the runtime uses for
/// micro-batches (begin, a part per record batch, finish, commit), batch 2 through
/// [`tributary_sdk::Sink::write`], then batch 1 replayed through the protocol: the target holds
/// exactly what writing both batches whole would (each row once for an exactly-once sink).
pub async fn sink_parts_then_commit_equals_write(
    connector: &dyn SinkFactory,
    fixture: &mut dyn SinkFixture,
) -> CaseResult {
    let env = CaseEnv::new()?;
    let (target, options) = new_target(fixture, "parts").await?;
    let sink = open_sink(&*fixture, connector, &options, &env.context).await?;
    let exactly_once = sink.delivery() == Delivery::ExactlyOnce;
    let mut writer = SinkWriter::new(sink, WriteMode::MicroBatch)
        .map_err(|e| Failure(format!("the micro-batch writer cannot wrap the sink: {e}")))?;
    let shape = writer.shape().as_str();
    let (b1, b2) = (micro_batch(1)?, micro_batch(2)?);
    let parts = fixture
        .input(&b1)
        .map_err(|e| Failure(format!("the fixture cannot shape the rows: {e}")))?;
    let schema = fixture.input_schema(test_schema());
    for attempt in ["the first write", "the replay"] {
        writer
            .write_batch(1, schema.clone(), &parts)
            .await
            .map_err(|e| {
                Failure(format!(
                    "{attempt} of batch 1 as {} parts ({shape}) failed: {e}",
                    parts.len()
                ))
            })?;
        if attempt == "the first write" {
            write(&*fixture, writer.sink_mut(), 2, &b2).await?;
        }
        let written: Vec<_> = b1.iter().chain(&b2).cloned().collect();
        expect_rows(
            fixture,
            &target,
            &written,
            exactly_once,
            &format!("{attempt} of batch 1 in parts ({shape}) and batch 2 whole"),
        )
        .await?;
    }
    writer
        .sink_mut()
        .stop()
        .await
        .map_err(|e| Failure(format!("stop failed: {e}")))?;
    Ok(if exactly_once {
        Outcome::Passed
    } else {
        Outcome::Skipped(format!(
            "sink '{}' declares at-least-once delivery, so the replay may duplicate rows; only checked that no row was lost",
            connector.name()
        ))
    })
}
