//! Input partitions (scale-out): the pieces a driver plans and executors read are the range.
//!
//! A source that opts in ([`tributary_sdk::Source::plan_partitions`] returns `Some`) splits a
//! planned range into [`InputPartition`]s; another process builds the source from the same
//! connector and options, without a checkpoint state directory, and reads one partition with
//! [`tributary_sdk::Source::read_partition`]. A source that returns `None` keeps its batches on
//! the driver: the case does not apply and is reported skipped, with that reason.

use std::collections::BTreeMap;

use futures::TryStreamExt;
use tributary_sdk::{ConnectorContext, InputPartition, SourceFactory, SourceFactoryExt};

use crate::capability::Capability;
use crate::cases::{ensure, start_reading, CaseEnv, CaseResult, Failure, Outcome, Reading};
use crate::fixture::{Fixture, ReadSetup};

/// The engine's task slots the case plans for (a source may ignore it).
const PARALLELISM: usize = 3;

/// Records produced for the case (spread over 4 partitions when the fixture can).
const RECORDS: usize = 12;

/// The partitions of `[start, end)`, each read by a second source built from the same options
/// with `state_dir: None` (an executor's), hold exactly the rows `read(start, end)` returns
/// (as multisets); planning twice gives the same partitions; indexes are `0..n`; a partition
/// survives its trip through JSON; a known record count is never exceeded.
pub async fn input_partitions_cover_range(
    connector: &dyn SourceFactory,
    fixture: &mut dyn Fixture,
) -> CaseResult {
    let env = CaseEnv::new()?;
    let target = if fixture.capabilities().contains(&Capability::Assign) {
        let target = fixture.create_partitioned_target("partitions", 4).await?;
        fixture.produce_partitioned(&target, RECORDS).await?;
        target
    } else {
        let target = fixture.create_target("partitions").await?;
        fixture.produce(&target, RECORDS).await?;
        target
    };
    let Reading {
        mut source,
        options,
        start,
        end,
    } = start_reading(connector, fixture, &env, &ReadSetup::target(&target)).await?;
    ensure!(
        end != start,
        "no data planned after producing {RECORDS} records"
    );
    let Some(parts) = source.plan_partitions(&start, &end, PARALLELISM).await? else {
        source.stop().await?;
        return Ok(Outcome::Skipped(format!(
            "not applicable: connector '{}' does not plan input partitions (plan_partitions returned None), so its batches are read on the driver",
            connector.name()
        )));
    };
    let indexes: Vec<usize> = parts.iter().map(|p| p.index).collect();
    ensure!(
        indexes == (0..parts.len()).collect::<Vec<_>>(),
        "partition indexes of {start}..{end} should be 0..{}, got {indexes:?}",
        parts.len()
    );
    let again = source.plan_partitions(&start, &end, PARALLELISM).await?;
    ensure!(
        again.as_ref() == Some(&parts),
        "planning {start}..{end} twice gave different partitions: {parts:?}, then {again:?}"
    );
    let whole = fixture.payloads(&source.read(&start, &end).await?)?;

    // An executor: the same connector and options, no checkpoint state directory, never asked
    // to plan or commit.
    let context = ConnectorContext {
        state_dir: None,
        ..env.context.clone()
    };
    let mut executor = connector.create(&options, &context)?;
    let mut pieces = Vec::new();
    for part in &parts {
        let shipped = ship(part)?;
        let batches: Vec<_> = executor
            .read_partition(&shipped)
            .await?
            .try_collect()
            .await?;
        let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
        if let Some(expected) = part.expected_records {
            ensure!(
                rows as u64 <= expected,
                "partition {} ({}) expected at most {expected} records, read {rows}",
                part.index,
                part.label
            );
        }
        pieces.extend(fixture.payloads(&batches)?);
    }
    executor.stop().await?;
    let (missing, extra) = difference(&whole, &pieces);
    ensure!(
        missing.is_empty() && extra.is_empty(),
        "the {} partitions of {start}..{end} read by a second source differ from read ({} rows vs {}): missing {missing:?}, duplicated or unexpected {extra:?}",
        parts.len(),
        pieces.len(),
        whole.len()
    );
    source.stop().await?;
    Ok(Outcome::Passed)
}

/// The rows of `expected` that `got` lacks and those it has in excess (multisets; at most 10
/// of each, for the message).
pub(crate) fn difference(
    expected: &[Option<String>],
    got: &[Option<String>],
) -> (Vec<Option<String>>, Vec<Option<String>>) {
    let mut count: BTreeMap<&Option<String>, i64> = BTreeMap::new();
    for e in expected {
        *count.entry(e).or_default() += 1;
    }
    for g in got {
        *count.entry(g).or_default() -= 1;
    }
    let side = |positive: bool| -> Vec<Option<String>> {
        count
            .iter()
            .filter(|(_, n)| if positive { **n > 0 } else { **n < 0 })
            .flat_map(|(v, n)| std::iter::repeat_n((*v).clone(), n.unsigned_abs() as usize))
            .take(10)
            .collect()
    };
    (side(true), side(false))
}

/// A partition after its trip to an executor (through JSON, as in a serialised plan).
pub(crate) fn ship(part: &InputPartition) -> Result<InputPartition, Failure> {
    let text = serde_json::to_string(part)
        .map_err(|e| Failure(format!("partition {} is not serialisable: {e}", part.label)))?;
    let back: InputPartition = serde_json::from_str(&text).map_err(|e| {
        Failure(format!(
            "partition {} does not deserialise: {e}",
            part.label
        ))
    })?;
    if &back != part {
        return Err(Failure(format!(
            "partition {} changed through JSON: {part:?} became {back:?}",
            part.label
        )));
    }
    Ok(back)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn v(items: &[&str]) -> Vec<Option<String>> {
        items.iter().map(|s| Some(s.to_string())).collect()
    }

    #[test]
    fn differences_are_multiset_differences() {
        let (missing, extra) = difference(&v(&["a", "b", "c"]), &v(&["c", "b", "a"]));
        assert!(missing.is_empty() && extra.is_empty());
        let (missing, extra) = difference(&v(&["a", "b", "c"]), &v(&["a", "b", "b"]));
        assert_eq!((missing, extra), (v(&["c"]), v(&["b"])));
        let mut got = v(&["a"]);
        got.push(None);
        let (missing, extra) = difference(&v(&["a", "a"]), &got);
        assert_eq!((missing, extra), (v(&["a"]), vec![None]));
    }

    #[test]
    fn a_partition_survives_its_trip() {
        let mut p = InputPartition::new(1, "t-0 [0, 2)", serde_json::json!({"start": 0}));
        p.expected_records = Some(2);
        assert_eq!(ship(&p).unwrap(), p);
    }
}
