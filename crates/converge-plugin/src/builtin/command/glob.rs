//! `assetPaths` / `archivePaths` globs: `*` matches anything but `/`, `**`
//! matches anything, `?` one character but `/`; rules apply in order and a
//! rule starting with `!` excludes. Only files count; paths are relative to
//! the working directory, with `/` separators and no leading `./`.

use std::path::{Path, PathBuf};

/// True if `pattern` matches all of `path`.
pub fn matches(pattern: &str, path: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let s: Vec<char> = path.chars().collect();
    // memo[i][j]: Some(result) for pattern[i..] against path[j..].
    let mut memo = vec![vec![None; s.len() + 1]; p.len() + 1];
    fn go(p: &[char], s: &[char], i: usize, j: usize, memo: &mut Vec<Vec<Option<bool>>>) -> bool {
        if let Some(r) = memo[i][j] {
            return r;
        }
        let r = if i == p.len() {
            j == s.len()
        } else if p[i] == '*' && p.get(i + 1) == Some(&'*') {
            (j..=s.len()).any(|k| go(p, s, i + 2, k, memo))
        } else if p[i] == '*' {
            let end = s[j..]
                .iter()
                .position(|c| *c == '/')
                .map_or(s.len(), |n| j + n);
            (j..=end).any(|k| go(p, s, i + 1, k, memo))
        } else if j < s.len() && (p[i] == s[j] || (p[i] == '?' && s[j] != '/')) {
            go(p, s, i + 1, j + 1, memo)
        } else {
            false
        };
        memo[i][j] = Some(r);
        r
    }
    go(&p, &s, 0, 0, &mut memo)
}

/// True if the rules select `path`: the last rule that matches decides.
pub fn selected(rules: &[String], path: &str) -> bool {
    let mut chosen = false;
    for rule in rules {
        match rule.strip_prefix('!') {
            Some(exclude) if matches(exclude, path) => chosen = false,
            Some(_) => {}
            None if matches(rule, path) => chosen = true,
            None => {}
        }
    }
    chosen
}

/// Every file under `root` (symbolic links to directories are not
/// followed): `(relative path with '/', full path)`, sorted.
pub fn files(root: &Path) -> std::io::Result<Vec<(String, PathBuf)>> {
    let mut out = Vec::new();
    let mut stack = vec![(String::new(), root.to_path_buf())];
    while let Some((rel, dir)) = stack.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let rel = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            let kind = entry.file_type()?;
            if kind.is_dir() {
                stack.push((rel, entry.path()));
            } else if kind.is_file() || (kind.is_symlink() && entry.path().is_file()) {
                out.push((rel, entry.path()));
            }
        }
    }
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(matches("*.txt", "a.txt"));
        assert!(!matches("*.txt", "d/a.txt"));
        assert!(matches("**.txt", "d/a.txt"));
        assert!(matches("assets/**", "assets/logos/logo.svg"));
        assert!(matches("src/**.js", "src/index.js"));
        assert!(matches("**secret.*", "src/secret.js"));
        assert!(matches("a?c", "abc") && !matches("a?c", "a/c"));
        assert!(!matches("a", "ab") && !matches("ab", "a"));
    }

    #[test]
    fn rules_apply_in_order() {
        let rules: Vec<String> = ["assets/**", "src/**.js", "!**secret.*"]
            .map(String::from)
            .to_vec();
        assert!(selected(&rules, "assets/logos/logo.svg"));
        assert!(selected(&rules, "src/index.js"));
        assert!(!selected(&rules, "src/secret.js"));
        assert!(!selected(&rules, "other.txt"));
    }
}
