//! `initialPosition` as the Databricks connector spells it: `trim_horizon` (or `earliest`),
//! `latest`, or `{"at_timestamp": "06/25/2020 10:23:45 PDT", "format": "MM/dd/yyyy HH:mm:ss ZZZ"}`.
//!
//! The `format` is a Java `SimpleDateFormat` pattern. It is translated here into a chrono
//! pattern by hand (no crate translates Java patterns): the letters `yyyy yy MM MMM dd HH hh mm
//! ss SSS a` and quoted literals; a time zone (`z`, `Z`, `X` runs) must end the pattern and may
//! be an offset (`-0700`, `+02:00`, `Z`) or a common abbreviation (UTC, GMT, PST, PDT, EST, ...).
//! Without `format` the timestamp is RFC 3339 or milliseconds since the epoch.

use chrono::{DateTime, FixedOffset, NaiveDate, NaiveDateTime, TimeZone};
use tributary_sdk::Result;

use tributary_sdk::options::invalid_value as invalid;

/// Where a new query starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InitialPosition {
    /// The oldest record of every shard.
    TrimHorizon,
    /// After the newest record (resolved to the time the query starts).
    Latest,
    /// The first record that arrived at or after this time (ms since the epoch).
    AtTimestamp(i64),
}

const ALLOWED: &str = r#"trim_horizon, earliest, latest, or {"at_timestamp": "<time>", "format": "<Java date pattern>"}"#;

/// Parses the `initialPosition` option.
pub fn parse_initial_position(text: &str) -> Result<InitialPosition> {
    let t = text.trim();
    match t.to_ascii_lowercase().as_str() {
        "trim_horizon" | "earliest" => return Ok(InitialPosition::TrimHorizon),
        "latest" => return Ok(InitialPosition::Latest),
        _ => {}
    }
    let bad = |why: &str| invalid("initialPosition", text, &format!("{ALLOWED} ({why})"));
    let json: serde_json::Value =
        serde_json::from_str(t).map_err(|_| bad("not a known word or JSON"))?;
    let obj = json
        .as_object()
        .ok_or_else(|| bad("JSON must be an object"))?;
    if let Some(k) = obj.keys().find(|k| *k != "at_timestamp" && *k != "format") {
        return Err(bad(&format!("unknown key '{k}'")));
    }
    let ts = match obj.get("at_timestamp") {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(serde_json::Value::Number(n)) => n.to_string(),
        _ => return Err(bad("'at_timestamp' is missing")),
    };
    let ms = match obj.get("format") {
        Some(serde_json::Value::String(f)) => {
            parse_with_java_format(&ts, f).map_err(|e| bad(&e))?
        }
        Some(_) => return Err(bad("'format' must be a string")),
        None => parse_default(&ts).ok_or_else(|| {
            bad("without 'format' the time must be RFC 3339 or epoch milliseconds")
        })?,
    };
    Ok(InitialPosition::AtTimestamp(ms))
}

fn parse_default(ts: &str) -> Option<i64> {
    if let Ok(ms) = ts.trim().parse::<i64>() {
        return Some(ms);
    }
    DateTime::parse_from_rfc3339(ts.trim())
        .ok()
        .map(|d| d.timestamp_millis())
}

/// Parses `value` with a Java `SimpleDateFormat` pattern; milliseconds since the epoch.
pub fn parse_with_java_format(value: &str, java: &str) -> std::result::Result<i64, String> {
    let (pattern, has_zone) = java_to_chrono(java)?;
    let (local_text, offset) = if has_zone {
        let v = value.trim_end();
        let cut = v
            .rfind([' ', '+', '-'])
            .ok_or("no time zone at the end of the value")?;
        let (head, zone) = if v.as_bytes()[cut] == b' ' {
            (&v[..cut], &v[cut + 1..])
        } else {
            (&v[..cut], &v[cut..])
        };
        let zone = zone.trim();
        let (head, zone) = if zone.is_empty() {
            (v, "Z")
        } else {
            (head, zone)
        };
        (
            head.trim_end(),
            zone_offset(zone).ok_or(format!("unknown time zone '{zone}'"))?,
        )
    } else {
        (value.trim(), FixedOffset::east_opt(0).ok_or("offset")?)
    };
    let pattern = pattern.trim_end();
    let naive = NaiveDateTime::parse_from_str(local_text, pattern)
        .or_else(|_| {
            NaiveDate::parse_from_str(local_text, pattern)
                .map(|d| d.and_hms_opt(0, 0, 0).unwrap_or_default())
        })
        .map_err(|e| format!("'{value}' does not match format '{java}': {e}"))?;
    offset
        .from_local_datetime(&naive)
        .single()
        .map(|d| d.timestamp_millis())
        .ok_or_else(|| format!("'{value}' is not a valid time"))
}

fn zone_offset(zone: &str) -> Option<FixedOffset> {
    let hours = match zone.to_ascii_uppercase().as_str() {
        "Z" | "UTC" | "GMT" | "UT" => Some(0),
        "EST" => Some(-5),
        "EDT" => Some(-4),
        "CST" => Some(-6),
        "CDT" => Some(-5),
        "MST" => Some(-7),
        "MDT" => Some(-6),
        "PST" => Some(-8),
        "PDT" => Some(-7),
        "CET" => Some(1),
        "CEST" => Some(2),
        _ => None,
    };
    if let Some(h) = hours {
        return FixedOffset::east_opt(h * 3600);
    }
    let digits: String = zone.chars().filter(|c| c.is_ascii_digit()).collect();
    let sign = match zone.chars().next()? {
        '+' => 1,
        '-' => -1,
        _ => return None,
    };
    let (h, m) = match digits.len() {
        2 => (digits.parse::<i32>().ok()?, 0),
        4 => (
            digits[..2].parse::<i32>().ok()?,
            digits[2..].parse::<i32>().ok()?,
        ),
        _ => return None,
    };
    FixedOffset::east_opt(sign * (h * 3600 + m * 60))
}

/// Translates a Java pattern into chrono's; the bool says a zone ended the pattern.
fn java_to_chrono(java: &str) -> std::result::Result<(String, bool), String> {
    let chars: Vec<char> = java.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    let mut zone = false;
    while i < chars.len() {
        let c = chars[i];
        if zone {
            return Err("the time zone (z, Z or X) must end the format".into());
        }
        if c == '\'' {
            let end = chars[i + 1..]
                .iter()
                .position(|x| *x == '\'')
                .ok_or("unclosed quote in format")?;
            for l in &chars[i + 1..i + 1 + end] {
                if *l == '%' {
                    out.push_str("%%");
                } else {
                    out.push(*l);
                }
            }
            i += end + 2;
            continue;
        }
        let run = chars[i..].iter().take_while(|x| **x == c).count();
        let piece = match (c, run) {
            ('y', 2) => "%y",
            ('y', _) => "%Y",
            ('M', 1 | 2) => "%m",
            ('M', 3) => "%b",
            ('M', _) => "%B",
            ('d', _) => "%d",
            ('H', _) => "%H",
            ('h', _) => "%I",
            ('m', _) => "%M",
            ('s', _) => "%S",
            ('S', 3) => "%3f",
            ('S', 6) => "%6f",
            ('S', 9) => "%9f",
            ('a', _) => "%p",
            ('z' | 'Z' | 'X', _) => {
                zone = true;
                ""
            }
            (c, _) if c.is_ascii_alphabetic() => {
                return Err(format!("pattern letter '{c}' is not supported"))
            }
            _ => {
                for _ in 0..run {
                    out.push(c);
                }
                i += run;
                continue;
            }
        };
        out.push_str(piece);
        i += run;
    }
    Ok((out, zone))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn words_and_databricks_json() {
        assert_eq!(
            parse_initial_position("TRIM_HORIZON").unwrap(),
            InitialPosition::TrimHorizon
        );
        assert_eq!(
            parse_initial_position("earliest").unwrap(),
            InitialPosition::TrimHorizon
        );
        assert_eq!(
            parse_initial_position("latest").unwrap(),
            InitialPosition::Latest
        );
        let p = parse_initial_position(
            r#"{"at_timestamp": "06/25/2020 10:23:45 PDT", "format": "MM/dd/yyyy HH:mm:ss ZZZ"}"#,
        )
        .unwrap();
        // 2020-06-25T17:23:45Z
        assert_eq!(p, InitialPosition::AtTimestamp(1_593_105_825_000));
        let p = parse_initial_position(
            r#"{"at_timestamp": "2020-06-25T10:23:45.250-0700", "format": "yyyy-MM-dd'T'HH:mm:ss.SSSZ"}"#,
        )
        .unwrap();
        assert_eq!(p, InitialPosition::AtTimestamp(1_593_105_825_250));
        assert_eq!(
            parse_initial_position(r#"{"at_timestamp": "2020-06-25T17:23:45Z"}"#).unwrap(),
            InitialPosition::AtTimestamp(1_593_105_825_000)
        );
        assert_eq!(
            parse_initial_position(r#"{"at_timestamp": 1593105825000}"#).unwrap(),
            InitialPosition::AtTimestamp(1_593_105_825_000)
        );
    }

    #[test]
    fn refusals_name_the_option_and_the_allowed_forms() {
        for bad in [
            "oldest",
            r#"{"at": "x"}"#,
            r#"{"at_timestamp": "yesterday"}"#,
            r#"{"at_timestamp": "06/25/2020", "format": "MM/dd/yyyy QQ"}"#,
            r#"{"at_timestamp": "06/25/2020 10:23:45 XYZ", "format": "MM/dd/yyyy HH:mm:ss z"}"#,
            r#"[1]"#,
        ] {
            let e = parse_initial_position(bad).unwrap_err();
            assert_eq!(e.context_value("option"), Some("initialPosition"), "{bad}");
            assert!(e.to_string().contains("trim_horizon"), "{e}");
        }
    }
}
