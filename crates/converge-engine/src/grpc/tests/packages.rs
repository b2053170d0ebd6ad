//! `RegisterPackage` over the wire: references, and what a request with an
//! unknown or mismatched one is told.

use converge_proto::pulumirpc::{Parameterization, RegisterPackageRequest};

use super::*;

fn package(name: &str, value: &[u8]) -> RegisterPackageRequest {
    RegisterPackageRequest {
        name: "pkg".to_owned(),
        version: "1.0.0".to_owned(),
        parameterization: Some(Parameterization {
            name: name.to_owned(),
            version: "2.0.0".to_owned(),
            value: value.to_vec(),
        }),
        ..RegisterPackageRequest::default()
    }
}

async fn register_package(c: &mut Clients, req: RegisterPackageRequest) -> Result<String, String> {
    c.monitor
        .register_package(req)
        .await
        .map(|r| r.into_inner().r#ref)
        .map_err(|s| format!("{:?}: {}", s.code(), s.message()))
}

#[tokio::test]
async fn package_references_are_checked_and_stable() {
    let program = grpc_program(|mut c| async move {
        let stack = stack(&mut c).await?;
        let first = register_package(&mut c, package("alpha", b"A")).await?;
        let again = register_package(&mut c, package("alpha", b"A")).await?;
        assert_eq!(first, again, "the same package gets the same reference");
        let other = register_package(&mut c, package("beta", b"B")).await?;
        assert_ne!(first, other);

        let err = register_package(&mut c, package("alpha", b"other"))
            .await
            .unwrap_err();
        assert!(err.starts_with("InvalidArgument"), "{err}");
        assert!(err.contains("package alpha is registered twice"), "{err}");
        let mut bad = package("gamma", b"C");
        bad.parameterization.as_mut().unwrap().version = "two".to_owned();
        let err = register_package(&mut c, bad).await.unwrap_err();
        assert!(err.contains("\"two\" is not a semantic version"), "{err}");
        let mut extension = package("delta", b"D");
        extension.extension = extension.parameterization.take();
        let err = register_package(&mut c, extension).await.unwrap_err();
        assert!(err.starts_with("Unimplemented"), "{err}");

        let mut unknown = request("alpha:index:Thing", "r", true, &stack);
        unknown.package_ref = "no-such-ref".to_owned();
        let err = register(&mut c, unknown).await.unwrap_err();
        assert!(err.starts_with("InvalidArgument"), "{err}");
        assert!(
            err.contains("unknown package reference \"no-such-ref\""),
            "{err}"
        );
        let mut mismatched = request("beta:index:Thing", "r", true, &stack);
        mismatched.package_ref = first;
        let err = register(&mut c, mismatched).await.unwrap_err();
        assert!(err.contains("is to package alpha, not beta"), "{err}");
        Ok(())
    });
    let result = up(empty(), MockProvider::new("pkg"), &program).await;
    assert_eq!(result.error, None);
}
