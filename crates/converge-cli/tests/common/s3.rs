//! The S3-compatible server scripts/test starts on 127.0.0.1.

/// An `s3://` backend URL under a fresh prefix of the test bucket, or
/// `None` (skip) outside CI when no server runs.
pub fn s3_backend_url(prefix: &str) -> Option<String> {
    let Some(endpoint) = std::env::var_os("CONVERGE_TEST_S3_ENDPOINT") else {
        if std::env::var_os("CI").is_some() {
            panic!("CONVERGE_TEST_S3_ENDPOINT is not set: run scripts/test");
        }
        eprintln!("SKIPPED: set CONVERGE_TEST_S3_ENDPOINT (scripts/test does) for the S3 tests");
        return None;
    };
    let bucket =
        std::env::var("CONVERGE_TEST_S3_BUCKET").unwrap_or_else(|_| "converge-test".to_owned());
    Some(format!(
        "s3://{bucket}/{prefix}-{}?endpoint={}&disableSSL=true&s3ForcePathStyle=true&region=us-east-1",
        uuid::Uuid::new_v4().simple(),
        endpoint.to_string_lossy()
    ))
}
