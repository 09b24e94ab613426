//! Real-time reads replay exactly: what a streaming read delivered is the logged range.
//!
//! A real-time batch does not know its end when it starts: the runtime logs
//! `[start, end_offset(start, delivered))` once the readers stopped, and a crash replays that
//! range through [`tributary_sdk::Source::read_stream`]. The records the stream delivered and the
//! records the replay reads must be the same, or a crash loses or duplicates records.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures::TryStreamExt;
use tributary_sdk::{chunk_queue, SourceFactory, SourceFactoryExt};

use crate::capability::Capability;
use crate::cases::{ensure, sorted, sorted_some, CaseEnv, CaseResult, Failure, Outcome};
use crate::fixture::{Fixture, ReadSetup};

/// Records produced for the case (spread over 2 partitions when the fixture can).
const RECORDS: usize = 6;
/// How long the stream may take to deliver them.
const DELIVERY: Duration = Duration::from_secs(30);

/// A streaming read from the initial offset, stopped once every produced record arrived,
/// delivered exactly the records `read_stream(start, end_offset(start, delivered))` yields.
pub async fn streaming_replay_matches(
    connector: &dyn SourceFactory,
    fixture: &mut dyn Fixture,
) -> CaseResult {
    let env = CaseEnv::new()?;
    let (target, produced) = if fixture.capabilities().contains(&Capability::Assign) {
        let target = fixture.create_partitioned_target("stream", 2).await?;
        let p = fixture.produce_partitioned(&target, RECORDS).await?;
        (target, p.into_iter().map(|(_, v)| v).collect())
    } else {
        let target = fixture.create_target("stream").await?;
        let p = fixture.produce(&target, RECORDS).await?;
        (target, p)
    };
    let mut setup = ReadSetup::target(&target);
    setup.real_time = true;
    let options = fixture.source_options(&setup)?;
    run(connector, fixture, &env, options, produced).await
}

/// The case after its records were produced.
async fn run(
    connector: &dyn SourceFactory,
    fixture: &dyn Fixture,
    env: &CaseEnv,
    options: tributary_sdk::Options,
    produced: Vec<String>,
) -> CaseResult {
    let mut source = connector.create(&options, &env.context)?;
    let start = source.initial_offset().await?;
    let Some(streaming) = source.as_streaming() else {
        source.stop().await?;
        return Err(Failure(format!(
            "connector '{}' declares RealTime but as_streaming() returned None",
            connector.name()
        )));
    };
    let (tx, mut rx) = chunk_queue(16);
    streaming.start_stream(&start, tx).await?;
    let mut delivered = BTreeMap::new();
    let mut streamed = Vec::new();
    let deadline = Instant::now() + DELIVERY;
    while streamed.len() < produced.len() {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, rx.recv()).await {
            Ok(Some(Ok(chunk))) => {
                streamed.extend(fixture.payloads(std::slice::from_ref(&chunk.batch))?);
                delivered.insert(chunk.partition, chunk.position);
            }
            Ok(Some(Err(e))) => return Err(Failure(format!("the stream failed: {e}"))),
            Ok(None) | Err(_) => break,
        }
    }
    streaming.stop_stream().await?;
    let end = streaming.end_offset(&start, &delivered)?;
    ensure!(
        sorted(streamed.clone()) == sorted_some(&produced),
        "the stream from {start} should deliver every produced record once within {DELIVERY:?}: produced {produced:?}, delivered {streamed:?}"
    );
    let replayed: Vec<_> = source
        .read_stream(&start, &end)
        .await?
        .try_collect()
        .await?;
    let replayed = fixture.payloads(&replayed)?;
    ensure!(
        sorted(replayed.clone()) == sorted(streamed.clone()),
        "the logged range {start}..{end} (end_offset of the delivered positions {delivered:?}) replays other records than the stream delivered: replayed {replayed:?}, delivered {streamed:?}"
    );
    source.stop().await?;
    Ok(Outcome::Passed)
}
