//! `tributary conformance`: the suite through the command, with its table, JSON and JUnit reports.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;

#[test]
fn files_connector_passes_the_suite_through_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("report.json");
    let junit = dir.path().join("report.xml");
    let o = tributary()
        .args([
            "conformance",
            "--connector",
            "files",
            "--fixture",
            "files",
            "--json",
        ])
        .arg(&json)
        .arg("--junit")
        .arg(&junit)
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{table}\n{}", stderr(&o));
    assert!(
        table.contains("replay_after_restart") && table.contains("passed"),
        "{table}"
    );
    assert!(table.contains("0 failed"), "{table}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["connector"], "files");
    assert_eq!(report["failed"], 0);
    assert!(report["passed"].as_u64().unwrap() >= 10, "{report}");
    assert_eq!(
        report["cases"].as_array().unwrap().len(),
        tributary_conformance::all_cases().len()
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains("<testsuites") && xml.contains("failures=\"0\""),
        "{xml}"
    );
}

#[test]
fn unknown_fixture_and_bad_option_pairs_are_clear_errors() {
    let o = tributary()
        .args(["conformance", "--connector", "files", "--fixture", "nope"])
        .output()
        .unwrap();
    let line = assert_one_clear_error(&o);
    assert!(line.contains("known fixtures"), "{line}");
    let o = tributary()
        .args([
            "conformance",
            "--connector",
            "files",
            "--fixture",
            "files",
            "--options",
            "novalue",
        ])
        .output()
        .unwrap();
    let line = assert_one_clear_error(&o);
    assert!(line.contains("key=value"), "{line}");
}

#[test]
fn extra_options_reach_the_connector() {
    // An unknown option laid over every case makes the connector refuse it: proof it arrives.
    let o = tributary()
        .args([
            "conformance",
            "--connector",
            "files",
            "--fixture",
            "files",
            "--case",
            "starting_earliest",
            "--options",
            "cloudFiles.bogus=1",
        ])
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(!o.status.success());
    assert!(
        table.contains("starting_earliest") && table.contains("failed"),
        "{table}"
    );
    assert!(
        table.contains("cloudFiles.bogus") || stderr(&o).contains("cloudFiles.bogus"),
        "{table}"
    );
}

#[test]
fn the_sink_suite_runs_through_the_command() {
    let o = tributary()
        .args([
            "conformance",
            "--sink",
            "--connector",
            "parquet",
            "--fixture",
            "parquet",
        ])
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{table}\n{}", stderr(&o));
    assert!(
        table.contains("sink_replay_after_restart") && table.contains("0 failed"),
        "{table}"
    );
    // A source fixture is not a sink fixture: one clear error naming the known ones.
    let o = tributary()
        .args([
            "conformance",
            "--sink",
            "--connector",
            "parquet",
            "--fixture",
            "files",
        ])
        .output()
        .unwrap();
    let line = assert_one_clear_error(&o);
    assert!(
        line.contains("known sink fixtures: parquet, jsonlines, kafka"),
        "{line}"
    );
}
