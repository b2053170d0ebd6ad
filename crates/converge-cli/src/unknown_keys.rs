//! Top-level keys of the files a user writes (`Pulumi.yaml`,
//! `Pulumi.<stack>.yaml`) that Converge does not know: a misspelled key
//! would otherwise be ignored without a word. Each is warned about once
//! per file and process, with the closest known key, and kept in the file.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The keys already warned about in this process, by file: a command may
/// load one file several times.
static WARNED: Mutex<BTreeSet<(PathBuf, String)>> = Mutex::new(BTreeSet::new());

/// The known key closest to `key`, if one is close enough to be a typo of
/// it: at most a third of the longer name's characters edited (a swap of
/// neighbours counts as one edit), case ignored.
pub fn closest<'a>(key: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let lower = key.to_lowercase();
    let mut best: Option<(usize, &str)> = None;
    for k in known {
        let d = strsim::osa_distance(&lower, &k.to_lowercase());
        let limit = (key.chars().count().max(k.chars().count()) / 3).max(1);
        if d <= limit && best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, k));
        }
    }
    best.map(|(_, k)| k)
}

/// The keys of `object` (a JSON object of a hand-edited file) that look
/// like misspellings of `known` ones, each with the key meant. Keys unlike
/// any known one are not among them: a newer tool's, kept as they are.
pub fn misspelled<'k>(
    object: &serde_json::Map<String, serde_json::Value>,
    known: &[&'k str],
) -> Vec<(String, &'k str)> {
    object
        .keys()
        .filter(|k| !known.contains(&k.as_str()))
        .filter_map(|k| closest(k, known.iter().copied()).map(|meant| (k.clone(), meant)))
        .collect()
}

/// The warning for one unknown key of `file`.
pub fn warning(file: &Path, key: &str, known: &[&str]) -> String {
    let hint = match closest(key, known.iter().copied()) {
        Some(k) => format!("; did you mean `{k}`?"),
        None => format!(" (the known keys are {})", known.join(", ")),
    };
    format!(
        "warning: {}: unknown key `{key}` is ignored{hint}",
        file.display()
    )
}

/// Warns on stderr about each of `unknown`, once per file and key.
pub fn warn(file: &Path, unknown: &[String], known: &[&str]) {
    let mut warned = WARNED.lock().unwrap_or_else(|p| p.into_inner());
    for key in unknown {
        if warned.insert((file.to_path_buf(), key.clone())) {
            eprintln!("{}", warning(file, key, known));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typos_find_their_key_and_strangers_list_the_keys() {
        let known = ["secretsprovider", "encryptionsalt", "config"];
        assert_eq!(closest("confg", known), Some("config"));
        assert_eq!(closest("encryptionsalf", known), Some("encryptionsalt"));
        assert_eq!(closest("Config", known), Some("config"));
        assert_eq!(closest("future", known), None);
        let file = Path::new("Pulumi.dev.yaml");
        assert_eq!(
            warning(file, "confg", &known),
            "warning: Pulumi.dev.yaml: unknown key `confg` is ignored; did you mean `config`?"
        );
        assert_eq!(
            warning(file, "future", &known),
            "warning: Pulumi.dev.yaml: unknown key `future` is ignored (the known keys are \
             secretsprovider, encryptionsalt, config)"
        );
    }
}
