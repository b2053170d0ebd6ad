//! Values: outputs with interpolation, secrets, typed config with
//! defaults, builtin functions, and runtime errors with locations.

use converge_model::{ArchiveMember, Asset, PropertyValue};

use super::*;

#[tokio::test]
async fn outputs_interpolate_and_secrets_taint() {
    let (mut w, _, _) = world(provider());
    let mut p = Project::new();
    p.set("proj:password", ConfigValue::secret("hunter2"));
    let program = p.program(
        "config:
  password:
    type: String
  prefix:
    default: app
resources:
  a:
    type: pkg:index:Thing
    properties:
      name: ${prefix}-${pulumi.stack}
      pw: ${password}
outputs:
  url: https://${a.name}.example.com/
  project: ${pulumi.project}
  secretOut: ${password}
  both: ${a.name}:${password}
  hidden:
    fn::secret: ${a.name}
  joined:
    fn::join: [\",\", [\"${a.name}\", x, 3]]
  escaped: $${notInterpolated}
  missing: ${a.nothing}
  json:
    fn::toJSON:
      pw: ${password}
  picked:
    fn::select:
      - 0
      - fn::split: [\"-\", \"${password}-x\"]
",
    );
    expect_ok(&w.up(&program).await);
    let a = state(&w, "a");
    assert_eq!(a.inputs.get("name"), Some(&s("app-test")));
    assert_eq!(a.inputs.get("pw"), Some(&secret("hunter2")));
    let out = stack_outputs(&w);
    assert_eq!(out.get("url"), Some(&s("https://app-test.example.com/")));
    assert_eq!(out.get("project"), Some(&s("proj")));
    assert_eq!(out.get("secretOut"), Some(&secret("hunter2")));
    assert_eq!(out.get("both"), Some(&secret("app-test:hunter2")));
    assert_eq!(out.get("hidden"), Some(&secret("app-test")));
    assert_eq!(out.get("joined"), Some(&s("app-test,x,3")));
    assert_eq!(out.get("escaped"), Some(&s("${notInterpolated}")));
    assert_eq!(out.get("missing"), Some(&PropertyValue::Null));
    assert_eq!(out.get("json"), Some(&secret(r#"{"pw":"hunter2"}"#)));
    assert_eq!(out.get("picked"), Some(&secret("hunter2")));
}

#[tokio::test]
async fn typed_config_with_defaults_and_stack_values() {
    let (mut w, _, _) = world(provider());
    let mut p = Project::new();
    p.set("proj:count", ConfigValue::plain("3"));
    p.set("proj:zones", ConfigValue::plain("[\"a\", \"b\"]"));
    p.set("proj:token", ConfigValue::secret("t0k"));
    p.set("other:region", ConfigValue::plain("eu-west-1"));
    let body = "configuration:
  count:
    type: Integer
  enabled:
    type: Boolean
    default: true
  zones:
    type: List<String>
  tags:
    type: Object
    default:
      team: infra
  token:
    type: String
  ratio:
    default: 0.5
resources:
  a:
    type: pkg:index:Thing
    properties:
      count: ${count}
      enabled: ${enabled}
      zone: ${zones[1]}
      team: ${tags.team}
      token: ${token}
      label: n=${count}/r=${ratio}
      region: ${other:region}
";
    expect_ok(&w.up(&p.program(body)).await);
    let a = state(&w, "a");
    assert_eq!(a.inputs.get("count"), Some(&PropertyValue::Number(3.0)));
    assert_eq!(a.inputs.get("enabled"), Some(&PropertyValue::Bool(true)));
    assert_eq!(a.inputs.get("zone"), Some(&s("b")));
    assert_eq!(a.inputs.get("team"), Some(&s("infra")));
    assert_eq!(a.inputs.get("token"), Some(&secret("t0k")));
    assert_eq!(a.inputs.get("label"), Some(&s("n=3/r=0.5")));
    assert_eq!(a.inputs.get("region"), Some(&s("eu-west-1")));

    // A new stack value changes the resource.
    p.set("proj:count", ConfigValue::plain("4"));
    let r = w.up(&p.program(body)).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![converge_engine::StepOp::Update]);
    assert_eq!(
        state(&w, "a").inputs.get("count"),
        Some(&PropertyValue::Number(4.0))
    );
}

#[tokio::test]
async fn builtin_functions_compute_values() {
    let (mut w, _, _) = world(provider());
    let p = Project::new();
    std::fs::write(p.path().join("hello.txt"), "hello file").unwrap();
    std::fs::create_dir(p.path().join("dir")).unwrap();
    std::fs::write(p.path().join("dir/in-dir.txt"), "in dir").unwrap();
    let program = p.program(
        "variables:
  parts:
    fn::split: [\",\", \"x,y,z\"]
  doc:
    a: 1
    b: [true, null]
resources:
  a:
    type: pkg:index:Thing
    properties:
      second:
        fn::select: [1, \"${parts}\"]
      json:
        fn::toJSON: ${doc}
      b64:
        fn::toBase64: hi there
      plain:
        fn::fromBase64: aGkgdGhlcmU=
      file:
        fn::readFile: hello.txt
      text:
        fn::stringAsset: some text
      archive:
        fn::assetArchive:
          inner.txt:
            fn::stringAsset: inner
          dir:
            fn::fileArchive: ./dir
      asset:
        fn::fileAsset: hello.txt
      remote:
        fn::remoteAsset: https://example.com/x
      nested: ${doc.b[0]}
",
    );
    expect_ok(&w.up(&program).await);
    let i = &state(&w, "a").inputs;
    assert_eq!(i.get("second"), Some(&s("y")));
    assert_eq!(i.get("json"), Some(&s(r#"{"a":1,"b":[true,null]}"#)));
    assert_eq!(i.get("b64"), Some(&s("aGkgdGhlcmU=")));
    assert_eq!(i.get("plain"), Some(&s("hi there")));
    assert_eq!(i.get("file"), Some(&s("hello file")));
    assert_eq!(
        i.get("text"),
        Some(&PropertyValue::Asset(Box::new(Asset::from_text(
            "some text"
        ))))
    );
    let Some(PropertyValue::Archive(archive)) = i.get("archive") else {
        panic!("{:?}", i.get("archive"))
    };
    let members = archive.assets.as_ref().unwrap();
    assert_eq!(
        members.get("inner.txt"),
        Some(&ArchiveMember::Asset(Asset::from_text("inner")))
    );
    // Hashed as Pulumi's engine hashes them: the directory member, and
    // the whole archive with it.
    let Some(ArchiveMember::Archive(dir)) = members.get("dir") else {
        panic!("{members:?}")
    };
    assert_eq!(dir.path.as_deref(), Some("./dir"));
    assert_eq!(dir.hash.len(), 64, "{dir:?}");
    assert_eq!(archive.hash.len(), 64, "{archive:?}");
    let Some(PropertyValue::Asset(asset)) = i.get("asset") else {
        panic!()
    };
    assert_eq!(asset.path.as_deref(), Some("hello.txt"));
    assert_eq!(asset.hash, converge_model::sha256_hex(b"hello file"));
    assert_eq!(
        i.get("remote"),
        Some(&PropertyValue::Asset(Box::new(Asset::from_uri(
            "https://example.com/x"
        ))))
    );
    assert_eq!(i.get("nested"), Some(&PropertyValue::Bool(true)));
}

#[tokio::test]
async fn runtime_errors_carry_the_expression_location() {
    let (mut w, cloud, _) = world(provider());
    let p = Project::new();
    let program = p.program(
        "variables:
  list:
    fn::split: [\",\", \"a,b\"]
resources:
  a:
    type: pkg:index:Thing
    properties:
      v: hello
  b:
    type: pkg:index:Thing
    properties:
      pick:
        fn::select: [5, \"${list}\"]
  c:
    type: pkg:index:Thing
    properties:
      deep: ${a.v.length}
",
    );
    let e = expect_err(&w.up(&program).await);
    assert!(
        e.contains("Pulumi.yaml:15:9: fn::select: index 5 is out of range for a list of 2"),
        "{e}"
    );
    assert!(
        e.contains(
            "Pulumi.yaml:19:13: cannot read property 'length' of a string (in ${a.v.length})"
        ),
        "{e}"
    );
    // What did not fail was still created.
    assert!(w.resource("a").is_some());
    assert!(w.resource("b").is_none() && w.resource("c").is_none());
    assert_eq!(cloud.len(), 1);
}

/// The builtins of Pulumi YAML's reference beyond the first ones, each
/// computed: file digests, `sha1` (secret in, secret out), `length` of a
/// list, an object and a string, `singleOrNone`, `unsecret`, a resource's
/// name and type, and `pulumi.rootDirectory`.
#[tokio::test]
async fn reference_builtins_compute_values() {
    let (mut w, _, _) = world(provider());
    let mut p = Project::new();
    p.set("proj:password", ConfigValue::secret("hunter2"));
    std::fs::write(p.path().join("hello.txt"), "hello\n").unwrap();
    let program = p.program(
        "config:
  password:
    type: String
resources:
  a:
    type: pkg:index:Thing
    properties:
      name: first
  b:
    type: pkg:index:Thing
    properties:
      b64:
        fn::filebase64: hello.txt
      b64sha:
        fn::filebase64sha256: hello.txt
      sha:
        fn::sha1: hello
      secretSha:
        fn::sha1: ${password}
      listLength:
        fn::length: [1, 2, 3]
      objectLength:
        fn::length:
          x: 1
          y: 2
      textLength:
        fn::length: héllo
      single:
        fn::singleOrNone: [only]
      none:
        fn::singleOrNone: []
      plain:
        fn::unsecret: ${password}
      aName:
        fn::pulumiResourceName: ${a}
      aType:
        fn::pulumiResourceType: ${a}
      root: ${pulumi.rootDirectory}
",
    );
    expect_ok(&w.up(&program).await);
    let i = &state(&w, "b").inputs;
    assert_eq!(i.get("b64"), Some(&s("aGVsbG8K")));
    assert_eq!(
        i.get("b64sha"),
        Some(&s("WJG1tSLV3whtD/CxEPvZ0hu0/HFjrzTQgoai6Eb2vgM="))
    );
    assert_eq!(
        i.get("sha"),
        Some(&s("aaf4c61ddcc5e8a2dabede0f3b482cd9aea9434d"))
    );
    assert_eq!(
        i.get("secretSha"),
        Some(&secret("f3bbbd66a63d4bf1747940578ec3d0103530e21d"))
    );
    assert_eq!(i.get("listLength"), Some(&PropertyValue::Number(3.0)));
    assert_eq!(i.get("objectLength"), Some(&PropertyValue::Number(2.0)));
    assert_eq!(i.get("textLength"), Some(&PropertyValue::Number(5.0)));
    assert_eq!(i.get("single"), Some(&s("only")));
    assert_eq!(i.get("none"), Some(&PropertyValue::Null));
    assert_eq!(i.get("plain"), Some(&s("hunter2")));
    assert_eq!(i.get("aName"), Some(&s("a")));
    assert_eq!(i.get("aType"), Some(&s("pkg:index:Thing")));
    assert_eq!(i.get("root"), Some(&s(&p.path().to_string_lossy())));
}

/// A builtin given what it cannot take fails the run, naming itself.
#[tokio::test]
async fn reference_builtins_refuse_what_they_cannot_take() {
    for (body, message) in [
        (
            "fn::singleOrNone: [a, b]",
            "fn::singleOrNone takes a list of at most one element, not 2",
        ),
        (
            "fn::length: ${n}",
            "fn::length takes a list, an object or a string, not a number",
        ),
        (
            "fn::filebase64: missing.txt",
            "fn::filebase64: cannot read 'missing.txt'",
        ),
    ] {
        let (mut w, _, _) = world(provider());
        let p = Project::new();
        let program = p.program(&format!(
            "variables:
  n: 3
outputs:
  x:
    {body}
"
        ));
        let e = expect_err(&w.up(&program).await);
        assert!(e.contains(message), "{body}: {e}");
    }
}
