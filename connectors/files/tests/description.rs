//! The description the runtime binds the checkpoint to is computed from the options alone
//! (nothing opened), and the built source reports the same identity.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use common::*;
use tributary_files::FilesSourceFactory;
use tributary_sdk::{ErrorCode, Options, SourceFactory, SourceFactoryExt};

fn options(path: &str, extra: &[(&str, &str)]) -> Options {
    let mut o: Options = [("path", path), ("cloudFiles.format", "json")]
        .into_iter()
        .collect();
    for (k, v) in extra {
        o.set(*k, *v);
    }
    o
}

#[test]
fn the_identity_needs_no_file_system() {
    let d = FilesSourceFactory
        .describe(&options(
            "/no/such/dir/./in/../*.json",
            &[("pathGlobFilter", "a*")],
        ))
        .unwrap();
    assert_eq!(d.identity.connector, "files");
    assert_eq!(
        d.identity.target,
        "/no/such/dir/*.json?format=json&pathGlobFilter=a*"
    );
    assert!(d.streams.is_empty() && d.stream_pattern.is_none());
    assert!(d.payload_column.is_none() && d.key_column.is_none());
    // Building is what touches the file system.
    let err = FilesSourceFactory
        .create(&options("/no/such/dir", &[]), &Default::default())
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidOption);
}

#[test]
fn the_built_source_has_the_described_identity() {
    let input = tempfile::tempdir().unwrap();
    write_json(input.path(), "a.json", 0, 1);
    let path = format!("{}/./", input.path().display());
    let o = options(&path, &[("schema", "id BIGINT")]);
    let prepared = FilesSourceFactory.prepare(&o).unwrap();
    let described = prepared.description().identity.clone();
    let src = prepared.build(&Default::default()).unwrap();
    assert_eq!(src.identity(), described);
    assert_eq!(
        described.target,
        format!("{}?format=json&pathGlobFilter=", input.path().display())
    );
}
