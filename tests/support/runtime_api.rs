//! An in-test Lambda Runtime API (the part of it that `lambda_runtime` 1.x calls), on
//! 127.0.0.1 and a free port:
//!
//! - `GET  /2018-06-01/runtime/invocation/next` answers the next queued event with the headers
//!   `Lambda-Runtime-Aws-Request-Id`, `Lambda-Runtime-Deadline-Ms` (epoch ms),
//!   `Lambda-Runtime-Invoked-Function-Arn` and `Lambda-Runtime-Trace-Id`; it waits while the
//!   queue is empty (a long poll, as on Lambda);
//! - `POST /2018-06-01/runtime/invocation/{id}/response` (the handler's JSON);
//! - `POST /2018-06-01/runtime/invocation/{id}/error` (`{"errorType", "errorMessage"}`);
//! - `POST /2018-06-01/runtime/init/error`.
//!
//! What the function posts comes out of `reports()` as [`Report`]s. One server serves one
//! function process (see `function.rs`), so a poll left waiting by a killed process can never
//! take an event meant for the next one.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, Notify};
use tokio::task::JoinHandle;

pub const FUNCTION_ARN: &str =
    "arn:aws:lambda:us-east-1:123456789012:function:efs-mount-autoscaler";

/// An event waiting for the function's next poll.
#[derive(Clone, Debug)]
pub struct Pending {
    pub request_id: String,
    pub body: Bytes,
    pub deadline_ms: u64,
}

/// What the function told the Runtime API.
#[derive(Clone, Debug)]
pub enum Report {
    /// It took this invocation (`GET …/next` answered).
    Started(String),
    /// `POST …/{id}/response` with this JSON body (or the raw text, as a JSON string).
    Response(String, Value),
    /// `POST …/{id}/error` with this body.
    Error(String, Value),
    /// `POST …/init/error` with this body.
    InitError(Value),
}

struct State {
    queue: Mutex<VecDeque<Pending>>,
    ready: Notify,
    reports: mpsc::UnboundedSender<Report>,
}

pub struct RuntimeApi {
    addr: SocketAddr,
    state: Arc<State>,
    task: JoinHandle<()>,
}

impl RuntimeApi {
    /// Starts the server; what the function posts is sent to the returned receiver.
    pub async fn start() -> (RuntimeApi, mpsc::UnboundedReceiver<Report>) {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the runtime API");
        let addr = listener.local_addr().expect("runtime API address");
        let (tx, rx) = mpsc::unbounded_channel();
        let state = Arc::new(State {
            queue: Mutex::new(VecDeque::new()),
            ready: Notify::new(),
            reports: tx,
        });
        let accept_state = state.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let state = accept_state.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |req| handle(req, state.clone()));
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        (RuntimeApi { addr, state, task }, rx)
    }

    /// `127.0.0.1:PORT`, the value of `AWS_LAMBDA_RUNTIME_API` (no scheme, as on Lambda).
    pub fn address(&self) -> String {
        self.addr.to_string()
    }

    /// Queues an event for the function's next poll.
    pub fn enqueue(&self, pending: Pending) {
        self.state.queue.lock().unwrap().push_back(pending);
        self.state.ready.notify_one();
    }
}

impl Drop for RuntimeApi {
    fn drop(&mut self) {
        self.task.abort();
    }
}

type Reply = Response<Full<Bytes>>;

async fn handle(req: Request<Incoming>, state: Arc<State>) -> Result<Reply, Infallible> {
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let body = match req.into_body().collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => Bytes::new(),
    };
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let reply = match (&method, parts.as_slice()) {
        (&Method::GET, ["2018-06-01", "runtime", "invocation", "next"]) => {
            let pending = next(&state).await;
            let _ = state
                .reports
                .send(Report::Started(pending.request_id.clone()));
            Response::builder()
                .status(StatusCode::OK)
                .header("content-type", "application/json")
                .header("lambda-runtime-aws-request-id", &pending.request_id)
                .header("lambda-runtime-deadline-ms", pending.deadline_ms.to_string())
                .header("lambda-runtime-invoked-function-arn", FUNCTION_ARN)
                .header(
                    "lambda-runtime-trace-id",
                    format!(
                        "Root=1-00000000-{:0>24};Parent=0000000000000001;Sampled=0",
                        pending.request_id.replace('-', "").chars().take(24).collect::<String>()
                    ),
                )
                .body(Full::new(pending.body))
                .unwrap()
        }
        (&Method::POST, ["2018-06-01", "runtime", "invocation", id, "response"]) => {
            let _ = state
                .reports
                .send(Report::Response(id.to_string(), as_json(&body)));
            accepted()
        }
        (&Method::POST, ["2018-06-01", "runtime", "invocation", id, "error"]) => {
            let _ = state
                .reports
                .send(Report::Error(id.to_string(), as_json(&body)));
            accepted()
        }
        (&Method::POST, ["2018-06-01", "runtime", "init", "error"]) => {
            let _ = state.reports.send(Report::InitError(as_json(&body)));
            accepted()
        }
        _ => Response::builder()
            .status(StatusCode::NOT_FOUND)
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(
                json!({"errorMessage": format!("no such route: {method} {path}"), "errorType": "InvalidRequest"})
                    .to_string(),
            )))
            .unwrap(),
    };
    Ok(reply)
}

/// Waits for a queued event (the function's long poll).
async fn next(state: &State) -> Pending {
    loop {
        if let Some(p) = state.queue.lock().unwrap().pop_front() {
            return p;
        }
        state.ready.notified().await;
    }
}

fn accepted() -> Reply {
    Response::builder()
        .status(StatusCode::ACCEPTED)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from_static(b"{\"status\":\"OK\"}")))
        .unwrap()
}

fn as_json(body: &Bytes) -> Value {
    serde_json::from_slice(body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(body).into_owned()))
}
