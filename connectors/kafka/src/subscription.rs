//! What the Kafka source reads: fixed topics, a topic pattern (full match) or fixed
//! partitions. A leaf module: the config parses it, the client and planner use it.

use std::collections::BTreeMap;

use regex::Regex;

/// What the source reads.
#[derive(Debug, Clone)]
pub enum Subscription {
    /// Fixed topic names.
    Topics(Vec<String>),
    /// Every topic whose whole name matches.
    Pattern(Regex),
    /// Fixed partitions.
    Assign(BTreeMap<String, Vec<i32>>),
}

impl Subscription {
    /// The canonical description stored in the checkpoint identity.
    pub fn describe(&self) -> String {
        match self {
            Subscription::Topics(t) => {
                let mut t = t.clone();
                t.sort();
                format!("subscribe={}", t.join(","))
            }
            Subscription::Pattern(r) => format!("subscribePattern={}", r.as_str()),
            Subscription::Assign(a) => format!(
                "assign={}",
                serde_json::to_string(a).unwrap_or_else(|_| format!("{a:?}"))
            ),
        }
    }

    /// True when the topic belongs to this subscription.
    pub fn matches_topic(&self, topic: &str) -> bool {
        match self {
            Subscription::Topics(t) => t.iter().any(|x| x == topic),
            Subscription::Pattern(r) => !topic.starts_with("__") && full_match(r, topic),
            Subscription::Assign(a) => a.contains_key(topic),
        }
    }
}

fn full_match(r: &Regex, s: &str) -> bool {
    r.find(s)
        .is_some_and(|m| m.start() == 0 && m.end() == s.len())
}
