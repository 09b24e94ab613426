//! The `tributary` command: run and check pipelines, inspect checkpoints.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand, ValueEnum};
use tributary_runtime::checkpoint::Checkpoint;
use tributary_runtime::conformance;
use tributary_runtime::engine::{self, Pipeline};
use tributary_runtime::logging::{self, LogFormat};
use tributary_runtime::monitor;
use tributary_runtime::pipeline::PipelineSpec;
use tributary_runtime::plugin;
use tributary_runtime::progress::JsonLinesListener;
use tributary_runtime::registry::Registry;
use tributary_runtime::state;
use tributary_runtime::verify;
use tributary_sdk::{ChainSecretStore, EnvSecretStore, Error, FileSecretStore};

#[derive(Parser)]
#[command(
    name = "tributary",
    version,
    about = "Run streaming ingestion pipelines (files, Kafka, Kinesis) with exactly-once checkpoints."
)]
struct Cli {
    /// Log line format on stderr: text, or json (one JSON object per line with the pipeline
    /// name and batch id of the span it was logged in; progress lines and the summary become
    /// log lines too). The filter is TRIBUTARY_LOG, or RUST_LOG when that is unset (default warn).
    #[arg(
        long,
        global = true,
        value_enum,
        default_value_t = LogFormat::Text,
        env = "TRIBUTARY_LOG_FORMAT"
    )]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a pipeline until its trigger stops it (availableNow, once) or Ctrl-C.
    ///
    /// Example: tributary run examples/quickstart.toml --progress-json progress.jsonl
    Run {
        /// The pipeline file (TOML).
        pipeline: PathBuf,
        /// Also write one JSON progress event per batch to this file ("-" for stderr).
        #[arg(long, value_name = "FILE")]
        progress_json: Option<PathBuf>,
        /// Directory of file secrets: {{secrets/<scope>/<key>}} reads <dir>/<scope>/<key>.
        /// Scope "env" always reads environment variables.
        #[arg(long, value_name = "DIR", env = "TRIBUTARY_SECRETS_DIR")]
        secrets_dir: Option<PathBuf>,
        /// No progress line on stderr.
        #[arg(long, short)]
        quiet: bool,
        /// Serve metrics, progress, health and a live page on this address (host:port, or a
        /// port on loopback; overrides [monitoring] http). Off by default.
        #[arg(long, value_name = "ADDR")]
        http: Option<String>,
    },
    /// Print every option of the built-in connectors and stages (and of plugins in the plugin
    /// path): name, type, default, allowed values, sensitivity, doc.
    ///
    /// Example: tributary options kafka
    /// Example: tributary options --markdown > docs/options.md
    Options {
        /// One connector or stage only.
        connector: Option<String>,
        /// The tables as Markdown.
        #[arg(long)]
        markdown: bool,
        /// Plugin directories, searched before TRIBUTARY_PLUGIN_PATH.
        #[arg(long = "plugin-path", value_name = "DIR")]
        plugin_path: Vec<PathBuf>,
    },
    /// Validate a pipeline file and its connector options without connecting to anything.
    ///
    /// Example: tributary check examples/quickstart.toml
    /// Example: tributary check --explain examples/quickstart.toml
    Check {
        /// The pipeline file (TOML).
        pipeline: PathBuf,
        /// Also print every option of the pipeline's connectors and stages: name, type,
        /// default, allowed values, whether it is sensitive, and its doc (from the connectors'
        /// own declarations).
        #[arg(long)]
        explain: bool,
        /// With --explain: the tables as Markdown.
        #[arg(long, requires = "explain")]
        markdown: bool,
    },
    /// Run the conformance suite against a source or sink connector (built in or from a plugin) with a
    /// fixture that acts on the external system; print a table, write JSON and JUnit XML reports.
    ///
    /// Example: tributary conformance --connector files --fixture files --junit target/files.xml
    /// Example: tributary conformance --connector generator --plugin target/plugins/debug/libtributary_plugin_generator.so --fixture generator
    /// Example: tributary conformance --sink --connector parquet --fixture parquet
    Conformance {
        /// Connector name (a source; a sink with --sink).
        #[arg(long)]
        connector: String,
        /// The connector is a sink: run the sink suite (fixtures parquet, jsonlines, kafka).
        #[arg(long)]
        sink: bool,
        /// Load the connector from this plugin library instead of the built-in ones.
        #[arg(long, value_name = "FILE")]
        plugin: Option<PathBuf>,
        /// Fixture: files, generator, kafka (with TRIBUTARY_KAFKA_BOOTSTRAP set); for sinks
        /// parquet, jsonlines or kafka.
        #[arg(long)]
        fixture: String,
        /// Extra connector options laid over each case's options, as key=value.
        #[arg(long = "options", value_name = "KEY=VALUE", num_args = 1..)]
        options: Vec<String>,
        /// Run only these cases.
        #[arg(long = "case", value_name = "NAME")]
        cases: Vec<String>,
        /// Write the JSON report here.
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
        /// Write the JUnit XML report here.
        #[arg(long, value_name = "FILE")]
        junit: Option<PathBuf>,
    },
    /// List and inspect connector plugins (shared libraries built with the SDK's export macro).
    #[command(subcommand)]
    Plugins(PluginsCommand),
    /// Show what a checkpoint holds, as its source connector describes it: for the files
    /// source every discovered file with its batch and commit state (like Databricks'
    /// cloud_files_state); for a connector without state of its own, the offsets log.
    /// `files-state` is another name for it.
    ///
    /// Example: tributary state examples/out/checkpoint --format json
    #[command(alias = "files-state")]
    State {
        /// The checkpoint directory.
        checkpoint: PathBuf,
        /// Plugin directories (for a checkpoint of a plugin's connector), searched before
        /// TRIBUTARY_PLUGIN_PATH.
        #[arg(long = "plugin-path", value_name = "DIR")]
        plugin_path: Vec<PathBuf>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = OutputFormat::Table)]
        format: OutputFormat,
        /// The stateful operators' state instead (aggregations: groups, bytes, watermark).
        #[arg(long)]
        operators: bool,
    },
    /// Check a checkpoint for damage, as `run` does before it resumes.
    #[command(subcommand)]
    Checkpoint(CheckpointCommand),
    /// Named streams (catalog.schema.stream): create, get, list, delete and run their
    /// ingestion pipelines into Delta tables.
    ///
    /// Example: tributary streams create orders.toml && tributary streams run main.sales.orders
    Streams(tributary_runtime::streams::cli::StreamsArgs),
    /// Delta table maintenance by hand: compact small files, vacuum unreferenced ones, write a
    /// log checkpoint (what the Delta sink runs beside ingestion with
    /// delta.autoOptimize.autoCompact and autoVacuum).
    ///
    /// Example: tributary delta optimize /lake/orders --target-size 128mb
    #[cfg(feature = "delta")]
    #[command(subcommand)]
    Delta(tributary_runtime::delta_cli::DeltaCommand),
    /// A connector's administrative subcommands (listing or deregistering Kinesis enhanced
    /// fan-out consumers, tearing down file notification queues, ...). Without a command,
    /// lists the connector's commands.
    ///
    /// Example: tributary connector kinesis consumers list --streamName orders --option region=us-east-1
    Connector {
        /// The source connector (built in, or from the plugin path).
        connector: String,
        /// The subcommand, then its own arguments (`--help` prints its usage).
        #[arg(
            trailing_var_arg = true,
            allow_hyphen_values = true,
            value_name = "COMMAND [ARGS]"
        )]
        args: Vec<String>,
        /// Directory of file secrets: {{secrets/<scope>/<key>}} reads <dir>/<scope>/<key>.
        #[arg(long, value_name = "DIR", env = "TRIBUTARY_SECRETS_DIR")]
        secrets_dir: Option<PathBuf>,
    },
    /// Start an Apache Ballista scheduler for pipelines with `[engine] kind = "ballista"`:
    /// it splits each batch into tasks and places them on executors.
    ///
    /// Example: tributary scheduler --bind 127.0.0.1:50050
    #[cfg(feature = "ballista")]
    Scheduler {
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1:50050")]
        bind: std::net::SocketAddr,
        /// An executor silent this long is declared dead and its tasks run elsewhere.
        #[arg(long, default_value = "15s", value_parser = humantime::parse_duration)]
        executor_timeout: std::time::Duration,
        /// Attempts of one task before its batch fails.
        #[arg(long, default_value_t = 4)]
        task_max_failures: usize,
    },
    /// Start a Ballista executor that runs the tasks of distributed batches with the
    /// connectors built into this binary and the plugins of its plugin path.
    ///
    /// Example: tributary executor --scheduler df://127.0.0.1:50050 --id exec-1 --flight-port 50051 --grpc-port 50052
    #[cfg(feature = "ballista")]
    Executor {
        /// The scheduler, as in the pipeline's `[engine] scheduler`.
        #[arg(long)]
        scheduler: String,
        /// This executor's id in progress events (default: executor-<flight port>).
        #[arg(long)]
        id: Option<String>,
        /// Address to bind and advertise.
        #[arg(long, default_value = "127.0.0.1")]
        bind: std::net::IpAddr,
        /// Arrow Flight port (task results are fetched from it).
        #[arg(long, default_value_t = 50051)]
        flight_port: u16,
        /// gRPC port (tasks arrive on it).
        #[arg(long, default_value_t = 50052)]
        grpc_port: u16,
        /// Tasks run at once (default: the number of CPUs).
        #[arg(long)]
        slots: Option<usize>,
        /// Interval between heartbeats to the scheduler.
        #[arg(long, default_value = "3s", value_parser = humantime::parse_duration)]
        heartbeat: std::time::Duration,
        /// Plugin directories, searched before TRIBUTARY_PLUGIN_PATH.
        #[arg(long = "plugin-path", value_name = "DIR")]
        plugin_path: Vec<PathBuf>,
        /// Directory of file secrets: {{secrets/<scope>/<key>}} reads <dir>/<scope>/<key>.
        #[arg(long, value_name = "DIR", env = "TRIBUTARY_SECRETS_DIR")]
        secrets_dir: Option<PathBuf>,
        /// Where shuffle files go (default: a temporary directory).
        #[arg(long, value_name = "DIR")]
        work_dir: Option<PathBuf>,
        /// How long to try reaching the scheduler at start before exiting with an error.
        #[arg(long, default_value = "30s", value_parser = humantime::parse_duration)]
        connect_timeout: std::time::Duration,
    },
}

#[derive(Subcommand)]
enum CheckpointCommand {
    /// Check that the parts of a checkpoint agree: metadata.json, the offsets and commits logs
    /// (no hole, no rewritten id, each batch starting where the previous one ended), the
    /// source's own state against them and, with --pipeline, each sink's own record (its owner,
    /// its last batch). Exits non-zero naming every damaged part.
    ///
    /// Example: tributary checkpoint verify examples/out/checkpoint --pipeline examples/files-to-parquet.toml
    Verify {
        /// The checkpoint directory.
        checkpoint: PathBuf,
        /// The pipeline file writing this checkpoint: its sinks are checked too.
        #[arg(long, value_name = "FILE")]
        pipeline: Option<PathBuf>,
        /// Directory of file secrets (for the sinks' options, with --pipeline).
        #[arg(long = "secrets-dir", value_name = "DIR")]
        secrets_dir: Option<PathBuf>,
        /// Plugin directories (for a checkpoint of a plugin's connector), searched before
        /// TRIBUTARY_PLUGIN_PATH.
        #[arg(long = "plugin-path", value_name = "DIR")]
        plugin_path: Vec<PathBuf>,
    },
}

#[derive(Subcommand)]
enum PluginsCommand {
    /// List the plugins found in the plugin path: file, name, version, ABI and connectors.
    ///
    /// Example: TRIBUTARY_PLUGIN_PATH=target/plugins/debug tributary plugins list
    List {
        /// Plugin directories, searched before TRIBUTARY_PLUGIN_PATH.
        #[arg(long = "plugin-path", value_name = "DIR")]
        plugin_path: Vec<PathBuf>,
    },
    /// Show one plugin's manifest and the options of each of its connectors.
    ///
    /// Example: tributary plugins inspect target/plugins/debug/libtributary_plugin_generator.so
    Inspect {
        /// The plugin library file.
        file: PathBuf,
        /// Output format.
        #[arg(long, value_enum, default_value_t = OutputFormat::Table)]
        format: OutputFormat,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum OutputFormat {
    Table,
    Json,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Err(e) = logging::init(cli.log_format) {
        eprintln!("error: {e}");
        return ExitCode::FAILURE;
    }
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            logging::error_line(&format!("error: {e}"));
            ExitCode::FAILURE
        }
    }
}

/// `tributary connector <name> [command args...]`: the connector parses its own arguments.
fn connector_command(
    connector: &str,
    args: &[String],
    secrets_dir: Option<PathBuf>,
) -> Result<(), Error> {
    let registry = Registry::with_plugins(&[])?;
    let commands = registry.source(connector)?.commands();
    let Some((name, rest)) = args.split_first() else {
        if commands.is_empty() {
            println!("connector '{connector}' has no commands");
        }
        for c in &commands {
            println!("{:<16} {}", c.name(), c.about());
        }
        return Ok(());
    };
    let Some(command) = commands.iter().find(|c| c.name() == name) else {
        let known: Vec<&str> = commands.iter().map(|c| c.name()).collect();
        return Err(Error::new(
            tributary_sdk::ErrorCode::InvalidOption,
            format!(
                "connector '{connector}' has no command '{name}'; its commands: {}",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            ),
        ));
    };
    if rest.iter().any(|a| a == "--help" || a == "-h") {
        print!("{}", command.usage());
        return Ok(());
    }
    let mut secrets = ChainSecretStore::new().with(EnvSecretStore);
    if let Some(dir) = secrets_dir {
        secrets = secrets.with(FileSecretStore::new(dir));
    }
    let rt = tokio::runtime::Runtime::new()?;
    let out = rt.block_on(command.run(rest, Arc::new(secrets)))?;
    print!("{out}");
    if !out.is_empty() && !out.ends_with('\n') {
        println!();
    }
    Ok(())
}

fn run(cli: Cli) -> Result<(), Error> {
    match cli.command {
        #[cfg(feature = "ballista")]
        Command::Scheduler {
            bind,
            executor_timeout,
            task_max_failures,
        } => {
            let mut options = tributary_ballista::SchedulerOptions::new(bind);
            options.executor_timeout = executor_timeout;
            options.task_max_failures = task_max_failures;
            let rt = tokio::runtime::Runtime::new()?;
            rt.block_on(tributary_ballista::run_scheduler(options))
        }
        #[cfg(feature = "ballista")]
        Command::Executor {
            scheduler,
            id,
            bind,
            flight_port,
            grpc_port,
            slots,
            heartbeat,
            plugin_path,
            secrets_dir,
            work_dir,
            connect_timeout,
        } => {
            let (scheduler_host, scheduler_port) =
                tributary_ballista::scheduler_address(&scheduler)?;
            let id = id.unwrap_or_else(|| format!("executor-{flight_port}"));
            let mut secrets = ChainSecretStore::new().with(EnvSecretStore);
            if let Some(dir) = secrets_dir {
                secrets = secrets.with(FileSecretStore::new(dir));
            }
            let registry = Arc::new(Registry::with_plugins(&plugin_path)?);
            let handler = Arc::new(
                tributary_runtime::distributed::handler::RuntimeTaskHandler::new(
                    &id,
                    registry,
                    Arc::new(secrets),
                ),
            );
            let options = tributary_ballista::ExecutorOptions {
                id,
                host: bind,
                flight_port,
                grpc_port,
                scheduler_host,
                scheduler_port,
                slots: slots
                    .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get())),
                heartbeat,
                work_dir: work_dir.map(|d| d.display().to_string()),
                connect_timeout,
            };
            let rt = tokio::runtime::Runtime::new()?;
            rt.block_on(tributary_ballista::run_executor(options, handler))
        }
        Command::Streams(args) => tributary_runtime::streams::cli::dispatch(args),
        #[cfg(feature = "delta")]
        Command::Delta(command) => tributary_runtime::delta_cli::run(command),
        Command::Connector {
            connector,
            args,
            secrets_dir,
        } => connector_command(&connector, &args, secrets_dir),
        Command::Run {
            pipeline,
            progress_json,
            secrets_dir,
            quiet,
            http,
        } => {
            let spec = PipelineSpec::load(&pipeline)?;
            let address = match &http {
                Some(a) => Some(monitor::parse_address(a, "--http")?),
                None => spec.monitoring.http,
            };
            let mut secrets = ChainSecretStore::new().with(EnvSecretStore);
            if let Some(dir) = secrets_dir {
                secrets = secrets.with(FileSecretStore::new(dir));
            }
            let rt = tokio::runtime::Runtime::new()?;
            rt.block_on(async move {
                let registry = Registry::with_plugins(&spec.plugin_path)?;
                let mut p = Pipeline::build(&spec, &registry, Arc::new(secrets))?;
                if !quiet {
                    p.add_listener(logging::progress_listener());
                }
                if let Some(path) = progress_json {
                    let out: Box<dyn std::io::Write + Send> = if path.as_os_str() == "-" {
                        Box::new(std::io::stderr())
                    } else {
                        Box::new(std::fs::File::create(&path).map_err(|e| {
                            Error::new(
                                tributary_sdk::ErrorCode::Io,
                                format!(
                                    "--progress-json {}: the file cannot be created",
                                    path.display()
                                ),
                            )
                            .with_context("path", path.display())
                            .with_cause(e)
                        })?)
                    };
                    p.add_listener(Box::new(JsonLinesListener::new(out)));
                }
                let _server = match address {
                    Some(addr) => {
                        let m = monitor::Monitor::new(spec.monitoring.ready_within);
                        p.add_listener(m.listener(&spec.name, &spec.trigger.to_string()));
                        let server = monitor::serve(m, addr).await?;
                        logging::notice(&format!("monitoring on http://{}/", server.addr()));
                        Some(server)
                    }
                    None => None,
                };
                p.shutdown_handle()
                    .on_signals("stopping after the current batch");
                let summary = p.run().await?;
                if !quiet {
                    logging::notice(&format!(
                        "{} rows in {} batches ({}); last batch {}",
                        summary.rows,
                        summary.batches,
                        match p.delivery() {
                            tributary_sdk::Delivery::ExactlyOnce => "exactly-once",
                            tributary_sdk::Delivery::AtLeastOnce => "at-least-once",
                        },
                        summary
                            .last_batch_id
                            .map(|b| b.to_string())
                            .unwrap_or_else(|| "-".into())
                    ));
                }
                Ok(())
            })
        }
        Command::Options {
            connector,
            markdown,
            plugin_path,
        } => {
            let registry = Registry::with_plugins(&plugin_path)?;
            print!(
                "{}",
                tributary_runtime::options_reference::render(
                    &registry,
                    connector.as_deref(),
                    markdown
                )?
            );
            Ok(())
        }
        Command::Check {
            pipeline,
            explain,
            markdown,
        } => {
            let spec = PipelineSpec::load(&pipeline)?;
            let registry = Registry::with_plugins(&spec.plugin_path)?;
            let description = engine::validate(&spec, &registry)?;
            engine::check_checkpoint(&spec, &registry, &description.identity)?;
            // The stages opened against the source's schema, as `run` opens them, when the
            // options fix that schema (no I/O).
            let plan = tokio::runtime::Runtime::new()?.block_on(engine::plan(&spec, &registry))?;
            println!(
                "{}: ok ({} -> {}, trigger {})",
                pipeline.display(),
                spec.source,
                spec.sinks
                    .iter()
                    .map(|(n, _)| n.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                spec.trigger
            );
            if !spec.stages.is_empty() {
                match plan {
                    engine::Plan::Planned(schema) => println!(
                        "  planned: the sinks receive {} column(s): {}",
                        schema.fields().len(),
                        schema
                            .fields()
                            .iter()
                            .map(|f| format!("{} {}", f.name(), f.data_type()))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                    engine::Plan::Stopped(why) => {
                        println!("  not planned: {why}; run plans the stages when it starts")
                    }
                }
            }
            if explain {
                print!("{}", explain_options(&spec, &registry, markdown)?);
            }
            Ok(())
        }
        Command::Conformance {
            connector,
            sink,
            plugin,
            fixture,
            options,
            cases,
            json,
            junit,
        } => {
            let req = conformance::ConformanceRequest {
                connector,
                sink,
                plugin,
                fixture,
                options: conformance::parse_pairs(&options)?,
                only: cases,
            };
            let rt = tokio::runtime::Runtime::new()?;
            let report = rt.block_on(conformance::run(&req))?;
            print!("{}", report.to_table());
            if let Some(path) = json {
                let text = serde_json::to_string_pretty(&report.to_json()).map_err(|e| {
                    Error::new(tributary_sdk::ErrorCode::Internal, "JSON report").with_cause(e)
                })?;
                std::fs::write(&path, text)?;
            }
            if let Some(path) = junit {
                std::fs::write(&path, report.to_junit_xml())?;
            }
            if report.is_success() {
                Ok(())
            } else {
                Err(Error::new(
                    tributary_sdk::ErrorCode::Plugin,
                    format!("conformance failed: {}", report.summary()),
                ))
            }
        }
        Command::Plugins(PluginsCommand::List { plugin_path }) => {
            let scanned = plugin::scan(&plugin::search_path(&plugin_path))?;
            print!("{}", plugin::plugins_list_table(&scanned));
            Ok(())
        }
        Command::Plugins(PluginsCommand::Inspect { file, format }) => {
            let loaded = plugin::load(&file)?;
            match format {
                OutputFormat::Table => print!("{}", plugin::inspect(&loaded)),
                OutputFormat::Json => println!("{}", plugin::inspect_json(&loaded)),
            }
            Ok(())
        }
        Command::Checkpoint(CheckpointCommand::Verify {
            checkpoint,
            pipeline,
            secrets_dir,
            plugin_path,
        }) => {
            let spec = pipeline.as_deref().map(PipelineSpec::load).transpose()?;
            let mut paths = plugin_path;
            if let Some(s) = &spec {
                paths.extend(s.plugin_path.iter().cloned());
            }
            let registry = Registry::with_plugins(&paths)?;
            let mut secrets = ChainSecretStore::new().with(EnvSecretStore);
            if let Some(dir) = secrets_dir {
                secrets = secrets.with(FileSecretStore::new(dir));
            }
            let secrets: Arc<dyn tributary_sdk::SecretStore> = Arc::new(secrets);
            let rt = tokio::runtime::Runtime::new()?;
            let verified = rt.block_on(verify::verify_checkpoint(
                &checkpoint,
                &registry,
                spec.as_ref().map(|s| (s, secrets.clone())),
            ))?;
            println!("{}: {verified}", checkpoint.display());
            Ok(())
        }
        Command::State {
            checkpoint,
            plugin_path,
            format,
            operators,
        } => {
            let ck = Checkpoint::open_existing(&checkpoint)?;
            let report = if operators {
                operators_report(&ck)?
            } else {
                state::state_report(&ck, &Registry::with_plugins(&plugin_path)?)?
            };
            match format {
                OutputFormat::Table => print!("{}", report.to_table()),
                OutputFormat::Json => println!(
                    "{}",
                    serde_json::to_string_pretty(&report.to_json()).map_err(|e| Error::new(
                        tributary_sdk::ErrorCode::Internal,
                        "cannot format the checkpoint state"
                    )
                    .with_cause(e))?
                ),
            }
            Ok(())
        }
    }
}

/// `state --operators`.
#[cfg(feature = "sql")]
fn operators_report(ck: &Checkpoint) -> tributary_sdk::Result<tributary_sdk::StateReport> {
    state::operators_report(ck)
}

/// `state --operators` in a build without SQL: no stateful operators exist.
#[cfg(not(feature = "sql"))]
fn operators_report(_ck: &Checkpoint) -> tributary_sdk::Result<tributary_sdk::StateReport> {
    Err(Error::new(
        tributary_sdk::ErrorCode::InvalidPipeline,
        "--operators needs a build with SQL (feature sql): stateful operators are SQL",
    ))
}

/// `check --explain`: the option tables of the pipeline's source, stages and sinks, from their
/// declarations.
fn explain_options(
    spec: &PipelineSpec,
    registry: &Registry,
    markdown: bool,
) -> tributary_sdk::Result<String> {
    use tributary_sdk::options::table::{render_markdown, render_text};
    let render = |specs: &[tributary_sdk::OptionSpec]| {
        if markdown {
            render_markdown(specs)
        } else {
            render_text(specs)
        }
    };
    let mut out = String::new();
    out.push_str(&format!("\nsource {}\n", spec.source));
    out.push_str(&render(&registry.source(&spec.source)?.options()));
    for stage in &spec.stages {
        if stage.options().is_some() {
            out.push_str(&format!("\nstage {}\n", stage.name()));
            out.push_str(&render(&registry.stage(stage.name())?.options()));
        }
    }
    for (name, _) in &spec.sinks {
        out.push_str(&format!("\nsink {name}\n"));
        out.push_str(&render(&registry.sink(name)?.options()));
    }
    Ok(out)
}
