//! Names as Pulumi's Terraform bridge spells them: a Terraform type
//! `random_pet` of provider `random` is the token `random:index/pet:Pet`
//! (the provider's prefix dropped, one module `index`, the rest in
//! PascalCase for the type and camelCase for the module path), a data
//! source `random_pet` is the function `random:index/getPet:getPet`, and
//! an attribute `result_count` is the property `resultCount`.
//!
//! Attribute names are mapped only when the mapping can be undone: a name
//! of lower-case words joined by single underscores (`a_b2_c`) becomes
//! camelCase; any other name (`a__b`, `x_1`, `Name`) is kept as written.
//! [`tf_name_guess`] undoes the mapping without a schema, for state whose
//! schema version is gone (the raw state given to `UpgradeResourceState`).

/// True if `tf` is lower-case words (each starting with a letter) joined
/// by single underscores: the names whose camelCase form is reversible.
fn is_snake(tf: &str) -> bool {
    !tf.is_empty()
        && tf.split('_').all(|word| {
            let mut chars = word.chars();
            chars.next().is_some_and(|c| c.is_ascii_lowercase())
                && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        })
}

/// The Pulumi property name of the Terraform attribute `tf`.
pub fn pulumi_name(tf: &str) -> String {
    if !is_snake(tf) || !tf.contains('_') {
        return tf.to_owned();
    }
    let mut out = String::with_capacity(tf.len());
    for (i, word) in tf.split('_').enumerate() {
        if i == 0 {
            out.push_str(word);
        } else {
            let mut chars = word.chars();
            if let Some(first) = chars.next() {
                out.push(first.to_ascii_uppercase());
                out.extend(chars);
            }
        }
    }
    out
}

/// The Terraform attribute a Pulumi property name most likely came from,
/// without a schema: a name with an underscore was kept as written;
/// otherwise every upper-case letter starts a new snake_case word.
pub fn tf_name_guess(pulumi: &str) -> String {
    if pulumi.contains('_') || !pulumi.starts_with(|c: char| c.is_ascii_lowercase()) {
        return pulumi.to_owned();
    }
    let mut out = String::with_capacity(pulumi.len() + 4);
    for c in pulumi.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    if pulumi_name(&out) == pulumi {
        out
    } else {
        pulumi.to_owned()
    }
}

/// `some_thing` → `SomeThing`.
fn pascal(words: &str) -> String {
    words
        .split('_')
        .filter(|w| !w.is_empty())
        .map(|w| {
            let mut chars = w.chars();
            match chars.next() {
                Some(first) => first.to_ascii_uppercase().to_string() + chars.as_str(),
                None => String::new(),
            }
        })
        .collect()
}

/// `some_thing` → `someThing`.
fn camel(words: &str) -> String {
    let p = pascal(words);
    let mut chars = p.chars();
    match chars.next() {
        Some(first) => first.to_ascii_lowercase().to_string() + chars.as_str(),
        None => String::new(),
    }
}

/// The part of a Terraform type name after the provider's prefix
/// (`random_pet` → `pet`; a type named like the provider → itself).
fn member(package: &str, tf_type: &str) -> String {
    match tf_type
        .strip_prefix(package)
        .and_then(|r| r.strip_prefix('_'))
    {
        Some(rest) if !rest.is_empty() => rest.to_owned(),
        _ => tf_type.to_owned(),
    }
}

/// The Pulumi token of resource type `tf_type`: `random:index/pet:Pet`.
pub fn resource_token(package: &str, tf_type: &str) -> String {
    let m = member(package, tf_type);
    format!("{package}:index/{}:{}", camel(&m), pascal(&m))
}

/// The Pulumi token of data source `tf_type`: `random:index/getPet:getPet`.
pub fn function_token(package: &str, tf_type: &str) -> String {
    let m = member(package, tf_type);
    let name = format!("get{}", pascal(&m));
    format!("{package}:index/{name}:{name}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_follow_the_bridge() {
        assert_eq!(
            resource_token("random", "random_pet"),
            "random:index/pet:Pet"
        );
        assert_eq!(
            resource_token("aws", "aws_s3_bucket"),
            "aws:index/s3Bucket:S3Bucket"
        );
        assert_eq!(
            function_token("store", "store_item"),
            "store:index/getItem:getItem"
        );
        assert_eq!(resource_token("null", "null"), "null:index/null:Null");
    }

    #[test]
    fn attribute_names_round_trip_or_stay() {
        for (tf, p) in [
            ("result_count", "resultCount"),
            ("id", "id"),
            ("a_b2_c", "aB2C"),
            ("x_1", "x_1"),
            ("a__b", "a__b"),
            ("Name", "Name"),
            ("secret_value", "secretValue"),
        ] {
            assert_eq!(pulumi_name(tf), p, "{tf}");
            assert_eq!(tf_name_guess(p), tf, "{p}");
        }
    }
}
