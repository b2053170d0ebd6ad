//! Custom timeouts (Pulumi's `customTimeouts` resource option): one per
//! operation, written by programs as Go duration strings (`"5m"`,
//! `"1h30m"`, `"90s"`, `"250ms"`) and recorded in checkpoints as seconds.

use std::time::Duration;

/// Per-operation timeouts, as the program set them. Values are Go duration
/// strings (`"5m"`), kept as written.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CustomTimeouts {
    pub create: Option<String>,
    pub update: Option<String>,
    pub delete: Option<String>,
    /// Provider `Read` calls: refresh, reading an external resource, an
    /// import's read.
    pub read: Option<String>,
}

/// A custom timeout that is not a duration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("customTimeouts.{key}: {value:?} is not a duration (write it as Go does: \"90s\", \"5m\", \"1h30m\", \"250ms\")")]
pub struct TimeoutError {
    /// `create`, `update`, `delete` or `read`.
    pub key: &'static str,
    pub value: String,
}

impl CustomTimeouts {
    /// The keys, in Pulumi's order.
    pub const KEYS: [&'static str; 4] = ["create", "update", "delete", "read"];

    /// Each timeout by its key, in [`KEYS`](Self::KEYS) order.
    pub fn entries(&self) -> [(&'static str, Option<&str>); 4] {
        [
            ("create", self.create.as_deref()),
            ("update", self.update.as_deref()),
            ("delete", self.delete.as_deref()),
            ("read", self.read.as_deref()),
        ]
    }

    /// The timeout of `key` (one of [`KEYS`](Self::KEYS)), for setting.
    pub fn slot(&mut self, key: &str) -> Option<&mut Option<String>> {
        match key {
            "create" => Some(&mut self.create),
            "update" => Some(&mut self.update),
            "delete" => Some(&mut self.delete),
            "read" => Some(&mut self.read),
            _ => None,
        }
    }

    /// True if no timeout is set.
    pub fn is_empty(&self) -> bool {
        self.entries().iter().all(|(_, v)| v.is_none())
    }

    /// Refuses a timeout that is not a duration, or is negative, naming
    /// its key.
    pub fn check(&self) -> Result<(), TimeoutError> {
        for (key, value) in self.entries() {
            if let Some(text) = value {
                if !go_duration_seconds(text).is_some_and(|s| s >= 0.0) {
                    return Err(TimeoutError {
                        key,
                        value: text.to_owned(),
                    });
                }
            }
        }
        Ok(())
    }

    /// The timeout of `key` as a duration; `None` if it is unset, zero
    /// (Pulumi's "no timeout") or not a positive duration.
    pub fn duration(&self, key: &str) -> Option<Duration> {
        let (_, text) = self.entries().into_iter().find(|(k, _)| *k == key)?;
        let secs = go_duration_seconds(text?)?;
        (secs > 0.0).then(|| Duration::from_secs_f64(secs))
    }
}

/// Seconds in a Go duration string (`"5m"`, `"1h30m"`, `"1.5s"`,
/// `"300ms"`, `"-2s"`, `"0"`), as Go's `time.ParseDuration` reads it;
/// `None` if it is not one (a bare number other than `0` is not).
pub fn go_duration_seconds(s: &str) -> Option<f64> {
    let (negative, mut rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if rest == "0" {
        return Some(0.0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total = 0.0;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number = &rest[..number_len];
        if number.is_empty() || number == "." {
            return None;
        }
        let value: f64 = number.parse().ok()?;
        rest = &rest[number_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "\u{b5}s" | "\u{3bc}s" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        total += value * scale;
        rest = &rest[unit_len..];
    }
    Some(if negative { -total } else { total })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        assert_eq!(go_duration_seconds("300s"), Some(300.0));
        assert_eq!(go_duration_seconds("5m"), Some(300.0));
        assert_eq!(go_duration_seconds("1h30m"), Some(5400.0));
        assert_eq!(go_duration_seconds("1.5s"), Some(1.5));
        assert_eq!(go_duration_seconds("250ms"), Some(0.25));
        assert_eq!(go_duration_seconds("-2s"), Some(-2.0));
        assert_eq!(go_duration_seconds("0"), Some(0.0));
        for bad in ["", "5", "s", "5x", "1.2.3s", "-", "1d"] {
            assert_eq!(go_duration_seconds(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_timeout_that_is_not_a_duration_is_named_by_its_key() {
        let ok = CustomTimeouts {
            create: Some("5m".to_owned()),
            read: Some("0".to_owned()),
            ..CustomTimeouts::default()
        };
        assert_eq!(ok.check(), Ok(()));
        assert_eq!(ok.duration("create"), Some(Duration::from_secs(300)));
        assert_eq!(ok.duration("read"), None, "zero is no timeout");
        assert_eq!(ok.duration("update"), None);
        for bad in ["soon", "10", "-1m"] {
            let t = CustomTimeouts {
                read: Some(bad.to_owned()),
                ..CustomTimeouts::default()
            };
            let err = t.check().unwrap_err();
            assert_eq!(err.key, "read");
            assert!(err.to_string().contains("customTimeouts.read"), "{err}");
        }
    }
}
