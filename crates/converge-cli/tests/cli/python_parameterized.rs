//! Parameterized packages with the published Python SDK: the program does
//! what the SDK generated for a parameterized package does — registers its
//! package (`pulumi.runtime.register_package`, `RegisterPackage`) and
//! passes the reference with each resource and provider — and the real
//! `convergetest` plugin, started once per parameterization, is told by
//! `Parameterize` which package to become.

use crate::common;

use base64::Engine as _;
use common::python::{venv, PythonWorld as World};

/// Two packages, `alpha` and `beta`, both served by plugin `convergetest`
/// with different parameters; `b2` uses an explicit provider of `beta`.
const PROGRAM: &str = r#"
import base64
import pulumi
from pulumi import runtime

def package_ref(package, parameter):
    # What a generated SDK's _utilities.get_package() does.
    return runtime.register_package("convergetest", "", "", package, "2.0.0",
                                    base64.b64encode(parameter.encode()).decode())

class Thing(pulumi.CustomResource):
    def __init__(self, package, parameter, name, value, opts=None):
        props = {"value": value, "length": None, "package": None, "parameter": None}
        super().__init__(f"{package}:index:Thing", name, props, opts, False,
                         package_ref(package, parameter))

class Provider(pulumi.ProviderResource):
    def __init__(self, package, parameter, name, opts=None):
        super().__init__(package, name, {}, opts, False, package_ref(package, parameter))

a1 = Thing("alpha", "first", "a1", "x")
a2 = Thing("alpha", "first", "a2", "yy")
b1 = Thing("beta", "second", "b1", "zzz")
explicit = Provider("beta", "second", "explicit")
b2 = Thing("beta", "second", "b2", "wwww", pulumi.ResourceOptions(provider=explicit))
pulumi.export("served", [t.package.apply(lambda p: p) for t in [a1, a2, b1, b2]])
pulumi.export("parameters", [t.parameter for t in [a1, a2, b1, b2]])
"#;

#[test]
fn two_parameterizations_of_one_plugin_deploy_side_by_side() {
    let Some(venv) = venv() else { return };
    let w = World::new(&venv, PROGRAM);
    let convergetest = common::ConvergetestCloud::new(&w.scratch);
    let run = |args: &[&str]| convergetest.run(&w.scratch, args);
    let cloud = || convergetest.state();

    let up = run(&["up", "--yes"]);
    // The stack, four things, two default providers and the explicit one.
    assert!(up.contains("+ 6 created"), "{up}");
    let outputs: serde_json::Value =
        serde_json::from_str(&run(&["stack", "output", "--json"])).unwrap();
    assert_eq!(
        outputs["served"],
        serde_json::json!(["alpha", "alpha", "beta", "beta"])
    );
    assert_eq!(
        outputs["parameters"],
        serde_json::json!(["first", "first", "second", "second"])
    );
    assert_eq!(cloud()["objects"].as_object().unwrap().len(), 4);

    let state: serde_json::Value = serde_json::from_str(&w.state()).unwrap();
    let resources = state["checkpoint"]["latest"]["resources"]
        .as_array()
        .unwrap()
        .clone();
    let find = |urn: &str| {
        resources
            .iter()
            .find(|r| r["urn"] == urn)
            .unwrap_or_else(|| panic!("no {urn} in {resources:#?}"))
            .clone()
    };
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    // Each package's default provider is its own, named for its version,
    // recorded as Pulumi records one: the package version as `version`,
    // the plugin and the parameter under `__internal`, which the outputs
    // leave out.
    for (package, parameter) in [("alpha", "first"), ("beta", "second")] {
        let urn = format!("urn:pulumi:dev::pyproj::pulumi:providers:{package}::default_2_0_0");
        let provider = find(&urn);
        assert_eq!(provider["inputs"]["version"], "2.0.0", "{provider:#}");
        let internal = &provider["inputs"]["__internal"];
        assert_eq!(internal["name"], "convergetest", "{provider:#}");
        assert_eq!(internal["parameterization"], b64(parameter), "{provider:#}");
        assert!(
            provider["outputs"].get("__internal").is_none(),
            "{provider:#}"
        );
        let thing = find(&format!(
            "urn:pulumi:dev::pyproj::{package}:index:Thing::{}",
            if package == "alpha" { "a1" } else { "b1" }
        ));
        assert!(
            thing["provider"]
                .as_str()
                .unwrap()
                .starts_with(&format!("{urn}::")),
            "{thing:#}"
        );
    }
    let explicit = find("urn:pulumi:dev::pyproj::pulumi:providers:beta::explicit");
    assert_eq!(
        explicit["inputs"]["__internal"]["parameterization"],
        b64("second")
    );
    let b2 = find("urn:pulumi:dev::pyproj::beta:index:Thing::b2");
    assert!(b2["provider"]
        .as_str()
        .unwrap()
        .starts_with("urn:pulumi:dev::pyproj::pulumi:providers:beta::explicit::"));

    // Run again: the providers are parameterized from their state, and
    // nothing changes.
    let again = run(&["up", "--yes"]);
    assert!(
        !again.contains("created") && !again.contains("updated") && !again.contains("replaced"),
        "{again}"
    );
    assert_eq!(cloud()["objects"].as_object().unwrap().len(), 4);

    let destroyed = run(&["destroy", "--yes"]);
    assert!(destroyed.contains("- 6 deleted"), "{destroyed}");
    assert!(cloud()["objects"].as_object().unwrap().is_empty());
}

/// A parameterized package's functions, as a generated SDK calls them:
/// with the package's reference. The default provider of the package
/// runs the invoke, parameterized; an explicit provider of the package
/// runs it when named; a reference to another package is refused.
const INVOKES: &str = r#"
import base64
import pulumi
from pulumi import runtime

def package_ref(package, parameter):
    return runtime.register_package("convergetest", "", "", package, "2.0.0",
                                    base64.b64encode(parameter.encode()).decode())

# A reference is awaited once: each use registers the package again
# (the same registration, the same reference), as generated SDKs do.
alpha = lambda: package_ref("alpha", "first")
beta = lambda: package_ref("beta", "second")
explicit = pulumi.ProviderResource("beta", "explicit", {}, None, False, beta())

by_default = runtime.invoke_output("alpha:index:count", {}, package_ref=alpha())
by_explicit = runtime.invoke_output("beta:index:count", {},
                                    pulumi.InvokeOutputOptions(provider=explicit),
                                    package_ref=beta())
pulumi.export("default", by_default)
pulumi.export("explicit", by_explicit)
"#;

#[test]
fn a_parameterized_packages_invokes_run_on_its_parameterized_provider() {
    let Some(venv) = venv() else { return };
    let w = World::new(&venv, INVOKES);
    let convergetest = common::ConvergetestCloud::new(&w.scratch);
    let run = |args: &[&str]| convergetest.run(&w.scratch, args);
    run(&["up", "--yes"]);
    let outputs: serde_json::Value =
        serde_json::from_str(&run(&["stack", "output", "--json"])).unwrap();
    assert_eq!(outputs["default"]["package"], "alpha", "{outputs}");
    assert_eq!(outputs["default"]["parameter"], "first", "{outputs}");
    assert_eq!(outputs["explicit"]["package"], "beta", "{outputs}");
    assert_eq!(outputs["explicit"]["parameter"], "second", "{outputs}");

    // The reference must be to the function's package.
    std::fs::write(
        w.scratch.project.join("__main__.py"),
        INVOKES.replace(
            r#"invoke_output("alpha:index:count", {}, package_ref=alpha())"#,
            r#"invoke_output("alpha:index:count", {}, package_ref=beta())"#,
        ),
    )
    .unwrap();
    let mut cmd = w.scratch.command("pw");
    cmd.envs(convergetest.env());
    let out = common::failure_of(cmd, &["up", "--yes"]);
    assert!(
        out.contains("its package reference is to package beta, not alpha"),
        "{out}"
    );
}
