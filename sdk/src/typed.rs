//! The typed connector traits a connector author writes.
//!
//! Options travel as a string map ([`Options`]); a connector turns them into its own config type
//! once, in [`SourceConnector::parse`], with the declarations of [`SourceConnector::options`]
//! already applied (unknown options refused, values type-checked, defaults filled in). Everything
//! after that works on the config: the description the host binds the checkpoint to, and the
//! build step. The erased [`SourceFactory`] / [`SinkFactory`] the runtime and the plugin boundary
//! hold are derived by blanket impls, as Arroyo joins its typed `Connector` to `ErasedConnector`.
//!
//! ```
//! use std::sync::Arc;
//!
//! use arrow_array::{Int64Array, RecordBatch};
//! use arrow_schema::{DataType, Field, Schema, SchemaRef};
//! use tributary_sdk::typed::SourceConnector;
//! use tributary_sdk::{
//!     BatchStream, ConnectorContext, Offset, OptionSpec, Options, ParsedOptions, ReadLimit, Result,
//!     Source, SourceDescription, SourceFactory, SourceFactoryExt, SourceIdentity,
//! };
//!
//! /// Numbers 0..count, one batch.
//! #[derive(Debug, Clone)]
//! struct Numbers;
//!
//! #[derive(Debug)]
//! struct NumbersConfig {
//!     count: i64,
//! }
//!
//! #[derive(Debug)]
//! struct NumbersSource {
//!     config: NumbersConfig,
//!     identity: SourceIdentity,
//! }
//!
//! impl SourceConnector for Numbers {
//!     type Config = NumbersConfig;
//!     fn name(&self) -> &str {
//!         "numbers"
//!     }
//!     fn options(&self) -> Vec<OptionSpec> {
//!         vec![OptionSpec::int("count", 1, 1000, "How many numbers.").default_value(10)]
//!     }
//!     fn parse(&self, options: &ParsedOptions) -> Result<NumbersConfig> {
//!         Ok(NumbersConfig { count: options.i64("count")?.unwrap_or(10) })
//!     }
//!     fn describe(&self, config: &NumbersConfig) -> SourceDescription {
//!         SourceDescription::new("numbers", format!("count={}", config.count))
//!     }
//!     fn build(&self, config: NumbersConfig, _: &ConnectorContext) -> Result<Box<dyn Source>> {
//!         let identity = SourceConnector::describe(self, &config).identity;
//!         Ok(Box::new(NumbersSource { config, identity }))
//!     }
//! }
//!
//! fn position(n: i64) -> Result<Offset> {
//!     Offset::from_typed(&n)
//! }
//!
//! #[async_trait::async_trait]
//! impl Source for NumbersSource {
//!     fn schema(&self) -> SchemaRef {
//!         Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, false)]))
//!     }
//!     fn identity(&self) -> SourceIdentity {
//!         self.identity.clone()
//!     }
//!     async fn initial_offset(&mut self) -> Result<Offset> {
//!         position(0)
//!     }
//!     async fn latest_offset(&mut self, _: &Offset, _: &ReadLimit) -> Result<Offset> {
//!         position(self.config.count)
//!     }
//!     async fn read_stream<'a>(
//!         &'a mut self,
//!         start: &Offset,
//!         end: &Offset,
//!     ) -> Result<BatchStream<'a>> {
//!         let (s, e): (i64, i64) = (start.to_typed()?, end.to_typed()?);
//!         let column = Arc::new(Int64Array::from_iter_values(s..e));
//!         let part = RecordBatch::try_new(self.schema(), vec![column])?;
//!         Ok(Box::pin(futures::stream::iter([Ok(part)])))
//!     }
//!     async fn commit(&mut self, _: &Offset) -> Result<()> {
//!         Ok(())
//!     }
//!     async fn stop(&mut self) -> Result<()> {
//!         Ok(())
//!     }
//! }
//!
//! let factory: &dyn SourceFactory = &Numbers;
//! let prepared = factory.prepare(&Options::new().with("count", "3")).unwrap();
//! assert_eq!(prepared.description().identity.target, "count=3");
//! let err = factory.prepare(&Options::new().with("cuont", "3")).unwrap_err();
//! assert!(err.to_string().contains("did you mean 'count'"));
//!
//! let mut source = factory
//!     .create(&Options::new().with("count", "3"), &ConnectorContext::default())
//!     .unwrap();
//! let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
//! let rows = rt.block_on(async {
//!     let start = source.initial_offset().await?;
//!     let end = source.latest_offset(&start, &ReadLimit::All).await?;
//!     source.read(&start, &end).await
//! });
//! assert_eq!(rows.unwrap()[0].num_rows(), 3);
//! ```

use std::fmt::Debug;
use std::sync::Arc;

use arrow_schema::SchemaRef;

use crate::command::ConnectorCommand;
use crate::connector::{
    ConnectorContext, PreparedSink, PreparedSource, SinkFactory, SourceFactory,
};
use crate::description::SourceDescription;
use crate::error::Result;
use crate::options::{OptionSpec, Options, ParsedOptions};
use crate::sink::Sink;
use crate::source::Source;
use crate::state::{StateReport, StateRequest};
use crate::stream_binding::StreamBinding;

/// A source connector, typed. Implement this; [`SourceFactory`] comes with it.
pub trait SourceConnector: Send + Sync + Debug + Clone + 'static {
    /// The parsed configuration of one source.
    type Config: Send + Sync + Debug + 'static;

    /// The connector name used in pipeline files.
    fn name(&self) -> &str;

    /// Every option the connector accepts, each declared once.
    fn options(&self) -> Vec<OptionSpec>;

    /// Turns validated options into the config: conflicting options and options that would be
    /// ignored are refused here (`CONFLICTING_OPTIONS` naming both). No I/O, no secret resolved.
    fn parse(&self, options: &ParsedOptions) -> Result<Self::Config>;

    /// What a source with this config reads.
    fn describe(&self, config: &Self::Config) -> SourceDescription;

    /// The schema a source with this config produces, when the config alone fixes it (Kafka's
    /// and Kinesis's record schema, a files source given `schema`); `Ok(None)` (the default)
    /// when only building the source can tell (an inferred schema). No I/O. `tributary check`
    /// plans the pipeline's stages and SQL against it, as `run` does.
    fn schema(&self, config: &Self::Config) -> Result<Option<SchemaRef>> {
        let _ = config;
        Ok(None)
    }

    /// Builds the source: resolves secrets, opens what it needs.
    fn build(&self, config: Self::Config, context: &ConnectorContext) -> Result<Box<dyn Source>>;

    /// Describes the connector's own state in a checkpoint (see [`SourceFactory::describe_state`]).
    fn describe_state(&self, request: &StateRequest<'_>) -> Result<Option<StateReport>> {
        let _ = request;
        Ok(None)
    }

    /// Checks the connector's own state against the logs (see [`SourceFactory::verify_state`]).
    fn verify_state(&self, request: &StateRequest<'_>) -> Result<()> {
        let _ = request;
        Ok(())
    }

    /// How this connector backs a named stream (see [`SourceFactory::stream_binding`]).
    fn stream_binding(&self) -> Option<Arc<dyn StreamBinding>> {
        None
    }

    /// The connector's administrative subcommands (see [`SourceFactory::commands`]).
    fn commands(&self) -> Vec<Arc<dyn ConnectorCommand>> {
        Vec::new()
    }
}

/// A sink connector, typed. Implement this; [`SinkFactory`] comes with it.
pub trait SinkConnector: Send + Sync + Debug + Clone + 'static {
    /// The parsed configuration of one sink.
    type Config: Send + Sync + Debug + 'static;

    /// The connector name used in pipeline files.
    fn name(&self) -> &str;

    /// Every option the connector accepts, each declared once.
    fn options(&self) -> Vec<OptionSpec>;

    /// Turns validated options into the config (no I/O, no secret resolved).
    fn parse(&self, options: &ParsedOptions) -> Result<Self::Config>;

    /// Builds the sink.
    fn build(&self, config: Self::Config, context: &ConnectorContext) -> Result<Box<dyn Sink>>;

    /// The output modes the sink honours ([`crate::OutputMode`]); `append` unless it says more.
    fn output_modes(&self) -> &'static [crate::OutputMode] {
        &[crate::OutputMode::Append]
    }
}

#[derive(Debug)]
struct Prepared<C: SourceConnector> {
    connector: C,
    config: C::Config,
    description: SourceDescription,
}

impl<C: SourceConnector> PreparedSource for Prepared<C> {
    fn description(&self) -> &SourceDescription {
        &self.description
    }

    fn schema(&self) -> Result<Option<SchemaRef>> {
        self.connector.schema(&self.config)
    }

    fn build(self: Box<Self>, context: &ConnectorContext) -> Result<Box<dyn Source>> {
        let Prepared {
            connector, config, ..
        } = *self;
        connector.build(config, context)
    }
}

impl<C: SourceConnector> SourceFactory for C {
    fn name(&self) -> &str {
        SourceConnector::name(self)
    }

    fn options(&self) -> Vec<OptionSpec> {
        SourceConnector::options(self)
    }

    fn prepare(&self, options: &Options) -> Result<Box<dyn PreparedSource>> {
        let parsed = OptionSpec::validate_all(
            &SourceConnector::options(self),
            options,
            SourceConnector::name(self),
        )?;
        let config = self.parse(&parsed)?;
        let description = self.describe(&config);
        Ok(Box::new(Prepared {
            connector: self.clone(),
            config,
            description,
        }))
    }

    fn describe_state(&self, request: &StateRequest<'_>) -> Result<Option<StateReport>> {
        SourceConnector::describe_state(self, request)
    }

    fn verify_state(&self, request: &StateRequest<'_>) -> Result<()> {
        SourceConnector::verify_state(self, request)
    }

    fn stream_binding(&self) -> Option<Arc<dyn StreamBinding>> {
        SourceConnector::stream_binding(self)
    }

    fn commands(&self) -> Vec<Arc<dyn ConnectorCommand>> {
        SourceConnector::commands(self)
    }
}

#[derive(Debug)]
struct PreparedSinkOf<C: SinkConnector> {
    connector: C,
    config: C::Config,
}

impl<C: SinkConnector> PreparedSink for PreparedSinkOf<C> {
    fn build(self: Box<Self>, context: &ConnectorContext) -> Result<Box<dyn Sink>> {
        let PreparedSinkOf { connector, config } = *self;
        connector.build(config, context)
    }
}

impl<C: SinkConnector> SinkFactory for C {
    fn name(&self) -> &str {
        SinkConnector::name(self)
    }

    fn options(&self) -> Vec<OptionSpec> {
        SinkConnector::options(self)
    }

    fn output_modes(&self) -> &'static [crate::OutputMode] {
        SinkConnector::output_modes(self)
    }

    fn prepare(&self, options: &Options) -> Result<Box<dyn PreparedSink>> {
        let parsed = OptionSpec::validate_all(
            &SinkConnector::options(self),
            options,
            SinkConnector::name(self),
        )?;
        let config = self.parse(&parsed)?;
        Ok(Box::new(PreparedSinkOf {
            connector: self.clone(),
            config,
        }))
    }
}
