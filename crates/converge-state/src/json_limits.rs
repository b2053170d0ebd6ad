//! The bounds of every JSON document Converge reads as state: checkpoints
//! and `stack export` files, journal entries, saved plans, and the secrets
//! inside them (a secret's text is a JSON document of its own).
//!
//! [`check`] looks at the bytes before anything is parsed: a document too
//! large or nested too deep is refused with an error naming the limit, and
//! nothing is built. [`from_slice`] is the parse every reader here uses:
//! [`check`], then serde_json with its own recursion limit (128 levels,
//! far below what Pulumi reads) turned off, since the depth is already
//! bounded by [`MAX_JSON_DEPTH`].
//!
//! A value this deep is recursed over by whatever reads, writes, copies,
//! compares, shows or frees it, at a few hundred bytes of stack per level:
//! the `converge` binary runs its work on threads whose stacks hold
//! [`MAX_JSON_DEPTH`] levels with room to spare (`converge-cli`'s
//! `main.rs`); a library caller handling values that deep needs the same.

use serde::Deserialize;

/// The deepest nesting of arrays and objects a JSON document may have,
/// counting the document's own top-level object as level 1.
///
/// Pulumi reads state with Go's `encoding/json`, which refuses documents
/// nested deeper than 10,000 levels; Converge reads exactly what Pulumi
/// reads, so a stack Pulumi wrote never becomes unreadable here. In a
/// checkpoint a resource's property map sits at level 6 (`checkpoint`,
/// `latest`, `resources`, the resource, `outputs`), so a property value
/// may itself be nested 9,994 levels deep.
pub const MAX_JSON_DEPTH: usize = 10_000;

/// How deep in a checkpoint a resource's property values sit: the
/// document, `checkpoint`, `latest`, `resources`, the resource, and its
/// `inputs` or `outputs` map are the levels around them.
pub const CHECKPOINT_VALUE_LEVEL: usize = 6;

/// The deepest a property value may nest arrays and objects (a scalar is
/// 0, `[1]` is 1): the most that still fits in a checkpoint under
/// [`MAX_JSON_DEPTH`], so that every value Converge accepts from any
/// document (a `stack export` file, where values sit one level higher, a
/// journal entry, a plan) can be written to the stack's checkpoint and
/// read back, by Converge and by Pulumi.
pub const MAX_VALUE_DEPTH: usize = MAX_JSON_DEPTH - CHECKPOINT_VALUE_LEVEL;

/// The largest JSON document read as state, in bytes (2 GiB).
///
/// A checkpoint of 100,000 resources is about 80 MB, so this is 25 times
/// the largest stacks Converge is measured on, well past what either tool
/// can update in memory. The bound is there so that a device or an endless
/// stream named as an input file (`/dev/zero`) is refused instead of read
/// until memory runs out.
pub const MAX_JSON_BYTES: u64 = 2 << 30;

/// A JSON document past one of the limits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JsonLimitError {
    #[error(
        "it nests arrays and objects more than {MAX_JSON_DEPTH} levels deep (line {line}, column {column}); \
         Converge, like Pulumi, reads at most {MAX_JSON_DEPTH} levels"
    )]
    TooDeep { line: usize, column: usize },
    #[error(
        "it is larger than {MAX_JSON_BYTES} bytes, the most Converge reads as one JSON document"
    )]
    TooLarge,
}

/// Why a JSON document could not be read by [`from_slice`].
#[derive(Debug, thiserror::Error)]
pub enum JsonReadError {
    #[error("{0}")]
    Limit(#[from] JsonLimitError),
    #[error("{0}")]
    Json(#[from] serde_json::Error),
}

/// Checks `bytes` against [`MAX_JSON_BYTES`] and [`MAX_JSON_DEPTH`]
/// without parsing it: brackets are counted outside strings. Whatever else
/// is wrong with the text is left to the parser.
pub fn check(bytes: &[u8]) -> Result<(), JsonLimitError> {
    if bytes.len() as u64 > MAX_JSON_BYTES {
        return Err(JsonLimitError::TooLarge);
    }
    match first_past(bytes, MAX_JSON_DEPTH) {
        None => Ok(()),
        Some(at) => {
            let (line, column) = line_and_column(bytes, at);
            Err(JsonLimitError::TooDeep { line, column })
        }
    }
}

/// The offset of the first `[` or `{` nested deeper than `limit`, strings
/// skipped; an unterminated string ends the text.
fn first_past(bytes: &[u8], limit: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = 0;
    while let Some(at) = next_of(bytes, i, Needles::Structural) {
        i = at + 1;
        match bytes[at] {
            b'"' => i = string_end(bytes, at + 1)? + 1,
            b'[' | b'{' => {
                depth += 1;
                if depth > limit {
                    return Some(at);
                }
            }
            _ => depth = depth.saturating_sub(1),
        }
    }
    None
}

/// The index of the quote that closes the string whose text starts at
/// `from`.
fn string_end(bytes: &[u8], mut from: usize) -> Option<usize> {
    loop {
        let at = next_of(bytes, from, Needles::StringEnd)?;
        match bytes[at] {
            b'\\' => from = at + 2,
            _ => return Some(at),
        }
    }
}

/// What [`next_of`] looks for.
#[derive(Clone, Copy, PartialEq)]
enum Needles {
    /// `"`, `[`, `]`, `{`, `}`.
    Structural,
    /// `"`, `\`.
    StringEnd,
}

/// The index of the first of `needles` at or after `from`. Eight bytes
/// at a time (a checkpoint is mostly indentation and strings): a word
/// with none of them is skipped whole, the rest is looked at byte by
/// byte. A plain loop rather than `memchr`, since this crate is optimised
/// in debug builds and its dependencies are not.
fn next_of(bytes: &[u8], mut from: usize, needles: Needles) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    /// The bytes of `word` equal to `byte` have their high bit set
    /// (exactly so up to the first one; none when none is).
    fn equal(word: u64, byte: u8) -> u64 {
        let x = word ^ (ONES * u64::from(byte));
        x.wrapping_sub(ONES) & !x & (ONES * 0x80)
    }
    while let Some(chunk) = bytes.get(from..from + 8) {
        let word = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
        let hits = match needles {
            // `[` and `]` are `{` and `}` with bit 0x20 clear.
            Needles::Structural => {
                let folded = word | (ONES * 0x20);
                equal(word, b'"') | equal(folded, b'{') | equal(folded, b'}')
            }
            Needles::StringEnd => equal(word, b'"') | equal(word, b'\\'),
        };
        if hits != 0 {
            return Some(from + (hits.trailing_zeros() / 8) as usize);
        }
        from += 8;
    }
    let is_needle = |b: &u8| match needles {
        Needles::Structural => matches!(b, b'"' | b'[' | b']' | b'{' | b'}'),
        Needles::StringEnd => matches!(b, b'"' | b'\\'),
    };
    bytes
        .get(from..)?
        .iter()
        .position(is_needle)
        .map(|n| from + n)
}

/// 1-based line and column of byte `offset`, as serde_json counts them.
fn line_and_column(bytes: &[u8], offset: usize) -> (usize, usize) {
    let before = &bytes[..offset];
    let line = 1 + before.iter().filter(|&&b| b == b'\n').count();
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |n| n + 1);
    (line, offset - line_start + 1)
}

/// Parses a `T` from `bytes` once [`check`] passes, with serde_json's
/// recursion limit off.
pub fn from_slice<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> Result<T, JsonReadError> {
    check(bytes)?;
    Ok(unchecked_from_slice(bytes)?)
}

/// Parses a `T` from `bytes` that [`check`] already passed (or that is
/// part of a document it passed), with serde_json's recursion limit off.
pub(crate) fn unchecked_from_slice<'a, T: Deserialize<'a>>(
    bytes: &'a [u8],
) -> serde_json::Result<T> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    de.disable_recursion_limit();
    let value = T::deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(depth: usize) -> String {
        let mut text = String::new();
        for i in 0..depth {
            text.push_str(if i % 2 == 0 { "{\"k\":" } else { "[" });
        }
        text.push_str("\"leaf\"");
        for i in (0..depth).rev() {
            text.push(if i % 2 == 0 { '}' } else { ']' });
        }
        text
    }

    #[test]
    fn depth_is_counted_outside_strings() {
        assert_eq!(check(nested(MAX_JSON_DEPTH).as_bytes()), Ok(()));
        let e = check(nested(MAX_JSON_DEPTH + 1).as_bytes()).unwrap_err();
        let column = (MAX_JSON_DEPTH / 2) * "{\"k\":[".len() + 1;
        assert_eq!(e, JsonLimitError::TooDeep { line: 1, column });
        assert!(e.to_string().contains("10000 levels"), "{e}");
        // Brackets and escaped quotes in strings do not count.
        let in_string = format!("[\"{}\\\"{}\"]", "[".repeat(20_000), "{".repeat(20_000));
        assert_eq!(check(in_string.as_bytes()), Ok(()));
        // Unterminated and unbalanced text is the parser's to report.
        assert_eq!(check(b"[\"abc"), Ok(()));
        assert_eq!(check(b"]]]{"), Ok(()));
    }

    /// [`first_past`], byte by byte.
    fn naive_first_past(bytes: &[u8], limit: usize) -> Option<usize> {
        let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
        for (at, &b) in bytes.iter().enumerate() {
            match (in_string, b) {
                (true, _) if escaped => escaped = false,
                (true, b'\\') => escaped = true,
                (_, b'"') => in_string = !in_string,
                (false, b'[' | b'{') => {
                    depth += 1;
                    if depth > limit {
                        return Some(at);
                    }
                }
                (false, b']' | b'}') => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        None
    }

    #[test]
    fn eight_bytes_at_a_time_count_as_one_at_a_time() {
        // The bytes that matter and bytes that look like them to a
        // word-wide comparison (`;` and `=` are `{`, `}` less 0x40; `[`
        // and `]` are `{` and `}` less 0x20), in random texts.
        let alphabet = b"\"\\[]{} a;=\n";
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut random = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for len in 0..120 {
            for _ in 0..40 {
                let text: Vec<u8> = (0..len)
                    .map(|_| alphabet[(random() % alphabet.len() as u64) as usize])
                    .collect();
                for limit in 0..6 {
                    assert_eq!(
                        first_past(&text, limit),
                        naive_first_past(&text, limit),
                        "limit {limit}: {:?}",
                        String::from_utf8_lossy(&text)
                    );
                }
            }
        }
        let text = format!("  \"a[\\\"{{\" {}", nested(MAX_JSON_DEPTH + 1));
        assert_eq!(
            first_past(text.as_bytes(), MAX_JSON_DEPTH),
            naive_first_past(text.as_bytes(), MAX_JSON_DEPTH)
        );
    }

    #[test]
    fn lines_and_columns_count_from_one() {
        let text = format!("{{\n  \"a\":\n{}", "[".repeat(MAX_JSON_DEPTH));
        let e = check(text.as_bytes()).unwrap_err();
        assert_eq!(
            e,
            JsonLimitError::TooDeep {
                line: 3,
                column: MAX_JSON_DEPTH
            }
        );
    }

    #[test]
    fn a_checked_document_parses_past_serde_jsons_own_limit() {
        let text = nested(1_000);
        let value: serde_json::Value = from_slice(text.as_bytes()).unwrap();
        let mut depth = 0;
        let mut at = &value;
        while let Some(inner) = at.get("k").or_else(|| at.get(0)) {
            depth += 1;
            at = inner;
        }
        assert_eq!(depth, 1_000);
        assert!(serde_json::from_str::<serde_json::Value>(&text).is_err());
        assert!(matches!(
            from_slice::<serde_json::Value>(b"[1] x"),
            Err(JsonReadError::Json(_))
        ));
    }
}
