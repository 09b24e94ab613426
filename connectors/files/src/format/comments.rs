//! JSON `allowComments=true`: Java/C++ style comments (`/* ... */`, `// ...` to the end of the
//! line) outside strings are removed from a file's bytes before the JSON decoder sees them, as
//! they arrive (a comment may straddle chunks). Newlines are kept (also inside a block comment),
//! so line numbers in errors stay those of the file; a line that held only a comment becomes
//! blank and yields no row, as in Spark.

use arrow_array::RecordBatch;
use tributary_sdk::Result;

use super::decoder::{FileDecoder, FileEnd};

/// Where the scan is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Code,
    /// After a `/` in code: a comment may start.
    Slash,
    String,
    StringEscape,
    LineComment,
    BlockComment,
    /// After a `*` in a block comment: it may end.
    BlockStar,
}

/// Removes comments from a byte stream, chunk by chunk.
#[derive(Debug)]
pub(crate) struct CommentStripper {
    state: State,
}

impl CommentStripper {
    pub(crate) fn new() -> CommentStripper {
        CommentStripper { state: State::Code }
    }

    /// Appends `chunk` without its comments to `out`.
    pub(crate) fn strip(&mut self, chunk: &[u8], out: &mut Vec<u8>) {
        for &b in chunk {
            self.state = match (self.state, b) {
                (State::Code, b'"') => {
                    out.push(b);
                    State::String
                }
                (State::Code, b'/') => State::Slash,
                (State::Code, _) => {
                    out.push(b);
                    State::Code
                }
                (State::Slash, b'/') => State::LineComment,
                (State::Slash, b'*') => State::BlockComment,
                (State::Slash, _) => {
                    // A lone slash is not a comment: the JSON decoder judges it.
                    out.push(b'/');
                    out.push(b);
                    if b == b'"' {
                        State::String
                    } else {
                        State::Code
                    }
                }
                (State::String, b'\\') => {
                    out.push(b);
                    State::StringEscape
                }
                (State::String, b'"') => {
                    out.push(b);
                    State::Code
                }
                (State::String | State::StringEscape, _) => {
                    out.push(b);
                    State::String
                }
                (State::LineComment, b'\n') => {
                    out.push(b);
                    State::Code
                }
                (State::LineComment, _) => State::LineComment,
                (State::BlockComment | State::BlockStar, b'\n') => {
                    out.push(b);
                    State::BlockComment
                }
                (State::BlockComment | State::BlockStar, b'*') => State::BlockStar,
                (State::BlockStar, b'/') => State::Code,
                (State::BlockComment | State::BlockStar, _) => State::BlockComment,
            };
        }
    }

    /// The end of the stream: a pending slash is text.
    pub(crate) fn finish(&mut self, out: &mut Vec<u8>) {
        if self.state == State::Slash {
            out.push(b'/');
        }
        self.state = State::Code;
    }
}

/// A decoder fed the file's bytes without comments.
pub(crate) struct Uncommented {
    inner: Box<dyn FileDecoder>,
    stripper: CommentStripper,
    buf: Vec<u8>,
}

impl Uncommented {
    pub(crate) fn new(inner: Box<dyn FileDecoder>) -> Uncommented {
        Uncommented {
            inner,
            stripper: CommentStripper::new(),
            buf: Vec::new(),
        }
    }
}

impl FileDecoder for Uncommented {
    fn push(&mut self, chunk: &[u8], out: &mut Vec<RecordBatch>) -> Result<()> {
        self.buf.clear();
        self.stripper.strip(chunk, &mut self.buf);
        self.inner.push(&self.buf, out)
    }

    fn finish(mut self: Box<Self>, out: &mut Vec<RecordBatch>) -> Result<FileEnd> {
        self.buf.clear();
        self.stripper.finish(&mut self.buf);
        if !self.buf.is_empty() {
            let tail = std::mem::take(&mut self.buf);
            self.inner.push(&tail, out)?;
        }
        self.inner.finish(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strip(chunks: &[&str]) -> String {
        let mut s = CommentStripper::new();
        let mut out = Vec::new();
        for c in chunks {
            s.strip(c.as_bytes(), &mut out);
        }
        s.finish(&mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn comments_go_strings_stay_across_chunks() {
        assert_eq!(
            strip(&["{\"a\": 1} // note\n", "/* x\ny */{\"b\": \"/*no*/ //no\"}"]),
            "{\"a\": 1} \n\n{\"b\": \"/*no*/ //no\"}"
        );
        assert_eq!(
            strip(&["{\"a\": \"\\\"/", "/\"} /", "* c *", "/ 1"]),
            "{\"a\": \"\\\"//\"}  1"
        );
        assert_eq!(strip(&["1/2"]), "1/2");
    }
}
