//! `--event-log`: the command's engine events in Pulumi's form
//! (`converge_engine::events::pulumi`), delivered both ways the Automation
//! API SDKs read them:
//!
//! - a file path: one JSON event per line, each line written whole and
//!   flushed as it comes (the SDKs tail the file);
//! - `tcp://HOST:PORT`: a `pulumirpc.Events/StreamEvents` call to the
//!   server the SDK runs there, one `EventRequest` per event.
//!
//! `--json` of an update, refresh or destroy writes the same lines to
//! stdout ([`EventLog::stdout`]), as Pulumi's streaming JSON display does.
//!
//! The stream ends with Pulumi's `cancelEvent` when the command is done
//! ([`EventLog::close`]), whatever became of it: the SDKs stop reading on
//! it.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::sync::{Arc, Mutex};

use anyhow::{bail, Context as _, Result};
use converge_engine::events::pulumi::{PulumiEventOptions, PulumiEvents};
use converge_engine::EngineEvent;
use converge_proto::pulumirpc::events_client::EventsClient;
use converge_proto::pulumirpc::EventRequest;
use tokio::sync::mpsc;

/// How long closing waits for the SDK's server to take the last events.
const CLOSE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The event log of one command, shared by the renderers of each
/// operation it runs.
#[derive(Debug, Clone)]
pub struct EventLog {
    inner: Arc<Mutex<Inner>>,
}

#[derive(Debug)]
struct Inner {
    events: PulumiEvents,
    transport: Transport,
    /// The first failure to deliver, reported once at the end.
    failure: Option<String>,
    /// Whether any event was delivered.
    delivered: bool,
}

#[derive(Debug)]
enum Transport {
    File(std::io::BufWriter<std::fs::File>),
    /// `--json` of an update: one event a line on stdout.
    Stdout,
    Stream {
        tx: Option<mpsc::UnboundedSender<EventRequest>>,
        call: tokio::task::JoinHandle<Result<(), tonic::Status>>,
    },
    Closed,
}

impl EventLog {
    /// Opens `target`: `tcp://HOST:PORT` or a file path.
    pub async fn open(target: &str, options: PulumiEventOptions) -> Result<EventLog> {
        let transport = match target.strip_prefix("tcp://") {
            Some(address) => {
                if address.is_empty() {
                    bail!("--event-log {target}: expected tcp://HOST:PORT");
                }
                let endpoint = tonic::transport::Endpoint::from_shared(format!("http://{address}"))
                    .with_context(|| format!("--event-log {target}: not an address"))?;
                let channel = endpoint.connect().await.with_context(|| {
                    format!("--event-log {target}: cannot connect to the event server")
                })?;
                let (tx, rx) = mpsc::unbounded_channel();
                let mut client = EventsClient::new(channel);
                let call = tokio::spawn(async move {
                    client
                        .stream_events(tokio_stream::wrappers::UnboundedReceiverStream::new(rx))
                        .await
                        .map(|_| ())
                });
                Transport::Stream { tx: Some(tx), call }
            }
            None => {
                let file = std::fs::OpenOptions::new()
                    .create(true)
                    .write(true)
                    .truncate(true)
                    .open(target)
                    .with_context(|| format!("--event-log {target}: cannot open the file"))?;
                Transport::File(std::io::BufWriter::new(file))
            }
        };
        Ok(EventLog {
            inner: Arc::new(Mutex::new(Inner {
                events: PulumiEvents::new(options),
                transport,
                failure: None,
                delivered: false,
            })),
        })
    }

    /// The events of `--json`, to stdout: each line written whole as it
    /// comes.
    pub fn stdout(options: PulumiEventOptions) -> EventLog {
        EventLog {
            inner: Arc::new(Mutex::new(Inner {
                events: PulumiEvents::new(options),
                transport: Transport::Stdout,
                failure: None,
                delivered: false,
            })),
        }
    }

    /// The `preludeEvent` of an operation about to run with `config`
    /// (`key → value`, secrets as the caller shows them).
    pub fn prelude(&self, config: &BTreeMap<String, String>, planning: bool) {
        let mut inner = self.lock();
        let event = inner.events.prelude(config, planning);
        inner.deliver(&event);
    }

    /// Writes what one engine event becomes.
    pub fn record(&self, event: &EngineEvent) {
        let mut inner = self.lock();
        for e in inner.events.translate(event) {
            inner.deliver(&e);
        }
    }

    /// Ends the stream with the `cancelEvent` and waits (a bounded time)
    /// for the server to take it. A delivery that failed is a warning:
    /// the command's own outcome stands.
    pub async fn close(self) {
        let (transport, failure) = {
            let mut inner = self.lock();
            // Stdout that carried no operation (`refresh --preview-only
            // --json` prints a digest) gets no lone `cancelEvent`; the
            // SDKs reading a file or a stream wait for it, always.
            if inner.delivered || !matches!(inner.transport, Transport::Stdout) {
                let cancel = inner.events.cancel();
                inner.deliver(&cancel);
            }
            let transport = std::mem::replace(&mut inner.transport, Transport::Closed);
            (transport, inner.failure.take())
        };
        let mut failure = failure;
        if let Transport::Stream { tx, call } = transport {
            drop(tx);
            match tokio::time::timeout(CLOSE_TIMEOUT, call).await {
                Ok(Ok(Ok(()))) => {}
                Ok(Ok(Err(status))) => {
                    failure
                        .get_or_insert(format!("the event server answered: {}", status.message()));
                }
                Ok(Err(e)) => {
                    failure.get_or_insert(e.to_string());
                }
                Err(_) => {
                    failure.get_or_insert("the event server did not take the events".to_owned());
                }
            }
        }
        if let Some(f) = failure {
            eprintln!("warning: the event log is incomplete: {f}");
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Inner {
    fn deliver(&mut self, event: &serde_json::Value) {
        self.delivered = true;
        let result = match &mut self.transport {
            Transport::File(file) => {
                let mut line = event.to_string();
                line.push('\n');
                file.write_all(line.as_bytes())
                    .and_then(|()| file.flush())
                    .map_err(|e| e.to_string())
            }
            Transport::Stdout => {
                let mut line = event.to_string();
                line.push('\n');
                let mut out = std::io::stdout().lock();
                out.write_all(line.as_bytes())
                    .and_then(|()| out.flush())
                    .map_err(|e| e.to_string())
            }
            Transport::Stream { tx: Some(tx), .. } => tx
                .send(EventRequest {
                    event: event.to_string(),
                })
                .map_err(|_| "the event server closed the stream".to_owned()),
            Transport::Stream { tx: None, .. } | Transport::Closed => Ok(()),
        };
        if let Err(e) = result {
            self.failure.get_or_insert(e);
        }
    }
}
