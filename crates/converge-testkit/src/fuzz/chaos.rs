//! Providers that fail and answer at random: a [`MockProvider`] (whose
//! defaults keep the cloud consistent) with random closures, wrapped in a
//! provider that injects failures before any change, yields to shake the
//! interleaving, and can signal after a number of calls (crash tests).
//!
//! Every random decision is a hash of the seed, the RPC, the URN and how
//! many times that RPC was made for that URN, so it does not depend on the
//! order in which concurrent steps reach the provider.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use converge_model::Urn;
use converge_plugin::{
    CheckFailure, CheckRequest, CheckResponse, ConfigureRequest, CreateRequest, CreateResponse,
    DeleteRequest, DiffChanges, DiffConfigRequest, DiffRequest, DiffResponse, InvokeRequest,
    InvokeResponse, PluginInfo, Provider, ProviderError, ReadRequest, ReadResponse, UpdateRequest,
    UpdateResponse,
};
use tokio::sync::Notify;

use super::spec::PACKAGES;
use super::{mix, Rng};
use crate::{MockCloud, MockLoader, MockProvider};

/// How `Diff` answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiffMode {
    /// [`MockProvider`]'s default: compares old and new inputs.
    Inputs,
    /// `DiffChanges::Unknown`: the engine compares inputs itself.
    Unknown,
    /// At random per call, by weight: no change, update, replace, replace
    /// with deleteBeforeReplace — whatever the inputs.
    Random([u32; 4]),
}

/// How the providers of an operation behave. Failures happen before the
/// provider changes anything, as the provider contract requires, except
/// partial creations, which report the object they made.
#[derive(Debug, Clone, PartialEq)]
pub struct Behaviour {
    pub seed: u64,
    /// Percent of Create, Read, Update and Delete calls that fail.
    pub fail_percent: u32,
    /// Percent of Creates that make the object, then fail to initialise it
    /// (`PartialFailure`).
    pub partial_percent: u32,
    /// Percent of Check, CheckConfig, Diff, DiffConfig and Configure calls
    /// that fail.
    pub rpc_fail_percent: u32,
    /// Percent of Checks that reject the inputs.
    pub check_failures_percent: u32,
    pub diff: DiffMode,
    /// Percent of DiffConfig calls that require replacing the provider.
    pub diff_config_replace_percent: u32,
    /// Yield to the scheduler a random number of times in every call.
    pub jitter: bool,
}

impl Behaviour {
    /// Providers that never fail and diff inputs.
    pub fn calm(seed: u64) -> Self {
        Behaviour {
            seed,
            fail_percent: 0,
            partial_percent: 0,
            rpc_fail_percent: 0,
            check_failures_percent: 0,
            diff: DiffMode::Inputs,
            diff_config_replace_percent: 0,
            jitter: false,
        }
    }

    pub fn random(rng: &mut Rng, seed: u64) -> Self {
        let diff = match rng.weighted(&[30, 20, 50]) {
            0 => DiffMode::Inputs,
            1 => DiffMode::Unknown,
            _ => DiffMode::Random([
                rng.range(0, 5) as u32,
                rng.range(0, 5) as u32,
                rng.range(1, 4) as u32,
                rng.range(0, 3) as u32,
            ]),
        };
        Behaviour {
            seed,
            fail_percent: *rng.pick(&[0, 0, 2, 5, 15]),
            partial_percent: *rng.pick(&[0, 0, 0, 3, 10]),
            rpc_fail_percent: *rng.pick(&[0, 0, 1, 4]),
            check_failures_percent: *rng.pick(&[0, 0, 0, 3]),
            diff,
            diff_config_replace_percent: *rng.pick(&[0, 0, 0, 10, 30]),
            jitter: rng.chance(70),
        }
    }

    /// A loader serving one provider per fuzzed package (`pkga`, `pkgb`), all over
    /// `cloud`. `signal`, if any, hears of every provider call.
    pub fn loader(&self, cloud: &Arc<MockCloud>, signal: Option<Arc<CallSignal>>) -> MockLoader {
        let dice = Arc::new(Dice {
            seed: self.seed,
            counts: Mutex::new(HashMap::new()),
        });
        let mut loader = MockLoader::new();
        for package in PACKAGES {
            let provider: Arc<dyn Provider> = Arc::new(ChaosProvider {
                inner: self.mock(package, cloud, &dice),
                behaviour: self.clone(),
                dice: Arc::clone(&dice),
                signal: signal.clone(),
            });
            loader = loader.with_factory(package, semver::Version::new(1, 0, 0), move || {
                Arc::clone(&provider)
            });
        }
        loader
    }

    /// The mock provider behind the failures: random diffs and partial
    /// creations.
    fn mock(
        &self,
        package: &'static str,
        cloud: &Arc<MockCloud>,
        dice: &Arc<Dice>,
    ) -> MockProvider {
        let mut p = MockProvider::new(package).with_cloud(Arc::clone(cloud));
        match self.diff {
            DiffMode::Inputs => {}
            DiffMode::Unknown => {
                p = p.on_diff(|_| {
                    Ok(DiffResponse {
                        changes: DiffChanges::Unknown,
                        ..DiffResponse::default()
                    })
                });
            }
            DiffMode::Random(weights) => {
                let dice = Arc::clone(dice);
                p = p.on_diff(move |req| {
                    let mut rng = Rng::new(dice.roll("diff-answer", &req.urn));
                    Ok(diff_answer(rng.weighted(&weights)))
                });
            }
        }
        if self.diff_config_replace_percent > 0 {
            let (dice, percent) = (Arc::clone(dice), self.diff_config_replace_percent);
            p = p.on_diff_config(move |req| {
                if dice.percent("diff-config-answer", &req.urn) < percent {
                    return Ok(diff_answer(2));
                }
                Ok(DiffResponse {
                    changes: DiffChanges::Unknown,
                    ..DiffResponse::default()
                })
            });
        }
        if self.check_failures_percent > 0 {
            let (dice, percent) = (Arc::clone(dice), self.check_failures_percent);
            p = p.on_check(move |req| {
                let failures = if dice.percent("check-answer", &req.urn) < percent {
                    vec![CheckFailure {
                        property: "v".to_owned(),
                        reason: "injected: invalid value".to_owned(),
                    }]
                } else {
                    Vec::new()
                };
                Ok(CheckResponse {
                    inputs: req.news,
                    failures,
                })
            });
        }
        if self.partial_percent > 0 {
            let (dice, percent) = (Arc::clone(dice), self.partial_percent);
            let cloud = Arc::clone(cloud);
            p = p.on_create(move |req| {
                if req.preview {
                    return Ok(CreateResponse {
                        id: String::new(),
                        properties: req.properties,
                    });
                }
                let id = cloud.insert(&req.urn, package, req.properties.clone());
                if dice.percent("create-partial", &req.urn) < percent {
                    return Err(ProviderError::PartialFailure {
                        id,
                        properties: req.properties,
                        reasons: vec!["injected: did not initialise".to_owned()],
                    });
                }
                Ok(CreateResponse {
                    id,
                    properties: req.properties,
                })
            });
        }
        p
    }
}

/// The `Diff` answers of [`DiffMode::Random`], by index.
fn diff_answer(kind: usize) -> DiffResponse {
    let key = vec!["v".to_owned()];
    match kind {
        0 => DiffResponse::none(),
        1 => DiffResponse {
            changes: DiffChanges::Some,
            changed_keys: key,
            ..DiffResponse::default()
        },
        _ => DiffResponse {
            changes: DiffChanges::Some,
            changed_keys: key.clone(),
            replace_keys: key,
            delete_before_replace: kind == 3,
            ..DiffResponse::default()
        },
    }
}

impl fmt::Display for Behaviour {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "fail {}% of create/read/update/delete, {}% of check/diff/configure; \
             {}% of creates partial; {}% of checks reject inputs; ",
            self.fail_percent,
            self.rpc_fail_percent,
            self.partial_percent,
            self.check_failures_percent
        )?;
        match self.diff {
            DiffMode::Inputs => write!(f, "Diff compares inputs")?,
            DiffMode::Unknown => write!(f, "Diff answers Unknown")?,
            DiffMode::Random([n, u, r, d]) => write!(
                f,
                "Diff answers at random (weights: none {n}, update {u}, replace {r}, \
                 replace deleteBeforeReplace {d})"
            )?,
        }
        write!(
            f,
            "; {}% of DiffConfigs replace{}",
            self.diff_config_replace_percent,
            if self.jitter { "; jitter" } else { "" }
        )
    }
}

/// Seeded per-call decisions.
#[derive(Debug)]
struct Dice {
    seed: u64,
    counts: Mutex<HashMap<(&'static str, String), u64>>,
}

impl Dice {
    fn roll(&self, what: &'static str, urn: &Urn) -> u64 {
        let n = {
            let mut counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
            let n = counts.entry((what, urn.to_string())).or_insert(0);
            *n += 1;
            *n
        };
        mix(self.seed, &[what, urn.as_str(), &n.to_string()])
    }

    fn percent(&self, what: &'static str, urn: &Urn) -> u32 {
        (self.roll(what, urn) % 100) as u32
    }
}

/// Counts provider calls and notifies once the count reaches `after`.
#[derive(Debug)]
pub struct CallSignal {
    calls: AtomicUsize,
    after: usize,
    notify: Notify,
}

impl CallSignal {
    pub fn new(after: usize) -> Arc<CallSignal> {
        Arc::new(CallSignal {
            calls: AtomicUsize::new(0),
            after,
            notify: Notify::new(),
        })
    }

    /// Completes once `after` calls have been made (at once if they have).
    pub async fn reached(&self) {
        self.notify.notified().await;
    }

    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    fn hit(&self) {
        if self.calls.fetch_add(1, Ordering::SeqCst) + 1 == self.after {
            self.notify.notify_one();
        }
    }
}

#[derive(Debug)]
struct ChaosProvider {
    inner: MockProvider,
    behaviour: Behaviour,
    dice: Arc<Dice>,
    signal: Option<Arc<CallSignal>>,
}

impl ChaosProvider {
    /// Before every call: count it, jitter, maybe fail it.
    async fn enter(&self, rpc: &'static str, urn: &Urn, percent: u32) -> Result<(), ProviderError> {
        if let Some(s) = &self.signal {
            s.hit();
        }
        let roll = self.dice.roll(rpc, urn);
        if self.behaviour.jitter {
            for _ in 0..(roll >> 32) % 4 {
                tokio::task::yield_now().await;
            }
        }
        if roll % 100 < u64::from(percent) {
            return Err(ProviderError::Failed(format!(
                "injected failure: {rpc} of {urn}"
            )));
        }
        Ok(())
    }

    fn mutations(&self) -> u32 {
        self.behaviour.fail_percent
    }

    fn rpcs(&self) -> u32 {
        self.behaviour.rpc_fail_percent
    }
}

fn configure_urn(req: &ConfigureRequest) -> Urn {
    req.urn.clone().unwrap_or_else(|| {
        Urn::parse("urn:pulumi:test::proj::pulumi:providers:unknown::unknown").expect("a valid URN")
    })
}

#[async_trait]
impl Provider for ChaosProvider {
    fn package(&self) -> &str {
        self.inner.package()
    }

    async fn plugin_info(&self) -> Result<PluginInfo, ProviderError> {
        self.inner.plugin_info().await
    }

    async fn check_config(&self, req: CheckRequest) -> Result<CheckResponse, ProviderError> {
        self.enter("check-config", &req.urn, self.rpcs()).await?;
        self.inner.check_config(req).await
    }

    async fn diff_config(&self, req: DiffConfigRequest) -> Result<DiffResponse, ProviderError> {
        self.enter("diff-config", &req.urn, self.rpcs()).await?;
        self.inner.diff_config(req).await
    }

    async fn configure(&self, req: ConfigureRequest) -> Result<(), ProviderError> {
        self.enter("configure", &configure_urn(&req), self.rpcs())
            .await?;
        self.inner.configure(req).await
    }

    async fn check(&self, req: CheckRequest) -> Result<CheckResponse, ProviderError> {
        self.enter("check", &req.urn, self.rpcs()).await?;
        self.inner.check(req).await
    }

    async fn diff(&self, req: DiffRequest) -> Result<DiffResponse, ProviderError> {
        self.enter("diff", &req.urn, self.rpcs()).await?;
        self.inner.diff(req).await
    }

    async fn create(&self, req: CreateRequest) -> Result<CreateResponse, ProviderError> {
        self.enter("create", &req.urn, self.mutations()).await?;
        self.inner.create(req).await
    }

    async fn read(&self, req: ReadRequest) -> Result<ReadResponse, ProviderError> {
        self.enter("read", &req.urn, self.mutations()).await?;
        self.inner.read(req).await
    }

    async fn update(&self, req: UpdateRequest) -> Result<UpdateResponse, ProviderError> {
        self.enter("update", &req.urn, self.mutations()).await?;
        self.inner.update(req).await
    }

    async fn delete(&self, req: DeleteRequest) -> Result<(), ProviderError> {
        self.enter("delete", &req.urn, self.mutations()).await?;
        self.inner.delete(req).await
    }

    async fn invoke(&self, req: InvokeRequest) -> Result<InvokeResponse, ProviderError> {
        self.inner.invoke(req).await
    }
}
