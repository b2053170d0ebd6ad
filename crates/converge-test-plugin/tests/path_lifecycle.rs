//! (a) An ambient plugin, found on PATH, drives real deployments: create,
//! preview, update, replace, delete across successive updates through the
//! engine, with "the cloud" (the plugin's JSON file) checked each time.
//!
//! This binary holds one test because it changes the process's PATH.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use converge_engine::{OperationResult, StepOp};
use converge_model::PropertyValue;
use converge_plugin::host::PluginDirectory;
use converge_plugin::ProviderLoader;
use converge_test_plugin::THING;
use converge_testkit::{custom, program, register_stack, Lifecycle, MockCloud, TestProgram};

fn thing(value: &'static str, size: &'static str) -> TestProgram {
    program(move |m| async move {
        let stack = register_stack(&m).await?;
        let mut goal = custom(THING, "a", props(&[("value", s(value)), ("size", s(size))]));
        goal.parent = Some(stack);
        m.register_resource(goal).await.map_err(|e| e.to_string())?;
        Ok(())
    })
}

fn nothing() -> TestProgram {
    program(|m| async move {
        register_stack(&m).await?;
        Ok(())
    })
}

fn ops(result: &OperationResult, name: &str) -> Vec<StepOp> {
    if let Some(e) = &result.error {
        panic!("operation failed: {e}");
    }
    result
        .plan
        .steps
        .iter()
        .filter(|s| s.urn.ends_with(&format!("::{name}")))
        .map(|s| s.op)
        .collect()
}

#[test]
fn a_plugin_on_path_creates_updates_replaces_and_deletes() {
    let tmp = tempfile::tempdir().unwrap();
    let bin = bin_dir(tmp.path());
    let mut path = std::ffi::OsString::from(bin.as_os_str());
    if let Some(old) = std::env::var_os("PATH") {
        path.push(":");
        path.push(old);
    }
    // Before any other thread exists: the real PATH lookup is exercised.
    std::env::set_var("PATH", path);
    std::env::remove_var("PULUMI_IGNORE_AMBIENT_PLUGINS");

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let cloud_file = tmp.path().join("cloud.json");
        let logs = Logs::default();
        // An empty plugin directory: only PATH can serve.
        let directory = PluginDirectory::new(tmp.path().join("plugins"));
        assert!(directory.ambient_enabled());
        let mut options = options(directory, &cloud_file, &logs);
        // The config names the cloud file; the env names another: the
        // config must win, so the plugin was configured through the wire.
        options.env = vec![(
            converge_test_plugin::CLOUD_FILE_ENV.into(),
            tmp.path().join("wrong.json").into(),
        )];
        let loader = Arc::new(converge_plugin::host::PluginLoader::new(options));
        let resolved = loader.resolve("convergetest", None).await.unwrap();
        assert_eq!(resolved, bin.join(exe_name()));

        let as_loader: Arc<dyn ProviderLoader> = loader.clone();
        let mut w = Lifecycle::new(MockCloud::new(), as_loader);
        w.options.provider_config.insert(
            "convergetest".into(),
            props(&[("cloudFile", s(cloud_file.to_str().unwrap()))]),
        );

        // Create.
        let r = w.up(&thing("hello", "small")).await;
        assert_eq!(ops(&r, "a"), vec![StepOp::Create]);
        let c = cloud(&cloud_file);
        assert_eq!(c.objects.len(), 1);
        let first_id = w.resource("a").unwrap().id.clone().unwrap();
        assert_eq!(c.property(&first_id, "value"), Some("hello"));
        let a = w.resource("a").unwrap();
        assert_eq!(a.outputs.get("length"), Some(&PropertyValue::Number(5.0)));
        assert_eq!(a.outputs.get("pluginVersion"), Some(&s("")));
        assert!(!tmp.path().join("wrong.json").exists());

        // Same.
        let r = w.up(&thing("hello", "small")).await;
        assert_eq!(ops(&r, "a"), vec![StepOp::Same]);

        // A preview of an update changes nothing real; the plugin computes
        // the preview's outputs.
        let before = cloud(&cloud_file).objects;
        let r = w.preview(&thing("hello!", "small")).await;
        assert_eq!(ops(&r, "a"), vec![StepOp::Update]);
        assert_eq!(cloud(&cloud_file).objects, before);

        // Update in place.
        let r = w.up(&thing("hello!", "small")).await;
        assert_eq!(ops(&r, "a"), vec![StepOp::Update]);
        let c = cloud(&cloud_file);
        assert_eq!(c.property(&first_id, "value"), Some("hello!"));
        assert_eq!(
            w.resource("a").unwrap().outputs.get("length"),
            Some(&PropertyValue::Number(6.0))
        );

        // Replace (size forces it): create the new one, delete the old.
        let r = w.up(&thing("hello!", "large")).await;
        let a_ops = ops(&r, "a");
        assert!(a_ops.contains(&StepOp::CreateReplacement), "{a_ops:?}");
        assert!(a_ops.contains(&StepOp::DeleteReplaced), "{a_ops:?}");
        let c = cloud(&cloud_file);
        let second_id = w.resource("a").unwrap().id.clone().unwrap();
        assert_ne!(first_id, second_id);
        assert_eq!(c.objects.keys().collect::<Vec<_>>(), vec![&second_id]);
        assert_eq!(c.property(&second_id, "size"), Some("large"));

        // Delete.
        let r = w.up(&nothing()).await;
        assert_eq!(ops(&r, "a"), vec![StepOp::Delete]);
        let c = cloud(&cloud_file);
        assert!(c.objects.is_empty());
        assert!(w.resource("a").is_none());
        let creates = c.log.iter().filter(|l| l.starts_with("create ")).count();
        let deletes = c.log.iter().filter(|l| l.starts_with("delete ")).count();
        assert_eq!((creates, deletes), (2, 2), "{:?}", c.log);
        // Every deployment configured a process of its own.
        assert!(c.log.iter().filter(|l| *l == "configure").count() >= 5);

        // The plugin's stderr and its Engine.Log reached the logger.
        assert!(logs.contains("serving on port"), "{:?}", logs.lines());
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while !logs.contains("configured") && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(
            logs.contains("convergetest  configured"),
            "{:?}",
            logs.lines()
        );

        let pids = loader.pids();
        loader.shutdown().await;
        for pid in pids {
            assert!(wait_dead(pid, Duration::from_secs(5)).await, "{pid} lives");
        }
        assert!(loader.pids().is_empty());
    });
}
