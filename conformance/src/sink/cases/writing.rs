//! Plain writes: every row arrives once; empty micro-batches add nothing.

use tributary_sdk::SinkFactory;

use crate::cases::{CaseEnv, CaseResult, Failure, Outcome};
use crate::sink::cases::{expect_rows, new_target, open_sink, stop, write};
use crate::sink::fixture::SinkFixture;
use crate::sink::rows::{micro_batch, zero_row_batch};

/// Batches 0 (one record batch) and 1 (two record batches, with a null) written and the sink
/// stopped: the target holds every row exactly once and no other row. (No batch is replayed, so
/// this holds for at-least-once sinks too.)
pub async fn sink_writes_every_row(
    connector: &dyn SinkFactory,
    fixture: &mut dyn SinkFixture,
) -> CaseResult {
    let env = CaseEnv::new()?;
    let (target, options) = new_target(fixture, "every-row").await?;
    let mut sink = open_sink(&*fixture, connector, &options, &env.context).await?;
    let (b0, b1) = (micro_batch(0)?, micro_batch(1)?);
    write(&*fixture, sink.as_mut(), 0, &b0).await?;
    write(&*fixture, sink.as_mut(), 1, &b1).await?;
    stop(sink.as_mut()).await?;
    let written: Vec<_> = b0.into_iter().chain(b1).collect();
    expect_rows(
        fixture,
        &target,
        &written,
        true,
        "writing batches 0 and 1 and stopping",
    )
    .await?;
    Ok(Outcome::Passed)
}

/// Writing an empty slice (batch 1) and a batch of zero rows (batch 2) between two real batches
/// succeeds, and the target holds exactly the rows of batches 0 and 3.
pub async fn sink_empty_batch(
    connector: &dyn SinkFactory,
    fixture: &mut dyn SinkFixture,
) -> CaseResult {
    let env = CaseEnv::new()?;
    let (target, options) = new_target(fixture, "empty-batch").await?;
    let mut sink = open_sink(&*fixture, connector, &options, &env.context).await?;
    let (b0, b3) = (micro_batch(0)?, micro_batch(3)?);
    write(&*fixture, sink.as_mut(), 0, &b0).await?;
    sink.write(1, &[])
        .await
        .map_err(|e| Failure(format!("writing an empty slice as batch 1 failed: {e}")))?;
    let zero = fixture
        .input(&[zero_row_batch()])
        .map_err(|e| Failure(format!("the fixture cannot shape a zero-row batch: {e}")))?;
    sink.write(2, &zero).await.map_err(|e| {
        Failure(format!(
            "writing one record batch of zero rows as batch 2 failed: {e}"
        ))
    })?;
    write(&*fixture, sink.as_mut(), 3, &b3).await?;
    stop(sink.as_mut()).await?;
    let written: Vec<_> = b0.into_iter().chain(b3).collect();
    expect_rows(
        fixture,
        &target,
        &written,
        true,
        "writing batch 0, an empty slice as batch 1, a zero-row batch as batch 2 and batch 3",
    )
    .await?;
    Ok(Outcome::Passed)
}
