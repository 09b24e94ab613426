//! Staged writes of distributed batches ([`tributary_sdk::PartitionStager`]).

use arrow::array::RecordBatch;
use tributary_sdk::{Delivery, SinkFactory, SinkFactoryExt, StagedOutput};

use crate::cases::{ensure, CaseEnv, CaseResult, Failure, Outcome};
use crate::sink::cases::{expect_rows, new_target};
use crate::sink::fixture::SinkFixture;
use crate::sink::rows::{micro_batch, test_schema};

/// One task: a new instance (an executor's; not opened) stages `rows` as partition `partition`.
async fn stage(
    fixture: &dyn SinkFixture,
    connector: &dyn SinkFactory,
    options: &tributary_sdk::Options,
    env: &CaseEnv,
    partition: usize,
    rows: &[RecordBatch],
) -> Result<StagedOutput, Failure> {
    let mut sink = connector
        .create(options, &env.context)
        .map_err(|e| Failure(format!("create failed: {e}")))?;
    let stager = sink
        .as_stager()
        .ok_or_else(|| Failure("the stager vanished between instances".into()))?;
    let schema = fixture.input_schema(test_schema());
    stager
        .begin_partition(0, partition, schema)
        .await
        .map_err(|e| Failure(format!("begin_partition({partition}) failed: {e}")))?;
    for part in fixture.input(rows).map_err(|e| Failure(e.to_string()))? {
        stager
            .stage_part(&part)
            .await
            .map_err(|e| Failure(format!("stage_part of partition {partition} failed: {e}")))?;
    }
    let output = stager
        .finish_partition()
        .await
        .map_err(|e| Failure(format!("finish_partition({partition}) failed: {e}")))?;
    ensure!(
        output.batch_id == 0 && output.partition == partition,
        "finish_partition returned batch {} partition {}, expected 0 and {partition}",
        output.batch_id,
        output.partition
    );
    // Manifests travel between processes as JSON.
    let json = serde_json::to_string(&output).map_err(|e| Failure(e.to_string()))?;
    serde_json::from_str(&json).map_err(|e| Failure(format!("manifest does not round-trip: {e}")))
}

/// Partitions 0 and 1 of batch 0 staged by two instances (partition 1 twice: the first attempt
/// is never committed), committed by a third, twice; then the whole batch replayed (staged and
/// committed again by new instances): an exactly-once sink holds each row once and nothing of
/// the lost attempt. Sinks without a stager (`as_stager` is `None`) are skipped.
pub async fn sink_staged_commit_exactly_once(
    connector: &dyn SinkFactory,
    fixture: &mut dyn SinkFixture,
) -> CaseResult {
    let env = CaseEnv::new()?;
    let (target, options) = new_target(fixture, "staged").await?;
    let mut driver = connector
        .create(&options, &env.context)
        .map_err(|e| Failure(format!("create failed: {e}")))?;
    if driver.as_stager().is_none() {
        return Ok(Outcome::Skipped(format!(
            "sink '{}' has no staged write (as_stager is None)",
            connector.name()
        )));
    }
    let exactly_once = driver.delivery() == Delivery::ExactlyOnce;
    let (p0, p1) = (micro_batch(0)?, micro_batch(1)?);
    let lost = stage(&*fixture, connector, &options, &env, 1, &p1).await?;
    let outputs = vec![
        stage(&*fixture, connector, &options, &env, 0, &p0).await?,
        stage(&*fixture, connector, &options, &env, 1, &p1).await?,
    ];
    ensure!(lost.manifest != outputs[1].manifest, "two attempts of partition 1 staged the same manifest: a retry would overwrite the other attempt");
    let written: Vec<_> = p0.iter().chain(&p1).cloned().collect();
    let stager = driver
        .as_stager()
        .ok_or_else(|| Failure("no stager".into()))?;
    for round in ["the first commit", "committing the same manifests again"] {
        stager
            .commit_staged(0, outputs.clone())
            .await
            .map_err(|e| Failure(format!("{round} failed: {e}")))?;
        expect_rows(fixture, &target, &written, exactly_once, round).await?;
    }
    // The driver died before `commits/0`: the batch is replayed by new instances.
    let replay = vec![
        stage(&*fixture, connector, &options, &env, 0, &p0).await?,
        stage(&*fixture, connector, &options, &env, 1, &p1).await?,
    ];
    let mut restarted = connector
        .create(&options, &env.context)
        .map_err(|e| Failure(format!("create failed: {e}")))?;
    restarted
        .as_stager()
        .ok_or_else(|| Failure("no stager".into()))?
        .commit_staged(0, replay)
        .await
        .map_err(|e| Failure(format!("the replay's commit failed: {e}")))?;
    expect_rows(
        fixture,
        &target,
        &written,
        exactly_once,
        "replaying the committed batch",
    )
    .await?;
    Ok(if exactly_once {
        Outcome::Passed
    } else {
        Outcome::Skipped("at-least-once sink: only checked that no row was lost".into())
    })
}
