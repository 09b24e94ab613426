//! Helpers shared by the integration tests: temp input directories, a source over them, and
//! reading a range into plain values.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs, dead_code)]

use std::path::Path;

use arrow_array::{Array, RecordBatch, StringArray, StructArray};
use tributary_files::FilesSourceFactory;
use tributary_sdk::{
    ConnectorContext, LoggedBatch, Offset, Options, ReadLimit, Source, SourceFactory,
    SourceFactoryExt, StateReport, StateRequest,
};

pub fn source(input: &Path, state: Option<&Path>, extra: &[(&str, &str)]) -> Box<dyn Source> {
    try_source(input, state, extra).unwrap()
}

pub fn try_source(
    input: &Path,
    state: Option<&Path>,
    extra: &[(&str, &str)],
) -> tributary_sdk::Result<Box<dyn Source>> {
    let mut options: Options = [
        ("path", input.display().to_string().as_str()),
        ("cloudFiles.format", "json"),
    ]
    .into_iter()
    .collect();
    for (k, v) in extra {
        options.set(*k, *v);
    }
    let context = ConnectorContext {
        state_dir: state.map(Path::to_path_buf),
        ..Default::default()
    };
    FilesSourceFactory.create(&options, &context)
}

/// Writes `rows` JSON lines `{"id": base+i, "name": "n<id>"}`.
pub fn write_json(dir: &Path, name: &str, base: i64, rows: i64) {
    let text: String = (base..base + rows)
        .map(|i| format!("{{\"id\": {i}, \"name\": \"n{i}\"}}\n"))
        .collect();
    std::fs::write(dir.join(name), text).unwrap();
}

/// The sequence number of a files offset (`{"seq": N}`).
pub fn seq(o: &Offset) -> u64 {
    o.as_json()["seq"].as_u64().unwrap()
}

/// One entry of a checkpoint's offsets log, as the runtime hands it to `describe_state`.
pub fn logged(batch_id: u64, start: &Offset, end: &Offset, committed: bool) -> LoggedBatch {
    LoggedBatch {
        batch_id,
        start: start.clone(),
        end: end.clone(),
        committed,
    }
}

/// The connector's report of the state in `state` (what `tributary state` prints).
pub fn state_report(state: &Path, batches: &[LoggedBatch]) -> StateReport {
    let request = StateRequest {
        state_dir: state,
        batches,
    };
    SourceFactory::describe_state(&FilesSourceFactory, &request)
        .unwrap()
        .expect("the files connector describes its state")
}

pub fn rows(batches: &[RecordBatch]) -> usize {
    batches.iter().map(|b| b.num_rows()).sum()
}

/// The `_metadata.file_name` of every row.
pub fn file_names(batches: &[RecordBatch]) -> Vec<String> {
    let mut out = Vec::new();
    for b in batches {
        let meta = b
            .column_by_name("_metadata")
            .unwrap()
            .as_any()
            .downcast_ref::<StructArray>()
            .unwrap();
        let names = meta
            .column_by_name("file_name")
            .unwrap()
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap();
        for i in 0..names.len() {
            out.push(names.value(i).to_string());
        }
    }
    out
}

/// The distinct file names, in order.
pub fn distinct_files(batches: &[RecordBatch]) -> Vec<String> {
    let mut v = file_names(batches);
    v.dedup();
    v
}

/// Runs one micro-batch: latest_offset from `start` with `limit`, read, commit. Returns the end
/// and the batches.
pub async fn batch(
    src: &mut Box<dyn Source>,
    start: &Offset,
    limit: &ReadLimit,
) -> (Offset, Vec<RecordBatch>) {
    let end = src.latest_offset(start, limit).await.unwrap();
    let batches = src.read(start, &end).await.unwrap();
    src.commit(&end).await.unwrap();
    (end, batches)
}

/// A column of strings as `Option<String>` values.
pub fn strings(batches: &[RecordBatch], column: &str) -> Vec<Option<String>> {
    let mut out = Vec::new();
    for b in batches {
        let a = arrow_cast::cast(
            b.column_by_name(column).unwrap(),
            &arrow_schema::DataType::Utf8,
        )
        .unwrap();
        let a = a.as_any().downcast_ref::<StringArray>().unwrap();
        for i in 0..a.len() {
            out.push(a.is_valid(i).then(|| a.value(i).to_string()));
        }
    }
    out
}
