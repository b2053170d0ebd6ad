//! RandomString and RandomPassword.
//!
//! Generation follows upstream: first each minimum's count of characters
//! from its class (even for a class that is switched off; special
//! characters come from `overrideSpecial` when it is set), then the rest
//! from the union of the classes switched on, then a shuffle.

use converge_model::{PropertyMap, PropertyValue};
use rand::rngs::OsRng;
use rand::seq::SliceRandom;

use crate::builtin::spec::{failure, get_bool, get_int, get_str, int};
use crate::{CheckFailure, ProviderError};

pub const LOWER: &str = "abcdefghijklmnopqrstuvwxyz";
pub const UPPER: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
pub const NUMERIC: &str = "0123456789";
/// The default special characters.
pub const SPECIAL: &str = "!@#$%&*()-_=+[]{}<>:?";

/// bcrypt's cost for `bcryptHash` (Go's `bcrypt.DefaultCost`, as upstream).
const BCRYPT_COST: u32 = 10;

const MINIMUMS: [&str; 4] = ["minLower", "minNumeric", "minSpecial", "minUpper"];

/// `number` is the deprecated twin of `numeric`: one set alone sets the
/// other; both set must agree.
pub(super) fn sync_numeric(news: &mut PropertyMap) -> Option<CheckFailure> {
    let set =
        |m: &PropertyMap, k: &str| m.get(k).is_some_and(|v| !matches!(v, PropertyValue::Null));
    match (set(news, "number"), set(news, "numeric")) {
        (true, false) => {
            let v = news.get("number").cloned().unwrap_or(PropertyValue::Null);
            news.insert("numeric".into(), v);
        }
        (false, true) => {
            let v = news.get("numeric").cloned().unwrap_or(PropertyValue::Null);
            news.insert("number".into(), v);
        }
        (true, true) => {
            let (a, b) = (get_bool(news, "number"), get_bool(news, "numeric"));
            if let (Some(a), Some(b)) = (a, b) {
                if a != b {
                    return Some(failure(
                        "numeric",
                        "number and numeric must agree (number is the deprecated name of numeric)",
                    ));
                }
            }
        }
        (false, false) => {}
    }
    None
}

struct Params {
    length: i64,
    lower: bool,
    upper: bool,
    numeric: bool,
    special: bool,
    mins: [i64; 4],
    special_chars: String,
}

impl Params {
    fn of(m: &PropertyMap) -> Params {
        Params {
            length: get_int(m, "length").unwrap_or(0),
            lower: get_bool(m, "lower").unwrap_or(true),
            upper: get_bool(m, "upper").unwrap_or(true),
            numeric: get_bool(m, "numeric").unwrap_or(true),
            special: get_bool(m, "special").unwrap_or(true),
            mins: MINIMUMS.map(|k| get_int(m, k).unwrap_or(0)),
            special_chars: get_str(m, "overrideSpecial")
                .filter(|s| !s.is_empty())
                .unwrap_or(SPECIAL)
                .to_owned(),
        }
    }
}

/// Range checks on the known values.
pub(super) fn validate(m: &PropertyMap) -> Vec<CheckFailure> {
    let mut failures = Vec::new();
    let p = Params::of(m);
    for (k, n) in MINIMUMS.iter().zip(p.mins) {
        if n < 0 {
            failures.push(failure(k, format!("{k} must be at least 0")));
        }
    }
    if let Some(length) = get_int(m, "length") {
        let sum: i64 = p.mins.iter().filter(|n| **n > 0).sum();
        if length < 1 {
            failures.push(failure("length", "length must be at least 1"));
        } else if length < sum {
            failures.push(failure(
                "length",
                format!("length ({length}) must be at least the sum of the minimums ({sum})"),
            ));
        }
    }
    let flags = ["lower", "upper", "numeric", "special"].map(|k| get_bool(m, k));
    if flags.iter().all(|f| *f == Some(false)) {
        failures.push(failure(
            "special",
            "at least one of lower, upper, numeric and special must be true",
        ));
    }
    failures
}

fn draw(set: &[char], n: i64, out: &mut Vec<char>) -> Result<(), ProviderError> {
    if n <= 0 {
        return Ok(());
    }
    if set.is_empty() {
        return Err(ProviderError::failed(
            "no characters to draw from: switch on at least one of lower, upper, numeric, special",
        ));
    }
    out.extend((0..n).filter_map(|_| set.choose(&mut OsRng).copied()));
    Ok(())
}

fn random_string(p: &Params) -> Result<String, ProviderError> {
    let chars = |s: &str| s.chars().collect::<Vec<char>>();
    let [min_lower, min_numeric, min_special, min_upper] = p.mins;
    let mut out = Vec::with_capacity(usize::try_from(p.length).unwrap_or(0));
    draw(&chars(LOWER), min_lower, &mut out)?;
    draw(&chars(NUMERIC), min_numeric, &mut out)?;
    draw(&chars(&p.special_chars), min_special, &mut out)?;
    draw(&chars(UPPER), min_upper, &mut out)?;
    let mut pool = Vec::new();
    for (on, set) in [
        (p.upper, UPPER),
        (p.lower, LOWER),
        (p.numeric, NUMERIC),
        (p.special, p.special_chars.as_str()),
    ] {
        if on {
            pool.extend(set.chars());
        }
    }
    draw(&pool, p.length - out.len() as i64, &mut out)?;
    out.shuffle(&mut OsRng);
    Ok(out.into_iter().collect())
}

pub(super) fn bcrypt_hash(password: &str) -> Result<String, ProviderError> {
    bcrypt::hash(password, BCRYPT_COST)
        .map_err(|e| ProviderError::failed(format!("bcrypt hash of the password: {e}")))
}

/// `(id, generated outputs)`.
pub(super) fn generate(
    password: bool,
    inputs: &PropertyMap,
) -> Result<(String, PropertyMap), ProviderError> {
    let result = random_string(&Params::of(inputs))?;
    let mut out = PropertyMap::new();
    let id = if password {
        out.insert("bcryptHash".into(), bcrypt_hash(&result)?.into());
        "none".to_owned()
    } else {
        result.clone()
    };
    out.insert("result".into(), result.into());
    Ok((id, out))
}

/// Import by value: the value is the result; every class is on, no
/// minimums, the length is the value's.
pub(super) fn import(
    password: bool,
    value: &str,
) -> Result<(String, PropertyMap, PropertyMap), ProviderError> {
    if value.is_empty() {
        return Err(ProviderError::failed(
            "the import ID must be the value (a non-empty string)",
        ));
    }
    let mut inputs = PropertyMap::new();
    inputs.insert("length".into(), int(value.chars().count() as i64));
    for k in ["lower", "upper", "number", "numeric", "special"] {
        inputs.insert(k.into(), true.into());
    }
    for k in MINIMUMS {
        inputs.insert(k.into(), int(0));
    }
    let mut out = PropertyMap::new();
    out.insert("result".into(), value.into());
    let id = if password {
        out.insert("bcryptHash".into(), bcrypt_hash(value)?.into());
        "none".to_owned()
    } else {
        value.to_owned()
    };
    Ok((id, inputs, out))
}
