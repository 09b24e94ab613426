//! Spark-style option maps parsed into typed values.
//!
//! Users configure connectors with string maps (`startingOffsets = "earliest"`,
//! `cloudFiles.maxFilesPerTrigger = "10"`), with keys matched case-insensitively as in Spark.
//! Each connector declares its options once as a list of [`OptionSpec`]s; the same list produces
//! the documentation (`tributary plugins inspect`, option schemas in plugin manifests) and the
//! error messages. [`OptionSpec::validate_all`] is pure: it refuses unknown options (with a
//! "did you mean" for near misses), missing required options and values of the wrong type,
//! naming the option, the bad value and the allowed values, before anything connects.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorCode, Result};

mod conflict;
pub mod decl;
pub mod table;

pub use conflict::{conflicting, invalid_value, Conflict, ConflictRule};

/// A case-insensitive option map that remembers the spelling the user wrote.
///
/// `Debug` never prints a secret: values of options declared [`OptionSpec::sensitive`] (marked by
/// [`OptionSpec::validate_all`] or [`Options::mark_sensitive`]) and of keys that look sensitive
/// print as `***`, and credentials inside other values — the password of a URL
/// (`https://user:pass@host`), `password="..."` in a `sasl.jaas.config` — are masked.
#[derive(Clone, Default)]
pub struct Options {
    /// lower-cased key -> (key as written, value)
    entries: BTreeMap<String, (String, String)>,
    /// lower-cased keys declared sensitive
    sensitive: BTreeSet<String>,
}

impl PartialEq for Options {
    fn eq(&self, other: &Self) -> bool {
        self.entries == other.entries
    }
}

impl Eq for Options {}

impl Options {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets an option (a later value for the same key, in any case, replaces the earlier one).
    pub fn set(&mut self, key: impl Into<String>, value: impl Into<String>) -> &mut Self {
        let key = key.into();
        self.entries
            .insert(key.to_ascii_lowercase(), (key, value.into()));
        self
    }

    /// Builder form of [`Options::set`].
    pub fn with(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.set(key, value);
        self
    }

    /// The value of an option, matched case-insensitively.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.entries
            .get(&key.to_ascii_lowercase())
            .map(|(_, v)| v.as_str())
    }

    /// True when the option is present.
    pub fn contains(&self, key: &str) -> bool {
        self.entries.contains_key(&key.to_ascii_lowercase())
    }

    /// Marks the options the specs declare sensitive, so `Debug` hides their values.
    pub fn mark_sensitive(&mut self, specs: &[OptionSpec]) {
        for (lk, (k, _)) in &self.entries {
            if specs.iter().any(|s| s.sensitive && s.matches(k)) {
                self.sensitive.insert(lk.clone());
            }
        }
    }

    /// True when the value of `key` must not be printed: declared sensitive, or a key that
    /// looks sensitive.
    pub fn is_sensitive(&self, key: &str) -> bool {
        self.sensitive.contains(&key.to_ascii_lowercase()) || is_sensitive_key(key)
    }

    /// The value of `key` as it may be printed (see the type's documentation).
    pub fn printable(&self, key: &str) -> Option<Cow<'_, str>> {
        let v = self.get(key)?;
        Some(if self.sensitive.contains(&key.to_ascii_lowercase()) {
            Cow::Borrowed("***")
        } else {
            printable_value(key, v)
        })
    }

    /// Removes an option, returning its value.
    pub fn remove(&mut self, key: &str) -> Option<String> {
        self.entries
            .remove(&key.to_ascii_lowercase())
            .map(|(_, v)| v)
    }

    /// Iterates `(key as written, value)`.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries.values().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Options whose key starts with `prefix` (case-insensitive), with the prefix removed and the
    /// rest of the key kept as written (`kafka.security.protocol` -> `security.protocol`).
    pub fn with_prefix<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = (&'a str, &'a str)> {
        let lower = prefix.to_ascii_lowercase();
        self.entries
            .iter()
            .filter(move |(lk, _)| lk.starts_with(&lower))
            .map(move |(_, (k, v))| (&k[prefix.len()..], v.as_str()))
    }

    /// Number of options.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when there are no options.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The map as JSON (`{"key": "value"}`), keys as written.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::Value::Object(
            self.iter()
                .map(|(k, v)| (k.to_string(), serde_json::Value::String(v.to_string())))
                .collect(),
        )
    }

    /// Parses a JSON object of strings (numbers and booleans are accepted and turned into text).
    pub fn from_json(value: &serde_json::Value) -> Result<Self> {
        let obj = value.as_object().ok_or_else(|| {
            Error::new(ErrorCode::InvalidPipeline, "options must be a JSON object")
        })?;
        let mut o = Options::new();
        for (k, v) in obj {
            let text = match v {
                serde_json::Value::String(s) => s.clone(),
                serde_json::Value::Number(_) | serde_json::Value::Bool(_) => v.to_string(),
                other => {
                    return Err(Error::new(
                        ErrorCode::InvalidOption,
                        format!("option '{k}' must be a string, number or boolean, got {other}"),
                    )
                    .with_context("option", k))
                }
            };
            o.set(k.clone(), text);
        }
        Ok(o)
    }
}

impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for Options {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut o = Options::new();
        for (k, v) in iter {
            o.set(k, v);
        }
        o
    }
}

impl fmt::Debug for Options {
    /// Secrets are printed as `***` (see the type's documentation).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut m = f.debug_map();
        for (k, _) in self.iter() {
            m.entry(&k, &self.printable(k).unwrap_or_default());
        }
        m.finish()
    }
}

/// How a `key = value` pair without a declaration may be printed: `***` for a key that looks
/// sensitive ([`is_sensitive_key`]), otherwise the value with embedded credentials masked
/// ([`redact_embedded`]). For maps of pass-through properties (`kafka.*`), which no
/// [`OptionSpec`] declares one by one.
pub fn printable_value<'a>(key: &str, value: &'a str) -> Cow<'a, str> {
    if is_sensitive_key(key) {
        Cow::Borrowed("***")
    } else {
        redact_embedded(value)
    }
}

/// Masks credentials embedded in an option value that is not itself a secret: the user
/// information of a URL (`https://***@host`, [`crate::redact::mask_url_userinfo`]) and `password="..."` in a JAAS config line
/// (`kafka.sasl.jaas.config`).
pub fn redact_embedded(value: &str) -> Cow<'_, str> {
    // the user information of any URL in the value (`s3://***@bucket`)
    let out = crate::redact::mask_url_userinfo(value);
    // password="..." / password='...' / password=word in JAAS text
    let lower = out.to_ascii_lowercase();
    if let Some(pos) = lower.find("password") {
        let after = &out[pos + "password".len()..];
        let trimmed = after.trim_start();
        if let Some(value_part) = trimmed.strip_prefix('=') {
            let value_part = value_part.trim_start();
            let start = out.len() - value_part.len();
            let end = match value_part.chars().next() {
                Some(q @ ('"' | '\'')) => value_part[1..]
                    .find(q)
                    .map(|i| start + i + 2)
                    .unwrap_or(out.len()),
                _ => value_part
                    .find(|c: char| c.is_whitespace() || c == ';')
                    .map(|i| start + i)
                    .unwrap_or(out.len()),
            };
            let masked = format!("{}\"***\"{}", &out[..start], &out[end..]);
            // Recurse for a second password (a keystore and a key password in one value).
            return Cow::Owned(match redact_embedded(&masked[start + 5..]) {
                Cow::Borrowed(_) => masked,
                Cow::Owned(rest) => format!("{}{}", &masked[..start + 5], rest),
            });
        }
    }
    out
}

/// True for option names whose values must never be printed (passwords, keys, tokens, secrets).
pub fn is_sensitive_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    [
        "password",
        "secret",
        "token",
        "sasl.jaas.config",
        "key.pem",
        "private",
        "credential",
        "apikey",
        "api.key",
        "api_key",
        "accesskey",
        "access.key",
        "access_key",
        "connectionstring",
        "connection.string",
    ]
    .iter()
    .any(|s| k.contains(s))
}

/// The type of an option's value, with its allowed range.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum OptionKind {
    /// Any text.
    String,
    /// `true` or `false` (case-insensitive).
    Bool,
    /// A whole number within `[min, max]`.
    Int {
        /// Smallest allowed value.
        min: i64,
        /// Largest allowed value.
        max: i64,
    },
    /// A duration such as `10s`, `5m`, `1h 30m` or a number of milliseconds.
    Duration,
    /// A size such as `10g`, `512m`, `64k` or a number of bytes.
    Bytes,
    /// One of a fixed set of words (case-insensitive).
    Enum {
        /// The allowed words.
        values: Vec<String>,
    },
    /// A JSON document.
    Json,
    /// Every option whose name starts with this spec's name is accepted and passed through.
    Prefix,
}

/// The declaration of one option: name, type, default and documentation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OptionSpec {
    /// The option name as documented (matched case-insensitively).
    pub name: String,
    /// Type and allowed values.
    pub kind: OptionKind,
    /// Default value, as text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// True when the option must be given.
    #[serde(default)]
    pub required: bool,
    /// True when the value is a secret (never printed).
    #[serde(default)]
    pub sensitive: bool,
    /// One or two sentences for users.
    pub doc: String,
    /// Options this one needs or cannot be combined with (checked by
    /// [`OptionSpec::validate_all`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conflicts: Vec<ConflictRule>,
}

impl OptionSpec {
    /// A spec of any kind, without default, not required, not sensitive.
    pub fn of_kind(name: &str, kind: OptionKind, doc: &str) -> Self {
        OptionSpec {
            name: name.to_string(),
            kind,
            default: None,
            required: false,
            sensitive: false,
            doc: doc.to_string(),
            conflicts: Vec::new(),
        }
    }

    fn new(name: &str, kind: OptionKind, doc: &str) -> Self {
        Self::of_kind(name, kind, doc)
    }

    /// A text option.
    pub fn string(name: &str, doc: &str) -> Self {
        Self::new(name, OptionKind::String, doc)
    }
    /// A boolean option.
    pub fn bool(name: &str, doc: &str) -> Self {
        Self::new(name, OptionKind::Bool, doc)
    }
    /// A whole-number option within `[min, max]`.
    pub fn int(name: &str, min: i64, max: i64, doc: &str) -> Self {
        Self::new(name, OptionKind::Int { min, max }, doc)
    }
    /// A duration option.
    pub fn duration(name: &str, doc: &str) -> Self {
        Self::new(name, OptionKind::Duration, doc)
    }
    /// A byte-size option.
    pub fn bytes(name: &str, doc: &str) -> Self {
        Self::new(name, OptionKind::Bytes, doc)
    }
    /// An option with a fixed set of allowed words.
    pub fn one_of(name: &str, values: &[&str], doc: &str) -> Self {
        Self::new(
            name,
            OptionKind::Enum {
                values: values.iter().map(|v| v.to_string()).collect(),
            },
            doc,
        )
    }
    /// A JSON option.
    pub fn json(name: &str, doc: &str) -> Self {
        Self::new(name, OptionKind::Json, doc)
    }
    /// A pass-through prefix (`kafka.`): every option starting with it is accepted.
    pub fn prefix(name: &str, doc: &str) -> Self {
        Self::new(name, OptionKind::Prefix, doc)
    }
    /// Sets the default value.
    pub fn default_value(mut self, value: impl ToString) -> Self {
        self.default = Some(value.to_string());
        self
    }
    /// Marks the option required.
    pub fn required(mut self) -> Self {
        self.required = true;
        self
    }
    /// Marks the value secret.
    pub fn sensitive(mut self) -> Self {
        self.sensitive = true;
        self
    }
    /// Adds a conflict rule.
    pub fn conflict(mut self, rule: Conflict) -> Self {
        self.conflicts.push(rule.to_rule());
        self
    }

    fn matches(&self, key: &str) -> bool {
        match self.kind {
            OptionKind::Prefix => key
                .to_ascii_lowercase()
                .starts_with(&self.name.to_ascii_lowercase()),
            _ => key.eq_ignore_ascii_case(&self.name),
        }
    }

    /// Checks one value against this spec's type.
    pub fn check_value(&self, value: &str) -> Result<()> {
        let bad = |allowed: String| {
            invalid_value(
                &self.name,
                if self.sensitive { "***" } else { value },
                &allowed,
            )
        };
        match &self.kind {
            OptionKind::String | OptionKind::Prefix => Ok(()),
            OptionKind::Bool => parse_bool(value)
                .map(|_| ())
                .ok_or_else(|| bad("true or false".into())),
            OptionKind::Int { min, max } => match value.trim().parse::<i64>() {
                Ok(n) if n >= *min && n <= *max => Ok(()),
                _ => Err(bad(int_range_text(*min, *max))),
            },
            OptionKind::Duration => parse_duration(value)
                .map(|_| ())
                .ok_or_else(|| bad("a duration such as 500ms, 10s, 5m or 1h".into())),
            OptionKind::Bytes => parse_bytes(value)
                .map(|_| ())
                .ok_or_else(|| bad("a size such as 1048576, 64k, 512m or 10g".into())),
            OptionKind::Enum { values } => {
                if values.iter().any(|v| v.eq_ignore_ascii_case(value.trim())) {
                    Ok(())
                } else {
                    Err(bad(format!("one of {}", values.join(", "))))
                }
            }
            OptionKind::Json => serde_json::from_str::<serde_json::Value>(value)
                .map(|_| ())
                .map_err(|e| bad(format!("valid JSON ({e})"))),
        }
    }

    /// Validates a whole option map against a list of specs: unknown options (with a suggestion),
    /// missing required options and badly typed values are refused. Returns a [`ParsedOptions`]
    /// with typed getters that apply defaults.
    pub fn validate_all(
        specs: &[OptionSpec],
        options: &Options,
        connector: &str,
    ) -> Result<ParsedOptions> {
        for (key, value) in options.iter() {
            let spec = specs.iter().find(|s| s.matches(key));
            match spec {
                Some(spec) => spec
                    .check_value(value)
                    .map_err(|e| e.with_context("connector", connector))?,
                None => return Err(unknown_option(specs, key, connector)),
            }
        }
        for spec in specs.iter().filter(|s| s.required) {
            if !options.contains(&spec.name) {
                let typo = near_miss(&spec.name, options.iter().map(|(k, _)| k))
                    .map(|k| format!(" ('{k}' was given: did you mean '{}'?)", spec.name))
                    .unwrap_or_default();
                return Err(Error::new(
                    ErrorCode::MissingOption,
                    format!(
                        "option '{}' is required for '{}': {}{typo}",
                        spec.name, connector, spec.doc
                    ),
                )
                .with_context("option", &spec.name)
                .with_context("connector", connector));
            }
        }
        for spec in specs.iter().filter(|s| !s.conflicts.is_empty()) {
            if options.contains(&spec.name) {
                for rule in &spec.conflicts {
                    rule.check(&spec.name, options, specs)?;
                }
            }
        }
        let mut options = options.clone();
        options.mark_sensitive(specs);
        Ok(ParsedOptions {
            specs: specs.to_vec(),
            options,
        })
    }
}

fn int_range_text(min: i64, max: i64) -> String {
    match (min, max) {
        (1, i64::MAX) => "a positive whole number".into(),
        (0, i64::MAX) => "a whole number >= 0".into(),
        (min, i64::MAX) => format!("a whole number >= {min}"),
        (min, max) => format!("a whole number from {min} to {max}"),
    }
}

/// The given key that looks like a misspelling of `wanted` (a missing required option), if any:
/// `kafka.bootstrap.server` for `kafka.bootstrap.servers`.
pub fn near_miss<'a>(wanted: &str, given: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let wanted = wanted.to_ascii_lowercase();
    given
        .filter(|k| !k.eq_ignore_ascii_case(&wanted))
        .map(|k| (strsim::jaro_winkler(&k.to_ascii_lowercase(), &wanted), k))
        .filter(|(score, _)| *score > 0.9)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| k)
}

fn unknown_option(specs: &[OptionSpec], key: &str, connector: &str) -> Error {
    let lower = key.to_ascii_lowercase();
    let best = specs
        .iter()
        .filter(|s| s.kind != OptionKind::Prefix)
        .map(|s| {
            (
                strsim::jaro_winkler(&lower, &s.name.to_ascii_lowercase()),
                &s.name,
            )
        })
        .filter(|(score, _)| *score > 0.85)
        .max_by(|a, b| a.0.total_cmp(&b.0));
    let hint = match best {
        Some((_, name)) => format!("; did you mean '{name}'?"),
        None => {
            let mut names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
            names.sort_unstable();
            format!("; known options: {}", names.join(", "))
        }
    };
    Error::new(
        ErrorCode::UnknownOption,
        format!("unknown option '{key}' for '{connector}'{hint}"),
    )
    .with_context("option", key)
    .with_context("connector", connector)
}

/// Options that passed validation; getters apply the declared defaults.
#[derive(Debug, Clone)]
pub struct ParsedOptions {
    specs: Vec<OptionSpec>,
    options: Options,
}

impl ParsedOptions {
    /// The declaration of `name` (an internal error when the connector reads an option it did
    /// not declare).
    pub fn spec(&self, name: &str) -> Result<&OptionSpec> {
        self.specs
            .iter()
            .find(|s| s.name.eq_ignore_ascii_case(name))
            .ok_or_else(|| {
                Error::new(
                    ErrorCode::Internal,
                    format!("option '{name}' is read but not declared"),
                )
            })
    }

    /// The raw text (given or default).
    pub fn raw(&self, name: &str) -> Result<Option<String>> {
        let spec = self.spec(name)?;
        Ok(self
            .options
            .get(name)
            .map(str::to_string)
            .or_else(|| spec.default.clone()))
    }

    /// True when the user gave the option explicitly.
    pub fn is_set(&self, name: &str) -> bool {
        self.options.contains(name)
    }

    /// Refuses `option` when it was given although `applies` is false: an option that would be
    /// silently ignored (see [`conflicting`]).
    pub fn refuse_ignored(
        &self,
        option: &str,
        applies: bool,
        other: &str,
        why: &str,
    ) -> Result<()> {
        if self.is_set(option) && !applies {
            return Err(conflicting(option, other, why));
        }
        Ok(())
    }

    /// A text value.
    pub fn string(&self, name: &str) -> Result<Option<String>> {
        self.raw(name)
    }

    /// A required text value (declared `required` or with a default).
    pub fn required_string(&self, name: &str) -> Result<String> {
        self.raw(name)?.ok_or_else(|| {
            Error::new(
                ErrorCode::MissingOption,
                format!("option '{name}' is required"),
            )
            .with_context("option", name)
        })
    }

    /// A boolean value.
    pub fn bool(&self, name: &str) -> Result<Option<bool>> {
        self.typed(name, parse_bool)
    }

    /// A whole number.
    pub fn i64(&self, name: &str) -> Result<Option<i64>> {
        self.typed(name, |v| v.trim().parse().ok())
    }

    /// A duration.
    pub fn duration(&self, name: &str) -> Result<Option<Duration>> {
        self.typed(name, parse_duration)
    }

    /// A byte size.
    pub fn bytes(&self, name: &str) -> Result<Option<u64>> {
        self.typed(name, parse_bytes)
    }

    /// An enum value, lower-cased.
    pub fn word(&self, name: &str) -> Result<Option<String>> {
        Ok(self.raw(name)?.map(|v| v.trim().to_ascii_lowercase()))
    }

    /// A JSON value.
    pub fn json(&self, name: &str) -> Result<Option<serde_json::Value>> {
        self.typed(name, |v| serde_json::from_str(v).ok())
    }

    /// The options under a pass-through prefix, prefix removed.
    pub fn prefixed(&self, prefix: &str) -> Vec<(String, String)> {
        self.options
            .with_prefix(prefix)
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// The declarations the map was validated against.
    pub fn specs(&self) -> &[OptionSpec] {
        &self.specs
    }

    /// The underlying map.
    pub fn options(&self) -> &Options {
        &self.options
    }

    fn typed<T>(&self, name: &str, parse: impl Fn(&str) -> Option<T>) -> Result<Option<T>> {
        let spec = self.spec(name)?;
        match self.raw(name)? {
            None => Ok(None),
            Some(v) => match parse(&v) {
                Some(t) => Ok(Some(t)),
                None => Err(spec.check_value(&v).err().unwrap_or_else(|| {
                    Error::new(
                        ErrorCode::InvalidOption,
                        format!("invalid value for option '{name}'"),
                    )
                })),
            },
        }
    }
}

/// Parses `true`/`false` case-insensitively.
pub fn parse_bool(v: &str) -> Option<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

/// Parses `500ms`, `10s`, `5 minutes`, `1h 30m` or a plain number of milliseconds.
pub fn parse_duration(v: &str) -> Option<Duration> {
    let t = v.trim();
    if let Ok(ms) = t.parse::<u64>() {
        return Some(Duration::from_millis(ms));
    }
    if let Ok(d) = humantime::parse_duration(t) {
        return Some(d);
    }
    // Spark's interval strings (`processingTime = "100 milliseconds"`, `interval 10 seconds`):
    // the unit words humantime does not know, and the optional `interval` prefix
    let lower = t.to_ascii_lowercase();
    let lower = lower.strip_prefix("interval ").unwrap_or(&lower);
    let spark: Vec<&str> = lower
        .split_whitespace()
        .map(|w| match w {
            "millisecond" | "milliseconds" => "ms",
            "microsecond" | "microseconds" => "us",
            "nanosecond" | "nanoseconds" => "ns",
            other => other,
        })
        .collect();
    humantime::parse_duration(&spark.join(" ")).ok()
}

/// Parses `1048576`, `64k`, `512m`, `10g`, `1t` (binary multiples; an optional `b`/`ib` suffix).
pub fn parse_bytes(v: &str) -> Option<u64> {
    let t = v.trim().to_ascii_lowercase();
    let t = t
        .strip_suffix("ib")
        .or_else(|| t.strip_suffix('b'))
        .unwrap_or(&t);
    let (num, mult) = match t.chars().last()? {
        'k' => (&t[..t.len() - 1], 1u64 << 10),
        'm' => (&t[..t.len() - 1], 1 << 20),
        'g' => (&t[..t.len() - 1], 1 << 30),
        't' => (&t[..t.len() - 1], 1 << 40),
        _ => (t, 1),
    };
    num.trim().parse::<u64>().ok()?.checked_mul(mult)
}

#[cfg(test)]
mod tests;
