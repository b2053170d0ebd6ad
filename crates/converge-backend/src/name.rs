//! Stack references and the name rules that keep every backend path inside
//! its root.
//!
//! Names follow Pulumi's rules (`tokens.ParseStackName`,
//! `tokens.ValidateProjectName`): 1 to 100 characters from
//! `[A-Za-z0-9_.-]`, and never `.` or `..`. Because `/`, NUL, control
//! characters and whitespace can never pass, a validated name is always a
//! single, safe path component.

use std::fmt;

use crate::error::{BackendError, NameKind, Result};

/// The only organization a DIY (file) backend has, as in Pulumi.
pub const DIY_ORGANIZATION: &str = "organization";

/// The longest allowed stack, project or organization name, in characters.
pub const MAX_NAME_LEN: usize = 100;

/// Checks a stack name: `[A-Za-z0-9_.-]{1,100}`, not `.` or `..`.
pub fn validate_stack_name(name: &str) -> Result<()> {
    validate_name(NameKind::Stack, name)
}

/// Checks a project name: `[A-Za-z0-9_.-]{1,100}`, not `.` or `..`.
pub fn validate_project_name(name: &str) -> Result<()> {
    validate_name(NameKind::Project, name)
}

/// Checks an organization name with the same rules as stack names.
pub fn validate_organization_name(name: &str) -> Result<()> {
    validate_name(NameKind::Organization, name)
}

fn validate_name(kind: NameKind, name: &str) -> Result<()> {
    let invalid = |reason: String| BackendError::InvalidName {
        kind,
        name: name.to_owned(),
        reason,
    };
    if name.is_empty() {
        return Err(invalid("the name is empty".to_owned()));
    }
    if name == "." || name == ".." {
        return Err(invalid(format!("{name:?} is reserved")));
    }
    if let Some((position, c)) = name.chars().enumerate().find(|(_, c)| !allowed(*c)) {
        return Err(invalid(format!(
            "it contains {} at position {position}; names may contain only \
             A-Z, a-z, 0-9, '_', '.' and '-'",
            describe_char(c)
        )));
    }
    let len = name.chars().count();
    if len > MAX_NAME_LEN {
        return Err(invalid(format!(
            "it is {len} characters long; the limit is {MAX_NAME_LEN}"
        )));
    }
    Ok(())
}

fn allowed(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')
}

fn describe_char(c: char) -> String {
    match c {
        '/' => "'/' (a path separator)".to_owned(),
        '\\' => "'\\' (a path separator)".to_owned(),
        '\0' => "a NUL character".to_owned(),
        c if c.is_control() => format!("the control character U+{:04X}", c as u32),
        ' ' => "a space".to_owned(),
        c if c.is_whitespace() => format!("the whitespace character U+{:04X}", c as u32),
        c => format!("{c:?} (U+{:04X})", c as u32),
    }
}

/// A fully qualified stack: `organization/project/stack`.
///
/// Fields are public so that callers (and the conformance suite) can build
/// any reference; every backend entry point validates the reference before
/// it touches storage.
///
/// A stack listed from a legacy (pre-project) file layout has an empty
/// `project`; such references are accepted only by backends in that layout.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StackRef {
    pub organization: String,
    pub project: String,
    pub stack: String,
}

impl StackRef {
    /// `organization/<project>/<stack>` in the DIY organization, validated.
    pub fn new(project: impl Into<String>, stack: impl Into<String>) -> Result<StackRef> {
        StackRef::with_organization(DIY_ORGANIZATION, project, stack)
    }

    /// A reference in any organization, validated.
    pub fn with_organization(
        organization: impl Into<String>,
        project: impl Into<String>,
        stack: impl Into<String>,
    ) -> Result<StackRef> {
        let r = StackRef {
            organization: organization.into(),
            project: project.into(),
            stack: stack.into(),
        };
        r.validate()?;
        Ok(r)
    }

    /// Parses what a user types after `--stack`:
    ///
    /// - `stack` — in `default_project`, DIY organization;
    /// - `organization/stack` — Pulumi's two-part DIY form (the first part
    ///   is exactly [`DIY_ORGANIZATION`]), in `default_project`;
    /// - `project/stack` — any other two-part form;
    /// - `org/project/stack`.
    pub fn parse(input: &str, default_project: &str) -> Result<StackRef> {
        let bad = |reason: &str| BackendError::InvalidStackRef {
            input: input.to_owned(),
            reason: reason.to_owned(),
        };
        let parts: Vec<&str> = input.split('/').collect();
        let (org, project, stack) = match parts.as_slice() {
            [stack] => (DIY_ORGANIZATION, None, *stack),
            [org, stack] if *org == DIY_ORGANIZATION => (DIY_ORGANIZATION, None, *stack),
            [project, stack] => (DIY_ORGANIZATION, Some(*project), *stack),
            [org, project, stack] => (*org, Some(*project), *stack),
            _ => {
                return Err(bad(
                    "expected stack, project/stack or organization/project/stack",
                ))
            }
        };
        let project = match project {
            Some(p) => p,
            None if default_project.is_empty() => {
                return Err(bad(
                    "no project is known here; pass organization/project/stack",
                ))
            }
            None => default_project,
        };
        StackRef::with_organization(org, project, stack)
    }

    /// Validates all three names.
    pub fn validate(&self) -> Result<()> {
        validate_organization_name(&self.organization)?;
        validate_project_name(&self.project)?;
        validate_stack_name(&self.stack)
    }

    /// `organization/project/stack`, or just `stack` for a legacy reference
    /// with no project.
    pub fn fully_qualified_name(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for StackRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.project.is_empty() {
            f.write_str(&self.stack)
        } else {
            write!(f, "{}/{}/{}", self.organization, self.project, self.stack)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(r: Result<()>) -> String {
        r.unwrap_err().to_string()
    }

    #[test]
    fn accepts_pulumi_names() {
        for ok in ["dev", "a", "my-stack_1.prod", "A.B-C_D", &"x".repeat(100)] {
            validate_stack_name(ok).unwrap();
            validate_project_name(ok).unwrap();
        }
    }

    #[test]
    fn rejects_with_a_one_line_reason_naming_the_character() {
        let cases: &[(&str, &str)] = &[
            ("", "empty"),
            (".", "reserved"),
            ("..", "reserved"),
            ("a/b", "'/' (a path separator) at position 1"),
            ("a\\b", "path separator"),
            ("a\0b", "NUL"),
            ("a\nb", "U+000A"),
            ("a\x07", "U+0007"),
            ("a b", "a space"),
            ("a\u{a0}b", "U+00A0"),
            ("é", "U+00E9"),
        ];
        for (name, want) in cases {
            let msg = reason(validate_stack_name(name));
            assert!(msg.contains(want), "{name:?}: {msg}");
            assert!(!msg.contains('\n'), "multi-line message: {msg}");
            assert!(msg.starts_with("invalid stack name"), "{msg}");
        }
        let long = "x".repeat(101);
        assert!(reason(validate_project_name(&long)).contains("101 characters"));
        assert!(reason(validate_project_name("p/q")).starts_with("invalid project name"));
    }

    #[test]
    fn parses_the_three_forms() {
        let r = StackRef::parse("dev", "proj").unwrap();
        assert_eq!(r, StackRef::new("proj", "dev").unwrap());
        assert_eq!(r.to_string(), "organization/proj/dev");

        let r = StackRef::parse("other/dev", "proj").unwrap();
        assert_eq!((r.project.as_str(), r.stack.as_str()), ("other", "dev"));

        let r = StackRef::parse("organization/dev", "proj").unwrap();
        assert_eq!((r.project.as_str(), r.stack.as_str()), ("proj", "dev"));

        let r = StackRef::parse("acme/web/prod", "proj").unwrap();
        assert_eq!(r.organization, "acme");
        assert_eq!(r.fully_qualified_name(), "acme/web/prod");
    }

    #[test]
    fn parse_rejects_bad_references() {
        for bad in [
            "", "a/b/c/d", "/dev", "dev/", "a//b", "../dev", "p/..", "a b",
        ] {
            assert!(StackRef::parse(bad, "proj").is_err(), "{bad:?} parsed");
        }
        let err = StackRef::parse("dev", "").unwrap_err().to_string();
        assert!(err.contains("organization/project/stack"), "{err}");
    }
}
