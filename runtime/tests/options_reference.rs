//! `docs/options.md` is what `tributary options --markdown` prints: the reference is generated
//! from the connectors' declarations, so a changed name, default or doc fails here until the
//! file is regenerated (`cargo run -p tributary-runtime --bin tributary -- options --markdown >
//! docs/options.md`).

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

#[test]
fn the_options_reference_is_generated_from_the_declarations() {
    let o = common::tributary()
        .args(["options", "--markdown"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", common::stderr(&o));
    let printed = String::from_utf8(o.stdout).unwrap();
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/options.md");
    let file = std::fs::read_to_string(&path).unwrap();
    assert!(
        printed == file,
        "docs/options.md is out of date: regenerate it with `cargo run -p tributary-runtime --bin tributary -- options --markdown > docs/options.md`"
    );
    for heading in [
        "## source `kafka`",
        "## source `kinesis`",
        "## source `files`",
        "## sink `parquet`",
        "## stage `decode`",
    ] {
        assert!(file.contains(heading), "{heading} missing");
    }
    // Every declared option of Kafka appears with its default (one the reader copies).
    assert!(
        file.contains("| `failOnDataLoss` | bool | `true` |"),
        "{file}"
    );
}

#[test]
fn one_connector_s_options_and_an_unknown_name() {
    let o = common::tributary()
        .args(["options", "kafka"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", common::stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(
        text.contains("source kafka") && text.contains("sink kafka"),
        "{text}"
    );
    assert!(!text.contains("parquet"), "{text}");
    let o = common::tributary()
        .args(["options", "kafak"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(
        common::stderr(&o).contains("kafka"),
        "{}",
        common::stderr(&o)
    );
}
