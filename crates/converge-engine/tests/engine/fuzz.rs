//! Lifecycle fuzzing (`converge_testkit::fuzz`): random prior state, random
//! new program, providers failing and diffing at random, one random
//! operation. Every case must leave a snapshot whose every journal prefix
//! verifies and that tracks every object in the cloud, whether or not the
//! operation succeeded.
//!
//! - `CONVERGE_FUZZ_CASES`: how many fixtures (default 2000).
//! - `CONVERGE_FUZZ_START`: the first seed (default 0).
//! - `FUZZ_SEED=<n>`: run only that fixture and print its description.
//! - `CONVERGE_FUZZ_ENABLE=renames,…|all`: also fuzz what triggers known
//!   engine bugs (see `converge_testkit::fuzz::Config`).

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use converge_engine::{OperationResult, StepOp};
use converge_testkit::fuzz::{self, Config, Fixture, OpKind};

fn env_u64(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .parse()
            .unwrap_or_else(|e| panic!("{name}={v:?}: {e}")),
        Err(_) => default,
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_else(|| "(a panic without a message)".to_owned())
}

/// What the fixtures' operations did, to see what the fuzzer covers.
#[derive(Debug, Default)]
struct Stats {
    /// Operation kind → (succeeded, failed).
    operations: BTreeMap<String, (usize, usize)>,
    steps: BTreeMap<StepOp, usize>,
}

impl Stats {
    fn add(&mut self, kind: OpKind, result: &OperationResult) {
        let entry = self
            .operations
            .entry(format!("{kind:?}").to_lowercase())
            .or_default();
        if result.error.is_some() {
            entry.1 += 1;
        } else {
            entry.0 += 1;
        }
        for (op, n) in result.plan.counts() {
            *self.steps.entry(op).or_default() += n;
        }
    }
}

impl std::fmt::Display for Stats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (kind, (ok, failed)) in &self.operations {
            write!(f, "{kind}: {ok} ok, {failed} failed; ")?;
        }
        let steps: Vec<String> = self
            .steps
            .iter()
            .map(|(op, n)| format!("{op} {n}"))
            .collect();
        write!(f, "steps: {}", steps.join(", "))
    }
}

/// Runs one fixture on a fresh single-threaded runtime (so the run is
/// deterministic); `Err` is the message of the check that failed.
fn run_seed(seed: u64, stats: &Mutex<Stats>) -> Result<(), String> {
    let fixture = Fixture::generate_with(seed, Config::from_env());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime");
    let result = catch_unwind(AssertUnwindSafe(|| runtime.block_on(fuzz::run(&fixture))))
        .map_err(|p| format!("in {}: {}", fuzz::phase(), panic_message(p.as_ref())))?;
    stats.lock().unwrap().add(fixture.operation.kind, &result);
    Ok(())
}

/// A failure message without the journal dump.
fn headline(message: &str) -> &str {
    message.split("\nentries:").next().unwrap_or(message)
}

#[test]
fn lifecycle_fuzz() {
    if let Ok(seed) = std::env::var("FUZZ_SEED") {
        let seed: u64 = seed.trim().parse().expect("FUZZ_SEED is a number");
        let fixture = Fixture::generate_with(seed, Config::from_env());
        println!("{fixture}");
        let stats = Mutex::default();
        if let Err(e) = run_seed(seed, &stats) {
            panic!("{fixture}\nfailed: {e}");
        }
        println!("passed: {}", stats.into_inner().unwrap());
        return;
    }
    let cases = env_u64("CONVERGE_FUZZ_CASES", 2000);
    let start = env_u64("CONVERGE_FUZZ_START", 0);
    let workers = std::thread::available_parallelism()
        .map_or(2, usize::from)
        .min(cases.max(1) as usize);
    let began = Instant::now();
    let next = AtomicUsize::new(0);
    let failures: Mutex<Vec<(u64, String)>> = Mutex::new(Vec::new());
    let stats = Mutex::new(Stats::default());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::SeqCst) as u64;
                if k >= cases || failures.lock().unwrap().len() >= 20 {
                    return;
                }
                if let Err(e) = run_seed(start + k, &stats) {
                    failures.lock().unwrap().push((start + k, e));
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    println!(
        "{cases} fixtures from seed {start} in {:.1?} on {workers} threads \
         (left out: {:?})",
        began.elapsed(),
        Config::from_env().left_out()
    );
    println!("{}", stats.into_inner().unwrap());
    if failures.is_empty() {
        return;
    }
    let mut failures = failures;
    failures.sort();
    for (seed, message) in &failures {
        println!("seed {seed}: {}", headline(message));
    }
    // Show the smallest failing fixture in full: the easiest to read.
    let (seed, message) = failures
        .iter()
        .min_by_key(|(seed, _)| {
            Fixture::generate_with(*seed, Config::from_env())
                .to_string()
                .len()
        })
        .expect("not empty");
    panic!(
        "{} fixtures failed (seeds above).\n\nThe smallest:\n{}\nfailed {}\n\
         (run it alone with FUZZ_SEED={seed} to see the journal)",
        failures.len(),
        Fixture::generate_with(*seed, Config::from_env()),
        headline(message)
    );
}

/// The smallest reproductions of the engine bugs the fuzzer found: once
/// fixed, regression tests; while open, `#[ignore]`d, and
/// `Config::known_good` leaves out what triggers them. When a bug is fixed,
/// un-ignore its test and turn its `Config` flag on.
mod found_by_fuzzing {
    use std::sync::Arc;

    use converge_engine::{EventSink, OperationContext};
    use converge_model::{PropertyValue, Urn};
    use converge_state::journal::JournalEntryKind;
    use converge_testkit::fuzz::FaultySink;
    use converge_testkit::{
        check_journal, component, custom, program, register_stack, CloudOp, Lifecycle, MockCloud,
        MockLoader, MockProvider, TestProgram,
    };

    const T: &str = "pkg:index:Thing";

    fn world() -> (Lifecycle, Arc<MockCloud>) {
        let cloud = MockCloud::new();
        let provider = MockProvider::new("pkg").with_cloud(cloud.clone());
        let loader = Arc::new(MockLoader::single(provider));
        (Lifecycle::new(cloud.clone(), loader), cloud)
    }

    fn urn(name: &str) -> Urn {
        Urn::parse(&format!("urn:pulumi:test::proj::{T}::{name}")).unwrap()
    }

    fn v(value: &str) -> converge_model::PropertyMap {
        [("v".to_owned(), PropertyValue::from(value))]
            .into_iter()
            .collect()
    }

    /// `a`, and `b` depending on `a`.
    fn a_and_b() -> TestProgram {
        program(|m| async move {
            let stack = register_stack(&m).await?;
            let mut a = custom(T, "a", v("1"));
            a.parent = Some(stack.clone());
            let a = m.register_resource(a).await.map_err(|e| e.to_string())?;
            let mut b = custom(T, "b", v("1"));
            b.parent = Some(stack);
            b.dependencies = vec![a.urn];
            m.register_resource(b).await.map_err(|e| e.to_string())?;
            Ok(())
        })
    }

    /// Only `b` (with input `v`), no longer depending on `a`; registration
    /// errors are swallowed when `tolerant`.
    fn only_b(value: &'static str, tolerant: bool) -> TestProgram {
        program(move |m| async move {
            let stack = register_stack(&m).await?;
            let mut b = custom(T, "b", v(value));
            b.parent = Some(stack);
            match m.register_resource(b).await {
                Err(_) if tolerant => Ok(()),
                r => r.map(drop).map_err(|e| e.to_string()),
            }
        })
    }

    /// Bug A. `a` renamed to `a2` with an alias: the Same step of `a2`
    /// removes `a` from the state while the base's `b` still depends on
    /// `a` (its dependency is only rewritten when `b` registers). The
    /// journal prefix after `a2`'s Same fails integrity ("b's dependency a
    /// refers to missing resource"); if `b`'s step then fails or is not
    /// targeted, the final snapshot does too. Pulumi rewrites references to
    /// aliased URNs (`Snapshot.NormalizeURNReferences`).
    #[tokio::test]
    async fn a_rename_keeps_the_references_of_its_dependents_valid() {
        let (mut w, _cloud) = world();
        w.up(&a_and_b()).await;
        let renamed = program(|m| async move {
            let stack = register_stack(&m).await?;
            let mut a = custom(T, "a2", v("1"));
            a.parent = Some(stack.clone());
            a.options.aliases = vec![urn("a").into()];
            let a = m.register_resource(a).await.map_err(|e| e.to_string())?;
            let mut b = custom(T, "b", v("1"));
            b.parent = Some(stack);
            b.dependencies = vec![a.urn];
            m.register_resource(b).await.map_err(|e| e.to_string())?;
            Ok(())
        });
        let r = w.up(&renamed).await; // panics: a journal prefix fails integrity
        assert!(r.error.is_none(), "{:?}", r.error);
    }

    /// Bug A, second face: a provider renamed with an alias is a new
    /// provider to `decide` (`old.provider != new.provider`), so every
    /// resource using it is replaced. Pulumi's `providerChanged` treats an
    /// aliased provider as the same one.
    #[tokio::test]
    async fn renaming_a_provider_with_an_alias_replaces_nothing() {
        let (mut w, cloud) = world();
        let with_provider = |name: &'static str, aliases: Vec<Urn>| {
            program(move |m| {
                let aliases = aliases.clone();
                async move {
                    let stack = register_stack(&m).await?;
                    let mut p = custom("pulumi:providers:pkg", name, v("1"));
                    p.parent = Some(stack.clone());
                    p.options.aliases = aliases.into_iter().map(Into::into).collect();
                    let p = m.register_resource(p).await.map_err(|e| e.to_string())?;
                    let mut a = custom(T, "a", v("1"));
                    a.parent = Some(stack);
                    a.provider = Some(format!("{}::{}", p.urn, p.id.unwrap_or_default()));
                    m.register_resource(a).await.map_err(|e| e.to_string())?;
                    Ok(())
                }
            })
        };
        w.up(&with_provider("p", vec![])).await;
        let old = Urn::parse("urn:pulumi:test::proj::pulumi:providers:pkg::p").unwrap();
        // Run without `Lifecycle`'s checks: bug A breaks integrity first.
        let ctx = OperationContext {
            base: Arc::new(w.snapshot.clone()),
            loader: Arc::clone(&w.loader),
            sink: Arc::new(FaultySink::new(None, false)),
            events: EventSink::discard(),
            options: w.options.clone(),
        };
        let r = converge_engine::update(ctx, &with_provider("p2", vec![old])).await;
        assert!(r.error.is_none(), "{:?}", r.error);
        assert_eq!(cloud.counts().creates, 1, "a was replaced: {:?}", r.plan);
    }

    /// Bug B. `destroy --target a` deletes `a` and leaves `b`, which
    /// depends on it: "b's dependency a refers to missing resource". Pulumi
    /// refuses unless `--target-dependents`.
    #[tokio::test]
    async fn a_targeted_destroy_keeps_dependents_valid() {
        let (mut w, _cloud) = world();
        w.up(&a_and_b()).await;
        w.options.targets = Some(vec![urn("a").into()]);
        w.destroy().await; // panics: the result fails integrity
    }

    /// Bug C. With continue_on_error, `b`'s update fails, so its old state
    /// (depending on `a`) stays; the deletion phase still deletes `a`,
    /// which the program dropped: "b's dependency a refers to missing
    /// resource".
    #[tokio::test]
    async fn continue_on_error_keeps_what_failed_resources_depend_on() {
        let (mut w, cloud) = world();
        w.up(&a_and_b()).await;
        cloud.fail_when(|op, urn| op == CloudOp::Update && urn.name() == "b");
        w.options.continue_on_error = true;
        let r = w.up(&only_b("2", false)).await; // panics: integrity
        assert!(r.error.is_some());
    }

    /// Bug C, second face. With continue_on_error, `a`'s update fails, so
    /// the program (like an SDK awaiting `a`'s outputs) never registers
    /// `b` and exits with an error; the engine replaces the program's error
    /// by the step's and runs the deletion phase, which deletes `b` — a
    /// resource the program still declares.
    #[tokio::test]
    async fn continue_on_error_does_not_delete_what_the_program_did_not_reach() {
        let (mut w, cloud) = world();
        w.up(&a_and_b()).await;
        cloud.fail_when(|op, urn| op == CloudOp::Update && urn.name() == "a");
        w.options.continue_on_error = true;
        let changed_a = program(|m| async move {
            let stack = register_stack(&m).await?;
            let mut a = custom(T, "a", v("2"));
            a.parent = Some(stack.clone());
            // An SDK registers `b` only once `a` resolves.
            let a = m.register_resource(a).await.map_err(|e| e.to_string())?;
            let mut b = custom(T, "b", v("1"));
            b.parent = Some(stack);
            b.dependencies = vec![a.urn];
            m.register_resource(b).await.map_err(|e| e.to_string())?;
            Ok(())
        });
        let r = w.up(&changed_a).await;
        assert!(r.error.is_some());
        assert!(w.resource("b").is_some(), "b was deleted");
        assert_eq!(cloud.len(), 2, "b's object was deleted");
    }

    /// Bug D. `update --target ghost` (nothing of the program): `b` is not
    /// targeted, so its Same step records its *old* state (depending on
    /// `a`) among the new resources, ahead of `a`, which the program no
    /// longer registers and so stays in the base part, after `b`: "b's
    /// dependency a comes after it".
    #[tokio::test]
    async fn an_untargeted_resource_stays_after_its_old_dependencies() {
        let (mut w, _cloud) = world();
        w.up(&a_and_b()).await;
        w.options.targets = Some(vec![urn("ghost").into()]);
        w.up(&only_b("1", false)).await; // panics: integrity
    }

    /// Bug F (found after the fix of bug A): two renames rewrite the
    /// references of the same old resource, each starting from its *base*
    /// state (`steps/rename.rs`, `finish`), so the second rewrite undoes
    /// the first: after `a` → `a2` rewrites `c`'s dependency and forgets
    /// `a`, `b` → `b2` writes `c` back with its dependency on `a`: "c's
    /// dependency a refers to missing resource".
    #[tokio::test]
    async fn two_renames_keep_both_rewrites_of_a_shared_referrer() {
        let (mut w, _cloud) = world();
        let abc = |names: [&'static str; 2], aliased: bool| {
            program(move |m| async move {
                let stack = register_stack(&m).await?;
                let mut deps = Vec::new();
                for (name, old) in names.into_iter().zip(["a", "b"]) {
                    let mut g = custom(T, name, v("1"));
                    g.parent = Some(stack.clone());
                    if aliased {
                        g.options.aliases = vec![urn(old).into()];
                    }
                    deps.push(m.register_resource(g).await.map_err(|e| e.to_string())?.urn);
                }
                let mut c = custom(T, "c", v("1"));
                c.parent = Some(stack);
                c.dependencies = deps;
                m.register_resource(c).await.map_err(|e| e.to_string())?;
                Ok(())
            })
        };
        w.up(&abc(["a", "b"], false)).await;
        let r = w.up(&abc(["a2", "b2"], true)).await; // panics: integrity
        assert!(r.error.is_none(), "{:?}", r.error);
    }

    /// Bug G (found after the fix of bug D): `--replace` of the default
    /// provider with `--target` elsewhere: the provider is replaced (a new
    /// copy is recorded, the old one marked for deletion); `a` is not
    /// targeted and keeps its old state, whose provider reference names
    /// the *old* provider instance. `untargeted` checks that `a`'s
    /// dependencies are recorded by URN only, so `a` moves ahead of the old
    /// provider copy ("a's provider … comes after it"), and the deletion
    /// phase then deletes that copy ("refers to unknown provider").
    #[tokio::test]
    async fn an_untargeted_resource_keeps_its_replaced_provider() {
        let (mut w, _cloud) = world();
        w.up(&a_and_b()).await;
        let default = Urn::parse("urn:pulumi:test::proj::pulumi:providers:pkg::default").unwrap();
        w.options.targets = Some(vec![urn("ghost").into()]);
        w.options.replace = vec![default.into()];
        w.up(&a_and_b()).await; // panics: integrity
    }

    /// Bug G, second face: the same provider replacement with
    /// continue_on_error, `a`'s update failing and the program going on:
    /// the deletion phase deleted the old provider copy that `a`'s old
    /// state still refers to ("a refers to unknown provider").
    #[tokio::test]
    async fn continue_on_error_keeps_the_provider_copy_a_failed_resource_uses() {
        let (mut w, cloud) = world();
        let only_a = |value: &'static str| {
            program(move |m| async move {
                let stack = register_stack(&m).await?;
                let mut a = custom(T, "a", v(value));
                a.parent = Some(stack);
                let _ = m.register_resource(a).await; // the program goes on
                Ok(())
            })
        };
        w.up(&only_a("1")).await;
        let default = Urn::parse("urn:pulumi:test::proj::pulumi:providers:pkg::default").unwrap();
        w.options.replace = vec![default.into()];
        w.options.continue_on_error = true;
        cloud.fail_when(|op, urn| op == CloudOp::Update && urn.name() == "a");
        let r = w.up(&only_a("2")).await;
        assert!(r.error.is_some(), "{:#?}", r.plan);
    }

    /// Bug I: `check_references` (step_generator) requires a registration's
    /// parent, dependencies and property dependencies to be recorded in
    /// this deployment, but not its `deletedWith`. With `--target b`, the
    /// new `a` is not targeted, so not created; `b` is created anyway with
    /// `deletedWith: a`: "b is specified as being deleted with a, which is
    /// missing" (or "comes after it", when `a` is an old untargeted
    /// resource that stays in place).
    #[tokio::test]
    async fn deleted_with_must_name_a_recorded_resource() {
        let (mut w, _cloud) = world();
        let p = program(|m| async move {
            let stack = register_stack(&m).await?;
            let mut a = custom(T, "a", v("1"));
            a.parent = Some(stack.clone());
            let a = m.register_resource(a).await.map_err(|e| e.to_string())?;
            let mut b = custom(T, "b", v("1"));
            b.parent = Some(stack);
            b.options.deleted_with = Some(a.urn);
            m.register_resource(b).await.map_err(|e| e.to_string())?;
            Ok(())
        });
        w.up(&program(
            |m| async move { register_stack(&m).await.map(drop) },
        ))
        .await;
        w.options.targets = Some(vec![urn("b").into()]);
        w.up(&p).await; // panics: integrity
    }

    /// Bug J: a create whose provider reports a partial failure
    /// (`PartialFailure`: the object exists but did not initialise) ends
    /// with `entry.remove_old = remove_old` (steps/create.rs), skipping
    /// `rename::take_over`/`finish`: when the create replaces a renamed
    /// resource delete-before-replace, the old state is removed outright
    /// and its referrers are not rewritten: "b's dependency a refers to
    /// missing resource".
    #[tokio::test]
    async fn a_partially_failed_replacement_of_a_renamed_resource_rewrites_referrers() {
        let cloud = MockCloud::new();
        let objects = cloud.clone();
        let provider = MockProvider::new("pkg")
            .with_cloud(cloud.clone())
            .on_create(move |req| {
                let id = objects.insert(&req.urn, "pkg", req.properties.clone());
                if req.urn.name() == "a2" {
                    return Err(converge_plugin::ProviderError::PartialFailure {
                        id,
                        properties: req.properties,
                        reasons: vec!["not ready".to_owned()],
                    });
                }
                Ok(converge_plugin::CreateResponse {
                    id,
                    properties: req.properties,
                })
            });
        let mut w = Lifecycle::new(cloud, Arc::new(MockLoader::single(provider)));
        w.up(&a_and_b()).await;
        let renamed = program(|m| async move {
            let stack = register_stack(&m).await?;
            let mut a = custom(T, "a2", v("1"));
            a.parent = Some(stack.clone());
            a.options.aliases = vec![urn("a").into()];
            a.options.delete_before_replace = Some(true);
            let a = m.register_resource(a).await.map_err(|e| e.to_string())?;
            let mut b = custom(T, "b", v("1"));
            b.parent = Some(stack);
            b.dependencies = vec![a.urn];
            m.register_resource(b).await.map_err(|e| e.to_string())?;
            Ok(())
        });
        w.options.replace = vec![urn("a2").into()];
        w.up(&renamed).await; // panics: integrity
    }

    /// Bug E. `b`'s Check fails; the program swallows the registration
    /// error (an SDK may: the error is the program's to handle), and the
    /// engine never records it as the operation's failure, because errors
    /// raised before a step starts (Check, Diff, provider resolution) do
    /// not go through `steps::failed`. So the operation succeeds, the
    /// deletion phase runs and deletes `a`, which `b`'s old state still
    /// depends on.
    #[tokio::test]
    async fn a_failed_check_fails_the_operation() {
        let cloud = MockCloud::new();
        let provider = MockProvider::new("pkg")
            .with_cloud(cloud.clone())
            .on_check(|req| {
                if req.urn.name() == "b" && req.news.get("v") == Some(&PropertyValue::from("2")) {
                    return Err(converge_plugin::ProviderError::Failed("no".to_owned()));
                }
                Ok(converge_plugin::CheckResponse {
                    inputs: req.news,
                    failures: vec![],
                })
            });
        let mut w = Lifecycle::new(cloud, Arc::new(MockLoader::single(provider)));
        w.up(&a_and_b()).await;
        let r = w.up(&only_b("2", true)).await; // panics: integrity
        assert!(
            r.error.is_some(),
            "a failed registration must fail the operation"
        );
    }

    /// Bug E, second face: the journal fails while persisting a
    /// component's outputs (`register_resource_outputs`); the program
    /// swallows the error, and the operation reports success although the
    /// journal is broken.
    #[tokio::test]
    async fn a_journal_failure_while_registering_outputs_fails_the_operation() {
        let cloud = MockCloud::new();
        let loader = Arc::new(MockLoader::single(
            MockProvider::new("pkg").with_cloud(cloud.clone()),
        ));
        let p = program(|m| async move {
            let stack = register_stack(&m).await?;
            let mut c = component("my:index:Group", "c");
            c.parent = Some(stack);
            let c = m.register_resource(c).await.map_err(|e| e.to_string())?;
            let _ = m.register_resource_outputs(&c.urn, v("out")).await;
            Ok(())
        });
        let base = converge_state::Snapshot::empty("2026-01-01T00:00:00Z");
        // The batch with the Outputs entry fails (the stack's and c's
        // entries are unsynced, so group commit may put them in it).
        let sink = Arc::new(FaultySink::failing_on(JournalEntryKind::Outputs));
        let ctx = OperationContext {
            base: Arc::new(base.clone()),
            loader,
            sink: sink.clone(),
            events: EventSink::discard(),
            options: converge_engine::DeploymentOptions::new("test", "proj"),
        };
        let r = converge_engine::update(ctx, &p).await;
        assert!(sink.failed());
        check_journal(&base, &sink.entries());
        assert!(
            r.error.is_some(),
            "the journal failed but the operation succeeded"
        );
    }
}
