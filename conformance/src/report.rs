//! Conformance reports: a table (case, result, seconds, reason), JSON and JUnit XML.

use std::fmt::Write;

use quick_junit::{NonSuccessKind, Report as JunitReport, TestCase, TestCaseStatus, TestSuite};
use serde::Serialize;

/// The result of one case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CaseStatus {
    /// The behaviour holds.
    Passed,
    /// The case does not apply.
    Skipped,
    /// The behaviour does not hold (or the case errored, panicked or timed out).
    Failed,
}

impl CaseStatus {
    fn as_str(&self) -> &'static str {
        match self {
            CaseStatus::Passed => "passed",
            CaseStatus::Skipped => "skipped",
            CaseStatus::Failed => "FAILED",
        }
    }
}

/// One case's line in a report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CaseReport {
    /// The case name.
    pub name: String,
    /// Its result.
    pub status: CaseStatus,
    /// Wall time.
    pub seconds: f64,
    /// Why it was skipped or failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A suite run against one connector with one fixture.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// The connector name.
    pub connector: String,
    /// The fixture name.
    pub fixture: String,
    /// Case results in run order.
    pub cases: Vec<CaseReport>,
}

impl Report {
    /// An empty report.
    pub fn new(connector: &str, fixture: &str) -> Self {
        Report {
            connector: connector.to_string(),
            fixture: fixture.to_string(),
            cases: Vec::new(),
        }
    }

    fn count(&self, s: CaseStatus) -> usize {
        self.cases.iter().filter(|c| c.status == s).count()
    }

    /// Cases that passed.
    pub fn passed(&self) -> usize {
        self.count(CaseStatus::Passed)
    }

    /// Cases that were skipped.
    pub fn skipped(&self) -> usize {
        self.count(CaseStatus::Skipped)
    }

    /// Cases that failed.
    pub fn failed(&self) -> usize {
        self.count(CaseStatus::Failed)
    }

    /// True when no case failed.
    pub fn is_success(&self) -> bool {
        self.failed() == 0
    }

    /// `connector 'x' with fixture 'y': N passed, N skipped, N failed`.
    pub fn summary(&self) -> String {
        format!(
            "connector '{}' with fixture '{}': {} passed, {} skipped, {} failed",
            self.connector,
            self.fixture,
            self.passed(),
            self.skipped(),
            self.failed()
        )
    }

    /// A plain-text table: case, result, seconds, reason; then the summary line.
    pub fn to_table(&self) -> String {
        let w = self
            .cases
            .iter()
            .map(|c| c.name.len())
            .max()
            .unwrap_or(4)
            .max(4);
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{:<w$}  {:<7}  {:>8}  REASON",
            "CASE", "RESULT", "SECONDS"
        );
        for c in &self.cases {
            let line = format!(
                "{:<w$}  {:<7}  {:>8.3}  {}",
                c.name,
                c.status.as_str(),
                c.seconds,
                c.reason.as_deref().unwrap_or("")
            );
            let _ = writeln!(out, "{}", line.trim_end());
        }
        let _ = writeln!(out, "{}", self.summary());
        out
    }

    /// The report as JSON, with counts.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "connector": self.connector,
            "fixture": self.fixture,
            "passed": self.passed(),
            "skipped": self.skipped(),
            "failed": self.failed(),
            "cases": self.cases,
        })
    }

    /// The report as JUnit XML (one test suite named after the connector and fixture).
    pub fn to_junit_xml(&self) -> String {
        let mut junit = JunitReport::new("tributary-conformance");
        let mut suite = TestSuite::new(format!("{}/{}", self.connector, self.fixture));
        for c in &self.cases {
            let status = match c.status {
                CaseStatus::Passed => TestCaseStatus::success(),
                CaseStatus::Skipped => {
                    let mut s = TestCaseStatus::skipped();
                    if let Some(r) = &c.reason {
                        s.set_message(r.as_str());
                    }
                    s
                }
                CaseStatus::Failed => {
                    let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                    if let Some(r) = &c.reason {
                        s.set_message(r.as_str());
                    }
                    s
                }
            };
            let mut case = TestCase::new(c.name.as_str(), status);
            case.set_classname(format!("conformance.{}", self.connector));
            case.set_time(std::time::Duration::from_secs_f64(c.seconds.max(0.0)));
            suite.add_test_case(case);
        }
        junit.add_test_suite(suite);
        junit
            .to_string()
            .unwrap_or_else(|e| format!("<!-- cannot render JUnit XML: {e} -->"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Report {
        let mut r = Report::new("files", "files");
        r.cases.push(CaseReport {
            name: "read_range_determinism".into(),
            status: CaseStatus::Passed,
            seconds: 0.25,
            reason: None,
        });
        r.cases.push(CaseReport {
            name: "assign_partitions".into(),
            status: CaseStatus::Skipped,
            seconds: 0.0,
            reason: Some("fixture 'files' does not declare capability Assign".into()),
        });
        r.cases.push(CaseReport {
            name: "rate_limit_honoured".into(),
            status: CaseStatus::Failed,
            seconds: 1.5,
            reason: Some("batch holds 3 <files> & more".into()),
        });
        r
    }

    #[test]
    fn table_json_and_junit_carry_every_case() {
        let r = sample();
        let t = r.to_table();
        let line = t
            .lines()
            .find(|l| l.starts_with("assign_partitions"))
            .unwrap();
        assert!(
            line.contains(" skipped ") && line.ends_with("capability Assign"),
            "{t}"
        );
        assert!(t.ends_with("1 passed, 1 skipped, 1 failed\n"), "{t}");
        let j = r.to_json();
        assert_eq!(j["failed"], 1);
        assert_eq!(j["cases"][1]["status"], "skipped");
        let x = r.to_junit_xml();
        assert!(x.contains("tests=\"3\""), "{x}");
        assert!(x.contains("failures=\"1\""), "{x}");
        assert!(x.contains("skipped=\"1\""), "{x}");
        assert!(x.contains("&lt;files&gt; &amp; more"), "{x}");
    }
}
