//! Rescaling: the input partitions of a range hold the same rows whatever the parallelism,
//! and more readers than the source has pieces still finish.
//!
//! A scaled-out pipeline plans a logged range again after a restart, possibly on a cluster with
//! another number of task slots; the rows must not depend on it. A parallelism above the
//! source's natural pieces (partitions, shards, files) leaves some readers with little or
//! nothing to read: they must end, not wait for records that never come. The same holds for the
//! readers of a real-time read of a target with empty partitions: they end when stopped.

use std::time::Duration;

use futures::TryStreamExt;
use tributary_sdk::{
    chunk_queue, ConnectorContext, InputPartition, Offset, Options, Source, SourceFactory,
    SourceFactoryExt,
};

use crate::capability::Capability;
use crate::cases::partitions::{difference, ship};
use crate::cases::{ensure, start_reading, CaseEnv, CaseResult, Failure, Outcome, Reading};
use crate::fixture::{Fixture, ReadSetup};

/// Records produced for the cases (spread over 4 partitions when the fixture can).
const RECORDS: usize = 12;
/// The parallelism of "more readers than pieces": above 4 partitions and 12 records.
const MANY_READERS: usize = 16;
/// How long one input partition may take to read.
const PARTITION_READ: Duration = Duration::from_secs(30);
/// How long stopping a real-time read may take.
const STOP: Duration = Duration::from_secs(15);

/// A target with [`RECORDS`] records (4 partitions when the fixture can) and a source reading
/// it, once its data is planned.
async fn prepared(
    connector: &dyn SourceFactory,
    fixture: &mut dyn Fixture,
    env: &CaseEnv,
    hint: &str,
) -> Result<Reading, Failure> {
    let target = if fixture.capabilities().contains(&Capability::Assign) {
        let target = fixture.create_partitioned_target(hint, 4).await?;
        fixture.produce_partitioned(&target, RECORDS).await?;
        target
    } else {
        let target = fixture.create_target(hint).await?;
        fixture.produce(&target, RECORDS).await?;
        target
    };
    let reading = start_reading(connector, fixture, env, &ReadSetup::target(&target)).await?;
    ensure!(
        reading.end != reading.start,
        "no data planned after producing {RECORDS} records"
    );
    Ok(reading)
}

fn not_applicable(connector: &dyn SourceFactory) -> Outcome {
    Outcome::Skipped(format!(
        "not applicable: connector '{}' does not plan input partitions (plan_partitions returned None), so its batches are read on the driver",
        connector.name()
    ))
}

/// Every partition read by `executor`, each within [`PARTITION_READ`]; the rows of all.
async fn read_all(
    executor: &mut dyn Source,
    fixture: &dyn Fixture,
    parts: &[InputPartition],
) -> Result<Vec<Option<String>>, Failure> {
    let mut rows = Vec::new();
    for part in parts {
        let shipped = ship(part)?;
        let read = async {
            let batches: Vec<_> = executor
                .read_partition(&shipped)
                .await?
                .try_collect()
                .await?;
            Ok::<_, tributary_sdk::Error>(batches)
        };
        let batches = tokio::time::timeout(PARTITION_READ, read)
            .await
            .map_err(|_| {
                Failure(format!(
                    "partition {} ({}) of {} did not finish reading within {PARTITION_READ:?}",
                    part.index,
                    part.label,
                    parts.len()
                ))
            })??;
        rows.extend(fixture.payloads(&batches)?);
    }
    Ok(rows)
}

/// An executor's source: the same connector and options, no checkpoint state directory.
fn executor(
    connector: &dyn SourceFactory,
    options: &Options,
    env: &CaseEnv,
) -> Result<Box<dyn Source>, Failure> {
    let context = ConnectorContext {
        state_dir: None,
        ..env.context.clone()
    };
    Ok(connector.create(options, &context)?)
}

fn ensure_same(
    what: &str,
    start: &Offset,
    end: &Offset,
    whole: &[Option<String>],
    got: &[Option<String>],
) -> Result<(), Failure> {
    let (missing, extra) = difference(whole, got);
    ensure!(
        missing.is_empty() && extra.is_empty(),
        "{what} of {start}..{end} differ from read ({} rows vs {}): missing {missing:?}, duplicated or unexpected {extra:?}",
        got.len(),
        whole.len()
    );
    Ok(())
}

/// The input partitions of one range planned for parallelism 2 and for 4, each set read by an
/// executor, hold the same rows, and those of `read` (multisets).
pub async fn rescale_reads_same_rows(
    connector: &dyn SourceFactory,
    fixture: &mut dyn Fixture,
) -> CaseResult {
    let env = CaseEnv::new()?;
    let Reading {
        mut source,
        options,
        start,
        end,
    } = prepared(connector, fixture, &env, "rescale").await?;
    let Some(two) = source.plan_partitions(&start, &end, 2).await? else {
        source.stop().await?;
        return Ok(not_applicable(connector));
    };
    let four = source
        .plan_partitions(&start, &end, 4)
        .await?
        .ok_or_else(|| Failure("plan_partitions planned for 2 but not for 4".into()))?;
    let whole = fixture.payloads(&source.read(&start, &end).await?)?;
    let mut exec = executor(connector, &options, &env)?;
    let rows_two = read_all(exec.as_mut(), fixture, &two).await?;
    let rows_four = read_all(exec.as_mut(), fixture, &four).await?;
    exec.stop().await?;
    ensure_same(
        &format!("the {} partitions planned for parallelism 2", two.len()),
        &start,
        &end,
        &whole,
        &rows_two,
    )?;
    ensure_same(
        &format!("the {} partitions planned for parallelism 4", four.len()),
        &start,
        &end,
        &whole,
        &rows_four,
    )?;
    source.stop().await?;
    Ok(Outcome::Passed)
}

/// Planned for a parallelism above the source's pieces ([`MANY_READERS`]), every partition
/// reads to its end within [`PARTITION_READ`] and together they hold the range. With
/// [`Capability::RealTime`] and partitioned targets, a real-time read of a 4-partition target
/// with one record (three partitions empty) delivers it and its idle readers end when stopped.
pub async fn more_readers_than_partitions(
    connector: &dyn SourceFactory,
    fixture: &mut dyn Fixture,
) -> CaseResult {
    let env = CaseEnv::new()?;
    let caps = fixture.capabilities();
    let Reading {
        mut source,
        options,
        start,
        end,
    } = prepared(connector, fixture, &env, "readers").await?;
    let planned = source.plan_partitions(&start, &end, MANY_READERS).await?;
    let partitioned = match planned {
        Some(parts) => {
            let whole = fixture.payloads(&source.read(&start, &end).await?)?;
            let mut exec = executor(connector, &options, &env)?;
            let rows = read_all(exec.as_mut(), fixture, &parts).await?;
            exec.stop().await?;
            ensure_same(
                &format!(
                    "the {} partitions planned for parallelism {MANY_READERS}",
                    parts.len()
                ),
                &start,
                &end,
                &whole,
                &rows,
            )?;
            true
        }
        None => false,
    };
    source.stop().await?;
    let streamed = if caps.contains(&Capability::RealTime) && caps.contains(&Capability::Assign) {
        idle_readers_stop(connector, fixture, &env).await?;
        true
    } else {
        false
    };
    if !partitioned && !streamed {
        return Ok(not_applicable(connector));
    }
    Ok(Outcome::Passed)
}

/// A real-time read of a 4-partition target holding one record: the record arrives, and
/// stopping ends every reader (the queue closes) within [`STOP`].
async fn idle_readers_stop(
    connector: &dyn SourceFactory,
    fixture: &mut dyn Fixture,
    env: &CaseEnv,
) -> Result<(), Failure> {
    let target = fixture.create_partitioned_target("idle", 4).await?;
    let produced = fixture.produce_partitioned(&target, 1).await?;
    let mut setup = ReadSetup::target(&target);
    setup.real_time = true;
    let options = fixture.source_options(&setup)?;
    let mut source = connector.create(&options, &env.context)?;
    let start = source.initial_offset().await?;
    let streaming = source.as_streaming().ok_or_else(|| {
        Failure(format!(
            "connector '{}' declares RealTime but as_streaming() returned None",
            connector.name()
        ))
    })?;
    let (tx, mut rx) = chunk_queue(16);
    streaming.start_stream(&start, tx).await?;
    let mut got = Vec::new();
    let deadline = std::time::Instant::now() + PARTITION_READ;
    while got.is_empty() {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match tokio::time::timeout(left, rx.recv()).await {
            Ok(Some(Ok(chunk))) => got.extend(fixture.payloads(&[chunk.batch])?),
            Ok(Some(Err(e))) => return Err(Failure(format!("the stream failed: {e}"))),
            Ok(None) | Err(_) => break,
        }
    }
    let want: Vec<Option<String>> = produced.into_iter().map(|(_, v)| Some(v)).collect();
    ensure!(
        got == want,
        "a real-time read of a 4-partition target with one record should deliver it: want {want:?}, got {got:?}"
    );
    tokio::time::timeout(STOP, streaming.stop_stream())
        .await
        .map_err(|_| Failure(format!("stop_stream did not return within {STOP:?}")))??;
    // Every reader dropped its sender: the queue ends (chunks still queued are drained).
    let closed = tokio::time::timeout(STOP, async {
        while let Some(chunk) = rx.recv().await {
            chunk?;
        }
        Ok::<_, tributary_sdk::Error>(())
    })
    .await;
    ensure!(
        matches!(closed, Ok(Ok(()))),
        "after stop_stream the readers of the empty partitions still hold the queue ({STOP:?}): {closed:?}"
    );
    source.stop().await?;
    Ok(())
}
