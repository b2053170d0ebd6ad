//! The tar stream Pulumi hashes an archive as, written into a hasher.
//!
//! Pulumi hashes a directory archive or a map of assets as the SHA-256 of
//! the tar stream Go's `archive/tar` writes for it: one entry per file,
//! each with only a name, mode `0600` and a size. These are the bytes of
//! that stream (observed from Go's writer): a USTAR header (a name over
//! 100 bytes moved into the prefix field where it splits at a `/`), a PAX
//! `path` record before it when the name is not ASCII or does not fit, the
//! contents padded to 512 bytes, and two zero blocks at the end. The same
//! files therefore give the hash Pulumi recorded, and a state moved from
//! Pulumi shows no change.

use std::io::{self, Read};

use sha2::{Digest, Sha256};

const BLOCK: usize = 512;
const NAME: usize = 100;
const PREFIX: usize = 155;

/// A tar stream fed straight into SHA-256.
pub(super) struct GoTarHasher {
    hash: Sha256,
}

impl GoTarHasher {
    pub(super) fn new() -> Self {
        GoTarHasher {
            hash: Sha256::new(),
        }
    }

    /// Adds one file: its header, `size` bytes read from `data`, padding.
    pub(super) fn add(&mut self, name: &str, size: u64, data: &mut dyn Read) -> io::Result<()> {
        let fits_ustar = name.is_ascii() && (name.len() <= NAME || split_ustar(name).is_some());
        if !fits_ustar {
            let (dir, file) = match name.rfind('/') {
                Some(i) => (&name[..=i], &name[i + 1..]),
                None => ("", name),
            };
            let header_name = format!("{dir}PaxHeaders.0/{file}");
            let record = pax_record("path", name);
            let mut header = Header::new(&ascii_only(&header_name), b'x', 0, record.len() as u64);
            header.omit_device_numbers();
            self.hash.update(header.finish());
            self.hash.update(record.as_bytes());
            self.pad(record.len() as u64);
        }
        let header = if fits_ustar {
            match split_ustar(name) {
                Some((prefix, rest)) => {
                    let mut h = Header::new(rest, b'0', 0o600, size);
                    h.put(345, PREFIX, prefix.as_bytes());
                    h
                }
                None => Header::new(name, b'0', 0o600, size),
            }
        } else {
            Header::new(&ascii_only(name), b'0', 0o600, size)
        };
        self.hash.update(header.finish());
        let copied = io::copy(&mut data.take(size), &mut HashWriter(&mut self.hash))?;
        if copied != size {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("'{name}' changed while it was read ({copied} of {size} bytes)"),
            ));
        }
        self.pad(size);
        Ok(())
    }

    /// The hex SHA-256 of the whole stream, closed with two zero blocks.
    pub(super) fn finish(mut self) -> String {
        self.hash.update([0u8; 2 * BLOCK]);
        hex::encode(self.hash.finalize())
    }

    fn pad(&mut self, len: u64) {
        let rem = (len % BLOCK as u64) as usize;
        if rem != 0 {
            self.hash.update(&[0u8; BLOCK][..BLOCK - rem]);
        }
    }
}

struct HashWriter<'a>(&'a mut Sha256);

impl io::Write for HashWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// One 512-byte header block.
struct Header([u8; BLOCK]);

impl Header {
    fn new(name: &str, typeflag: u8, mode: u64, size: u64) -> Self {
        let mut h = Header([0; BLOCK]);
        h.put(0, NAME, name.as_bytes());
        h.octal(100, 8, mode);
        h.octal(108, 8, 0);
        h.octal(116, 8, 0);
        h.octal(124, 12, size);
        h.octal(136, 12, 0);
        h.0[156] = typeflag;
        h.put(257, 6, b"ustar\0");
        h.put(263, 2, b"00");
        h.octal(329, 8, 0);
        h.octal(337, 8, 0);
        h
    }

    /// Go leaves the device numbers of a PAX extended header empty.
    fn omit_device_numbers(&mut self) {
        self.0[329..345].fill(0);
    }

    /// Copies `bytes` into the field, cut to its width.
    fn put(&mut self, at: usize, width: usize, bytes: &[u8]) {
        let n = bytes.len().min(width);
        self.0[at..at + n].copy_from_slice(&bytes[..n]);
    }

    /// Zero-padded octal digits filling the field but its last byte (NUL).
    fn octal(&mut self, at: usize, width: usize, value: u64) {
        let digits = format!("{value:0w$o}", w = width - 1);
        self.put(at, width - 1, digits.as_bytes());
    }

    fn finish(mut self) -> [u8; BLOCK] {
        self.0[148..156].fill(b' ');
        let sum: u64 = self.0.iter().map(|&b| u64::from(b)).sum();
        // Six digits, a NUL, then the space already there.
        self.octal(148, 7, sum);
        self.0[154] = 0;
        self.0
    }
}

/// A long ASCII name split at a `/` into USTAR's prefix (at most 155
/// bytes) and name (1 to 100 bytes), as Go's writer splits it.
fn split_ustar(name: &str) -> Option<(&str, &str)> {
    if name.len() <= NAME || !name.is_ascii() {
        return None;
    }
    let mut limit = name.len().min(PREFIX + 1);
    if limit == name.len() && name.ends_with('/') {
        limit -= 1;
    }
    let i = name[..limit].rfind('/')?;
    let rest = &name[i + 1..];
    if i == 0 || rest.is_empty() || rest.len() > NAME || i > PREFIX {
        return None;
    }
    Some((&name[..i], rest))
}

/// `"<length> <key>=<value>\n"`, the length counting itself.
fn pax_record(key: &str, value: &str) -> String {
    let body = key.len() + value.len() + 3;
    let mut len = body + body.to_string().len();
    if len.to_string().len() + body > len {
        len += 1;
    }
    format!("{len} {key}={value}\n")
}

fn ascii_only(text: &str) -> String {
    text.chars().filter(char::is_ascii).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tar_hash(files: &[(&str, &str)]) -> String {
        let mut t = GoTarHasher::new();
        for (name, body) in files {
            t.add(name, body.len() as u64, &mut body.as_bytes())
                .unwrap();
        }
        t.finish()
    }

    /// The hashes Go's `archive/tar` gives for the same entries (go1.19,
    /// `tar.Header{Name, Mode: 0o600, Size}` each).
    #[test]
    fn the_stream_is_the_one_go_writes() {
        // An empty archive: Pulumi's own "empty assets" hash.
        assert_eq!(
            tar_hash(&[]),
            "5f70bf18a086007016e948b04aed3b82103a36bea41755b6cddfaf10ace3c6ef"
        );
        assert_eq!(
            tar_hash(&[("a.txt", "hello"), ("sub/b.txt", "world!")]),
            "af28d41c53da1def2eb73fc90a210cfc47e3f292ac1f95dc2982b5452cc59a55"
        );
        // Not ASCII: a PAX record carries the name.
        assert_eq!(
            tar_hash(&[("dir/ü.txt", "hi")]),
            "7869fdda4e5f5df797d570e74153d103b1416ec4f9d86a886a859940e3384225"
        );
        // Over 100 bytes, split into prefix and name.
        let split = format!("{}/{}.txt", "d".repeat(60), "e".repeat(60));
        assert_eq!(
            tar_hash(&[(&split, "hi")]),
            "61c78bbad76a1a92af6b6ee920867dce79fdc6958dd76cc4c95ec048e1478134"
        );
        // Over 100 bytes with no place to split: PAX, names cut to 100.
        let long = format!("x/{}", "f".repeat(120));
        assert_eq!(
            tar_hash(&[(&long, "hi")]),
            "de407d8be92830bf4254f8d92920294952bd9c71ec414633a080b7af6954e000"
        );
    }

    #[test]
    fn pax_records_count_their_own_length() {
        assert_eq!(pax_record("path", "dir/ü.txt"), "19 path=dir/ü.txt\n");
        let long = format!("x/{}", "f".repeat(120));
        assert_eq!(pax_record("path", &long), format!("132 path={long}\n"));
        for n in 0..300 {
            let r = pax_record("path", &"a".repeat(n));
            let (len, _) = r.split_once(' ').unwrap();
            assert_eq!(len.parse::<usize>().unwrap(), r.len());
        }
    }

    #[test]
    fn long_names_split_at_a_slash() {
        let name = format!("{}/{}.txt", "d".repeat(60), "e".repeat(60));
        assert_eq!(split_ustar(&name), Some((&name[..60], &name[61..])));
        assert_eq!(split_ustar(&format!("x/{}", "f".repeat(120))), None);
        assert_eq!(split_ustar("short"), None);
    }
}
