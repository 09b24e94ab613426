//! Enhanced fan-out consumer lifecycle (Kinesis): register, reuse, deregister, leak.
//!
//! Each case checks the server's view of the consumer, not the source's word for it:
//! registration must leave the consumer ACTIVE and records produced must arrive through the
//! source; reuse must leave exactly one consumer of the name whose id (ARN) and creation time
//! did not change when a second source started; deregistration must have removed the consumer
//! by the time `stop` returns; the leak case must find the leaked name in the next source's leak
//! report.

use std::time::Duration;

use tributary_sdk::{ReadLimit, Source, SourceFactory, SourceFactoryExt};

use crate::cases::{
    all_payloads, drain, ensure, sorted, sorted_some, wait_for_data, CaseEnv, CaseResult, Failure,
    Outcome, ReadBatch,
};
use crate::fixture::{EfoConsumer, EfoSetup, Fixture, ReadSetup};
use crate::names::unique_name;

async fn efo_source(
    connector: &dyn SourceFactory,
    fixture: &mut dyn Fixture,
    env: &CaseEnv,
    target: &str,
    efo: EfoSetup,
) -> Result<Box<dyn Source>, Failure> {
    let mut setup = ReadSetup::target(target);
    setup.efo = Some(efo);
    let options = fixture.source_options(&setup)?;
    let source = connector.create(&options, &env.context)?;
    Ok(source)
}

fn named(name: &str, deregister: bool) -> EfoSetup {
    EfoSetup {
        consumer_name: name.to_string(),
        deregister_on_stop: deregister,
        prefix: None,
    }
}

async fn consumer(
    fixture: &dyn Fixture,
    target: &str,
    name: &str,
) -> Result<Option<EfoConsumer>, Failure> {
    Ok(fixture.describe_efo_consumer(target, name).await?)
}

async fn count_named(fixture: &dyn Fixture, target: &str, name: &str) -> Result<usize, Failure> {
    Ok(fixture
        .list_efo_consumers(target)
        .await?
        .iter()
        .filter(|n| n.as_str() == name)
        .count())
}

/// Starting an EFO source registers its consumer, ACTIVE once the start returns, and the
/// records produced arrive through it.
pub async fn efo_consumer_registered_active(
    connector: &dyn SourceFactory,
    fixture: &mut dyn Fixture,
) -> CaseResult {
    let env = CaseEnv::new()?;
    let target = fixture.create_target("efo").await?;
    let name = unique_name("conformance-efo");
    let produced = fixture.produce(&target, 3).await?;
    let mut source = efo_source(connector, fixture, &env, &target, named(&name, true)).await?;
    // Starting the query registers (or finds) the consumer and waits until it is ACTIVE.
    let start = source.initial_offset().await?;
    let c = consumer(fixture, &target, &name).await?;
    ensure!(
        c.as_ref().is_some_and(|c| c.active),
        "consumer {name} is not registered ACTIVE after the start: {c:?}"
    );
    ensure!(
        count_named(fixture, &target, &name).await? == 1,
        "more than one consumer named {name}"
    );
    let first = wait_for_data(
        source.as_mut(),
        &start,
        &ReadLimit::All,
        Duration::from_secs(20),
    )
    .await?;
    let mut read: Vec<ReadBatch> = Vec::new();
    if first != start {
        let (batches, _) = drain(source.as_mut(), start, &ReadLimit::All, 50).await?;
        read = batches;
    }
    let got = all_payloads(fixture, &read)?;
    ensure!(
        sorted(got.clone()) == sorted_some(&produced),
        "records did not arrive through the consumer: {got:?} vs {produced:?}"
    );
    source.stop().await?;
    Ok(Outcome::Passed)
}

/// A second source with the same consumer name reuses the SAME consumer (same id and creation
/// time), and exactly one consumer of that name exists.
pub async fn efo_consumer_reused_by_name(
    connector: &dyn SourceFactory,
    fixture: &mut dyn Fixture,
) -> CaseResult {
    let env = CaseEnv::new()?;
    let target = fixture.create_target("eforeuse").await?;
    let name = unique_name("conformance-reuse");
    let mut a = efo_source(connector, fixture, &env, &target, named(&name, false)).await?;
    a.initial_offset().await?;
    let first = consumer(fixture, &target, &name).await?.ok_or_else(|| {
        Failure(format!(
            "consumer {name} not registered by the first source"
        ))
    })?;
    let env2 = CaseEnv::new()?;
    let mut b = efo_source(connector, fixture, &env2, &target, named(&name, false)).await?;
    b.initial_offset().await?;
    let second = consumer(fixture, &target, &name).await?.ok_or_else(|| {
        Failure(format!(
            "consumer {name} gone after the second source started"
        ))
    })?;
    ensure!(
        (second.id.as_str(), second.created_ms) == (first.id.as_str(), first.created_ms),
        "the second source did not reuse the consumer: {first:?} -> {second:?}"
    );
    let n = count_named(fixture, &target, &name).await?;
    ensure!(
        n == 1,
        "{n} consumers named {name} exist, expected exactly one"
    );
    a.stop().await?;
    b.stop().await?;
    Ok(Outcome::Passed)
}

/// With deregistration requested, the consumer is gone once `stop` returns.
pub async fn efo_consumer_deregistered_on_stop(
    connector: &dyn SourceFactory,
    fixture: &mut dyn Fixture,
) -> CaseResult {
    let env = CaseEnv::new()?;
    let target = fixture.create_target("efodereg").await?;
    let name = unique_name("conformance-dereg");
    let mut source = efo_source(connector, fixture, &env, &target, named(&name, true)).await?;
    source.initial_offset().await?;
    ensure!(
        consumer(fixture, &target, &name).await?.is_some(),
        "consumer {name} was never registered"
    );
    source.stop().await?;
    let left = consumer(fixture, &target, &name).await?;
    ensure!(
        left.is_none(),
        "consumer {name} is still registered after stop returned: {left:?}"
    );
    Ok(Outcome::Passed)
}

/// A consumer left behind (no deregistration) under the prefix is named in the leak report of
/// the next source started with that prefix by another pipeline, which does not report itself.
pub async fn efo_consumer_leak_listed(
    connector: &dyn SourceFactory,
    fixture: &mut dyn Fixture,
) -> CaseResult {
    let target = fixture.create_target("efoleak").await?;
    let prefix = format!("{}_", unique_name("leak").replace('-', "_"));
    let with_prefix = EfoSetup {
        consumer_name: String::new(),
        deregister_on_stop: false,
        prefix: Some(prefix.clone()),
    };
    let env = CaseEnv::new()?;
    let mut old = efo_source(connector, fixture, &env, &target, with_prefix.clone()).await?;
    old.initial_offset().await?;
    old.stop().await?;
    let leaked: Vec<String> = fixture
        .list_efo_consumers(&target)
        .await?
        .into_iter()
        .filter(|n| n.starts_with(&prefix))
        .collect();
    ensure!(
        leaked.len() == 1,
        "expected the one consumer kept on purpose under {prefix}: {leaked:?}"
    );
    // Another pipeline (another checkpoint id) with the same prefix.
    let mut env2 = CaseEnv::new()?;
    env2.context.checkpoint_id = Some(format!("other-{}", std::process::id()));
    let mut new = efo_source(connector, fixture, &env2, &target, with_prefix).await?;
    new.initial_offset().await?;
    let report = fixture.efo_leak_report(&new.metrics())?;
    let own: Vec<String> = fixture
        .list_efo_consumers(&target)
        .await?
        .into_iter()
        .filter(|n| n.starts_with(&prefix) && !leaked.contains(n))
        .collect();
    new.stop().await?;
    ensure!(
        report.contains(&leaked[0]),
        "the leaked consumer {} is not in the leak report {report:?}",
        leaked[0]
    );
    ensure!(
        !report.iter().any(|n| own.contains(n)),
        "the leak report names the running source's own consumer: {report:?} (own {own:?})"
    );
    Ok(Outcome::Passed)
}
