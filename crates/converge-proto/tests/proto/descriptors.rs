//! The compatibility test: every message, field, enum value, service and
//! method that Converge's `.proto` files define must match the schema
//! embedded in the published Pulumi Python SDK, exactly (names, numbers,
//! types, labels, oneofs, map entries, proto3 `optional`, reserved numbers
//! and names, streaming flags, and the file each lives in).
//!
//! The SDK's schema is read by `tests/sdk_descriptors.py` with the Python
//! interpreter named by `CONVERGE_TEST_PYTHON` (`scripts/test` sets it to a
//! virtualenv with the pinned `pulumi` wheel). Ours is the descriptor set the
//! build script compiled. Both are flattened into the same keyed form.
//!
//! Not compared: comments, `go_package` and other file options, and the
//! `deprecated` option (deprecated fields are kept and noted in comments, so
//! that code which must still set them for old peers compiles without
//! warnings).
//!
//! The SDK has more than we define, on purpose. In SDK 3.272.0 we leave out
//! the services Converter, ResourceStatus, LanguageTest,
//! codegen.Loader and codegen.Mapper with their messages (converter.proto, resource_status.proto, testing/language.proto,
//! codegen/loader.proto, codegen/mapper.proto). The test prints every
//! top-level element we leave out (see it with `-- --nocapture`), so a new
//! SDK's additions are visible.

use crate::common;

use common::flatten::{compare, our_schema, Flat};

#[test]
fn our_schema_matches_the_pulumi_sdk() {
    let Some(sdk) = sdk_schema() else { return };
    // Our pulumirpc files; tfplugin6 and go-plugin's have their own tests.
    let ours = our_schema(|file| file.starts_with("pulumi/") || file.starts_with("google/"));
    assert!(
        ours.len() > 1000,
        "our schema looks empty: {} elements",
        ours.len()
    );

    let (problems, left_out) = compare(&ours, &sdk);
    println!(
        "compared {} elements of ours with {} of the SDK; left out on purpose:",
        ours.len(),
        sdk.len()
    );
    for key in &left_out {
        println!("  {key}");
    }
    assert!(
        problems.is_empty(),
        "{} difference(s) from the Pulumi SDK (theirs):\n  {}",
        problems.len(),
        problems.join("\n  ")
    );
}

/// The SDK's flattened schema, or `None` when no interpreter is configured
/// outside CI.
fn sdk_schema() -> Option<Flat> {
    let python = common::sdk_python("the pulumirpc schema")?;
    let stdout = common::run_script(&python, "sdk_descriptors.py", &[]);
    Some(serde_json::from_slice(&stdout).expect("the script prints a JSON object"))
}
