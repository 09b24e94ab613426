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
        shown.contains("https://***@registry:8081/path?q=1"),
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
    // Spark's interval strings, as `trigger(processingTime = ...)` takes them
    assert_eq!(
        parse_duration("100 milliseconds"),
        Some(Duration::from_millis(100))
    );
    assert_eq!(parse_duration("10 seconds"), Some(Duration::from_secs(10)));
    assert_eq!(
        parse_duration("interval 1 minute 500 milliseconds"),
        Some(Duration::from_millis(60_500))
    );
    assert_eq!(parse_duration("2 Hours"), Some(Duration::from_secs(7200)));
    assert_eq!(parse_bytes("10g"), Some(10 << 30));
    assert_eq!(parse_bytes("64KB"), Some(64 << 10));
    assert_eq!(parse_bytes("12"), Some(12));
    assert_eq!(parse_bytes("-1"), None);
}

mod decl_tests {
    use super::super::decl::{self, Defaulted, Dur, Flag, Int, OneOf, OptionDecl, Required, Text};
    use super::super::table::{render_markdown, render_text};
    use super::*;

    const PATH: OptionDecl<Text, Required> = decl::text("path", "Where the files are.").required();
    const MAX_FILES: OptionDecl<Int, Defaulted> =
        decl::int("maxFiles", 1, i64::MAX, "Files per batch.").default(1000);
    const MIN_ROWS: OptionDecl<Int> = decl::int("minRows", 1, i64::MAX, "Fewest rows.");
    const DELAY: OptionDecl<Dur, Defaulted> = decl::duration("maxDelay", "Longest wait.")
        .default("15m")
        .conflicts(&[Conflict::requires("minRows", "is only used with 'minRows'")]);
    const MODE: OptionDecl<OneOf, Defaulted> =
        decl::one_of("mode", &["polling", "EFO"], "How to fetch.").default("polling");
    const NAME: OptionDecl<Text> =
        decl::text("consumerName", "EFO consumer.").conflicts(&[Conflict::only_when(
            "mode",
            &["efo"],
            "is only used when 'mode' is efo",
        )]);
    const START: OptionDecl<Text> = decl::text("start", "Start.").conflicts(&[Conflict::excludes(
        "startTs",
        "is ignored when 'startTs' is given",
    )]);
    const START_TS: OptionDecl<Int> = decl::int("startTs", 0, i64::MAX, "Start timestamp.");
    const SECRET: OptionDecl<Text, Defaulted> =
        decl::text("token", "A | secret.").default("x").sensitive();
    const FLAG: OptionDecl<Flag, Defaulted> = decl::flag("headers", "Headers.").default(false);
    const PREFIX: decl::PrefixDecl = decl::prefix("kafka.", "Passed through.");

    fn specs() -> Vec<OptionSpec> {
        decl::specs(&[
            &PATH, &MAX_FILES, &MIN_ROWS, &DELAY, &MODE, &NAME, &START, &START_TS, &SECRET, &FLAG,
            &PREFIX,
        ])
    }

    fn parse(pairs: &[(&str, &str)]) -> Result<ParsedOptions> {
        let mut o: Options = pairs.iter().copied().collect();
        o.set("path", "/d");
        OptionSpec::validate_all(&specs(), &o, "t")
    }

    #[test]
    fn declarations_yield_specs_and_typed_values_with_their_defaults() {
        decl::check_specs(&specs()).unwrap();
        let s = specs();
        assert!(s[0].required);
        assert_eq!(s[1].default.as_deref(), Some("1000"));
        assert_eq!(s[3].default.as_deref(), Some("15m"));
        assert!(s[8].sensitive);
        let p = parse(&[("MAXFILES", "7"), ("mode", "efo"), ("kafka.x", "1")]).unwrap();
        assert_eq!(PATH.get(&p).unwrap(), "/d");
        assert_eq!(MAX_FILES.get(&p).unwrap(), 7);
        assert_eq!(MIN_ROWS.get(&p).unwrap(), None);
        assert_eq!(DELAY.get(&p).unwrap(), std::time::Duration::from_secs(900));
        assert_eq!(MODE.get(&p).unwrap(), "EFO");
        assert!(!FLAG.get(&p).unwrap());
        assert_eq!(FLAG.given(&p).unwrap(), None);
        assert_eq!(PREFIX.get(&p), vec![("x".to_string(), "1".to_string())]);
        let p = parse(&[]).unwrap();
        assert_eq!(MAX_FILES.get(&p).unwrap(), 1000);
        assert_eq!(MODE.get(&p).unwrap(), "polling");
    }

    #[test]
    fn declared_values_keep_the_validation_errors() {
        let e = parse(&[("maxFile", "3")]).unwrap_err();
        assert_eq!(e.code(), ErrorCode::UnknownOption);
        assert!(e.message().contains("did you mean 'maxFiles'"), "{e}");
        let e = parse(&[("maxFiles", "0")]).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidOption);
        assert_eq!(
            e.message(),
            "invalid value '0' for option 'maxFiles': expected a positive whole number"
        );
        let e = parse(&[("mode", "push")]).unwrap_err();
        assert!(e.message().contains("expected one of polling, EFO"), "{e}");
        let e = OptionSpec::validate_all(&specs(), &Options::new(), "t").unwrap_err();
        assert_eq!(e.code(), ErrorCode::MissingOption);
    }

    #[test]
    fn declared_conflicts_are_refused_naming_both() {
        for (pairs, option, other) in [
            (&[("maxDelay", "1s")][..], "maxDelay", "minRows"),
            (&[("consumerName", "c")][..], "consumerName", "mode"),
            (
                &[("consumerName", "c"), ("mode", "polling")][..],
                "consumerName",
                "mode",
            ),
            (&[("start", "a"), ("startTs", "1")][..], "start", "startTs"),
        ] {
            let e = parse(pairs).unwrap_err();
            assert_eq!(e.code(), ErrorCode::ConflictingOptions, "{pairs:?}");
            assert_eq!(e.context_value("option"), Some(option));
            assert_eq!(e.context_value("conflicts_with"), Some(other));
        }
        parse(&[("maxDelay", "1s"), ("minRows", "3")]).unwrap();
        parse(&[("consumerName", "c"), ("mode", "EFO")]).unwrap();
        parse(&[("start", "a")]).unwrap();
    }

    #[test]
    fn check_specs_finds_declaration_mistakes() {
        let twice = vec![OptionSpec::string("a", "A."), OptionSpec::string("A", "A.")];
        assert!(decl::check_specs(&twice).is_err());
        let bad_default = vec![OptionSpec::int("n", 1, 5, "N.").default_value(9)];
        assert!(decl::check_specs(&bad_default).is_err());
        let dangling = vec![OptionSpec::string("a", "A.").conflict(Conflict::requires("b", "x"))];
        assert!(decl::check_specs(&dangling).is_err());
    }

    #[test]
    fn option_tables_render_as_text_and_markdown() {
        let sample = decl::specs(&[&PATH, &MAX_FILES, &MODE, &SECRET, &PREFIX]);
        let text = render_text(&sample);
        let expected = "\
name      type    default     allowed values           sensitive  doc
--------  ------  ----------  -----------------------  ---------  --------------------
path      string  (required)  any text                            Where the files are.
maxFiles  int     1000        a positive whole number             Files per batch.
mode      enum    polling     polling, EFO                        How to fetch.
token     string  ***         any text                 yes        A | secret.
kafka.*   prefix              passed through                      Passed through.
";
        assert_eq!(text, expected, "\n{text}");
        let md = render_markdown(&sample);
        let expected = "\
| name | type | default | allowed values | sensitive | doc |
|---|---|---|---|---|---|
| `path` | string | (required) | any text |  | Where the files are. |
| `maxFiles` | int | `1000` | a positive whole number |  | Files per batch. |
| `mode` | enum | `polling` | polling, EFO |  | How to fetch. |
| `token` | string | `***` | any text | yes | A \\| secret. |
| `kafka.*` | prefix |  | passed through |  | Passed through. |
";
        assert_eq!(md, expected, "\n{md}");
    }
}

#[test]
fn a_missing_required_option_names_the_near_miss_given() {
    let specs = vec![
        OptionSpec::string("kafka.bootstrap.servers", "Brokers.").required(),
        OptionSpec::prefix("kafka.", "Passed through."),
    ];
    let o: Options = [("kafka.bootstrap.server", "h:1")].into_iter().collect();
    let e = OptionSpec::validate_all(&specs, &o, "kafka").unwrap_err();
    assert_eq!(e.code(), ErrorCode::MissingOption);
    assert!(
        e.message().contains(
            "'kafka.bootstrap.server' was given: did you mean 'kafka.bootstrap.servers'?"
        ),
        "{}",
        e.message()
    );
    let o: Options = [("kafka.client.id", "c")].into_iter().collect();
    let e = OptionSpec::validate_all(&specs, &o, "kafka").unwrap_err();
    assert!(!e.message().contains("did you mean"), "{}", e.message());
}
