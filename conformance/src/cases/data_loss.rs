//! `failOnDataLoss` both ways, for every data-loss kind the fixture can cause.

use std::time::Duration;

use tributary_sdk::{DataLossKind, ErrorCode, Offset, ReadLimit, Source, SourceFactory};

use crate::capability::Capability;
use crate::cases::{
    drain, ensure, start_reading, wait_for_data, CaseEnv, CaseResult, Failure, Outcome, Reading,
};
use crate::fixture::{Fixture, ReadSetup};

fn declared_kinds(fixture: &dyn Fixture) -> Vec<DataLossKind> {
    fixture
        .capabilities()
        .into_iter()
        .filter_map(|c| match c {
            Capability::DataLoss(k) => Some(k),
            _ => None,
        })
        .collect()
}

fn skipped(fixture: &dyn Fixture) -> Outcome {
    Outcome::Skipped(format!(
        "fixture '{}' declares no data-loss kind it can cause",
        fixture.name()
    ))
}

/// The opening both cases share: a target with 4 records, a source with `failOnDataLoss`
/// set, its first batch planned, and then the data loss caused. Returns the target, the source
/// and the planned range.
async fn plan_then_lose(
    connector: &dyn SourceFactory,
    fixture: &mut dyn Fixture,
    env: &CaseEnv,
    kind: DataLossKind,
    fail_on_data_loss: bool,
    hint: &str,
) -> Result<(String, Box<dyn Source>, Offset, Offset), Failure> {
    let target = fixture.create_target(hint).await?;
    fixture.produce(&target, 4).await?;
    let mut setup = ReadSetup::target(&target);
    setup.fail_on_data_loss = Some(fail_on_data_loss);
    let Reading {
        source, start, end, ..
    } = start_reading(connector, fixture, env, &setup).await?;
    ensure!(
        end != start,
        "no data planned before causing {}",
        kind.code()
    );
    fixture.cause_data_loss(&target, kind).await?;
    Ok((target, source, start, end))
}

/// With `failOnDataLoss=true`, each declared kind of data loss stops the read with its stable code.
pub async fn fail_on_data_loss_true(
    connector: &dyn SourceFactory,
    fixture: &mut dyn Fixture,
) -> CaseResult {
    let kinds = declared_kinds(fixture);
    if kinds.is_empty() {
        return Ok(skipped(fixture));
    }
    for kind in kinds {
        let env = CaseEnv::new()?;
        let (_, mut source, start, end) =
            plan_then_lose(connector, fixture, &env, kind, true, "loss").await?;
        let outcome = match source.read(&start, &end).await {
            Err(e) => Err(e),
            Ok(_) => source
                .latest_offset(&end, &ReadLimit::All)
                .await
                .map(|_| ()),
        };
        let e = outcome.err().ok_or_else(|| {
            Failure(format!(
                "{} with failOnDataLoss=true was not reported as an error",
                kind.code()
            ))
        })?;
        ensure!(
            e.code() == ErrorCode::DataLoss(kind),
            "{} should fail with that code, got {}: {e}",
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

/// With `failOnDataLoss=false`, each declared kind is counted in the source metrics
/// (`dataLoss.<CODE>`) and the stream goes on.
pub async fn fail_on_data_loss_false(
    connector: &dyn SourceFactory,
    fixture: &mut dyn Fixture,
) -> CaseResult {
    let kinds = declared_kinds(fixture);
    if kinds.is_empty() {
        return Ok(skipped(fixture));
    }
    for kind in kinds {
        let env = CaseEnv::new()?;
        let (target, mut source, start, end) =
            plan_then_lose(connector, fixture, &env, kind, false, "lossok").await?;
        source.read(&start, &end).await.map_err(|e| {
            Failure(format!(
                "{} with failOnDataLoss=false still failed the read: {e}",
                kind.code()
            ))
        })?;
        source.commit(&end).await?;
        let mut at = end;
        // After a deleted partition or stream there is nothing left to append to: the source
        // goes on without it, which the read above and the counter below show.
        let target_gone = matches!(
            kind,
            DataLossKind::PartitionDeleted | DataLossKind::StreamRemoved
        );
        if !target_gone
            && fixture
                .capabilities()
                .contains(&Capability::AppendWhileRunning)
        {
            let later = fixture.produce(&target, 2).await?;
            wait_for_data(
                source.as_mut(),
                &at,
                &ReadLimit::All,
                Duration::from_secs(20),
            )
            .await?;
            let (read, next) = drain(source.as_mut(), at, &ReadLimit::All, 100).await?;
            let got = crate::cases::all_payloads(fixture, &read)?;
            ensure!(
                later.iter().all(|v| got.contains(&Some(v.clone()))),
                "after the loss the stream did not go on: produced {later:?}, read {got:?}"
            );
            at = next;
        }
        let metrics = source.metrics();
        let key = format!("dataLoss.{}", kind.code());
        let count = metrics.get(&key).and_then(|v| v.as_u64()).unwrap_or(0);
        ensure!(
            count >= 1,
            "{key} should count the skipped loss, metrics are {metrics:?}"
        );
        let _ = at;
        let _ = source.stop().await;
    }
    Ok(Outcome::Passed)
}
