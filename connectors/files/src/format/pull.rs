//! A push decoder over a library that only offers a pull reader (`BufRead`), such as
//! `arrow-avro`'s container-file reader: the reader runs on its own thread and reads the chunks
//! pushed to it through a bounded channel; its batches come back as they fill.
//!
//! Memory stays bounded: at most [`IN_FLIGHT`] chunks wait for the reader, and the batches it
//! produced are collected at every push. Dropping the decoder (an error elsewhere) closes the
//! channel, which ends the reader's input and so its thread.

use std::io::{BufRead, Read};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::thread::JoinHandle;
use std::time::Duration;

use arrow_array::RecordBatch;
use bytes::{Buf, Bytes};
use tributary_sdk::{Error, ErrorCode, Result};

use super::decoder::{FileDecoder, FileEnd};

/// Chunks waiting for the reader thread.
const IN_FLIGHT: usize = 4;

/// The pull side: a `BufRead` over the pushed chunks; end of input when the pusher is done.
pub(crate) struct ChannelReader {
    rx: Receiver<Bytes>,
    current: Bytes,
}

impl Read for ChannelReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(buf.len());
        buf[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for ChannelReader {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        while self.current.is_empty() {
            match self.rx.recv() {
                Ok(chunk) => self.current = chunk,
                // The pusher finished (or gave up): end of the file.
                Err(_) => break,
            }
        }
        Ok(&self.current)
    }

    fn consume(&mut self, amt: usize) {
        self.current.advance(amt.min(self.current.len()));
    }
}

/// Runs `read` on its own thread over the pushed bytes; `read` sends each batch it decodes.
pub(crate) struct Pulled {
    chunks: Option<SyncSender<Bytes>>,
    batches: Receiver<RecordBatch>,
    thread: Option<JoinHandle<Result<FileEnd>>>,
}

impl Pulled {
    /// Starts the reader thread. `read` gets the input and a sender for its batches; a send
    /// that fails means the decoder was dropped, and `read` should return.
    pub(crate) fn start<F>(name: &str, read: F) -> Result<Pulled>
    where
        F: FnOnce(ChannelReader, mpsc::Sender<RecordBatch>) -> Result<FileEnd> + Send + 'static,
    {
        let (chunk_tx, chunk_rx) = mpsc::sync_channel(IN_FLIGHT);
        let (batch_tx, batch_rx) = mpsc::channel();
        let reader = ChannelReader {
            rx: chunk_rx,
            current: Bytes::new(),
        };
        let thread = std::thread::Builder::new()
            .name(format!("{name}-reader"))
            .spawn(move || read(reader, batch_tx))
            .map_err(|e| {
                Error::new(
                    ErrorCode::Internal,
                    format!("cannot start the {name} reader thread"),
                )
                .with_cause(e)
            })?;
        Ok(Pulled {
            chunks: Some(chunk_tx),
            batches: batch_rx,
            thread: Some(thread),
        })
    }

    fn collect(&self, out: &mut Vec<RecordBatch>) {
        out.extend(self.batches.try_iter());
    }
}

impl FileDecoder for Pulled {
    fn push(&mut self, chunk: &[u8], out: &mut Vec<RecordBatch>) -> Result<()> {
        let Some(tx) = &self.chunks else {
            return Ok(());
        };
        let mut pending = Bytes::copy_from_slice(chunk);
        loop {
            match tx.try_send(pending) {
                Ok(()) => break,
                Err(TrySendError::Full(back)) => {
                    pending = back;
                    // The reader is busy: take what it produced while waiting for room.
                    match self.batches.recv_timeout(Duration::from_millis(5)) {
                        Ok(batch) => out.push(batch),
                        Err(RecvTimeoutError::Timeout) => {}
                        // The reader ended (its result, maybe an error, comes at finish).
                        Err(RecvTimeoutError::Disconnected) => {
                            self.chunks = None;
                            break;
                        }
                    }
                }
                // The reader stopped early (an error or nothing more to read): see finish.
                Err(TrySendError::Disconnected(_)) => {
                    self.chunks = None;
                    break;
                }
            }
        }
        self.collect(out);
        Ok(())
    }

    fn finish(mut self: Box<Self>, out: &mut Vec<RecordBatch>) -> Result<FileEnd> {
        // End of input for the reader, then everything it still produces.
        self.chunks = None;
        out.extend(self.batches.iter());
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(result)) => result,
            Some(Err(_)) => Err(Error::new(
                ErrorCode::Internal,
                "a file reader thread panicked",
            )),
            None => Ok(FileEnd::default()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Int64Array, RecordBatch};
    use std::sync::Arc;

    #[test]
    fn batches_come_back_in_order_and_errors_at_finish() {
        let mut d: Box<dyn FileDecoder> = Box::new(
            Pulled::start("test", |mut r, tx| {
                let mut text = String::new();
                r.read_to_string(&mut text).unwrap();
                for line in text.lines() {
                    let n: i64 = line.parse().map_err(|_| {
                        Error::new(ErrorCode::SourceRead, format!("not a number: {line}"))
                    })?;
                    let b = RecordBatch::try_from_iter([(
                        "n",
                        Arc::new(Int64Array::from(vec![n])) as _,
                    )])
                    .unwrap();
                    if tx.send(b).is_err() {
                        break;
                    }
                }
                Ok(FileEnd::default())
            })
            .unwrap(),
        );
        let mut out = Vec::new();
        for c in ["1\n2", "\n3\n"] {
            d.push(c.as_bytes(), &mut out).unwrap();
        }
        d.finish(&mut out).unwrap();
        assert_eq!(out.len(), 3);

        let mut d: Box<dyn FileDecoder> = Box::new(
            Pulled::start("test", |mut r, _| {
                let mut text = String::new();
                r.read_to_string(&mut text).unwrap();
                Err(Error::new(ErrorCode::SourceRead, "bad"))
            })
            .unwrap(),
        );
        d.push(b"x", &mut out).unwrap();
        assert_eq!(
            d.finish(&mut out).unwrap_err().code(),
            ErrorCode::SourceRead
        );
    }
}
