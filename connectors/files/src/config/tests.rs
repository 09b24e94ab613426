//! Unit tests of option parsing: defaults, validation, and the refusal of options that
//! conflict or would be ignored.

use std::path::PathBuf;

use tributary_sdk::{ErrorCode, OptionSpec, Options, ReadLimit, Result};

use super::*;

/// Validates against the declared specs, then parses: what `SourceFactory::prepare` does.
fn parse(options: &Options) -> Result<FilesConfig> {
    FilesConfig::parse(&OptionSpec::validate_all(
        &option_specs(),
        options,
        "files",
    )?)
}

fn opts(pairs: &[(&str, &str)]) -> Options {
    pairs.iter().copied().collect()
}

#[test]
fn defaults_follow_auto_loader() {
    let c = parse(&opts(&[("path", "/d"), ("cloudFiles.format", "JSON")])).unwrap();
    assert_eq!(c.format, Format::Json);
    assert_eq!(c.max_files_per_trigger, 1000);
    assert_eq!(c.read_limit(), ReadLimit::MaxFiles(1000));
    assert!(c.include_existing_files);
    assert!(!c.allow_overwrites);
    assert!(!c.infer_column_types);
    assert_eq!(c.mode, Mode::Permissive);
    assert_eq!(c.rescued_column, "_rescued_data");
    assert_eq!(c.csv, CsvOptions::default());
}

#[test]
fn negative_max_files_is_refused_naming_option_and_value() {
    let e = parse(&opts(&[
        ("path", "/d"),
        ("cloudFiles.format", "json"),
        ("cloudFiles.maxFilesPerTrigger", "-3"),
    ]))
    .unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidOption);
    assert!(e.message().contains("'-3'"), "{}", e.message());
    assert!(e.message().contains("cloudFiles.maxFilesPerTrigger"));
    assert!(e.message().contains("positive whole number"));
}

#[test]
fn near_miss_option_gets_did_you_mean() {
    let e = parse(&opts(&[
        ("path", "/d"),
        ("cloudFiles.format", "json"),
        ("cloudFiles.maxFilePerTrigger", "3"),
    ]))
    .unwrap_err();
    assert_eq!(e.code(), ErrorCode::UnknownOption);
    assert!(e
        .message()
        .contains("did you mean 'cloudFiles.maxFilesPerTrigger'"));
}

#[test]
fn format_is_required_and_checked() {
    let e = parse(&opts(&[("path", "/d")])).unwrap_err();
    assert_eq!(e.code(), ErrorCode::MissingOption);
    assert_eq!(e.context_value("option"), Some("cloudFiles.format"));
    let e = parse(&opts(&[("path", "/d"), ("cloudFiles.format", "xml")])).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidOption);
    assert!(e.message().contains("json, csv, parquet"));
}

#[test]
fn object_store_urls_and_file_urls_are_accepted() {
    for (p, target) in [
        (
            "s3://landing-bucket/x/",
            "s3://landing-bucket/x?format=json&pathGlobFilter=",
        ),
        ("gs://b1/x", "gs://b1/x?format=json&pathGlobFilter="),
        (
            "abfss://c@a.dfs.core.windows.net/x",
            "abfss://c@a.dfs.core.windows.net/x?format=json&pathGlobFilter=",
        ),
    ] {
        let c = parse(&opts(&[("path", p), ("cloudFiles.format", "json")])).unwrap();
        assert!(c.path.as_cloud().is_some(), "{p}");
        assert_eq!(c.target(), target);
    }
    let e = parse(&opts(&[
        ("path", "hdfs://nn/x"),
        ("cloudFiles.format", "json"),
    ]))
    .unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidOption);
    assert!(e.message().contains("s3://"), "{}", e.message());
    let c = parse(&opts(&[
        ("path", "file:///tmp/in"),
        ("cloudFiles.format", "csv"),
    ]))
    .unwrap();
    assert_eq!(c.path, SourcePath::Local(PathBuf::from("/tmp/in")));
}

#[test]
fn cloud_options_of_another_store_or_a_local_path_are_refused() {
    type Case<'a> = (&'a [(&'a str, &'a str)], &'a str, &'a str);
    let cases: &[Case] = &[
        (
            &[("path", "/d"), ("cloudFiles.endpoint", "http://x")],
            "cloudFiles.endpoint",
            "path",
        ),
        (
            &[
                ("path", "gs://b1/x"),
                ("cloudFiles.awsAccessKey", "k"),
                ("cloudFiles.awsSecretKey", "s"),
            ],
            "cloudFiles.awsAccessKey",
            "path",
        ),
        (
            &[
                ("path", "s3://b1/x"),
                ("cloudFiles.connectionString", "AccountName=a"),
            ],
            "cloudFiles.connectionString",
            "path",
        ),
        (
            &[("path", "s3://b1/x"), ("cloudFiles.awsAccessKey", "k")],
            "cloudFiles.awsAccessKey",
            "cloudFiles.awsSecretKey",
        ),
        (
            &[("path", "s3://b1/x"), ("cloudFiles.roleExternalId", "e")],
            "cloudFiles.roleExternalId",
            "cloudFiles.roleArn",
        ),
        (
            &[
                ("path", "abfss://c@a.dfs.core.windows.net/x"),
                ("cloudFiles.clientId", "id"),
            ],
            "cloudFiles.clientId",
            "cloudFiles.clientSecret",
        ),
        (
            &[("path", "gs://b1/x"), ("cloudFiles.clientEmail", "a@b")],
            "cloudFiles.clientEmail",
            "cloudFiles.privateKey",
        ),
    ];
    for (pairs, option, other) in cases {
        let mut all = pairs.to_vec();
        all.push(("cloudFiles.format", "json"));
        let e = parse(&opts(&all)).unwrap_err();
        assert_eq!(e.code(), ErrorCode::ConflictingOptions, "{pairs:?}: {e}");
        assert!(
            e.message().contains(option) && e.message().contains(other),
            "{e}"
        );
    }
}

#[test]
fn credential_options_never_print() {
    let c = parse(&opts(&[
        ("path", "s3://landing-bucket/in"),
        ("cloudFiles.format", "json"),
        ("cloudFiles.awsAccessKey", "AKIAEXAMPLEKEYID"),
        ("cloudFiles.awsSecretKey", "{{secrets/env/TOP_SECRET}}"),
    ]))
    .unwrap();
    let debug = format!("{c:?}");
    assert!(
        !debug.contains("AKIAEXAMPLEKEYID") && !debug.contains("TOP_SECRET"),
        "{debug}"
    );
    let specs = option_specs();
    for name in [
        "cloudFiles.awsAccessKey",
        "cloudFiles.awsSecretKey",
        "cloudFiles.connectionString",
        "cloudFiles.clientSecret",
        "cloudFiles.privateKey",
        "cloudFiles.privateKeyId",
    ] {
        assert!(
            specs.iter().any(|s| s.name == name && s.sensitive),
            "{name}"
        );
    }
}

#[test]
fn object_store_moves_stay_in_the_bucket_and_outside_the_prefix() {
    let base = [
        ("path", "s3://landing-bucket/in"),
        ("cloudFiles.format", "json"),
        ("cloudFiles.cleanSource", "MOVE"),
    ];
    for (dest, why) in [
        ("s3://other-bucket/archive", "same bucket"),
        (
            "s3://landing-bucket/in/archive",
            "outside the listed prefix",
        ),
        ("/archive", "local path"),
    ] {
        let mut all = base.to_vec();
        all.push(("cloudFiles.cleanSource.moveDestination", dest));
        let e = parse(&opts(&all)).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidOption, "{dest}");
        assert!(e.message().contains(why), "{dest}: {e}");
    }
    let mut all = base.to_vec();
    all.push((
        "cloudFiles.cleanSource.moveDestination",
        "s3://landing-bucket/archive",
    ));
    let c = parse(&opts(&all)).unwrap();
    assert!(
        matches!(c.clean_source, CleanSource::Move(SourcePath::Cloud(ref d)) if d.key == "archive")
    );
    // A local source cannot move into a bucket.
    let e = parse(&opts(&[
        ("path", "/d"),
        ("cloudFiles.format", "json"),
        ("cloudFiles.cleanSource", "MOVE"),
        (
            "cloudFiles.cleanSource.moveDestination",
            "s3://landing-bucket/archive",
        ),
    ]))
    .unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidOption);
}

#[test]
fn bytes_limit_makes_a_composite_limit() {
    let c = parse(&opts(&[
        ("path", "/d"),
        ("cloudFiles.format", "csv"),
        ("cloudFiles.maxBytesPerTrigger", "10m"),
        ("cloudFiles.maxFilesPerTrigger", "7"),
    ]))
    .unwrap();
    assert_eq!(c.read_limit().max_files(), Some(7));
    assert_eq!(c.read_limit().max_bytes(), Some(10 << 20));
}

#[test]
fn csv_separator_is_one_character_and_aliases_conflict() {
    let base = [("path", "/d"), ("cloudFiles.format", "csv")];
    let mut o = opts(&base);
    o.set("sep", "\\t");
    assert_eq!(parse(&o).unwrap().csv.delimiter, b'\t');
    let mut o = opts(&base);
    o.set("delimiter", ";");
    assert_eq!(parse(&o).unwrap().csv.delimiter, b';');
    let mut o = opts(&base);
    o.set("sep", "||");
    assert_eq!(parse(&o).unwrap_err().code(), ErrorCode::InvalidOption);
    let mut o = opts(&base);
    o.set("sep", ";").set("delimiter", ";");
    assert_eq!(parse(&o).unwrap_err().code(), ErrorCode::ConflictingOptions);
}

#[test]
fn bad_glob_and_mode_are_refused() {
    let base = [("path", "/d"), ("cloudFiles.format", "json")];
    let mut o = opts(&base);
    o.set("pathGlobFilter", "[abc");
    let e = parse(&o).unwrap_err();
    assert_eq!(e.context_value("option"), Some("pathGlobFilter"));
    let mut o = opts(&base);
    o.set("mode", "dropmalformed");
    assert_eq!(parse(&o).unwrap_err().code(), ErrorCode::InvalidOption);
    let mut o = opts(&base);
    o.set("mode", "failFast");
    assert_eq!(parse(&o).unwrap().mode, Mode::FailFast);
}

#[test]
fn multi_line_is_a_json_option() {
    let mut o = opts(&[("path", "/d"), ("cloudFiles.format", "json")]);
    o.set("multiLine", "true");
    assert!(parse(&o).unwrap().multi_line);
    let mut o = opts(&[("path", "/d"), ("cloudFiles.format", "csv")]);
    o.set("multiline", "true");
    let e = parse(&o).unwrap_err();
    assert_eq!(e.code(), ErrorCode::ConflictingOptions);
    assert!(e.message().contains("format=json only"), "{}", e.message());
}

/// The refused combination names both options (`option`, `conflicts_with`).
#[track_caller]
fn assert_conflict(pairs: &[(&str, &str)], option: &str, other: &str) {
    let e = parse(&opts(pairs)).unwrap_err();
    assert_eq!(e.code(), ErrorCode::ConflictingOptions, "{e}");
    assert_eq!(e.context_value("option"), Some(option), "{e}");
    assert_eq!(e.context_value("conflicts_with"), Some(other), "{e}");
    assert!(
        e.message().contains(option) && e.message().contains(other),
        "{e}"
    );
}

#[test]
fn csv_options_with_another_format_are_refused() {
    for format in ["json", "parquet"] {
        for (option, value) in [("header", "true"), ("sep", ";"), ("delimiter", "|")] {
            assert_conflict(
                &[
                    ("path", "/d"),
                    ("cloudFiles.format", format),
                    (option, value),
                ],
                option,
                "cloudFiles.format",
            );
        }
    }
    assert_conflict(
        &[
            ("path", "/d"),
            ("cloudFiles.format", "csv"),
            ("sep", ";"),
            ("delimiter", ";"),
        ],
        "delimiter",
        "sep",
    );
    let c = parse(&opts(&[
        ("path", "/d"),
        ("cloudFiles.format", "csv"),
        ("header", "true"),
    ]));
    assert!(c.unwrap().csv.header);
}

#[test]
fn json_and_record_options_with_another_format_are_refused() {
    for format in ["csv", "parquet"] {
        assert_conflict(
            &[
                ("path", "/d"),
                ("cloudFiles.format", format),
                ("multiLine", "false"),
            ],
            "multiLine",
            "cloudFiles.format",
        );
    }
    for (option, value) in [("rescuedDataColumn", "_bad"), ("mode", "FAILFAST")] {
        assert_conflict(
            &[
                ("path", "/d"),
                ("cloudFiles.format", "parquet"),
                ("schema", "a INT"),
                (option, value),
            ],
            option,
            "cloudFiles.format",
        );
    }
}

#[test]
fn inference_options_with_a_given_schema_or_parquet_are_refused() {
    for (option, value) in [
        ("cloudFiles.inferColumnTypes", "true"),
        ("cloudFiles.schemaInference.sampleSize.numFiles", "3"),
        ("cloudFiles.schemaInference.sampleSize.numRecords", "3"),
        ("cloudFiles.schemaHints", "id BIGINT"),
    ] {
        assert_conflict(
            &[
                ("path", "/d"),
                ("cloudFiles.format", "json"),
                ("schema", "id INT"),
                (option, value),
            ],
            option,
            "schema",
        );
    }
    for (option, value) in [
        ("cloudFiles.inferColumnTypes", "false"),
        ("cloudFiles.schemaInference.sampleSize.numRecords", "10"),
    ] {
        assert_conflict(
            &[
                ("path", "/d"),
                ("cloudFiles.format", "parquet"),
                (option, value),
            ],
            option,
            "cloudFiles.format",
        );
    }
    // What applies is kept: numFiles and hints for an inferred Parquet schema.
    let c = parse(&opts(&[
        ("path", "/d"),
        ("cloudFiles.format", "parquet"),
        ("cloudFiles.schemaInference.sampleSize.numFiles", "3"),
        ("cloudFiles.schemaHints", "a BIGINT"),
    ]))
    .unwrap();
    assert_eq!(c.sample_files, 3);
    assert!(c.schema_hints.is_some());
}

#[test]
fn schema_evolution_modes_that_cannot_apply_are_refused() {
    assert_conflict(
        &[
            ("path", "/d"),
            ("cloudFiles.format", "csv"),
            ("cloudFiles.schemaEvolutionMode", "rescue"),
        ],
        "cloudFiles.schemaEvolutionMode",
        "cloudFiles.format",
    );
    assert_conflict(
        &[
            ("path", "/d"),
            ("cloudFiles.format", "parquet"),
            ("cloudFiles.schemaEvolutionMode", "rescue"),
        ],
        "cloudFiles.schemaEvolutionMode",
        "cloudFiles.format",
    );
    assert_conflict(
        &[
            ("path", "/d"),
            ("cloudFiles.format", "json"),
            ("schema", "a INT"),
            ("cloudFiles.schemaEvolutionMode", "addNewColumns"),
        ],
        "cloudFiles.schemaEvolutionMode",
        "schema",
    );
    let defaults = |pairs: &[(&str, &str)]| parse(&opts(pairs)).unwrap().schema_evolution;
    let j = [("path", "/d"), ("cloudFiles.format", "json")];
    assert_eq!(defaults(&j), SchemaEvolution::AddNewColumns);
    assert_eq!(
        defaults(&[j[0], j[1], ("schema", "a INT")]),
        SchemaEvolution::Rescue
    );
    let p = [
        ("path", "/d"),
        ("cloudFiles.format", "parquet"),
        ("schema", "a INT"),
    ];
    assert_eq!(defaults(&p), SchemaEvolution::None);
    let c = [("path", "/d"), ("cloudFiles.format", "csv")];
    assert_eq!(defaults(&c), SchemaEvolution::Rescue);
}

#[test]
fn clean_source_options_without_their_mode_are_refused() {
    let base = [("path", "/d"), ("cloudFiles.format", "json")];
    for clean in [None, Some("OFF"), Some("DELETE")] {
        let mut pairs = base.to_vec();
        pairs.extend(clean.map(|c| ("cloudFiles.cleanSource", c)));
        pairs.push(("cloudFiles.cleanSource.moveDestination", "/archive"));
        assert_conflict(
            &pairs,
            "cloudFiles.cleanSource.moveDestination",
            "cloudFiles.cleanSource",
        );
    }
    for clean in [None, Some("off")] {
        let mut pairs = base.to_vec();
        pairs.extend(clean.map(|c| ("cloudFiles.cleanSource", c)));
        pairs.push(("cloudFiles.cleanSource.retentionDuration", "1 day"));
        assert_conflict(
            &pairs,
            "cloudFiles.cleanSource.retentionDuration",
            "cloudFiles.cleanSource",
        );
    }
    let c = parse(&opts(&[
        base[0],
        base[1],
        ("cloudFiles.cleanSource", "MOVE"),
        ("cloudFiles.cleanSource.moveDestination", "/archive"),
        ("cloudFiles.cleanSource.retentionDuration", "1h"),
    ]))
    .unwrap();
    assert_eq!(
        c.clean_source,
        CleanSource::Move(SourcePath::Local(PathBuf::from("/archive")))
    );
    assert_eq!(c.clean_retention, std::time::Duration::from_secs(3600));
    let e = parse(&opts(&[
        base[0],
        base[1],
        ("cloudFiles.cleanSource", "MOVE"),
    ]))
    .unwrap_err();
    assert_eq!(e.code(), ErrorCode::MissingOption);
}

#[test]
fn move_destination_must_be_outside_the_listed_directory() {
    for dest in ["/d/archive", "/x/../d/archive", "archive", "s3://b/archive"] {
        let e = parse(&opts(&[
            ("path", "/d/*.json"),
            ("cloudFiles.format", "json"),
            ("cloudFiles.cleanSource", "MOVE"),
            ("cloudFiles.cleanSource.moveDestination", dest),
        ]))
        .unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidOption, "{dest}: {e}");
        assert_eq!(
            e.context_value("option"),
            Some("cloudFiles.cleanSource.moveDestination"),
            "{dest}: {e}"
        );
    }
}

#[test]
fn the_target_is_computed_from_the_options_alone() {
    let c = parse(&opts(&[
        ("path", "file:///data/./in/../in/*/x*.json"),
        ("cloudFiles.format", "CSV"),
        ("pathGlobFilter", "x1*"),
    ]))
    .unwrap();
    assert_eq!(
        c.target(),
        "/data/in/*/x*.json?format=csv&pathGlobFilter=x1*"
    );
    let e = parse(&opts(&[
        ("path", "/data/[x/*.json"),
        ("cloudFiles.format", "json"),
    ]))
    .unwrap_err();
    assert_eq!(e.context_value("option"), Some("path"), "{e}");
}
