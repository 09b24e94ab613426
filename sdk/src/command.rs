//! Administrative subcommands a connector offers the command line.
//!
//! Some systems need upkeep outside a pipeline: listing or deregistering Kinesis enhanced
//! fan-out consumers, for instance. The host names no connector, so a connector publishes its
//! subcommands through [`crate::SourceFactory::commands`] and the command line runs them as
//! `tributary connector <connector> <command> [args...]`. The connector parses its own
//! arguments and returns what to print.

use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;

use crate::error::Result;
use crate::secret::SecretStore;

/// One administrative subcommand of a connector.
#[async_trait]
pub trait ConnectorCommand: Send + Sync + Debug {
    /// The subcommand's name (`consumers`).
    fn name(&self) -> &str;

    /// One line for the command line's help.
    fn about(&self) -> &str;

    /// Usage text printed for `--help` or a wrong argument.
    fn usage(&self) -> String;

    /// Runs with the arguments that follow the subcommand's name and returns what to print.
    /// Secret references in options resolve through `secrets`; no secret is ever returned.
    async fn run(&self, args: &[String], secrets: Arc<dyn SecretStore>) -> Result<String>;
}
