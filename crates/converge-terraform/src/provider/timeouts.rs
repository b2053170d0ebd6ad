//! Custom timeouts (`customTimeouts`) on Terraform calls. Past its
//! timeout a call's provider is sent `StopProvider`, as Terraform does on
//! an interrupt. A create or update is still waited for after that: the
//! object it may have made must be recorded (a partial failure naming the
//! timeout), never lost. A read or delete is abandoned: the state keeps
//! the object, and the next run reads or deletes it again.

use std::future::Future;
use std::time::Duration;

use super::*;

/// How a call under a timeout ended.
pub(super) enum Timed<T> {
    InTime(T),
    /// After its timeout (and a `StopProvider`).
    Late(T),
}

impl TerraformProvider {
    /// The error text of a call past its timeout.
    pub(super) fn late(&self, urn: &Urn, what: &str, timeout: Option<Duration>) -> String {
        format!(
            "{urn}: {what} did not finish within its custom timeout ({:?}); Terraform provider {} was asked to stop",
            timeout.unwrap_or_default(),
            self.package
        )
    }

    /// Runs `call`; past `timeout`, stops the provider and waits on.
    pub(super) async fn keeping<T>(
        &self,
        s: &Session,
        timeout: Option<Duration>,
        call: impl Future<Output = T>,
    ) -> Timed<T> {
        let Some(t) = timeout else {
            return Timed::InTime(call.await);
        };
        let mut call = std::pin::pin!(call);
        match tokio::time::timeout(t, &mut call).await {
            Ok(r) => Timed::InTime(r),
            Err(_) => {
                self.stop(s).await;
                Timed::Late(call.await)
            }
        }
    }

    /// Runs `call`; past `timeout`, stops the provider and gives up on it.
    pub(super) async fn abandoning<T>(
        &self,
        s: &Session,
        timeout: Option<Duration>,
        urn: &Urn,
        what: &str,
        call: impl Future<Output = Result<T, ProviderError>>,
    ) -> Result<T, ProviderError> {
        let Some(t) = timeout else {
            return call.await;
        };
        match tokio::time::timeout(t, call).await {
            Ok(r) => r,
            Err(_) => {
                self.stop(s).await;
                Err(failed(self.late(urn, what, timeout)))
            }
        }
    }

    /// `StopProvider`, best effort: a provider that cannot stop is
    /// reported, not fatal.
    async fn stop(&self, s: &Session) {
        match s
            .client()
            .stop_provider(tf::stop_provider::Request {})
            .await
        {
            Ok(r) if r.get_ref().error.is_empty() => {}
            Ok(r) => tracing::warn!(
                package = self.package,
                "StopProvider: {}",
                r.get_ref().error
            ),
            Err(e) => tracing::warn!(package = self.package, "StopProvider: {}", e.message()),
        }
    }
}
