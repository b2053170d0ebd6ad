//! The engine's `pulumi` provider: a `pulumi:pulumi:StackReference` reads
//! another stack of the same (file) backend — its current outputs, secrets
//! kept secret — on every up, preview and refresh, under a default provider
//! `pulumi:providers:pulumi::default`, and never writes to that stack.
//! The same provider keeps `pulumi:index:Stash` values in the state.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use converge_backend::{Backend, FileBackend, LockInfo, StackRef};
use converge_engine::pulumi_provider::{
    OpenError, PulumiLoader, SecretsOpener, StackReferences, READ_STACK_OUTPUTS,
    READ_STACK_RESOURCE_OUTPUTS, STACK_REFERENCE, STASH,
};
use converge_engine::stack_state::StackState;
use converge_engine::{
    DeploymentOptions, EventSink, InvokeGoal, OperationContext, ReadGoal, RegisterResult,
};
use converge_state::secrets::{Crypter, PassphraseCrypter};
use converge_state::SecretsProviders;
use converge_testkit::{custom, program, register_stack, MockLoader, TestProgram};

use super::*;

/// Gives the other stack's crypter (or refuses), counting the calls.
#[derive(Debug)]
struct Opener {
    crypter: Option<Arc<dyn Crypter>>,
    calls: AtomicUsize,
}

impl SecretsOpener for Opener {
    fn open(
        &self,
        _stack: &StackRef,
        provider: Option<&SecretsProviders>,
    ) -> Result<Arc<dyn Crypter>, OpenError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        assert_eq!(provider.map(|p| p.kind.as_str()), Some("passphrase"));
        self.crypter
            .clone()
            .ok_or_else(|| "the test refuses this key".into())
    }
}

/// A file backend holding the stack `proj/other`, deployed with the
/// outputs a test asks for, and a lifecycle world for `proj/test` whose
/// loader serves package `pulumi` from it.
struct Stacks {
    _dir: tempfile::TempDir,
    backend: Arc<dyn Backend>,
    other: StackRef,
    crypter: Arc<PassphraseCrypter>,
    opener: Arc<Opener>,
}

impl Stacks {
    async fn new(opener_has_key: bool) -> Stacks {
        let dir = tempfile::tempdir().unwrap();
        let backend: Arc<dyn Backend> = Arc::new(FileBackend::new(dir.path(), ""));
        let (crypter, _) = PassphraseCrypter::generate_insecure_for_tests("pw", 10).unwrap();
        let crypter = Arc::new(crypter);
        let key: Arc<dyn Crypter> = crypter.clone();
        let other = StackRef::new("proj", "other").unwrap();
        for stack in [&other, &StackRef::new("proj", "test").unwrap()] {
            StackState::new(backend.clone(), stack.clone())
                .create()
                .await
                .unwrap();
        }
        Stacks {
            _dir: dir,
            backend,
            other,
            crypter,
            opener: Arc::new(Opener {
                crypter: opener_has_key.then_some(key),
                calls: AtomicUsize::new(0),
            }),
        }
    }

    /// Runs an update of `proj/other` whose stack exports `outputs`.
    async fn deploy_other(&self, outputs: PropertyMap) {
        let state = StackState::new(self.backend.clone(), self.other.clone());
        let mut locked = state.lock(LockInfo::current()).await.unwrap();
        locked.decrypt(self.crypter.clone()).await.unwrap();
        locked.set_secrets_providers(SecretsProviders {
            kind: "passphrase".to_owned(),
            state: Some(self.crypter.provider_state().to_string()),
        });
        let journal = locked.start().await.unwrap();
        let p = program(move |m| {
            let outputs = outputs.clone();
            async move {
                let stack = register_stack(&m).await?;
                m.register_resource_outputs(&stack, outputs)
                    .await
                    .map_err(|e| e.to_string())
            }
        });
        let ctx = OperationContext {
            base: locked.shared_base(),
            loader: Arc::new(MockLoader::new()),
            sink: journal.clone(),
            events: EventSink::discard(),
            options: DeploymentOptions::new("other", "proj"),
        };
        let result = converge_engine::update(ctx, &p).await;
        expect_ok(&result);
        locked.finish(journal, &result, None).await.unwrap();
        locked.release().await.unwrap();
    }

    async fn other_bytes(&self) -> Vec<u8> {
        self.backend
            .load_checkpoint(&self.other)
            .await
            .unwrap()
            .unwrap()
    }

    /// The world of `proj/test`, package `pulumi` served from this backend.
    fn world(&self) -> Lifecycle {
        let (mut w, _) = world(provider());
        let stacks = StackReferences::new(
            self.backend.clone(),
            StackRef::new("proj", "test").unwrap(),
            self.opener.clone(),
        );
        w.loader = Arc::new(PulumiLoader::new(w.loader.clone(), stacks));
        w
    }

    fn opened(&self) -> usize {
        self.opener.calls.load(Ordering::SeqCst)
    }
}

fn plain_and_secret(plain: &str) -> PropertyMap {
    PropertyMap::from([
        ("plain".to_owned(), s(plain)),
        ("secret".to_owned(), PropertyValue::secret(s("s3cr3t"))),
    ])
}

/// Reads a stack reference `ref<i>` to each name, in order.
fn reading(names: &[&str]) -> TestProgram {
    let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
    program(move |m| {
        let names = names.clone();
        async move {
            let stack = register_stack(&m).await?;
            for (i, name) in names.iter().enumerate() {
                read_reference(&m, &stack, &format!("ref{i}"), name).await?;
            }
            Ok(())
        }
    })
}

async fn read_reference(
    m: &Monitor,
    stack: &Urn,
    resource: &str,
    name: &str,
) -> Result<RegisterResult, String> {
    m.read_resource(ReadGoal {
        type_token: STACK_REFERENCE.to_owned(),
        name: resource.to_owned(),
        id: name.to_owned(),
        parent: Some(stack.clone()),
        inputs: PropertyMap::from([("name".to_owned(), s(name))]),
        provider: None,
        version: None,
        dependencies: vec![],
        custom_timeouts: None,
    })
    .await
    .map_err(|e| e.to_string())
}

fn outputs_of(w: &Lifecycle, resource: &str) -> PropertyMap {
    match w.resource(resource).unwrap().outputs.get("outputs") {
        Some(PropertyValue::Object(o)) => o.clone(),
        other => panic!("{resource}: outputs is {other:?}"),
    }
}

#[tokio::test]
async fn a_stack_reference_reads_the_other_stacks_outputs_by_every_name_form() {
    let stacks = Stacks::new(true).await;
    stacks.deploy_other(plain_and_secret("hello")).await;
    let before = stacks.other_bytes().await;
    let mut w = stacks.world();
    let r = w
        .up(&reading(&[
            "other",
            "proj/other",
            "organization/proj/other",
        ]))
        .await;
    expect_ok(&r);
    for i in 0..3 {
        let name = format!("ref{i}");
        let state = w.resource(&name).unwrap();
        assert!(state.external, "{name} is read, not managed");
        let provider = state.provider.as_ref().unwrap();
        assert_eq!(
            provider.urn.to_string(),
            "urn:pulumi:test::proj::pulumi:providers:pulumi::default"
        );
        let outputs = outputs_of(&w, &name);
        assert_eq!(outputs.get("plain"), Some(&s("hello")));
        // The secret stays a secret value: the journal encrypts it with
        // this stack's own key.
        assert_eq!(
            outputs.get("secret"),
            Some(&PropertyValue::secret(s("s3cr3t")))
        );
        assert_eq!(
            state.outputs.get("secretOutputNames"),
            Some(&PropertyValue::Array(vec![s("secret")]))
        );
    }
    assert_eq!(
        all_ops(&r)
            .iter()
            .filter(|(_, op)| *op == StepOp::Read)
            .count(),
        3
    );
    // Dropping the references forgets them; the other stack is only read.
    let empty = program(|m| async move {
        register_stack(&m).await?;
        Ok(())
    });
    expect_ok(&w.up(&empty).await);
    assert!(w.resource("ref0").is_none());
    assert_eq!(stacks.other_bytes().await, before);
}

#[tokio::test]
async fn a_stack_reference_follows_the_other_stack_on_every_preview_up_and_refresh() {
    let stacks = Stacks::new(true).await;
    stacks.deploy_other(plain_and_secret("one")).await;
    let mut w = stacks.world();
    let p = reading(&["other"]);
    expect_ok(&w.up(&p).await);
    assert_eq!(outputs_of(&w, "ref0").get("plain"), Some(&s("one")));

    stacks.deploy_other(plain_and_secret("two")).await;
    let preview = w.preview(&p).await;
    expect_ok(&preview);
    let planned = preview
        .snapshot
        .resources
        .iter()
        .find(|r| r.urn.name() == "ref0")
        .unwrap();
    assert_eq!(
        planned
            .outputs
            .get("outputs")
            .and_then(|o| o.as_object()?.get("plain")),
        Some(&s("two"))
    );
    let r = w.up(&p).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "ref0"), vec![StepOp::Read]);
    assert_eq!(outputs_of(&w, "ref0").get("plain"), Some(&s("two")));

    stacks.deploy_other(plain_and_secret("three")).await;
    expect_ok(&w.refresh().await);
    assert_eq!(outputs_of(&w, "ref0").get("plain"), Some(&s("three")));
}

#[tokio::test]
async fn plain_outputs_need_no_key_and_a_wrong_key_is_an_error_naming_the_stack() {
    let stacks = Stacks::new(false).await;
    stacks
        .deploy_other(PropertyMap::from([("plain".to_owned(), s("hello"))]))
        .await;
    let mut w = stacks.world();
    let p = reading(&["other"]);
    expect_ok(&w.up(&p).await);
    assert_eq!(outputs_of(&w, "ref0").get("plain"), Some(&s("hello")));
    assert_eq!(stacks.opened(), 0, "no secret, no key asked for");

    stacks.deploy_other(plain_and_secret("hello")).await;
    let before = w.snapshot.clone();
    let r = w.up(&p).await;
    let error = r
        .error
        .expect("a secret it cannot decrypt fails the read")
        .to_string();
    assert!(
        error.contains("cannot decrypt the secrets of stack organization/proj/other")
            && error.contains("the test refuses this key"),
        "{error}"
    );
    assert_eq!(
        w.resource("ref0").unwrap().outputs,
        before
            .resources
            .iter()
            .find(|r| r.urn.name() == "ref0")
            .unwrap()
            .outputs,
        "the last good read is kept"
    );
}

#[tokio::test]
async fn a_missing_stack_is_an_error_naming_it() {
    let stacks = Stacks::new(true).await;
    let mut w = stacks.world();
    let r = w.up(&reading(&["nope"])).await;
    let error = r.error.expect("a missing stack fails the read").to_string();
    assert!(
        error.contains("no stack organization/proj/nope in file://"),
        "{error}"
    );
    let r = w.up(&reading(&["a/b/c/d"])).await;
    let error = r.error.unwrap().to_string();
    assert!(error.contains("not a valid stack name"), "{error}");
    // A stack that exists but was never deployed has no outputs.
    let r = w.up(&reading(&["test"])).await;
    expect_ok(&r);
}

#[tokio::test]
async fn the_stack_output_functions_read_the_other_stack() {
    let stacks = Stacks::new(true).await;
    stacks.deploy_other(plain_and_secret("hello")).await;
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = seen.clone();
    let p = program(move |m| {
        let record = record.clone();
        async move {
            register_stack(&m).await?;
            let calls = [
                (READ_STACK_OUTPUTS, "name"),
                (READ_STACK_RESOURCE_OUTPUTS, "stackName"),
                ("pulumi:pulumi:noSuchFunction", "name"),
            ];
            for (token, key) in calls {
                let answer = m
                    .invoke(InvokeGoal {
                        token: token.to_owned(),
                        args: PropertyMap::from([(key.to_owned(), s("proj/other"))]),
                        provider: None,
                        version: None,
                    })
                    .await
                    .map(|r| r.outputs)
                    .map_err(|e| e.to_string());
                record.lock().unwrap().push(answer);
            }
            Ok(())
        }
    });
    let mut w = stacks.world();
    expect_ok(&w.up(&p).await);
    let seen = seen.lock().unwrap().clone();

    let outputs = seen[0].as_ref().unwrap();
    assert_eq!(outputs.get("name"), Some(&s("proj/other")));
    assert_eq!(
        outputs.get("secretOutputNames"),
        Some(&PropertyValue::Array(vec![s("secret")]))
    );
    let values = outputs
        .get("outputs")
        .and_then(PropertyValue::as_object)
        .unwrap();
    assert_eq!(
        values.get("secret"),
        Some(&PropertyValue::secret(s("s3cr3t")))
    );

    let resources = seen[1].as_ref().unwrap();
    let by_urn = resources
        .get("outputs")
        .and_then(PropertyValue::as_object)
        .unwrap();
    let root = by_urn
        .get("urn:pulumi:other::proj::pulumi:pulumi:Stack::proj-other")
        .and_then(PropertyValue::as_object)
        .unwrap();
    assert_eq!(root.get("type"), Some(&s("pulumi:pulumi:Stack")));
    let root_outputs = root
        .get("outputs")
        .and_then(PropertyValue::as_object)
        .unwrap();
    assert_eq!(root_outputs.get("plain"), Some(&s("hello")));
    assert_eq!(
        root_outputs.get("secret"),
        Some(&PropertyValue::secret(s("s3cr3t")))
    );

    let unknown = seen[2].as_ref().unwrap_err();
    assert!(
        unknown.contains("no function pulumi:pulumi:noSuchFunction"),
        "{unknown}"
    );
    // The functions ran on the package's default provider, recorded in
    // state as Pulumi records it.
    assert!(w
        .resource("default")
        .is_some_and(|r| r.type_token == "pulumi:providers:pulumi"));
}

/// Registers (rather than reads) a stack reference `ref` to `name`, as
/// Pulumi YAML and older SDKs do.
fn registering(name: &str) -> TestProgram {
    let name = name.to_owned();
    program(move |m| {
        let name = name.clone();
        async move {
            let stack = register_stack(&m).await?;
            let goal = ResourceGoal {
                type_token: STACK_REFERENCE.to_owned(),
                name: "ref".to_owned(),
                custom: true,
                inputs: PropertyMap::from([("name".to_owned(), s(&name))]),
                ..ResourceGoal::default()
            };
            reg(&m, &stack, goal).await.map(|_| ())
        }
    })
}

#[tokio::test]
async fn a_registered_stack_reference_follows_its_stack_too() {
    let stacks = Stacks::new(true).await;
    stacks.deploy_other(plain_and_secret("one")).await;
    let other = StackRef::new("proj", "third").unwrap();
    StackState::new(stacks.backend.clone(), other.clone())
        .create()
        .await
        .unwrap();
    let mut w = stacks.world();

    let r = w.up(&registering("other")).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "ref"), vec![StepOp::Create]);
    assert_eq!(outputs_of(&w, "ref").get("plain"), Some(&s("one")));
    assert!(!w.resource("ref").unwrap().external);

    let r = w.up(&registering("other")).await;
    assert_eq!(ops_of(&r, "ref"), vec![StepOp::Same]);
    stacks.deploy_other(plain_and_secret("two")).await;
    let r = w.up(&registering("other")).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "ref"), vec![StepOp::Update]);
    assert_eq!(outputs_of(&w, "ref").get("plain"), Some(&s("two")));
    assert_eq!(
        outputs_of(&w, "ref").get("secret"),
        Some(&PropertyValue::secret(s("s3cr3t")))
    );

    // Another stack is another reference; the old one is forgotten, and
    // neither stack is written.
    let before = stacks.other_bytes().await;
    let r = w.up(&registering("third")).await;
    expect_ok(&r);
    assert_eq!(
        ops_of(&r, "ref"),
        vec![StepOp::CreateReplacement, StepOp::DeleteReplaced]
    );
    assert_eq!(outputs_of(&w, "ref"), PropertyMap::new());
    assert_eq!(stacks.other_bytes().await, before);

    // A name that is not a string is refused by Check.
    let bad = program(|m| async move {
        let stack = register_stack(&m).await?;
        let goal = ResourceGoal {
            type_token: STACK_REFERENCE.to_owned(),
            name: "ref".to_owned(),
            custom: true,
            inputs: PropertyMap::from([("name".to_owned(), PropertyValue::Number(1.0))]),
            ..ResourceGoal::default()
        };
        reg(&m, &stack, goal).await.map(|_| ())
    });
    let error = w.up(&bad).await.error.unwrap().to_string();
    assert!(error.contains("must be a string"), "{error}");
}

/// A stash keeps the value it was created with: a new input is an update
/// of `input` alone, `output` changes only with a replacement; its
/// provider is recorded as `pulumi:providers:pulumi::default`; deleting it
/// touches nothing.
#[tokio::test]
async fn a_stash_keeps_its_first_value_until_replaced() {
    let stacks = Stacks::new(true).await;
    let mut w = stacks.world();
    let stash = |v: &'static str| {
        program(move |m| async move {
            let stack = register_stack(&m).await?;
            // The SDKs send the output, unset, with the input.
            let goal = custom(
                STASH,
                "kept",
                PropertyMap::from([
                    ("input".to_owned(), s(v)),
                    ("output".to_owned(), PropertyValue::Null),
                ]),
            );
            let r = reg(&m, &stack, goal).await?;
            let out = r
                .outputs
                .get("output")
                .cloned()
                .unwrap_or(PropertyValue::Null);
            m.register_resource_outputs(&stack, PropertyMap::from([("out".to_owned(), out)]))
                .await
                .map_err(|e| e.to_string())
        })
    };
    let state = |w: &Lifecycle| {
        let r = w.resource("kept").expect("the stash is recorded");
        (r.inputs.clone(), r.outputs.clone())
    };
    let map = |pairs: &[(&str, &str)]| inputs(pairs);
    expect_ok(&w.up(&stash("first")).await);
    assert_eq!(
        state(&w),
        (
            map(&[("input", "first")]),
            map(&[("input", "first"), ("output", "first")])
        )
    );
    let provider = w
        .resource("default")
        .expect("the builtin provider is recorded");
    assert_eq!(provider.urn.type_token(), "pulumi:providers:pulumi");
    let stack_out = |w: &Lifecycle| {
        w.snapshot
            .resources
            .iter()
            .find(|r| r.urn.type_token() == "pulumi:pulumi:Stack")
            .and_then(|r| r.outputs.get("out").cloned())
    };
    assert_eq!(stack_out(&w), Some(s("first")));

    let r = w.up(&stash("second")).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "kept"), vec![StepOp::Update]);
    assert_eq!(
        state(&w),
        (
            map(&[("input", "second")]),
            map(&[("input", "second"), ("output", "first")])
        )
    );
    assert_eq!(stack_out(&w), Some(s("first")));
    let r = w.up(&stash("second")).await;
    assert_eq!(ops_of(&r, "kept"), vec![StepOp::Same]);

    w.options.replace = vec![converge_model::UrnPattern::parse("**::kept").unwrap()];
    let r = w.up(&stash("second")).await;
    expect_ok(&r);
    assert!(
        ops_of(&r, "kept").contains(&StepOp::CreateReplacement),
        "{:?}",
        ops_of(&r, "kept")
    );
    assert_eq!(
        state(&w).1,
        map(&[("input", "second"), ("output", "second")])
    );
    w.options.replace.clear();
    expect_ok(&w.destroy().await);
    assert!(w.resource("kept").is_none());
}
