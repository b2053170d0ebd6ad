//! AWS KMS as a [`KeyService`]: gocloud's `awskms://` URL, and KMS's JSON
//! API (`TrentService.Encrypt` / `Decrypt`) signed with SigV4 and sent with
//! reqwest.
//!
//! URL: `awskms://KEYID?region=R`, the key id being the URL's host and
//! path (`awskms://alias/NAME`, `awskms://1234abcd-…`), or
//! `awskms:///arn:aws:kms:…` for an ARN (a leading `/` is dropped, as
//! gocloud does). Query parameters: `region`, `endpoint` (a full URL, for a
//! local KMS server), `awssdk` (gocloud's choice of AWS SDK, irrelevant
//! here). Anything else is refused by name rather than ignored.
//!
//! Credentials come from the standard environment variables
//! (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`); the
//! region from the URL, else an ARN key id, else `AWS_REGION` or
//! `AWS_DEFAULT_REGION`; the endpoint from the URL, else
//! `AWS_ENDPOINT_URL_KMS`, else `AWS_ENDPOINT_URL`, else AWS's own.

use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use aws_credential_types::Credentials;
use aws_sigv4::http_request::{sign, SignableBody, SignableRequest, SigningSettings};
use aws_sigv4::sign::v4;
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use serde_json::json;

use super::{KeyService, KeyServiceError};

/// The URL scheme of AWS KMS keys.
pub const SCHEME: &str = "awskms";

const KNOWN_PARAMS: [&str; 3] = ["region", "endpoint", "awssdk"];
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
const CREDENTIALS_HELP: &str =
    "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for temporary \
     credentials) to credentials allowed to use the key";

/// An `awskms://` URL, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AwsKmsUrl {
    pub key_id: String,
    pub region: Option<String>,
    pub endpoint: Option<String>,
}

impl AwsKmsUrl {
    /// Parses `url`; the error says what is wrong with it.
    pub fn parse(url: &str) -> Result<AwsKmsUrl, String> {
        let rest = url
            .strip_prefix("awskms://")
            .ok_or_else(|| "an AWS KMS key URL starts with `awskms://`".to_owned())?;
        let (key, query) = match rest.split_once('?') {
            Some((k, q)) => (k, Some(q)),
            None => (rest, None),
        };
        let key_id = key.trim_start_matches('/').trim_end_matches('/');
        if key_id.is_empty() {
            return Err(
                "it names no key: use `awskms://KEYID`, `awskms://alias/NAME` or \
                        `awskms:///arn:aws:kms:REGION:ACCOUNT:key/ID`"
                    .to_owned(),
            );
        }
        let mut parsed = AwsKmsUrl {
            key_id: percent_decode(key_id)?,
            region: None,
            endpoint: None,
        };
        for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            let value = percent_decode(value)?;
            match name {
                "region" => parsed.region = Some(value).filter(|v| !v.is_empty()),
                "endpoint" => parsed.endpoint = Some(value).filter(|v| !v.is_empty()),
                "awssdk" => {}
                "profile" => {
                    return Err(
                        "named AWS profiles (`profile=`) are not supported by Converge: \
                         remove the parameter and set AWS_ACCESS_KEY_ID and \
                         AWS_SECRET_ACCESS_KEY"
                            .to_owned(),
                    )
                }
                other => {
                    return Err(format!(
                        "unknown parameter `{other}` (Converge knows {})",
                        KNOWN_PARAMS.join(", ")
                    ))
                }
            }
        }
        Ok(parsed)
    }

    /// The region: the URL's, else the ARN's, else the environment's.
    fn region(&self) -> Option<String> {
        self.region
            .clone()
            .or_else(|| {
                let mut parts = self.key_id.strip_prefix("arn:")?.split(':');
                let region = parts.nth(2)?;
                (!region.is_empty()).then(|| region.to_owned())
            })
            .or_else(|| env_nonempty("AWS_REGION"))
            .or_else(|| env_nonempty("AWS_DEFAULT_REGION"))
    }

    fn endpoint(&self, region: &str) -> String {
        let endpoint = self
            .endpoint
            .clone()
            .or_else(|| env_nonempty("AWS_ENDPOINT_URL_KMS"))
            .or_else(|| env_nonempty("AWS_ENDPOINT_URL"))
            .unwrap_or_else(|| format!("https://kms.{region}.amazonaws.com"));
        let endpoint = if endpoint.contains("://") {
            endpoint
        } else {
            format!("https://{endpoint}")
        };
        let endpoint = endpoint.trim_end_matches('/');
        // KMS's JSON API is served at the root path.
        format!("{endpoint}/")
    }
}

fn env_nonempty(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn percent_decode(text: &str) -> Result<String, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = text
                    .get(i + 1..i + 3)
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or_else(|| format!("bad percent-escape in {text:?}"))?;
                out.push(hex);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).map_err(|_| format!("{text:?} is not UTF-8 once unescaped"))
}

/// A KMS key reached over KMS's JSON API.
#[derive(Debug)]
pub struct AwsKms {
    key_id: String,
    region: String,
    endpoint: String,
    client: reqwest::Client,
}

impl AwsKms {
    /// The key `url` names. Fails when no region can be found.
    pub fn open(url: &str) -> Result<AwsKms, KeyServiceError> {
        let parsed = AwsKmsUrl::parse(url).map_err(KeyServiceError::BadUrl)?;
        let region = parsed.region().ok_or_else(|| {
            KeyServiceError::BadUrl(
                "no AWS region: add `?region=REGION` to the URL or set AWS_REGION".to_owned(),
            )
        })?;
        let client = reqwest::Client::builder()
            .timeout(REQUEST_TIMEOUT)
            .build()
            .map_err(|e| {
                KeyServiceError::Unreachable(format!("cannot make an HTTP client: {e}"))
            })?;
        Ok(AwsKms {
            endpoint: parsed.endpoint(&region),
            key_id: parsed.key_id,
            region,
            client,
        })
    }

    fn credentials() -> Result<Credentials, KeyServiceError> {
        let (Some(id), Some(secret)) = (
            env_nonempty("AWS_ACCESS_KEY_ID"),
            env_nonempty("AWS_SECRET_ACCESS_KEY"),
        ) else {
            return Err(KeyServiceError::Credentials(format!(
                "no AWS credentials: {CREDENTIALS_HELP}"
            )));
        };
        Ok(Credentials::new(
            id,
            secret,
            env_nonempty("AWS_SESSION_TOKEN"),
            None,
            "environment",
        ))
    }

    /// One signed call of KMS's JSON API; the reply's JSON body.
    async fn call(
        &self,
        action: &str,
        body: serde_json::Value,
    ) -> Result<serde_json::Value, KeyServiceError> {
        let body = body.to_string();
        let target = format!("TrentService.{action}");
        let content_type = "application/x-amz-json-1.1";
        let identity = Self::credentials()?.into();
        let params = v4::SigningParams::builder()
            .identity(&identity)
            .region(&self.region)
            .name("kms")
            .time(SystemTime::now())
            .settings(SigningSettings::default())
            .build()
            .map_err(|e| KeyServiceError::Credentials(format!("cannot sign the request: {e}")))?
            .into();
        let headers = [("content-type", content_type), ("x-amz-target", &target)];
        let signable = SignableRequest::new(
            "POST",
            self.endpoint.as_str(),
            headers.iter().copied(),
            SignableBody::Bytes(body.as_bytes()),
        )
        .map_err(|e| KeyServiceError::BadUrl(format!("endpoint {}: {e}", self.endpoint)))?;
        let (instructions, _) = sign(signable, &params)
            .map_err(|e| KeyServiceError::Credentials(format!("cannot sign the request: {e}")))?
            .into_parts();
        let mut request = self
            .client
            .post(&self.endpoint)
            .header("content-type", content_type)
            .header("x-amz-target", &target)
            .body(body);
        for (name, value) in instructions.headers() {
            request = request.header(name, value);
        }
        let response = request.send().await.map_err(|e| {
            KeyServiceError::Unreachable(format!("{} did not answer: {}", self.endpoint, chain(&e)))
        })?;
        let status = response.status();
        let text = response.text().await.map_err(|e| {
            KeyServiceError::Unreachable(format!("{}: reply lost: {}", self.endpoint, chain(&e)))
        })?;
        let reply: serde_json::Value = serde_json::from_str(&text).map_err(|_| {
            KeyServiceError::Unexpected(format!(
                "{} answered HTTP {status} with a body that is not KMS's JSON; is it a KMS endpoint?",
                self.endpoint
            ))
        })?;
        if status.is_success() {
            return Ok(reply);
        }
        Err(service_error(status, &reply))
    }

    fn blob(reply: &serde_json::Value, field: &str) -> Result<Vec<u8>, KeyServiceError> {
        reply
            .get(field)
            .and_then(serde_json::Value::as_str)
            .and_then(|b| B64.decode(b).ok())
            .ok_or_else(|| {
                KeyServiceError::Unexpected(format!("KMS's reply has no base64 `{field}`"))
            })
    }
}

/// The error of a KMS reply that is not a success.
fn service_error(status: reqwest::StatusCode, reply: &serde_json::Value) -> KeyServiceError {
    let kind = reply
        .get("__type")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("");
    // The type may carry a namespace: `com.amazonaws.kms#NotFoundException`.
    let kind = kind.rsplit('#').next().unwrap_or(kind).to_owned();
    let message = ["message", "Message"]
        .iter()
        .find_map(|k| reply.get(*k).and_then(serde_json::Value::as_str))
        .unwrap_or("")
        .trim()
        .to_owned();
    let detail = if message.is_empty() {
        format!("{kind} (HTTP {status})")
    } else {
        format!("{kind}: {message}")
    };
    match kind.as_str() {
        "NotFoundException" => KeyServiceError::KeyNotFound(detail),
        "DisabledException" | "KMSInvalidStateException" | "KeyUnavailableException" => {
            KeyServiceError::KeyUnusable(detail)
        }
        "AccessDeniedException" | "IncorrectKeyException" | "InvalidCiphertextException" => {
            KeyServiceError::Denied(detail)
        }
        "UnrecognizedClientException"
        | "InvalidSignatureException"
        | "ExpiredTokenException"
        | "MissingAuthenticationTokenException" => {
            KeyServiceError::Credentials(format!("{detail}; {CREDENTIALS_HELP}"))
        }
        _ => KeyServiceError::Unexpected(detail),
    }
}

/// An error with its causes, for transport failures whose top line is
/// vague ("error sending request").
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let line = s.to_string();
        if !text.contains(&line) {
            text.push_str(": ");
            text.push_str(&line);
        }
        source = s.source();
    }
    text
}

#[async_trait]
impl KeyService for AwsKms {
    async fn encrypt(&self, plaintext: &[u8]) -> Result<Vec<u8>, KeyServiceError> {
        let reply = self
            .call(
                "Encrypt",
                json!({ "KeyId": self.key_id, "Plaintext": B64.encode(plaintext) }),
            )
            .await?;
        Self::blob(&reply, "CiphertextBlob")
    }

    async fn decrypt(&self, ciphertext: &[u8]) -> Result<Vec<u8>, KeyServiceError> {
        // The key id goes along, so a data key another key encrypted is
        // refused instead of silently decrypted with that other key.
        let reply = self
            .call(
                "Decrypt",
                json!({ "KeyId": self.key_id, "CiphertextBlob": B64.encode(ciphertext) }),
            )
            .await?;
        Self::blob(&reply, "Plaintext")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(key: &str, region: Option<&str>, endpoint: Option<&str>) -> AwsKmsUrl {
        AwsKmsUrl {
            key_id: key.to_owned(),
            region: region.map(str::to_owned),
            endpoint: endpoint.map(str::to_owned),
        }
    }

    #[test]
    fn parses_gocloud_key_forms() {
        assert_eq!(
            AwsKmsUrl::parse("awskms://1234abcd-12ab-34cd?region=us-east-2").unwrap(),
            url("1234abcd-12ab-34cd", Some("us-east-2"), None)
        );
        assert_eq!(
            AwsKmsUrl::parse("awskms://alias/my-stack?region=eu-west-1&awssdk=v2").unwrap(),
            url("alias/my-stack", Some("eu-west-1"), None)
        );
        let arn = "arn:aws:kms:ap-south-1:111122223333:key/1234abcd";
        let parsed = AwsKmsUrl::parse(&format!("awskms:///{arn}")).unwrap();
        assert_eq!(parsed, url(arn, None, None));
        assert_eq!(parsed.region().as_deref(), Some("ap-south-1"));
        assert_eq!(
            AwsKmsUrl::parse("awskms://k?region=r&endpoint=http%3A%2F%2F127.0.0.1%3A5000").unwrap(),
            url("k", Some("r"), Some("http://127.0.0.1:5000"))
        );
        assert_eq!(
            url("k", Some("r"), Some("http://127.0.0.1:5000/")).endpoint("r"),
            "http://127.0.0.1:5000/"
        );
        assert_eq!(
            url("k", Some("r"), Some("localhost:4566")).endpoint("r"),
            "https://localhost:4566/"
        );
    }

    #[test]
    fn refuses_what_it_cannot_honour() {
        for (bad, says) in [
            ("s3://bucket", "awskms://"),
            ("awskms://", "names no key"),
            ("awskms:///?region=r", "names no key"),
            ("awskms://k?profile=dev", "profile"),
            ("awskms://k?regoin=us-east-1", "unknown parameter `regoin`"),
            ("awskms://k?region=%zz", "percent-escape"),
        ] {
            let err = AwsKmsUrl::parse(bad).unwrap_err();
            assert!(err.contains(says), "{bad}: {err}");
        }
    }

    #[test]
    fn service_errors_are_classified() {
        let e = service_error(
            reqwest::StatusCode::BAD_REQUEST,
            &json!({"__type": "com.amazonaws.kms#NotFoundException", "message": "Alias x is not found."}),
        );
        assert!(
            matches!(&e, KeyServiceError::KeyNotFound(m) if m.contains("Alias x")),
            "{e}"
        );
        let e = service_error(
            reqwest::StatusCode::BAD_REQUEST,
            &json!({"__type": "AccessDeniedException"}),
        );
        assert!(
            matches!(&e, KeyServiceError::Denied(m) if m.contains("HTTP 400")),
            "{e}"
        );
        let e = service_error(
            reqwest::StatusCode::BAD_REQUEST,
            &json!({"__type": "UnrecognizedClientException", "Message": "bad token"}),
        );
        assert!(matches!(&e, KeyServiceError::Credentials(m) if m.contains("AWS_ACCESS_KEY_ID")));
    }
}
