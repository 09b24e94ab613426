//! The formats through the source: text (lines, `wholeText`, `lineSep`), binaryFile
//! (`pathGlobFilter`), Avro container files (schema from the file, evolution by column name),
//! CSV values beyond the schema rescued, and JSON lines streamed window by window (rows in file
//! order across batches, a malformed line rescued and counted, FAILFAST naming its line). Every
//! format carries `_metadata`.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, BinaryArray, Int64Array, RecordBatch, StringArray};
use arrow_array::{Int32Array, TimestampMillisecondArray};
use arrow_schema::DataType;
use common::{batch, file_names, rows, source, strings, try_source};
use tributary_sdk::{ErrorCode, ReadLimit};

async fn read_all(
    input: &std::path::Path,
    state: Option<&std::path::Path>,
    options: &[(&str, &str)],
) -> (Box<dyn tributary_sdk::Source>, Vec<RecordBatch>) {
    let mut src = source(input, state, options);
    let start = src.initial_offset().await.unwrap();
    let (_, batches) = batch(&mut src, &start, &ReadLimit::All).await;
    (src, batches)
}

fn column<'a, T: 'static>(b: &'a RecordBatch, name: &str) -> &'a T {
    b.column_by_name(name)
        .unwrap()
        .as_any()
        .downcast_ref::<T>()
        .unwrap()
}

#[tokio::test]
async fn text_lines_whole_text_and_line_separators() {
    let input = tempfile::tempdir().unwrap();
    std::fs::write(input.path().join("a.txt"), "one\r\n\nthree\nfour").unwrap();
    let text = [("cloudFiles.format", "text")];
    let (_, batches) = read_all(input.path(), None, &text).await;
    assert_eq!(
        batches[0]
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .collect::<Vec<_>>(),
        ["value", "_metadata"]
    );
    assert_eq!(
        strings(&batches, "value"),
        ["one", "", "three", "four"].map(|s| Some(s.to_string()))
    );
    assert_eq!(file_names(&batches), ["a.txt"; 4]);

    let (_, batches) = read_all(input.path(), None, &[text[0], ("wholeText", "true")]).await;
    assert_eq!(
        strings(&batches, "value"),
        [Some("one\r\n\nthree\nfour".into())]
    );

    std::fs::write(input.path().join("a.txt"), "x;;y;;").unwrap();
    let (_, batches) = read_all(input.path(), None, &[text[0], ("lineSep", ";;")]).await;
    assert_eq!(
        strings(&batches, "value"),
        [Some("x".into()), Some("y".into())]
    );

    for (options, code) in [
        (
            vec![("cloudFiles.format", "json"), ("wholeText", "true")],
            ErrorCode::ConflictingOptions,
        ),
        (
            vec![text[0], ("wholeText", "true"), ("lineSep", ";")],
            ErrorCode::ConflictingOptions,
        ),
        (
            vec![text[0], ("schema", "value STRING")],
            ErrorCode::ConflictingOptions,
        ),
        (
            vec![text[0], ("rescuedDataColumn", "r")],
            ErrorCode::ConflictingOptions,
        ),
        (vec![text[0], ("lineSep", "")], ErrorCode::InvalidOption),
    ] {
        let e = try_source(input.path(), None, &options).unwrap_err();
        assert_eq!(e.code(), code, "{options:?}: {e}");
    }
}

#[tokio::test]
async fn binary_files_are_one_row_each_filtered_by_glob() {
    let input = tempfile::tempdir().unwrap();
    let png: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
    std::fs::write(input.path().join("img.png"), &png).unwrap();
    std::fs::write(input.path().join("notes.txt"), "skip me").unwrap();
    let (_, batches) = read_all(
        input.path(),
        None,
        &[
            ("cloudFiles.format", "binaryFile"),
            ("pathGlobFilter", "*.png"),
        ],
    )
    .await;
    assert_eq!(rows(&batches), 1);
    let b = &batches[0];
    let names: Vec<_> = b
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(
        names,
        ["path", "modificationTime", "length", "content", "_metadata"]
    );
    let path = column::<StringArray>(b, "path").value(0).to_string();
    assert!(path.ends_with("/img.png"), "{path}");
    assert_eq!(column::<Int64Array>(b, "length").value(0), 70_000);
    assert_eq!(column::<BinaryArray>(b, "content").value(0), png.as_slice());
    let mtime = std::fs::metadata(input.path().join("img.png"))
        .unwrap()
        .modified()
        .unwrap()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    assert_eq!(
        column::<TimestampMillisecondArray>(b, "modificationTime").value(0),
        mtime
    );
    assert_eq!(file_names(&batches), ["img.png"]);
}

fn write_avro(path: &std::path::Path, batch: &RecordBatch) {
    let file = std::fs::File::create(path).unwrap();
    let mut w = arrow_avro::writer::AvroWriter::new(file, batch.schema().as_ref().clone()).unwrap();
    w.write(batch).unwrap();
    w.finish().unwrap();
}

#[tokio::test]
async fn avro_schema_comes_from_the_files_and_evolves_by_name() {
    let input = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let ids = |v: Vec<i64>| Arc::new(Int64Array::from(v)) as ArrayRef;
    let names = |v: Vec<&str>| Arc::new(StringArray::from(v)) as ArrayRef;
    write_avro(
        &input.path().join("a.avro"),
        &RecordBatch::try_from_iter([("id", ids(vec![1, 2])), ("name", names(vec!["a", "b"]))])
            .unwrap(),
    );
    let avro = [("cloudFiles.format", "avro")];
    let mut src = source(input.path(), Some(state.path()), &avro);
    assert_eq!(
        src.schema().field_with_name("id").unwrap().data_type(),
        &DataType::Int64
    );
    assert!(src.schema().field_with_name("_rescued_data").is_err());
    let start = src.initial_offset().await.unwrap();
    let (end_a, batches) = batch(&mut src, &start, &ReadLimit::All).await;
    assert_eq!(
        strings(&batches, "name"),
        [Some("a".into()), Some("b".into())]
    );
    assert_eq!(file_names(&batches), ["a.avro"; 2]);

    // Columns in another order, one missing, one new: aligned by name after evolution.
    write_avro(
        &input.path().join("b.avro"),
        &RecordBatch::try_from_iter([
            ("score", Arc::new(Int32Array::from(vec![7])) as ArrayRef),
            ("id", ids(vec![3])),
        ])
        .unwrap(),
    );
    let end_b = src.latest_offset(&end_a, &ReadLimit::All).await.unwrap();
    let e = src.read(&end_a, &end_b).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::UnknownField);
    assert!(e.message().contains("score"), "{}", e.message());
    let mut src = source(input.path(), Some(state.path()), &avro);
    let batches = src.read(&end_a, &end_b).await.unwrap();
    assert_eq!(strings(&batches, "id"), [Some("3".into())]);
    assert_eq!(strings(&batches, "name"), [None]);
    assert_eq!(strings(&batches, "score"), [Some("7".into())]);

    // A given schema drops the new column by default (none), as for Parquet.
    let (_, batches) = read_all(input.path(), None, &[avro[0], ("schema", "id BIGINT")]).await;
    assert_eq!(rows(&batches), 3);
    assert_eq!(batches[0].num_columns(), 2);

    std::fs::write(input.path().join("c.avro"), "not avro").unwrap();
    let mut src = source(input.path(), None, &[avro[0], ("schema", "id BIGINT")]);
    let start = src.initial_offset().await.unwrap();
    let end = src.latest_offset(&start, &ReadLimit::All).await.unwrap();
    let e = src.read(&start, &end).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::SourceRead);
    assert!(e.message().contains("c.avro"), "{}", e.message());
    let e = try_source(
        input.path(),
        None,
        &[avro[0], ("cloudFiles.schemaEvolutionMode", "rescue")],
    )
    .unwrap_err();
    assert_eq!(e.code(), ErrorCode::ConflictingOptions);
}

#[tokio::test]
async fn csv_fields_beyond_the_schema_are_rescued_by_name() {
    let input = tempfile::tempdir().unwrap();
    std::fs::write(
        input.path().join("a.csv"),
        "id,name,extra\n1,a\n2,b,x\n3,\"c\nd\",y,z\n",
    )
    .unwrap();
    let opts = [
        ("cloudFiles.format", "csv"),
        ("header", "true"),
        ("schema", "id INT, name STRING"),
    ];
    let (src, batches) = read_all(input.path(), None, &opts).await;
    assert_eq!(
        strings(&batches, "id"),
        ["1", "2", "3"].map(|s| Some(s.to_string()))
    );
    assert_eq!(strings(&batches, "name")[2].as_deref(), Some("c\nd"));
    let rescued = strings(&batches, "_rescued_data");
    let path = input.path().canonicalize().unwrap().join("a.csv");
    assert_eq!(rescued[0], None);
    assert_eq!(
        rescued[1].as_deref(),
        Some(format!(r#"{{"_file_path":"{}","extra":"x"}}"#, path.display()).as_str())
    );
    assert_eq!(
        rescued[2].as_deref(),
        Some(
            format!(
                r#"{{"_c3":"z","_file_path":"{}","extra":"y"}}"#,
                path.display()
            )
            .as_str()
        )
    );
    assert_eq!(src.metrics()["numMalformedRecords"], 2);
    let failfast = [opts[0], opts[1], opts[2], ("mode", "FAILFAST")];
    let mut src = source(input.path(), None, &failfast);
    let start = src.initial_offset().await.unwrap();
    let end = src.latest_offset(&start, &ReadLimit::All).await.unwrap();
    let e = src.read(&start, &end).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::MalformedRecord);
    assert_eq!(e.context_value("row"), Some("3"));
}

#[tokio::test]
async fn json_lines_stream_in_windows_with_malformed_lines_rescued() {
    let input = tempfile::tempdir().unwrap();
    let n = 20_000;
    let mut text = String::new();
    for i in 0..n {
        if i == 12_345 {
            text.push_str("{\"id\": oops\n");
        } else {
            text.push_str(&format!("{{\"id\": {i}, \"name\": \"n{i}\"}}\n"));
        }
    }
    std::fs::write(input.path().join("big.json"), &text).unwrap();
    let opts = [("schema", "id BIGINT, name STRING")];
    let (src, batches) = read_all(input.path(), None, &opts).await;
    assert!(batches.len() >= 3, "{} batches", batches.len());
    assert!(batches.iter().all(|b| b.num_rows() <= 8192));
    assert_eq!(rows(&batches), n);
    let ids = strings(&batches, "id");
    assert_eq!(ids[12_344].as_deref(), Some("12344"));
    assert_eq!(ids[12_345], None);
    assert_eq!(ids[12_346].as_deref(), Some("12346"));
    assert_eq!(
        strings(&batches, "_rescued_data")[12_345].as_deref(),
        Some("{\"id\": oops")
    );
    assert_eq!(src.metrics()["numMalformedRecords"], 1);

    let mut src = source(input.path(), None, &[opts[0], ("mode", "FAILFAST")]);
    let start = src.initial_offset().await.unwrap();
    let end = src.latest_offset(&start, &ReadLimit::All).await.unwrap();
    let e = src.read(&start, &end).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::MalformedRecord);
    assert_eq!(e.context_value("row"), Some("12346"));
}
