//! Version constraints as OpenTofu writes them: comma-separated
//! `OP VERSION` terms, OP one of `=` (or none), `!=`, `>`, `>=`, `<`, `<=`
//! and `~>` (the rightmost given part may grow: `~> 2.1` is `>= 2.1,
//! < 3.0`, `~> 2.1.0` is `>= 2.1.0, < 2.2.0`). A pre-release matches only
//! a term that names it exactly.

use semver::Version;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Op {
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
    Pessimistic(usize),
}

/// A parsed constraint; empty matches every release.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Constraint {
    text: String,
    terms: Vec<(Op, Version)>,
}

impl std::fmt::Display for Constraint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl Constraint {
    pub fn parse(text: &str) -> Result<Constraint, String> {
        let mut terms = Vec::new();
        for term in text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let (op, rest) = ["~>", ">=", "<=", "!=", ">", "<", "="]
                .iter()
                .find_map(|op| term.strip_prefix(op).map(|r| (*op, r.trim())))
                .unwrap_or(("=", term));
            let given = rest
                .split(['-', '+'])
                .next()
                .unwrap_or("")
                .split('.')
                .count();
            let mut full = rest.to_owned();
            for _ in given..3 {
                // "2.1" is 2.1.0, before any pre-release or build part.
                let at = full.find(['-', '+']).unwrap_or(full.len());
                full.insert_str(at, ".0");
            }
            let version = Version::parse(full.trim_start_matches('v'))
                .map_err(|e| format!("version constraint {text:?}: {term:?}: {e}"))?;
            let op = match op {
                "=" => Op::Eq,
                "!=" => Op::Ne,
                ">" => Op::Gt,
                ">=" => Op::Ge,
                "<" => Op::Lt,
                "<=" => Op::Le,
                _ => Op::Pessimistic(given.min(3)),
            };
            terms.push((op, version));
        }
        Ok(Constraint {
            text: text.trim().to_owned(),
            terms,
        })
    }

    /// Exactly `version`.
    pub fn exactly(version: &Version) -> Constraint {
        Constraint {
            text: format!("= {version}"),
            terms: vec![(Op::Eq, version.clone())],
        }
    }

    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    pub fn matches(&self, v: &Version) -> bool {
        if !v.pre.is_empty() && !self.terms.iter().any(|(op, t)| *op == Op::Eq && t == v) {
            return false;
        }
        self.terms.iter().all(|(op, t)| match op {
            Op::Eq => v == t,
            Op::Ne => v != t,
            Op::Gt => v > t,
            Op::Ge => v >= t,
            Op::Lt => v < t,
            Op::Le => v <= t,
            Op::Pessimistic(given) => {
                let upper = match given {
                    0 | 1 => return v >= t,
                    2 => Version::new(t.major + 1, 0, 0),
                    _ => Version::new(t.major, t.minor + 1, 0),
                };
                v >= t && *v < upper
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap()
    }

    #[test]
    fn opentofu_constraints() {
        let c = Constraint::parse("~> 2.1").unwrap();
        assert!(c.matches(&v("2.1.0")) && c.matches(&v("2.9.3")));
        assert!(!c.matches(&v("3.0.0")) && !c.matches(&v("2.0.9")));
        let c = Constraint::parse("~> 2.1.0").unwrap();
        assert!(c.matches(&v("2.1.7")) && !c.matches(&v("2.2.0")));
        let c = Constraint::parse(">= 1.0, < 2.0, != 1.5.0").unwrap();
        assert!(c.matches(&v("1.4.0")) && !c.matches(&v("1.5.0")) && !c.matches(&v("2.0.0")));
        assert!(Constraint::parse("2.0.0").unwrap().matches(&v("2.0.0")));
        assert!(Constraint::parse("").unwrap().matches(&v("9.9.9")));
        assert!(!Constraint::parse("").unwrap().matches(&v("1.0.0-beta")));
        assert!(Constraint::parse("= 1.0.0-beta")
            .unwrap()
            .matches(&v("1.0.0-beta")));
        assert!(Constraint::parse(">= banana").is_err());
    }
}
