//! URN patterns, as `--target`, `--exclude` and `--replace` accept them:
//! a URN, or a glob over URNs where `*` stands for any run of characters
//! that does not contain `::` (so it stays inside one of the URN's
//! `::`-separated parts) and `**` for any run at all.

use std::fmt;
use std::str::FromStr;

use crate::urn::{Urn, UrnError};

/// A URN, or a glob that selects URNs.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct UrnPattern {
    text: String,
    tokens: Vec<Token>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Token {
    Literal(String),
    /// `*`: any run without `::`.
    Star,
    /// `**`: any run.
    DoubleStar,
}

impl UrnPattern {
    /// A pattern: text without `*` must be a valid URN (and then matches
    /// only that URN); text with `*` is a glob.
    pub fn parse(s: &str) -> Result<Self, UrnError> {
        if !s.contains('*') {
            return Ok(Urn::parse(s)?.into());
        }
        let mut tokens = Vec::new();
        let mut rest = s;
        while !rest.is_empty() {
            if let Some(after) = rest.strip_prefix("**") {
                tokens.push(Token::DoubleStar);
                rest = after;
            } else if let Some(after) = rest.strip_prefix('*') {
                tokens.push(Token::Star);
                rest = after;
            } else {
                let end = rest.find('*').unwrap_or(rest.len());
                tokens.push(Token::Literal(rest[..end].to_owned()));
                rest = &rest[end..];
            }
        }
        Ok(UrnPattern {
            text: s.to_owned(),
            tokens,
        })
    }

    /// True if the pattern has a wildcard (else it names one URN).
    pub fn is_glob(&self) -> bool {
        self.tokens.iter().any(|t| !matches!(t, Token::Literal(_)))
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// True if `urn` is selected by this pattern.
    pub fn matches(&self, urn: &Urn) -> bool {
        self.matches_str(urn.as_str())
    }

    fn matches_str(&self, s: &str) -> bool {
        // reachable[i]: the tokens consumed so far can end at byte i of `s`.
        let n = s.len();
        let mut reachable = vec![false; n + 1];
        reachable[0] = true;
        for token in &self.tokens {
            let mut next = vec![false; n + 1];
            for start in (0..=n).filter(|&i| reachable[i]) {
                match token {
                    Token::Literal(lit) => {
                        if s[start..].starts_with(lit.as_str()) {
                            next[start + lit.len()] = true;
                        }
                    }
                    Token::DoubleStar => {
                        next[start..].iter_mut().for_each(|r| *r = true);
                        break;
                    }
                    Token::Star => {
                        // Any run that stops short of the next `::`'s
                        // second colon.
                        let limit = s[start..].find("::").map_or(n, |p| start + p + 1);
                        for end in (start..=limit).filter(|&e| s.is_char_boundary(e)) {
                            next[end] = true;
                        }
                    }
                }
            }
            reachable = next;
        }
        reachable[n]
    }
}

impl From<Urn> for UrnPattern {
    fn from(urn: Urn) -> Self {
        let text = urn.as_str().to_owned();
        UrnPattern {
            tokens: vec![Token::Literal(text.clone())],
            text,
        }
    }
}

impl fmt::Display for UrnPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl FromStr for UrnPattern {
    type Err = UrnError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        UrnPattern::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PET: &str = "urn:pulumi:dev::proj::random:index/randomPet:RandomPet::name";

    fn m(pattern: &str, urn: &str) -> bool {
        UrnPattern::parse(pattern)
            .unwrap()
            .matches(&Urn::parse(urn).unwrap())
    }

    #[test]
    fn a_urn_matches_only_itself() {
        assert!(m(PET, PET));
        assert!(!m(PET, &format!("{PET}2")));
        assert!(!UrnPattern::parse(PET).unwrap().is_glob());
        assert!(UrnPattern::parse("not-a-urn").is_err());
    }

    #[test]
    fn a_star_stays_inside_one_part() {
        assert!(m(
            "urn:pulumi:dev::proj::random:index/randomPet:RandomPet::*",
            PET
        ));
        assert!(m("urn:pulumi:dev::proj::*::name", PET));
        assert!(m("urn:pulumi:*::*::*::*", PET));
        assert!(!m("urn:pulumi:dev::*::name", PET));
        assert!(!m("*name", PET));
        assert!(m("urn:pulumi:dev::proj::random:*:RandomPet::n*e", PET));
        assert!(!m("urn:pulumi:dev::proj::random:*:RandomPet::x*", PET));
    }

    #[test]
    fn a_double_star_crosses_parts() {
        assert!(m("**name**", PET));
        assert!(m("**name", PET));
        assert!(m("**", PET));
        assert!(m("urn:pulumi:dev::**::name", PET));
        assert!(!m("**other**", PET));
        assert!(!m(
            "**::RandomPet**",
            "urn:pulumi:dev::proj::a:b:C$random:index:RandomPet::x"
        ));
        assert!(m(
            "**$random**",
            "urn:pulumi:dev::proj::a:b:C$random:index:RandomPet::x"
        ));
    }
}
