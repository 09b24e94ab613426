//! JSON ingestion through the files source against `arrow-json` reading the same files
//! directly, and `latest_offset` over 100 k already-tracked files against a bare `object_store`
//! listing of the same directory. Both comparisons run side by side in one run; the ratios are
//! printed at the end (median of repeated timings).
//!
//! `cargo bench -p tributary-files --bench json_ingest`
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::io::Cursor;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow_json::ReaderBuilder;
use criterion::{BatchSize, Criterion};
use futures::TryStreamExt;
use object_store::local::LocalFileSystem;
use object_store::ObjectStore;
use tributary_files::FilesSourceFactory;
use tributary_sdk::{ConnectorContext, Options, ReadLimit, Source, SourceFactoryExt};

const FILES: usize = 100;
const ROWS_PER_FILE: usize = 1000;
const TRACKED: usize = 100_000;
const DDL: &str =
    "id BIGINT, user STRING, price DOUBLE, qty INT, ts TIMESTAMP, ok BOOLEAN, tag STRING";

fn write_json_files(dir: &Path) {
    for f in 0..FILES {
        let mut text = String::with_capacity(ROWS_PER_FILE * 140);
        for r in 0..ROWS_PER_FILE {
            let id = f * ROWS_PER_FILE + r;
            text.push_str(&format!(
                "{{\"id\": {id}, \"user\": \"user-{u}\", \"price\": {p:.2}, \"qty\": {q}, \
                 \"ts\": \"2024-05-{d:02}T10:{m:02}:00Z\", \"ok\": {ok}, \"tag\": \"tag{t}\"}}\n",
                u = id % 9973,
                p = (id % 1000) as f64 * 1.25,
                q = id % 17,
                d = 1 + id % 28,
                m = id % 60,
                ok = id.is_multiple_of(3),
                t = id % 11,
            ));
        }
        std::fs::write(dir.join(format!("part-{f:04}.json")), text).unwrap();
    }
}

fn options(path: &Path) -> Options {
    [
        ("path", path.display().to_string()),
        ("cloudFiles.format", "json".to_string()),
        ("schema", DDL.to_string()),
    ]
    .into_iter()
    .collect()
}

fn new_source(path: &Path, state: Option<&Path>) -> Box<dyn Source> {
    let ctx = ConnectorContext {
        state_dir: state.map(Path::to_path_buf),
        ..Default::default()
    };
    FilesSourceFactory.create(&options(path), &ctx).unwrap()
}

/// The whole pipeline the source runs: discovery + state store + read + decode + metadata.
async fn through_source(mut src: Box<dyn Source>) -> usize {
    let start = src.initial_offset().await.unwrap();
    let end = src.latest_offset(&start, &ReadLimit::All).await.unwrap();
    let batches = src.read(&start, &end).await.unwrap();
    batches.iter().map(|b| b.num_rows()).sum()
}

/// The library underneath, alone: read each file and decode it with arrow-json.
fn direct_arrow_json(dir: &Path, schema: &arrow_schema::SchemaRef) -> usize {
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    let mut rows = 0;
    for p in paths {
        let bytes = std::fs::read(&p).unwrap();
        let reader = ReaderBuilder::new(schema.clone())
            .with_batch_size(8192)
            .with_coerce_primitive(true)
            .build(Cursor::new(&bytes[..]))
            .unwrap();
        for b in reader {
            rows += b.unwrap().num_rows();
        }
    }
    rows
}

async fn bare_listing(store: &LocalFileSystem) -> usize {
    store
        .list(None)
        .try_collect::<Vec<_>>()
        .await
        .unwrap()
        .len()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn time<T>(n: usize, mut f: impl FnMut() -> T) -> Duration {
    median(
        (0..n)
            .map(|_| {
                let t = Instant::now();
                std::hint::black_box(f());
                t.elapsed()
            })
            .collect(),
    )
}

fn main() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut c = Criterion::default()
        .sample_size(10)
        .measurement_time(Duration::from_secs(8))
        .configure_from_args();

    // --- 100 k JSON rows: source vs arrow-json ----------------------------------------------
    let input = tempfile::tempdir().unwrap();
    write_json_files(input.path());
    let schema = Arc::new(tributary_files::ddl::parse_ddl(DDL).unwrap());
    assert_eq!(
        direct_arrow_json(input.path(), &schema),
        FILES * ROWS_PER_FILE
    );
    assert_eq!(
        rt.block_on(through_source(new_source(input.path(), None))),
        FILES * ROWS_PER_FILE
    );
    let mut g = c.benchmark_group("json_100k_rows");
    g.throughput(criterion::Throughput::Elements(
        (FILES * ROWS_PER_FILE) as u64,
    ));
    g.bench_function("arrow_json_direct", |b| {
        b.iter(|| direct_arrow_json(input.path(), &schema))
    });
    g.bench_function("files_source", |b| {
        b.iter_batched(
            || new_source(input.path(), None),
            |src| rt.block_on(through_source(src)),
            BatchSize::PerIteration,
        )
    });
    g.finish();

    // --- latest_offset over 100 k tracked files: source vs bare object_store listing --------
    let many = tempfile::tempdir().unwrap();
    for d in 0..(TRACKED / 1000) {
        let dir = many.path().join(format!("d{d:03}"));
        std::fs::create_dir(&dir).unwrap();
        for f in 0..1000 {
            std::fs::File::create(dir.join(format!("f{f:04}.json"))).unwrap();
        }
    }
    let state = tempfile::tempdir().unwrap();
    let mut src = new_source(many.path(), Some(state.path()));
    let t = Instant::now();
    let end = rt.block_on(async {
        let start = src.initial_offset().await.unwrap();
        let end = src.latest_offset(&start, &ReadLimit::All).await.unwrap();
        src.commit(&end).await.unwrap();
        end
    });
    let first_discovery = t.elapsed();
    assert_eq!(end.as_json()["seq"].as_u64().unwrap() as usize, TRACKED);
    let store = LocalFileSystem::new_with_prefix(many.path()).unwrap();
    let mut g = c.benchmark_group("latest_offset_100k_tracked");
    g.bench_function("object_store_list", |b| {
        b.iter(|| rt.block_on(bare_listing(&store)))
    });
    g.bench_function("files_source_latest_offset", |b| {
        b.iter(|| {
            let e = rt
                .block_on(src.latest_offset(&end, &ReadLimit::All))
                .unwrap();
            assert_eq!(e, end);
        })
    });
    g.finish();
    c.final_summary();

    // --- ratios, same run ------------------------------------------------------------------
    let direct = time(5, || direct_arrow_json(input.path(), &schema));
    let via_source = time(5, || {
        let s = new_source(input.path(), None);
        rt.block_on(through_source(s))
    });
    let list = time(5, || rt.block_on(bare_listing(&store)));
    let latest = time(5, || {
        rt.block_on(src.latest_offset(&end, &ReadLimit::All))
            .unwrap()
    });
    println!("\n== ratios (median of 5, same run) ==");
    println!(
        "json 100k rows: arrow-json direct {:.1} ms, files source {:.1} ms (incl. listing, state store, _metadata): ratio {:.2}x",
        direct.as_secs_f64() * 1e3,
        via_source.as_secs_f64() * 1e3,
        via_source.as_secs_f64() / direct.as_secs_f64()
    );
    println!(
        "latest_offset, 100k tracked files, nothing new: object_store list {:.1} ms, latest_offset {:.1} ms: ratio {:.2}x",
        list.as_secs_f64() * 1e3,
        latest.as_secs_f64() * 1e3,
        latest.as_secs_f64() / list.as_secs_f64()
    );
    println!(
        "first discovery of 100k files (list + insert in one SQLite transaction, synchronous=FULL): {:.1} ms",
        first_discovery.as_secs_f64() * 1e3
    );
}
