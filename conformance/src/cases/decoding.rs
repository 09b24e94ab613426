//! Permissive decoding and FAILFAST.

use tributary_sdk::{ErrorCode, SourceFactory};

use crate::cases::{ensure, start_reading, CaseEnv, CaseResult, Failure, Outcome, Reading};
use crate::fixture::{DecodeMode, Fixture, ReadSetup};

/// In PERMISSIVE mode a malformed record yields a null payload and a count in the fixture's
/// malformed-record metric; valid records around it are read normally.
pub async fn permissive_decoding(
    connector: &dyn SourceFactory,
    fixture: &mut dyn Fixture,
) -> CaseResult {
    let Some(metric) = fixture.malformed_metric().map(str::to_string) else {
        return Ok(Outcome::Skipped(format!(
            "fixture '{}' names no malformed-record metric",
            fixture.name()
        )));
    };
    let env = CaseEnv::new()?;
    let target = fixture.create_target("permissive").await?;
    let expected = fixture.produce_malformed(&target, 3, 2).await?;
    let mut setup = ReadSetup::target(&target);
    setup.decode_mode = Some(DecodeMode::Permissive);
    let mut r = start_reading(connector, fixture, &env, &setup).await?;
    let got = r.read_all(fixture).await?;
    ensure!(
        got == expected,
        "permissive decoding should give {expected:?}, read {got:?}"
    );
    let bad = expected.iter().filter(|v| v.is_none()).count() as u64;
    let metrics = r.source.metrics();
    let counted = metrics.get(&metric).and_then(|v| v.as_u64()).unwrap_or(0);
    ensure!(
        counted == bad,
        "{metric} should count {bad} malformed records, metrics are {metrics:?}"
    );
    r.source.stop().await?;
    Ok(Outcome::Passed)
}

/// In FAILFAST mode the first malformed record stops the read with `MALFORMED_RECORD`.
pub async fn failfast_decoding_stops(
    connector: &dyn SourceFactory,
    fixture: &mut dyn Fixture,
) -> CaseResult {
    let env = CaseEnv::new()?;
    let target = fixture.create_target("failfast").await?;
    fixture.produce_malformed(&target, 2, 1).await?;
    let mut setup = ReadSetup::target(&target);
    setup.decode_mode = Some(DecodeMode::FailFast);
    let Reading {
        mut source,
        start,
        end,
        ..
    } = start_reading(connector, fixture, &env, &setup).await?;
    let e = source
        .read(&start, &end)
        .await
        .err()
        .ok_or_else(|| Failure("FAILFAST read a malformed record without an error".into()))?;
    ensure!(
        e.code() == ErrorCode::MalformedRecord,
        "FAILFAST failed with {} instead of MALFORMED_RECORD: {e}",
        e.code()
    );
    let _ = source.stop().await;
    Ok(Outcome::Passed)
}
