//! What the Python and Node.js program tests share: copying a test program,
//! the mock provider, and reading results.

#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;

use converge_engine::OperationResult;
use converge_model::{PropertyMap, PropertyValue, ResourceState};
use converge_plugin::CreateResponse;
use converge_testkit::{Lifecycle, MockCloud, MockLoader, MockProvider};

pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// The mock provider of package `pkg`: objects in `cloud`; `computed` is an
/// output-only property (unknown in previews).
pub fn provider(cloud: &Arc<MockCloud>) -> MockProvider {
    let objects = Arc::clone(cloud);
    MockProvider::new("pkg")
        .with_cloud(Arc::clone(cloud))
        .on_create(move |req| {
            let mut properties = req.properties.clone();
            if req.preview {
                return Ok(CreateResponse {
                    id: String::new(),
                    properties,
                });
            }
            properties.insert(
                "computed".to_owned(),
                PropertyValue::string(format!("computed-{}", req.urn.name())),
            );
            let id = objects.insert(&req.urn, "pkg", properties.clone());
            Ok(CreateResponse { id, properties })
        })
}

/// A world of one provider.
pub fn world_with(cloud: Arc<MockCloud>, provider: MockProvider) -> (Lifecycle, Arc<MockCloud>) {
    let loader = Arc::new(MockLoader::single(provider));
    (Lifecycle::new(Arc::clone(&cloud), loader), cloud)
}

pub fn resource<'a>(result: &'a OperationResult, name: &str) -> &'a ResourceState {
    result
        .snapshot
        .resources
        .iter()
        .find(|r| r.urn.name() == name && !r.delete)
        .unwrap_or_else(|| panic!("no resource {name} in {:#?}", result.snapshot.resources))
}

pub fn stack_outputs(result: &OperationResult) -> &PropertyMap {
    &resource(result, "proj-test").outputs
}

pub fn ok(result: &OperationResult) {
    if let Some(e) = &result.error {
        panic!("the operation failed: {e}");
    }
}

pub fn s(text: &str) -> PropertyValue {
    PropertyValue::string(text)
}
