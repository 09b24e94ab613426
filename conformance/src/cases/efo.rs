//! Enhanced fan-out consumer lifecycle (Kinesis): register, reuse, deregister, leak.

use std::time::Duration;

use tributary_sdk::{SourceFactory, SourceFactoryExt};

use crate::cases::{ensure, CaseEnv, CaseResult, Outcome};
use crate::fixture::{EfoSetup, Fixture, ReadSetup};

async fn efo_source(
    connector: &dyn SourceFactory,
    fixture: &mut dyn Fixture,
    env: &CaseEnv,
    target: &str,
    name: &str,
    deregister: bool,
) -> Result<Box<dyn tributary_sdk::Source>, crate::cases::Failure> {
    let mut setup = ReadSetup::target(target);
    setup.efo = Some(EfoSetup {
        consumer_name: name.to_string(),
        deregister_on_stop: deregister,
    });
    let options = fixture.source_options(&setup)?;
    let mut source = connector.create(&options, &env.context)?;
    // Starting the query registers (or finds) the consumer and waits until it is ACTIVE.
    source.initial_offset().await?;
    Ok(source)
}

async fn listed(fixture: &dyn Fixture, target: &str) -> Result<Vec<String>, crate::cases::Failure> {
    Ok(fixture.list_efo_consumers(target).await?)
}

/// Starting an EFO source registers its consumer; it is listed once the source is ready.
pub async fn efo_consumer_registered_active(
    connector: &dyn SourceFactory,
    fixture: &mut dyn Fixture,
) -> CaseResult {
    let env = CaseEnv::new()?;
    let target = fixture.create_target("efo").await?;
    fixture.produce(&target, 1).await?;
    let mut source = efo_source(connector, fixture, &env, &target, "conformance-efo", true).await?;
    let names = listed(fixture, &target).await?;
    ensure!(
        names.iter().any(|n| n == "conformance-efo"),
        "consumer conformance-efo is not registered: {names:?}"
    );
    source.stop().await?;
    Ok(Outcome::Passed)
}

/// A second source with the same consumer name reuses the consumer instead of adding one.
pub async fn efo_consumer_reused_by_name(
    connector: &dyn SourceFactory,
    fixture: &mut dyn Fixture,
) -> CaseResult {
    let env = CaseEnv::new()?;
    let target = fixture.create_target("eforeuse").await?;
    let mut a = efo_source(
        connector,
        fixture,
        &env,
        &target,
        "conformance-reuse",
        false,
    )
    .await?;
    let before = listed(fixture, &target).await?;
    let env2 = CaseEnv::new()?;
    let mut b = efo_source(
        connector,
        fixture,
        &env2,
        &target,
        "conformance-reuse",
        false,
    )
    .await?;
    let after = listed(fixture, &target).await?;
    ensure!(
        before.len() == after.len(),
        "a second source with the same name added a consumer: {before:?} -> {after:?}"
    );
    a.stop().await?;
    b.stop().await?;
    Ok(Outcome::Passed)
}

/// With deregistration requested, stopping the source removes its consumer.
pub async fn efo_consumer_deregistered_on_stop(
    connector: &dyn SourceFactory,
    fixture: &mut dyn Fixture,
) -> CaseResult {
    let env = CaseEnv::new()?;
    let target = fixture.create_target("efodereg").await?;
    let mut source =
        efo_source(connector, fixture, &env, &target, "conformance-dereg", true).await?;
    source.stop().await?;
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let names = listed(fixture, &target).await?;
        if !names.iter().any(|n| n == "conformance-dereg") {
            return Ok(Outcome::Passed);
        }
        ensure!(
            std::time::Instant::now() < deadline,
            "consumer conformance-dereg is still registered after stop: {names:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Without deregistration the consumer outlives the source and the fixture can list the leak.
pub async fn efo_consumer_leak_listed(
    connector: &dyn SourceFactory,
    fixture: &mut dyn Fixture,
) -> CaseResult {
    let env = CaseEnv::new()?;
    let target = fixture.create_target("efoleak").await?;
    let mut source =
        efo_source(connector, fixture, &env, &target, "conformance-leak", false).await?;
    source.stop().await?;
    let names = listed(fixture, &target).await?;
    ensure!(
        names.iter().any(|n| n == "conformance-leak"),
        "a consumer kept on purpose is not listed: {names:?}"
    );
    Ok(Outcome::Passed)
}
