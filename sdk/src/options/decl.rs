//! Typed option declarations: one `const` per option carries its name, type, default, allowed
//! values, documentation, sensitivity and conflicts, and reads its own typed value.
//!
//! A connector declares each option once as an [`OptionDecl`] constant. The same constant
//! yields the [`OptionSpec`] that validation, `plugins inspect` and option tables use
//! ([`DeclaredOption::spec`], [`specs`]), and the typed value with the declared default applied
//! ([`OptionDecl::get`]), so neither the name nor the default is written a second time in the
//! connector's `parse`. Whether an option has a default is part of its type: `get` on an
//! option declared with [`OptionDecl::default`] or [`OptionDecl::required`] returns the value,
//! on one without returns an `Option`.
//!
//! ```
//! use std::time::Duration;
//! use tributary_sdk::options::decl::{self, Defaulted, Dur, Flag, OptionDecl};
//! use tributary_sdk::options::{Conflict, Options, OptionSpec};
//!
//! const MIN_ROWS: OptionDecl<decl::Int> = decl::int("minRows", 1, i64::MAX, "Fewest rows a batch waits for.");
//! const MAX_DELAY: OptionDecl<Dur, Defaulted> = decl::duration("maxDelay", "Longest wait for minRows.")
//!     .default("15m")
//!     .conflicts(&[Conflict::requires("minRows", "is only used with 'minRows'")]);
//! const HEADERS: OptionDecl<Flag, Defaulted> = decl::flag("headers", "Add headers.").default(false);
//!
//! let specs = decl::specs(&[&MIN_ROWS, &MAX_DELAY, &HEADERS]);
//! let p = OptionSpec::validate_all(&specs, &Options::new().with("minRows", "5"), "demo").unwrap();
//! assert_eq!(MAX_DELAY.get(&p).unwrap(), Duration::from_secs(900));
//! assert_eq!(MIN_ROWS.get(&p).unwrap(), Some(5));
//! assert!(!HEADERS.get(&p).unwrap());
//!
//! let e = OptionSpec::validate_all(&specs, &Options::new().with("maxDelay", "1s"), "demo").unwrap_err();
//! assert_eq!(e.code().as_str(), "CONFLICTING_OPTIONS");
//! ```

use std::marker::PhantomData;
use std::time::Duration;

use super::{
    parse_bool, parse_bytes, parse_duration, Conflict, OptionKind, OptionSpec, ParsedOptions,
};
use crate::error::{Error, ErrorCode, Result};

/// How an option's text becomes a typed value, and how its default is written.
pub trait OptionType: Copy + Send + Sync + 'static {
    /// The typed value the accessors return.
    type Value;
    /// How a default is written in the declaration.
    type Default: Copy + Send + Sync + 'static;
    /// The kind recorded in the [`OptionSpec`].
    fn kind(self) -> OptionKind;
    /// The default as text (what the spec documents).
    fn default_text(default: Self::Default) -> String;
    /// Converts validated text; `None` when it does not parse.
    fn parse(self, text: &str) -> Option<Self::Value>;
}

/// Any text.
#[derive(Debug, Clone, Copy)]
pub struct Text;
/// `true` or `false`.
#[derive(Debug, Clone, Copy)]
pub struct Flag;
/// A whole number within `[min, max]`.
#[derive(Debug, Clone, Copy)]
pub struct Int {
    /// Smallest allowed value.
    pub min: i64,
    /// Largest allowed value.
    pub max: i64,
}
/// A duration (`10s`, `5m`, milliseconds).
#[derive(Debug, Clone, Copy)]
pub struct Dur;
/// A byte size (`64k`, `256mb`, bytes).
#[derive(Debug, Clone, Copy)]
pub struct Size;
/// One of a fixed set of words; the value is the declared spelling of the word given.
#[derive(Debug, Clone, Copy)]
pub struct OneOf(pub &'static [&'static str]);
/// A JSON document.
#[derive(Debug, Clone, Copy)]
pub struct Json;

impl OptionType for Text {
    type Value = String;
    type Default = &'static str;
    fn kind(self) -> OptionKind {
        OptionKind::String
    }
    fn default_text(d: &'static str) -> String {
        d.to_string()
    }
    fn parse(self, text: &str) -> Option<String> {
        Some(text.to_string())
    }
}

impl OptionType for Flag {
    type Value = bool;
    type Default = bool;
    fn kind(self) -> OptionKind {
        OptionKind::Bool
    }
    fn default_text(d: bool) -> String {
        d.to_string()
    }
    fn parse(self, text: &str) -> Option<bool> {
        parse_bool(text)
    }
}

impl OptionType for Int {
    type Value = i64;
    type Default = i64;
    fn kind(self) -> OptionKind {
        OptionKind::Int {
            min: self.min,
            max: self.max,
        }
    }
    fn default_text(d: i64) -> String {
        d.to_string()
    }
    fn parse(self, text: &str) -> Option<i64> {
        text.trim()
            .parse::<i64>()
            .ok()
            .filter(|n| (self.min..=self.max).contains(n))
    }
}

impl OptionType for Dur {
    type Value = Duration;
    type Default = &'static str;
    fn kind(self) -> OptionKind {
        OptionKind::Duration
    }
    fn default_text(d: &'static str) -> String {
        d.to_string()
    }
    fn parse(self, text: &str) -> Option<Duration> {
        parse_duration(text)
    }
}

impl OptionType for Size {
    type Value = u64;
    type Default = &'static str;
    fn kind(self) -> OptionKind {
        OptionKind::Bytes
    }
    fn default_text(d: &'static str) -> String {
        d.to_string()
    }
    fn parse(self, text: &str) -> Option<u64> {
        parse_bytes(text)
    }
}

impl OptionType for OneOf {
    type Value = &'static str;
    type Default = &'static str;
    fn kind(self) -> OptionKind {
        OptionKind::Enum {
            values: self.0.iter().map(|v| v.to_string()).collect(),
        }
    }
    fn default_text(d: &'static str) -> String {
        d.to_string()
    }
    fn parse(self, text: &str) -> Option<&'static str> {
        let t = text.trim();
        self.0.iter().copied().find(|v| v.eq_ignore_ascii_case(t))
    }
}

impl OptionType for Json {
    type Value = serde_json::Value;
    type Default = &'static str;
    fn kind(self) -> OptionKind {
        OptionKind::Json
    }
    fn default_text(d: &'static str) -> String {
        d.to_string()
    }
    fn parse(self, text: &str) -> Option<serde_json::Value> {
        serde_json::from_str(text).ok()
    }
}

/// Marker: no default; [`OptionDecl::get`] returns `Option<T::Value>`.
#[derive(Debug, Clone, Copy)]
pub enum Optional {}
/// Marker: declared with a default; [`OptionDecl::get`] returns `T::Value`.
#[derive(Debug, Clone, Copy)]
pub enum Defaulted {}
/// Marker: must be given; [`OptionDecl::get`] returns `T::Value`.
#[derive(Debug, Clone, Copy)]
pub enum Required {}

/// Whether a declaration has a default or must be given ([`Optional`], [`Defaulted`],
/// [`Required`]).
pub trait DeclState: 'static {
    /// True for [`Required`].
    const REQUIRED: bool;
}
impl DeclState for Optional {
    const REQUIRED: bool = false;
}
impl DeclState for Defaulted {
    const REQUIRED: bool = false;
}
impl DeclState for Required {
    const REQUIRED: bool = true;
}

/// The one declaration of an option (see the module documentation).
#[derive(Debug)]
pub struct OptionDecl<T: OptionType, S = Optional> {
    /// The option name as documented (matched case-insensitively).
    pub name: &'static str,
    /// Type and allowed values.
    pub ty: T,
    /// The default, written in the type's own form.
    pub default: Option<T::Default>,
    /// One or two sentences for users.
    pub doc: &'static str,
    /// True when the value is a secret (never printed).
    pub sensitive: bool,
    /// Options this one cannot be combined with, or needs.
    pub conflicts: &'static [Conflict],
    state: PhantomData<fn() -> S>,
}

impl<T: OptionType, S> Clone for OptionDecl<T, S> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T: OptionType, S> Copy for OptionDecl<T, S> {}

const fn new<T: OptionType>(name: &'static str, ty: T, doc: &'static str) -> OptionDecl<T> {
    OptionDecl {
        name,
        ty,
        default: None,
        doc,
        sensitive: false,
        conflicts: &[],
        state: PhantomData,
    }
}

/// A text option.
pub const fn text(name: &'static str, doc: &'static str) -> OptionDecl<Text> {
    new(name, Text, doc)
}
/// A boolean option.
pub const fn flag(name: &'static str, doc: &'static str) -> OptionDecl<Flag> {
    new(name, Flag, doc)
}
/// A whole-number option within `[min, max]`.
pub const fn int(name: &'static str, min: i64, max: i64, doc: &'static str) -> OptionDecl<Int> {
    new(name, Int { min, max }, doc)
}
/// A duration option.
pub const fn duration(name: &'static str, doc: &'static str) -> OptionDecl<Dur> {
    new(name, Dur, doc)
}
/// A byte-size option.
pub const fn bytes(name: &'static str, doc: &'static str) -> OptionDecl<Size> {
    new(name, Size, doc)
}
/// An option with a fixed set of allowed words.
pub const fn one_of(
    name: &'static str,
    values: &'static [&'static str],
    doc: &'static str,
) -> OptionDecl<OneOf> {
    new(name, OneOf(values), doc)
}
/// A JSON option.
pub const fn json(name: &'static str, doc: &'static str) -> OptionDecl<Json> {
    new(name, Json, doc)
}

impl<T: OptionType> OptionDecl<T, Optional> {
    /// Declares the default (written once, here).
    pub const fn default(self, value: T::Default) -> OptionDecl<T, Defaulted> {
        OptionDecl {
            name: self.name,
            ty: self.ty,
            default: Some(value),
            doc: self.doc,
            sensitive: self.sensitive,
            conflicts: self.conflicts,
            state: PhantomData,
        }
    }

    /// Declares the option required.
    pub const fn required(self) -> OptionDecl<T, Required> {
        OptionDecl {
            name: self.name,
            ty: self.ty,
            default: None,
            doc: self.doc,
            sensitive: self.sensitive,
            conflicts: self.conflicts,
            state: PhantomData,
        }
    }

    /// The value given, or `None`.
    pub fn get(&self, p: &ParsedOptions) -> Result<Option<T::Value>> {
        self.read(p)
    }
}

impl<T: OptionType> OptionDecl<T, Defaulted> {
    /// The value given, else the declared default.
    pub fn get(&self, p: &ParsedOptions) -> Result<T::Value> {
        self.read(p)?.ok_or_else(|| self.no_value())
    }
}

impl<T: OptionType> OptionDecl<T, Required> {
    /// The value given (validation refused a map without it).
    pub fn get(&self, p: &ParsedOptions) -> Result<T::Value> {
        self.read(p)?.ok_or_else(|| {
            Error::new(
                ErrorCode::MissingOption,
                format!("option '{}' is required", self.name),
            )
            .with_context("option", self.name)
        })
    }
}

impl<T: OptionType, S: DeclState> OptionDecl<T, S> {
    /// Marks the value secret.
    pub const fn sensitive(mut self) -> Self {
        self.sensitive = true;
        self
    }

    /// Declares what the option cannot be combined with, or needs (checked by
    /// [`OptionSpec::validate_all`], `CONFLICTING_OPTIONS` naming both).
    pub const fn conflicts(mut self, conflicts: &'static [Conflict]) -> Self {
        self.conflicts = conflicts;
        self
    }

    /// True when the user gave the option.
    pub fn is_set(&self, p: &ParsedOptions) -> bool {
        p.is_set(self.name)
    }

    /// The value only if the user gave it (the default not applied).
    pub fn given(&self, p: &ParsedOptions) -> Result<Option<T::Value>> {
        if self.is_set(p) {
            self.read(p)
        } else {
            Ok(None)
        }
    }

    /// The text given, else the default's text (for values a connector parses itself).
    pub fn text(&self, p: &ParsedOptions) -> Result<Option<String>> {
        p.raw(self.name)
    }

    /// The default as text, if declared.
    pub fn default_text(&self) -> Option<String> {
        self.default.map(T::default_text)
    }

    fn read(&self, p: &ParsedOptions) -> Result<Option<T::Value>> {
        let Some(text) = p.raw(self.name)? else {
            return Ok(None);
        };
        match self.ty.parse(&text) {
            Some(v) => Ok(Some(v)),
            None => Err(self
                .spec()
                .check_value(&text)
                .err()
                .unwrap_or_else(|| self.no_value())),
        }
    }

    fn no_value(&self) -> Error {
        Error::new(
            ErrorCode::Internal,
            format!(
                "option '{}' has no usable value (its declared default does not parse)",
                self.name
            ),
        )
        .with_context("option", self.name)
    }
}

/// A pass-through prefix (`kafka.`): every option starting with it is accepted.
#[derive(Debug, Clone, Copy)]
pub struct PrefixDecl {
    /// The prefix, with its trailing dot.
    pub name: &'static str,
    /// One or two sentences for users.
    pub doc: &'static str,
}

/// A pass-through prefix declaration.
pub const fn prefix(name: &'static str, doc: &'static str) -> PrefixDecl {
    PrefixDecl { name, doc }
}

impl PrefixDecl {
    /// The options under the prefix, prefix removed, keys as written.
    pub fn get(&self, p: &ParsedOptions) -> Vec<(String, String)> {
        p.prefixed(self.name)
    }
}

/// Anything that declares one option: yields its [`OptionSpec`].
pub trait DeclaredOption: Sync {
    /// The spec validation and documentation use.
    fn spec(&self) -> OptionSpec;
}

impl<T: OptionType, S: DeclState> DeclaredOption for OptionDecl<T, S> {
    fn spec(&self) -> OptionSpec {
        let mut spec = OptionSpec::of_kind(self.name, self.ty.kind(), self.doc);
        spec.default = self.default_text();
        spec.required = S::REQUIRED;
        spec.sensitive = self.sensitive;
        spec.conflicts = self.conflicts.iter().map(Conflict::to_rule).collect();
        spec
    }
}

impl DeclaredOption for PrefixDecl {
    fn spec(&self) -> OptionSpec {
        OptionSpec::prefix(self.name, self.doc)
    }
}

/// The specs of a list of declarations, in order.
pub fn specs(decls: &[&dyn DeclaredOption]) -> Vec<OptionSpec> {
    decls.iter().map(|d| d.spec()).collect()
}

/// Checks a connector's declarations for mistakes a test should catch: a name declared twice
/// (case-insensitively), a default its own type refuses, a conflict rule naming an option
/// that is not declared.
pub fn check_specs(specs: &[OptionSpec]) -> Result<()> {
    let internal = |msg: String| Err(Error::new(ErrorCode::Internal, msg));
    for (i, s) in specs.iter().enumerate() {
        if specs[..i]
            .iter()
            .any(|o| o.name.eq_ignore_ascii_case(&s.name))
        {
            return internal(format!("option '{}' is declared twice", s.name));
        }
        if let Some(d) = &s.default {
            if let Err(e) = s.check_value(d) {
                return internal(format!("default of option '{}' is refused: {e}", s.name));
            }
        }
        for rule in &s.conflicts {
            let names: Vec<&str> = match rule {
                super::ConflictRule::Requires { any_of, .. } => {
                    any_of.iter().map(String::as_str).collect()
                }
                other => vec![other.other()],
            };
            for n in names {
                if !specs.iter().any(|o| o.matches(n)) {
                    return internal(format!(
                        "conflict rule of option '{}' names undeclared option '{n}'",
                        s.name
                    ));
                }
            }
        }
    }
    Ok(())
}
