//! DataFusion errors mapped into [`tributary_sdk::Error`].
//!
//! A SQL error found at start (syntax, unknown column or table, type mismatch) carries the
//! position DataFusion gives it (`line:column`, from the parser message or from the planner's
//! [`Diagnostic`](datafusion::common::Diagnostic) span) and DataFusion's own message, under the
//! code `INVALID_PIPELINE` with context `option = transform.sql` and `position`. The runtime adds
//! the pipeline file's name. An error while a batch runs through the query is a record error
//! (`MALFORMED_RECORD`: a cast that fails on a value, a division by zero) or `INTERNAL_ERROR`.

use datafusion::error::DataFusionError;
use tributary_sdk::{Error, ErrorCode};

/// The option the SQL text comes from, as errors name it.
pub(crate) const SQL_OPTION: &str = "transform.sql";

/// Maps an error raised while parsing or planning the query.
pub(crate) fn sql_error(e: &DataFusionError, sql: &str) -> Error {
    let position = position(e);
    let message = clean(e);
    let mut text = String::from("[transform] sql");
    if let Some((line, column)) = position {
        text.push_str(&format!(" at line {line}, column {column}"));
    }
    text.push_str(": ");
    text.push_str(&message);
    if let Some(excerpt) = position.and_then(|(line, column)| excerpt(sql, line, column)) {
        text.push('\n');
        text.push_str(&excerpt);
    }
    let mut err = Error::new(ErrorCode::InvalidPipeline, text).with_context("option", SQL_OPTION);
    if let Some((line, column)) = position {
        err = err.with_context("position", format!("{line}:{column}"));
    }
    err
}

/// Maps an error raised while a batch runs through the planned query.
pub(crate) fn execution_error(e: &DataFusionError) -> Error {
    let root = e.find_root();
    let code = match root {
        DataFusionError::Internal(_)
        | DataFusionError::NotImplemented(_)
        | DataFusionError::ResourcesExhausted(_)
        | DataFusionError::Shared(_)
        | DataFusionError::External(_) => ErrorCode::Internal,
        _ => ErrorCode::MalformedRecord,
    };
    Error::new(
        code,
        format!("[transform] sql failed on a batch: {}", clean(e)),
    )
    .with_context("option", SQL_OPTION)
}

/// DataFusion's message without backtrace, and without the error-kind prefixes it stacks when it
/// wraps errors ("Error during planning: ", "SQL error: ParserError(...)").
fn clean(e: &DataFusionError) -> String {
    let root = e.find_root();
    let text = match root {
        DataFusionError::SQL(p, _) => p.to_string(),
        other => other.strip_backtrace(),
    };
    let text = text.trim();
    for prefix in [
        "sql parser error: ",
        "Error during planning: ",
        "Schema error: ",
    ] {
        if let Some(rest) = text.strip_prefix(prefix) {
            return rest.trim().to_string();
        }
    }
    text.to_string()
}

/// Where the error is: the planner's diagnostic span, else "Line: L, Column: C" in the parser's
/// message.
fn position(e: &DataFusionError) -> Option<(u64, u64)> {
    if let Some(span) = e.diagnostic().and_then(|d| d.span) {
        if span.start.line > 0 {
            return Some((span.start.line, span.start.column));
        }
    }
    e.iter().find_map(|e| match e {
        DataFusionError::SQL(p, _) => parse_position(&p.to_string()),
        _ => None,
    })
}

/// Reads "at Line: 3, Column: 17" (sqlparser's wording).
fn parse_position(message: &str) -> Option<(u64, u64)> {
    let rest = &message[message.rfind("Line: ")? + "Line: ".len()..];
    let (line, rest) = rest.split_once(", Column: ")?;
    let column: String = rest.chars().take_while(char::is_ascii_digit).collect();
    Some((line.trim().parse().ok()?, column.parse().ok()?))
}

/// The offending line with a caret under the column, when the query spans several lines or is
/// long enough that a column number alone is hard to follow.
fn excerpt(sql: &str, line: u64, column: u64) -> Option<String> {
    let text = sql
        .lines()
        .nth(usize::try_from(line).ok()?.checked_sub(1)?)?;
    let column = usize::try_from(column).ok()?.checked_sub(1)?;
    if column > text.chars().count() {
        return None;
    }
    Some(format!("  {text}\n  {}^", " ".repeat(column)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parser_positions_are_read() {
        assert_eq!(
            parse_position("Expected: an expression, found: FROM at Line: 2, Column: 8"),
            Some((2, 8))
        );
        assert_eq!(parse_position("no position here"), None);
    }

    #[test]
    fn excerpt_points_at_the_column() {
        let e = excerpt("SELECT a\nFROM sourc", 2, 6);
        assert_eq!(e.as_deref(), Some("  FROM sourc\n       ^"));
        assert_eq!(excerpt("SELECT", 3, 1), None);
    }
}
