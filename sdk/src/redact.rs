//! Credentials embedded in text, masked before the text reaches an error, a log or a listing.
//!
//! A URL's user information (`s3://KEY:SECRET@bucket/...`, `https://user:pw@registry`) is the one
//! place a secret hides in an ordinary option value. [`mask_url_userinfo`] replaces it with `***`
//! wherever a `scheme://` appears in a text, whatever surrounds it (quotes, brackets, another
//! message), so an error built with `format!` around a user's value cannot carry it.
//! [`crate::Error`] applies it to its message, context and cause.

use std::borrow::Cow;

/// Characters that end a URL's authority (`scheme://authority/...`). A space does not: a
/// password typed with a space in it must not leave its tail in the text.
fn ends_authority(c: char) -> bool {
    matches!(
        c,
        '/' | '?' | '#' | '\'' | '"' | '`' | '<' | '>' | ')' | ']' | '}' | '\n' | '\r'
    )
}

fn is_azure(scheme: &str) -> bool {
    ["abfs", "abfss", "wasb", "wasbs"]
        .iter()
        .any(|s| s.eq_ignore_ascii_case(scheme))
}

/// `text` with the user information of every URL in it replaced by `***`
/// (`s3://***@bucket/key`).
pub fn mask_url_userinfo(text: &str) -> Cow<'_, str> {
    if !text.contains("://") || !text.contains('@') {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut changed = false;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i + 3);
        out.push_str(head);
        let scheme: String = head[..i]
            .chars()
            .rev()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        let end = tail.find(ends_authority).unwrap_or(tail.len());
        let authority = &tail[..end];
        match authority.rfind('@') {
            // Azure's `abfss://container@account...`: the user part is a container name.
            Some(at) if is_azure(&scheme) && !authority[..at].contains(':') => {
                out.push_str(authority)
            }
            Some(at) if at > 0 => {
                out.push_str("***");
                out.push_str(&authority[at..]);
                changed = true;
            }
            _ => out.push_str(authority),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    if changed {
        Cow::Owned(out)
    } else {
        Cow::Borrowed(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_information_is_masked_wherever_a_url_appears() {
        assert_eq!(
            mask_url_userinfo("bad path ('s3://AKIA:Top Secret@bucket/in'): no"),
            "bad path ('s3://***@bucket/in'): no"
        );
        assert_eq!(
            mask_url_userinfo("s3://KEY:SECRET@bucket/in and https://u:p@h:8081/x"),
            "s3://***@bucket/in and https://***@h:8081/x"
        );
        assert_eq!(mask_url_userinfo("s3://AKIAONLY@bucket"), "s3://***@bucket");
        assert_eq!(
            mask_url_userinfo("abfss://container@account.dfs.core.windows.net/p"),
            "abfss://container@account.dfs.core.windows.net/p"
        );
        assert_eq!(
            mask_url_userinfo("abfss://c:key@account.dfs.core.windows.net/p"),
            "abfss://***@account.dfs.core.windows.net/p"
        );
        assert!(matches!(
            mask_url_userinfo("s3://bucket/key@2"),
            Cow::Borrowed(_)
        ));
        assert_eq!(mask_url_userinfo("mail me@home"), "mail me@home");
        assert_eq!(mask_url_userinfo("x://@h"), "x://@h");
    }
}
