//! Declared conflicts between options: an option that needs another, one that another makes
//! meaningless, one that only applies to some values of another.
//!
//! Each rule is declared with the option it refuses ([`Conflict`] in an
//! [`OptionDecl`](super::decl::OptionDecl), [`ConflictRule`] in the [`OptionSpec`]) and checked
//! by [`OptionSpec::validate_all`] after the values are type-checked, in declaration order. A
//! broken rule is `CONFLICTING_OPTIONS` naming both options ([`conflicting`]).

use serde::{Deserialize, Serialize};

use super::{OptionSpec, Options};
use crate::error::{Error, ErrorCode, Result};

/// A conflict rule as declared in a `const` option declaration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conflict {
    /// The option is refused unless `other` (or one of `or_any_of`) is given with a non-empty
    /// value; the error names `other`.
    Requires {
        /// The option it needs.
        other: &'static str,
        /// Options that serve as well.
        or_any_of: &'static [&'static str],
        /// Why, completing "option 'x' ...".
        why: &'static str,
    },
    /// The option is refused when `other` is given.
    Excludes {
        /// The option that wins.
        other: &'static str,
        /// Why.
        why: &'static str,
    },
    /// The option is refused unless `other`'s value (given or default) is one of `values`
    /// (case-insensitive).
    OnlyWhen {
        /// The option it depends on.
        other: &'static str,
        /// The values of `other` it applies to.
        values: &'static [&'static str],
        /// Why.
        why: &'static str,
    },
}

impl Conflict {
    /// Refused unless `other` is given.
    pub const fn requires(other: &'static str, why: &'static str) -> Conflict {
        Conflict::Requires {
            other,
            or_any_of: &[],
            why,
        }
    }

    /// Refused unless `other` or one of `or_any_of` is given.
    pub const fn requires_any(
        other: &'static str,
        or_any_of: &'static [&'static str],
        why: &'static str,
    ) -> Conflict {
        Conflict::Requires {
            other,
            or_any_of,
            why,
        }
    }

    /// Refused when `other` is given.
    pub const fn excludes(other: &'static str, why: &'static str) -> Conflict {
        Conflict::Excludes { other, why }
    }

    /// Refused unless `other`'s value is one of `values`.
    pub const fn only_when(
        other: &'static str,
        values: &'static [&'static str],
        why: &'static str,
    ) -> Conflict {
        Conflict::OnlyWhen { other, values, why }
    }

    /// The owned, serializable form kept in an [`OptionSpec`].
    pub fn to_rule(&self) -> ConflictRule {
        let own = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
        match *self {
            Conflict::Requires {
                other,
                or_any_of,
                why,
            } => ConflictRule::Requires {
                any_of: std::iter::once(other.to_string())
                    .chain(or_any_of.iter().map(|s| s.to_string()))
                    .collect(),
                why: why.to_string(),
            },
            Conflict::Excludes { other, why } => ConflictRule::Excludes {
                other: other.to_string(),
                why: why.to_string(),
            },
            Conflict::OnlyWhen { other, values, why } => ConflictRule::OnlyWhen {
                other: other.to_string(),
                values: own(values),
                why: why.to_string(),
            },
        }
    }
}

/// A conflict rule in an [`OptionSpec`] (serialized into plugin manifests).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "rule", rename_all = "camelCase")]
pub enum ConflictRule {
    /// See [`Conflict::Requires`].
    #[serde(rename_all = "camelCase")]
    Requires {
        /// The options of which one must be given.
        any_of: Vec<String>,
        /// Why.
        why: String,
    },
    /// See [`Conflict::Excludes`].
    Excludes {
        /// The option that wins.
        other: String,
        /// Why.
        why: String,
    },
    /// See [`Conflict::OnlyWhen`].
    OnlyWhen {
        /// The option it depends on.
        other: String,
        /// The values it applies to.
        values: Vec<String>,
        /// Why.
        why: String,
    },
}

impl ConflictRule {
    /// Checks the rule for `option` (already known to be given) against the map.
    pub(super) fn check(
        &self,
        option: &str,
        options: &Options,
        specs: &[OptionSpec],
    ) -> Result<()> {
        let given = |name: &str| options.get(name).is_some_and(|v| !v.trim().is_empty());
        // A rule about an option the list does not declare (a subset of a connector's options,
        // as a command takes) does not apply.
        if !specs.iter().any(|s| s.matches(self.other())) {
            return Ok(());
        }
        match self {
            ConflictRule::Requires { any_of, why } => {
                if !any_of.iter().any(|o| given(o)) {
                    let first = any_of.first().map(String::as_str).unwrap_or_default();
                    return Err(conflicting(option, first, why));
                }
            }
            ConflictRule::Excludes { other, why } => {
                if options.contains(other) {
                    return Err(conflicting(option, other, why));
                }
            }
            ConflictRule::OnlyWhen { other, values, why } => {
                let value = options.get(other).map(str::to_string).or_else(|| {
                    specs
                        .iter()
                        .find(|s| s.name.eq_ignore_ascii_case(other))
                        .and_then(|s| s.default.clone())
                });
                let applies =
                    value.is_some_and(|v| values.iter().any(|w| w.eq_ignore_ascii_case(v.trim())));
                if !applies {
                    return Err(conflicting(option, other, why));
                }
            }
        }
        Ok(())
    }

    /// The other option the rule names first.
    pub fn other(&self) -> &str {
        match self {
            ConflictRule::Requires { any_of, .. } => {
                any_of.first().map(String::as_str).unwrap_or_default()
            }
            ConflictRule::Excludes { other, .. } | ConflictRule::OnlyWhen { other, .. } => other,
        }
    }
}

/// The error for an option that would be ignored, or two options that cannot be combined:
/// `CONFLICTING_OPTIONS` naming both (`option` and `conflicts_with` in the context).
///
/// ```
/// use tributary_sdk::options::conflicting;
/// let e = conflicting("cleanSource.moveDestination", "cloudFiles.cleanSource", "is only used when 'cloudFiles.cleanSource' is MOVE");
/// assert_eq!(e.code().as_str(), "CONFLICTING_OPTIONS");
/// assert!(e.to_string().contains("'cleanSource.moveDestination' is only used when"));
/// ```
pub fn conflicting(option: &str, other: &str, why: &str) -> Error {
    Error::new(
        ErrorCode::ConflictingOptions,
        format!("option '{option}' {why}; remove '{option}' or change '{other}'"),
    )
    .with_context("option", option)
    .with_context("conflicts_with", other)
}

/// The error for a value an option does not accept, as validation words it:
/// `INVALID_OPTION`, "invalid value 'v' for option 'o': expected ...", with `option` and
/// `allowed` in the context. For checks a declaration cannot express (a regular expression, a
/// name pattern).
pub fn invalid_value(option: &str, value: &str, allowed: &str) -> Error {
    Error::new(
        ErrorCode::InvalidOption,
        format!("invalid value '{value}' for option '{option}': expected {allowed}"),
    )
    .with_context("option", option)
    .with_context("allowed", allowed)
}
