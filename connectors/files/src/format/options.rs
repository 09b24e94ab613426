//! The options only some formats read (`wholeText`, `lineSep`), declared and parsed here, and the
//! refusals of general options that a format would ignore (the `schema` of text and binaryFile,
//! whose columns are fixed; `rescuedDataColumn` and `mode` where there is no rescued column).
//!
//! The files config calls [`specs`] (appended to its option list) and [`parse`] (after the
//! format is known); everything else about a format's options stays in this folder.

use tributary_sdk::options::conflicting;
use tributary_sdk::options::decl::{self, DeclaredOption, Defaulted, Flag, OptionDecl};
use tributary_sdk::{Error, ErrorCode, OptionSpec, ParsedOptions, Result};

use super::Format;
use crate::config::names;

/// `wholeText`: text files are one row each.
pub const WHOLE_TEXT: &str = "wholeText";
/// `lineSep`: the text line separator.
pub const LINE_SEP: &str = "lineSep";

const WHOLE_TEXT_DECL: OptionDecl<Flag, Defaulted> = decl::flag(
    WHOLE_TEXT,
    "cloudFiles.format=text: each file is one row (its whole text in 'value') instead of \
     one row per line.",
)
.default(false);

/// What the format-specific options say.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FormatOptions {
    /// Text: one row per file instead of one per line.
    pub whole_text: bool,
    /// Text: the line separator; `None` splits at `\n` (a `\r` before it is dropped).
    pub line_sep: Option<Vec<u8>>,
}

/// The options declared by the formats.
pub fn specs() -> Vec<OptionSpec> {
    vec![
        WHOLE_TEXT_DECL.spec(),
        OptionSpec::string(
            LINE_SEP,
            "cloudFiles.format=text: the line separator (any non-empty string); by default \\n, \
             with a \\r before it dropped.",
        ),
    ]
}

/// Parses the format options and refuses general options that `format` would ignore.
pub fn parse(p: &ParsedOptions, format: Format) -> Result<FormatOptions> {
    let text = format == Format::Text;
    for option in [WHOLE_TEXT, LINE_SEP] {
        p.refuse_ignored(
            option,
            text,
            names::FORMAT,
            "applies to cloudFiles.format=text only",
        )?;
    }
    let whole_text = WHOLE_TEXT_DECL.get(p)?;
    let line_sep = p.string(LINE_SEP)?;
    if whole_text && line_sep.is_some() {
        return Err(conflicting(
            LINE_SEP,
            WHOLE_TEXT,
            "splits lines, but wholeText=true reads each file as one row",
        ));
    }
    let line_sep = match line_sep {
        Some(s) if s.is_empty() => {
            return Err(Error::new(
                ErrorCode::InvalidOption,
                format!("option '{LINE_SEP}' must not be empty"),
            )
            .with_context("option", LINE_SEP))
        }
        Some(s) => Some(unescape(&s).into_bytes()),
        None => None,
    };
    if format.has_fixed_schema() {
        let why = match format {
            Format::Text => {
                "does not apply to cloudFiles.format=text, whose one column is 'value' (string)"
            }
            _ => {
                "does not apply to cloudFiles.format=binaryFile, whose columns are path, \
                 modificationTime, length and content"
            }
        };
        for option in [
            names::SCHEMA,
            names::SCHEMA_HINTS,
            names::INFER_COLUMN_TYPES,
            names::SAMPLE_FILES,
            names::SAMPLE_RECORDS,
            names::SCHEMA_EVOLUTION_MODE,
        ] {
            p.refuse_ignored(option, false, names::FORMAT, why)?;
        }
    }
    if !format.has_rescued_column() {
        let what = format.as_str();
        p.refuse_ignored(
            names::RESCUED,
            false,
            names::FORMAT,
            &format!("names a column that {what} streams do not have (JSON and CSV only)"),
        )?;
        p.refuse_ignored(
            names::MODE,
            false,
            names::FORMAT,
            &format!(
                "applies to JSON and CSV records; a {what} file that cannot be decoded fails with \
                 SOURCE_READ_FAILED"
            ),
        )?;
    }
    Ok(FormatOptions {
        whole_text,
        line_sep,
    })
}

/// `\n`, `\r`, `\t` and `\\` written as escapes in an option value become the characters.
fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('t') => out.push('\t'),
            Some('\\') => out.push('\\'),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes() {
        assert_eq!(unescape("\\r\\n"), "\r\n");
        assert_eq!(unescape("||"), "||");
        assert_eq!(unescape("a\\x"), "a\\x");
    }
}
