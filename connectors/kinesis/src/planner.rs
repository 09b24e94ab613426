//! What the source reads next: the streams' metadata and shard lists turned into offsets.
//!
//! [`StreamRef`] addresses a stream by name or ARN as configured. [`describe_stream`] fetches
//! its ARN and creation time (a recreated stream has a new one), [`list_shards`] its shards
//! with their parents. [`discover_shards`] adds shards that are neither in the offsets nor
//! ancestors of a shard in them (children of a split or merge, from their first record), so a
//! finished parent that left the offsets is never read again.

use std::collections::{BTreeMap, BTreeSet};

use aws_sdk_kinesis::Client;
use tributary_sdk::Result;

use crate::config::StreamKeying;
use crate::error::{ApiError, ApiFailure};
use crate::offsets::{ShardOffset, ShardPosition, StreamOffsets};

/// A stream as the user named it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamRef {
    /// Names or ARNs.
    pub keying: StreamKeying,
    /// The name or ARN.
    pub id: String,
}

impl StreamRef {
    /// The stream name (the last part of an ARN).
    pub fn name(&self) -> &str {
        match self.keying {
            StreamKeying::Names => &self.id,
            StreamKeying::Arns => self.id.rsplit('/').next().unwrap_or(&self.id),
        }
    }
}

/// Sets the stream name or ARN on any request builder that has both.
macro_rules! with_stream {
    ($builder:expr, $stream:expr) => {{
        let s: &$crate::planner::StreamRef = $stream;
        match s.keying {
            $crate::config::StreamKeying::Names => $builder.stream_name(&s.id),
            $crate::config::StreamKeying::Arns => $builder.stream_arn(&s.id),
        }
    }};
}
pub(crate) use with_stream;

/// A stream's identity on the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamInfo {
    /// The ARN.
    pub arn: String,
    /// Creation time (ms).
    pub created_ms: i64,
}

/// One shard of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardInfo {
    /// The shard id.
    pub id: String,
    /// Parent and adjacent parent.
    pub parents: Vec<String>,
    /// True when the shard is closed (has an ending sequence number).
    pub closed: bool,
}

/// The stream's ARN and creation time; `Ok(None)` when it does not exist.
pub(crate) async fn describe_stream(
    client: &Client,
    stream: &StreamRef,
) -> Result<Option<StreamInfo>> {
    let req = with_stream!(client.describe_stream_summary(), stream);
    match req.send().await {
        Ok(out) => {
            let d = out.stream_description_summary();
            let created = d.map(|d| {
                d.stream_creation_timestamp()
                    .to_millis()
                    .unwrap_or_default()
            });
            Ok(d.map(|d| StreamInfo {
                arn: d.stream_arn().to_string(),
                created_ms: created.unwrap_or_default(),
            }))
        }
        Err(e) => {
            let e = ApiError::from_sdk(e);
            if e.failure == ApiFailure::NotFound {
                Ok(None)
            } else {
                Err(e.into_error("DescribeStreamSummary", &stream.id, true))
            }
        }
    }
}

/// Every shard of the stream, open and closed, in id order.
pub(crate) async fn list_shards(client: &Client, stream: &StreamRef) -> Result<Vec<ShardInfo>> {
    let mut out = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let req = match &token {
            Some(t) => client.list_shards().next_token(t),
            None => with_stream!(client.list_shards(), stream),
        };
        let page = req
            .send()
            .await
            .map_err(|e| ApiError::from_sdk(e).into_error("ListShards", &stream.id, true))?;
        for s in page.shards() {
            let parents = [s.parent_shard_id(), s.adjacent_parent_shard_id()]
                .into_iter()
                .flatten()
                .map(str::to_string)
                .collect();
            let closed = s
                .sequence_number_range()
                .and_then(|r| r.ending_sequence_number())
                .is_some();
            out.push(ShardInfo {
                id: s.shard_id().to_string(),
                parents,
                closed,
            });
        }
        token = page.next_token().map(str::to_string);
        if token.is_none() {
            break;
        }
    }
    out.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(out)
}

/// Every shard of a new stream, each starting at `position`.
pub(crate) fn initial_stream(
    info: &StreamInfo,
    shards: &[ShardInfo],
    position: &ShardPosition,
) -> StreamOffsets {
    StreamOffsets {
        created_ms: Some(info.created_ms),
        shards: shards
            .iter()
            .map(|s| {
                (
                    s.id.clone(),
                    ShardOffset::new(position.clone(), s.parents.clone()),
                )
            })
            .collect(),
    }
}

/// Adds the listed shards that are neither in the offsets nor ancestors of a shard in them,
/// from their first record. Returns the ids added.
pub(crate) fn discover_shards(offsets: &mut StreamOffsets, listing: &[ShardInfo]) -> Vec<String> {
    let parents: BTreeMap<&str, &[String]> = listing
        .iter()
        .map(|s| (s.id.as_str(), s.parents.as_slice()))
        .collect();
    let mut ancestors: BTreeSet<String> = BTreeSet::new();
    let mut todo: Vec<String> = offsets
        .shards
        .iter()
        .flat_map(|(id, e)| {
            e.parents.iter().cloned().chain(
                parents
                    .get(id.as_str())
                    .into_iter()
                    .flat_map(|p| p.iter().cloned()),
            )
        })
        .collect();
    while let Some(p) = todo.pop() {
        if ancestors.insert(p.clone()) {
            if let Some(ps) = parents.get(p.as_str()) {
                todo.extend(ps.iter().cloned());
            }
        }
    }
    let mut added = Vec::new();
    for s in listing {
        if !offsets.shards.contains_key(&s.id) && !ancestors.contains(&s.id) {
            offsets.shards.insert(
                s.id.clone(),
                ShardOffset::new(ShardPosition::TrimHorizon, s.parents.clone()),
            );
            added.push(s.id.clone());
        }
    }
    added
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn shard(id: &str, parents: &[&str]) -> ShardInfo {
        ShardInfo {
            id: id.into(),
            parents: parents.iter().map(|p| p.to_string()).collect(),
            closed: false,
        }
    }

    #[test]
    fn children_are_added_but_consumed_parents_are_not() {
        let listing = vec![
            shard("0", &[]),
            shard("1", &["0"]),
            shard("2", &["0"]),
            shard("3", &["1", "2"]),
        ];
        // 0 was read and left the offsets; 1 and 2 are in them.
        let mut o = StreamOffsets::default();
        o.shards.insert(
            "1".into(),
            ShardOffset::new(ShardPosition::After("5".into()), vec!["0".into()]),
        );
        o.shards.insert(
            "2".into(),
            ShardOffset::new(ShardPosition::TrimHorizon, vec!["0".into()]),
        );
        let added = discover_shards(&mut o, &listing);
        assert_eq!(added, vec!["3".to_string()]);
        assert_eq!(o.shards["3"].position, ShardPosition::TrimHorizon);
        assert_eq!(
            o.shards["3"].parents,
            vec!["1".to_string(), "2".to_string()]
        );
        assert!(!o.shards.contains_key("0"));
        // Nothing new the second time.
        assert!(discover_shards(&mut o, &listing).is_empty());
    }

    #[test]
    fn arn_names() {
        let s = StreamRef {
            keying: StreamKeying::Arns,
            id: "arn:aws:kinesis:us-east-1:1:stream/ev".into(),
        };
        assert_eq!(s.name(), "ev");
    }
}
