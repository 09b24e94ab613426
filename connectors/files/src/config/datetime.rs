//! Spark's datetime patterns (`timestampFormat`, `dateFormat`: Java `DateTimeFormatter` letters
//! such as `yyyy-MM-dd HH:mm:ss.SSS`) translated to chrono's `strftime` syntax, which parses
//! the values. A leaf module.
//!
//! Supported letters: `y` (`yy`: two digits), `M` (`MMM` / `MMMM`: month names), `d`, `D`
//! (day of year), `H`, `h`, `m`, `s`, `S` (3, 6 or 9 digits), `a`, `E` (`EEEE`: full day name),
//! offsets `X`, `x`, `Z` (`Z` for UTC, or `+hh`, `+hhmm`, `+hh:mm`), quoted literals
//! (`'T'`, `''`). Anything else (zone names `z`/`V`, optional sections `[...]`, week-based
//! fields) is refused naming the letter, rather than parsed some other way.

use tributary_sdk::{Error, ErrorCode, Result};

/// The chrono pattern of Spark pattern `pattern` given in option `option`.
pub fn to_chrono(option: &str, pattern: &str) -> Result<String> {
    let refuse = |what: String| {
        Err(Error::new(
            ErrorCode::InvalidOption,
            format!(
                "option '{option}': the pattern '{pattern}' uses {what}, which this build does \
                 not parse; supported: y M d D H h m s S a E X x Z and quoted literals \
                 (e.g. yyyy-MM-dd'T'HH:mm:ss.SSSXXX)"
            ),
        )
        .with_context("option", option))
    };
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let mut n = 1;
        while i + n < chars.len() && chars[i + n] == c {
            n += 1;
        }
        if c == '\'' {
            // '' is a quote; 'text' is literal text.
            if n >= 2 {
                out.push_str(&"'".repeat(n / 2));
                i += n - n % 2;
                continue;
            }
            let Some(close) = chars[i + 1..].iter().position(|&x| x == '\'') else {
                return refuse("an unclosed quote".into());
            };
            for &lit in &chars[i + 1..i + 1 + close] {
                push_literal(&mut out, lit);
            }
            i += close + 2;
            continue;
        }
        if !c.is_ascii_alphabetic() {
            if c == '[' || c == ']' {
                return refuse("an optional section '[...]'".into());
            }
            push_literal(&mut out, c);
            i += 1;
            continue;
        }
        let piece = match (c, n) {
            ('y' | 'u', 2) => "%y",
            ('y' | 'u', _) => "%Y",
            ('M' | 'L', 1 | 2) => "%m",
            ('M' | 'L', 3) => "%b",
            ('M' | 'L', _) => "%B",
            ('d', 1 | 2) => "%d",
            ('D', _) => "%j",
            ('H', 1 | 2) => "%H",
            ('h', 1 | 2) => "%I",
            ('m', 1 | 2) => "%M",
            ('s', 1 | 2) => "%S",
            ('S', 3) => "%3f",
            ('S', 6) => "%6f",
            ('S', 9) => "%9f",
            ('a', 1) => "%p",
            ('E', 1..=3) => "%a",
            ('E', _) => "%A",
            ('X' | 'x' | 'Z', 1..=3) => "%#z",
            _ => return refuse(format!("'{}'", c.to_string().repeat(n))),
        };
        out.push_str(piece);
        i += n;
    }
    Ok(out)
}

/// True when a chrono pattern from [`to_chrono`] reads a zone offset.
pub fn has_offset(chrono: &str) -> bool {
    chrono.contains("%#z")
}

/// True when a chrono pattern from [`to_chrono`] reads a time of day.
pub fn has_time(chrono: &str) -> bool {
    ["%H", "%I", "%M", "%S"].iter().any(|p| chrono.contains(p))
}

fn push_literal(out: &mut String, c: char) {
    if c == '%' {
        out.push_str("%%");
    } else {
        out.push(c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spark_patterns_become_chrono_patterns() {
        assert_eq!(to_chrono("o", "yyyy-MM-dd").unwrap(), "%Y-%m-%d");
        assert_eq!(
            to_chrono("o", "dd/MM/yyyy HH:mm:ss.SSSXXX").unwrap(),
            "%d/%m/%Y %H:%M:%S.%3f%#z"
        );
        assert_eq!(
            to_chrono("o", "yyyy-MM-dd'T'HH:mm''ss").unwrap(),
            "%Y-%m-%dT%H:%M'%S"
        );
        assert_eq!(to_chrono("o", "d MMM yy 100%").unwrap(), "%d %b %y 100%%");
        let e = to_chrono("timestampFormat", "yyyy-MM-dd[ HH:mm]").unwrap_err();
        assert!(e.message().contains("optional section"), "{}", e.message());
        let e = to_chrono("timestampFormat", "yyyy-MM-dd HH:mm z").unwrap_err();
        assert!(e.message().contains("'z'"), "{}", e.message());
        assert!(e.message().contains("timestampFormat"));
    }
}
