//! Object-store backend URLs, as Pulumi users already write them (Go CDK
//! `blob` URLs):
//!
//! - `s3://bucket[/prefix][?region=R&endpoint=HOST:PORT&disableSSL=true&s3ForcePathStyle=true]`
//!   (also the newer spellings `disable_https` and `use_path_style`);
//!   credentials from `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` /
//!   `AWS_SESSION_TOKEN`, region from `AWS_REGION` / `AWS_DEFAULT_REGION`,
//!   or the instance's role; without `endpoint=`, the server from
//!   `AWS_ENDPOINT_URL_S3` / `AWS_ENDPOINT_URL` (path-style, as `endpoint=`);
//! - `gs://bucket[/prefix]`; credentials from
//!   `GOOGLE_APPLICATION_CREDENTIALS` or the instance's service account;
//! - `azblob://container[/prefix][?storage_account=A]`; account and key
//!   from `AZURE_STORAGE_ACCOUNT` / `AZURE_STORAGE_KEY` (or the
//!   `AZURE_STORAGE_ACCOUNT_NAME` / `_KEY` forms).
//!
//! A query parameter that is not understood is an error, never ignored: a
//! silently dropped `endpoint` would send state somewhere unexpected.

use std::sync::Arc;

use object_store::aws::AmazonS3Builder;
use object_store::azure::MicrosoftAzureBuilder;
use object_store::gcp::GoogleCloudStorageBuilder;
use object_store::path::Path;
use object_store::ObjectStore;

use crate::error::{BackendError, Result};

/// The URL schemes the object-store backend serves.
pub const OBJECT_STORE_SCHEMES: [&str; 3] = ["s3", "gs", "azblob"];

/// True if `url` names an object-store backend.
pub fn is_object_store_url(url: &str) -> bool {
    OBJECT_STORE_SCHEMES
        .iter()
        .any(|s| url.strip_prefix(s).is_some_and(|r| r.starts_with("://")))
}

/// A parsed object-store URL: the store and the prefix inside it.
#[derive(Debug)]
pub(crate) struct ParsedUrl {
    pub store: Arc<dyn ObjectStore>,
    pub prefix: Path,
}

fn invalid(url: &str, reason: impl Into<String>) -> BackendError {
    BackendError::InvalidUrl {
        url: url.to_owned(),
        reason: reason.into(),
    }
}

fn truthy(v: &str) -> bool {
    matches!(v.to_ascii_lowercase().as_str(), "1" | "true" | "yes")
}

/// Parses `url` and builds its store (credentials from the environment).
pub(crate) fn parse(url: &str) -> Result<ParsedUrl> {
    let parsed = url::Url::parse(url).map_err(|e| invalid(url, e.to_string()))?;
    let bucket = parsed
        .host_str()
        .filter(|h| !h.is_empty())
        .ok_or_else(|| invalid(url, "it names no bucket (s3://BUCKET/PREFIX)"))?
        .to_owned();
    if !parsed.username().is_empty() || parsed.password().is_some() || parsed.port().is_some() {
        return Err(invalid(
            url,
            "credentials and ports do not belong in the URL; use the environment \
             (and `endpoint=HOST:PORT` for a custom endpoint)",
        ));
    }
    let prefix_text = parsed.path().trim_matches('/');
    let prefix = Path::parse(prefix_text)
        .map_err(|e| invalid(url, format!("bad prefix {prefix_text:?}: {e}")))?;
    let query: Vec<(String, String)> = parsed.query_pairs().into_owned().collect();
    let store: Arc<dyn ObjectStore> = match parsed.scheme() {
        "s3" => Arc::new(s3(url, &bucket, &query)?),
        "gs" => {
            no_query(url, &query)?;
            Arc::new(
                GoogleCloudStorageBuilder::from_env()
                    .with_bucket_name(&bucket)
                    .build()
                    .map_err(|e| invalid(url, e.to_string()))?,
            )
        }
        "azblob" => Arc::new(azure(url, &bucket, &query)?),
        other => {
            return Err(invalid(
                url,
                format!("unknown scheme {other:?}; use s3://, gs:// or azblob://"),
            ))
        }
    };
    Ok(ParsedUrl { store, prefix })
}

fn no_query(url: &str, query: &[(String, String)]) -> Result<()> {
    match query.first() {
        Some((k, _)) => Err(invalid(url, format!("unsupported query parameter {k:?}"))),
        None => Ok(()),
    }
}

fn s3(url: &str, bucket: &str, query: &[(String, String)]) -> Result<object_store::aws::AmazonS3> {
    let mut builder = AmazonS3Builder::from_env().with_bucket_name(bucket);
    let mut endpoint = None;
    let mut insecure = false;
    let mut path_style = false;
    for (k, v) in query {
        match k.as_str() {
            "region" => builder = builder.with_region(v),
            "endpoint" => endpoint = Some(v.clone()),
            "disableSSL" | "disable_https" => insecure = truthy(v),
            "s3ForcePathStyle" | "use_path_style" => path_style = truthy(v),
            // The Go SDK generation to use: meaningless here.
            "awssdk" => {}
            "profile" => {
                return Err(invalid(
                    url,
                    "named AWS profiles are not supported yet; export AWS_ACCESS_KEY_ID and \
                     AWS_SECRET_ACCESS_KEY (e.g. `eval $(aws configure export-credentials \
                     --profile P --format env)`)",
                ))
            }
            other => {
                return Err(invalid(
                    url,
                    format!("unsupported query parameter {other:?}"),
                ))
            }
        }
    }
    // Without `endpoint=` in the URL, the AWS SDKs' variables name the
    // server (the S3-specific one first), with the same consequences.
    if let Some(ep) = endpoint.or_else(env_endpoint) {
        let with_scheme = if ep.contains("://") {
            ep
        } else if insecure {
            format!("http://{ep}")
        } else {
            format!("https://{ep}")
        };
        insecure |= with_scheme.starts_with("http://");
        builder = builder.with_endpoint(with_scheme);
        // A custom endpoint (MinIO, Ceph, a local server) rarely serves
        // virtual-hosted buckets.
        path_style = true;
    }
    builder
        .with_allow_http(insecure)
        .with_virtual_hosted_style_request(!path_style)
        .build()
        .map_err(|e| invalid(url, e.to_string()))
}

/// The S3 endpoint the AWS SDKs' environment names, if any:
/// `AWS_ENDPOINT_URL_S3`, else `AWS_ENDPOINT_URL`.
fn env_endpoint() -> Option<String> {
    ["AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"]
        .into_iter()
        .filter_map(|name| std::env::var(name).ok())
        .find(|v| !v.trim().is_empty())
}

fn azure(
    url: &str,
    container: &str,
    query: &[(String, String)],
) -> Result<object_store::azure::MicrosoftAzure> {
    let mut builder = MicrosoftAzureBuilder::from_env().with_container_name(container);
    for var in ["AZURE_STORAGE_ACCOUNT", "AZURE_STORAGE_ACCOUNT_NAME"] {
        if let Ok(v) = std::env::var(var) {
            builder = builder.with_account(v);
        }
    }
    for var in ["AZURE_STORAGE_KEY", "AZURE_STORAGE_ACCOUNT_KEY"] {
        if let Ok(v) = std::env::var(var) {
            builder = builder.with_access_key(v);
        }
    }
    for (k, v) in query {
        match k.as_str() {
            "storage_account" => builder = builder.with_account(v),
            "localemu" => builder = builder.with_use_emulator(truthy(v)),
            other => {
                return Err(invalid(
                    url,
                    format!("unsupported query parameter {other:?}"),
                ))
            }
        }
    }
    builder.build().map_err(|e| invalid(url, e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_object_store_urls() {
        assert!(is_object_store_url("s3://b"));
        assert!(is_object_store_url("gs://b/p"));
        assert!(is_object_store_url("azblob://c"));
        assert!(!is_object_store_url("file://x"));
        assert!(!is_object_store_url("s3:/b"));
        assert!(!is_object_store_url("https://x"));
    }

    #[test]
    fn s3_urls_with_pulumis_parameters() {
        let p = parse(
            "s3://bucket/team/state?endpoint=127.0.0.1:9000&disableSSL=true&s3ForcePathStyle=true&region=us-east-1",
        )
        .unwrap();
        assert_eq!(p.prefix.as_ref(), "team/state");
        let text = p.store.to_string();
        assert!(text.contains("bucket"), "{text}");
        let p = parse("s3://bucket?region=eu-west-1").unwrap();
        assert_eq!(p.prefix.as_ref(), "");
    }

    #[test]
    fn bad_urls_say_why() {
        for (url, want) in [
            ("s3://", "no bucket"),
            ("s3://b?bogus=1", "unsupported query parameter \"bogus\""),
            ("s3://b?profile=dev", "profiles"),
            ("s3://user:pw@b", "credentials"),
            ("gs://b?x=1", "unsupported query parameter"),
            ("azblob://c?nope=1", "unsupported query parameter"),
        ] {
            let e = parse(url).unwrap_err().to_string();
            assert!(e.contains(want), "{url}: {e}");
        }
    }
}
