//! An in-test Lambda Invoke API (`POST /2015-03-31/functions/{name}/invocations`, the call
//! `aws lambda invoke` and boto3 make), on 127.0.0.1 and a free port: the way an operator's
//! tool (scripts/efs-drive.py) reaches the function in a test. Each request comes out of
//! [`LambdaApi::next`] as an [`Invoke`]; the test runs it (through the Runtime API, as Lambda
//! does) and answers it with [`Invoke::answer`]: a response, or the function's error with
//! `X-Amz-Function-Error: Unhandled`, as Lambda answers a synchronous invocation.

use std::convert::Infallible;
use std::net::SocketAddr;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

/// One invocation asked for.
pub struct Invoke {
    pub function: String,
    pub event: Value,
    reply: oneshot::Sender<Option<Result<Value, Value>>>,
}

impl Invoke {
    /// Answers the caller: `Ok` the function's response, `Err` its error body.
    pub fn answer(self, result: Result<Value, Value>) {
        let _ = self.reply.send(Some(result));
    }

    /// Refuses it, as Lambda does while the function's one concurrent run is taken (HTTP 429,
    /// `TooManyRequestsException`): the function never ran it.
    pub fn throttle(self) {
        let _ = self.reply.send(None);
    }
}

pub struct LambdaApi {
    addr: SocketAddr,
    requests: mpsc::UnboundedReceiver<Invoke>,
    task: JoinHandle<()>,
}

impl LambdaApi {
    pub async fn start() -> LambdaApi {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the Lambda API");
        let addr = listener.local_addr().expect("Lambda API address");
        let (tx, requests) = mpsc::unbounded_channel();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let tx = tx.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |req| handle(req, tx.clone()));
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        LambdaApi {
            addr,
            requests,
            task,
        }
    }

    /// `http://127.0.0.1:PORT`, for `AWS_ENDPOINT_URL_LAMBDA`.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The next invocation asked for; `None` once the server is gone.
    pub async fn next(&mut self) -> Option<Invoke> {
        self.requests.recv().await
    }
}

impl Drop for LambdaApi {
    fn drop(&mut self) {
        self.task.abort();
    }
}

type Reply = Response<Full<Bytes>>;

async fn handle(
    req: Request<Incoming>,
    tx: mpsc::UnboundedSender<Invoke>,
) -> Result<Reply, Infallible> {
    let (method, path) = (req.method().clone(), req.uri().path().to_string());
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let (&Method::POST, ["2015-03-31", "functions", name, "invocations"]) =
        (&method, parts.as_slice())
    else {
        return Ok(reply(
            StatusCode::NOT_FOUND,
            None,
            json!({"Type": "User", "message": format!("no such route: {method} {path}")}),
        ));
    };
    // As the caller named it (a name: an ARN's colons would come percent-encoded).
    let function = name.to_string();
    let Ok(event) = serde_json::from_slice::<Value>(&body) else {
        return Ok(reply(
            StatusCode::BAD_REQUEST,
            None,
            json!({"Type": "User", "message": "Could not parse request body into json"}),
        ));
    };
    let (reply_tx, reply_rx) = oneshot::channel();
    let _ = tx.send(Invoke {
        function,
        event,
        reply: reply_tx,
    });
    Ok(match reply_rx.await {
        Ok(Some(Ok(response))) => reply(StatusCode::OK, None, response),
        Ok(Some(Err(error))) => reply(StatusCode::OK, Some("Unhandled"), error),
        Ok(None) => {
            let mut r = reply(
                StatusCode::TOO_MANY_REQUESTS,
                None,
                json!({"Type": "User", "message": "Rate Exceeded.", "Reason": "ReservedFunctionConcurrentInvocationLimitExceeded"}),
            );
            r.headers_mut().insert(
                "x-amzn-errortype",
                "TooManyRequestsException".parse().unwrap(),
            );
            r
        }
        Err(_) => reply(
            StatusCode::INTERNAL_SERVER_ERROR,
            None,
            json!({"Type": "Service", "message": "the test dropped the invocation"}),
        ),
    })
}

fn reply(status: StatusCode, function_error: Option<&str>, body: Value) -> Reply {
    let mut b = Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .header("x-amz-executed-version", "$LATEST");
    if let Some(e) = function_error {
        b = b.header("x-amz-function-error", e);
    }
    b.body(Full::new(Bytes::from(body.to_string()))).unwrap()
}
