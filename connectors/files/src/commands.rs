//! `tributary connector files notifications ...`: the S3 notification resources that
//! notification mode sets up by itself (`crate::notifications::s3_setup`), as an administrative
//! subcommand ([`ConnectorCommand`]).
//!
//! ```text
//! notifications list     --path s3://bucket/prefix [--checkpointId ID] [options]
//! notifications teardown --path s3://bucket/prefix --checkpointId ID [options]
//! ```
//!
//! Connection settings use the source's option names (`--cloudFiles.endpoint URL`,
//! `--cloudFiles.region R`, `--cloudFiles.awsAccessKey K`, `--cloudFiles.awsSecretKey
//! {{secrets/scope/key}}`, `--cloudFiles.roleArn ARN`, ...), as `--name value` or
//! `--option name=value`, validated by the source's specs. Output: one JSON object per line.

use std::sync::Arc;

use async_trait::async_trait;
use tributary_sdk::{ConnectorCommand, Error, ErrorCode, OptionSpec, Options, Result, SecretStore};

use crate::config::{names, Cloud, SourcePath};
use crate::notifications::s3_setup::{resource_name, Setup};
use crate::store::StoreSpec;

const USAGE: &str = "\
usage: tributary connector files notifications <list|teardown> --path s3://bucket/prefix [options]
  list                      the bucket's event notifications to queues this source set up
                            (ids tributary-*); with --checkpointId ID only that checkpoint's
  teardown --checkpointId ID  remove the bucket's notification to the queue tributary-<ID> and
                            delete the queue
connection options (the source's names): --cloudFiles.endpoint URL --cloudFiles.region R
  --cloudFiles.awsAccessKey K --cloudFiles.awsSecretKey {{secrets/scope/key}}
  --cloudFiles.roleArn ARN --cloudFiles.roleExternalId ID --cloudFiles.roleSessionName S
  --cloudFiles.stsEndpoint URL; or --option name=value
output: one JSON object per line";

/// Source options a notifications command takes (the other stores' credential options are
/// declared too, so that they are refused by name for an s3:// path, as by the source).
const COMMAND_OPTIONS: [&str; 16] = [
    names::PATH,
    names::ENDPOINT,
    names::REGION,
    names::AWS_ACCESS_KEY,
    names::AWS_SECRET_KEY,
    names::ROLE_ARN,
    names::ROLE_EXTERNAL_ID,
    names::ROLE_SESSION_NAME,
    names::STS_ENDPOINT,
    names::CONNECTION_STRING,
    names::CLIENT_ID,
    names::CLIENT_SECRET,
    names::TENANT_ID,
    names::CLIENT_EMAIL,
    names::PRIVATE_KEY,
    names::PRIVATE_KEY_ID,
];

/// The `notifications` subcommand.
#[derive(Debug, Clone, Copy, Default)]
pub struct NotificationsCommand;

fn usage_error(message: impl std::fmt::Display) -> Error {
    Error::new(ErrorCode::InvalidOption, format!("{message}\n{USAGE}"))
}

/// A parsed command line: the action, the options, the checkpoint id.
fn parse(args: &[String]) -> Result<(String, Options, Option<String>)> {
    let Some((action, rest)) = args.split_first() else {
        return Err(usage_error("missing action"));
    };
    let mut options = Options::new();
    let mut checkpoint = None;
    let mut it = rest.iter();
    while let Some(arg) = it.next() {
        let Some(flag) = arg.strip_prefix("--") else {
            return Err(usage_error(format!("unexpected argument '{arg}'")));
        };
        let (name, value) = match flag.split_once('=') {
            Some((n, v)) => (n, v.to_string()),
            _ => (
                flag,
                it.next()
                    .cloned()
                    .ok_or_else(|| usage_error(format!("'--{flag}' needs a value")))?,
            ),
        };
        match name {
            "checkpointId" => checkpoint = Some(value),
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
    match action.as_str() {
        "list" => {}
        "teardown" if checkpoint.is_none() => {
            return Err(usage_error("'teardown' needs --checkpointId"))
        }
        "teardown" => {}
        other => {
            return Err(usage_error(format!(
                "unknown action '{other}' (expected list or teardown)"
            )))
        }
    }
    Ok((action.clone(), options, checkpoint))
}

/// The bucket's spec from the options (secrets resolved); s3:// paths only.
fn spec(options: &Options, secrets: &dyn SecretStore) -> Result<StoreSpec> {
    let specs: Vec<OptionSpec> = crate::config::option_specs()
        .into_iter()
        .filter(|s| COMMAND_OPTIONS.contains(&s.name.as_str()))
        .map(|s| match s.name.as_str() {
            names::PATH => s.required(),
            _ => s,
        })
        .collect();
    let parsed = OptionSpec::validate_all(&specs, options, "files")?;
    let (path, cloud) = crate::config::parse_store(&parsed)?;
    match &path {
        SourcePath::Cloud(c) if c.cloud == Cloud::S3 => StoreSpec::cloud(c, &cloud, secrets),
        _ => Err(Error::new(
            ErrorCode::InvalidOption,
            format!(
                "option '{}': the notifications command manages S3 event notifications and \
                 takes an s3:// path (Azure queues are given with cloudFiles.queueName; \
                 nothing is set up there)",
                names::PATH
            ),
        )
        .with_context("option", names::PATH)),
    }
}

#[async_trait]
impl ConnectorCommand for NotificationsCommand {
    fn name(&self) -> &str {
        "notifications"
    }

    fn about(&self) -> &str {
        "List or tear down the S3 event notifications and SQS queues that notification mode set up"
    }

    fn usage(&self) -> String {
        USAGE.to_string()
    }

    async fn run(&self, args: &[String], secrets: Arc<dyn SecretStore>) -> Result<String> {
        if args.iter().any(|a| a == "--help" || a == "-h") {
            return Ok(USAGE.to_string());
        }
        let (action, options, checkpoint) = parse(args)?;
        let StoreSpec::Cloud(spec) = spec(&options, secrets.as_ref())? else {
            return Err(Error::new(ErrorCode::Internal, "not an s3:// path"));
        };
        let setup = Setup::new(&spec).await;
        let wanted = checkpoint.as_deref().map(resource_name);
        let mut out = Vec::new();
        if action == "list" {
            for entry in setup.list().await? {
                if wanted.as_ref().is_none_or(|w| *w == entry.id) {
                    out.push(serde_json::json!({
                        "bucket": spec.path.bucket,
                        "id": entry.id,
                        "queueArn": entry.queue_arn,
                        "queueUrl": entry.queue_url,
                        "prefix": entry.prefix,
                    }));
                }
            }
        } else if let Some(name) = wanted {
            let (configurations, queue_deleted) = setup.teardown(&name).await?;
            out.push(serde_json::json!({
                "bucket": spec.path.bucket,
                "queue": name,
                "bucketConfigurationsRemoved": configurations,
                "queueDeleted": queue_deleted,
            }));
        }
        Ok(out
            .iter()
            .map(serde_json::Value::to_string)
            .collect::<Vec<_>>()
            .join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn command_lines() {
        let (action, options, id) = parse(&args(&[
            "teardown",
            "--path",
            "s3://landing-bucket/in",
            "--checkpointId=abc",
            "--option",
            "cloudFiles.region=eu-west-1",
        ]))
        .unwrap();
        assert_eq!((action.as_str(), id.as_deref()), ("teardown", Some("abc")));
        assert_eq!(options.get("cloudFiles.region"), Some("eu-west-1"));
        assert!(parse(&args(&["teardown", "--path", "s3://b/x"])).is_err());
        assert!(parse(&args(&["purge"])).is_err());
        let secrets = tributary_sdk::EnvSecretStore;
        let local: Options = [("path", "/tmp")].into_iter().collect();
        let e = spec(&local, &secrets).unwrap_err();
        assert!(e.to_string().contains("s3://"), "{e}");
        let unknown: Options = [
            ("path", "s3://landing-bucket/in"),
            ("cloudFiles.format", "json"),
        ]
        .into_iter()
        .collect();
        assert!(spec(&unknown, &secrets).is_err());
    }
}
