//! The runner: executes the suite (or some cases) against one connector and one fixture.
//!
//! The same entry point serves a built-in connector and a plugin (the host wraps a plugin
//! connector in an ordinary `SourceFactory`), the `tributary conformance` command and the
//! generated tests. A generated test records its skip ([`crate::skips`]); [`run`] reports skips
//! in its [`Report`] only.

use std::time::{Duration, Instant};

use futures::FutureExt;
use tributary_sdk::SourceFactory;

use crate::cases::{all_cases, Case, CaseResult, Outcome};
use crate::fixture::Fixture;
use crate::report::{CaseReport, CaseStatus, Report};
use crate::skips::record_skip;

pub use crate::skips::require_env;

/// Runner settings.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Run only these cases (by name); all when empty.
    pub only: Vec<String>,
    /// A case running longer fails.
    pub case_timeout: Duration,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            only: Vec::new(),
            case_timeout: Duration::from_secs(300),
        }
    }
}

impl RunOptions {
    /// Whether the case named `name` is selected (every case when `only` is empty).
    pub(crate) fn selects(&self, name: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|n| n == name)
    }
}

/// The failed report of a case name the suite does not have (`what`: "conformance case",
/// "sink conformance case").
pub(crate) fn unknown_case(what: &str, name: &str) -> CaseReport {
    CaseReport {
        name: name.to_string(),
        status: CaseStatus::Failed,
        seconds: 0.0,
        reason: Some(format!("no {what} named '{name}'")),
    }
}

/// Runs every selected case and collects a report. Never panics because a case did: a panic
/// inside a case (or the connector) is that case's failure.
pub async fn run(
    connector: &dyn SourceFactory,
    fixture: &mut dyn Fixture,
    options: &RunOptions,
) -> Report {
    let mut report = Report::new(connector.name(), fixture.name());
    for case in all_cases() {
        if !options.selects(case.name) {
            continue;
        }
        report
            .cases
            .push(run_one(&case, connector, fixture, options.case_timeout).await);
    }
    report
}

/// Runs one case by name.
pub async fn run_case(
    name: &str,
    connector: &dyn SourceFactory,
    fixture: &mut dyn Fixture,
    timeout: Duration,
) -> CaseReport {
    match all_cases().into_iter().find(|c| c.name == name) {
        Some(case) => run_one(&case, connector, fixture, timeout).await,
        None => unknown_case("conformance case", name),
    }
}

async fn run_one(
    case: &Case,
    connector: &dyn SourceFactory,
    fixture: &mut dyn Fixture,
    timeout: Duration,
) -> CaseReport {
    let declared = fixture.capabilities();
    if let Some(missing) = case.requires.iter().find(|c| !declared.contains(c)) {
        return CaseReport {
            name: case.name.to_string(),
            status: CaseStatus::Skipped,
            seconds: 0.0,
            reason: Some(format!(
                "fixture '{}' does not declare capability {missing}",
                fixture.name()
            )),
        };
    }
    timed_case(case.name, (case.run)(connector, fixture), timeout).await
}

/// Runs one case's future with a timeout, catching a panic, and reports how it ended.
pub(crate) async fn timed_case(
    name: &str,
    case: impl std::future::Future<Output = CaseResult>,
    timeout: Duration,
) -> CaseReport {
    let began = Instant::now();
    let fut = std::panic::AssertUnwindSafe(case).catch_unwind();
    let result = tokio::time::timeout(timeout, fut).await;
    let seconds = began.elapsed().as_secs_f64();
    let (status, reason) = match result {
        Err(_) => (
            CaseStatus::Failed,
            Some(format!("did not finish within {timeout:?}")),
        ),
        Ok(Err(panic)) => (
            CaseStatus::Failed,
            Some(format!("panicked: {}", panic_text(panic.as_ref()))),
        ),
        Ok(Ok(Ok(Outcome::Passed))) => (CaseStatus::Passed, None),
        Ok(Ok(Ok(Outcome::Skipped(why)))) => (CaseStatus::Skipped, Some(why)),
        Ok(Ok(Err(failure))) => (CaseStatus::Failed, Some(failure.0)),
    };
    CaseReport {
        name: name.to_string(),
        status,
        seconds,
        reason,
    }
}

fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-text panic".into())
}

/// What a generated test needs: the connector and a fixture for it.
///
/// A setup function returns `None` when the fixture cannot run here (a server is not
/// configured); it records why with [`require_env`] (or `tributary_skip_log::skip`), so the
/// skip shows in the test summary once.
pub struct Setup {
    /// The connector under test.
    pub connector: std::sync::Arc<dyn SourceFactory>,
    /// Its fixture.
    pub fixture: Box<dyn Fixture>,
}

/// The body of every test generated by [`crate::conformance_tests!`]: builds the setup (which may
/// decline, e.g. when a server's address is not configured), runs one case, tears down, and
/// panics with the reason when the case failed.
pub async fn run_case_test<F, Fut>(name: &str, setup: F)
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = Option<Setup>>,
{
    let Some(mut setup) = setup().await else {
        // The setup recorded why (require_env); recording again would count the skip twice.
        println!("{name}: the setup declined (the fixture is not available here)");
        return;
    };
    let report = run_case(
        name,
        setup.connector.as_ref(),
        setup.fixture.as_mut(),
        RunOptions::default().case_timeout,
    )
    .await;
    if let Err(e) = setup.fixture.teardown().await {
        eprintln!("fixture teardown failed: {e}");
    }
    conclude(name, "connector", setup.connector.name(), report);
}

/// Ends a generated test: nothing when passed; a recorded skip (`<connector>::<case>`, never a
/// failure: the case does not apply to this connector) when skipped; a panic with the reason
/// when failed.
pub(crate) fn conclude(name: &str, kind: &str, connector: &str, report: CaseReport) {
    match report.status {
        CaseStatus::Passed => {}
        CaseStatus::Skipped => record_skip(
            &format!("{connector}::{name}"),
            report.reason.as_deref().unwrap_or("skipped"),
        ),
        CaseStatus::Failed => panic!(
            "conformance case {name} failed for {kind} '{connector}': {}",
            report.reason.unwrap_or_default()
        ),
    }
}
