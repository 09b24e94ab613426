//! `tributary streams ...`: the command-line face of [`super::catalog`] and [`super::runner`].
//!
//! ```text
//! tributary streams create orders.toml
//! tributary streams get main.sales.orders
//! tributary streams list --catalog main --schema sales --max-results 50 --include-schemas
//! tributary streams delete main.sales.orders          # says what it would delete
//! tributary streams delete main.sales.orders --yes
//! tributary streams run main.sales.orders [--available-now]
//! tributary streams run --all [--available-now]
//! tributary streams serve [--catalog main] [--poll-interval-secs 10]   # keeps every stream running
//! ```
//!
//! The catalog root is `--catalog-root` (env `TRIBUTARY_CATALOG`, default
//! `~/.local/share/tributary`); `--catalog` in `list` filters by catalog name, as in the issue.

use std::path::PathBuf;
use std::sync::Arc;

use clap::{Args, Subcommand, ValueEnum};
use tributary_sdk::{ChainSecretStore, EnvSecretStore, Error, ErrorCode, FileSecretStore, Result};

use super::catalog::{Catalog, ListRequest};
use super::runner::{run_all, run_stream, RunOptions};
use super::serve::{serve, ServeEvent, ServeOptions, StopReason};
use super::spec::StreamSpec;
use super::view::{describe, table};
use crate::engine::Shutdown;
use crate::logging;
use crate::progress::ProgressListener;

/// `tributary streams`: the catalog root and a subcommand.
#[derive(Debug, Args)]
pub struct StreamsArgs {
    /// The catalog root directory (entries, warehouse of ingestion tables, checkpoints).
    #[arg(long, value_name = "DIR", env = "TRIBUTARY_CATALOG", global = true)]
    pub catalog_root: Option<PathBuf>,
    /// What to do.
    #[command(subcommand)]
    pub command: StreamsCommand,
}

/// Output formats of get and list.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Format {
    /// A table (list) or pretty JSON (get).
    Table,
    /// JSON.
    Json,
}

/// The `streams` subcommands.
#[derive(Debug, Subcommand)]
pub enum StreamsCommand {
    /// Create a stream from a spec file (validated without connecting to anything); its
    /// ingestion pipeline starts at the source's position at this moment.
    ///
    /// Example: tributary streams create examples/streams/orders.toml
    Create {
        /// The stream spec (TOML).
        spec: PathBuf,
    },
    /// Show a stream: spec (secrets masked), table path, checkpoint, backfill state.
    Get {
        /// catalog.schema.stream
        name: String,
    },
    /// List streams by name (schemas left out unless --include-schemas).
    List {
        /// Only streams of this catalog.
        #[arg(long)]
        catalog: Option<String>,
        /// Only streams of this schema.
        #[arg(long)]
        schema: Option<String>,
        /// At most this many streams.
        #[arg(long)]
        max_results: Option<usize>,
        /// Include the key and payload schemas.
        #[arg(long)]
        include_schemas: bool,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
    /// Delete a stream, its pipeline checkpoint and its ingestion table (without --yes, only
    /// say what would be deleted).
    Delete {
        /// catalog.schema.stream
        name: String,
        /// Really delete.
        #[arg(long)]
        yes: bool,
    },
    /// Run a stream's ingestion pipeline (continuous until Ctrl-C; --available-now for
    /// scheduled runs), or every stream's with --all, one task each in this process.
    Run(RunArgs),
    /// Keep every stream of the catalog running until Ctrl-C or SIGTERM: start new streams,
    /// restart a failed one with back-off (1 s doubling to 5 min), stop deleted ones.
    ///
    /// Example: tributary streams serve --http 9090
    Serve(ServeArgs),
}

/// How served or run streams connect, report and check their backfill.
#[derive(Debug, Args)]
pub struct StreamRunFlags {
    /// Directory of file secrets: {{secrets/<scope>/<key>}} reads <dir>/<scope>/<key>.
    #[arg(long, value_name = "DIR", env = "TRIBUTARY_SECRETS_DIR")]
    pub secrets_dir: Option<PathBuf>,
    /// Seconds between backfill checks of a continuous run.
    #[arg(long, default_value_t = 60)]
    pub backfill_interval_secs: u64,
    /// No progress line on stderr.
    #[arg(long, short)]
    pub quiet: bool,
    /// Serve metrics, progress, health and a live page of every stream run on this address
    /// (host:port, or a port on loopback). Off by default.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<String>,
}

/// `streams serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Only the streams of this catalog.
    #[arg(long)]
    pub catalog: Option<String>,
    /// Only the streams of this schema.
    #[arg(long)]
    pub schema: Option<String>,
    /// Seconds between reads of the catalog (new and deleted streams are seen this late).
    #[arg(long, default_value_t = 10)]
    pub poll_interval_secs: u64,
    /// The longest wait, in seconds, before a failed stream is restarted.
    #[arg(long, default_value_t = 300)]
    pub max_backoff_secs: u64,
    /// Connection, progress and monitoring.
    #[command(flatten)]
    pub flags: StreamRunFlags,
}

/// `streams run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// catalog.schema.stream (or --all).
    #[arg(required_unless_present = "all", conflicts_with = "all")]
    pub name: Option<String>,
    /// Run every stream of the catalog.
    #[arg(long)]
    pub all: bool,
    /// Stop once the data available at start is in the table.
    #[arg(long)]
    pub available_now: bool,
    /// Connection, progress and monitoring.
    #[command(flatten)]
    pub flags: StreamRunFlags,
}

fn json_text(v: &impl serde::Serialize) -> Result<String> {
    serde_json::to_string_pretty(v)
        .map_err(|e| Error::new(ErrorCode::Internal, "cannot format JSON").with_cause(e))
}

/// Runs a `streams` subcommand.
pub fn dispatch(args: StreamsArgs) -> Result<()> {
    let catalog = Catalog::open(args.catalog_root.unwrap_or_else(Catalog::default_root))?;
    let registry = super::stream_registry();
    match args.command {
        StreamsCommand::Create { spec } => {
            let entry = catalog.create(StreamSpec::load(&spec)?)?;
            println!(
                "created stream {} (id {}), ingestion table {} at {}",
                entry.name,
                entry.id,
                entry.spec.ingestion.table,
                catalog.table_path(&entry.spec.table_name()?).display()
            );
        }
        StreamsCommand::Get { name } => {
            println!(
                "{}",
                json_text(&describe(&catalog.get(&name)?, &catalog, &registry))?
            );
        }
        StreamsCommand::List {
            catalog: c,
            schema,
            max_results,
            include_schemas,
            format,
        } => {
            let entries = catalog.list(&ListRequest {
                catalog: c,
                schema,
                max_results,
                include_schemas,
            })?;
            match format {
                Format::Table => print!("{}", table(&entries)),
                Format::Json => {
                    let all: Vec<_> = entries
                        .iter()
                        .map(|e| describe(e, &catalog, &registry))
                        .collect();
                    println!("{}", json_text(&all)?);
                }
            }
        }
        StreamsCommand::Delete { name, yes } => {
            let plan = catalog.delete(&name, yes)?;
            let verb = if plan.deleted {
                "deleted"
            } else {
                "would delete (run again with --yes)"
            };
            println!(
                "{verb}:\n  stream      {}\n  entry       {}\n  checkpoint  {}\n  table       {}",
                plan.stream,
                plan.entry.display(),
                plan.checkpoint.display(),
                plan.table.display()
            );
        }
        StreamsCommand::Run(run) => return run_command(catalog, run),
        StreamsCommand::Serve(serve) => return serve_command(catalog, serve),
    }
    Ok(())
}

/// The run options, monitor and address the flags ask for.
fn prepare(
    flags: StreamRunFlags,
    available_now: bool,
) -> Result<(
    RunOptions,
    Option<crate::monitor::Monitor>,
    Option<std::net::SocketAddr>,
)> {
    let mut secrets = ChainSecretStore::new().with(EnvSecretStore);
    if let Some(dir) = flags.secrets_dir {
        secrets = secrets.with(FileSecretStore::new(dir));
    }
    let mut options = RunOptions::new(Arc::new(secrets));
    options.available_now = available_now;
    options.backfill_interval = std::time::Duration::from_secs(flags.backfill_interval_secs.max(1));
    let address = flags
        .http
        .as_deref()
        .map(|a| crate::monitor::parse_address(a, "--http"))
        .transpose()?;
    let monitor =
        address.map(|_| crate::monitor::Monitor::new(crate::monitor::DEFAULT_READY_WITHIN));
    let (quiet, watch) = (flags.quiet, monitor.clone());
    let trigger = if available_now {
        "availableNow"
    } else {
        "continuous"
    };
    if !quiet || watch.is_some() {
        options.listeners = Some(Arc::new(move |name: &str| {
            let mut listeners: Vec<Box<dyn ProgressListener>> = Vec::new();
            if !quiet {
                listeners.push(logging::progress_listener());
            }
            if let Some(m) = &watch {
                listeners.push(m.listener(name, trigger));
            }
            listeners
        }));
    }
    Ok((options, monitor, address))
}

/// Starts the monitoring server when asked.
async fn monitoring(
    monitor: Option<crate::monitor::Monitor>,
    address: Option<std::net::SocketAddr>,
) -> Result<Option<crate::monitor::Server>> {
    match (monitor, address) {
        (Some(m), Some(addr)) => {
            let server = crate::monitor::serve(m, addr).await?;
            logging::notice(&format!("monitoring on http://{}/", server.addr()));
            Ok(Some(server))
        }
        _ => Ok(None),
    }
}

fn serve_command(catalog: Catalog, args: ServeArgs) -> Result<()> {
    let (run, monitor, address) = prepare(args.flags, false)?;
    let mut options = ServeOptions::new(run);
    options.filter = ListRequest {
        catalog: args.catalog,
        schema: args.schema,
        ..Default::default()
    };
    options.poll_interval = std::time::Duration::from_secs(args.poll_interval_secs.max(1));
    options.backoff_max = std::time::Duration::from_secs(args.max_backoff_secs.max(1));
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(async move {
        let _server = monitoring(monitor, address).await?;
        let stop = Shutdown::default();
        stop.on_signals("stopping every stream after its current batch");
        logging::notice(&format!(
            "serving the streams of {} (catalog read every {} s)",
            catalog.root().display(),
            options.poll_interval.as_secs()
        ));
        let summary = serve(&catalog, &options, stop, log_event).await?;
        let failures: u32 = summary.failures.values().sum();
        logging::notice(&format!(
            "served {} stream(s); {failures} failed run(s) restarted",
            summary.starts.len()
        ));
        Ok(())
    })
}

/// One line per serve transition.
fn log_event(e: &ServeEvent) {
    match e {
        ServeEvent::Started { stream, attempt: 0 } => {
            logging::notice(&format!("{stream}: started"))
        }
        ServeEvent::Started { stream, attempt } => {
            logging::notice(&format!("{stream}: restarted (attempt {attempt})"))
        }
        ServeEvent::Failed {
            stream,
            error,
            retry_in,
            attempt,
        } => logging::error_line(&format!(
            "{stream}: failed (restart {attempt} in {} s): {error}",
            retry_in.as_secs_f64()
        )),
        ServeEvent::Stopped {
            stream,
            reason,
            rows,
            leftovers,
        } => {
            let why = match reason {
                StopReason::Deleted => "deleted from the catalog",
                StopReason::Replaced => "replaced by a new stream of the same name",
                StopReason::Shutdown => "serve is stopping",
            };
            let rows = rows.map(|r| format!(", {r} rows")).unwrap_or_default();
            logging::notice(&format!("{stream}: stopped ({why}{rows})"));
            if !leftovers.is_empty() {
                let paths: Vec<String> =
                    leftovers.iter().map(|p| p.display().to_string()).collect();
                logging::error_line(&format!(
                    "{stream}: its last batch wrote after the delete; remove by hand: {}",
                    paths.join(", ")
                ));
            }
        }
        ServeEvent::CatalogError { error } => logging::error_line(&format!(
            "cannot read the catalog (running streams kept): {error}"
        )),
    }
}

fn run_command(catalog: Catalog, args: RunArgs) -> Result<()> {
    let (options, monitor, address) = prepare(args.flags, args.available_now)?;
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(async move {
        let _server = monitoring(monitor, address).await?;
        let stop = Shutdown::default();
        stop.on_signals("stopping after the current batches");
        let results = match args.name {
            Some(name) => {
                let s = run_stream(&catalog, &name, &options, stop).await?;
                vec![(name, Ok(s))]
            }
            None => run_all(&catalog, &ListRequest::default(), &options, stop).await?,
        };
        let mut failed = Vec::new();
        for (name, r) in results {
            match r {
                Ok(s) => logging::notice(&format!(
                    "{name}: {} rows in {} batches; backfill {}",
                    s.run.rows,
                    s.run.batches,
                    serde_json::to_value(s.backfill.state)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_string))
                        .unwrap_or_default()
                )),
                Err(e) => {
                    logging::error_line(&format!("{name}: error: {e}"));
                    failed.push(name);
                }
            }
        }
        if failed.is_empty() {
            Ok(())
        } else {
            Err(Error::new(
                ErrorCode::Internal,
                format!("streams failed: {}", failed.join(", ")),
            ))
        }
    })
}
