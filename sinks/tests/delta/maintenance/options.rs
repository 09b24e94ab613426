//! Maintenance options that are refused, each naming the option (and the allowed values).

use tributary_sdk::{ErrorCode, Sink};

use super::{config, sink};
use crate::sink::{batch, schema};

/// Options given, the option the error must name, a text it must contain.
type Case<'a> = (&'a [(&'a str, &'a str)], &'a str, &'a str);

#[test]
fn refused_options_name_the_option() {
    let p = std::path::Path::new("/t");
    let cases: [Case; 9] = [
        (
            &[("delta.autoOptimize.autoCompact", "legacy")],
            "delta.autoOptimize.autoCompact",
            "true, false, auto",
        ),
        (
            &[("spark.databricks.delta.autoCompact.minNumFiles", "10")],
            "spark.databricks.delta.autoCompact.minNumFiles",
            "only applies with auto-compaction on",
        ),
        (
            &[
                ("delta.autoOptimize.autoCompact", "true"),
                ("spark.databricks.delta.autoCompact.minNumFiles", "1"),
            ],
            "spark.databricks.delta.autoCompact.minNumFiles",
            "",
        ),
        (
            &[
                ("checkpointInterval", "5"),
                ("delta.checkpointInterval", "6"),
            ],
            "delta.checkpointInterval",
            "is 6 but 'checkpointInterval' is 5",
        ),
        (
            &[("delta.logRetentionDuration", "30 days")],
            "delta.logRetentionDuration",
            "'interval 30 days'",
        ),
        (
            &[("delta.deletedFileRetentionDuration", "interval 1 day")],
            "delta.deletedFileRetentionDuration",
            "below Delta's safe minimum of 7 days",
        ),
        (
            &[(
                "spark.databricks.delta.retentionDurationCheck.enabled",
                "false",
            )],
            "spark.databricks.delta.retentionDurationCheck.enabled",
            "only applies with",
        ),
        (
            &[("delta.targetFileSize", "0")],
            "delta.targetFileSize",
            "a size above 0",
        ),
        (
            &[("maintenanceTimeout", "1m")],
            "maintenanceTimeout",
            "only applies with auto-compaction on",
        ),
    ];
    for (options, option, text) in cases {
        let e = config(p, options).unwrap_err();
        assert_eq!(e.context_value("option"), Some(option), "{options:?}: {e}");
        assert!(e.to_string().contains(text), "{options:?}: {e}");
    }
    // The same settings that are accepted.
    let c = config(
        p,
        &[
            ("checkpointInterval", "5"),
            ("delta.checkpointInterval", "5"),
            ("delta.deletedFileRetentionDuration", "interval 1 day"),
            (
                "spark.databricks.delta.retentionDurationCheck.enabled",
                "false",
            ),
            ("delta.autoOptimize.autoCompact", "AUTO"),
        ],
    )
    .unwrap();
    assert_eq!(c.checkpoint_interval, Some(5));
    assert_eq!(c.maintenance.auto_compact, Some(true));
    assert_eq!(c.maintenance.min_num_files, 50);
    assert_eq!(
        c.maintenance.deleted_file_retention.unwrap().text,
        "interval 1 day"
    );
    let c = config(p, &[("delta.checkpointInterval", "7")]).unwrap();
    assert_eq!(c.checkpoint_interval, Some(7));
}

#[tokio::test]
async fn a_retention_differing_from_an_existing_table_is_refused_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t");
    let mut s = sink(&path, "c", &[]);
    s.open(schema(false)).await.unwrap();
    s.write(0, &[batch(0, 1, false)]).await.unwrap();
    let mut other = sink(
        &path,
        "c",
        &[("delta.logRetentionDuration", "interval 7 days")],
    );
    let e = other.open(schema(false)).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::ConflictingOptions, "{e}");
    assert_eq!(
        e.context_value("option"),
        Some("delta.logRetentionDuration")
    );
    assert!(e.to_string().contains("30 days"), "{e}");
    // The table's own value (Delta's default) is accepted.
    let mut same = sink(
        &path,
        "c",
        &[("delta.logRetentionDuration", "interval 30 days")],
    );
    same.open(schema(false)).await.unwrap();
}
