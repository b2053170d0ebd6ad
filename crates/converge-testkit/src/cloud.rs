//! The in-memory "cloud": the objects providers create, keyed by ID.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

use converge_model::{PropertyMap, Urn};
use converge_plugin::ProviderError;
use std::collections::BTreeMap;

/// One real object, as the provider that created it left it.
#[derive(Debug, Clone, PartialEq)]
pub struct CloudObject {
    pub id: String,
    /// The URN the object was created under.
    pub urn: Urn,
    /// The type token of `urn` (`pkg:module:Type`).
    pub type_token: String,
    pub properties: PropertyMap,
    /// The package of the provider that created it.
    pub package: String,
}

/// A provider call that reaches the cloud: what the counters count and
/// what the fault switch is asked about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CloudOp {
    Create,
    Read,
    Update,
    Delete,
}

/// How many provider calls reached the cloud, by kind. Previews of create
/// and update do not reach the cloud; calls the fault switch failed do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CallCounts {
    pub creates: usize,
    pub reads: usize,
    pub updates: usize,
    pub deletes: usize,
}

type Fault = Arc<dyn Fn(CloudOp, &Urn) -> bool + Send + Sync>;

#[derive(Default)]
struct CloudInner {
    last_id: u64,
    /// By the number in their ID (`id-N`): creation order, and removal
    /// keeps the order of the rest in O(log n) (the bench deletes 100,000).
    objects: BTreeMap<u64, CloudObject>,
    counts: CallCounts,
    fault: Option<Fault>,
}

impl CloudInner {
    /// Stores an object under `key` (its ID `id-<key>`); returns the ID.
    fn put(&mut self, key: u64, urn: &Urn, package: &str, properties: PropertyMap) -> String {
        let id = format!("id-{key}");
        let object = CloudObject {
            id: id.clone(),
            urn: urn.clone(),
            type_token: urn.type_token().to_owned(),
            properties,
            package: package.to_owned(),
        };
        self.objects.insert(key, object);
        id
    }
}

/// The number in an ID this cloud gave out (`id-N`).
fn key_of(id: &str) -> Option<u64> {
    id.strip_prefix("id-")?.parse().ok()
}

/// The objects that mock providers create, shared (`Arc`) by every provider
/// of a test. IDs are `id-1`, `id-2`, … in creation order and are never
/// reused, so a test is reproducible and a stale ID never finds a new object.
///
/// The direct methods ([`insert`](Self::insert),
/// [`set_properties`](Self::set_properties), [`remove`](Self::remove)) are
/// what the default provider behaviours use, and what a test uses to seed
/// the cloud or to drift it out of band; they are not counted.
#[derive(Default)]
pub struct MockCloud {
    inner: Mutex<CloudInner>,
}

impl fmt::Debug for MockCloud {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = self.lock();
        f.debug_struct("MockCloud")
            .field("objects", &inner.objects)
            .field("counts", &inner.counts)
            .field("fault", &inner.fault.is_some())
            .finish()
    }
}

impl MockCloud {
    /// An empty cloud.
    pub fn new() -> Arc<MockCloud> {
        Arc::new(MockCloud::default())
    }

    fn lock(&self) -> MutexGuard<'_, CloudInner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The IDs of every object, in creation order.
    pub fn ids(&self) -> Vec<String> {
        self.lock().objects.values().map(|o| o.id.clone()).collect()
    }

    pub fn get(&self, id: &str) -> Option<CloudObject> {
        let key = key_of(id)?;
        self.lock().objects.get(&key).cloned()
    }

    pub fn len(&self) -> usize {
        self.lock().objects.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lock().objects.is_empty()
    }

    /// Every object, in creation order.
    pub fn objects(&self) -> Vec<CloudObject> {
        self.lock().objects.values().cloned().collect()
    }

    /// The objects created under `urn` (more than one while a
    /// create-before-delete replacement is in flight).
    pub fn by_urn(&self, urn: &Urn) -> Vec<CloudObject> {
        let inner = self.lock();
        inner
            .objects
            .values()
            .filter(|o| &o.urn == urn)
            .cloned()
            .collect()
    }

    /// Creates an object with the next ID and returns the ID.
    pub fn insert(&self, urn: &Urn, package: &str, properties: PropertyMap) -> String {
        let mut inner = self.lock();
        inner.last_id += 1;
        let key = inner.last_id;
        inner.put(key, urn, package, properties)
    }

    /// Puts back an object a cloud of another process created, under its
    /// ID (`id-N`, as [`insert`](Self::insert) makes them), and returns
    /// whether the ID was one; later inserts count on from the largest ID
    /// restored. A benchmark that runs each operation in a process of its
    /// own seeds the cloud so from the stack's state.
    pub fn restore(&self, id: &str, urn: &Urn, package: &str, properties: PropertyMap) -> bool {
        let Some(key) = key_of(id) else { return false };
        let mut inner = self.lock();
        inner.last_id = inner.last_id.max(key);
        inner.put(key, urn, package, properties);
        true
    }

    /// Replaces an object's properties; fails as a real cloud's 404 would
    /// if there is no object `id`.
    pub fn set_properties(&self, id: &str, properties: PropertyMap) -> Result<(), ProviderError> {
        let mut inner = self.lock();
        match key_of(id).and_then(|k| inner.objects.get_mut(&k)) {
            Some(object) => {
                object.properties = properties;
                Ok(())
            }
            None => Err(not_found("update", id)),
        }
    }

    /// Removes an object; fails as a real cloud's 404 would if there is no
    /// object `id`.
    pub fn remove(&self, id: &str) -> Result<CloudObject, ProviderError> {
        key_of(id)
            .and_then(|k| self.lock().objects.remove(&k))
            .ok_or_else(|| not_found("delete", id))
    }

    /// The provider calls that have reached the cloud so far.
    pub fn counts(&self) -> CallCounts {
        self.lock().counts
    }

    pub fn reset_counts(&self) {
        self.lock().counts = CallCounts::default();
    }

    /// Fails every later provider call that reaches the cloud for which
    /// `fault(op, urn)` is true, before it changes anything. Replaces any
    /// previous fault.
    pub fn fail_when(&self, fault: impl Fn(CloudOp, &Urn) -> bool + Send + Sync + 'static) {
        self.lock().fault = Some(Arc::new(fault));
    }

    /// Fails every later provider call that reaches the cloud.
    pub fn fail_all(&self) {
        self.fail_when(|_, _| true);
    }

    /// Turns the fault switch off.
    pub fn heal(&self) {
        self.lock().fault = None;
    }

    /// Counts a provider call and asks the fault switch about it: `Err` if
    /// the call must fail.
    pub(crate) fn enter(&self, op: CloudOp, urn: &Urn) -> Result<(), ProviderError> {
        let fault = {
            let mut inner = self.lock();
            let counts = &mut inner.counts;
            match op {
                CloudOp::Create => counts.creates += 1,
                CloudOp::Read => counts.reads += 1,
                CloudOp::Update => counts.updates += 1,
                CloudOp::Delete => counts.deletes += 1,
            }
            inner.fault.clone()
        };
        // Called without the lock, so a fault may look at the cloud.
        match fault {
            Some(fault) if fault(op, urn) => Err(ProviderError::Failed(format!(
                "injected fault: {op:?} of {urn}"
            ))),
            _ => Ok(()),
        }
    }
}

fn not_found(what: &str, id: &str) -> ProviderError {
    ProviderError::Failed(format!("{what}: no object with id {id:?} (404)"))
}

#[cfg(test)]
mod tests {
    use converge_model::PropertyValue;

    use super::*;

    fn urn(name: &str) -> Urn {
        Urn::parse(&format!("urn:pulumi:s::p::pkg:m:T::{name}")).unwrap()
    }

    fn props(v: &str) -> PropertyMap {
        PropertyMap::from([("v".to_owned(), PropertyValue::string(v))])
    }

    #[test]
    fn ids_are_sequential_and_never_reused() {
        let cloud = MockCloud::new();
        assert!(cloud.is_empty());
        let a = cloud.insert(&urn("a"), "pkg", props("1"));
        let b = cloud.insert(&urn("b"), "pkg", props("2"));
        assert_eq!((a.as_str(), b.as_str()), ("id-1", "id-2"));
        cloud.remove(&b).unwrap();
        let c = cloud.insert(&urn("c"), "pkg", props("3"));
        assert_eq!(c, "id-3");
        assert_eq!(cloud.ids(), ["id-1", "id-3"]);
        assert_eq!(cloud.len(), 2);
    }

    #[test]
    fn objects_record_how_they_were_created() {
        let cloud = MockCloud::new();
        let id = cloud.insert(&urn("a"), "pkg", props("1"));
        let object = cloud.get(&id).unwrap();
        assert_eq!(
            object,
            CloudObject {
                id: id.clone(),
                urn: urn("a"),
                type_token: "pkg:m:T".to_owned(),
                properties: props("1"),
                package: "pkg".to_owned(),
            }
        );
        assert_eq!(cloud.objects(), vec![object.clone()]);
        assert_eq!(cloud.by_urn(&urn("a")), vec![object]);
        assert!(cloud.by_urn(&urn("b")).is_empty());
    }

    #[test]
    fn removal_keeps_creation_order() {
        let cloud = MockCloud::new();
        for name in ["a", "b", "c", "d"] {
            cloud.insert(&urn(name), "pkg", PropertyMap::new());
        }
        cloud.remove("id-2").unwrap();
        assert_eq!(cloud.ids(), ["id-1", "id-3", "id-4"]);
    }

    #[test]
    fn restored_objects_keep_their_ids_and_later_ones_count_on() {
        let cloud = MockCloud::new();
        assert!(cloud.restore("id-7", &urn("a"), "pkg", props("1")));
        assert!(cloud.restore("id-3", &urn("b"), "pkg", props("2")));
        assert!(!cloud.restore("i-am-a-uuid", &urn("c"), "pkg", props("3")));
        assert_eq!(cloud.ids(), ["id-3", "id-7"]);
        assert_eq!(cloud.get("id-7").unwrap().type_token, "pkg:m:T");
        cloud.set_properties("id-3", props("4")).unwrap();
        assert_eq!(cloud.insert(&urn("d"), "pkg", props("5")), "id-8");
        cloud.remove("id-7").unwrap();
        assert_eq!(cloud.ids(), ["id-3", "id-8"]);
    }

    #[test]
    fn missing_objects_are_404s() {
        let cloud = MockCloud::new();
        let err = cloud.remove("id-9").unwrap_err();
        assert!(err.to_string().contains("id-9"), "{err}");
        let err = cloud.set_properties("id-9", props("x")).unwrap_err();
        assert!(matches!(err, ProviderError::Failed(m) if m.contains("id-9")));
        let id = cloud.insert(&urn("a"), "pkg", props("1"));
        cloud.set_properties(&id, props("2")).unwrap();
        assert_eq!(cloud.get(&id).unwrap().properties, props("2"));
        assert!(cloud.get("id-9").is_none());
    }

    #[test]
    fn calls_are_counted_and_faults_injected() {
        let cloud = MockCloud::new();
        cloud.enter(CloudOp::Create, &urn("a")).unwrap();
        cloud.enter(CloudOp::Read, &urn("a")).unwrap();
        cloud.fail_when(|op, urn| op == CloudOp::Delete && urn.name() == "b");
        cloud.enter(CloudOp::Delete, &urn("a")).unwrap();
        let err = cloud.enter(CloudOp::Delete, &urn("b")).unwrap_err();
        assert!(err.to_string().contains("injected fault"), "{err}");
        cloud.fail_all();
        assert!(cloud.enter(CloudOp::Update, &urn("a")).is_err());
        cloud.heal();
        cloud.enter(CloudOp::Update, &urn("a")).unwrap();
        let expected = CallCounts {
            creates: 1,
            reads: 1,
            updates: 2,
            deletes: 2,
        };
        assert_eq!(cloud.counts(), expected);
        cloud.reset_counts();
        assert_eq!(cloud.counts(), CallCounts::default());
    }

    #[test]
    fn a_fault_may_look_at_the_cloud() {
        let cloud = MockCloud::new();
        let seen = Arc::clone(&cloud);
        cloud.fail_when(move |_, _| seen.len() >= 2);
        cloud.insert(&urn("a"), "pkg", PropertyMap::new());
        cloud.enter(CloudOp::Create, &urn("b")).unwrap();
        cloud.insert(&urn("b"), "pkg", PropertyMap::new());
        assert!(cloud.enter(CloudOp::Create, &urn("c")).is_err());
        cloud.heal(); // breaks the cycle cloud → fault → cloud
    }
}
