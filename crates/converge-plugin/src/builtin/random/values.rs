//! RandomInteger, RandomId, RandomBytes, RandomUuid/4/7 and RandomShuffle.

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use converge_model::{PropertyMap, PropertyValue};
use rand::rngs::OsRng;
use rand::seq::SliceRandom;
use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use sha2::{Digest, Sha256};

use super::Kind;
use crate::builtin::spec::{failure, get_int, get_str, get_str_list, int};
use crate::{CheckFailure, ProviderError};

/// A generator: seeded (deterministic) from `seed` when one is given,
/// otherwise from the OS.
fn rng(seed: Option<&str>) -> ChaCha20Rng {
    match seed.filter(|s| !s.is_empty()) {
        Some(s) => ChaCha20Rng::from_seed(Sha256::digest(s.as_bytes()).into()),
        None => ChaCha20Rng::from_rng(OsRng).unwrap_or_else(|_| ChaCha20Rng::from_entropy()),
    }
}

pub(super) fn validate(kind: Kind, m: &PropertyMap) -> Vec<CheckFailure> {
    let mut failures = Vec::new();
    let at_least_one = |key: &str, failures: &mut Vec<CheckFailure>| {
        if get_int(m, key).is_some_and(|n| n < 1) {
            failures.push(failure(key, format!("{key} must be at least 1")));
        }
    };
    match kind {
        Kind::Integer => {
            if let (Some(min), Some(max)) = (get_int(m, "min"), get_int(m, "max")) {
                if min > max {
                    failures.push(failure(
                        "min",
                        format!("min ({min}) must be at most max ({max})"),
                    ));
                }
            }
        }
        Kind::Id => at_least_one("byteLength", &mut failures),
        Kind::Bytes | Kind::Pet => at_least_one("length", &mut failures),
        Kind::Shuffle if get_int(m, "resultCount").is_some_and(|n| n < 0) => {
            failures.push(failure("resultCount", "resultCount must be at least 0"));
        }
        _ => {}
    }
    failures
}

fn bytes(n: i64) -> Vec<u8> {
    let mut b = vec![0u8; usize::try_from(n).unwrap_or(0)];
    OsRng.fill_bytes(&mut b);
    b
}

/// The bytes as a big-endian unsigned integer, in decimal.
pub(super) fn decimal(bytes: &[u8]) -> String {
    let mut digits: Vec<u8> = Vec::new(); // little-endian base 10
    for &b in bytes {
        let mut carry = u32::from(b);
        for d in digits.iter_mut() {
            let v = u32::from(*d) * 256 + carry;
            *d = (v % 10) as u8;
            carry = v / 10;
        }
        while carry > 0 {
            digits.push((carry % 10) as u8);
            carry /= 10;
        }
    }
    if digits.is_empty() {
        return "0".to_owned();
    }
    digits.iter().rev().map(|d| char::from(b'0' + d)).collect()
}

fn id_outputs(prefix: &str, b: &[u8]) -> PropertyMap {
    let mut out = PropertyMap::new();
    out.insert(
        "b64Std".into(),
        format!("{prefix}{}", STANDARD.encode(b)).into(),
    );
    out.insert(
        "b64Url".into(),
        format!("{prefix}{}", URL_SAFE_NO_PAD.encode(b)).into(),
    );
    out.insert("dec".into(), format!("{prefix}{}", decimal(b)).into());
    out.insert("hex".into(), format!("{prefix}{}", hex::encode(b)).into());
    out
}

fn bytes_outputs(b: &[u8]) -> PropertyMap {
    let mut out = PropertyMap::new();
    out.insert("base64".into(), STANDARD.encode(b).into());
    out.insert("hex".into(), hex::encode(b).into());
    out
}

fn shuffle(inputs: &PropertyMap) -> Vec<PropertyValue> {
    let items = get_str_list(inputs, "inputs").unwrap_or_default();
    let count =
        get_int(inputs, "resultCount").map_or(items.len(), |n| usize::try_from(n).unwrap_or(0));
    let mut rng = rng(get_str(inputs, "seed"));
    let mut results = Vec::with_capacity(count);
    while !items.is_empty() && results.len() < count {
        let mut round: Vec<&String> = items.iter().collect();
        round.shuffle(&mut rng);
        let want = count - results.len();
        results.extend(round.into_iter().take(want).map(|s| s.as_str().into()));
    }
    results
}

/// `(id, generated outputs)`.
pub(super) fn generate(
    kind: Kind,
    inputs: &PropertyMap,
) -> Result<(String, PropertyMap), ProviderError> {
    let mut out = PropertyMap::new();
    let id = match kind {
        Kind::Integer => {
            let (min, max) = (get_int(inputs, "min"), get_int(inputs, "max"));
            let (Some(min), Some(max)) = (min, max) else {
                return Err(ProviderError::failed("min and max must be integers"));
            };
            if min > max {
                return Err(ProviderError::failed("min must be at most max"));
            }
            let n = rng(get_str(inputs, "seed")).gen_range(min..=max);
            out.insert("result".into(), int(n));
            n.to_string()
        }
        Kind::Id => {
            let b = bytes(get_int(inputs, "byteLength").unwrap_or(0).max(1));
            out = id_outputs(get_str(inputs, "prefix").unwrap_or(""), &b);
            URL_SAFE_NO_PAD.encode(&b)
        }
        Kind::Bytes => {
            out = bytes_outputs(&bytes(get_int(inputs, "length").unwrap_or(0).max(1)));
            "none".to_owned()
        }
        Kind::Uuid | Kind::Uuid4 | Kind::Uuid7 => {
            let u = if kind == Kind::Uuid7 {
                uuid::Uuid::now_v7()
            } else {
                uuid::Uuid::new_v4()
            };
            out.insert("result".into(), u.to_string().into());
            u.to_string()
        }
        Kind::Shuffle => {
            out.insert("results".into(), PropertyValue::Array(shuffle(inputs)));
            "-".to_owned()
        }
        Kind::String | Kind::Password | Kind::Pet => unreachable!("generated elsewhere"),
    };
    Ok((id, out))
}

fn bad_import(kind: Kind, id: &str, expected: &str) -> ProviderError {
    // The value of a RandomBytes is a secret: never repeat it.
    let shown = if kind == Kind::Bytes {
        "[secret]".to_owned()
    } else {
        format!("{id:?}")
    };
    ProviderError::failed(format!(
        "cannot import {} with ID {shown}: expected {expected}",
        kind.spec().token
    ))
}

/// `(id, inputs, generated outputs)` of an imported resource.
pub(super) fn import(
    kind: Kind,
    id: &str,
) -> Result<(String, PropertyMap, PropertyMap), ProviderError> {
    let mut inputs = PropertyMap::new();
    let mut out = PropertyMap::new();
    let new_id = match kind {
        Kind::Integer => {
            let expected = "result,min,max or result,min,max,seed";
            let parts: Vec<&str> = id.split(',').collect();
            if parts.len() != 3 && parts.len() != 4 {
                return Err(bad_import(kind, id, expected));
            }
            let num = |s: &str| {
                s.trim()
                    .parse::<i64>()
                    .map_err(|_| bad_import(kind, id, expected))
            };
            let (result, min, max) = (num(parts[0])?, num(parts[1])?, num(parts[2])?);
            inputs.insert("min".into(), int(min));
            inputs.insert("max".into(), int(max));
            if let Some(seed) = parts.get(3) {
                inputs.insert("seed".into(), (*seed).into());
            }
            out.insert("result".into(), int(result));
            result.to_string()
        }
        Kind::Id => {
            let (prefix, encoded) = id.rsplit_once(',').unwrap_or(("", id));
            let b = URL_SAFE_NO_PAD
                .decode(encoded)
                .ok()
                .filter(|b| !b.is_empty())
                .ok_or_else(|| bad_import(kind, id, "[prefix,]<unpadded URL-safe base64>"))?;
            inputs.insert("byteLength".into(), int(b.len() as i64));
            if !prefix.is_empty() {
                inputs.insert("prefix".into(), prefix.into());
            }
            out = id_outputs(prefix, &b);
            encoded.to_owned()
        }
        Kind::Bytes => {
            let b = STANDARD
                .decode(id)
                .ok()
                .filter(|b| !b.is_empty())
                .ok_or_else(|| bad_import(kind, id, "the bytes in standard base64"))?;
            inputs.insert("length".into(), int(b.len() as i64));
            out = bytes_outputs(&b);
            "none".to_owned()
        }
        Kind::Uuid | Kind::Uuid4 | Kind::Uuid7 => {
            if id.len() != 36 || uuid::Uuid::parse_str(id).is_err() {
                return Err(bad_import(kind, id, "a UUID (8-4-4-4-12 hex digits)"));
            }
            out.insert("result".into(), id.into());
            id.to_owned()
        }
        Kind::String | Kind::Password | Kind::Pet | Kind::Shuffle => {
            unreachable!("imported elsewhere")
        }
    };
    Ok((new_id, inputs, out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_of_bytes() {
        assert_eq!(decimal(&[]), "0");
        assert_eq!(decimal(&[0, 0]), "0");
        assert_eq!(decimal(&[255]), "255");
        assert_eq!(decimal(&[1, 0]), "256");
        assert_eq!(decimal(&[0xff; 8]), u64::MAX.to_string());
        let b = [0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0x11];
        let expected = 0x0012_3456_789a_bcde_f011_u128.to_string();
        assert_eq!(decimal(&b), expected);
    }

    #[test]
    fn seeded_generators_repeat() {
        let a: u64 = rng(Some("s")).gen();
        let b: u64 = rng(Some("s")).gen();
        let c: u64 = rng(Some("t")).gen();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }
}
