//! Record metadata round-trips: what the writer attached to a record comes back with it.
//!
//! Besides its payload a record can carry metadata the connector exposes as columns: Kafka
//! headers (with `includeHeaders`), a file's `_metadata`, a Kinesis partition key. The fixture
//! writes records with metadata ([`Fixture::produce_with_metadata`]) and renders the metadata it
//! reads back ([`Fixture::metadata`]); every record must come back with its own.

use tributary_sdk::{SourceFactory, SourceFactoryExt};

use crate::capability::Capability;
use crate::cases::{drain, ensure, CaseEnv, CaseResult, Outcome};
use crate::fixture::{Fixture, ReadSetup};

/// Records produced for the case (spread over 2 partitions when the fixture can).
const RECORDS: usize = 6;

/// Records written with metadata are read back, each with its metadata (as pairs of payload
/// and metadata, order-independent).
pub async fn metadata_round_trips(
    connector: &dyn SourceFactory,
    fixture: &mut dyn Fixture,
) -> CaseResult {
    let env = CaseEnv::new()?;
    let target = if fixture.capabilities().contains(&Capability::Assign) {
        fixture.create_partitioned_target("metadata", 2).await?
    } else {
        fixture.create_target("metadata").await?
    };
    let written = fixture.produce_with_metadata(&target, RECORDS).await?;
    let mut setup = ReadSetup::target(&target);
    setup.include_metadata = true;
    let options = fixture.source_options(&setup)?;
    let mut source = connector.create(&options, &env.context)?;
    let start = source.initial_offset().await?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut read: Vec<(Option<String>, Option<String>)> = Vec::new();
    let mut at = start;
    while read.len() < written.len() && std::time::Instant::now() < deadline {
        let (batches, end) = drain(
            source.as_mut(),
            at.clone(),
            &tributary_sdk::ReadLimit::All,
            10,
        )
        .await?;
        for b in &batches {
            let payloads = fixture.payloads(&b.batches)?;
            let metadata = fixture.metadata(&b.batches)?;
            ensure!(
                payloads.len() == metadata.len(),
                "{} payloads but {} metadata values in batch {}..{}",
                payloads.len(),
                metadata.len(),
                b.start,
                b.end
            );
            read.extend(payloads.into_iter().zip(metadata));
        }
        if end == at {
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
        at = end;
    }
    source.stop().await?;
    let mut want: Vec<(Option<String>, Option<String>)> = written
        .into_iter()
        .map(|(p, m)| (Some(p), Some(m)))
        .collect();
    want.sort();
    read.sort();
    ensure!(
        read == want,
        "records should come back with the metadata they were written with: wrote {want:?}, read {read:?}"
    );
    Ok(Outcome::Passed)
}
