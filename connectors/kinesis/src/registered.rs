//! Enhanced fan-out through consumers registered outside the query (`registeredConsumerId`,
//! `registeredConsumerIdType`): which consumer each stream reads with, parsed and checked
//! without I/O.
//!
//! The ids are one per stream, in the order of `streamName` / `streamARN`; a single consumer
//! *name* may serve every stream (consumer names are per stream). A consumer ARN names its
//! stream (`arn:aws:kinesis:REGION:ACCOUNT:stream/NAME/consumer/CONSUMER:TIME`), so an ARN
//! given for another stream is refused here. The type defaults to what the ids look like
//! (consumer names cannot contain `:`, ARNs start with `arn:`); a type that contradicts the ids
//! is refused. The source only describes such a consumer: it never registers, re-registers nor
//! deregisters it (`crate::efo`).

use std::collections::BTreeMap;

use tributary_sdk::options::{conflicting, invalid_value as invalid};
use tributary_sdk::{ParsedOptions, Result};

use crate::config::{validate_consumer_name, StreamKeying, Streams};
use crate::options as o;

/// What `registeredConsumerId` holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsumerIdType {
    /// Consumer names, looked up on each stream.
    Name,
    /// Consumer ARNs.
    Arn,
}

/// The registered consumer of every stream of the query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegisteredConsumers {
    /// Names or ARNs.
    pub id_type: ConsumerIdType,
    /// Stream id (as configured) -> consumer name or ARN.
    pub by_stream: BTreeMap<String, String>,
}

impl RegisteredConsumers {
    /// The ids as given, comma-separated (for logs and metrics).
    pub fn describe(&self) -> String {
        let ids: Vec<&str> = self.by_stream.values().map(String::as_str).collect();
        ids.join(",")
    }
}

/// Parses `registeredConsumerId` / `registeredConsumerIdType` for `streams` (`None` when no
/// id is given).
pub fn parse(p: &ParsedOptions, streams: &Streams) -> Result<Option<RegisteredConsumers>> {
    let Some(raw) = o::REGISTERED_CONSUMER_ID.get(p)? else {
        return Ok(None);
    };
    let ids: Vec<String> = raw
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    if ids.is_empty() {
        return Err(invalid(
            "registeredConsumerId",
            &raw,
            "a consumer name or ARN, or one per stream separated by commas",
        ));
    }
    let looks_arn = ids.iter().all(|i| i.starts_with("arn:"));
    let looks_name = ids.iter().all(|i| !i.starts_with("arn:"));
    let id_type = match o::REGISTERED_CONSUMER_ID_TYPE.get(p)? {
        Some("name") => ConsumerIdType::Name,
        Some(_) => ConsumerIdType::Arn,
        None if looks_arn => ConsumerIdType::Arn,
        None if looks_name => ConsumerIdType::Name,
        None => return Err(invalid(
            "registeredConsumerId",
            &raw,
            "all consumer names or all consumer ARNs (set registeredConsumerIdType to name or ARN)",
        )),
    };
    match id_type {
        ConsumerIdType::Name if !looks_name => {
            return Err(conflicting(
                "registeredConsumerIdType",
                "registeredConsumerId",
                "is name but 'registeredConsumerId' holds an ARN (set registeredConsumerIdType to ARN)",
            ))
        }
        ConsumerIdType::Arn if !looks_arn => {
            return Err(conflicting(
                "registeredConsumerIdType",
                "registeredConsumerId",
                "is ARN but 'registeredConsumerId' holds a consumer name (set registeredConsumerIdType to name)",
            ))
        }
        _ => {}
    }
    let n = streams.ids.len();
    let per_stream: Vec<String> = match (id_type, ids.len()) {
        (_, k) if k == n => ids,
        (ConsumerIdType::Name, 1) => vec![ids[0].clone(); n],
        (_, k) => {
            return Err(invalid(
                "registeredConsumerId",
                &raw,
                &format!(
                    "one consumer id per stream ({n} given in '{}', {k} here){}",
                    streams.keying.option(),
                    if id_type == ConsumerIdType::Name {
                        ", or a single consumer name for every stream"
                    } else {
                        ""
                    }
                ),
            ))
        }
    };
    let mut by_stream = BTreeMap::new();
    for (stream, id) in streams.ids.iter().zip(per_stream) {
        match id_type {
            ConsumerIdType::Name => validate_consumer_name("registeredConsumerId", &id)?,
            ConsumerIdType::Arn => check_consumer_arn(streams.keying, stream, &id)?,
        }
        by_stream.insert(stream.clone(), id);
    }
    Ok(Some(RegisteredConsumers { id_type, by_stream }))
}

/// The stream ARN a consumer ARN belongs to (`arn:...:stream/NAME`), and the stream name.
pub fn stream_of_consumer_arn(arn: &str) -> Option<(&str, &str)> {
    let (stream_arn, consumer) = arn.split_once("/consumer/")?;
    let parts: Vec<&str> = stream_arn.splitn(6, ':').collect();
    let name = parts.get(5)?.strip_prefix("stream/")?;
    let ok = parts.len() == 6
        && parts[0] == "arn"
        && parts[2] == "kinesis"
        && !name.is_empty()
        && !consumer.is_empty();
    ok.then_some((stream_arn, name))
}

fn check_consumer_arn(keying: StreamKeying, stream: &str, arn: &str) -> Result<()> {
    let Some((stream_arn, name)) = stream_of_consumer_arn(arn) else {
        return Err(invalid(
            "registeredConsumerId",
            arn,
            "consumer ARNs like arn:aws:kinesis:us-east-1:123456789012:stream/NAME/consumer/CONSUMER:1700000000",
        ));
    };
    let belongs = match keying {
        StreamKeying::Names => name == stream,
        StreamKeying::Arns => stream_arn == stream,
    };
    if !belongs {
        return Err(invalid(
            "registeredConsumerId",
            arn,
            &format!(
                "a consumer ARN of stream '{stream}' (the ids follow the order of '{}')",
                keying.option()
            ),
        ));
    }
    Ok(())
}
