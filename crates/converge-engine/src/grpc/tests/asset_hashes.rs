//! File assets and archives get their hashes when registered over the
//! wire, as Pulumi's engine computes them; a file that is not there fails
//! the registration, naming it.

use converge_model::{sha256_hex, Archive, Asset};

use super::*;

#[tokio::test]
async fn registered_file_assets_and_archives_carry_their_hashes() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("index.html");
    std::fs::write(&file, "<h1>hi</h1>").unwrap();
    std::fs::create_dir(dir.path().join("site")).unwrap();
    std::fs::write(dir.path().join("site/a.txt"), "a").unwrap();
    let file = file.display().to_string();
    let site = dir.path().join("site").display().to_string();
    let missing = dir.path().join("missing.txt").display().to_string();

    let program = grpc_program(move |mut c| {
        let (file, site, missing) = (file.clone(), site.clone(), missing.clone());
        async move {
            let stack = stack(&mut c).await?;
            let mut thing = request("pkg:index:Thing", "t", true, &stack);
            thing.object = Some(wire(props([
                (
                    "page",
                    PropertyValue::Asset(Box::new(Asset::from_path(file.as_str()))),
                ),
                (
                    "code",
                    PropertyValue::Archive(Box::new(Archive {
                        path: Some(site),
                        ..Archive::default()
                    })),
                ),
            ])));
            register(&mut c, thing).await?;

            let mut broken = request("pkg:index:Thing", "broken", true, &stack);
            broken.object = Some(wire(props([(
                "page",
                PropertyValue::Asset(Box::new(Asset::from_path(missing.as_str()))),
            )])));
            let err = register(&mut c, broken).await.unwrap_err();
            assert!(err.starts_with("InvalidArgument"), "{err}");
            assert!(err.contains("missing.txt"), "{err}");
            Ok(())
        }
    });
    let result = up(empty(), MockProvider::new("pkg"), &program).await;
    assert_eq!(result.error, None);
    let t = named(&result, "t");
    let PropertyValue::Asset(page) = &t.inputs["page"] else {
        panic!("{:?}", t.inputs)
    };
    assert_eq!(page.hash, sha256_hex(b"<h1>hi</h1>"));
    let PropertyValue::Archive(code) = &t.inputs["code"] else {
        panic!("{:?}", t.inputs)
    };
    assert_eq!(code.hash.len(), 64, "{code:?}");
    assert!(result
        .snapshot
        .resources
        .iter()
        .all(|r| r.urn.name() != "broken"));
}
