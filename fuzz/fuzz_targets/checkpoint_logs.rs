//! The checkpoint's readers (verification and recovery) over a directory of arbitrary files:
//! `metadata.json`, `offsets/<n>`, `commits/<n>` with arbitrary names and contents.
#![no_main]
use std::path::PathBuf;
use std::sync::OnceLock;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
enum Name {
    Metadata,
    Offsets(u64),
    Commits(u64),
    OffsetsText(String),
    CommitsText(String),
}

#[derive(Arbitrary, Debug)]
struct File {
    name: Name,
    bytes: Vec<u8>,
}

static DIR: OnceLock<PathBuf> = OnceLock::new();
const PREFIX: &str = "tributary-fuzz-ck-";

/// Removes the directories earlier fuzzer processes left in `base` (each process writes one,
/// named by its id, and libFuzzer exits without a hook to remove it): those whose process is
/// gone.
fn remove_stale(base: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.strip_prefix(PREFIX)) else {
            continue;
        };
        let proc = std::path::Path::new("/proc");
        if pid.parse::<u32>().is_ok() && proc.join("self").exists() && !proc.join(pid).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

fuzz_target!(|files: Vec<File>| {
    // Under /dev/shm when it exists: the target writes a directory per input.
    let dir = DIR.get_or_init(|| {
        let base = if std::path::Path::new("/dev/shm").is_dir() {
            PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        remove_stale(&base);
        base.join(format!("{PREFIX}{}", std::process::id()))
    });
    let files: Vec<(String, Vec<u8>)> = files
        .into_iter()
        .take(16)
        .filter_map(|f| {
            let name = match f.name {
                Name::Metadata => "metadata.json".to_string(),
                Name::Offsets(n) => format!("offsets/{n}"),
                Name::Commits(n) => format!("commits/{n}"),
                // Only plain names inside the log directories (no "..", no "/").
                Name::OffsetsText(s) | Name::CommitsText(s)
                    if s.is_empty() || s.contains('/') || s.contains('\0') || s == "." || s == ".." =>
                {
                    return None
                }
                Name::OffsetsText(s) => format!("offsets/{s}"),
                Name::CommitsText(s) => format!("commits/{s}"),
            };
            Some((name, f.bytes))
        })
        .collect();
    tributary_runtime::fuzzing::checkpoint_logs(dir, &files);
});
