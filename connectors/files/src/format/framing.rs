//! Record framing of a file's bytes as they arrive: chunks of any size go in, windows of at most
//! `max_records` complete records come out, each with the number of its first line.
//!
//! A window is handed out as soon as it is full, so the bytes held are at most one window plus
//! the chunk being pushed, whatever the file's size. Records end at a separator: a newline (a
//! `\r` before it stays with the record; decoders strip it), or a `lineSep` of any length. For
//! CSV a newline inside a quoted field does not end the record. Quoting follows the CSV parser
//! (`csv-core`, under both `arrow-csv` and `csv`): a quote opens a quoted field only at the start
//! of a field, elsewhere it is an ordinary character; inside, `""` is a quote and a lone quote
//! closes the field.
//!
//! A quoted field still open at the end of the file never closed: no character after its
//! opening quote is a quote (any would have closed it). [`Framer::finish_quoted`] then hands
//! the damaged record, from its start to the end of the line of the opening quote, to its own
//! callback, and frames the lines after it as ordinary records, so an unclosed quote costs its
//! own record and never the rows after it.

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

/// CSV quoting: the quote character and the field delimiter (a quote opens a quoted field only
/// at the start of a field), the escape character inside quoted fields (the byte after it is
/// literal), and the comment character (a record starting with it ends at the newline).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Quoting {
    pub quote: u8,
    pub delimiter: u8,
    pub escape: Option<u8>,
    pub comment: Option<u8>,
}

/// Where the CSV scan is within a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    /// At the start of a field.
    Start,
    /// In a field that did not start with a quote (or whose quotes closed).
    Unquoted,
    /// In a quoted field.
    Quoted,
    /// Just after a quote inside a quoted field: `""` (a quote) or the closing quote.
    QuoteInQuoted,
    /// Just after the escape character inside a quoted field: the next byte is literal.
    EscapeInQuoted,
    /// In a comment line.
    Comment,
}

/// Receives `(bytes, first_line, unclosed)` from [`Framer::finish_quoted`].
pub(crate) type EmitQuoted<'a> = dyn FnMut(&[u8], u64, bool) -> Result<()> + 'a;

/// Splits pushed bytes into windows of complete records.
#[derive(Debug)]
pub(crate) struct Framer {
    sep: Separator,
    finder: Option<Finder<'static>>,
    quote: Option<Quoting>,
    max_records: usize,
    buf: Vec<u8>,
    /// Start of the window being collected in `buf`.
    start: usize,
    /// Where the search for the next separator resumes.
    scan: usize,
    /// Complete records in the window so far, and where the last one ends (separator included).
    records: usize,
    end: usize,
    /// Where `scan` is within its record (CSV).
    field: Field,
    /// The opening quote of the quoted field at `scan` (CSV, while `field` is quoted).
    open_at: usize,
    /// The 1-based line of the window's start.
    first_line: u64,
    /// `scan` is at the start of a record (CSV comments).
    record_start: bool,
}

impl Framer {
    /// A framer for records ending at `sep`, at most `max_records` per window; with `quote`, a
    /// newline inside a quoted field does not end a record.
    pub(crate) fn new(sep: Separator, quote: Option<Quoting>, max_records: usize) -> Framer {
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
            field: Field::Start,
            open_at: 0,
            first_line: 1,
            record_start: true,
        }
    }

    /// Feeds the next chunk; `emit(window, first_line)` receives each window that filled.
    pub(crate) fn push(
        &mut self,
        chunk: &[u8],
        emit: &mut dyn FnMut(&[u8], u64) -> Result<()>,
    ) -> Result<()> {
        self.buf.extend_from_slice(chunk);
        self.frame(emit)?;
        // Keep only the window being collected: moves at most one window of bytes per push.
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.scan -= self.start;
            self.end -= self.start;
            self.open_at = self.open_at.saturating_sub(self.start);
            self.start = 0;
        }
        Ok(())
    }

    /// Frames the complete records in `buf` from `scan`, emitting each window that fills.
    fn frame(&mut self, emit: &mut dyn FnMut(&[u8], u64) -> Result<()>) -> Result<()> {
        while let Some(next) = self.next_record_end() {
            self.records += 1;
            self.end = next;
            self.scan = next;
            if self.records == self.max_records {
                self.emit_window(emit)?;
            }
        }
        Ok(())
    }

    /// End of a CSV file: as [`Framer::finish`], except that a quoted field that never closed
    /// does not swallow the rest of the file: the window before it is emitted, then its record
    /// (from the record's start to the end of the opening quote's line) alone with `unclosed`
    /// true, then the lines after it are framed as usual. `emit(bytes, first_line, unclosed)`.
    pub(crate) fn finish_quoted(&mut self, emit: &mut EmitQuoted<'_>) -> Result<()> {
        if self.field == Field::Quoted && self.open_at >= self.end {
            if self.records > 0 {
                self.emit_window(&mut |w, line| emit(w, line, false))?;
            }
            let line_end = memchr::memchr(b'\n', &self.buf[self.open_at..])
                .map_or(self.buf.len(), |i| self.open_at + i + 1);
            let record = &self.buf[self.start..line_end];
            emit(record, self.first_line, true)?;
            self.first_line += memchr::memchr_iter(b'\n', record).count() as u64;
            // No quote follows the opening one: the rest frames as plain lines.
            self.start = line_end;
            self.end = line_end;
            self.scan = line_end;
            self.field = Field::Start;
            self.record_start = true;
            self.frame(&mut |w, line| emit(w, line, false))?;
        }
        self.finish(&mut |w, line| emit(w, line, false))
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
        self.field = Field::Start;
        self.record_start = true;
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
                Some(q) => self.next_csv_record_end(q),
            },
        }
    }

    /// [`Framer::next_record_end`] for CSV: a newline ends the record unless a quoted field
    /// holds it. Resumes at `scan` in the state `field` left.
    fn next_csv_record_end(&mut self, q: Quoting) -> Option<usize> {
        let mut i = self.scan;
        let len = self.buf.len();
        loop {
            if i >= len {
                self.scan = len;
                return None;
            }
            let record_start = std::mem::take(&mut self.record_start);
            match self.field {
                Field::Quoted => {
                    let found = match q.escape {
                        Some(e) => memchr::memchr2(q.quote, e, &self.buf[i..]),
                        None => memchr::memchr(q.quote, &self.buf[i..]),
                    };
                    match found {
                        Some(off) if self.buf[i + off] == q.quote => {
                            self.field = Field::QuoteInQuoted;
                            i += off + 1;
                        }
                        Some(off) => {
                            self.field = Field::EscapeInQuoted;
                            i += off + 1;
                        }
                        None => i = len,
                    }
                }
                Field::EscapeInQuoted => {
                    self.field = Field::Quoted;
                    i += 1;
                }
                Field::Comment => match memchr::memchr(b'\n', &self.buf[i..]) {
                    Some(off) => {
                        self.field = Field::Start;
                        self.record_start = true;
                        return Some(i + off + 1);
                    }
                    None => i = len,
                },
                // `""` is a quote; anything else follows a closing quote as in an unquoted
                // field (the parsers append it), so it is looked at again in that state.
                Field::QuoteInQuoted if self.buf[i] == q.quote => {
                    self.field = Field::Quoted;
                    i += 1;
                }
                Field::QuoteInQuoted => self.field = Field::Unquoted,
                Field::Start if record_start && Some(self.buf[i]) == q.comment => {
                    self.field = Field::Comment;
                }
                Field::Start if self.buf[i] == q.quote => {
                    self.field = Field::Quoted;
                    self.open_at = i;
                    i += 1;
                }
                Field::Start => self.field = Field::Unquoted,
                Field::Unquoted => match memchr::memchr2(q.delimiter, b'\n', &self.buf[i..]) {
                    Some(off) => {
                        let at = i + off;
                        self.field = Field::Start;
                        if self.buf[at] == b'\n' {
                            self.record_start = true;
                            return Some(at + 1);
                        }
                        i = at + 1;
                    }
                    None => i = len,
                },
            }
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

    const CSV: Quoting = Quoting {
        quote: b'"',
        delimiter: b',',
        escape: None,
        comment: None,
    };

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
        let mut f = Framer::new(Separator::Newline, Some(CSV), 1);
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

    #[test]
    fn escaped_quotes_and_comment_lines_do_not_toggle_quoting() {
        let q = Quoting {
            escape: Some(b'\\'),
            comment: Some(b'#'),
            ..CSV
        };
        let mut f = Framer::new(Separator::Newline, Some(q), 1);
        let w = windows(&mut f, &[b"# it's \"odd\n1,\"a\\", b"\"\nb\"\n2,c\n"]);
        assert_eq!(
            w,
            [
                ("# it's \"odd\n".into(), 1),
                ("1,\"a\\\"\nb\"\n".into(), 2),
                ("2,c\n".into(), 4)
            ]
        );
    }

    #[test]
    fn quotes_open_only_at_field_starts_and_an_unclosed_one_is_its_own_record() {
        // A quote inside a field is a character: it holds no newline.
        let mut f = Framer::new(Separator::Newline, Some(CSV), 1);
        let w = windows(&mut f, &[b"1,5\" pipe\n2,b\n"]);
        assert_eq!(w, [("1,5\" pipe\n".into(), 1), ("2,b\n".into(), 2)]);
        let mut f = Framer::new(Separator::Newline, Some(CSV), 10);
        let mut out = Vec::new();
        let mut emit = |w: &[u8], line: u64, unclosed: bool| {
            out.push((String::from_utf8_lossy(w).into_owned(), line, unclosed));
            Ok(())
        };
        for c in [&b"a\n\"x\ny\"\nb,\"op"[..], b"en\nc\nd"] {
            f.push(c, &mut |w, l| emit(w, l, false)).unwrap();
        }
        f.finish_quoted(&mut emit).unwrap();
        assert_eq!(
            out,
            [
                ("a\n\"x\ny\"\n".into(), 1, false),
                ("b,\"open\n".into(), 4, true),
                ("c\nd".into(), 5, false),
            ]
        );
    }
}
