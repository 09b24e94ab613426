//! Rate limits and idle sources.

use std::time::{Duration, Instant};

use tributary_sdk::{ReadLimit, SourceFactory};

use crate::capability::LimitUnit;
use crate::cases::{
    all_payloads, drain, ensure, sorted, sorted_some, wait_for_data, CaseEnv, CaseResult, Outcome,
};
use crate::fixture::{Fixture, ReadSetup};

/// The connector's rate-limit option sets its default read limit and bounds every batch; a limit
/// passed by the host bounds batches the same way; nothing is lost across limited batches.
pub async fn rate_limit_honoured(
    connector: &dyn SourceFactory,
    fixture: &mut dyn Fixture,
) -> CaseResult {
    let Some(rate) = fixture.rate_limit() else {
        return Ok(Outcome::Skipped(format!(
            "fixture '{}' declares no rate-limit option",
            fixture.name()
        )));
    };
    let env = CaseEnv::new()?;
    let target = fixture.create_target("ratelimit").await?;
    let produced = fixture.produce(&target, 7).await?;
    let mut setup = ReadSetup::target(&target);
    setup.max_per_trigger = Some(2);
    let options = fixture.source_options(&setup)?;
    let mut source = connector.create(&options, &env.context)?;
    let limit = source.default_read_limit();
    let declared = match rate.unit {
        LimitUnit::Rows => limit.max_rows(),
        LimitUnit::Files => limit.max_files(),
    };
    ensure!(
        declared == Some(2),
        "{}=2 should make the default read limit 2 {:?}, got {limit:?}",
        rate.option,
        rate.unit
    );
    let start = source.initial_offset().await?;
    wait_for_data(source.as_mut(), &start, &limit, Duration::from_secs(20)).await?;
    let (read, _) = drain(source.as_mut(), start, &limit, 100).await?;
    for r in &read {
        let units = fixture.count_units(&r.batches, rate.unit)?;
        ensure!(
            units <= 2,
            "batch {}..{} holds {units} {:?} with a limit of 2",
            r.start,
            r.end,
            rate.unit
        );
    }
    ensure!(
        read.len() >= 4,
        "7 units with a limit of 2 need at least 4 batches, got {}",
        read.len()
    );
    let got = all_payloads(fixture, &read)?;
    ensure!(
        sorted(got.clone()) == sorted_some(&produced),
        "limited batches together should hold every record once: expected {produced:?}, read {got:?}"
    );
    source.stop().await?;

    // A limit chosen by the host (the runtime's trigger) is honoured the same way.
    let env = CaseEnv::new()?;
    let target = fixture.create_target("hostlimit").await?;
    fixture.produce(&target, 5).await?;
    let options = fixture.source_options(&ReadSetup::target(&target))?;
    let mut source = connector.create(&options, &env.context)?;
    let host_limit = match rate.unit {
        LimitUnit::Rows => ReadLimit::MaxRows(3),
        LimitUnit::Files => ReadLimit::MaxFiles(3),
    };
    let start = source.initial_offset().await?;
    let end = wait_for_data(
        source.as_mut(),
        &start,
        &host_limit,
        Duration::from_secs(20),
    )
    .await?;
    let batches = source.read(&start, &end).await?;
    let units = fixture.count_units(&batches, rate.unit)?;
    ensure!(
        (1..=3).contains(&units),
        "a host limit of 3 {:?} planned a batch of {units}",
        rate.unit
    );
    source.stop().await?;
    Ok(Outcome::Passed)
}

/// After everything is read, planning returns the start offset (no data) promptly, reading an
/// empty range yields no rows, and nothing blocks.
pub async fn idle_source_returns_empty(
    connector: &dyn SourceFactory,
    fixture: &mut dyn Fixture,
) -> CaseResult {
    let env = CaseEnv::new()?;
    let target = fixture.create_target("idle").await?;
    fixture.produce(&target, 3).await?;
    let options = fixture.source_options(&ReadSetup::target(&target))?;
    let mut source = connector.create(&options, &env.context)?;
    let limit = source.default_read_limit();
    let start = source.initial_offset().await?;
    wait_for_data(source.as_mut(), &start, &limit, Duration::from_secs(20)).await?;
    let (_, end) = drain(source.as_mut(), start, &limit, 100).await?;
    let began = Instant::now();
    for i in 0..5 {
        let call = Instant::now();
        let next =
            tokio::time::timeout(Duration::from_secs(10), source.latest_offset(&end, &limit))
                .await
                .map_err(|_| {
                    crate::cases::Failure("latest_offset on an idle source blocked for 10 s".into())
                })??;
        ensure!(
            next == end,
            "idle source planned {end}..{next} on call {i} although nothing was produced"
        );
        ensure!(
            call.elapsed() < Duration::from_secs(5),
            "an idle latest_offset took {:?}",
            call.elapsed()
        );
    }
    let empty = source.read(&end, &end).await?;
    let rows: usize = empty.iter().map(|b| b.num_rows()).sum();
    ensure!(
        rows == 0,
        "reading the empty range {end}..{end} returned {rows} rows"
    );
    ensure!(
        began.elapsed() < Duration::from_secs(15),
        "five idle polls took {:?}",
        began.elapsed()
    );
    source.stop().await?;
    Ok(Outcome::Passed)
}
