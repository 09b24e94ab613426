//! Starting positions, read-range determinism and replay after a restart.

use std::time::Duration;

use tributary_sdk::{ReadLimit, SourceFactory, SourceFactoryExt};

use crate::capability::Capability;
use crate::cases::{
    all_payloads, drain, ensure, sorted, sorted_some, start_reading, wait_for_data, CaseEnv,
    CaseResult, Outcome, Reading,
};
use crate::fixture::{Fixture, ReadSetup, Starting};

/// A new query from `earliest` reads every record already produced, once.
pub async fn starting_earliest(
    connector: &dyn SourceFactory,
    fixture: &mut dyn Fixture,
) -> CaseResult {
    let env = CaseEnv::new()?;
    let target = fixture.create_target("earliest").await?;
    let produced = fixture.produce(&target, 7).await?;
    let mut r = start_reading(connector, fixture, &env, &ReadSetup::target(&target)).await?;
    let got = r.read_all(fixture).await?;
    ensure!(
        sorted(got.clone()) == sorted_some(&produced),
        "from earliest expected {produced:?}, read {got:?}"
    );
    r.source.stop().await?;
    Ok(Outcome::Passed)
}

/// A new query from `latest` skips what exists and reads only later records.
pub async fn starting_latest(
    connector: &dyn SourceFactory,
    fixture: &mut dyn Fixture,
) -> CaseResult {
    let env = CaseEnv::new()?;
    let target = fixture.create_target("latest").await?;
    let before = fixture.produce(&target, 4).await?;
    let mut setup = ReadSetup::target(&target);
    setup.starting = Starting::Latest;
    let options = fixture.source_options(&setup)?;
    let mut source = connector.create(&options, &env.context)?;
    let start = source.initial_offset().await?;
    let end = source.latest_offset(&start, &ReadLimit::All).await?;
    let early = source.read(&start, &end).await?;
    let early = fixture.payloads(&early)?;
    ensure!(
        early.is_empty(),
        "from latest, records produced before the start were read: {early:?} (produced {before:?})"
    );
    if fixture
        .capabilities()
        .contains(&Capability::AppendWhileRunning)
    {
        let after = fixture.produce(&target, 3).await?;
        let end = wait_for_data(
            source.as_mut(),
            &start,
            &ReadLimit::All,
            Duration::from_secs(20),
        )
        .await?;
        ensure!(
            end != start,
            "records produced after the start never became visible"
        );
        let (read, _) = drain(source.as_mut(), start, &ReadLimit::All, 100).await?;
        let got = all_payloads(fixture, &read)?;
        ensure!(
            sorted(got.clone()) == sorted_some(&after),
            "from latest expected only the later records {after:?}, read {got:?}"
        );
    }
    source.stop().await?;
    Ok(Outcome::Passed)
}

/// Reading the same `[start, end)` twice, and with a fresh instance, yields the same records;
/// `read_stream` yields what `read` returns.
pub async fn read_range_determinism(
    connector: &dyn SourceFactory,
    fixture: &mut dyn Fixture,
) -> CaseResult {
    let env = CaseEnv::new()?;
    let target = fixture.create_target("determinism").await?;
    let produced = fixture.produce(&target, 9).await?;
    let Reading {
        mut source,
        options,
        start,
        end,
    } = start_reading(connector, fixture, &env, &ReadSetup::target(&target)).await?;
    ensure!(
        end != start,
        "no data planned after producing {} records",
        produced.len()
    );
    let first = source.read(&start, &end).await?;
    let second = source.read(&start, &end).await?;
    ensure!(
        first == second,
        "two reads of {start}..{end} returned different batches"
    );
    // The host reads through `read_stream`: its parts must hold exactly what `read` returns.
    let streamed: Vec<_> = {
        use futures::TryStreamExt;
        source
            .read_stream(&start, &end)
            .await?
            .try_collect()
            .await?
    };
    let (r, s) = (fixture.payloads(&first)?, fixture.payloads(&streamed)?);
    ensure!(
        r == s,
        "read_stream of {start}..{end} differs from read: {s:?} vs {r:?}"
    );
    source.stop().await?;
    drop(source);
    let mut fresh = connector.create(&options, &env.context)?;
    let third = fresh.read(&start, &end).await?;
    let (a, c) = (fixture.payloads(&first)?, fixture.payloads(&third)?);
    ensure!(
        a == c,
        "a new instance read {start}..{end} differently: {a:?} vs {c:?}"
    );
    ensure!(
        sorted(a.clone()) == sorted_some(&produced),
        "the range should hold every produced record: {produced:?}, read {a:?}"
    );
    fresh.stop().await?;
    Ok(Outcome::Passed)
}

/// A batch planned and read but not committed is replayed with exactly the same range by a new
/// instance; continuing from there reads every record exactly once.
pub async fn replay_after_restart(
    connector: &dyn SourceFactory,
    fixture: &mut dyn Fixture,
) -> CaseResult {
    let env = CaseEnv::new()?;
    let target = fixture.create_target("replay").await?;
    let produced = fixture.produce(&target, 10).await?;
    let mut setup = ReadSetup::target(&target);
    let limit = match fixture.rate_limit() {
        Some(_) => {
            setup.max_per_trigger = Some(3);
            None
        }
        None => Some(ReadLimit::MaxRows(3)),
    };
    let options = fixture.source_options(&setup)?;
    let mut source = connector.create(&options, &env.context)?;
    let limit = limit.unwrap_or_else(|| source.default_read_limit());
    let start = source.initial_offset().await?;
    // Batch 0: planned, read, committed.
    let end0 = wait_for_data(source.as_mut(), &start, &limit, Duration::from_secs(20)).await?;
    ensure!(end0 != start, "no data planned after producing records");
    let b0 = source.read(&start, &end0).await?;
    source.commit(&end0).await?;
    // Batch 1: planned and read, then the process "crashes" before the commit.
    let end1 = source.latest_offset(&end0, &limit).await?;
    let b1 = source.read(&end0, &end1).await?;
    drop(source);
    // Restart: a new instance with the same state replays [end0, end1) and continues.
    let mut source = connector.create(&options, &env.context)?;
    let replayed = source.read(&end0, &end1).await?;
    ensure!(
        fixture.payloads(&replayed)? == fixture.payloads(&b1)?,
        "the replayed batch {end0}..{end1} differs from the first attempt"
    );
    source.commit(&end1).await?;
    let (rest, _) = drain(source.as_mut(), end1, &limit, 100).await?;
    let mut got = fixture.payloads(&b0)?;
    got.extend(fixture.payloads(&replayed)?);
    got.extend(all_payloads(fixture, &rest)?);
    let expected = sorted_some(&produced);
    let got_sorted = sorted(got.clone());
    ensure!(
        got_sorted == expected,
        "after the restart the committed batches hold {got:?}, expected each of {produced:?} once"
    );
    source.stop().await?;
    Ok(Outcome::Passed)
}
