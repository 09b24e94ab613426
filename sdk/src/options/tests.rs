//! Unit tests of option maps, specs, redaction and conflict errors.

use super::*;

#[test]
fn debug_hides_declared_sensitive_values_and_embedded_credentials() {
    let specs = vec![
        OptionSpec::string("opaque", "A value whose name says nothing.").sensitive(),
        OptionSpec::string("url", "A URL."),
        OptionSpec::string("kafka.sasl.jaas.config", "JAAS."),
        OptionSpec::string("plain", "Plain."),
    ];
    let o: Options = [
        ("OPAQUE", "hunter2"),
        ("url", "https://svc:s3cr3t@registry:8081/path?q=1"),
        (
            "kafka.sasl.jaas.config",
            "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"u\" password=\"p@ss word\";",
        ),
        ("plain", "visible"),
    ]
    .into_iter()
    .collect();
    let parsed = OptionSpec::validate_all(&specs, &o, "t").unwrap();
    let shown = format!("{:?} {:?}", parsed.options(), parsed);
    for secret in ["hunter2", "s3cr3t", "p@ss word"] {
        assert!(!shown.contains(secret), "{secret} leaked: {shown}");
    }
    assert!(
        shown.contains("https://svc:***@registry:8081/path?q=1"),
        "{shown}"
    );
    assert!(shown.contains("visible"), "{shown}");
}

#[test]
fn redact_embedded_handles_several_and_unquoted_passwords() {
    assert_eq!(redact_embedded("no secret here"), "no secret here");
    assert_eq!(redact_embedded("http://host:80/x"), "http://host:80/x");
    assert_eq!(
        redact_embedded("a password=abc; b Password = 'x y' c"),
        "a password=\"***\"; b Password = \"***\" c"
    );
}

#[test]
fn ignored_options_are_refused_naming_both() {
    let specs = vec![
        OptionSpec::string("mode", "Mode."),
        OptionSpec::string("dest", "Destination."),
    ];
    let o: Options = [("dest", "/x")].into_iter().collect();
    let p = OptionSpec::validate_all(&specs, &o, "t").unwrap();
    let e = p
        .refuse_ignored("dest", false, "mode", "is only used when 'mode' is MOVE")
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::ConflictingOptions);
    assert_eq!(e.context_value("conflicts_with"), Some("mode"));
    p.refuse_ignored("dest", true, "mode", "x").unwrap();
    p.refuse_ignored("mode", false, "dest", "x").unwrap();
}

fn specs() -> Vec<OptionSpec> {
    vec![
        OptionSpec::string("path", "Where the files are.").required(),
        OptionSpec::int(
            "cloudFiles.maxFilesPerTrigger",
            1,
            i64::MAX,
            "Files per batch.",
        )
        .default_value(1000),
        OptionSpec::bool("failOnDataLoss", "Fail on data loss.").default_value(true),
        OptionSpec::one_of("cloudFiles.format", &["json", "csv", "parquet"], "Format."),
        OptionSpec::duration("cloudFiles.maxFileAge", "Oldest file."),
        OptionSpec::bytes("cloudFiles.maxBytesPerTrigger", "Bytes per batch."),
        OptionSpec::prefix("kafka.", "Passed through."),
        OptionSpec::string("kafka.password", "A secret.").sensitive(),
    ]
}

#[test]
fn keys_are_case_insensitive_and_defaults_apply() {
    let o: Options = [("PATH", "/d"), ("cloudfiles.FORMAT", "JSON")]
        .into_iter()
        .collect();
    let p = OptionSpec::validate_all(&specs(), &o, "files").unwrap();
    assert_eq!(p.string("path").unwrap().as_deref(), Some("/d"));
    assert_eq!(
        p.word("cloudFiles.format").unwrap().as_deref(),
        Some("json")
    );
    assert_eq!(p.i64("cloudFiles.maxFilesPerTrigger").unwrap(), Some(1000));
    assert_eq!(p.bool("failOnDataLoss").unwrap(), Some(true));
}

#[test]
fn unknown_option_suggests_the_near_miss() {
    let o: Options = [("path", "/d"), ("cloudFiles.maxFilePerTrigger", "3")]
        .into_iter()
        .collect();
    let e = OptionSpec::validate_all(&specs(), &o, "files").unwrap_err();
    assert_eq!(e.code(), ErrorCode::UnknownOption);
    assert!(
        e.message()
            .contains("did you mean 'cloudFiles.maxFilesPerTrigger'"),
        "{}",
        e.message()
    );
}

#[test]
fn unknown_option_without_near_miss_lists_known_ones() {
    let o: Options = [("path", "/d"), ("zzz", "3")].into_iter().collect();
    let e = OptionSpec::validate_all(&specs(), &o, "files").unwrap_err();
    assert!(e.message().contains("known options:"), "{}", e.message());
}

#[test]
fn negative_number_names_option_value_and_range() {
    let o: Options = [("path", "/d"), ("cloudFiles.maxFilesPerTrigger", "-5")]
        .into_iter()
        .collect();
    let e = OptionSpec::validate_all(&specs(), &o, "files").unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidOption);
    assert_eq!(
        e.message(),
        "invalid value '-5' for option 'cloudFiles.maxFilesPerTrigger': expected a positive whole number"
    );
}

#[test]
fn enum_error_lists_allowed_values() {
    let o: Options = [("path", "/d"), ("cloudFiles.format", "xml")]
        .into_iter()
        .collect();
    let e = OptionSpec::validate_all(&specs(), &o, "files").unwrap_err();
    assert!(e.message().contains("one of json, csv, parquet"));
}

#[test]
fn missing_required_option_is_named() {
    let e = OptionSpec::validate_all(&specs(), &Options::new(), "files").unwrap_err();
    assert_eq!(e.code(), ErrorCode::MissingOption);
    assert_eq!(e.context_value("option"), Some("path"));
}

#[test]
fn prefix_options_pass_through_with_spelling_kept() {
    let o: Options = [("path", "/d"), ("Kafka.security.protocol", "SSL")]
        .into_iter()
        .collect();
    let p = OptionSpec::validate_all(&specs(), &o, "k").unwrap();
    assert_eq!(
        p.prefixed("kafka."),
        vec![("security.protocol".to_string(), "SSL".to_string())]
    );
}

#[test]
fn sensitive_values_are_hidden_in_debug_and_errors() {
    let o: Options = [("kafka.password", "hunter2"), ("path", "/d")]
        .into_iter()
        .collect();
    assert!(!format!("{o:?}").contains("hunter2"));
    let spec = OptionSpec::int("api.secret", 0, 1, "x").sensitive();
    let e = spec.check_value("hunter2").unwrap_err();
    assert!(!e.to_string().contains("hunter2"));
}

#[test]
fn durations_and_sizes_parse() {
    assert_eq!(parse_duration("10s"), Some(Duration::from_secs(10)));
    assert_eq!(parse_duration("250"), Some(Duration::from_millis(250)));
    assert_eq!(parse_duration("1h 30m"), Some(Duration::from_secs(5400)));
    assert_eq!(parse_duration("soon"), None);
    assert_eq!(parse_bytes("10g"), Some(10 << 30));
    assert_eq!(parse_bytes("64KB"), Some(64 << 10));
    assert_eq!(parse_bytes("12"), Some(12));
    assert_eq!(parse_bytes("-1"), None);
}
