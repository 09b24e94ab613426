//! A full file system under the checkpoint or under the Parquet sink: the run ends with one clear
//! error naming the path, leaves nothing half-written (every file in `offsets/` and `commits/`
//! is whole, no temp file stays, no visible partial Parquet file), and a restart after space is
//! freed finishes with every input row exactly once.
//!
//! The small file system is a real `tmpfs` mounted over the test's directory (`mount` needs
//! root, as CI runs; elsewhere the test is skipped and named in the summary).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

/// A `tmpfs` of `size` bytes mounted at `dir` until dropped.
struct Tmpfs {
    dir: PathBuf,
}

impl Tmpfs {
    fn mount(dir: &Path, size: u64) -> Option<Tmpfs> {
        std::fs::create_dir_all(dir).unwrap();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .output();
        match out {
            Ok(o) if o.status.success() => Some(Tmpfs {
                dir: dir.to_path_buf(),
            }),
            Ok(o) => {
                tributary_skip_log::skip(&format!(
                    "cannot mount a tmpfs (needs root): {}",
                    String::from_utf8_lossy(&o.stderr).trim()
                ));
                None
            }
            Err(e) => {
                tributary_skip_log::skip(&format!("cannot run mount: {e}"));
                None
            }
        }
    }

    /// Fills the file system but for about `leave` bytes, with a hidden file readers skip.
    fn fill_leaving(&self, leave: u64) {
        let free = free_bytes(&self.dir);
        let filler = free.saturating_sub(leave);
        std::fs::write(self.filler(), vec![0u8; filler as usize]).unwrap();
    }

    fn free(&self) {
        std::fs::remove_file(self.filler()).unwrap();
    }

    fn filler(&self) -> PathBuf {
        self.dir.join(".filler")
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.dir).status();
    }
}

fn free_bytes(dir: &Path) -> u64 {
    let o = Command::new("df")
        .args(["--output=avail", "-B1"])
        .arg(dir)
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .nth(1)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// The checkpoint's logs hold whole JSON files only, and no temp file is left anywhere in it.
fn assert_checkpoint_whole(ck: &Path) {
    for f in files_under(ck) {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        assert!(!name.ends_with(".tmp"), "temp file left: {}", f.display());
        let parent = f.parent().unwrap().file_name().unwrap().to_string_lossy();
        if parent == "offsets" || parent == "commits" {
            let text = std::fs::read_to_string(&f).unwrap();
            // Logs are JSON lines (Spark's layout: a version line, then JSON).
            for line in text.lines() {
                if line.starts_with('{') {
                    serde_json::from_str::<serde_json::Value>(line)
                        .unwrap_or_else(|e| panic!("{} is not whole: {e}", f.display()));
                }
            }
            assert!(!text.is_empty(), "{} is empty", f.display());
        }
    }
}

fn finish_and_check(l: &Layout, p: &Path, rows: u64) {
    let o = tributary().args(["run", "-q"]).arg(p).output().unwrap();
    assert!(
        o.status.success(),
        "restart after freeing space: {}",
        stderr(&o)
    );
    let ids = output_ids(&l.output());
    assert_eq!(ids.len() as u64, rows, "rows in output after the restart");
    assert_eq!(ids, (0..rows as i64).collect::<Vec<_>>());
}

#[test]
fn a_full_checkpoint_file_system_fails_clearly_and_resumes_exactly_once() {
    let l = Layout::new();
    let Some(fs) = Tmpfs::mount(&l.checkpoint(), 8 << 20) else {
        return;
    };
    let rows = write_json_files(&l.input(), "f", 120, 20, 0);
    let p = l.pipeline(r#", "cloudFiles.maxFilesPerTrigger" = 1"#, "availableNow");
    // Room for a few batches' logs and the file state, not for 120 of them (a tmpfs file
    // takes a 4 KiB page, so the whole run needs about 1 MiB of the 8 MiB).
    fs.fill_leaving(160 << 10);
    let o = tributary().args(["run"]).arg(&p).output().unwrap();
    let line = assert_one_clear_error(&o);
    assert!(
        line.contains("No space left on device") || line.contains("disk is full"),
        "{line}"
    );
    assert!(
        line.contains(&l.checkpoint().display().to_string()),
        "the path: {line}"
    );
    assert_checkpoint_whole(&l.checkpoint());
    let before = output_ids(&l.output()).len();
    assert!(
        before > 0 && (before as u64) < rows,
        "{before} rows before the stop"
    );

    fs.free();
    finish_and_check(&l, &p, rows);
    assert_checkpoint_whole(&l.checkpoint());
}

#[test]
fn a_full_sink_file_system_fails_clearly_and_resumes_exactly_once() {
    let l = Layout::new();
    let Some(fs) = Tmpfs::mount(&l.output(), 4 << 20) else {
        return;
    };
    // Wide rows, so that a few batches fill the sink's file system.
    let rows = write_json_files(&l.input(), "f", 60, 2000, 0);
    let p = l.pipeline(r#", "cloudFiles.maxFilesPerTrigger" = 1"#, "availableNow");
    fs.fill_leaving(400 << 10);
    let o = tributary().args(["run"]).arg(&p).output().unwrap();
    let line = assert_one_clear_error(&o);
    assert!(
        line.contains("No space left on device") || line.contains("disk is full"),
        "{line}"
    );
    assert_checkpoint_whole(&l.checkpoint());
    // No visible file is partial: every part file reads (output_ids reads them all).
    let before = output_ids(&l.output()).len();
    assert!((before as u64) < rows, "{before} rows before the stop");

    fs.free();
    finish_and_check(&l, &p, rows);
}
