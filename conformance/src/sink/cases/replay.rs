//! Replays: a batch id written again, in the same instance and after a crash.
//!
//! The runtime writes batch `n` again (with the same rows) when it crashed after the write but
//! before committing the checkpoint. A sink declaring [`Delivery::ExactlyOnce`] must replace the
//! earlier attempt; one declaring [`Delivery::AtLeastOnce`] may duplicate, so for it these cases
//! only check that no row is lost and report themselves skipped.

use tributary_sdk::{Delivery, SinkFactory};

use crate::cases::{ensure, CaseEnv, CaseResult, Failure, Outcome};
use crate::sink::cases::{expect_rows, new_target, open_sink, stop, write};
use crate::sink::fixture::SinkFixture;
use crate::sink::rows::micro_batch;

fn at_least_once_skip(connector: &dyn SinkFactory, what: &str) -> Outcome {
    Outcome::Skipped(format!(
        "sink '{}' declares at-least-once delivery, so {what} may duplicate rows; only checked \
         that no row was lost",
        connector.name()
    ))
}

/// Batches 0 and 1, then batch 1 again with the same rows: an exactly-once sink holds each row
/// once. An at-least-once sink is skipped after checking every row is present.
pub async fn sink_replay_replaces_batch(
    connector: &dyn SinkFactory,
    fixture: &mut dyn SinkFixture,
) -> CaseResult {
    let env = CaseEnv::new()?;
    let (target, options) = new_target(fixture, "replay").await?;
    let mut sink = open_sink(&*fixture, connector, &options, &env.context).await?;
    let delivery = sink.delivery();
    let (b0, b1) = (micro_batch(0)?, micro_batch(1)?);
    write(&*fixture, sink.as_mut(), 0, &b0).await?;
    write(&*fixture, sink.as_mut(), 1, &b1).await?;
    write(&*fixture, sink.as_mut(), 1, &b1).await?;
    stop(sink.as_mut()).await?;
    let written: Vec<_> = b0.into_iter().chain(b1).collect();
    let exactly_once = delivery == Delivery::ExactlyOnce;
    expect_rows(
        fixture,
        &target,
        &written,
        exactly_once,
        "writing batches 0 and 1, then batch 1 again with the same rows",
    )
    .await?;
    if exactly_once {
        Ok(Outcome::Passed)
    } else {
        Ok(at_least_once_skip(connector, "a replayed batch"))
    }
}

/// Instance A writes batches 0 and 1 and is dropped without `stop` (a crash before the
/// checkpoint commit); instance B, built from the same options, opens, writes batch 1 again and
/// then batch 2, and stops: an exactly-once sink holds each row once. An at-least-once sink is
/// skipped after checking every row is present.
pub async fn sink_replay_after_restart(
    connector: &dyn SinkFactory,
    fixture: &mut dyn SinkFixture,
) -> CaseResult {
    let env = CaseEnv::new()?;
    let (target, options) = new_target(fixture, "restart").await?;
    let (b0, b1, b2) = (micro_batch(0)?, micro_batch(1)?, micro_batch(2)?);
    let mut first = open_sink(&*fixture, connector, &options, &env.context).await?;
    let delivery = first.delivery();
    write(&*fixture, first.as_mut(), 0, &b0).await?;
    write(&*fixture, first.as_mut(), 1, &b1).await?;
    // A crash: no stop, the instance just goes away.
    drop(first);
    let mut second = open_sink(&*fixture, connector, &options, &env.context)
        .await
        .map_err(|f| Failure(format!("after a crash, a new instance: {f}")))?;
    ensure!(
        second.delivery() == delivery,
        "a new instance declares {:?}, the first one declared {delivery:?}",
        second.delivery()
    );
    write(&*fixture, second.as_mut(), 1, &b1).await?;
    write(&*fixture, second.as_mut(), 2, &b2).await?;
    stop(second.as_mut()).await?;
    let written: Vec<_> = b0.into_iter().chain(b1).chain(b2).collect();
    let exactly_once = delivery == Delivery::ExactlyOnce;
    expect_rows(
        fixture,
        &target,
        &written,
        exactly_once,
        "batches 0 and 1 by an instance dropped without stop, then batch 1 again and batch 2 by \
         a new instance",
    )
    .await?;
    if exactly_once {
        Ok(Outcome::Passed)
    } else {
        Ok(at_least_once_skip(
            connector,
            "a batch replayed after a restart",
        ))
    }
}
