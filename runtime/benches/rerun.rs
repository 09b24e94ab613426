//! Re-run cost: how long an `availableNow` run takes when every file in the directory is already
//! tracked (the common case of a scheduled ingestion job finding nothing new), next to the cost
//! of plainly listing the same directory with `std::fs::read_dir`, in the same run.
//!
//! `cargo bench -p tributary-runtime --bench rerun` (TRIBUTARY_BENCH_FILES sets the file count,
//! default 100000).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Instant;

use tributary_runtime::engine::Pipeline;
use tributary_runtime::pipeline::PipelineSpec;
use tributary_runtime::registry::Registry;

fn main() {
    let files: usize = std::env::var("TRIBUTARY_BENCH_FILES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let root = tempfile::tempdir().expect("temp dir");
    let input = root.path().join("in");
    // 100 sub-directories, as landing zones are usually partitioned.
    for i in 0..files {
        let dir = input.join(format!("d{:03}", i % 100));
        if i < 100 {
            std::fs::create_dir_all(&dir).expect("mkdir");
        }
        std::fs::write(
            dir.join(format!("f{i:07}.json")),
            format!("{{\"id\":{i}}}\n"),
        )
        .expect("write");
    }
    let text = format!(
        r#"
checkpoint = "{ck}"
[source]
connector = "files"
options = {{ path = "{input}", "cloudFiles.format" = "json", schema = "id BIGINT", "cloudFiles.maxFilesPerTrigger" = 10000 }}
[[sink]]
connector = "parquet"
options = {{ path = "{out}" }}
[trigger]
kind = "availableNow"
"#,
        ck = root.path().join("ck").display(),
        input = input.display(),
        out = root.path().join("out").display()
    );
    let spec = PipelineSpec::parse(&text, "rerun.toml").expect("pipeline");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let run = || {
        rt.block_on(async {
            let mut p = Pipeline::build(
                &spec,
                &Registry::builtin(),
                Arc::new(tributary_sdk::EnvSecretStore),
            )
            .expect("build");
            p.run().await.expect("run")
        })
    };
    let t = Instant::now();
    let first = run();
    let first_s = t.elapsed().as_secs_f64();
    assert_eq!(first.rows as usize, files);

    let mut rerun = Vec::new();
    for _ in 0..3 {
        let t = Instant::now();
        let s = run();
        rerun.push(t.elapsed().as_secs_f64());
        assert_eq!(s.rows, 0);
    }
    let mut list = Vec::new();
    for _ in 0..3 {
        let t = Instant::now();
        let mut n = 0;
        for d in std::fs::read_dir(&input).expect("list") {
            let d = d.expect("entry");
            for f in std::fs::read_dir(d.path()).expect("list") {
                let f = f.expect("entry");
                let _ = f.metadata().expect("stat").len();
                n += 1;
            }
        }
        assert_eq!(n, files);
        list.push(t.elapsed().as_secs_f64());
    }
    let best = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    println!("files: {files}");
    println!(
        "first availableNow run (ingest all): {first_s:.2} s ({:.0} files/s)",
        files as f64 / first_s
    );
    println!(
        "second availableNow run, all tracked: best {:.3} s of {:?}",
        best(&rerun),
        rerun
    );
    println!(
        "plain read_dir + stat of the same tree: best {:.3} s",
        best(&list)
    );
    println!(
        "ratio rerun / plain listing: {:.2}x",
        best(&rerun) / best(&list)
    );
}
