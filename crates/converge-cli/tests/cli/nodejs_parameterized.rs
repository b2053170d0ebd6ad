//! Parameterized packages with the published Node.js SDK: the program does
//! what the SDK generated for a parameterized package does —
//! `pulumi.runtime.registerPackage`, then the reference with each resource
//! and provider — and the real `convergetest` plugin becomes each package
//! through `Parameterize`.

use crate::common;

use common::nodejs::{node_modules, NodeWorld};

const PROGRAM: &str = r#"
const pulumi = require("@pulumi/pulumi");

// What a generated SDK's utilities.getPackage() does.
const packageRef = (pkg, parameter) => pulumi.runtime.registerPackage({
    baseProviderName: "convergetest",
    baseProviderVersion: "",
    baseProviderDownloadUrl: "",
    packageName: pkg,
    packageVersion: "2.0.0",
    base64Parameter: Buffer.from(parameter).toString("base64"),
});

class Thing extends pulumi.CustomResource {
    constructor(pkg, parameter, name, value, opts) {
        super(`${pkg}:index:Thing`, name,
              { value, length: undefined, package: undefined, parameter: undefined },
              opts, false, packageRef(pkg, parameter));
    }
}

class Provider extends pulumi.ProviderResource {
    constructor(pkg, parameter, name, opts) {
        super(pkg, name, {}, opts, false, packageRef(pkg, parameter));
    }
}

const a = new Thing("alpha", "first", "a", "x");
const b = new Thing("beta", "second", "b", "yy");
const explicit = new Provider("beta", "second", "explicit");
const c = new Thing("beta", "second", "c", "zzz", { provider: explicit });
exports.served = [a, b, c].map(t => t.package);
exports.parameters = [a, b, c].map(t => t.parameter);
"#;

#[test]
fn a_nodejs_program_deploys_two_parameterizations_of_one_plugin() {
    let Some(modules) = node_modules() else {
        return;
    };
    let mut w = NodeWorld::new(&modules, PROGRAM);
    let bin = common::convergetest_bin_dir(w.scratch.dir.path());
    let cloud_file = w.scratch.dir.path().join("cloud.json");
    w.env = vec![
        ("PATH".into(), common::path_with(&bin)),
        ("CONVERGE_TEST_CLOUD_FILE".into(), cloud_file.clone().into()),
    ];
    let up = w.run(&["up", "--yes"]);
    // The stack, three things, two default providers and the explicit one.
    assert!(up.contains("+ 5 created"), "{up}");
    let outputs: serde_json::Value =
        serde_json::from_str(&w.run(&["stack", "output", "--json"])).unwrap();
    assert_eq!(
        outputs["served"],
        serde_json::json!(["alpha", "beta", "beta"])
    );
    assert_eq!(
        outputs["parameters"],
        serde_json::json!(["first", "second", "second"])
    );
    let state = w.run(&["stack", "export"]);
    for urn in [
        "urn:pulumi:dev::nodeproj::pulumi:providers:alpha::default_2_0_0",
        "urn:pulumi:dev::nodeproj::pulumi:providers:beta::default_2_0_0",
    ] {
        assert!(state.contains(urn), "{state}");
    }
    let again = w.run(&["up", "--yes"]);
    assert!(
        !again.contains("created") && !again.contains("updated"),
        "{again}"
    );
    let down = w.run(&["destroy", "--yes"]);
    assert!(down.contains("- 5 deleted"), "{down}");
    let cloud: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&cloud_file).unwrap()).unwrap();
    assert!(cloud["objects"].as_object().unwrap().is_empty(), "{cloud}");
}
