//! Helpers shared by the host's plugin tests (`plugin_*.rs`): builds the example plugin
//! (`examples/plugin-generator`) as a real cdylib, once per variant and test binary.
//!
//! Built with `cargo build --manifest-path examples/plugin-generator/Cargo.toml --target-dir
//! target/plugins [--features <variant>]`, then copied (atomically) to
//! `target/plugins/variants/<variant>/`, because every variant has the same library file name.
#![allow(dead_code, missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

static BUILT: Mutex<Option<HashMap<String, PathBuf>>> = Mutex::new(None);

pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the runtime lives in the workspace")
        .to_path_buf()
}

pub fn library_name() -> String {
    format!(
        "{}tributary_plugin_generator.{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_EXTENSION
    )
}

/// The plugin built with `features` ("" for the default build) in `profile` ("debug"/"release").
pub fn build_plugin(features: &str, profile: &str) -> PathBuf {
    let mut built = BUILT.lock().unwrap_or_else(|p| p.into_inner());
    let key = format!("{profile}/{features}");
    if let Some(p) = built.get_or_insert_with(HashMap::new).get(&key) {
        return p.clone();
    }
    let root = workspace_root();
    let target_dir = root.join("target").join("plugins");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(&root)
        .arg("build")
        .arg("--manifest-path")
        .arg(root.join("examples/plugin-generator/Cargo.toml"))
        .arg("--target-dir")
        .arg(&target_dir)
        .arg("--lib");
    if profile == "release" {
        cmd.arg("--release");
    }
    if !features.is_empty() {
        cmd.arg("--features").arg(features);
    }
    let status = cmd.status().expect("cargo runs");
    assert!(
        status.success(),
        "building the example plugin ({key}) failed"
    );
    let built_lib = target_dir.join(profile).join(library_name());
    let variant = if features.is_empty() {
        "default"
    } else {
        features
    };
    let dir = target_dir.join("variants").join(profile).join(variant);
    std::fs::create_dir_all(&dir).unwrap();
    let dest = dir.join(library_name());
    let tmp = dir.join(format!(".{}.tmp{}", library_name(), std::process::id()));
    std::fs::copy(&built_lib, &tmp).unwrap();
    std::fs::rename(&tmp, &dest).unwrap();
    built
        .get_or_insert_with(HashMap::new)
        .insert(key, dest.clone());
    dest
}
