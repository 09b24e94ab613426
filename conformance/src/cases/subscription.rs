//! Subscription modes: a list of targets, a pattern (with a target created later), assignment.

use std::time::Duration;

use tributary_sdk::{ReadLimit, SourceFactory};

use crate::cases::{
    all_payloads, drain, ensure, sorted, sorted_some, start_reading, CaseEnv, CaseResult, Outcome,
};
use crate::fixture::{Fixture, ReadSetup, Subscription};

/// Subscribing to two targets reads every record of both.
pub async fn subscribe_list(
    connector: &dyn SourceFactory,
    fixture: &mut dyn Fixture,
) -> CaseResult {
    let env = CaseEnv::new()?;
    let a = fixture.create_target("lista").await?;
    let b = fixture.create_target("listb").await?;
    let mut produced = fixture.produce(&a, 3).await?;
    produced.extend(fixture.produce(&b, 4).await?);
    let mut setup = ReadSetup::target(&a);
    setup.subscription = Subscription::Targets(vec![a.clone(), b.clone()]);
    let mut r = start_reading(connector, fixture, &env, &setup).await?;
    let got = r.read_all(fixture).await?;
    ensure!(
        sorted(got.clone()) == sorted_some(&produced),
        "subscribing to [{a}, {b}] should read {produced:?}, read {got:?}"
    );
    r.source.stop().await?;
    Ok(Outcome::Passed)
}

/// A pattern subscription reads matching targets, including one created after the query started,
/// and ignores targets that do not match.
pub async fn subscribe_pattern_includes_new_target(
    connector: &dyn SourceFactory,
    fixture: &mut dyn Fixture,
) -> CaseResult {
    let env = CaseEnv::new()?;
    let stem = format!(
        "pat{}x",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() % 1_000_000_000)
            .unwrap_or(0)
    );
    let first = fixture.create_target(&format!("{stem}one")).await?;
    let other = fixture.create_target("unrelated").await?;
    let mut produced = fixture.produce(&first, 2).await?;
    let ignored = fixture.produce(&other, 2).await?;
    let pattern = format!("^{}.*", regex_escape(&stem));
    let mut setup = ReadSetup::target(&first);
    setup.subscription = Subscription::Pattern(pattern.clone());
    let mut r = start_reading(connector, fixture, &env, &setup).await?;
    let (read1, at) = r.drain_all().await?;
    let mut source = r.source;
    let later = fixture.create_target(&format!("{stem}two")).await?;
    produced.extend(fixture.produce(&later, 3).await?);
    let mut got = all_payloads(fixture, &read1)?;
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let mut at = at;
    while sorted(got.clone()) != sorted_some(&produced) && std::time::Instant::now() < deadline {
        let (more, next) = drain(source.as_mut(), at, &ReadLimit::All, 100).await?;
        got.extend(all_payloads(fixture, &more)?);
        at = next;
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    ensure!(
        sorted(got.clone()) == sorted_some(&produced),
        "pattern {pattern} should read {produced:?} (including target {later} created later), read {got:?}"
    );
    ensure!(
        !ignored.iter().any(|v| got.contains(&Some(v.clone()))),
        "pattern {pattern} read records of the unrelated target {other}"
    );
    source.stop().await?;
    Ok(Outcome::Passed)
}

fn regex_escape(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                vec![c]
            } else {
                vec!['\\', c]
            }
        })
        .collect()
}

/// Of a target with three partitions, assigning partitions 0 and 2 reads exactly the records of
/// those partitions: none of partition 1.
pub async fn assign_partitions(
    connector: &dyn SourceFactory,
    fixture: &mut dyn Fixture,
) -> CaseResult {
    const ASSIGNED: [u32; 2] = [0, 2];
    let env = CaseEnv::new()?;
    let target = fixture.create_partitioned_target("assign", 3).await?;
    let produced = fixture.produce_partitioned(&target, 12).await?;
    let (inside, outside): (Vec<_>, Vec<_>) =
        produced.iter().partition(|(p, _)| ASSIGNED.contains(p));
    let expected: Vec<String> = inside.into_iter().map(|(_, v)| v.clone()).collect();
    let unassigned: Vec<String> = outside.into_iter().map(|(_, v)| v.clone()).collect();
    ensure!(
        !expected.is_empty() && !unassigned.is_empty(),
        "the fixture should spread 12 records over 3 partitions, produced {produced:?}"
    );
    let mut setup = ReadSetup::target(&target);
    setup.subscription =
        Subscription::Assign(ASSIGNED.iter().map(|p| (target.clone(), *p)).collect());
    let mut r = start_reading(connector, fixture, &env, &setup).await?;
    let got = r.read_all(fixture).await?;
    let strays: Vec<&String> = unassigned
        .iter()
        .filter(|v| got.contains(&Some((*v).clone())))
        .collect();
    ensure!(
        strays.is_empty(),
        "assign {target}:{ASSIGNED:?} read records of unassigned partition(s): {strays:?}"
    );
    ensure!(
        sorted(got.clone()) == sorted_some(&expected),
        "assign {target}:{ASSIGNED:?} should read {expected:?}, read {got:?}"
    );
    r.source.stop().await?;
    Ok(Outcome::Passed)
}
