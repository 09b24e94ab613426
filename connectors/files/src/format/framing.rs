//! Record framing of a file's bytes as they arrive: chunks of any size go in, windows of at most
//! `max_records` complete records come out, each with the number of its first line.
//!
//! A window is handed out as soon as it is full, so the bytes held are at most one window plus
//! the chunk being pushed, whatever the file's size. Records end at a separator: a newline (a
//! `\r` before it stays with the record; decoders strip it), or a `lineSep` of any length. For
//! CSV a newline inside a quoted field does not end the record (a doubled quote toggles twice, so
//! `""` inside quotes needs no special case).

use memchr::memmem::Finder;
use tributary_sdk::Result;

/// Where records end.
#[derive(Debug, Clone)]
pub(crate) enum Separator {
    /// `\n` (`\r\n` too: the `\r` stays in the record).
    Newline,
    /// A custom separator (`lineSep`), not kept in the record.
    Bytes(Vec<u8>),
}

/// Splits pushed bytes into windows of complete records.
#[derive(Debug)]
pub(crate) struct Framer {
    sep: Separator,
    finder: Option<Finder<'static>>,
    quote: Option<u8>,
    max_records: usize,
    buf: Vec<u8>,
    /// Start of the window being collected in `buf`.
    start: usize,
    /// Where the search for the next separator resumes.
    scan: usize,
    /// Complete records in the window so far, and where the last one ends (separator included).
    records: usize,
    end: usize,
    /// Inside a quoted field at `scan` (CSV).
    in_quotes: bool,
    /// The 1-based line of the window's start.
    first_line: u64,
}

impl Framer {
    /// A framer for records ending at `sep`, at most `max_records` per window; with `quote`, a
    /// newline between quotes does not end a record.
    pub(crate) fn new(sep: Separator, quote: Option<u8>, max_records: usize) -> Framer {
        let finder = match &sep {
            Separator::Bytes(b) => Some(Finder::new(b).into_owned()),
            Separator::Newline => None,
        };
        Framer {
            sep,
            finder,
            quote,
            max_records: max_records.max(1),
            buf: Vec::new(),
            start: 0,
            scan: 0,
            records: 0,
            end: 0,
            in_quotes: false,
            first_line: 1,
        }
    }

    /// Feeds the next chunk; `emit(window, first_line)` receives each window that filled.
    pub(crate) fn push(
        &mut self,
        chunk: &[u8],
        emit: &mut dyn FnMut(&[u8], u64) -> Result<()>,
    ) -> Result<()> {
        self.buf.extend_from_slice(chunk);
        while let Some(next) = self.next_record_end() {
            self.records += 1;
            self.end = next;
            self.scan = next;
            if self.records == self.max_records {
                self.emit_window(emit)?;
            }
        }
        // Keep only the window being collected: moves at most one window of bytes per push.
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.scan -= self.start;
            self.end -= self.start;
            self.start = 0;
        }
        Ok(())
    }

    /// End of the file: the last window, with a final record that has no separator.
    pub(crate) fn finish(&mut self, emit: &mut dyn FnMut(&[u8], u64) -> Result<()>) -> Result<()> {
        if self.buf.len() > self.end {
            self.end = self.buf.len();
            self.records += 1;
        }
        if self.records > 0 {
            self.emit_window(emit)?;
        }
        self.buf = Vec::new();
        self.start = 0;
        self.scan = 0;
        self.end = 0;
        Ok(())
    }

    fn emit_window(&mut self, emit: &mut dyn FnMut(&[u8], u64) -> Result<()>) -> Result<()> {
        let window = &self.buf[self.start..self.end];
        // Newline windows count their lines themselves (the separator count is the record count
        // unless CSV quotes held newlines); a custom separator counts records as lines.
        let lines = match self.sep {
            Separator::Newline if self.quote.is_some() => {
                memchr::memchr_iter(b'\n', window).count()
            }
            _ => self.records,
        } as u64;
        let first = self.first_line;
        emit(window, first)?;
        self.first_line = first + lines;
        self.start = self.end;
        self.records = 0;
        Ok(())
    }

    /// The end (after the separator) of the next complete record from `scan`, if there is one.
    fn next_record_end(&mut self) -> Option<usize> {
        match &self.finder {
            Some(finder) => {
                let from = self.scan;
                let n = finder.needle().len();
                match finder.find(&self.buf[from..]) {
                    Some(found) => Some(from + found + n),
                    None => {
                        // A separator may straddle this chunk and the next.
                        self.scan = from.max(self.buf.len().saturating_sub(n - 1));
                        None
                    }
                }
            }
            None => match self.quote {
                None => match memchr::memchr(b'\n', &self.buf[self.scan..]) {
                    Some(i) => Some(self.scan + i + 1),
                    None => {
                        self.scan = self.buf.len();
                        None
                    }
                },
                Some(q) => {
                    let mut i = self.scan;
                    loop {
                        let rest = &self.buf[i..];
                        let hit = if self.in_quotes {
                            memchr::memchr(q, rest)
                        } else {
                            memchr::memchr2(q, b'\n', rest)
                        };
                        let Some(off) = hit else {
                            // Resume after what was scanned, in the same quote state.
                            self.scan = self.buf.len();
                            return None;
                        };
                        let at = i + off;
                        if self.buf[at] == q {
                            self.in_quotes = !self.in_quotes;
                            i = at + 1;
                        } else {
                            return Some(at + 1);
                        }
                    }
                }
            },
        }
    }
}

/// `record` without its separator (and without the `\r` of a `\r\n`).
pub(crate) fn strip_separator<'a>(record: &'a [u8], sep: &Separator) -> &'a [u8] {
    match sep {
        Separator::Newline => {
            let r = record.strip_suffix(b"\n").unwrap_or(record);
            r.strip_suffix(b"\r").unwrap_or(r)
        }
        Separator::Bytes(b) => record.strip_suffix(b.as_slice()).unwrap_or(record),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn windows(framer: &mut Framer, chunks: &[&[u8]]) -> Vec<(String, u64)> {
        let mut out = Vec::new();
        let mut emit = |w: &[u8], line: u64| {
            out.push((String::from_utf8_lossy(w).into_owned(), line));
            Ok(())
        };
        for c in chunks {
            framer.push(c, &mut emit).unwrap();
        }
        framer.finish(&mut emit).unwrap();
        out
    }

    #[test]
    fn windows_fill_across_chunks_and_number_their_lines() {
        let mut f = Framer::new(Separator::Newline, None, 2);
        let w = windows(&mut f, &[b"a\nb", b"\nc\n", b"d\ne"]);
        assert_eq!(
            w,
            [("a\nb\n".into(), 1), ("c\nd\n".into(), 3), ("e".into(), 5)]
        );
    }

    #[test]
    fn quoted_newlines_and_split_separators() {
        let mut f = Framer::new(Separator::Newline, Some(b'"'), 1);
        let w = windows(&mut f, &[b"1,\"x\n", b"y\"\"z\"\n2,b\n"]);
        assert_eq!(w, [("1,\"x\ny\"\"z\"\n".into(), 1), ("2,b\n".into(), 3)]);
        let mut f = Framer::new(Separator::Bytes(b"||".to_vec()), None, 10);
        let w = windows(&mut f, &[b"a|", b"|b||c"]);
        assert_eq!(w, [("a||b||c".into(), 1)]);
        let mut f = Framer::new(Separator::Bytes(b"||".to_vec()), None, 1);
        let w = windows(&mut f, &[b"a|", b"|b||"]);
        assert_eq!(w, [("a||".into(), 1), ("b||".into(), 2)]);
        assert_eq!(strip_separator(b"x\r\n", &Separator::Newline), b"x");
    }
}
