//! A real HTTP server on 127.0.0.1 serving files from memory (path →
//! bytes), for tests of network mirrors and registries. Tests may change a
//! file while it runs (to serve a tampered archive). 404 for anything else.
//! Runs on a thread of its own until dropped.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

type Files = Arc<Mutex<HashMap<String, Vec<u8>>>>;

/// The server; stops when dropped.
#[derive(Debug)]
pub struct FileServer {
    /// `127.0.0.1:PORT`.
    pub address: String,
    files: Files,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FileServer {
    pub fn start() -> FileServer {
        let files: Files = Arc::default();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let served = files.clone();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                let app = axum::Router::new().fallback(move |uri: axum::http::Uri| {
                    let served = served.clone();
                    async move {
                        let body = served.lock().unwrap().get(uri.path()).cloned();
                        match body {
                            Some(b) => (axum::http::StatusCode::OK, b),
                            None => (axum::http::StatusCode::NOT_FOUND, Vec::new()),
                        }
                    }
                });
                axum::serve(listener, app)
                    .with_graceful_shutdown(async {
                        let _ = stopped.await;
                    })
                    .await
                    .unwrap();
            });
        });
        FileServer {
            address,
            files,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// Serves `bytes` at `path` (from the root, `/…`).
    pub fn put(&self, path: &str, bytes: impl Into<Vec<u8>>) {
        self.files
            .lock()
            .unwrap()
            .insert(path.to_owned(), bytes.into());
    }

    /// `http://127.0.0.1:PORT` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address)
    }
}

impl Drop for FileServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
