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
    }
    Ok(())
}

fn run_command(catalog: Catalog, args: RunArgs) -> Result<()> {
    let mut secrets = ChainSecretStore::new().with(EnvSecretStore);
    if let Some(dir) = args.secrets_dir {
        secrets = secrets.with(FileSecretStore::new(dir));
    }
    let mut options = RunOptions::new(Arc::new(secrets));
    options.available_now = args.available_now;
    options.backfill_interval = std::time::Duration::from_secs(args.backfill_interval_secs.max(1));
    let address = args
        .http
        .as_deref()
        .map(|a| crate::monitor::parse_address(a, "--http"))
        .transpose()?;
    let monitor =
        address.map(|_| crate::monitor::Monitor::new(crate::monitor::DEFAULT_READY_WITHIN));
    let (quiet, watch) = (args.quiet, monitor.clone());
    let trigger = if args.available_now {
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
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(async move {
        let _server = match (monitor, address) {
            (Some(m), Some(addr)) => {
                let server = crate::monitor::serve(m, addr).await?;
                logging::notice(&format!("monitoring on http://{}/", server.addr()));
                Some(server)
            }
            _ => None,
        };
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
