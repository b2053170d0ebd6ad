//! [`PropertyMap`]: an object's properties, shared until changed.
//!
//! A resource's inputs and outputs are held in many places at once: the
//! base snapshot, the snapshot a journal replay builds, the ledger of
//! registrations, the events the display and console read, the answer a
//! program gets. A clone shares the map; the first change through
//! [`DerefMut`] copies it if another holder still shares it
//! (`Arc::make_mut`), so no holder ever sees another's change.

use std::collections::BTreeMap;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use litemap::store::{StoreIterable, StoreIterableMut};
use litemap::LiteMap;

use crate::value::PropertyValue;

/// The map: a vector of entries sorted by key. Most objects have a few
/// keys; a B-tree node holds eleven whatever the count, and a snapshot
/// holds several maps per resource.
pub type Entries = LiteMap<String, PropertyValue>;

/// An object's properties, ordered by key so that every rendering is
/// stable. Reads and writes as a sorted map ([`Entries`]).
#[derive(Clone, Default, PartialEq)]
pub struct PropertyMap(Arc<Entries>);

impl PropertyMap {
    pub fn new() -> Self {
        PropertyMap::default()
    }

    /// The map, owned: moved out if no one else shares it, else copied.
    pub fn into_inner(self) -> Entries {
        Arc::unwrap_or_clone(self.0)
    }

    /// Every value, to change in place (copies a shared map first).
    pub fn values_mut(&mut self) -> impl DoubleEndedIterator<Item = &mut PropertyValue> {
        Arc::make_mut(&mut self.0).iter_mut().map(|(_, v)| v)
    }

    /// Whether `self` and `other` share one map (a clone not changed since).
    pub fn shares_with(&self, other: &PropertyMap) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Deref for PropertyMap {
    type Target = Entries;

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl DerefMut for PropertyMap {
    fn deref_mut(&mut self) -> &mut Self::Target {
        Arc::make_mut(&mut self.0)
    }
}

/// `map["key"]`, as on a `BTreeMap`: the value, or a panic if absent.
impl std::ops::Index<&str> for PropertyMap {
    type Output = PropertyValue;

    fn index(&self, key: &str) -> &PropertyValue {
        self.0
            .get(key)
            .unwrap_or_else(|| panic!("no property {key:?} in the map"))
    }
}

impl std::fmt::Debug for PropertyMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl From<BTreeMap<String, PropertyValue>> for PropertyMap {
    fn from(map: BTreeMap<String, PropertyValue>) -> Self {
        map.into_iter().collect()
    }
}

impl<const N: usize> From<[(String, PropertyValue); N]> for PropertyMap {
    fn from(entries: [(String, PropertyValue); N]) -> Self {
        entries.into_iter().collect()
    }
}

impl FromIterator<(String, PropertyValue)> for PropertyMap {
    fn from_iter<I: IntoIterator<Item = (String, PropertyValue)>>(iter: I) -> Self {
        PropertyMap(Arc::new(iter.into_iter().collect()))
    }
}

impl Extend<(String, PropertyValue)> for PropertyMap {
    fn extend<I: IntoIterator<Item = (String, PropertyValue)>>(&mut self, iter: I) {
        Arc::make_mut(&mut self.0).extend(iter);
    }
}

impl IntoIterator for PropertyMap {
    type Item = (String, PropertyValue);
    type IntoIter = std::vec::IntoIter<(String, PropertyValue)>;

    fn into_iter(self) -> Self::IntoIter {
        self.into_inner().into_iter()
    }
}

impl<'a> IntoIterator for &'a PropertyMap {
    type Item = (&'a String, &'a PropertyValue);
    type IntoIter =
        <Vec<(String, PropertyValue)> as StoreIterable<'a, String, PropertyValue>>::KeyValueIter;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl<'a> IntoIterator for &'a mut PropertyMap {
    type Item = (&'a String, &'a mut PropertyValue);
    type IntoIter =
        <Vec<(String, PropertyValue)> as StoreIterableMut<'a, String, PropertyValue>>::KeyValueIterMut;

    fn into_iter(self) -> Self::IntoIter {
        Arc::make_mut(&mut self.0).iter_mut()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clone_shares_until_either_changes() {
        let mut a = PropertyMap::from([("k".to_owned(), PropertyValue::Bool(true))]);
        let b = a.clone();
        assert!(a.shares_with(&b));
        a.insert("x".to_owned(), PropertyValue::Null);
        assert!(!a.shares_with(&b));
        assert_eq!(b.len(), 1);
        assert_eq!(a.len(), 2);
    }
}
