//! What a Terraform resource's state carries beside its attributes: the
//! schema version it was written with and the provider's private data.
//! Both live in one output, `__meta` (the name Pulumi's Terraform bridge
//! uses), as JSON text: `{"schema_version":"2","private":"<base64>"}`.
//! Private data is opaque to Converge and is given back to the provider
//! byte for byte on every later call.

use base64::Engine as _;
use converge_model::{PropertyMap, PropertyValue};

pub const META_KEY: &str = "__meta";

/// The schema version and private data of a recorded state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Meta {
    /// `None` in state written without `__meta` (taken as version 0).
    pub schema_version: Option<i64>,
    pub private: Vec<u8>,
}

impl Meta {
    /// Reads `__meta` from recorded outputs; a missing or unreadable one
    /// is empty.
    pub fn read(outputs: &PropertyMap) -> Meta {
        let Some(PropertyValue::String(text)) = outputs.get(META_KEY).map(crate::shape::bare)
        else {
            return Meta::default();
        };
        let Ok(json) = serde_json::from_str::<serde_json::Value>(text) else {
            return Meta::default();
        };
        let schema_version = match json.get("schema_version") {
            Some(serde_json::Value::String(s)) => s.parse().ok(),
            Some(serde_json::Value::Number(n)) => n.as_i64(),
            _ => None,
        };
        let private = json
            .get("private")
            .and_then(serde_json::Value::as_str)
            .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
            .unwrap_or_default();
        Meta {
            schema_version,
            private,
        }
    }

    /// Writes `__meta` into outputs.
    pub fn write(&self, outputs: &mut PropertyMap) {
        let mut json = serde_json::Map::new();
        json.insert(
            "schema_version".into(),
            self.schema_version.unwrap_or(0).to_string().into(),
        );
        if !self.private.is_empty() {
            json.insert(
                "private".into(),
                base64::engine::general_purpose::STANDARD
                    .encode(&self.private)
                    .into(),
            );
        }
        outputs.insert(
            META_KEY.to_owned(),
            PropertyValue::String(serde_json::Value::Object(json).to_string()),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meta_round_trips_and_tolerates_absence() {
        let meta = Meta {
            schema_version: Some(2),
            private: b"{\"etag\":\"r1\"}".to_vec(),
        };
        let mut outputs = PropertyMap::new();
        meta.write(&mut outputs);
        assert_eq!(Meta::read(&outputs), meta);
        assert_eq!(Meta::read(&PropertyMap::new()), Meta::default());
    }
}
