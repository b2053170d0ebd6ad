//! Resource hooks: run around creates, updates and deletes with what each
//! kind of hook sees; a failing before hook fails its step with nothing
//! done, an after hook's failure is a warning, a hook that ignores errors
//! only warns; the hook names are recorded in the state, so a resource the
//! program dropped is deleted with its delete hooks — and kept, saying
//! why, when the program no longer registers them; error hooks have a
//! failed operation tried again, a bounded number of times.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use converge_engine::hooks::{
    ErrorHookCall, HookCall, HookError, HookKind, HookRunner, MAX_ERROR_HOOK_RETRIES,
};
use converge_engine::{EventSink, Severity};
use converge_plugin::{CreateResponse, ProviderError};
use converge_testkit::{custom, program, register_stack, TestProgram};

use super::*;

/// Hooks by name, each recording its calls in the shared log; `fail`
/// names hooks that fail (`ignore` ones that only warn); error hooks ask
/// for a retry while `retries` allows.
#[derive(Debug, Default)]
struct Runner {
    known: Vec<&'static str>,
    fail: Vec<&'static str>,
    ignore: Vec<&'static str>,
    retries: usize,
    asked: AtomicUsize,
    log: Log,
}

fn keys(map: Option<&PropertyMap>) -> String {
    map.map_or("-".to_owned(), |m| {
        m.iter()
            .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("?")))
            .collect::<Vec<_>>()
            .join(",")
    })
}

#[async_trait]
impl HookRunner for Runner {
    fn any_registered(&self) -> bool {
        !self.known.is_empty()
    }

    async fn resource_hook(&self, name: &str, call: HookCall<'_>) -> Result<(), HookError> {
        if !self.known.contains(&name) {
            return Err(HookError::NotRegistered {
                name: name.to_owned(),
                recorded: true,
            });
        }
        self.log.lock().unwrap().push(format!(
            "{} {name} {} id={} new={} old={} new_out={} old_out={} options={}",
            call.kind,
            call.urn.name(),
            call.id,
            keys(call.new_inputs),
            keys(call.old_inputs),
            keys(call.new_outputs),
            keys(call.old_outputs),
            call.new_options.or(call.old_options).is_some(),
        ));
        if self.fail.contains(&name) || self.ignore.contains(&name) {
            return Err(HookError::Failed {
                name: name.to_owned(),
                message: "the hook said no".to_owned(),
                ignore_errors: self.ignore.contains(&name),
            });
        }
        Ok(())
    }

    async fn error_hook(
        &self,
        name: &str,
        call: ErrorHookCall<'_>,
        errors: &[String],
    ) -> Result<bool, HookError> {
        let n = self.asked.fetch_add(1, Ordering::SeqCst);
        self.log.lock().unwrap().push(format!(
            "on-error {name} {} {} {}",
            call.urn.name(),
            call.failed_operation,
            errors.join(" | ")
        ));
        Ok(n < self.retries)
    }
}

fn binding(pairs: &[(HookKind, &str)]) -> BTreeMap<HookKind, Vec<String>> {
    let mut b: BTreeMap<HookKind, Vec<String>> = BTreeMap::new();
    for (kind, name) in pairs {
        b.entry(*kind).or_default().push((*name).to_owned());
    }
    b
}

fn all_hooks() -> BTreeMap<HookKind, Vec<String>> {
    binding(&[
        (HookKind::BeforeCreate, "audit"),
        (HookKind::AfterCreate, "audit"),
        (HookKind::BeforeUpdate, "audit"),
        (HookKind::AfterUpdate, "audit"),
        (HookKind::BeforeDelete, "audit"),
        (HookKind::AfterDelete, "audit"),
    ])
}

/// A program that sets `runner` and declares `a` with `hooks` (or not at
/// all, when `declare` is false).
fn hooked(
    runner: Arc<Runner>,
    declare: bool,
    value: &'static str,
    hooks: BTreeMap<HookKind, Vec<String>>,
) -> TestProgram {
    program(move |m| {
        let runner = Arc::clone(&runner);
        let hooks = hooks.clone();
        async move {
            m.set_hook_runner(runner);
            let stack = register_stack(&m).await?;
            if declare {
                let mut g = custom(T, "a", inputs(&[("k", value)]));
                g.options.hooks = hooks;
                reg(&m, &stack, g).await?;
            }
            Ok(())
        }
    })
}

fn runner(known: &[&'static str]) -> (Arc<Runner>, Log) {
    let log = log();
    let r = Runner {
        known: known.to_vec(),
        log: log.clone(),
        ..Runner::default()
    };
    (Arc::new(r), log)
}

#[tokio::test]
async fn hooks_run_around_create_update_and_delete_and_are_recorded() {
    let (mut w, cloud) = world(provider());
    let (r, calls) = runner(&["audit"]);
    expect_ok(&w.up(&hooked(r.clone(), true, "1", all_hooks())).await);
    let a = w.resource("a").unwrap();
    assert_eq!(a.resource_hooks["before-create"], ["audit"]);
    assert_eq!(a.resource_hooks["after-delete"], ["audit"]);
    let id = a.id.clone().unwrap();
    assert_eq!(
        entries(&calls),
        [
            "before-create audit a id= new=k=1 old=- new_out=- old_out=- options=true".to_owned(),
            format!(
                "after-create audit a id={id} new=k=1 old=- new_out=k=1 old_out=- options=true"
            ),
        ]
    );

    calls.lock().unwrap().clear();
    expect_ok(&w.up(&hooked(r.clone(), true, "2", all_hooks())).await);
    assert_eq!(
        entries(&calls),
        [
            format!(
                "before-update audit a id={id} new=k=2 old=k=1 new_out=- old_out=k=1 options=true"
            ),
            format!(
                "after-update audit a id={id} new=k=2 old=k=1 new_out=k=2 old_out=k=1 options=true"
            ),
        ]
    );

    // Unchanged: no hook runs.
    calls.lock().unwrap().clear();
    expect_ok(&w.up(&hooked(r.clone(), true, "2", all_hooks())).await);
    assert!(entries(&calls).is_empty(), "{:?}", entries(&calls));

    // The program drops `a` but still registers the hook: the delete runs
    // the hooks its state names.
    expect_ok(&w.up(&hooked(r, false, "2", BTreeMap::new())).await);
    assert_eq!(
        entries(&calls),
        [
            format!(
                "before-delete audit a id={id} new=- old=k=2 new_out=- old_out=k=2 options=true"
            ),
            format!(
                "after-delete audit a id={id} new=- old=k=2 new_out=- old_out=k=2 options=true"
            ),
        ]
    );
    assert!(w.resource("a").is_none());
    assert_eq!(cloud.len(), 0);
}

#[tokio::test]
async fn a_delete_hook_the_program_no_longer_registers_keeps_the_resource() {
    let (mut w, cloud) = world(provider());
    let hooks = binding(&[(HookKind::BeforeDelete, "guard")]);
    let (r, _) = runner(&["guard"]);
    expect_ok(&w.up(&hooked(r, true, "1", hooks)).await);
    let (none, _) = runner(&[]);
    let result = w.up(&hooked(none, false, "1", BTreeMap::new())).await;
    let error = result.error.expect("the delete fails").to_string();
    assert!(error.contains("before-delete hook \"guard\""), "{error}");
    assert!(error.contains("not registered"), "{error}");
    assert!(error.contains("in the state"), "{error}");
    assert!(w.resource("a").is_some(), "the resource stays tracked");
    assert_eq!(cloud.len(), 1);
}

#[tokio::test]
async fn a_failing_before_hook_fails_the_step_and_after_hooks_only_warn() {
    let (mut w, cloud) = world(provider());
    let log = log();
    let r = Arc::new(Runner {
        known: vec!["deny", "late", "lenient"],
        fail: vec!["deny", "late"],
        ignore: vec!["lenient"],
        log: log.clone(),
        ..Runner::default()
    });
    let result = w
        .up(&hooked(
            r.clone(),
            true,
            "1",
            binding(&[(HookKind::BeforeCreate, "deny")]),
        ))
        .await;
    let error = result.error.expect("the create fails").to_string();
    assert!(
        error.contains("before-create hook \"deny\" failed: the hook said no"),
        "{error}"
    );
    assert_eq!(cloud.len(), 0, "nothing was created");
    assert!(w.resource("a").is_none());

    let (sink, mut rx) = EventSink::channel();
    w.events = sink;
    let result = w
        .up(&hooked(
            r,
            true,
            "1",
            binding(&[
                (HookKind::BeforeCreate, "lenient"),
                (HookKind::AfterCreate, "late"),
            ]),
        ))
        .await;
    expect_ok(&result);
    assert_eq!(cloud.len(), 1);
    let warnings = diagnostics(&mut rx, Severity::Warning);
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("before-create hook \"lenient\" failed")),
        "{warnings:?}"
    );
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("after-create hook \"late\" failed")),
        "{warnings:?}"
    );
}

/// A provider whose creates fail `failures` times before succeeding.
fn flaky(failures: usize) -> MockProvider {
    let attempts = Arc::new(AtomicUsize::new(0));
    let cloud = MockCloud::new();
    let create_cloud = cloud.clone();
    MockProvider::new("pkg")
        .with_cloud(cloud)
        .on_create(move |req| {
            let n = attempts.fetch_add(1, Ordering::SeqCst);
            if n < failures {
                return Err(ProviderError::Failed(format!("not ready ({n})")));
            }
            let id = create_cloud.insert(&req.urn, "pkg", req.properties.clone());
            Ok(CreateResponse {
                id,
                properties: req.properties,
            })
        })
}

#[tokio::test]
async fn error_hooks_have_a_failed_create_tried_again() {
    let (mut w, cloud) = world(flaky(2));
    let log = log();
    let r = Arc::new(Runner {
        known: vec!["retry"],
        retries: 5,
        log: log.clone(),
        ..Runner::default()
    });
    let hooks = binding(&[(HookKind::OnError, "retry")]);
    expect_ok(&w.up(&hooked(r, true, "1", hooks)).await);
    assert_eq!(cloud.len(), 1);
    let calls = entries(&log);
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert!(
        calls[0].starts_with("on-error retry a create "),
        "{calls:?}"
    );
    // The errors so far, newest first.
    let second = &calls[1];
    let newest = second.find("not ready (1)").expect(second);
    let oldest = second.find("not ready (0)").expect(second);
    assert!(newest < oldest, "{second}");
}

#[tokio::test]
async fn error_hooks_that_decline_or_always_retry_end_in_the_failure() {
    // Declined: one try, one hook call.
    let (mut w, cloud) = world(flaky(usize::MAX));
    let log = log();
    let r = Arc::new(Runner {
        known: vec!["retry"],
        retries: 0,
        log: log.clone(),
        ..Runner::default()
    });
    let hooks = binding(&[(HookKind::OnError, "retry")]);
    let result = w.up(&hooked(r, true, "1", hooks.clone())).await;
    assert!(result.error.is_some());
    assert_eq!(entries(&log).len(), 1);
    assert_eq!(cloud.len(), 0);

    // Always asked again: bounded.
    let log = super::log();
    let r = Arc::new(Runner {
        known: vec!["retry"],
        retries: usize::MAX,
        log: log.clone(),
        ..Runner::default()
    });
    let result = w.up(&hooked(r, true, "1", hooks)).await;
    let error = result.error.expect("still fails").to_string();
    assert!(error.contains("not ready"), "{error}");
    assert_eq!(entries(&log).len(), MAX_ERROR_HOOK_RETRIES);
    assert!(w.resource("a").is_none());
}
