//! Spark's CSV `escape` semantics on top of `csv-core`: inside a quoted field, the escape
//! character (`\` by default) makes a following quote or escape literal (`\"` is `"`, `\\` is
//! `\`), and is itself kept before any other character (`"C:\dir"` reads `C:\dir`), as Spark's
//! parser (univocity) does. `csv-core` would drop it before any character, so before a window
//! reaches the parsers such a lone escape is doubled. Quoting is tracked as the framer does: a
//! quote opens a quoted field only at the start of a field; comment lines are left alone.

use std::borrow::Cow;

use crate::config::CsvOptions;

/// `window` with every escape character inside a quoted field that precedes neither a quote
/// nor an escape doubled; borrowed when there is none.
pub(crate) fn protect<'a>(window: &'a [u8], csv: &CsvOptions) -> Cow<'a, [u8]> {
    let Some(e) = csv.escape else {
        return Cow::Borrowed(window);
    };
    if memchr::memchr(e, window).is_none() {
        return Cow::Borrowed(window);
    }
    let q = csv.quote;
    let mut out = Vec::with_capacity(window.len() + 16);
    let (mut quoted, mut field_start, mut record_start) = (false, true, true);
    let mut i = 0;
    while i < window.len() {
        let b = window[i];
        if quoted {
            if b == e {
                match window.get(i + 1) {
                    Some(&n) if n == q || n == e => {
                        out.extend_from_slice(&[b, n]);
                        i += 2;
                    }
                    _ => {
                        out.extend_from_slice(&[e, e]);
                        i += 1;
                    }
                }
                continue;
            }
            if b == q {
                if window.get(i + 1) == Some(&q) {
                    out.extend_from_slice(&[q, q]);
                    i += 2;
                    continue;
                }
                quoted = false;
            }
            out.push(b);
            i += 1;
            continue;
        }
        if record_start && Some(b) == csv.comment {
            let end = memchr::memchr(b'\n', &window[i..]).map_or(window.len(), |n| i + n + 1);
            out.extend_from_slice(&window[i..end]);
            i = end;
            continue;
        }
        record_start = false;
        if field_start && b == q {
            quoted = true;
            field_start = false;
        } else if b == csv.delimiter {
            field_start = true;
        } else if b == b'\n' {
            field_start = true;
            record_start = true;
        } else {
            field_start = false;
        }
        out.push(b);
        i += 1;
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lone_escapes_in_quoted_fields_are_doubled_others_kept() {
        let csv = CsvOptions {
            comment: Some(b'#'),
            ..CsvOptions::default()
        };
        let p = |s: &str| String::from_utf8(protect(s.as_bytes(), &csv).into_owned()).unwrap();
        assert_eq!(p("1,\"C:\\dir\"\n"), "1,\"C:\\\\dir\"\n");
        assert_eq!(p("\"a\\\"b\\\\c\"\n"), "\"a\\\"b\\\\c\"\n");
        assert_eq!(p("x\\y,\"\"\"\\q\"\n"), "x\\y,\"\"\"\\\\q\"\n");
        assert_eq!(p("# \"\\x\n\"\\x\"\n"), "# \"\\x\n\"\\\\x\"\n");
    }
}
