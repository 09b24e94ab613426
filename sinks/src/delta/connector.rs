//! The `delta` sink connector: options, parsing and build (the typed [`SinkConnector`]).

use tributary_sdk::{ConnectorContext, OptionSpec, ParsedOptions, Result, Sink, SinkConnector};

use super::config::{self, DeltaConfig};
use super::s3_commit::check_environment;
use super::sink::DeltaSink;
use super::table::resolve_storage;

/// Factory for the `delta` sink.
#[derive(Debug, Default, Clone, Copy)]
pub struct DeltaSinkFactory;

impl SinkConnector for DeltaSinkFactory {
    type Config = DeltaConfig;

    fn name(&self) -> &str {
        "delta"
    }

    fn options(&self) -> Vec<OptionSpec> {
        config::option_specs()
    }

    fn parse(&self, options: &ParsedOptions) -> Result<DeltaConfig> {
        config::parse(options)
    }

    /// `append`; `update` as a MERGE by the query's grouping keys and `complete` as an
    /// overwrite, each one commit with the batch's `txn` (see the sink's `upsert` module).
    fn output_modes(&self) -> &'static [tributary_sdk::OutputMode] {
        &tributary_sdk::OutputMode::ALL
    }

    /// Resolves the `storage.*` secret references; the checkpoint id becomes the app id of the
    /// sink's Delta transactions; refuses an environment that makes S3 commits unsafe
    /// ([`super::s3_commit`]). Nothing is opened until [`Sink::open`].
    fn build(&self, config: DeltaConfig, context: &ConnectorContext) -> Result<Box<dyn Sink>> {
        let scheme = config::url_scheme(&config.path);
        check_environment(scheme.as_deref(), config.allow_unsafe_rename)?;
        let storage = resolve_storage(&config.storage, context.secrets.as_ref())?;
        Ok(Box::new(DeltaSink::new(
            config,
            storage,
            context.checkpoint_id.clone(),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tributary_sdk::{ErrorCode, Options, SinkFactoryExt};

    #[test]
    fn path_is_required_and_unknown_options_are_refused() {
        let e = DeltaSinkFactory
            .create(&Options::new(), &ConnectorContext::default())
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::MissingOption);
        let e = DeltaSinkFactory
            .create(
                &Options::new().with("path", "/t").with("partitonBy", "a"),
                &ConnectorContext::default(),
            )
            .unwrap_err();
        assert!(e.to_string().contains("did you mean 'partitionBy'"), "{e}");
    }
}
