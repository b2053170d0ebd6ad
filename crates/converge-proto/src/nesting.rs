//! How deep a serialized protobuf message nests, measured on its bytes
//! before anything is decoded.
//!
//! prost decodes nested messages by recursion and, by default, refuses
//! anything nested more than 100 levels deep. A `google.protobuf.Value`
//! costs two or three levels per level of the property value it carries
//! (`Value` → `Struct` → map entry → `Value`), so that default refused
//! ordinary provider answers a few dozen levels deep. Converge builds prost
//! without its limit and bounds nesting here instead, at
//! [`MAX_MESSAGE_DEPTH`]: the limit Pulumi's engine and Go plugins decode
//! with (`google.golang.org/protobuf`'s default).
//!
//! The scan needs no schema. Every length-delimited field is tried as a
//! message, counted as a level as soon as it is entered (as prost's
//! recursion is); if its bytes are not a message (a string, say), it is
//! skipped as opaque, and the scan goes on after it. So the depth found is
//! never below what prost will recurse, and a string adds one level, more
//! only where its bytes happen to start nested messages or groups. Groups (wire types 3 and 4) count as levels too, as
//! prost recurses into them when it skips them. The scan is one pass with
//! an explicit stack: linear time, no recursion.

/// The deepest messages may nest inside one gRPC message, the outermost
/// not counted: 10,000 levels, as Pulumi's engine and Go plugins accept
/// (`google.golang.org/protobuf`'s default recursion limit). A property
/// value costs three levels per nested object and two per nested list, so
/// values about 3,300 objects or 5,000 lists deep cross the wire.
pub const MAX_MESSAGE_DEPTH: usize = 10_000;

/// A message nested deeper than the limit it was checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "the gRPC message nests more than {limit} levels of messages (a property value about \
     {} objects or {} lists deep); Converge, like Pulumi's engine, decodes at most {limit} \
     levels: flatten the value, or pass it as a JSON string",
    .limit / 3,
    .limit / 2
)]
pub struct TooDeep {
    /// The limit that was exceeded.
    pub limit: usize,
}

/// What the scan is inside of, and the offset where its bytes end (a
/// group's are its enclosing field's).
struct Frame {
    end: usize,
    /// The field number a group was started with; `None` for a
    /// length-delimited field tried as a message.
    group: Option<u64>,
}

/// Checks that `bytes`, a serialized message, nests no more than `limit`
/// levels of messages. Malformed bytes pass: the decoder that follows
/// refuses them, recursing no deeper than the scan counted.
pub fn check_nesting(bytes: &[u8], limit: usize) -> Result<(), TooDeep> {
    let mut stack: Vec<Frame> = Vec::new();
    let mut pos = 0;
    loop {
        let end = stack.last().map_or(bytes.len(), |f| f.end);
        let step = if pos == end {
            match stack.last() {
                None => return Ok(()),
                Some(Frame { group: None, .. }) => {
                    stack.pop();
                    Ok(())
                }
                Some(Frame { group: Some(_), .. }) => Err(()),
            }
        } else {
            field(bytes, &mut pos, end, &mut stack)
        };
        if stack.len() > limit {
            return Err(TooDeep { limit });
        }
        if step.is_err() {
            // The innermost length-delimited field is not a message: skip
            // it whole. Outside of any, the message itself is malformed.
            loop {
                match stack.pop() {
                    None => return Ok(()),
                    Some(Frame { end, group: None }) => {
                        pos = end;
                        break;
                    }
                    Some(Frame { group: Some(_), .. }) => {}
                }
            }
        }
    }
}

/// Reads the field at `pos` (within `end`), pushing a frame if it opens
/// one; `Err` if the bytes are not a well-formed field.
fn field(bytes: &[u8], pos: &mut usize, end: usize, stack: &mut Vec<Frame>) -> Result<(), ()> {
    let key = varint(bytes, pos, end)?;
    let number = key >> 3;
    if number == 0 {
        return Err(());
    }
    match key & 7 {
        0 => varint(bytes, pos, end).map(drop),
        1 => skip(pos, 8, end),
        5 => skip(pos, 4, end),
        2 => {
            let len = usize::try_from(varint(bytes, pos, end)?).map_err(drop)?;
            if len > end - *pos {
                return Err(());
            }
            stack.push(Frame {
                end: *pos + len,
                group: None,
            });
            Ok(())
        }
        3 => {
            stack.push(Frame {
                end,
                group: Some(number),
            });
            Ok(())
        }
        4 => match stack.last() {
            Some(Frame {
                group: Some(field), ..
            }) if *field == number => {
                stack.pop();
                Ok(())
            }
            _ => Err(()),
        },
        _ => Err(()),
    }
}

fn skip(pos: &mut usize, len: usize, end: usize) -> Result<(), ()> {
    if len > end - *pos {
        return Err(());
    }
    *pos += len;
    Ok(())
}

/// A base-128 varint of at most ten bytes.
fn varint(bytes: &[u8], pos: &mut usize, end: usize) -> Result<u64, ()> {
    let mut value = 0u64;
    for shift in 0..10 {
        let byte = *bytes[..end].get(*pos).ok_or(())?;
        *pos += 1;
        value |= u64::from(byte & 0x7f) << (shift * 7);
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(())
}

#[cfg(test)]
mod tests {
    use prost::Message;
    use prost_types::{value::Kind, ListValue, Struct, Value};

    use super::*;

    fn leaf() -> Value {
        Value {
            kind: Some(Kind::BoolValue(true)),
        }
    }

    /// A `Value` holding `levels` nested lists (`[[...[true]...]]`).
    fn lists(levels: usize) -> Value {
        let mut v = leaf();
        for _ in 0..levels {
            v = Value {
                kind: Some(Kind::ListValue(ListValue { values: vec![v] })),
            };
        }
        v
    }

    /// A `Value` holding `levels` nested objects (`{"a": {"a": ... }}`).
    fn objects(levels: usize) -> Value {
        let mut v = leaf();
        for _ in 0..levels {
            v = Value {
                kind: Some(Kind::StructValue(Struct {
                    fields: [("a".to_string(), v)].into(),
                })),
            };
        }
        v
    }

    /// The deepest limit `bytes` passes.
    fn depth(bytes: &[u8]) -> usize {
        (0..).find(|&l| check_nesting(bytes, l).is_ok()).unwrap()
    }

    #[test]
    fn nested_values_count_each_message_level() {
        // `Value` -> `ListValue` -> `Value`: two levels per list.
        assert_eq!(depth(&lists(0).encode_to_vec()), 0);
        assert_eq!(depth(&lists(1).encode_to_vec()), 2);
        assert_eq!(depth(&lists(50).encode_to_vec()), 100);
        // `Value` -> `Struct` -> map entry -> `Value`: three per object.
        assert_eq!(depth(&objects(50).encode_to_vec()), 150);
    }

    #[test]
    fn strings_that_are_not_messages_add_a_level_and_are_skipped() {
        let string = |s: &str| Value {
            kind: Some(Kind::StringValue(s.into())),
        };
        assert_eq!(depth(&string("leaf").encode_to_vec()), 1);
        // `{` opens a group (field 15) before the bytes fail to parse.
        assert_eq!(
            depth(&string("{\"not\": [\"a message\"]}").encode_to_vec()),
            2
        );
        // A string beside a deep list does not add to its depth.
        let list = Value {
            kind: Some(Kind::ListValue(ListValue {
                values: vec![string("leaf"), lists(10)],
            })),
        };
        assert_eq!(depth(&list.encode_to_vec()), 22);
    }

    #[test]
    fn groups_count_as_levels() {
        // Field 1 as a group, 5 deep, then closed.
        let mut bytes = vec![0x0b; 5];
        bytes.extend([0x0c; 5]);
        assert_eq!(depth(&bytes), 5);
        // Unclosed groups are malformed; the scan still counts them.
        assert!(check_nesting(&[0x0b; 20], 19).is_err());
    }

    #[test]
    fn malformed_bytes_pass_to_the_decoder() {
        assert!(check_nesting(&[0xff; 20], 0).is_ok());
        assert!(check_nesting(&[0x0a, 0x05, 0x01], 0).is_ok());
        assert!(check_nesting(&[0x0c], 0).is_ok());
    }

    #[test]
    fn deep_bytes_are_scanned_without_recursion() {
        // 100,000 nested length-delimited fields (field 1), innermost
        // empty: sizes[i] is the length of level i's contents.
        let levels = 100_000;
        let mut sizes = vec![0u64; levels];
        for i in (0..levels - 1).rev() {
            let inner = sizes[i + 1];
            sizes[i] = 1 + prost::encoding::encoded_len_varint(inner) as u64 + inner;
        }
        let mut bytes = Vec::new();
        for size in sizes {
            bytes.push(0x0a);
            prost::encoding::encode_varint(size, &mut bytes);
        }
        assert_eq!(
            check_nesting(&bytes, MAX_MESSAGE_DEPTH),
            Err(TooDeep {
                limit: MAX_MESSAGE_DEPTH
            })
        );
        assert!(check_nesting(&bytes, levels).is_ok());
        assert!(check_nesting(&bytes, levels - 1).is_err());
    }
}
