//! A provider's source address, `HOST/NAMESPACE/TYPE`: `NAMESPACE/TYPE`
//! is on `registry.opentofu.org`, a bare `TYPE` in namespace `hashicorp`.

/// The registry a short address names.
pub const DEFAULT_HOST: &str = "registry.opentofu.org";
const DEFAULT_NAMESPACE: &str = "hashicorp";

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProviderAddress {
    pub host: String,
    pub namespace: String,
    pub type_name: String,
}

impl std::fmt::Display for ProviderAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}/{}", self.host, self.namespace, self.type_name)
    }
}

impl ProviderAddress {
    /// Parses `HOST/NAMESPACE/TYPE`, `NAMESPACE/TYPE` or `TYPE`.
    pub fn parse(text: &str) -> Result<ProviderAddress, String> {
        let parts: Vec<&str> = text.split('/').collect();
        let (host, namespace, type_name) = match parts.as_slice() {
            [t] => (DEFAULT_HOST, DEFAULT_NAMESPACE, *t),
            [n, t] => (DEFAULT_HOST, *n, *t),
            [h, n, t] => (*h, *n, *t),
            _ => {
                return Err(format!(
                    "{text:?} is not a provider address: expected HOST/NAMESPACE/TYPE"
                ))
            }
        };
        let ok = |s: &str| !s.is_empty() && !s.contains(char::is_whitespace);
        if !ok(host) || !ok(namespace) || !ok(type_name) {
            return Err(format!(
                "{text:?} is not a provider address: expected HOST/NAMESPACE/TYPE"
            ));
        }
        Ok(ProviderAddress {
            host: host.to_lowercase(),
            namespace: namespace.to_lowercase(),
            type_name: type_name.to_lowercase(),
        })
    }

    /// Whether a pattern (`HOST/NAMESPACE/TYPE`, parts may be `*`, and
    /// shorter forms as in [`parse`](Self::parse)) matches.
    pub fn matches(&self, pattern: &str) -> bool {
        let parts: Vec<&str> = pattern.split('/').collect();
        let full: [&str; 3] = match parts.as_slice() {
            [t] => [DEFAULT_HOST, DEFAULT_NAMESPACE, t],
            [n, t] => [DEFAULT_HOST, n, t],
            [h, n, t] => [h, n, t],
            _ => return false,
        };
        let ours = [&self.host, &self.namespace, &self.type_name];
        full.iter()
            .zip(ours)
            .all(|(p, o)| *p == "*" || p.eq_ignore_ascii_case(o))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_forms_and_patterns() {
        let a = ProviderAddress::parse("random").unwrap();
        assert_eq!(a.to_string(), "registry.opentofu.org/hashicorp/random");
        let b = ProviderAddress::parse("127.0.0.1:8080/converge-test/gostore").unwrap();
        assert_eq!(b.host, "127.0.0.1:8080");
        assert!(b.matches("*/*/*"));
        assert!(b.matches("127.0.0.1:8080/*/*"));
        assert!(!b.matches("example.com/*/*"));
        assert!(a.matches("hashicorp/*"));
        assert!(ProviderAddress::parse("a/b/c/d").is_err());
        assert!(ProviderAddress::parse("a//c").is_err());
    }
}
