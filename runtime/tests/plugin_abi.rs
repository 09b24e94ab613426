//! The plugin boundary, proven with real cdylibs built from `examples/plugin-generator`:
//! a wrong ABI version, a missing entry symbol and a non-library are refused with clear messages;
//! a panic inside the plugin becomes an error and the host keeps running; batches, options,
//! offsets, errors and sinks cross intact.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod plugin_common;

use std::path::PathBuf;
use std::sync::Arc;

use tributary_runtime::plugin;
use tributary_sdk::{
    ConnectorContext, ErrorCode, Offset, Options, ReadLimit, SinkFactory, SinkFactoryExt,
    SourceFactory, SourceFactoryExt,
};

fn generator(lib: &std::path::Path) -> Arc<dyn SourceFactory> {
    plugin::load(lib)
        .expect("plugin loads")
        .source_factories()
        .into_iter()
        .find(|f| f.name() == "generator")
        .expect("generator source")
}

#[test]
fn a_plugin_built_for_another_abi_version_is_refused_naming_both_versions() {
    let lib = plugin_common::build_plugin("bad-abi", "debug");
    let e = plugin::load(&lib).unwrap_err();
    assert_eq!(e.code(), ErrorCode::Plugin);
    let m = e.to_string();
    assert!(m.contains("ABI version 999"), "{m}");
    assert!(
        m.contains(&format!(
            "supports ABI version {}",
            tributary_sdk::plugin::ABI_VERSION
        )),
        "{m}"
    );
    assert!(m.contains(&lib.display().to_string()), "{m}");
}

#[test]
fn a_library_without_the_entry_symbol_is_refused() {
    let lib = plugin_common::build_plugin("no-entry", "debug");
    let e = plugin::load(&lib).unwrap_err();
    let m = e.to_string();
    assert!(
        m.contains("does not export the symbol tributary_plugin_entry_v1"),
        "{m}"
    );
    assert!(m.contains(&lib.display().to_string()), "{m}");
}

#[test]
fn a_file_that_is_not_a_library_for_this_host_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join(plugin_common::library_name());
    std::fs::write(&fake, b"\x7fELF but not really a shared object").unwrap();
    let m = plugin::load(&fake).unwrap_err().to_string();
    assert!(
        m.contains("cannot be loaded as a shared library for this host"),
        "{m}"
    );
    assert!(m.contains(&fake.display().to_string()), "{m}");
    // Discovery refuses the directory with the same reason; listing shows it as refused.
    assert!(plugin::discover(&[dir.path().to_path_buf()]).is_err());
    let listed = plugin::plugins_list_table(&plugin::scan(&[dir.path().to_path_buf()]).unwrap());
    assert!(listed.contains("REFUSED"), "{listed}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_in_read_fails_the_call_and_the_host_keeps_running() {
    let lib = tokio::task::spawn_blocking(|| plugin_common::build_plugin("panic-in-read", "debug"))
        .await
        .unwrap();
    let factory = generator(&lib);
    let options: Options = [("totalRows", "10")].into_iter().collect();
    let mut source = factory
        .create(&options, &ConnectorContext::default())
        .unwrap();
    let start = source.initial_offset().await.unwrap();
    let end = source.latest_offset(&start, &ReadLimit::All).await.unwrap();
    let e = source.read(&start, &end).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::Internal);
    assert!(e.message().contains("panicked in read"), "{e}");
    assert_eq!(e.context_value("plugin"), Some("generator"));
    // The poisoned source refuses further calls with a clear error instead of crashing.
    let again = source
        .latest_offset(&start, &ReadLimit::All)
        .await
        .unwrap_err();
    assert!(again.message().contains("panicked earlier"), "{again}");
    drop(source);
    // The host and the plugin are still usable: a fresh source plans fine.
    let mut fresh = factory
        .create(&options, &ConnectorContext::default())
        .unwrap();
    let s = fresh.initial_offset().await.unwrap();
    assert_eq!(s.to_json_string(), r#"{"rows":0}"#);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_offsets_errors_and_metrics_cross_the_boundary_intact() {
    let lib = tokio::task::spawn_blocking(|| plugin_common::build_plugin("", "debug"))
        .await
        .unwrap();
    let loaded = plugin::load(&lib).unwrap();
    let m = loaded.manifest();
    assert_eq!(m.name, "generator");
    assert_eq!(m.abi_version, tributary_sdk::plugin::ABI_VERSION);
    assert_eq!(m.sdk_version, tributary_sdk::SDK_VERSION);
    assert!(plugin::inspect(&loaded).contains("maxRowsPerTrigger"));
    let options: Options = [
        ("totalRows", "25"),
        ("rowsPerBatch", "10"),
        ("maxRowsPerTrigger", "12"),
    ]
    .into_iter()
    .collect();
    // What the source reads is known before it is built, the same through the plugin.
    let described = generator(&lib).describe(&options).unwrap();
    let native_description = tributary_plugin_generator::GeneratorSourceFactory
        .describe(&options)
        .unwrap();
    // The plugin exports the streaming extension: its own answer (the generator streams) holds.
    assert_eq!(
        described.real_time,
        tributary_sdk::RealTimeSupport::Supported
    );
    assert_eq!(described, native_description);
    assert_eq!(described.identity.target, "rows:25");
    let ctx = ConnectorContext::default();
    let mut foreign = generator(&lib).create(&options, &ctx).unwrap();
    let mut native = tributary_plugin_generator::GeneratorSourceFactory
        .create(&options, &ctx)
        .unwrap();
    assert_eq!(foreign.schema(), native.schema());
    assert_eq!(foreign.identity(), native.identity());
    assert_eq!(foreign.identity(), described.identity);
    assert_eq!(foreign.default_read_limit(), ReadLimit::MaxRows(12));
    let start = foreign.initial_offset().await.unwrap();
    let end = foreign
        .latest_offset(&start, &foreign.default_read_limit())
        .await
        .unwrap();
    assert_eq!(end.to_json_string(), r#"{"rows":12}"#);
    let a = foreign.read(&start, &end).await.unwrap();
    let b = native.read(&start, &end).await.unwrap();
    assert_eq!(a, b, "plugin batches equal the statically linked ones");
    foreign.commit(&end).await.unwrap();
    assert_eq!(foreign.metrics()["committedRows"], 12);
    // An error keeps its stable code across the boundary.
    let past = Offset::parse(r#"{"rows":26}"#).unwrap();
    let e = foreign.read(&end, &past).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::SourceRead);
    assert!(e.message().contains("past the last row"), "{e}");
    // Unknown options are refused by the plugin with the SDK's message, and conflicting ones
    // with both names.
    let bad: Options = [("totalRow", "5")].into_iter().collect();
    let e = generator(&lib).validate(&bad).unwrap_err();
    assert_eq!(e.code(), ErrorCode::UnknownOption);
    assert!(e.message().contains("did you mean 'totalRows'"), "{e}");
    let both: Options = [("totalRows", "5"), ("controlFile", "/c.json")]
        .into_iter()
        .collect();
    let e = generator(&lib).validate(&both).unwrap_err();
    assert_eq!(e.code(), ErrorCode::ConflictingOptions);
    assert_eq!(e.context_value("conflicts_with"), Some("controlFile"));
    assert!(format!("{foreign:?}").contains("GeneratorSource"));
    foreign.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plugin_sink_writes_idempotently_per_batch_id() {
    let lib = tokio::task::spawn_blocking(|| plugin_common::build_plugin("", "debug"))
        .await
        .unwrap();
    let loaded = plugin::load(&lib).unwrap();
    let sink_factory: Arc<dyn SinkFactory> = loaded
        .sink_factories()
        .into_iter()
        .find(|f| f.name() == "jsonlines")
        .unwrap();
    let out = tempfile::tempdir().unwrap();
    let options: Options = [("path", out.path().to_str().unwrap())]
        .into_iter()
        .collect();
    let mut sink = sink_factory
        .create(&options, &ConnectorContext::default())
        .unwrap();
    assert_eq!(sink.delivery(), tributary_sdk::Delivery::ExactlyOnce);
    let mut src = generator(&lib)
        .create(
            &[("totalRows", "3")].into_iter().collect(),
            &ConnectorContext::default(),
        )
        .unwrap();
    let start = src.initial_offset().await.unwrap();
    let end = src.latest_offset(&start, &ReadLimit::All).await.unwrap();
    let batches = src.read(&start, &end).await.unwrap();
    sink.open(src.schema()).await.unwrap();
    sink.write(0, &batches).await.unwrap();
    sink.write(0, &batches).await.unwrap();
    let text = std::fs::read_to_string(out.path().join("batch-0.jsonl")).unwrap();
    assert_eq!(
        text,
        "{\"id\":0,\"value\":\"row-0\",\"partition\":0}\n\
         {\"id\":1,\"value\":\"row-1\",\"partition\":0}\n\
         {\"id\":2,\"value\":\"row-2\",\"partition\":0}\n"
    );
    assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 1);
    sink.stop().await.unwrap();
    // A sink error keeps its code: a path that is a file cannot be a directory.
    let file = out.path().join("batch-0.jsonl");
    let mut bad = sink_factory
        .create(
            &[("path", file.to_str().unwrap())].into_iter().collect(),
            &ConnectorContext::default(),
        )
        .unwrap();
    let e = bad.open(src.schema()).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::SinkWrite, "{e}");
}

#[test]
fn discovery_reads_directories_and_the_environment_variable() {
    let lib = plugin_common::build_plugin("", "debug");
    let dir = lib.parent().unwrap().to_path_buf();
    let found = plugin::discover(std::slice::from_ref(&dir)).unwrap();
    assert_eq!(found.len(), 1);
    let mut registry = tributary_runtime::registry::Registry::builtin();
    found[0].register_into(&mut registry).unwrap();
    assert_eq!(registry.source("generator").unwrap().name(), "generator");
    assert_eq!(registry.sink("jsonlines").unwrap().name(), "jsonlines");
    let table = plugin::plugins_list_table(&plugin::scan(std::slice::from_ref(&dir)).unwrap());
    assert!(
        table.contains("source:generator, sink:jsonlines"),
        "{table}"
    );
    // TRIBUTARY_PLUGIN_PATH comes after a pipeline's plugin_path, without duplicates.
    std::env::set_var(plugin::PLUGIN_PATH_ENV, &dir);
    let path = plugin::search_path(&[PathBuf::from("/from/pipeline"), dir.clone()]);
    assert_eq!(path, vec![PathBuf::from("/from/pipeline"), dir]);
}

#[test]
fn a_plugin_cannot_replace_a_built_in_connector() {
    let lib = plugin_common::build_plugin("shadow-builtin", "debug");
    let loaded = plugin::load(&lib).unwrap();
    let mut registry = tributary_runtime::registry::Registry::builtin();
    let e = loaded.register_into(&mut registry).unwrap_err();
    let m = e.to_string();
    assert_eq!(e.code(), ErrorCode::Plugin);
    assert!(
        m.contains("plugin 'generator' declares a source named 'files'"),
        "{m}"
    );
    assert!(m.contains("cannot replace"), "{m}");
    assert!(m.contains(&lib.display().to_string()), "{m}");
    // Nothing of it was registered: `files` is still the built-in, the plugin's sink absent.
    assert_ne!(
        format!("{:?}", registry.source("files").unwrap()),
        format!("{:?}", loaded.source_factories()[0])
    );
    assert!(!registry.has_sink("jsonlines"));
    // Pipelines that load plugins from a path are refused the same way.
    let e = tributary_runtime::registry::Registry::with_plugins(std::slice::from_ref(&lib))
        .unwrap_err();
    assert!(e.to_string().contains("cannot replace"), "{e}");
}

#[test]
fn a_truncated_plugin_file_is_refused_without_being_mapped() {
    let lib = plugin_common::build_plugin("", "debug");
    let dir = tempfile::tempdir().unwrap();
    let cut = dir.path().join(plugin_common::library_name());
    let bytes = std::fs::read(&lib).unwrap();
    for keep in [bytes.len() / 2, bytes.len() - 4096, 64] {
        std::fs::write(&cut, &bytes[..keep]).unwrap();
        let m = plugin::load(&cut).unwrap_err().to_string();
        assert!(
            m.contains("cannot be loaded as a shared library for this host"),
            "{keep}: {m}"
        );
        assert!(
            m.contains("truncated") || m.contains("not a complete object file"),
            "{keep}: {m}"
        );
        let listed =
            plugin::plugins_list_table(&plugin::scan(&[dir.path().to_path_buf()]).unwrap());
        assert!(listed.contains("REFUSED"), "{listed}");
    }
}
