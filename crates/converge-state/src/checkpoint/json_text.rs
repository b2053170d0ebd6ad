//! JSON text as Pulumi's Go encoder writes it: 4-space indentation, object
//! members in the order given, and numbers formatted like `encoding/json`
//! (integers without a fraction, shortest round-trip digits otherwise,
//! exponent form below 1e-6 and from 1e21 on).

use serde::Serialize;
use serde_json::ser::{CompactFormatter, Formatter, PrettyFormatter};
use serde_json::Value;

const INDENT: &str = "    ";

/// Pretty JSON text (4-space indentation, like `json.MarshalIndent`), with a
/// trailing newline.
pub fn to_pretty_json(value: &Value) -> String {
    let bytes = to_pretty_bytes(value, Vec::new()).expect("a JSON value always serializes");
    String::from_utf8(bytes).expect("serde_json writes UTF-8")
}

/// [`to_pretty_json`] of `value`'s JSON form, written straight from it: no
/// `Value` tree of the whole checkpoint in between (at 10k resources that
/// tree and the text growing by doubling were 50 MB at the end of an up).
/// The text goes into `buffer`, cleared first, whose capacity is kept.
pub fn to_pretty_bytes(value: &impl Serialize, buffer: Vec<u8>) -> serde_json::Result<Vec<u8>> {
    let mut out = buffer;
    out.clear();
    to_pretty_writer(value, &mut out)?;
    Ok(out)
}

/// [`to_pretty_bytes`] into any writer (a file, a store reading the text
/// as it comes): the same text, trailing newline included.
pub fn to_pretty_writer(
    value: &impl Serialize,
    out: impl std::io::Write,
) -> serde_json::Result<()> {
    let pretty = PrettyFormatter::with_indent(INDENT.as_bytes());
    let mut serializer = serde_json::Serializer::with_formatter(out, GoFormatter(pretty));
    value.serialize(&mut serializer)?;
    serializer
        .into_inner()
        .write_all(b"\n")
        .map_err(serde_json::Error::io)
}

/// Compact JSON text (like `json.Marshal`) of `value`'s JSON form, written
/// straight from it (a journal entry: one line, no tree of its state).
pub(crate) fn to_compact_bytes(value: &impl Serialize) -> serde_json::Result<Vec<u8>> {
    let mut out = Vec::new();
    value.serialize(&mut serde_json::Serializer::with_formatter(
        &mut out,
        GoFormatter(CompactFormatter),
    ))?;
    Ok(out)
}

/// Compact JSON text (like `json.Marshal`), used inside secrets.
pub(crate) fn to_compact_json(value: &Value) -> String {
    let bytes = to_compact_bytes(value).expect("a JSON value always serializes");
    String::from_utf8(bytes).expect("serde_json writes UTF-8")
}

/// serde_json's formatter `F` (pretty or compact), with doubles written as
/// Go writes them ([`format_f64`]).
struct GoFormatter<F>(F);

impl<F: Formatter> Formatter for GoFormatter<F> {
    fn write_f64<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        value: f64,
    ) -> std::io::Result<()> {
        w.write_all(format_f64(value).as_bytes())
    }
    fn begin_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_array(w)
    }
    fn end_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_array(w)
    }
    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.0.begin_array_value(w, first)
    }
    fn end_array_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_array_value(w)
    }
    fn begin_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_object(w)
    }
    fn end_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_object(w)
    }
    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.0.begin_object_key(w, first)
    }
    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_object_value(w)
    }
}

/// Formats a finite double the way Go's `encoding/json` does.
pub(crate) fn format_f64(f: f64) -> String {
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        // Rust writes `1e21` and `1.5e-7`; Go writes `1e+21` and `1.5e-7`.
        let s = format!("{f:e}");
        match s.split_once('e') {
            Some((mantissa, exp)) if !exp.starts_with('-') => format!("{mantissa}e+{exp}"),
            _ => s,
        }
    } else {
        // Shortest round-trip digits in positional notation; `1` for 1.0.
        format!("{f}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_print_like_go() {
        for (f, want) in [
            (1.0, "1"),
            (-3.0, "-3"),
            (1.5, "1.5"),
            (0.1, "0.1"),
            (1e20, "100000000000000000000"),
            (1e21, "1e+21"),
            (1.5e300, "1.5e+300"),
            (0.000001, "0.000001"),
            (1e-7, "1e-7"),
            (-2.5e-10, "-2.5e-10"),
            (0.0, "0"),
            (123456789.125, "123456789.125"),
        ] {
            assert_eq!(format_f64(f), want, "{f:e}");
        }
    }

    /// Written straight from a value (a struct as well as a `Value`), the
    /// text is the one its `Value` tree gives, byte for byte.
    #[test]
    fn pretty_bytes_are_the_pretty_text() {
        let v = json!({
            "b": [1, 2.5, {}, [], -7, 1e21, 1e-7, 0.1, 1.0, 18446744073709551615u64],
            "a": {"x": null, "y": [], "z": {"t": true, "f": false}},
            "s": "q\"\n<&>\u{1}é",
            "e": {}
        });
        let text = to_pretty_json(&v);
        assert_eq!(to_pretty_bytes(&v, Vec::new()).unwrap(), text.as_bytes());
        assert_eq!(to_pretty_bytes(&json!([]), Vec::new()).unwrap(), b"[]\n");
        #[derive(serde::Serialize)]
        struct Row {
            name: &'static str,
            ratio: f64,
            tags: Vec<u32>,
        }
        let row = Row {
            name: "r",
            ratio: 1e21,
            tags: vec![],
        };
        assert_eq!(
            to_pretty_bytes(&row, Vec::new()).unwrap(),
            to_pretty_json(&serde_json::to_value(&row).unwrap()).as_bytes()
        );
        assert_eq!(
            to_pretty_json(&serde_json::to_value(&row).unwrap()),
            "{\n    \"name\": \"r\",\n    \"ratio\": 1e+21,\n    \"tags\": []\n}\n"
        );
    }

    /// A used buffer is written over, not appended to, and keeps its
    /// allocation when the text fits.
    #[test]
    fn pretty_bytes_reuse_the_buffer_given() {
        let mut used = Vec::with_capacity(4096);
        used.extend_from_slice(b"{\"the previous checkpoint\": true}");
        let at = used.as_ptr();
        let written = to_pretty_bytes(&json!({"a": 1}), used).unwrap();
        assert_eq!(written, b"{\n    \"a\": 1\n}\n");
        assert_eq!(written.as_ptr(), at);
        assert_eq!(written.capacity(), 4096);
    }

    #[test]
    fn pretty_and_compact_text() {
        let v = json!({"b": [1, 2.5, {}], "a": {"x": null, "y": []}, "s": "q\"\n"});
        assert_eq!(
            to_pretty_json(&v),
            "{\n    \"b\": [\n        1,\n        2.5,\n        {}\n    ],\n    \"a\": {\n        \"x\": null,\n        \"y\": []\n    },\n    \"s\": \"q\\\"\\n\"\n}\n"
        );
        assert_eq!(
            to_compact_json(&v),
            r#"{"b":[1,2.5,{}],"a":{"x":null,"y":[]},"s":"q\"\n"}"#
        );
    }
}
