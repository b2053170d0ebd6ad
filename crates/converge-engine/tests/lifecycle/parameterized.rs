//! Parameterized packages: a program registers packages that one base
//! plugin serves once parameterized (`RegisterPackage`), and each package
//! gets providers of its own — the base plugin loaded, told its
//! parameterization (`Parameterize`), then configured — recorded in the
//! provider's inputs as Pulumi records them.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use converge_engine::StepOp;
use converge_model::{PropertyMap, PropertyValue, Urn};
use converge_plugin::parameterization::{PackageDescriptor, Parameterization, INTERNAL_KEY};
use converge_plugin::{
    ConfigureRequest, CreateRequest, CreateResponse, DeleteRequest, InvokeRequest, InvokeResponse,
    ParameterizeRequest, ParameterizeResponse, Provider, ProviderError, ReadRequest, ReadResponse,
    UpdateRequest, UpdateResponse,
};
use converge_testkit::{custom, program, register_stack, MockCloud, MockLoader, TestProgram};

use super::*;

/// What the instances of the base plugin were told, in order.
#[derive(Debug, Default)]
struct Log {
    /// Instance number → the package it became.
    parameterized: Vec<(usize, String)>,
    /// Instance number → the configuration it was given.
    configured: Vec<(usize, PropertyMap)>,
    instances: usize,
}

/// One process of the base plugin `base`: it serves whatever package
/// `Parameterize` makes it, tagging what it creates with that package,
/// its parameter and its own instance number.
#[derive(Debug)]
struct Base {
    number: usize,
    log: Arc<Mutex<Log>>,
    cloud: Arc<MockCloud>,
    /// The package and parameter it became; `answer` overrides the name it
    /// reports back.
    became: Mutex<Option<(String, String)>>,
    answer: Option<String>,
}

impl Base {
    fn tagged(&self, mut properties: PropertyMap) -> Result<PropertyMap, ProviderError> {
        let became = self.became.lock().unwrap().clone();
        let Some((package, value)) = became else {
            return Err(ProviderError::failed("not parameterized"));
        };
        properties.insert("servedAs".to_owned(), package.into());
        properties.insert("parameter".to_owned(), value.into());
        properties.insert("instance".to_owned(), self.number.to_string().into());
        Ok(properties)
    }
}

#[async_trait]
impl Provider for Base {
    fn package(&self) -> &str {
        "base"
    }

    async fn parameterize(
        &self,
        req: ParameterizeRequest,
    ) -> Result<ParameterizeResponse, ProviderError> {
        let ParameterizeRequest::Value(p) = req else {
            return Err(ProviderError::failed("expected a recorded value"));
        };
        let value = String::from_utf8(p.value).map_err(ProviderError::failed)?;
        *self.became.lock().unwrap() = Some((p.name.clone(), value));
        self.log
            .lock()
            .unwrap()
            .parameterized
            .push((self.number, p.name.clone()));
        Ok(ParameterizeResponse {
            name: self.answer.clone().unwrap_or(p.name),
            version: p.version.to_string(),
        })
    }

    async fn configure(&self, req: ConfigureRequest) -> Result<(), ProviderError> {
        self.log
            .lock()
            .unwrap()
            .configured
            .push((self.number, req.inputs));
        Ok(())
    }

    async fn create(&self, req: CreateRequest) -> Result<CreateResponse, ProviderError> {
        let properties = self.tagged(req.properties)?;
        if req.preview {
            return Ok(CreateResponse {
                id: String::new(),
                properties,
            });
        }
        let id = self.cloud.insert(&req.urn, "base", properties.clone());
        Ok(CreateResponse { id, properties })
    }

    async fn read(&self, req: ReadRequest) -> Result<ReadResponse, ProviderError> {
        Ok(ReadResponse {
            id: req.id,
            inputs: req.inputs.unwrap_or_default(),
            properties: req.state.unwrap_or_default(),
        })
    }

    async fn update(&self, req: UpdateRequest) -> Result<UpdateResponse, ProviderError> {
        let properties = self.tagged(req.new_inputs)?;
        self.cloud.set_properties(&req.id, properties.clone())?;
        Ok(UpdateResponse { properties })
    }

    async fn delete(&self, req: DeleteRequest) -> Result<(), ProviderError> {
        self.cloud.remove(&req.id).map(|_| ())
    }

    async fn invoke(&self, req: InvokeRequest) -> Result<InvokeResponse, ProviderError> {
        Ok(InvokeResponse {
            outputs: self.tagged(req.args)?,
            failures: Vec::new(),
        })
    }
}

/// A loader whose every load of `base` 1.0.0 is a new instance (a new
/// process), answering `Parameterize` with `answer` when given.
fn loader(cloud: &Arc<MockCloud>, log: &Arc<Mutex<Log>>, answer: Option<&str>) -> MockLoader {
    let (cloud, log) = (cloud.clone(), log.clone());
    let answer = answer.map(str::to_owned);
    MockLoader::new().with_factory("base", semver::Version::new(1, 0, 0), move || {
        let number = {
            let mut l = log.lock().unwrap();
            l.instances += 1;
            l.instances
        };
        Arc::new(Base {
            number,
            log: log.clone(),
            cloud: cloud.clone(),
            became: Mutex::new(None),
            answer: answer.clone(),
        })
    })
}

fn package(name: &str, value: &str) -> PackageDescriptor {
    PackageDescriptor {
        plugin: "base".to_owned(),
        plugin_version: Some(semver::Version::new(1, 0, 0)),
        parameterization: Some(Parameterization {
            name: name.to_owned(),
            version: semver::Version::new(2, 0, 0),
            value: value.as_bytes().to_vec(),
        }),
    }
}

/// Packages `alpha` and `beta` of plugin `base`: `a1` and `a2` of alpha
/// and `b1` of beta on their default providers, `b2` of beta on an
/// explicit provider `explicit` configured with `region`.
fn side_by_side() -> TestProgram {
    program(|m| async move {
        let stack = register_stack(&m).await?;
        for (name, value) in [("alpha", "A"), ("beta", "B")] {
            m.register_package(package(name, value))
                .map_err(|e| e.to_string())?;
        }
        for (ty, name) in [
            ("alpha:index:Thing", "a1"),
            ("alpha:index:Thing", "a2"),
            ("beta:index:Thing", "b1"),
        ] {
            reg(&m, &stack, custom(ty, name, inputs(&[("k", name)]))).await?;
        }
        let explicit = reg(
            &m,
            &stack,
            custom(
                "pulumi:providers:beta",
                "explicit",
                inputs(&[("region", "north")]),
            ),
        )
        .await?;
        let mut b2 = custom("beta:index:Thing", "b2", inputs(&[("k", "b2")]));
        b2.provider = Some(format!(
            "{}::{}",
            explicit.urn,
            explicit.id.unwrap_or_default()
        ));
        reg(&m, &stack, b2).await?;
        Ok(())
    })
}

fn out<'a>(w: &'a converge_testkit::Lifecycle, name: &str, key: &str) -> &'a PropertyValue {
    let r = w
        .resource(name)
        .unwrap_or_else(|| panic!("{name} is not in the state"));
    r.outputs
        .get(key)
        .unwrap_or_else(|| panic!("{name} has no {key}"))
}

#[tokio::test]
async fn two_parameterizations_of_one_plugin_each_get_their_own_provider() {
    let cloud = MockCloud::new();
    let log = Arc::new(Mutex::new(Log::default()));
    let mut w =
        converge_testkit::Lifecycle::new(cloud.clone(), Arc::new(loader(&cloud, &log, None)));
    // A preview already runs each package on its own parameterized plugin.
    let preview = w.preview(&side_by_side()).await;
    expect_ok(&preview);
    assert_eq!(ops_of(&preview, "b2"), [StepOp::Create]);
    expect_ok(&w.up(&side_by_side()).await);

    for (name, package, parameter) in [
        ("a1", "alpha", "A"),
        ("a2", "alpha", "A"),
        ("b1", "beta", "B"),
        ("b2", "beta", "B"),
    ] {
        assert_eq!(out(&w, name, "servedAs"), &s(package), "{name}");
        assert_eq!(out(&w, name, "parameter"), &s(parameter), "{name}");
    }
    // One instance serves both resources of alpha's default provider;
    // beta's default provider and the explicit one have their own.
    assert_eq!(out(&w, "a1", "instance"), out(&w, "a2", "instance"));
    let instances = [
        out(&w, "a1", "instance"),
        out(&w, "b1", "instance"),
        out(&w, "b2", "instance"),
    ];
    assert_ne!(instances[0], instances[1]);
    assert_ne!(instances[1], instances[2]);
    assert_ne!(instances[0], instances[2]);

    // The default provider's state is Pulumi's: the package version as
    // `version`, the plugin and the parameter under `__internal`; its
    // outputs and the plugin's configuration leave `__internal` out.
    let alpha = w
        .snapshot
        .resources
        .iter()
        .find(|r| r.urn.type_token() == "pulumi:providers:alpha")
        .expect("alpha's default provider");
    assert_eq!(alpha.urn.name(), "default_2_0_0");
    assert_eq!(alpha.inputs.get("version"), Some(&s("2.0.0")));
    let internal = |r: &converge_model::ResourceState| match r.inputs.get(INTERNAL_KEY) {
        Some(PropertyValue::Object(m)) => m.clone(),
        other => panic!("{}: __internal is {other:?}", r.urn),
    };
    let recorded = internal(alpha);
    assert_eq!(recorded.get("name"), Some(&s("base")));
    assert_eq!(recorded.get("version"), Some(&s("1.0.0")));
    assert_eq!(recorded.get("parameterization"), Some(&s("QQ==")));
    assert!(
        !alpha.outputs.contains_key(INTERNAL_KEY),
        "{:?}",
        alpha.outputs
    );
    let explicit = w.resource("explicit").unwrap();
    assert_eq!(internal(explicit).get("parameterization"), Some(&s("Qg==")));
    assert_eq!(explicit.inputs.get("region"), Some(&s("north")));
    {
        let l = log.lock().unwrap();
        for (_, config) in &l.configured {
            assert!(!config.contains_key(INTERNAL_KEY), "{config:?}");
        }
        assert!(
            l.configured
                .iter()
                .any(|(_, c)| c.get("region") == Some(&s("north"))),
            "{:?}",
            l.configured
        );
    }
    // Every resource names the provider of its own package.
    let provider_type = |name: &str| {
        w.resource(name)
            .and_then(|r| r.provider.as_ref())
            .map(|p| p.urn.type_token().to_owned())
    };
    assert_eq!(
        provider_type("a2").as_deref(),
        Some("pulumi:providers:alpha")
    );
    assert_eq!(
        provider_type("b1").as_deref(),
        Some("pulumi:providers:beta")
    );

    // Run again: nothing changes, and each provider is parameterized again
    // from what its state records.
    let before = w.snapshot.resources.clone();
    log.lock().unwrap().parameterized.clear();
    let again = w.up(&side_by_side()).await;
    expect_ok(&again);
    for (name, op) in all_ops(&again) {
        assert_eq!(op, StepOp::Same, "{name} changed on the second run");
    }
    assert_eq!(w.snapshot.resources, before);
    let mut told: Vec<String> = log
        .lock()
        .unwrap()
        .parameterized
        .iter()
        .map(|(_, p)| p.clone())
        .collect();
    told.sort();
    told.dedup();
    assert_eq!(told, ["alpha", "beta"]);
}

#[tokio::test]
async fn a_plugin_that_becomes_another_package_is_refused_naming_both() {
    let cloud = MockCloud::new();
    let log = Arc::new(Mutex::new(Log::default()));
    let mut w = converge_testkit::Lifecycle::new(
        cloud.clone(),
        Arc::new(loader(&cloud, &log, Some("gamma"))),
    );
    let r = w.up(&side_by_side()).await;
    let e = r.error.expect("the update fails").to_string();
    assert!(e.contains("answered gamma"), "{e}");
    assert!(e.contains("package alpha"), "{e}");
    assert!(cloud.is_empty());
}

#[tokio::test]
async fn one_package_name_registered_as_two_packages_is_refused() {
    let cloud = MockCloud::new();
    let log = Arc::new(Mutex::new(Log::default()));
    let mut w =
        converge_testkit::Lifecycle::new(cloud.clone(), Arc::new(loader(&cloud, &log, None)));
    let twice = program(|m| async move {
        register_stack(&m).await?;
        m.register_package(package("alpha", "A"))
            .map_err(|e| e.to_string())?;
        // The same package again is fine.
        m.register_package(package("alpha", "A"))
            .map_err(|e| e.to_string())?;
        m.register_package(package("alpha", "other"))
            .map_err(|e| e.to_string())
    });
    let r = w.up(&twice).await;
    let e = r.error.expect("the update fails").to_string();
    assert!(e.contains("package alpha is registered twice"), "{e}");
}

#[tokio::test]
async fn a_recorded_parameterization_that_is_not_base64_fails_naming_the_provider() {
    let cloud = MockCloud::new();
    let log = Arc::new(Mutex::new(Log::default()));
    let mut w =
        converge_testkit::Lifecycle::new(cloud.clone(), Arc::new(loader(&cloud, &log, None)));
    let broken = program(|m| async move {
        let stack = register_stack(&m).await?;
        let mut internal = PropertyMap::new();
        internal.insert("name".to_owned(), s("base"));
        internal.insert("parameterization".to_owned(), s("%%%"));
        let mut config = inputs(&[("version", "2.0.0")]);
        config.insert(INTERNAL_KEY.to_owned(), PropertyValue::Object(internal));
        reg(&m, &stack, custom("pulumi:providers:alpha", "p", config)).await?;
        Ok(())
    });
    let r = w.up(&broken).await;
    let e = r.error.expect("the update fails").to_string();
    assert!(e.contains("not base64"), "{e}");
    let urn: Urn = Urn::parse("urn:pulumi:test::proj::pulumi:providers:alpha::p").unwrap();
    assert!(e.contains(urn.as_str()), "{e}");
}

/// A registered package's functions run on its default provider, the base
/// plugin parameterized as that package, like its resources.
#[tokio::test]
async fn a_parameterized_packages_function_runs_on_its_own_provider() {
    let cloud = MockCloud::new();
    let log = Arc::new(Mutex::new(Log::default()));
    let mut w =
        converge_testkit::Lifecycle::new(cloud.clone(), Arc::new(loader(&cloud, &log, None)));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let recorded = seen.clone();
    let p = program(move |m| {
        let recorded = recorded.clone();
        async move {
            register_stack(&m).await?;
            for (name, value) in [("alpha", "A"), ("beta", "B")] {
                m.register_package(package(name, value))
                    .map_err(|e| e.to_string())?;
            }
            for token in ["alpha:index:fn", "beta:index:fn"] {
                let got = m
                    .invoke(converge_engine::InvokeGoal {
                        token: token.to_owned(),
                        args: PropertyMap::new(),
                        provider: None,
                        version: None,
                    })
                    .await
                    .map_err(|e| e.to_string())?;
                recorded.lock().unwrap().push(got.outputs);
            }
            Ok(())
        }
    });
    expect_ok(&w.up(&p).await);
    let seen = seen.lock().unwrap();
    let served: Vec<(&str, &str)> = seen
        .iter()
        .map(|o| {
            (
                o["servedAs"].as_str().unwrap(),
                o["parameter"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(served, [("alpha", "A"), ("beta", "B")]);
    assert!(w.snapshot.resources.iter().any(|r| r
        .urn
        .as_str()
        .ends_with("pulumi:providers:alpha::default_2_0_0")));
}
