//! `tributary connector kinesis consumers ...`: the enhanced fan-out consumer manager as an
//! administrative subcommand ([`ConnectorCommand`]).
//!
//! ```text
//! consumers list       --streamName S | --streamARN A  [connection options]
//! consumers list       --streamName S --orphaned [--consumerNamePrefix P] [--owner PIPELINE_ID ...]
//! consumers register   --streamName S --consumerName N
//! consumers deregister --streamName S --consumerName N
//! ```
//!
//! Connection settings use the source's option names and specs (`--region`, `--endpoint`,
//! `--awsAccessKey`, `--awsSecretKey` as a `{{secrets/scope/key}}` reference, `--roleArn`,
//! `--tls.truststore.location`, ...), given as `--name value` or `--option name=value`, so an
//! unknown option or a bad value is the usual error. Output: one JSON object per line.

use std::sync::Arc;

use async_trait::async_trait;
use tributary_sdk::options::conflicting;
use tributary_sdk::{
    ConnectorCommand, Error, ErrorCode, OptionSpec, Options, ParsedOptions, Result, SecretStore,
};

use crate::config::{
    connection_option_specs, source_option_specs, validate_consumer_name, ConnectionSettings,
};
use crate::efo::consumers::{consumers_command, ConsumerInfo, ConsumersCommand};

/// Source options a consumers command also takes (besides the connection options).
const COMMAND_OPTIONS: [&str; 4] = [
    "streamName",
    "streamARN",
    "consumerName",
    "consumerNamePrefix",
];

const USAGE: &str = "\
usage: tributary connector kinesis consumers <list|register|deregister> (--streamName S | --streamARN A) [options]
  list                          the stream's enhanced fan-out consumers
  list --orphaned               consumers named with --consumerNamePrefix (default tributary_) that no
                                pipeline given with --owner PIPELINE_ID (repeatable) owns: the leak report
  register --consumerName N     register N (or reuse it) and wait until it is ACTIVE
  deregister --consumerName N   deregister N and wait until it is gone
connection options (the source's names): --region R --endpoint URL --awsAccessKey K
  --awsSecretKey {{secrets/scope/key}} --roleArn ARN --roleExternalId ID --roleSessionName S
  --serviceCredential PROFILE --tls.truststore.location PEM; or --option name=value
output: one JSON object per line";

/// The `consumers` subcommand.
#[derive(Debug, Clone, Copy, Default)]
pub struct ConsumersCommandLine;

/// A parsed command line.
#[derive(Debug)]
struct Invocation {
    settings: ConnectionSettings,
    stream: String,
    command: ConsumersCommand,
}

fn usage_error(message: impl std::fmt::Display) -> Error {
    Error::new(ErrorCode::InvalidOption, format!("{message}\n{USAGE}"))
}

fn specs() -> Vec<OptionSpec> {
    let mut specs = connection_option_specs();
    specs.extend(
        source_option_specs()
            .into_iter()
            .filter(|s| COMMAND_OPTIONS.contains(&s.name.as_str())),
    );
    specs
}

fn parse(args: &[String]) -> Result<Invocation> {
    let Some((action, rest)) = args.split_first() else {
        return Err(usage_error("missing action"));
    };
    let mut options = Options::new();
    let mut orphaned = false;
    let mut owners = Vec::new();
    let mut it = rest.iter();
    while let Some(arg) = it.next() {
        let Some(flag) = arg.strip_prefix("--") else {
            return Err(usage_error(format!("unexpected argument '{arg}'")));
        };
        let (name, inline) = match flag.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (flag, None),
        };
        if name == "orphaned" {
            orphaned = true;
            continue;
        }
        let value = match inline {
            Some(v) => v,
            None => it
                .next()
                .cloned()
                .ok_or_else(|| usage_error(format!("'--{name}' needs a value")))?,
        };
        match name {
            "owner" => owners.push(value),
            "option" => {
                let Some((k, v)) = value.split_once('=') else {
                    return Err(usage_error(format!("'--option {value}' is not name=value")));
                };
                options.set(k, v);
            }
            _ => {
                options.set(name, value);
            }
        }
    }
    let parsed = OptionSpec::validate_all(&specs(), &options, "kinesis")?;
    let settings = ConnectionSettings::parse(&parsed)?;
    let stream = stream_of(&parsed)?;
    let consumer_name = || -> Result<String> {
        let name = parsed
            .string("consumerName")?
            .ok_or_else(|| usage_error(format!("'{action}' needs --consumerName")))?;
        validate_consumer_name("consumerName", &name)?;
        Ok(name)
    };
    let command = match action.as_str() {
        "list" => {
            parsed.refuse_ignored(
                "consumerName",
                false,
                "list",
                "is not used by 'list' (use --consumerNamePrefix with --orphaned)",
            )?;
            parsed.refuse_ignored(
                "consumerNamePrefix",
                orphaned,
                "--orphaned",
                "is only used with --orphaned",
            )?;
            if !orphaned && !owners.is_empty() {
                return Err(conflicting(
                    "owner",
                    "--orphaned",
                    "is only used with --orphaned",
                ));
            }
            ConsumersCommand::List {
                orphaned: if orphaned {
                    Some((parsed.required_string("consumerNamePrefix")?, owners))
                } else {
                    None
                },
            }
        }
        "register" | "deregister" => {
            if orphaned || !owners.is_empty() {
                return Err(usage_error(format!(
                    "'--orphaned' and '--owner' are only used with 'list', not '{action}'"
                )));
            }
            parsed.refuse_ignored(
                "consumerNamePrefix",
                false,
                action,
                "is only used by 'list --orphaned'",
            )?;
            let name = consumer_name()?;
            if action == "register" {
                ConsumersCommand::Register { name }
            } else {
                ConsumersCommand::Deregister { name }
            }
        }
        other => {
            return Err(usage_error(format!(
                "unknown action '{other}' (expected list, register or deregister)"
            )))
        }
    };
    Ok(Invocation {
        settings,
        stream,
        command,
    })
}

/// Exactly one stream, by name or ARN.
fn stream_of(parsed: &ParsedOptions) -> Result<String> {
    let name = parsed.string("streamName")?.filter(|s| !s.is_empty());
    let arn = parsed.string("streamARN")?.filter(|s| !s.is_empty());
    let stream = match (name, arn) {
        (Some(_), Some(_)) => {
            return Err(conflicting(
                "streamARN",
                "streamName",
                "cannot be combined with 'streamName' (give the stream one way)",
            ))
        }
        (Some(n), None) => n,
        (None, Some(a)) => a,
        (None, None) => return Err(usage_error("missing --streamName or --streamARN")),
    };
    if stream.contains(',') {
        return Err(usage_error(format!(
            "one stream per command, got '{stream}'"
        )));
    }
    Ok(stream)
}

fn line(stream: &str, c: &ConsumerInfo, extra: Option<(&str, serde_json::Value)>) -> String {
    let mut v = serde_json::json!({
        "stream": stream,
        "consumerName": c.name,
        "consumerARN": c.arn,
        "consumerStatus": c.status,
        "consumerCreationTimestampMs": c.created_ms,
    });
    if let (Some((k, x)), Some(obj)) = (extra, v.as_object_mut()) {
        obj.insert(k.to_string(), x);
    }
    v.to_string()
}

#[async_trait]
impl ConnectorCommand for ConsumersCommandLine {
    fn name(&self) -> &str {
        "consumers"
    }

    fn about(&self) -> &str {
        "List, register or deregister enhanced fan-out consumers; list the leaked ones (--orphaned)"
    }

    fn usage(&self) -> String {
        USAGE.to_string()
    }

    async fn run(&self, args: &[String], secrets: Arc<dyn SecretStore>) -> Result<String> {
        if args.iter().any(|a| a == "--help" || a == "-h") {
            return Ok(USAGE.to_string());
        }
        let inv = parse(args)?;
        let deregister = match &inv.command {
            ConsumersCommand::Deregister { name } => Some(name.clone()),
            _ => None,
        };
        let out =
            consumers_command(&inv.settings, secrets.as_ref(), &inv.stream, inv.command).await?;
        let lines: Vec<String> = match deregister {
            Some(name) if out.is_empty() => vec![serde_json::json!({
                "stream": inv.stream,
                "consumerName": name,
                "deregistered": false,
                "reason": "no such consumer",
            })
            .to_string()],
            Some(_) => out
                .iter()
                .map(|c| line(&inv.stream, c, Some(("deregistered", true.into()))))
                .collect(),
            None => out.iter().map(|c| line(&inv.stream, c, None)).collect(),
        };
        Ok(lines.join("\n"))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn command_lines_parse_with_the_source_option_specs() {
        let inv = parse(&args(
            "register --streamName ev --consumerName c1 --region eu-west-1",
        ))
        .unwrap();
        assert_eq!(inv.stream, "ev");
        assert_eq!(
            inv.command,
            ConsumersCommand::Register { name: "c1".into() }
        );
        assert_eq!(inv.settings.region.as_deref(), Some("eu-west-1"));
        let inv = parse(&args(
            "list --streamARN arn:aws:kinesis:us-east-1:1:stream/ev --orphaned --consumerNamePrefix p_ --owner a --option endpoint=http://127.0.0.1:1",
        ))
        .unwrap();
        assert_eq!(
            inv.command,
            ConsumersCommand::List {
                orphaned: Some(("p_".into(), vec!["a".into()]))
            }
        );
        assert_eq!(inv.settings.endpoint.as_deref(), Some("http://127.0.0.1:1"));
        let inv = parse(&args("list --streamName ev --orphaned")).unwrap();
        assert_eq!(
            inv.command,
            ConsumersCommand::List {
                orphaned: Some(("tributary_".into(), vec![]))
            }
        );
    }

    #[test]
    fn bad_arguments_are_the_usual_errors_or_usage() {
        let code = |s: &str| parse(&args(s)).unwrap_err().code();
        let e = parse(&args("list --streamNme ev")).unwrap_err();
        assert_eq!(e.code(), ErrorCode::UnknownOption);
        assert!(e.to_string().contains("did you mean 'streamName'"), "{e}");
        assert_eq!(
            code("register --streamName ev --consumerName bad/name"),
            ErrorCode::InvalidOption
        );
        assert_eq!(
            code("list --streamName a --streamARN arn:x"),
            ErrorCode::ConflictingOptions
        );
        assert_eq!(
            code("list --streamName a --consumerNamePrefix p"),
            ErrorCode::ConflictingOptions
        );
        assert_eq!(
            code("list --streamName a --awsAccessKey k"),
            ErrorCode::MissingOption
        );
        for bad in [
            "",
            "frobnicate --streamName a",
            "register --streamName a",
            "list",
            "list ev",
            "list --streamName",
        ] {
            let e = parse(&args(bad)).unwrap_err();
            assert!(
                e.to_string()
                    .contains("usage: tributary connector kinesis consumers"),
                "{bad}: {e}"
            );
        }
    }
}
