//! The function binary run as Lambda runs it: a child process speaking to our Runtime API,
//! with the Lambda variables, the SDK's variables (pointed at an emulator or proxy) and the
//! contract's variables. Its stdout and stderr (its logs) are captured.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::runtime_api::{Pending, Report, RuntimeApi};

/// The access key the function signs its AWS calls with: the proxy tells its calls from the
/// test's own by it (`Proxy::faulted_signed_by`).
pub const ACCESS_KEY_ID: &str = "AKIDEXAMPLETESTKEY";

/// How to start the function: the binary and its environment.
#[derive(Clone, Debug)]
pub struct Function {
    binary: PathBuf,
    env: Vec<(String, String)>,
}

impl Function {
    /// The binary at `binary`, its AWS SDK pointed at `endpoint` (moto or the proxy).
    pub fn new(binary: impl Into<PathBuf>, endpoint: &str) -> Function {
        let binary = binary.into();
        assert!(
            binary.exists(),
            "function binary {} not found: build it first (cargo build --bin efs-mount-autoscaler)",
            binary.display()
        );
        let env = [
            ("AWS_LAMBDA_FUNCTION_NAME", "efs-mount-autoscaler"),
            ("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256"),
            ("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST"),
            (
                "AWS_LAMBDA_LOG_STREAM_NAME",
                "2026/11/30/[$LATEST]0123456789abcdef",
            ),
            (
                "AWS_LAMBDA_LOG_GROUP_NAME",
                "/aws/lambda/efs-mount-autoscaler",
            ),
            ("AWS_ENDPOINT_URL", endpoint),
            ("AWS_REGION", "us-east-1"),
            ("AWS_DEFAULT_REGION", "us-east-1"),
            ("AWS_ACCESS_KEY_ID", ACCESS_KEY_ID),
            ("AWS_SECRET_ACCESS_KEY", "test-secret-key"),
            ("AWS_EC2_METADATA_DISABLED", "true"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        Function { binary, env }
    }

    /// Sets (or replaces) one variable.
    pub fn env(mut self, key: &str, value: impl Into<String>) -> Function {
        self.env.retain(|(k, _)| k != key);
        self.env.push((key.to_string(), value.into()));
        self
    }

    /// Sets (or replaces) several variables.
    pub fn envs(mut self, vars: impl IntoIterator<Item = (String, String)>) -> Function {
        for (k, v) in vars {
            self = self.env(&k, v);
        }
        self
    }

    /// Removes a variable.
    pub fn without(mut self, key: &str) -> Function {
        self.env.retain(|(k, _)| k != key);
        self
    }

    pub fn binary(&self) -> &Path {
        &self.binary
    }

    /// A cold start: a new process for this one event, stopped afterwards. The function has
    /// `timeout` (it gets the deadline `now + timeout`), and is killed at it, as Lambda does.
    pub async fn invoke(&self, event: &Value, timeout: Duration) -> Invocation {
        self.invoke_told(event, timeout, timeout).await
    }

    /// A cold start told the deadline `now + told`, and killed only at `now + bound` (at least
    /// `told`): for a test of what the function does with little time, without making a slow
    /// host's start-up fail it. `Invocation::timeout` is `told`.
    pub async fn invoke_told(&self, event: &Value, told: Duration, bound: Duration) -> Invocation {
        let mut instance = self.start().await;
        let mut invocation = instance.invoke_told(event, told, bound).await;
        invocation.logs = instance.stop().await;
        invocation
    }

    /// A cold start told the deadline `now + told` and killed at `now + kill`, even before it.
    pub async fn invoke_killed_at(
        &self,
        event: &Value,
        told: Duration,
        kill: Duration,
    ) -> Invocation {
        let mut instance = self.start().await;
        let mut invocation = instance.invoke_killed_at(event, told, kill).await;
        invocation.logs = instance.stop().await;
        invocation
    }

    /// Starts a process that can serve several invocations (a warm function).
    pub async fn start(&self) -> Instance {
        let (api, reports) = RuntimeApi::start().await;
        let mut cmd = Command::new(&self.binary);
        cmd.env_clear()
            .env("AWS_LAMBDA_RUNTIME_API", api.address())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for key in ["PATH", "RUST_LOG", "RUST_BACKTRACE"] {
            if let Ok(v) = std::env::var(key) {
                cmd.env(key, v);
            }
        }
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", self.binary.display()));
        let logs = Arc::new(Mutex::new(String::new()));
        let readers = vec![
            tokio::spawn(collect(child.stdout.take().unwrap(), logs.clone())),
            tokio::spawn(collect(child.stderr.take().unwrap(), logs.clone())),
        ];
        Instance {
            api,
            reports,
            child,
            exited: None,
            logs,
            readers,
            next_id: 0,
        }
    }
}

/// A running function process with its own Runtime API.
pub struct Instance {
    api: RuntimeApi,
    reports: mpsc::UnboundedReceiver<Report>,
    child: Child,
    exited: Option<String>,
    logs: Arc<Mutex<String>>,
    readers: Vec<JoinHandle<()>>,
    next_id: u32,
}

impl Instance {
    /// Hands the process one event and waits for its answer, its exit, or its deadline.
    pub async fn invoke(&mut self, event: &Value, timeout: Duration) -> Invocation {
        self.invoke_told(event, timeout, timeout).await
    }

    /// [`Instance::invoke`] told the deadline `now + told`, killed at `now + bound` (no sooner
    /// than `told`).
    pub async fn invoke_told(
        &mut self,
        event: &Value,
        told: Duration,
        bound: Duration,
    ) -> Invocation {
        self.invoke_killed_at(event, told, bound.max(told)).await
    }

    /// [`Instance::invoke`] told the deadline `now + told`, killed at `now + kill` even when that
    /// comes first: for a run that must answer before Lambda's deadline (an event's budget).
    pub async fn invoke_killed_at(
        &mut self,
        event: &Value,
        told: Duration,
        kill: Duration,
    ) -> Invocation {
        let (timeout, bound) = (told, kill);
        self.next_id += 1;
        let request_id = format!(
            "00000000-0000-4000-8000-{:06}{:06}",
            std::process::id() % 1_000_000,
            self.next_id
        );
        let started = Instant::now();
        let deadline_ms = epoch_ms() + timeout.as_millis() as u64;
        self.api.enqueue(Pending {
            request_id: request_id.clone(),
            body: Bytes::from(event.to_string()),
            deadline_ms,
        });
        let result = self.wait_for(&request_id, bound).await;
        transcribe(event, &result);
        Invocation {
            request_id,
            result,
            logs: self.logs(),
            elapsed: started.elapsed(),
            timeout,
        }
    }

    async fn wait_for(&mut self, request_id: &str, timeout: Duration) -> Result<Value, Value> {
        // Lambda stops the sandbox at the deadline itself, whatever the function is doing.
        let kill_at = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(status) = &self.exited {
                return Err(self.exit_error(status.clone()).await);
            }
            tokio::select! {
                report = self.reports.recv() => match report {
                    Some(Report::Response(id, body)) if id == request_id => return Ok(body),
                    Some(Report::Error(id, body)) if id == request_id => return Err(body),
                    Some(Report::InitError(body)) => return Err(body),
                    Some(_) => continue,
                    None => return Err(json!({"errorType": "Harness", "errorMessage": "runtime API stopped"})),
                },
                status = self.child.wait() => {
                    let status = status.map(|s| s.to_string()).unwrap_or_else(|e| e.to_string());
                    // Take what it posted before it went away, if anything.
                    while let Ok(report) = self.reports.try_recv() {
                        match report {
                            Report::Response(id, body) if id == request_id => return Ok(body),
                            Report::Error(id, body) if id == request_id => return Err(body),
                            Report::InitError(body) => return Err(body),
                            _ => {}
                        }
                    }
                    self.exited = Some(status);
                }
                _ = tokio::time::sleep_until(kill_at) => {
                    let _ = self.child.kill().await;
                    self.exited = Some("killed at its deadline".into());
                    return Err(json!({
                        "errorType": "Sandbox.Timedout",
                        "errorMessage": format!("Task timed out after {:.2} seconds", timeout.as_secs_f64()),
                    }));
                }
            }
        }
    }

    /// What Lambda reports when the runtime exits before answering (`Runtime.ExitError`); the
    /// message carries the process's last log lines, where a failed init says what was wrong.
    async fn exit_error(&mut self, status: String) -> Value {
        self.drain_logs().await;
        let logs = self.logs();
        let tail: Vec<&str> = logs.lines().rev().take(20).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        json!({
            "errorType": "Runtime.ExitError",
            "errorMessage": format!("RequestId: the runtime exited ({status}) before answering. Last logs:\n{}", tail.join("\n")),
        })
    }

    /// Everything the process has printed so far (stdout and stderr, interleaved by line).
    pub fn logs(&self) -> String {
        self.logs.lock().unwrap().clone()
    }

    /// The process's id, for a kill from another thread.
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Whether the process has exited.
    pub fn has_exited(&mut self) -> bool {
        self.exited.is_some() || matches!(self.child.try_wait(), Ok(Some(_)))
    }

    /// Kills the process and returns all its logs.
    pub async fn stop(mut self) -> String {
        let _ = self.child.kill().await;
        self.drain_logs().await;
        self.logs()
    }

    async fn drain_logs(&mut self) {
        for reader in self.readers.drain(..) {
            let _ = tokio::time::timeout(Duration::from_secs(5), reader).await;
        }
    }
}

/// The outcome of one invocation.
#[derive(Clone, Debug)]
pub struct Invocation {
    pub request_id: String,
    /// The response JSON, or the error body (`{"errorType", "errorMessage"}`).
    pub result: Result<Value, Value>,
    /// The function's logs (for a cold invocation: all of them).
    pub logs: String,
    pub elapsed: Duration,
    pub timeout: Duration,
}

impl Invocation {
    /// The response; panics with the error and the logs when the invocation failed.
    pub fn response(&self) -> &Value {
        match &self.result {
            Ok(v) => v,
            Err(e) => panic!(
                "expected a response, got the error {}\n{}",
                pretty(e),
                self.logs_block()
            ),
        }
    }

    /// The error body; panics with the response and the logs when the invocation succeeded.
    pub fn error(&self) -> &Value {
        match &self.result {
            Err(e) => e,
            Ok(v) => panic!(
                "expected an error, got the response {}\n{}",
                pretty(v),
                self.logs_block()
            ),
        }
    }

    /// `errorType: errorMessage` of the error (panics when the invocation succeeded).
    pub fn error_text(&self) -> String {
        let e = self.error();
        format!(
            "{}: {}",
            e["errorType"].as_str().unwrap_or_default(),
            e["errorMessage"].as_str().unwrap_or(&e.to_string())
        )
    }

    /// Whether the function answered before its deadline.
    pub fn within_deadline(&self) -> bool {
        self.elapsed < self.timeout
    }

    /// The logs, framed for a failure message.
    pub fn logs_block(&self) -> String {
        format!(
            "--- function logs ({}) ---\n{}--- end of logs ---",
            self.request_id, self.logs
        )
    }

    /// A one-screen description: result and logs.
    pub fn describe(&self) -> String {
        let result = match &self.result {
            Ok(v) => format!("response {}", pretty(v)),
            Err(e) => format!("error {}", pretty(e)),
        };
        format!(
            "{result}\nelapsed {:?} of {:?}\n{}",
            self.elapsed,
            self.timeout,
            self.logs_block()
        )
    }
}

pub fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
}

async fn collect(stream: impl AsyncRead + Unpin, logs: Arc<Mutex<String>>) {
    let mut lines = BufReader::new(stream).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let mut logs = logs.lock().unwrap();
        logs.push_str(&line);
        logs.push('\n');
    }
}

/// With `EFS_TRANSCRIPT` set to a file, appends each event and its answer to it as a JSON
/// line: `scripts/transcript.py` compares two suites' answers, to show that a change meant to
/// keep behaviour (a rename, a move) kept every answer.
fn transcribe(event: &Value, result: &Result<Value, Value>) {
    let Some(file) = std::env::var_os("EFS_TRANSCRIPT") else {
        return;
    };
    let (kind, body) = match result {
        Ok(v) => ("response", v),
        Err(e) => ("error", e),
    };
    let mut line = json!({"event": event, kind: body}).to_string();
    line.push('\n');
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&file)
        .and_then(|mut f| std::io::Write::write_all(&mut f, line.as_bytes()));
    if let Err(e) = written {
        panic!("EFS_TRANSCRIPT {}: {e}", Path::new(&file).display());
    }
}

fn epoch_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_millis() as u64
}
