//! Every source checks where it resumes (#22): a committed position the system no longer holds
//! — records read and committed, more produced, the pipeline stopped, retention passed — is a
//! data-loss event under both settings of `failOnDataLoss`, not a silent skip.
//!
//! Gated by [`Capability::ResumeDataLoss`] (the fixture can age records out with
//! [`crate::Fixture::age_out`]); a connector that can lose data at its resume position declares
//! the kind it reports. The cases check the restart from the committed position: with `true`
//! it fails with that code, with `false` the event is counted (`dataLoss.<CODE>`) and exactly
//! the records produced after the ageing are read, none of the aged-out ones.

use std::time::{Duration, Instant};

use tributary_sdk::{DataLossKind, ErrorCode, Offset, ReadLimit, SourceFactory, SourceFactoryExt};

use crate::capability::Capability;
use crate::cases::{
    all_payloads, drain, ensure, sorted, sorted_some, start_reading, wait_for_data, CaseEnv,
    CaseResult, Failure, Outcome, ReadBatch,
};
use crate::fixture::{Fixture, ReadSetup};

fn declared_kinds(fixture: &dyn Fixture) -> Vec<DataLossKind> {
    fixture
        .capabilities()
        .into_iter()
        .filter_map(|c| match c {
            Capability::ResumeDataLoss(k) => Some(k),
            _ => None,
        })
        .collect()
}

fn skipped(fixture: &dyn Fixture) -> Outcome {
    Outcome::Skipped(format!(
        "fixture '{}' cannot age out records while no source runs (ResumeDataLoss)",
        fixture.name()
    ))
}

/// What the opening leaves: the options and context to restart with, the committed position,
/// and the payloads produced after the records were aged out.
struct AgedOut {
    env: CaseEnv,
    options: tributary_sdk::Options,
    committed: Offset,
    aged: Vec<String>,
    after: Vec<String>,
}

/// Produces 4 records, reads and commits them, stops the source, produces 3 more (never read),
/// ages every record out, produces 2 more.
async fn read_stop_age(
    connector: &dyn SourceFactory,
    fixture: &mut dyn Fixture,
    fail_on_data_loss: bool,
    hint: &str,
) -> Result<AgedOut, Failure> {
    let env = CaseEnv::new()?;
    let target = fixture.create_target(hint).await?;
    let read = fixture.produce(&target, 4).await?;
    let mut setup = ReadSetup::target(&target);
    setup.fail_on_data_loss = Some(fail_on_data_loss);
    let mut reading = start_reading(connector, fixture, &env, &setup).await?;
    let (batches, committed) = reading.drain_all().await?;
    let got = all_payloads(fixture, &batches)?;
    ensure!(
        sorted(got.clone()) == sorted_some(&read),
        "before ageing out: produced {read:?}, read {got:?}"
    );
    reading.source.stop().await?;
    let options = reading.options.clone();
    drop(reading);
    let mut aged = read;
    aged.extend(fixture.produce(&target, 3).await?);
    fixture.age_out(&target).await?;
    let after = fixture.produce(&target, 2).await?;
    Ok(AgedOut {
        env,
        options,
        committed,
        aged,
        after,
    })
}

/// With `failOnDataLoss=true` the restart from a committed position that aged out fails with
/// the declared code.
pub async fn resume_position_lost_true(
    connector: &dyn SourceFactory,
    fixture: &mut dyn Fixture,
) -> CaseResult {
    let kinds = declared_kinds(fixture);
    if kinds.is_empty() {
        return Ok(skipped(fixture));
    }
    for kind in kinds {
        let o = read_stop_age(connector, fixture, true, "resume").await?;
        let mut source = connector.create(&o.options, &o.env.context)?;
        let deadline = Instant::now() + Duration::from_secs(20);
        let e = loop {
            match source.latest_offset(&o.committed, &ReadLimit::All).await {
                Err(e) => break e,
                Ok(end) if end != o.committed => match source.read(&o.committed, &end).await {
                    Err(e) => break e,
                    Ok(b) => {
                        return Err(Failure(format!(
                            "the restart read on from an aged-out position without an error: {:?}",
                            all_payloads(
                                fixture,
                                &[ReadBatch {
                                    start: o.committed.clone(),
                                    end,
                                    batches: b
                                }]
                            )?
                        )))
                    }
                },
                Ok(_) if Instant::now() >= deadline => {
                    return Err(Failure(format!(
                        "{} was not reported within 20 s of the restart (no batch, no error)",
                        kind.code()
                    )))
                }
                Ok(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        };
        ensure!(
            e.code() == ErrorCode::DataLoss(kind),
            "a committed position that aged out should fail with {}, got {}: {e}",
            kind.code(),
            e.code()
        );
        ensure!(
            e.is_data_loss(),
            "the error is not marked as data loss: {e}"
        );
        let _ = source.stop().await;
    }
    Ok(Outcome::Passed)
}

/// With `failOnDataLoss=false` the event is counted and reading goes on from the oldest record
/// held: the records produced after the ageing, none of the aged-out ones.
pub async fn resume_position_lost_false(
    connector: &dyn SourceFactory,
    fixture: &mut dyn Fixture,
) -> CaseResult {
    let kinds = declared_kinds(fixture);
    if kinds.is_empty() {
        return Ok(skipped(fixture));
    }
    for kind in kinds {
        let o = read_stop_age(connector, fixture, false, "resumeok").await?;
        let mut source = connector.create(&o.options, &o.env.context)?;
        let end = wait_for_data(
            source.as_mut(),
            &o.committed,
            &ReadLimit::All,
            Duration::from_secs(20),
        )
        .await?;
        let first = source.read(&o.committed, &end).await?;
        source.commit(&end).await?;
        let mut read = vec![ReadBatch {
            start: o.committed.clone(),
            end: end.clone(),
            batches: first,
        }];
        read.extend(drain(source.as_mut(), end, &ReadLimit::All, 100).await?.0);
        let got = all_payloads(fixture, &read)?;
        ensure!(
            sorted(got.clone()) == sorted_some(&o.after),
            "after the loss the stream should go on with exactly {:?} (aged out: {:?}), read {got:?}",
            o.after,
            o.aged
        );
        let metrics = source.metrics();
        let key = format!("dataLoss.{}", kind.code());
        let count = metrics.get(&key).and_then(|v| v.as_u64()).unwrap_or(0);
        ensure!(
            count >= 1,
            "{key} should count the aged-out resume position, metrics are {metrics:?}"
        );
        let _ = source.stop().await;
    }
    Ok(Outcome::Passed)
}
