//! Text files, as Spark's `text` format: one row per line in the `value` column (string), or
//! with `wholeText` one row per file. Lines end at `\n` (a `\r` before it is dropped) or at
//! `lineSep`; an empty line is a row with an empty value. Bytes that are not UTF-8 are replaced
//! (U+FFFD), as a lossy read; text has no malformed records.
//!
//! Lines are streamed: at most [`BATCH_SIZE`] lines of undecoded bytes are held. `wholeText`
//! holds the file, which is its one row.

use std::sync::Arc;

use arrow_array::builder::StringBuilder;
use arrow_array::RecordBatch;
use arrow_schema::{DataType, Field, Schema};
use memchr::memmem;
use tributary_sdk::Result;

use super::decoder::{Buffered, FileDecoder, FileEnd};
use super::framing::{strip_separator, Framer, Separator};
use super::{DecodeContext, Decoded, BATCH_SIZE};

/// The one column of text streams.
pub const VALUE_COLUMN: &str = "value";

/// The columns of a text stream: `value` (string).
pub fn schema() -> Schema {
    Schema::new(vec![Field::new(VALUE_COLUMN, DataType::Utf8, true)])
}

/// The push decoder of one text file.
pub(crate) fn decoder(size: u64, ctx: &DecodeContext) -> Box<dyn FileDecoder> {
    if ctx.options.whole_text {
        let ctx = ctx.clone();
        return Box::new(Buffered::new(size, move |bytes| {
            let batch = build(&ctx, std::iter::once(bytes.as_ref()))?;
            Ok(Decoded {
                batches: vec![batch],
                ..Decoded::default()
            })
        }));
    }
    let sep = match &ctx.options.line_sep {
        Some(b) => Separator::Bytes(b.clone()),
        None => Separator::Newline,
    };
    Box::new(Lines {
        framer: Framer::new(sep.clone(), None, BATCH_SIZE),
        sep,
        ctx: ctx.clone(),
    })
}

struct Lines {
    framer: Framer,
    sep: Separator,
    ctx: DecodeContext,
}

impl Lines {
    fn window(ctx: &DecodeContext, sep: &Separator, window: &[u8]) -> Result<RecordBatch> {
        let needle: &[u8] = match sep {
            Separator::Newline => b"\n",
            Separator::Bytes(b) => b,
        };
        let mut records = Vec::with_capacity(BATCH_SIZE);
        let mut start = 0;
        for end in memmem::find_iter(window, needle) {
            records.push(strip_separator(&window[start..end + needle.len()], sep));
            start = end + needle.len();
        }
        // The file's last line, without a separator.
        if start < window.len() {
            records.push(strip_separator(&window[start..], sep));
        }
        build(ctx, records.into_iter())
    }
}

impl FileDecoder for Lines {
    fn push(&mut self, chunk: &[u8], out: &mut Vec<RecordBatch>) -> Result<()> {
        let (ctx, sep) = (&self.ctx, &self.sep);
        self.framer.push(chunk, &mut |w, _| {
            out.push(Lines::window(ctx, sep, w)?);
            Ok(())
        })
    }

    fn finish(mut self: Box<Self>, out: &mut Vec<RecordBatch>) -> Result<FileEnd> {
        let (ctx, sep) = (&self.ctx, &self.sep);
        self.framer.finish(&mut |w, _| {
            out.push(Lines::window(ctx, sep, w)?);
            Ok(())
        })?;
        Ok(FileEnd::default())
    }
}

fn build<'a>(ctx: &DecodeContext, values: impl Iterator<Item = &'a [u8]>) -> Result<RecordBatch> {
    let mut b = StringBuilder::new();
    for v in values {
        b.append_value(String::from_utf8_lossy(v));
    }
    Ok(RecordBatch::try_new(
        ctx.decoded_schema.clone(),
        vec![Arc::new(b.finish())],
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{CsvOptions, Format, Mode};
    use crate::format::FormatOptions;
    use arrow_array::{Array, StringArray};

    fn values(options: FormatOptions, chunks: &[&[u8]]) -> Vec<Vec<String>> {
        let ctx = DecodeContext::new(
            Format::Text,
            Arc::new(schema()),
            "_rescued_data",
            Mode::Permissive,
            CsvOptions::default(),
        )
        .with_options(options);
        let mut d = decoder(0, &ctx);
        let mut out = Vec::new();
        for c in chunks {
            d.push(c, &mut out).unwrap();
        }
        d.finish(&mut out).unwrap();
        out.iter()
            .map(|b| {
                let a = b.column(0).as_any().downcast_ref::<StringArray>().unwrap();
                (0..a.len()).map(|i| a.value(i).to_string()).collect()
            })
            .collect()
    }

    #[test]
    fn lines_rows_and_separators() {
        let v = values(FormatOptions::default(), &[b"a\r\n\nb", b"c\n\xffd"]);
        assert_eq!(v, [vec!["a", "", "bc", "\u{fffd}d"]]);
        let sep = FormatOptions {
            line_sep: Some(b"||".to_vec()),
            ..Default::default()
        };
        assert_eq!(values(sep, &[b"x|", b"|y\n||"]), [vec!["x", "y\n"]]);
        let whole = FormatOptions {
            whole_text: true,
            ..Default::default()
        };
        assert_eq!(values(whole.clone(), &[b"a\n", b"b\n"]), [vec!["a\nb\n"]]);
        assert_eq!(values(whole, &[]), [vec![""]]);
        assert!(values(FormatOptions::default(), &[]).is_empty());
    }
}
