//! A library error's text as one bounded line, the way a Tributary error prints its cause.
//!
//! Client libraries put more in their error text than a user can read on one line: S3 appends
//! the raw XML response body (`<?xml ...><Error><Code>AccessDenied</Code>...`), the AWS SDK's
//! `DisplayErrorContext` appends the whole error as a Rust `Debug` dump
//! (`(DispatchFailure(DispatchFailure { source: ConnectorError { ... } }))`), and some texts
//! span lines. [`one_line`] keeps what the user needs: an XML error body becomes its
//! `Code: Message`, a trailing `Debug` dump after the readable chain is dropped, whitespace and
//! line breaks become single spaces, and the result is cut at [`MAX_CAUSE_CHARS`].

/// The most characters of a cause an error prints.
pub const MAX_CAUSE_CHARS: usize = 2048;

/// The text between `<tag>` and `</tag>`, if present.
fn tag<'a>(xml: &'a str, tag: &str) -> Option<&'a str> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let start = xml.find(&open)? + open.len();
    let end = start + xml[start..].find(&close)?;
    Some(xml[start..end].trim())
}

/// An XML response body (from its `<?xml` or `<Error>` on) replaced by its code and message.
fn reduce_xml(text: &str) -> String {
    let Some(at) = text.find("<?xml").or_else(|| text.find("<Error>")) else {
        return text.to_string();
    };
    let body = &text[at..];
    let summary = match (tag(body, "Code"), tag(body, "Message")) {
        (Some(c), Some(m)) => format!("{c}: {m}"),
        (Some(c), None) => c.to_string(),
        (None, Some(m)) => m.to_string(),
        (None, None) => "(response body omitted)".to_string(),
    };
    let head = text[..at].trim_end();
    if head.is_empty() {
        summary
    } else {
        format!("{head} {summary}")
    }
}

/// Drops a trailing ` (Name(...))` or ` (Name { ... })` whose parentheses close at the end of
/// the text: the `Debug` form `DisplayErrorContext` appends after the readable chain.
fn drop_debug_tail(text: &str) -> &str {
    let bytes = text.as_bytes();
    if bytes.last() != Some(&b')') {
        return text;
    }
    // Find the opening parenthesis matching the final one.
    let mut depth = 0usize;
    for (i, c) in text.char_indices().rev() {
        match c {
            ')' => depth += 1,
            '(' => {
                depth -= 1;
                if depth == 0 {
                    let inner = &text[i + 1..text.len() - 1];
                    let is_debug = inner.chars().next().is_some_and(char::is_uppercase)
                        && inner
                            .find(['(', '{'])
                            .is_some_and(|j| inner[..j].trim().chars().all(char::is_alphanumeric));
                    let before = text[..i].trim_end();
                    if is_debug && !before.is_empty() {
                        return before;
                    }
                    return text;
                }
            }
            _ => {}
        }
    }
    text
}

/// The cause text as one line of at most [`MAX_CAUSE_CHARS`] characters (see the module docs).
pub fn one_line(text: &str) -> String {
    let reduced = reduce_xml(text);
    let joined = drop_debug_tail(&reduced)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    if joined.chars().count() <= MAX_CAUSE_CHARS {
        return joined;
    }
    let head: String = joined.chars().take(MAX_CAUSE_CHARS).collect();
    format!("{head}…")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_s3_xml_body_becomes_its_code_and_message() {
        let text = "Client error with status 403 Forbidden: <?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>AccessDenied</Code><Message>Access Denied</Message><RequestId>X</RequestId></Error>";
        assert_eq!(
            one_line(text),
            "Client error with status 403 Forbidden: AccessDenied: Access Denied"
        );
        assert_eq!(one_line("<Error><Foo/></Error>"), "(response body omitted)");
    }

    #[test]
    fn a_debug_dump_after_the_readable_chain_is_dropped() {
        let text = "dispatch failure: io error: client error (Connect): tcp connect error: Connection refused (os error 111) (DispatchFailure(DispatchFailure { source: ConnectorError { kind: Io, source: hyper_util::client::legacy::Error(Connect, ConnectError(\"tcp connect error\", 127.0.0.1:1)), connection: Unknown } }))";
        assert_eq!(
            one_line(text),
            "dispatch failure: io error: client error (Connect): tcp connect error: Connection refused (os error 111)"
        );
        // Parentheses that are part of the text stay.
        assert_eq!(
            one_line("connection refused (os error 111)"),
            "connection refused (os error 111)"
        );
        assert_eq!(one_line("client error (Connect)"), "client error (Connect)");
        assert_eq!(one_line("(Foo(1))"), "(Foo(1))");
    }

    #[test]
    fn lines_are_joined_and_long_text_is_cut() {
        assert_eq!(one_line("a\n  b\r\n\tc"), "a b c");
        let long = "x".repeat(MAX_CAUSE_CHARS + 10);
        let cut = one_line(&long);
        assert_eq!(cut.chars().count(), MAX_CAUSE_CHARS + 1);
        assert!(cut.ends_with('…'));
    }
}
