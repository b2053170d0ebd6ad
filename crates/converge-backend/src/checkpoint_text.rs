//! A checkpoint's text handed to a store while it is still being written.
//!
//! A checkpoint of 100,000 resources is about 80 MB of JSON. Written into
//! one buffer and then stored, it is 80 MB of fresh memory, and the store
//! copies it to its file only after the last byte is serialized. Through
//! [`checkpoint_text`], the serializer writes into a [`CheckpointWriter`]
//! (an [`std::io::Write`] on its own thread) that hands the text over in
//! pieces of [`PIECE_BYTES`]; the store reads them from the
//! [`CheckpointText`] as they come (the file backend writes each to its
//! temporary file at once, on another thread), so serializing and storing
//! overlap and only a few pieces exist at a time.
//!
//! The text is complete only once the writer is [finished]: a writer
//! dropped before that (its serializer failed) ends the text with
//! [`TextAborted`], and the store stores nothing.
//!
//! [finished]: CheckpointWriter::finish

use std::io;

use bytes::{Bytes, BytesMut};
use tokio::sync::mpsc;

use crate::error::BackendError;
use crate::name::StackRef;

/// The size of a piece of text handed over (the last one may be shorter).
pub const PIECE_BYTES: usize = 1 << 20;

/// Pieces in flight between the writer and the store: enough for each side
/// to work while the other does, few enough to bound the memory.
const PIECES_IN_FLIGHT: usize = 4;

enum Piece {
    Text(Bytes),
    /// The writer finished: the text is complete.
    End,
}

/// A new text: the writer's end and the store's end.
pub fn checkpoint_text() -> (CheckpointWriter, CheckpointText) {
    let (tx, rx) = mpsc::channel(PIECES_IN_FLIGHT);
    (
        CheckpointWriter {
            tx,
            piece: Vec::new(),
            written: 0,
        },
        CheckpointText { rx, ended: false },
    )
}

/// The text ended before its writer finished it: the serializer failed,
/// and it reports why.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the checkpoint's text ended before it was complete")]
pub struct TextAborted;

/// The store stopped reading the text (it failed, and reports why).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the store stopped reading the checkpoint's text")]
pub struct StoreStopped;

/// The serializer's end: an [`io::Write`] for a blocking thread (it waits
/// while the store is [`PIECES_IN_FLIGHT`] pieces behind). Its write
/// errors are [`StoreStopped`], of kind [`io::ErrorKind::BrokenPipe`].
#[derive(Debug)]
pub struct CheckpointWriter {
    tx: mpsc::Sender<Piece>,
    /// The piece being filled: at most [`PIECE_BYTES`], allocated whole.
    piece: Vec<u8>,
    written: u64,
}

impl CheckpointWriter {
    /// Hands over what is left and completes the text; returns its length.
    pub fn finish(mut self) -> io::Result<u64> {
        self.hand_over()?;
        self.tx.blocking_send(Piece::End).map_err(|_| stopped())?;
        Ok(self.written)
    }

    /// Whether `error` (from a write to this writer, perhaps through a
    /// serializer) means that the store stopped reading, rather than a
    /// failure of the writer's own.
    pub fn is_store_stopped(error: &io::Error) -> bool {
        error
            .get_ref()
            .is_some_and(|inner| inner.is::<StoreStopped>())
    }

    fn hand_over(&mut self) -> io::Result<()> {
        if self.piece.is_empty() {
            return Ok(());
        }
        // A new allocation per piece: each is handed over and freed by
        // the store once stored.
        let piece = Bytes::from(std::mem::take(&mut self.piece));
        self.tx
            .blocking_send(Piece::Text(piece))
            .map_err(|_| stopped())
    }

    /// Copies as much of `buf` as the piece has room for (starting a new
    /// piece if needed), handing the piece over once full.
    fn fill(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.piece.capacity() == 0 {
            self.piece.reserve_exact(PIECE_BYTES);
        }
        let n = buf.len().min(PIECE_BYTES - self.piece.len());
        self.piece.extend_from_slice(&buf[..n]);
        self.written += n as u64;
        if self.piece.len() == PIECE_BYTES {
            self.hand_over()?;
        }
        Ok(n)
    }
}

fn stopped() -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, StoreStopped)
}

/// A serializer writes a few bytes at a time (a key, a quote, a comma):
/// the common case, room in the piece, is one copy.
impl io::Write for CheckpointWriter {
    #[inline]
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        // Strictly less: a write that fills the piece hands it over.
        if buf.len() < PIECE_BYTES - self.piece.len() && self.piece.capacity() != 0 {
            self.piece.extend_from_slice(buf);
            self.written += buf.len() as u64;
            return Ok(buf.len());
        }
        self.fill(buf)
    }

    #[inline]
    fn write_all(&mut self, mut buf: &[u8]) -> io::Result<()> {
        while !buf.is_empty() {
            let n = self.write(buf)?;
            buf = &buf[n..];
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The store's end: the pieces in order.
#[derive(Debug)]
pub struct CheckpointText {
    rx: mpsc::Receiver<Piece>,
    ended: bool,
}

impl CheckpointText {
    /// The next piece, or `None` once the text is complete.
    pub async fn next(&mut self) -> Result<Option<Bytes>, TextAborted> {
        let piece = self.rx.recv().await;
        self.take(piece)
    }

    /// [`CheckpointText::next`] for a blocking thread.
    pub fn blocking_next(&mut self) -> Result<Option<Bytes>, TextAborted> {
        let piece = self.rx.blocking_recv();
        self.take(piece)
    }

    /// Every piece of the complete text of `stack`'s checkpoint, for a
    /// store that needs all of it before it stores any; an unfinished
    /// text is [`BackendError::IncompleteCheckpoint`].
    pub async fn collect(mut self, stack: &StackRef) -> Result<Vec<Bytes>, BackendError> {
        let mut pieces = Vec::new();
        loop {
            match self.next().await {
                Ok(Some(piece)) => pieces.push(piece),
                Ok(None) => return Ok(pieces),
                Err(TextAborted) => {
                    return Err(BackendError::IncompleteCheckpoint {
                        stack: stack.to_string(),
                    })
                }
            }
        }
    }

    /// The complete text in one buffer.
    pub async fn collect_joined(self, stack: &StackRef) -> Result<Bytes, BackendError> {
        let pieces = self.collect(stack).await?;
        if let [one] = pieces.as_slice() {
            return Ok(one.clone());
        }
        let mut joined = BytesMut::with_capacity(pieces.iter().map(Bytes::len).sum());
        for piece in &pieces {
            joined.extend_from_slice(piece);
        }
        Ok(joined.freeze())
    }

    fn take(&mut self, piece: Option<Piece>) -> Result<Option<Bytes>, TextAborted> {
        if self.ended {
            return Ok(None);
        }
        match piece {
            Some(Piece::Text(bytes)) => Ok(Some(bytes)),
            Some(Piece::End) => {
                self.ended = true;
                Ok(None)
            }
            // The writer was dropped unfinished.
            None => Err(TextAborted),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn dev() -> StackRef {
        StackRef::new("proj", "dev").unwrap()
    }

    fn text_of(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i % 251) as u8).collect()
    }

    #[tokio::test]
    async fn a_finished_text_arrives_whole_in_pieces() {
        let (mut writer, text) = checkpoint_text();
        let expected = text_of(3 * PIECE_BYTES + 12_345);
        let sent = expected.clone();
        let serializer = tokio::task::spawn_blocking(move || {
            // Odd-sized writes, as a serializer makes them.
            for chunk in sent.chunks(7_919) {
                writer.write_all(chunk)?;
            }
            writer.finish()
        });
        let pieces = text.collect(&dev()).await.unwrap();
        assert_eq!(serializer.await.unwrap().unwrap(), expected.len() as u64);
        assert_eq!(pieces.len(), 4);
        assert!(pieces[..3].iter().all(|p| p.len() == PIECE_BYTES));
        assert_eq!(pieces.concat(), expected);
    }

    #[tokio::test]
    async fn an_empty_text_is_complete_and_empty() {
        let (writer, text) = checkpoint_text();
        tokio::task::spawn_blocking(move || writer.finish())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(text.collect_joined(&dev()).await.unwrap(), Bytes::new());
    }

    #[tokio::test]
    async fn a_writer_dropped_unfinished_aborts_the_text() {
        let (mut writer, text) = checkpoint_text();
        tokio::task::spawn_blocking(move || {
            writer.write_all(&text_of(2 * PIECE_BYTES)).unwrap();
            // The serializer fails here: no finish.
        });
        let err = text.collect(&dev()).await.unwrap_err();
        assert!(
            matches!(err, BackendError::IncompleteCheckpoint { .. }),
            "{err}"
        );
    }

    #[tokio::test]
    async fn a_store_that_stops_reading_stops_the_writer() {
        let (mut writer, mut text) = checkpoint_text();
        let serializer = tokio::task::spawn_blocking(move || {
            writer.write_all(&text_of(64 * PIECE_BYTES))?;
            writer.finish()
        });
        assert!(text.next().await.unwrap().is_some());
        drop(text);
        let err = serializer.await.unwrap().unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::BrokenPipe);
        assert!(CheckpointWriter::is_store_stopped(&err), "{err}");
        assert!(!CheckpointWriter::is_store_stopped(&io::Error::other("x")));
    }
}
