//! Permissive decoding and FAILFAST.

use std::time::Duration;

use tributary_sdk::{ErrorCode, ReadLimit, SourceFactory};

use crate::cases::{drain, ensure, wait_for_data, CaseEnv, CaseResult, Failure, Outcome};
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
    let options = fixture.source_options(&setup)?;
    let mut source = connector.create(&options, &env.context)?;
    let start = source.initial_offset().await?;
    wait_for_data(
        source.as_mut(),
        &start,
        &ReadLimit::All,
        Duration::from_secs(20),
    )
    .await?;
    let (read, _) = drain(source.as_mut(), start, &ReadLimit::All, 100).await?;
    let got = crate::cases::all_payloads(fixture, &read)?;
    ensure!(
        got == expected,
        "permissive decoding should give {expected:?}, read {got:?}"
    );
    let bad = expected.iter().filter(|v| v.is_none()).count() as u64;
    let metrics = source.metrics();
    let counted = metrics.get(&metric).and_then(|v| v.as_u64()).unwrap_or(0);
    ensure!(
        counted == bad,
        "{metric} should count {bad} malformed records, metrics are {metrics:?}"
    );
    source.stop().await?;
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
    let options = fixture.source_options(&setup)?;
    let mut source = connector.create(&options, &env.context)?;
    let start = source.initial_offset().await?;
    let end = wait_for_data(
        source.as_mut(),
        &start,
        &ReadLimit::All,
        Duration::from_secs(20),
    )
    .await?;
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
