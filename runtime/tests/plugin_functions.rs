//! User-defined SQL functions, registered by an embedding program or exported by a plugin
//! across the C ABI (the functions extension), proven with the example plugin built as a real
//! cdylib: the plugin's `mask_email` gives the same column as the same function registered
//! natively; `plugins inspect` lists it; a plugin built without the extension loads with no
//! function and says why; a plugin cannot take a function name the host already has, and no
//! function can take the name of a built-in SQL function; a pipeline run by the `tributary`
//! binary calls the plugin's function from its `[transform]`.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;
mod plugin_common;

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use tributary_plugin_generator::MaskEmail;
use tributary_runtime::plugin;
use tributary_runtime::registry::Registry;
use tributary_sdk::{ScalarFunction, Stage};
use tributary_transform::{SqlTransform, TransformSpec};

fn emails(n: usize) -> RecordBatch {
    let values: StringArray = (0..n)
        .map(|i| match i % 5 {
            0 => None,
            1 => Some("no address".to_string()),
            _ => Some(format!("user{i}@example{}.com", i % 7)),
        })
        .collect();
    RecordBatch::try_new(
        Arc::new(Schema::new(vec![Field::new("email", DataType::Utf8, true)])),
        vec![Arc::new(values) as ArrayRef],
    )
    .unwrap()
}

async fn masked(functions: Vec<Arc<dyn ScalarFunction>>, batch: &RecordBatch) -> RecordBatch {
    let mut t = SqlTransform::new(TransformSpec::new(
        "SELECT mask_email(email) AS m, mask_email('ann@x.org') AS lit FROM source",
    ))
    .unwrap()
    .with_functions(functions);
    t.open(batch.schema()).await.unwrap();
    t.apply(batch).await.unwrap()
}

#[tokio::test]
async fn a_plugin_function_gives_what_the_native_one_gives() {
    let lib = plugin_common::build_plugin("", "debug");
    let loaded = plugin::load(&lib).unwrap();
    let functions = loaded.functions();
    assert_eq!(functions.len(), 1);
    let f = &functions[0];
    assert_eq!(
        (f.name(), f.arg_types(), f.return_type()),
        ("mask_email", vec![DataType::Utf8], DataType::Utf8)
    );
    let text = plugin::inspect(&loaded);
    assert!(text.contains("mask_email(Utf8) -> Utf8"), "{text}");
    assert!(text.contains("a***@example.com"), "{text}");
    assert!(plugin::inspect_json(&loaded).contains("\"signature\": \"mask_email(Utf8) -> Utf8\""));

    let batch = emails(8192);
    let foreign = masked(functions, &batch).await;
    let native = masked(vec![Arc::new(MaskEmail)], &batch).await;
    assert_eq!(foreign, native);
    let m = foreign
        .column(0)
        .as_any()
        .downcast_ref::<StringArray>()
        .unwrap();
    assert_eq!(m.len(), 8192);
    assert_eq!(m.value(2), "u***@example2.com");
    assert!(
        m.is_null(0) && m.is_null(1),
        "null and non-addresses give null"
    );
    assert_eq!(
        foreign
            .column(1)
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap()
            .value(8191),
        "a***@x.org",
        "a literal argument is expanded to the batch's rows"
    );
}

#[tokio::test]
async fn a_plugin_without_the_extension_loads_with_no_function() {
    // The build without the extensions is what a plugin built before them exports.
    let lib = plugin_common::build_plugin("no-streaming", "debug");
    let loaded = plugin::load(&lib).unwrap();
    assert!(loaded.functions().is_empty());
    let text = plugin::inspect(&loaded);
    assert!(
        text.contains("(none: the plugin exports no functions (no tributary_plugin_functions_v1"),
        "{text}"
    );
    let batch = emails(4);
    let mut t = SqlTransform::new(TransformSpec::new("SELECT mask_email(email) FROM source"))
        .unwrap()
        .with_functions(loaded.functions());
    let e = t.open(batch.schema()).await.unwrap_err();
    assert!(e.to_string().contains("mask_email"), "{e}");
}

#[test]
fn a_plugin_cannot_replace_a_function_the_host_has() {
    let lib = plugin_common::build_plugin("", "debug");
    let loaded = plugin::load(&lib).unwrap();
    let mut registry = Registry::builtin();
    registry.add_function(Arc::new(MaskEmail));
    let e = loaded.register_into(&mut registry).unwrap_err();
    assert!(
        e.to_string()
            .contains("declares a function named 'mask_email', and 'mask_email' is already a function of this host"),
        "{e}"
    );
    assert!(
        !registry.has_sink("jsonlines"),
        "nothing of the plugin was registered"
    );
    let mut clean = Registry::builtin();
    loaded.register_into(&mut clean).unwrap();
    assert!(clean.function("MASK_EMAIL").is_some());
}

#[derive(Debug)]
struct Upper;

impl ScalarFunction for Upper {
    fn name(&self) -> &str {
        "upper"
    }
    fn arg_types(&self) -> Vec<DataType> {
        vec![DataType::Utf8]
    }
    fn return_type(&self) -> DataType {
        DataType::Utf8
    }
    fn invoke(&self, args: &[ArrayRef], _rows: usize) -> tributary_sdk::Result<ArrayRef> {
        Ok(args[0].clone())
    }
}

#[tokio::test]
async fn no_function_takes_the_name_of_a_built_in_one() {
    let batch = emails(4);
    let mut t = SqlTransform::new(TransformSpec::new("SELECT upper(email) FROM source"))
        .unwrap()
        .with_functions(vec![Arc::new(Upper)]);
    let e = t.open(batch.schema()).await.unwrap_err();
    assert!(
        e.to_string()
            .contains("function 'upper' (registered by the program or a plugin) has the name of a built-in SQL function"),
        "{e}"
    );
}

#[test]
fn a_pipeline_calls_the_plugin_s_function_from_its_transform() {
    let lib = plugin_common::build_plugin("", "debug");
    let plugins = lib.parent().unwrap().to_path_buf();
    let l = common::Layout::new();
    let jsonl = l.root.path().join("jsonl");
    let text = format!(
        r#"
name = "masked"
checkpoint = "{ck}"
plugin_path = ["{plugins}"]
[source]
connector = "generator"
options = {{ totalRows = 300 }}
[transform]
sql = "SELECT id, mask_email(concat(value, '@example.com')) AS email FROM source"
[[sink]]
connector = "jsonlines"
options = {{ path = "{jsonl}" }}
[trigger]
kind = "availableNow"
"#,
        ck = l.checkpoint().display(),
        plugins = plugins.display(),
        jsonl = jsonl.display(),
    );
    let p = l.root.path().join("p.toml");
    std::fs::write(&p, text).unwrap();
    let o = common::tributary().arg("check").arg(&p).output().unwrap();
    assert!(o.status.success(), "{}", common::stderr(&o));
    let o = common::tributary()
        .args(["run", "-q"])
        .arg(&p)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", common::stderr(&o));
    let mut rows = Vec::new();
    for e in std::fs::read_dir(&jsonl).unwrap() {
        for line in std::fs::read_to_string(e.unwrap().path()).unwrap().lines() {
            rows.push(serde_json::from_str::<serde_json::Value>(line).unwrap());
        }
    }
    assert_eq!(rows.len(), 300);
    assert!(
        rows.iter().all(|r| r["email"] == "r***@example.com"),
        "{:?}",
        &rows[..3]
    );
    let o = common::tributary()
        .args(["plugins", "inspect"])
        .arg(&lib)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("mask_email(Utf8) -> Utf8"), "{out}");
}
