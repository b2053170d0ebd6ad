//! URNs: `urn:pulumi:<stack>::<project>::<qualified type>::<name>` (seed 001).
//!
//! The grammar's identifiers are read in the wider form that real providers
//! use (package names with `-`, module names with `/`), so that every URN in
//! existing state parses; what is refused is what no tool could have written:
//! a missing prefix, too few parts, empty parts, an empty type in a parent
//! chain, and control characters.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

const PREFIX: &str = "urn:pulumi:";
const SEP: &str = "::";

/// The type of the stack resource, the root every program registers first
/// (named `<project>-<stack>`). Its type is not part of its children's
/// qualified types.
pub const STACK_TYPE: &str = "pulumi:pulumi:Stack";

/// The type prefix of provider resources: `pulumi:providers:<package>`.
pub const PROVIDER_TYPE_PREFIX: &str = "pulumi:providers:";

/// The type of the provider resources of `package`.
pub fn provider_type(package: &str) -> String {
    format!("{PROVIDER_TYPE_PREFIX}{package}")
}

/// The package a provider type configures; `None` if `type_token` is not a
/// provider type.
pub fn provider_package(type_token: &str) -> Option<&str> {
    type_token.strip_prefix(PROVIDER_TYPE_PREFIX)
}

/// Whether a resource of `type_token` named `name` is a default provider
/// (`pulumi:providers:<pkg>` named `default…`): one the engine registers,
/// not the program.
pub fn is_default_provider(type_token: &str, name: &str) -> bool {
    provider_package(type_token).is_some() && name.starts_with("default")
}

/// The package of a resource type or function token: its first segment
/// (`aws` of `aws:s3/bucket:Bucket`).
pub fn package_of(token: &str) -> &str {
    token.split(':').next().unwrap_or_default()
}

/// A validated URN.
/// Shared text: a URN is held by the base, the new state, the ledger, the
/// events and the dependencies of others, and a copy is a reference count.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Urn(Arc<str>);

/// Why a string is not a URN.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrnError {
    #[error("invalid URN {urn:?}: it must start with \"urn:pulumi:\"")]
    MissingPrefix { urn: String },
    #[error(
        "invalid URN {urn:?}: expected urn:pulumi:<stack>::<project>::<type>::<name>, found {parts} part(s)"
    )]
    TooFewParts { urn: String, parts: usize },
    #[error("invalid URN {urn:?}: the {part} is empty")]
    EmptyPart { urn: String, part: &'static str },
    #[error("invalid URN {urn:?}: the type {ty:?} is not of the form <package>:[<module>:]<name>")]
    BadType { urn: String, ty: String },
    #[error("invalid URN {urn:?}: it contains a control character")]
    ControlCharacter { urn: String },
}

impl Urn {
    /// Parses and validates a URN.
    pub fn parse(s: &str) -> Result<Self, UrnError> {
        let urn = || s.to_owned();
        if s.chars().any(char::is_control) {
            return Err(UrnError::ControlCharacter { urn: urn() });
        }
        let rest = s
            .strip_prefix(PREFIX)
            .ok_or_else(|| UrnError::MissingPrefix { urn: urn() })?;
        let (parts, found) = split_parts(rest);
        if found < 4 {
            return Err(UrnError::TooFewParts {
                urn: urn(),
                parts: found,
            });
        }
        for (part, name) in parts.iter().zip(["stack", "project", "type", "name"]) {
            if part.is_empty() {
                return Err(UrnError::EmptyPart {
                    urn: urn(),
                    part: name,
                });
            }
        }
        for ty in parts[2].split('$') {
            if !is_type_token(ty) {
                return Err(UrnError::BadType {
                    urn: urn(),
                    ty: ty.to_owned(),
                });
            }
        }
        Ok(Urn(Arc::from(s)))
    }

    /// Builds the URN of a resource. `parent_type` is the parent's qualified
    /// type, or `None` for a resource whose parent is the stack (or none).
    pub fn new(
        stack: &str,
        project: &str,
        parent_type: Option<&str>,
        ty: &str,
        name: &str,
    ) -> Result<Self, UrnError> {
        // One string, built in place and then checked as any URN is.
        let parent = parent_type.filter(|p| !p.is_empty());
        let mut text = String::with_capacity(
            PREFIX.len()
                + stack.len()
                + project.len()
                + parent.map_or(0, |p| p.len() + 1)
                + ty.len()
                + name.len()
                + 3 * SEP.len(),
        );
        for piece in [PREFIX, stack, SEP, project, SEP] {
            text.push_str(piece);
        }
        if let Some(p) = parent {
            text.push_str(p);
            text.push('$');
        }
        for piece in [ty, SEP, name] {
            text.push_str(piece);
        }
        Self::parse(&text)
    }

    /// The URN of a resource named `name` of type `ty` whose parent is
    /// `parent`: the parent's qualified type joined to `ty` by `$`, unless
    /// the parent is the stack (or there is none), in which case the
    /// qualified type is `ty` alone. This is the one place the rule lives.
    pub fn for_resource(
        stack: &str,
        project: &str,
        parent: Option<&Urn>,
        ty: &str,
        name: &str,
    ) -> Result<Self, UrnError> {
        let parent_type = parent.filter(|p| !p.is_stack()).map(Urn::qualified_type);
        Self::new(stack, project, parent_type, ty, name)
    }

    /// True for the stack resource's URN.
    pub fn is_stack(&self) -> bool {
        self.type_token() == STACK_TYPE
    }

    /// True for a default provider's URN (see [`is_default_provider`]).
    pub fn is_default_provider(&self) -> bool {
        is_default_provider(self.type_token(), self.name())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    fn parts(&self) -> [&str; 4] {
        // Validated on construction: there are four.
        split_parts(&self.0[PREFIX.len()..]).0
    }

    pub fn stack(&self) -> &str {
        self.parts()[0]
    }

    pub fn project(&self) -> &str {
        self.parts()[1]
    }

    /// The qualified type: parent types and the type, joined by `$`.
    pub fn qualified_type(&self) -> &str {
        self.parts()[2]
    }

    /// The resource's own type (the last element of the qualified type).
    pub fn type_token(&self) -> &str {
        let q = self.qualified_type();
        q.rsplit('$').next().unwrap_or(q)
    }

    /// The parent's qualified type, if this resource has a parent type.
    pub fn parent_type(&self) -> Option<&str> {
        self.qualified_type().rsplit_once('$').map(|(p, _)| p)
    }

    pub fn name(&self) -> &str {
        self.parts()[3]
    }

    /// A copy of this URN in another stack (stack rename).
    pub fn with_stack(&self, stack: &str) -> Result<Self, UrnError> {
        let [_, project, ty, name] = self.parts();
        Self::parse(&format!(
            "{PREFIX}{stack}{SEP}{project}{SEP}{ty}{SEP}{name}"
        ))
    }
}

/// What follows the prefix, split at the first three `::` (as
/// `splitn(4, "::")` would), and how many parts there are. Every
/// registration builds a URN and reads its parts; a scan for the two
/// bytes does not set up a substring search each time.
fn split_parts(rest: &str) -> ([&str; 4], usize) {
    let bytes = rest.as_bytes();
    let mut parts = [""; 4];
    let (mut found, mut start, mut i) = (0, 0, 0);
    while found < 3 && i + 1 < bytes.len() {
        if bytes[i] == b':' && bytes[i + 1] == b':' {
            parts[found] = &rest[start..i];
            found += 1;
            i += 2;
            start = i;
        } else {
            i += 1;
        }
    }
    parts[found] = &rest[start..];
    (parts, found + 1)
}

/// `<package>:[<module>:]<name>`, each part non-empty and free of spaces.
/// At least `<package>:<name>`, each segment non-empty and without
/// spaces. More than three segments are allowed, as Pulumi allows them (a
/// token's name is then everything after its module: a Node.js dynamic
/// resource with the module `custom:LocalFile` is
/// `pulumi-nodejs:custom:LocalFile:Resource`).
fn is_type_token(ty: &str) -> bool {
    let mut segments = 0;
    for seg in ty.split(':') {
        segments += 1;
        if seg.is_empty() || seg.chars().any(char::is_whitespace) {
            return false;
        }
    }
    segments >= 2
}

impl fmt::Display for Urn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for Urn {
    type Err = UrnError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Urn::parse(s)
    }
}

impl AsRef<str> for Urn {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The parts are `splitn(4, "::")`'s, however the colons fall.
        #[test]
        fn parts_split_as_splitn_does(rest in "[a:]{0,12}") {
            let (parts, found) = split_parts(&rest);
            let want: Vec<&str> = rest.splitn(4, SEP).collect();
            proptest::prop_assert_eq!(&parts[..found], &want[..]);
        }

        /// A URN built from its parts is the one its text parses to, and
        /// is refused exactly when that text is.
        #[test]
        fn a_built_urn_is_its_parsed_text(
            stack in "[a-z:]{0,4}",
            project in "[a-z]{0,3}",
            parent in proptest::option::of("[a-z: $]{0,6}"),
            ty in "[a-z: ]{0,7}",
            name in "[a-z:\n]{0,4}",
        ) {
            let built = Urn::new(&stack, &project, parent.as_deref(), &ty, &name);
            let qualified = match parent.as_deref() {
                Some(p) if !p.is_empty() => format!("{p}${ty}"),
                _ => ty.clone(),
            };
            let parsed = Urn::parse(&format!("urn:pulumi:{stack}::{project}::{qualified}::{name}"));
            proptest::prop_assert_eq!(built, parsed);
        }
    }

    #[test]
    fn parses_parts() {
        let u = Urn::parse("urn:pulumi:dev::proj::my:comp:Thing$aws:s3/bucket:Bucket::b1").unwrap();
        assert_eq!(u.stack(), "dev");
        assert_eq!(u.project(), "proj");
        assert_eq!(u.qualified_type(), "my:comp:Thing$aws:s3/bucket:Bucket");
        assert_eq!(u.type_token(), "aws:s3/bucket:Bucket");
        assert_eq!(u.parent_type(), Some("my:comp:Thing"));
        assert_eq!(u.name(), "b1");
    }

    #[test]
    fn builds_from_parts() {
        let u = Urn::new("dev", "p", Some("a:b:C"), "pulumi:providers:aws", "default").unwrap();
        assert_eq!(
            u.as_str(),
            "urn:pulumi:dev::p::a:b:C$pulumi:providers:aws::default"
        );
        let root = Urn::new("dev", "p", None, STACK_TYPE, "p-dev").unwrap();
        assert_eq!(root.parent_type(), None);
    }

    #[test]
    fn a_child_urn_carries_its_parents_type_chain_but_not_the_stacks() {
        let stack = Urn::new("dev", "p", None, STACK_TYPE, "p-dev").unwrap();
        let comp = Urn::for_resource("dev", "p", Some(&stack), "my:index:Comp", "c").unwrap();
        assert_eq!(comp.as_str(), "urn:pulumi:dev::p::my:index:Comp::c");
        let child = Urn::for_resource("dev", "p", Some(&comp), "pkg:index:Thing", "t").unwrap();
        assert_eq!(
            child.as_str(),
            "urn:pulumi:dev::p::my:index:Comp$pkg:index:Thing::t"
        );
        let grandchild =
            Urn::for_resource("dev", "p", Some(&child), "pkg:index:Leaf", "l").unwrap();
        assert_eq!(
            grandchild.parent_type(),
            Some("my:index:Comp$pkg:index:Thing")
        );
        assert_eq!(
            Urn::for_resource("dev", "p", None, "pkg:index:Thing", "t")
                .unwrap()
                .qualified_type(),
            "pkg:index:Thing"
        );
        assert!(stack.is_stack() && !comp.is_stack());
    }

    #[test]
    fn provider_types() {
        assert_eq!(provider_type("aws"), "pulumi:providers:aws");
        assert_eq!(provider_package("pulumi:providers:aws"), Some("aws"));
        assert_eq!(provider_package("aws:s3/bucket:Bucket"), None);
        assert_eq!(package_of("aws:s3/bucket:Bucket"), "aws");
    }

    #[test]
    fn types_may_have_more_than_three_segments() {
        let u = Urn::parse("urn:pulumi:s::p::pulumi-nodejs:custom:LocalFile:Resource::f").unwrap();
        assert_eq!(u.type_token(), "pulumi-nodejs:custom:LocalFile:Resource");
        assert_eq!(package_of(u.type_token()), "pulumi-nodejs");
    }

    #[test]
    fn names_may_hold_separators() {
        let u = Urn::parse("urn:pulumi:s::p::a:b:C::x::y").unwrap();
        assert_eq!(u.name(), "x::y");
    }

    #[test]
    fn malformed_urns_are_refused_with_reason() {
        let cases = [
            ("urn:aws:s::p::a:b:C::n", "must start with"),
            ("urn:pulumi:s::p::a:b:C", "found 3 part(s)"),
            ("urn:pulumi:::p::a:b:C::n", "the stack is empty"),
            ("urn:pulumi:s::p::notatype::n", "is not of the form"),
            ("urn:pulumi:s::p::a:b:C$::n", "is not of the form"),
            ("urn:pulumi:s::p::a:b:C::n\n", "control character"),
            ("urn:pulumi:s::p::a:b:C::", "the name is empty"),
            ("urn:pulumi:", "found 1 part(s)"),
            ("urn:pulumi:s::::a:b:C::n", "the project is empty"),
            ("urn:pulumi:s::p::a::n", "is not of the form"),
            ("urn:pulumi:s::p::a:b C::n", "is not of the form"),
        ];
        for (input, want) in cases {
            let err = Urn::parse(input).unwrap_err().to_string();
            assert!(err.contains(want), "{input:?}: {err}");
        }
    }
}
