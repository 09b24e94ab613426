//! Bounds on what a batch or a run reads: rate limits, `availableNow` runs, idle sources.

use std::time::{Duration, Instant};

use tributary_sdk::{ReadLimit, SourceFactory, SourceFactoryExt};

use crate::capability::LimitUnit;
use crate::cases::{
    all_payloads, drain, ensure, sorted, sorted_some, start_reading, wait_for_data, CaseEnv,
    CaseResult, Outcome,
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

/// An `availableNow` run reads what existed when [`Source::prepare_available_now`] was called
/// and nothing produced later — neither before its first batch nor between batches (in several
/// batches when the connector has a rate limit) — while a new run sees the later records.
///
/// [`Source::prepare_available_now`]: tributary_sdk::Source::prepare_available_now
pub async fn available_now_bounded(
    connector: &dyn SourceFactory,
    fixture: &mut dyn Fixture,
) -> CaseResult {
    let target = fixture.create_target("availablenow").await?;
    let before = fixture.produce(&target, 5).await?;
    let mut setup = ReadSetup::target(&target);
    if fixture.rate_limit().is_some() {
        setup.max_per_trigger = Some(2);
    }
    let options = fixture.source_options(&setup)?;
    // Wait (with another instance) until the records are visible, so the run under test starts
    // the way the runtime starts one: prepare_available_now before any planning.
    let probe_env = CaseEnv::new()?;
    let mut probe = connector.create(&options, &probe_env.context)?;
    let probe_start = probe.initial_offset().await?;
    let probe_end = wait_for_data(
        probe.as_mut(),
        &probe_start,
        &ReadLimit::All,
        Duration::from_secs(20),
    )
    .await?;
    ensure!(
        probe_end != probe_start,
        "no data planned after producing 5 records"
    );
    probe.stop().await?;
    drop(probe);

    let env = CaseEnv::new()?;
    let mut source = connector.create(&options, &env.context)?;
    let limit = source.default_read_limit();
    let start = source.initial_offset().await?;
    source.prepare_available_now().await?;
    let mut later = fixture.produce(&target, 3).await?;
    let end = source.latest_offset(&start, &limit).await?;
    ensure!(end != start, "the availableNow run planned no first batch");
    let first = source.read(&start, &end).await?;
    source.commit(&end).await?;
    later.extend(fixture.produce(&target, 2).await?);
    let (rest, _) = drain(source.as_mut(), end, &limit, 100).await?;
    let mut got = fixture.payloads(&first)?;
    got.extend(all_payloads(fixture, &rest)?);
    ensure!(
        sorted(got.clone()) == sorted_some(&before),
        "the availableNow run should read the {} records that existed when it was prepared \
         ({before:?}), read {got:?} (produced later: {later:?})",
        before.len()
    );
    source.stop().await?;

    // The later records exist: a new run reads them (so the bound above was the snapshot's).
    let env = CaseEnv::new()?;
    let mut r = start_reading(connector, fixture, &env, &setup).await?;
    let all = r.read_all(fixture).await?;
    ensure!(
        later.iter().all(|v| all.contains(&Some(v.clone()))),
        "a new run should read the records produced after the availableNow run was prepared \
         ({later:?}), read {all:?}"
    );
    r.source.stop().await?;
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
