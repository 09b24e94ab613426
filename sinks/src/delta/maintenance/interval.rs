//! Delta's interval syntax for retention table properties: `interval 30 days`,
//! `interval 1 week`, `interval 12 hours` (the grammar deltalake and Databricks read from
//! `delta.logRetentionDuration` and `delta.deletedFileRetentionDuration`).

use std::time::Duration;

/// A parsed interval and its canonical text (lower case, single spaces), the form written to
/// a table property so every Delta reader parses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interval {
    /// The length of the interval.
    pub duration: Duration,
    /// `interval <n> <unit>`, as written to the table.
    pub text: String,
}

/// The units Delta accepts, singular and plural, with their length in seconds (sub-second
/// units are accepted by deltalake but make no sense for a retention and are refused here).
const UNITS: [(&str, u64); 5] = [
    ("second", 1),
    ("minute", 60),
    ("hour", 3600),
    ("day", 86_400),
    ("week", 604_800),
];

/// What the error of a malformed interval says is allowed.
pub const INTERVAL_SYNTAX: &str =
    "an interval such as 'interval 30 days' (units: seconds, minutes, hours, days, weeks)";

/// Parses `interval <n> <unit>` (case-insensitive); `None` when it is not one.
pub fn parse_interval(text: &str) -> Option<Interval> {
    let lower = text.trim().to_ascii_lowercase();
    let mut words = lower.split_whitespace();
    if words.next()? != "interval" {
        return None;
    }
    let n: u64 = words.next()?.parse().ok()?;
    let unit = words.next()?;
    if words.next().is_some() {
        return None;
    }
    let (name, secs) = UNITS
        .iter()
        .find(|(u, _)| unit == *u || unit.strip_suffix('s') == Some(u))?;
    let duration = Duration::from_secs(n.checked_mul(*secs)?);
    let text = format!("interval {n} {name}{}", if n == 1 { "" } else { "s" });
    Some(Interval { duration, text })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delta_intervals() {
        let i = parse_interval("interval 30 days").unwrap();
        assert_eq!(i.duration, Duration::from_secs(30 * 86_400));
        assert_eq!(i.text, "interval 30 days");
        let i = parse_interval("  INTERVAL 1   Week ").unwrap();
        assert_eq!(i.duration, Duration::from_secs(604_800));
        assert_eq!(i.text, "interval 1 week");
        assert_eq!(
            parse_interval("interval 2 hour").unwrap().text,
            "interval 2 hours"
        );
        for bad in [
            "30 days",
            "interval days",
            "interval -1 days",
            "interval 1 fortnight",
            "interval 1 day extra",
            "interval 5 milliseconds",
        ] {
            assert!(parse_interval(bad).is_none(), "{bad}");
        }
    }
}
