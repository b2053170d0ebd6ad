//! The built-in `random` provider against pulumi-random 4.x's contract.

use std::collections::BTreeSet;
use std::sync::Arc;

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use converge_model::{DiffKind, PropertyMap, PropertyValue, Urn};
use converge_plugin::builtin::{self, random, BuiltinLoader};
use converge_plugin::{
    CheckRequest, CheckResponse, CreateRequest, CreateResponse, DiffChanges, DiffRequest,
    DiffResponse, Provider, ProviderLoader, ReadRequest, ReadResponse, RegistryError,
};

const STRING: &str = "random:index/randomString:RandomString";
const PASSWORD: &str = "random:index/randomPassword:RandomPassword";
const INTEGER: &str = "random:index/randomInteger:RandomInteger";
const PET: &str = "random:index/randomPet:RandomPet";
const UUID: &str = "random:index/randomUuid:RandomUuid";
const UUID7: &str = "random:index/randomUuid7:RandomUuid7";
const ID: &str = "random:index/randomId:RandomId";
const SHUFFLE: &str = "random:index/randomShuffle:RandomShuffle";
const BYTES: &str = "random:index/randomBytes:RandomBytes";

fn urn(token: &str) -> Urn {
    Urn::new("dev", "proj", None, token, "r").unwrap()
}

fn map<const N: usize>(entries: [(&str, PropertyValue); N]) -> PropertyMap {
    entries
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
}

fn n(x: i64) -> PropertyValue {
    PropertyValue::Number(x as f64)
}

fn provider() -> random::RandomProvider {
    random::RandomProvider::new()
}

async fn check(token: &str, news: PropertyMap) -> CheckResponse {
    provider()
        .check(CheckRequest {
            urn: urn(token),
            olds: PropertyMap::new(),
            news,
            random_seed: Vec::new(),
        })
        .await
        .unwrap()
}

/// Check (which must pass), then Create.
async fn create(token: &str, news: PropertyMap) -> CreateResponse {
    let checked = check(token, news).await;
    assert!(checked.failures.is_empty(), "{:?}", checked.failures);
    provider()
        .create(CreateRequest {
            urn: urn(token),
            properties: checked.inputs,
            timeout: None,
            preview: false,
            planned: None,
        })
        .await
        .unwrap()
}

async fn diff(token: &str, olds: &PropertyMap, news: PropertyMap) -> DiffResponse {
    let checked = check(token, news).await;
    provider()
        .diff(DiffRequest {
            urn: urn(token),
            id: "id".into(),
            old_inputs: olds.clone(),
            old_outputs: olds.clone(),
            new_inputs: checked.inputs,
            ignore_changes: Vec::new(),
        })
        .await
        .unwrap()
}

async fn import(token: &str, id: &str) -> Result<ReadResponse, converge_plugin::ProviderError> {
    provider()
        .read(ReadRequest {
            urn: urn(token),
            id: id.into(),
            inputs: None,
            state: None,
            timeout: None,
        })
        .await
}

fn s<'a>(m: &'a PropertyMap, k: &str) -> &'a str {
    match &m[k] {
        PropertyValue::String(s) => s,
        PropertyValue::Secret(inner) => inner.as_str().unwrap(),
        other => panic!("{k}: {other:?}"),
    }
}

fn num(m: &PropertyMap, k: &str) -> i64 {
    match m[k] {
        PropertyValue::Number(x) => x as i64,
        ref other => panic!("{k}: {other:?}"),
    }
}

#[tokio::test]
async fn string_check_applies_the_documented_defaults() {
    let c = check(STRING, map([("length", n(8))])).await;
    assert!(c.failures.is_empty());
    let expected = map([
        ("length", n(8)),
        ("lower", true.into()),
        ("upper", true.into()),
        ("special", true.into()),
        ("numeric", true.into()),
        ("number", true.into()),
        ("minLower", n(0)),
        ("minUpper", n(0)),
        ("minNumeric", n(0)),
        ("minSpecial", n(0)),
    ]);
    assert_eq!(c.inputs, expected);
    // The deprecated `number` sets `numeric` and the other way round.
    let c = check(STRING, map([("length", n(8)), ("number", false.into())])).await;
    assert_eq!(c.inputs["numeric"], false.into());
    let c = check(STRING, map([("length", n(8)), ("numeric", false.into())])).await;
    assert_eq!(c.inputs["number"], false.into());
    let c = check(
        STRING,
        map([
            ("length", n(8)),
            ("numeric", false.into()),
            ("number", true.into()),
        ]),
    )
    .await;
    assert_eq!(c.failures.len(), 1);
}

#[tokio::test]
async fn string_check_failures() {
    let cases = [
        (map([]), "length"),
        (map([("length", n(0))]), "length"),
        (
            map([("length", n(3)), ("minUpper", n(2)), ("minLower", n(2))]),
            "length",
        ),
        (map([("length", "8".into())]), "length"),
        (map([("length", n(8)), ("minUpper", n(-1))]), "minUpper"),
        (map([("length", n(8)), ("bogus", true.into())]), "bogus"),
        (
            map([
                ("length", n(8)),
                ("upper", false.into()),
                ("lower", false.into()),
                ("numeric", false.into()),
                ("special", false.into()),
            ]),
            "special",
        ),
    ];
    for (news, property) in cases {
        let c = check(STRING, news.clone()).await;
        assert!(
            c.failures.iter().any(|f| f.property == property),
            "{news:?}: {:?}",
            c.failures
        );
    }
    // Unknowns pass Check.
    let c = check(STRING, map([("length", PropertyValue::Unknown)])).await;
    assert!(c.failures.is_empty());
}

#[tokio::test]
async fn string_results_use_the_requested_classes() {
    let all: String = [
        random::LOWER,
        random::UPPER,
        random::NUMERIC,
        random::SPECIAL,
    ]
    .concat();
    let r = create(STRING, map([("length", n(64))])).await;
    let result = s(&r.properties, "result");
    assert_eq!(result.chars().count(), 64);
    assert!(result.chars().all(|c| all.contains(c)));
    assert_eq!(r.id, result, "a RandomString's ID is its value");
    assert!(!matches!(r.properties["result"], PropertyValue::Secret(_)));

    let r = create(
        STRING,
        map([
            ("length", n(40)),
            ("special", false.into()),
            ("upper", false.into()),
        ]),
    )
    .await;
    let result = s(&r.properties, "result");
    assert!(result
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()));

    let r = create(
        STRING,
        map([
            ("length", n(12)),
            ("minUpper", n(4)),
            ("minNumeric", n(4)),
            ("minSpecial", n(3)),
            ("overrideSpecial", "/@£".into()),
            ("lower", false.into()),
        ]),
    )
    .await;
    let result = s(&r.properties, "result");
    let count = |f: fn(char) -> bool| result.chars().filter(|c| f(*c)).count();
    assert!(count(|c| c.is_ascii_uppercase()) >= 4, "{result}");
    assert!(count(|c| c.is_ascii_digit()) >= 4, "{result}");
    assert!(count(|c| "/@£".contains(c)) >= 3, "{result}");
    assert!(result.chars().all(|c| !c.is_ascii_lowercase()), "{result}");
}

#[tokio::test]
async fn password_outputs_are_secret_and_hashed() {
    let r = create(PASSWORD, map([("length", n(20))])).await;
    assert_eq!(r.id, "none");
    assert!(matches!(r.properties["result"], PropertyValue::Secret(_)));
    assert!(matches!(
        r.properties["bcryptHash"],
        PropertyValue::Secret(_)
    ));
    let password = s(&r.properties, "result");
    assert_eq!(password.len(), 20);
    let hash = s(&r.properties, "bcryptHash");
    assert!(hash.starts_with("$2b$10$"), "{hash}");
    assert!(bcrypt::verify(password, hash).unwrap());
}

#[tokio::test]
async fn integers_stay_in_range_and_seeds_repeat() {
    for _ in 0..50 {
        let r = create(INTEGER, map([("min", n(1)), ("max", n(3))])).await;
        let v = num(&r.properties, "result");
        assert!((1..=3).contains(&v));
        assert_eq!(r.id, v.to_string());
    }
    let seeded = || map([("min", n(0)), ("max", n(1_000_000)), ("seed", "abc".into())]);
    let a = create(INTEGER, seeded()).await;
    let b = create(INTEGER, seeded()).await;
    assert_eq!(a.properties["result"], b.properties["result"]);
    let c = check(INTEGER, map([("min", n(5)), ("max", n(1))])).await;
    assert_eq!(c.failures[0].property, "min");
}

#[tokio::test]
async fn pets_are_words_and_their_name_is_the_id() {
    let r = create(PET, map([])).await;
    assert_eq!(r.properties["length"], n(2));
    assert_eq!(r.properties["separator"], "-".into());
    let words: Vec<&str> = r.id.split('-').collect();
    assert_eq!(words.len(), 2, "{}", r.id);
    assert!(words
        .iter()
        .all(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_lowercase())));

    let r = create(
        PET,
        map([
            ("length", n(4)),
            ("separator", "_".into()),
            ("prefix", "app".into()),
        ]),
    )
    .await;
    let words: Vec<&str> = r.id.split('_').collect();
    assert_eq!(words.len(), 5, "{}", r.id);
    assert_eq!(words[0], "app");
    assert!(
        words[1].ends_with("ly") && words[2].ends_with("ly"),
        "{}",
        r.id
    );
}

#[tokio::test]
async fn uuids() {
    let r = create(UUID, map([])).await;
    let u = uuid::Uuid::parse_str(s(&r.properties, "result")).unwrap();
    assert_eq!(u.get_version_num(), 4);
    assert_eq!(r.id, s(&r.properties, "result"));
    let r = create(UUID7, map([])).await;
    let u = uuid::Uuid::parse_str(s(&r.properties, "result")).unwrap();
    assert_eq!(u.get_version_num(), 7);
}

#[tokio::test]
async fn ids_in_every_encoding() {
    let r = create(ID, map([("byteLength", n(8)), ("prefix", "p-".into())])).await;
    let bytes = URL_SAFE_NO_PAD.decode(&r.id).unwrap();
    assert_eq!(bytes.len(), 8);
    let p = &r.properties;
    assert_eq!(s(p, "b64Url"), format!("p-{}", r.id));
    assert_eq!(s(p, "b64Std"), format!("p-{}", STANDARD.encode(&bytes)));
    assert!(
        s(p, "b64Std").ends_with('='),
        "8 bytes pad to 12 characters"
    );
    assert_eq!(s(p, "hex"), format!("p-{}", hex::encode(&bytes)));
    let dec = u64::from_be_bytes(bytes.clone().try_into().unwrap());
    assert_eq!(s(p, "dec"), format!("p-{dec}"));
    let c = check(ID, map([("byteLength", n(0))])).await;
    assert_eq!(c.failures[0].property, "byteLength");
}

#[tokio::test]
async fn shuffles_permute_and_repeat_by_rounds() {
    let inputs = || PropertyValue::Array(vec!["a".into(), "b".into(), "c".into()]);
    let r = create(SHUFFLE, map([("inputs", inputs())])).await;
    assert_eq!(r.id, "-");
    let PropertyValue::Array(results) = &r.properties["results"] else {
        panic!()
    };
    let got: BTreeSet<&str> = results.iter().map(|v| v.as_str().unwrap()).collect();
    assert_eq!(got, BTreeSet::from(["a", "b", "c"]));

    let r = create(SHUFFLE, map([("inputs", inputs()), ("resultCount", n(5))])).await;
    let PropertyValue::Array(results) = &r.properties["results"] else {
        panic!()
    };
    assert_eq!(results.len(), 5);
    let first: BTreeSet<&str> = results[..3].iter().map(|v| v.as_str().unwrap()).collect();
    assert_eq!(first.len(), 3, "the first round is a permutation");

    let seeded = || map([("inputs", inputs()), ("seed", "x".into())]);
    let a = create(SHUFFLE, seeded()).await;
    let b = create(SHUFFLE, seeded()).await;
    assert_eq!(a.properties["results"], b.properties["results"]);
}

#[tokio::test]
async fn bytes_are_secret() {
    let r = create(BYTES, map([("length", n(32))])).await;
    assert_eq!(r.id, "none");
    for k in ["base64", "hex"] {
        assert!(matches!(r.properties[k], PropertyValue::Secret(_)), "{k}");
    }
    let b = STANDARD.decode(s(&r.properties, "base64")).unwrap();
    assert_eq!(b.len(), 32);
    assert_eq!(s(&r.properties, "hex"), hex::encode(&b));
}

#[tokio::test]
async fn preview_leaves_generated_values_unknown() {
    let checked = check(PASSWORD, map([("length", n(8))])).await;
    let r = provider()
        .create(CreateRequest {
            urn: urn(PASSWORD),
            properties: checked.inputs,
            timeout: None,
            preview: true,
            planned: None,
        })
        .await
        .unwrap();
    assert!(r.properties["result"].contains_unknowns());
    assert!(r.properties["bcryptHash"].contains_unknowns());
    assert_eq!(r.properties["length"], n(8));
}

#[tokio::test]
async fn every_input_change_replaces() {
    let keepers = |v: &str| PropertyValue::Object(map([("k", v.into())]));
    let old = create(STRING, map([("length", n(8)), ("keepers", keepers("a"))])).await;
    let olds = old.properties;

    let same = diff(
        STRING,
        &olds,
        map([("length", n(8)), ("keepers", keepers("a"))]),
    )
    .await;
    assert_eq!(same.changes, DiffChanges::None);
    assert!(!same.requires_replacement());

    // A secret with the same value is no change.
    let secret = PropertyValue::Object(map([("k", PropertyValue::secret("a".into()))]));
    let same = diff(STRING, &olds, map([("length", n(8)), ("keepers", secret)])).await;
    assert_eq!(same.changes, DiffChanges::None);

    let kinds = |d: &DiffResponse| -> Vec<(String, DiffKind)> {
        let detailed = d.detailed_diff.as_ref().unwrap();
        detailed.iter().map(|(k, v)| (k.clone(), v.kind)).collect()
    };
    let changed = diff(
        STRING,
        &olds,
        map([("length", n(8)), ("keepers", keepers("b"))]),
    )
    .await;
    assert_eq!(changed.changes, DiffChanges::Some);
    assert_eq!(
        kinds(&changed),
        [("keepers.k".to_owned(), DiffKind::UpdateReplace)]
    );
    assert_eq!(changed.replace_keys, ["keepers"]);

    let removed = diff(STRING, &olds, map([("length", n(8))])).await;
    assert_eq!(
        kinds(&removed),
        [("keepers".to_owned(), DiffKind::DeleteReplace)]
    );

    let longer = diff(
        STRING,
        &olds,
        map([
            ("length", n(9)),
            ("keepers", keepers("a")),
            ("overrideSpecial", "!".into()),
        ]),
    )
    .await;
    assert_eq!(
        kinds(&longer),
        [
            ("length".to_owned(), DiffKind::UpdateReplace),
            ("overrideSpecial".to_owned(), DiffKind::AddReplace),
        ]
    );

    // ignoreChanges skips the path.
    let checked = check(STRING, map([("length", n(9)), ("keepers", keepers("a"))])).await;
    let ignored = provider()
        .diff(DiffRequest {
            urn: urn(STRING),
            id: "x".into(),
            old_inputs: olds.clone(),
            old_outputs: olds.clone(),
            new_inputs: checked.inputs,
            ignore_changes: vec!["length".into()],
        })
        .await
        .unwrap();
    assert_eq!(ignored.changes, DiffChanges::None);

    let uuid = create(UUID, map([])).await.properties;
    let d = diff(UUID, &uuid, map([("keepers", keepers("a"))])).await;
    assert_eq!(kinds(&d), [("keepers".to_owned(), DiffKind::AddReplace)]);
}

#[tokio::test]
async fn read_returns_the_recorded_state() {
    let r = create(INTEGER, map([("min", n(1)), ("max", n(9))])).await;
    let read = provider()
        .read(ReadRequest {
            urn: urn(INTEGER),
            id: r.id.clone(),
            inputs: None,
            state: Some(r.properties.clone()),
            timeout: None,
        })
        .await
        .unwrap();
    assert_eq!(read.id, r.id);
    assert_eq!(read.properties, r.properties);
    assert_eq!(read.inputs, map([("min", n(1)), ("max", n(9))]));
}

#[tokio::test]
async fn import_by_id() {
    let r = import(STRING, "abc").await.unwrap();
    assert_eq!(r.id, "abc");
    assert_eq!(s(&r.properties, "result"), "abc");
    assert_eq!(r.inputs["length"], n(3));
    // The imported inputs are what Check makes of `length: 3`.
    assert_eq!(
        check(STRING, map([("length", n(3))])).await.inputs,
        r.inputs
    );

    let r = import(PASSWORD, "hunter2").await.unwrap();
    assert_eq!(r.id, "none");
    assert!(matches!(r.properties["result"], PropertyValue::Secret(_)));
    assert!(bcrypt::verify("hunter2", s(&r.properties, "bcryptHash")).unwrap());

    let r = import(INTEGER, "15390,1,50000").await.unwrap();
    assert_eq!(
        (r.id.as_str(), num(&r.properties, "result")),
        ("15390", 15390)
    );
    assert_eq!(r.inputs, map([("min", n(1)), ("max", n(50000))]));
    let r = import(INTEGER, "7,1,9,seed").await.unwrap();
    assert_eq!(r.inputs["seed"], "seed".into());
    assert!(import(INTEGER, "7,1").await.is_err());
    assert!(import(INTEGER, "x,1,2").await.is_err());

    let r = import(ID, "my-prefix-,p-9hUg").await.unwrap();
    assert_eq!(r.id, "p-9hUg");
    assert_eq!(
        r.inputs,
        map([("byteLength", n(4)), ("prefix", "my-prefix-".into())])
    );
    assert_eq!(s(&r.properties, "b64Url"), "my-prefix-p-9hUg");
    assert_eq!(s(&r.properties, "hex"), "my-prefix-a7ef6152");
    let r = import(ID, "p-9hUg").await.unwrap();
    assert_eq!(r.inputs, map([("byteLength", n(4))]));
    assert_eq!(s(&r.properties, "dec"), "2817483090");

    let u = "aabbccdd-eeff-0011-2233-445566778899";
    let r = import(UUID, u).await.unwrap();
    assert_eq!((r.id.as_str(), s(&r.properties, "result")), (u, u));
    assert!(import(UUID, "not-a-uuid").await.is_err());

    let r = import(BYTES, "8/fu3q+2DcgSJ19i0jZ5Cw==").await.unwrap();
    assert_eq!(r.inputs, map([("length", n(16))]));
    assert!(matches!(r.properties["hex"], PropertyValue::Secret(_)));
    assert_eq!(s(&r.properties, "hex"), "f3f7eedeafb60dc812275f62d236790b");

    let err = import(BYTES, "not base64!").await.unwrap_err().to_string();
    assert!(!err.contains("not base64!"), "{err}");

    assert!(import(PET, "happy-cat").await.is_err());
    assert!(import(SHUFFLE, "-").await.is_err());
}

#[tokio::test]
async fn the_loader_serves_random_4() {
    let loader = BuiltinLoader::new();
    let v = |s: &str| semver::Version::parse(s).unwrap();
    let p = loader.load("random", Some(&v("4.16.0"))).await.unwrap();
    assert_eq!(p.package(), "random");
    let info = p.plugin_info().await.unwrap();
    assert_eq!(info.version.unwrap().major, 4);
    assert!(loader.load("random", None).await.is_ok());
    assert!(matches!(
        loader.load("random", Some(&v("3.6.0"))).await,
        Err(RegistryError::NotFound { .. })
    ));
    assert!(loader.load("aws", None).await.is_err());
    let _: Arc<dyn Provider> = builtin::provider("random").unwrap();
}

#[tokio::test]
async fn the_schema_names_every_resource_and_secret() {
    let schema = builtin::schema("random").unwrap();
    assert_eq!(schema["name"], "random");
    assert!(schema["version"].as_str().unwrap().starts_with("4."));
    for token in random::TOKENS {
        let r = &schema["resources"][token];
        assert!(r.is_object(), "{token}");
        assert!(r["inputProperties"]["keepers"].is_object(), "{token}");
    }
    let password = &schema["resources"][PASSWORD];
    assert_eq!(password["properties"]["result"]["secret"], true);
    assert_eq!(password["properties"]["bcryptHash"]["secret"], true);
    assert_eq!(password["requiredInputs"], serde_json::json!(["length"]));
    assert_eq!(password["inputProperties"]["minLower"]["type"], "integer");
    let bytes = &schema["resources"][BYTES]["properties"];
    assert_eq!(
        (&bytes["base64"]["secret"], &bytes["hex"]["secret"]),
        (&true.into(), &true.into())
    );
    assert_eq!(
        schema["resources"][ID]["requiredInputs"],
        serde_json::json!(["byteLength"])
    );
    assert!(builtin::schema("nope").is_none());
}
