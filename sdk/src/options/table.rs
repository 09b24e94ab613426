//! A connector's option declarations as a table: name, type, default, allowed values,
//! sensitive, doc — as aligned text for a terminal ([`render_text`]) and as Markdown for a
//! README ([`render_markdown`]).

use super::{int_range_text, OptionKind, OptionSpec};

/// One row of the table, every cell as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionRow {
    /// The option name (a prefix ends with its dot and `*`).
    pub name: String,
    /// `string`, `bool`, `int`, `duration`, `bytes`, `enum`, `json` or `prefix`.
    pub kind: &'static str,
    /// The default, `(required)` or empty.
    pub default: String,
    /// The allowed values in words.
    pub allowed: String,
    /// `yes` for a secret, else empty.
    pub sensitive: &'static str,
    /// The documentation.
    pub doc: String,
}

/// The column headers, in order.
pub const HEADERS: [&str; 6] = [
    "name",
    "type",
    "default",
    "allowed values",
    "sensitive",
    "doc",
];

/// The rows of a spec list, in declaration order.
pub fn rows(specs: &[OptionSpec]) -> Vec<OptionRow> {
    specs.iter().map(row).collect()
}

fn row(s: &OptionSpec) -> OptionRow {
    let (kind, allowed) = match &s.kind {
        OptionKind::String => ("string", "any text".to_string()),
        OptionKind::Bool => ("bool", "true, false".to_string()),
        OptionKind::Int { min, max } => ("int", int_range_text(*min, *max)),
        OptionKind::Duration => (
            "duration",
            "500ms, 10s, 5m, 1h, or milliseconds".to_string(),
        ),
        OptionKind::Bytes => ("bytes", "64k, 512m, 10g, or bytes".to_string()),
        OptionKind::Enum { values } => ("enum", values.join(", ")),
        OptionKind::Json => ("json", "a JSON document".to_string()),
        OptionKind::Prefix => ("prefix", "passed through".to_string()),
    };
    let name = match s.kind {
        OptionKind::Prefix => format!("{}*", s.name),
        _ => s.name.clone(),
    };
    let default = match (&s.default, s.required) {
        (Some(_), _) if s.sensitive => "***".to_string(),
        (Some(d), _) => d.clone(),
        (None, true) => "(required)".to_string(),
        (None, false) => String::new(),
    };
    OptionRow {
        name,
        kind,
        default,
        allowed,
        sensitive: if s.sensitive { "yes" } else { "" },
        doc: s.doc.clone(),
    }
}

fn cells(r: &OptionRow) -> [&str; 6] {
    [&r.name, r.kind, &r.default, &r.allowed, r.sensitive, &r.doc]
}

/// The table as aligned plain text: a header line, a rule, one line per option (the doc
/// column is last and not padded).
pub fn render_text(specs: &[OptionSpec]) -> String {
    let rows = rows(specs);
    let mut widths = HEADERS.map(|h| h.chars().count());
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(cells(r)) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cs: [&str; 6]| {
        let mut out = String::new();
        for (i, c) in cs.iter().enumerate() {
            if i + 1 == cs.len() {
                out.push_str(c);
            } else {
                out.push_str(c);
                out.push_str(&" ".repeat(widths[i] - c.chars().count() + 2));
            }
        }
        out.trim_end().to_string()
    };
    let mut out = line(HEADERS);
    out.push('\n');
    let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    out.push_str(&line([
        &rule[0], &rule[1], &rule[2], &rule[3], &rule[4], &rule[5],
    ]));
    out.push('\n');
    for r in &rows {
        out.push_str(&line(cells(r)));
        out.push('\n');
    }
    out
}

/// The table as a GitHub-flavoured Markdown table (names and defaults in code spans, `|`
/// escaped).
pub fn render_markdown(specs: &[OptionSpec]) -> String {
    let esc = |s: &str| s.replace('|', "\\|").replace('\n', " ");
    let code = |s: &str| {
        if s.is_empty() || s == "(required)" {
            s.to_string()
        } else {
            format!("`{}`", esc(s))
        }
    };
    let mut out = format!("| {} |\n", HEADERS.join(" | "));
    out.push_str(&format!("|{}\n", "---|".repeat(HEADERS.len())));
    for r in rows(specs) {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            code(&r.name),
            r.kind,
            code(&r.default),
            esc(&r.allowed),
            r.sensitive,
            esc(&r.doc)
        ));
    }
    out
}
