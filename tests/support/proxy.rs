//! A fault-injecting HTTP proxy between the function's SDK and moto. It forwards every request,
//! names its operation (EFS by method and path, SSM and ECS by `X-Amz-Target`, EC2 by the form
//! body's `Action`), counts it, and, as a test asks:
//!
//! - answers the first K requests of an operation with a throttling error in that service's wire
//!   format, or with a 5xx;
//! - makes mount targets created through it look `creating` (in the `CreateMountTarget` answer,
//!   and in the first K `DescribeMountTargets` answers that include them), as on AWS, where a
//!   new target takes a minute or two to become `available` (moto makes it available at once);
//! - stalls chosen requests (never answers them), as a hung connection does; or every request
//!   after the next N (a run that hangs from some point on, for the harness to kill); or lets a
//!   request through and loses its answer (AWS did it, the caller never hears);
//! - plays what AWS refuses and moto allows: a subnet CreateMountTarget refuses (no free
//!   addresses, a Local Zone), a One Zone file system (its AZ in DescribeFileSystems, any
//!   other AZ refused with `AvailabilityZonesMismatch`), an ECS service run by another
//!   deployment controller (UpdateService refuses to force a deployment), a rollout that
//!   failed, a file system that is not `available`;
//! - plays what AWS does and moto does not: a deleted mount target stays `deleting` for a few
//!   describes, and a delete retried meanwhile is refused (`IncorrectMountTargetState`, or
//!   `MountTargetNotFound`); pages of `DescribeMountTargets` (`Marker`/`NextMarker`) and of
//!   `DescribeSubnets` (`nextToken`); `DescribeServices` refusing more than 10 services; a
//!   deployment forced during a rollout leaving several `ACTIVE` deployments with tasks; and
//!   SSM's 4,096-character limit on a Standard parameter's value (`ValidationException`);
//!   SSM reads that lag a write (a GetParameter right after a PutParameter answering the
//!   previous version, or `ParameterNotFound` for a new parameter: `stale.rs`); throttling
//!   across services at once (`throttle_services`);
//! - plays ECS tasks, which moto's services never start: ListTasks and DescribeTasks answer
//!   from the proxy's own tasks, replaced ones stopping step by step (`tasks.rs`).

mod deleting;
mod paging;
mod stale;
mod tasks;

use std::collections::{BTreeMap, HashMap};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::HeaderName;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{HeaderMap, Method, Request, Response, StatusCode};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// The operations that change something. `mutating_calls()` reports any request whose
/// operation is one of these or starts with a mutating verb.
pub const MUTATING: &[&str] = &[
    "CreateMountTarget",
    "DeleteMountTarget",
    "ModifyMountTargetSecurityGroups",
    "PutParameter",
    "DeleteParameter",
    "UpdateService",
];
const MUTATING_VERBS: &[&str] = &[
    "Create",
    "Delete",
    "Put",
    "Update",
    "Modify",
    "Tag",
    "Untag",
    "Register",
    "Deregister",
    "Run",
    "Start",
    "Stop",
    "Associate",
    "Disassociate",
    "Attach",
    "Detach",
    "Label",
];

/// How the proxy names a PutParameter of the function's own state parameter: it changes no
/// AWS resource an operator manages, so `mutating_calls` leaves it out.
pub const STATE_WRITE: &str = "PutParameter(state)";

/// The wire protocol of a request, which decides the form of an injected error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// EFS: REST-JSON, error type in `x-amzn-ErrorType`.
    RestJson,
    /// SSM, ECS: AWS JSON 1.1, error type in the body's `__type`.
    AwsJson,
    /// EC2: the query protocol, XML `<Response><Errors><Error><Code>`.
    Ec2Query,
    Unknown,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// `ThrottlingException` (EFS, SSM, ECS) or `RequestLimitExceeded` (EC2).
    Throttle,
    /// An internal error with this HTTP status.
    ServerError(u16),
    /// No answer at all (the request is held until the caller gives up).
    Stall,
    /// Forwarded (AWS does it), but the answer never comes back.
    LoseAnswer,
}

/// A CreateMountTarget in this subnet is answered with this error, as AWS would.
#[derive(Clone, Debug)]
struct SubnetRefusal {
    subnet_id: String,
    status: u16,
    code: String,
    message: String,
}

#[derive(Clone, Debug)]
struct Fault {
    operation: String,
    kind: FaultKind,
    remaining: usize,
}

#[derive(Default)]
struct State {
    counts: BTreeMap<String, usize>,
    faulted: BTreeMap<String, usize>,
    /// Throttling errors injected, by the service the request was signed for (`ec2`, `ssm`,
    /// `ecs`, `elasticfilesystem`).
    throttled: BTreeMap<String, usize>,
    /// Faulted requests and throttling errors again, by the access key that signed them
    /// (who made the call: the function, or the test's own clients), then operation or service.
    faulted_by_key: BTreeMap<(String, String), usize>,
    throttled_by_key: BTreeMap<(String, String), usize>,
    order: Vec<String>,
    faults: Vec<Fault>,
    /// How many `DescribeMountTargets` answers show a target created from now on as `creating`.
    hold_creating: Option<usize>,
    held: HashMap<String, usize>,
    created: Vec<String>,
    refusals: Vec<SubnetRefusal>,
    /// A One Zone file system: its AZ name and id.
    one_zone: Option<(String, String)>,
    file_system_state: Option<String>,
    /// ECS service name → its deployment controller type (when not ECS).
    controllers: BTreeMap<String, String>,
    /// ECS service name → the reason its PRIMARY deployment's rollout failed.
    rollouts_failed: BTreeMap<String, String>,
    /// Rollouts are held: a deployment forced from now on leaves the previous one running.
    hold_rollouts: bool,
    /// ECS service name → the previous deployments still running tasks, oldest first (ECS's
    /// rolling update, which moto does not play: it never shows an old deployment).
    rolling: BTreeMap<String, Vec<Value>>,
    /// ECS service name → the id of its PRIMARY deployment as last described.
    primaries: BTreeMap<String, String>,
    /// Items per page of DescribeMountTargets and DescribeSubnets (moto answers in one piece).
    page_size: Option<usize>,
    /// Pages served, by operation.
    pages: BTreeMap<String, usize>,
    /// How many DescribeMountTargets answers show a target deleted from now on `deleting`.
    hold_deleting: Option<usize>,
    /// Deleted targets still shown `deleting`: id → (description, describes left).
    deleting: BTreeMap<String, (Value, usize)>,
    /// What a DeleteMountTarget of a target still `deleting` is answered (status, code).
    redelete: Option<(u16, String)>,
    /// The longest value PutParameter takes (SSM's Standard tier: 4,096 characters).
    value_limit: Option<usize>,
    /// Requests to let through before every later one is stalled (`stall_everything_after`).
    stall_after: Option<usize>,
    /// Requests held so far by a stall or a lost answer.
    stalled: usize,
    /// ECS tasks, as the proxy plays them.
    tasks: tasks::Tasks,
    /// SSM reads that lag a write.
    stale: stale::Stale,
    /// What the proxy played of AWS's ways, by what (`Proxy::played`).
    played: BTreeMap<&'static str, usize>,
    /// The longest value a PutParameter asked for, in characters.
    longest_value: usize,
}

pub struct Proxy {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    task: JoinHandle<()>,
}

impl Proxy {
    /// Starts a proxy on 127.0.0.1:free port forwarding to `upstream` (e.g. moto's endpoint).
    pub async fn start(upstream: &str) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the proxy");
        let addr = listener.local_addr().expect("proxy address");
        let state = Arc::new(Mutex::new(State::default()));
        let upstream = Arc::new(upstream.trim_end_matches('/').to_string());
        let client: Client<HttpConnector, Full<Bytes>> =
            Client::builder(TokioExecutor::new()).build_http();
        let accept_state = state.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let (state, upstream, client) =
                    (accept_state.clone(), upstream.clone(), client.clone());
                tokio::spawn(async move {
                    let service = service_fn(move |req| {
                        handle(req, state.clone(), upstream.clone(), client.clone())
                    });
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Proxy { addr, state, task }
    }

    /// `http://127.0.0.1:PORT`, for the function's `AWS_ENDPOINT_URL`.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Answer the next `times` requests of `operation` (e.g. `DescribeMountTargets`,
    /// `PutParameter`, `DescribeSubnets`) with a throttling error.
    pub fn throttle(&self, operation: &str, times: usize) {
        self.add_fault(operation, FaultKind::Throttle, times);
    }

    /// Answer the next `times` requests of `operation` with an internal error of this status.
    pub fn server_error(&self, operation: &str, status: u16, times: usize) {
        self.add_fault(operation, FaultKind::ServerError(status), times);
    }

    /// A burst across services: the next `times` requests signed for each of `services`
    /// (`elasticfilesystem`, `ssm`, `ecs`, `ec2`), whatever their operation, are throttled.
    pub fn throttle_services(&self, services: &[&str], times: usize) {
        for service in services {
            self.add_fault(&format!("service:{service}"), FaultKind::Throttle, times);
        }
    }

    fn add_fault(&self, operation: &str, kind: FaultKind, times: usize) {
        self.state.lock().unwrap().faults.push(Fault {
            operation: operation.to_string(),
            kind,
            remaining: times,
        });
    }

    /// Never answer the next `times` requests of `operation`.
    pub fn stall(&self, operation: &str, times: usize) {
        self.add_fault(operation, FaultKind::Stall, times);
    }

    /// Let the next `times` requests of `operation` through to moto, and never answer them:
    /// AWS did it, the caller never hears (its SDK times out and may retry).
    pub fn lose_answer(&self, operation: &str, times: usize) {
        self.add_fault(operation, FaultKind::LoseAnswer, times);
    }

    /// Answer the next `n` requests (of any operation) as usual, then stall every request after
    /// them until `clear_faults`: a run that hangs from that point on, for a test to kill.
    pub fn stall_everything_after(&self, n: usize) {
        self.state.lock().unwrap().stall_after = Some(n);
    }

    /// Requests held so far by a stall or a lost answer (they are never answered).
    pub fn stalled_requests(&self) -> usize {
        self.state.lock().unwrap().stalled
    }

    /// CreateMountTarget in `subnet_id` is refused with AWS's `code` (HTTP `status`), for good.
    pub fn refuse_subnet(&self, subnet_id: &str, status: u16, code: &str, message: &str) {
        self.state.lock().unwrap().refusals.push(SubnetRefusal {
            subnet_id: subnet_id.to_string(),
            status,
            code: code.to_string(),
            message: message.to_string(),
        });
    }

    /// The file system is One Zone in `az` (`az_id`): DescribeFileSystems says so, and
    /// CreateMountTarget in any of `other_subnets` is refused with `AvailabilityZonesMismatch`.
    pub fn one_zone(&self, az: &str, az_id: &str, other_subnets: &[&str]) {
        self.state.lock().unwrap().one_zone = Some((az.to_string(), az_id.to_string()));
        for subnet in other_subnets {
            self.refuse_subnet(
                subnet,
                400,
                "AvailabilityZonesMismatch",
                "One Zone file systems can only have mount targets in the file system's Availability Zone",
            );
        }
    }

    /// DescribeFileSystems shows the file system in this `LifeCycleState`.
    pub fn file_system_state(&self, state: &str) {
        self.state.lock().unwrap().file_system_state = Some(state.to_string());
    }

    /// The ECS service is run by this deployment controller (`CODE_DEPLOY`, `EXTERNAL`):
    /// DescribeServices says so, and UpdateService refuses `forceNewDeployment` for it.
    pub fn deployment_controller(&self, service: &str, controller: &str) {
        self.state
            .lock()
            .unwrap()
            .controllers
            .insert(service.to_string(), controller.to_string());
    }

    /// The service's PRIMARY deployment shows `rolloutState` `FAILED` with this reason.
    pub fn rollout_failed(&self, service: &str, reason: &str) {
        self.state
            .lock()
            .unwrap()
            .rollouts_failed
            .insert(service.to_string(), reason.to_string());
    }

    /// From now on a forced deployment rolls out as on ECS: DescribeServices shows the
    /// previous deployment (`ACTIVE`, with running tasks) beside the new `PRIMARY` one
    /// (`IN_PROGRESS`) until `complete_rollouts`.
    pub fn hold_rollouts(&self) {
        self.state.lock().unwrap().hold_rollouts = true;
    }

    /// Finishes every rollout held so far: the old deployments are gone and each `PRIMARY`
    /// shows `COMPLETED`. Rollouts forced later are held again while holding is on.
    pub fn complete_rollouts(&self) {
        self.state.lock().unwrap().rolling.clear();
    }

    /// The oldest deployment of `service` still running tasks stops them (`runningCount` 0)
    /// but stays `ACTIVE`, as ECS shows it for a while; the others keep theirs.
    pub fn stop_oldest_tasks(&self, service: &str) {
        let mut s = self.state.lock().unwrap();
        let old = s.rolling.get_mut(service).into_iter().flatten();
        if let Some(d) = old.into_iter().find(|d| d["runningCount"] != json!(0)) {
            d["runningCount"] = json!(0);
        }
    }

    /// The deployments besides PRIMARY that DescribeServices shows for `service`.
    pub fn old_deployments(&self, service: &str) -> usize {
        let s = self.state.lock().unwrap();
        s.rolling.get(service).map_or(0, Vec::len)
    }

    /// DescribeMountTargets (by file system) and DescribeSubnets (by filter) answer in pages of
    /// `size`, with `NextMarker` / `nextToken`, as AWS does past its page size.
    pub fn page(&self, size: usize) {
        self.state.lock().unwrap().page_size = Some(size.max(1));
    }

    /// Pages served of `operation` (`DescribeMountTargets`, `DescribeSubnets`).
    pub fn pages(&self, operation: &str) -> usize {
        let s = self.state.lock().unwrap();
        s.pages.get(operation).copied().unwrap_or(0)
    }

    /// A target deleted from now on looks `deleting` in the next `describes` DescribeMountTargets
    /// answers that would include it (moto deletes at once), and a DeleteMountTarget of it
    /// meanwhile is answered `code` with `status` (`IncorrectMountTargetState` 409, or
    /// `MountTargetNotFound` 404).
    pub fn delete_slowly(&self, describes: usize, status: u16, code: &str) {
        let mut s = self.state.lock().unwrap();
        s.hold_deleting = Some(describes);
        s.redelete = Some((status, code.to_string()));
    }

    /// Every target shown `deleting` is gone from the next answer on (its deletion finished).
    pub fn finish_deleting(&self) {
        let mut s = self.state.lock().unwrap();
        s.hold_deleting = None;
        for (_, left) in s.deleting.values_mut() {
            *left = 0;
        }
    }

    /// Targets the next DescribeMountTargets answer shows `deleting`.
    pub fn shown_deleting(&self) -> Vec<String> {
        let s = self.state.lock().unwrap();
        let left = s.deleting.iter().filter(|(_, (_, n))| *n > 0);
        left.map(|(id, _)| id.clone()).collect()
    }

    /// PutParameter refuses a value longer than `chars` characters, as SSM refuses one over
    /// 4,096 on the Standard tier.
    pub fn limit_parameter_values(&self, chars: usize) {
        self.state.lock().unwrap().value_limit = Some(chars);
    }

    /// SSM reads lag writes from now on: a PutParameter opens, with a chance of `per_mille`
    /// (drawn from `seed`), a window in which the next `reads` GetParameters of that name,
    /// within `window`, answer what the parameter held before the write (its previous value
    /// and version), or `ParameterNotFound` if the write created it.
    pub fn lag_parameter_reads(&self, per_mille: u64, reads: usize, window: Duration, seed: u64) {
        stale::lag(&self.state, per_mille, reads, window, seed);
    }

    /// What the proxy played of AWS's ways, by what: `targets shown deleting`, `describes
    /// showing a target deleting`, `deletes refused while deleting`, and pages with more to
    /// follow of `DescribeMountTargets`, `DescribeSubnets` and `ListTasks`, and `stopped tasks
    /// no longer shown`.
    pub fn played(&self) -> BTreeMap<&'static str, usize> {
        let s = self.state.lock().unwrap();
        let mut played = s.played.clone();
        if s.tasks.cut_short > 0 {
            played.insert("ListTasks pages with more to follow", s.tasks.cut_short);
        }
        if s.tasks.forgotten > 0 {
            played.insert("stopped tasks no longer shown", s.tasks.forgotten);
        }
        played
    }

    /// The longest value a PutParameter (of the list or of the state) asked for, in
    /// characters, whether or not it was taken.
    pub fn longest_parameter_value(&self) -> usize {
        self.state.lock().unwrap().longest_value
    }

    /// Stale GetParameter answers served, by parameter name and kind (`previous version`,
    /// `not found`).
    pub fn stale_reads(&self) -> BTreeMap<(String, &'static str), usize> {
        self.state.lock().unwrap().stale.served.clone()
    }

    /// A task replaced by a forced deployment (or stopped by `stop_task`) from now on goes
    /// RUNNING → DEACTIVATING → STOPPING → DEPROVISIONING → STOPPED one step a call of
    /// `advance_tasks`, its desired status STOPPED all along (else it is STOPPED at once).
    pub fn stop_tasks_slowly(&self) {
        tasks::stop_slowly(&self.state);
    }

    /// Every task on its way to STOPPED goes one step further.
    pub fn advance_tasks(&self) {
        tasks::advance(&self.state, false);
    }

    /// ... but none to STOPPED: ECS slow with the last step (DEPROVISIONING lasts).
    pub fn advance_tasks_short_of_stopped(&self) {
        tasks::advance(&self.state, true);
    }

    /// The function's next scheduled run, 5 minutes on: ECS no longer shows a task STOPPED
    /// for an hour of them (12 runs).
    pub fn next_run(&self) {
        tasks::next_run(&self.state);
    }

    /// ECS wants the task with this id stopped (a RunTask task whose work ended, say).
    pub fn stop_task(&self, id: &str) {
        tasks::stop_task(&self.state, id);
    }

    /// One more task in `group` (`service:<name>`), RUNNING, created now: a task ECS started
    /// for the service outside a forced deployment (its desired count raised, an old revision
    /// scaled up). A forced deployment replaces it with the others. Answers its ARN.
    pub fn start_task(&self, group: &str, family: &str) -> String {
        tasks::start(&self.state, group, family)
    }

    /// One more task in `group`, RUNNING, created now, in `az` (`us-east-1b`, say), as
    /// [`Proxy::start_task`] starts one in the AZ tasks are placed in. Answers its ARN.
    pub fn start_task_in(&self, group: &str, family: &str, az: &str) -> String {
        tasks::start_in(&self.state, group, family, az)
    }

    /// Tasks started from now on run in `az` (by default, us-east-1a).
    pub fn place_tasks_in(&self, az: &str) {
        tasks::place_in(&self.state, az);
    }

    /// ListTasks answers in pages of at most `size` (1 to 100).
    pub fn task_page_size(&self, size: usize) {
        tasks::page_size(&self.state, size);
    }

    /// Pages of ListTasks served.
    pub fn task_pages(&self) -> usize {
        self.state.lock().unwrap().tasks.pages
    }

    /// The tasks of `group` (`service:<name>`, `family:<family>`): (id, last status), oldest
    /// first.
    pub fn tasks(&self, group: &str) -> Vec<(String, String)> {
        let s = self.state.lock().unwrap();
        let of = s.tasks.all.iter().filter(|t| t.group == group);
        of.map(|t| {
            let id = t.arn.rsplit('/').next().unwrap_or_default().to_string();
            (id, t.last_status().to_string())
        })
        .collect()
    }

    /// The ARNs of the tasks of `group` that ECS wants running, oldest first.
    pub fn running_task_arns(&self, group: &str) -> Vec<String> {
        let s = self.state.lock().unwrap();
        let of = s.tasks.all.iter().filter(|t| t.group == group);
        of.filter(|t| t.desired == "RUNNING")
            .map(|t| t.arn.clone())
            .collect()
    }

    /// Services whose rollout is being held.
    pub fn rolling_services(&self) -> Vec<String> {
        let s = self.state.lock().unwrap();
        let rolling = s.rolling.iter().filter(|(_, old)| !old.is_empty());
        rolling.map(|(name, _)| name.clone()).collect()
    }

    /// Drops every pending fault (and `stall_everything_after`).
    pub fn clear_faults(&self) {
        let mut state = self.state.lock().unwrap();
        state.faults.clear();
        state.stall_after = None;
    }

    /// Mount targets created through the proxy from now on look `creating` in their
    /// `CreateMountTarget` answer and in the first `describes` `DescribeMountTargets` answers
    /// that include them (`usize::MAX`: until `release_creating`).
    pub fn hold_creating(&self, describes: usize) {
        self.state.lock().unwrap().hold_creating = Some(describes);
    }

    /// Lets every held target show its real state (`available` in moto) from now on.
    pub fn release_creating(&self) {
        let mut state = self.state.lock().unwrap();
        state.hold_creating = None;
        state.held.clear();
    }

    /// Stops holding new targets, and lets each held one look `creating` in at most
    /// `describes` more `DescribeMountTargets` answers (as if it finished creating soon).
    pub fn release_creating_after(&self, describes: usize) {
        let mut state = self.state.lock().unwrap();
        state.hold_creating = None;
        for remaining in state.held.values_mut() {
            *remaining = (*remaining).min(describes);
        }
    }

    /// Targets the proxy shows `creating` in the next `DescribeMountTargets` answer: created
    /// while targets were held and not yet counted down to their real state. No run has seen
    /// them available.
    pub fn shown_creating(&self) -> Vec<String> {
        let state = self.state.lock().unwrap();
        state
            .held
            .iter()
            .filter(|(_, remaining)| **remaining > 0)
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// Requests of `operation` seen (faulted ones included).
    pub fn count(&self, operation: &str) -> usize {
        self.state
            .lock()
            .unwrap()
            .counts
            .get(operation)
            .copied()
            .unwrap_or(0)
    }

    /// Requests of `operation` answered with an injected fault.
    pub fn faulted(&self, operation: &str) -> usize {
        self.state
            .lock()
            .unwrap()
            .faulted
            .get(operation)
            .copied()
            .unwrap_or(0)
    }

    /// Throttling errors injected, by service (the service of the request's SigV4 credential
    /// scope: `ec2`, `ssm`, `ecs`, `elasticfilesystem`).
    pub fn throttled_by_service(&self) -> BTreeMap<String, usize> {
        self.state.lock().unwrap().throttled.clone()
    }

    /// [`Proxy::faulted`], of the requests signed with the access key `key` only: the calls
    /// of one caller (the function's: `support::function::ACCESS_KEY_ID`).
    pub fn faulted_signed_by(&self, key: &str, operation: &str) -> usize {
        let s = self.state.lock().unwrap();
        let by = (key.to_string(), operation.to_string());
        s.faulted_by_key.get(&by).copied().unwrap_or(0)
    }

    /// [`Proxy::throttled_by_service`], of the requests signed with the access key `key` only.
    pub fn throttled_signed_by(&self, key: &str) -> BTreeMap<String, usize> {
        let s = self.state.lock().unwrap();
        let of = s.throttled_by_key.iter().filter(|((k, _), _)| k == key);
        of.map(|((_, service), n)| (service.clone(), *n)).collect()
    }

    /// Every request seen.
    pub fn total(&self) -> usize {
        self.state.lock().unwrap().counts.values().sum()
    }

    /// Requests per operation.
    pub fn counts(&self) -> BTreeMap<String, usize> {
        self.state.lock().unwrap().counts.clone()
    }

    /// Operations in the order they were requested.
    pub fn operations(&self) -> Vec<String> {
        self.state.lock().unwrap().order.clone()
    }

    /// The mutating operations requested, with their counts (empty: nothing was changed).
    /// Writes of the function's own state parameter are not counted: see `state_writes`.
    pub fn mutating_calls(&self) -> BTreeMap<String, usize> {
        self.counts()
            .into_iter()
            .filter(|(op, _)| op != STATE_WRITE && is_mutating(op))
            .collect()
    }

    /// Writes of the function's own state parameter.
    pub fn state_writes(&self) -> usize {
        self.count(STATE_WRITE)
    }

    /// Forgets the counts (not the faults).
    pub fn reset_counts(&self) {
        let mut state = self.state.lock().unwrap();
        state.counts.clear();
        state.faulted.clear();
        state.throttled.clear();
        state.faulted_by_key.clear();
        state.throttled_by_key.clear();
        state.order.clear();
    }

    /// Ids of the mount targets created through the proxy.
    pub fn created_mount_targets(&self) -> Vec<String> {
        self.state.lock().unwrap().created.clone()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

pub fn is_mutating(operation: &str) -> bool {
    MUTATING.contains(&operation) || MUTATING_VERBS.iter().any(|v| operation.starts_with(v))
}

/// The operation and protocol of a request.
pub fn operation(
    method: &Method,
    path: &str,
    headers: &HeaderMap,
    body: &[u8],
) -> (String, Protocol) {
    if let Some(target) = headers.get("x-amz-target").and_then(|v| v.to_str().ok()) {
        let op = target.rsplit('.').next().unwrap_or(target);
        return (op.to_string(), Protocol::AwsJson);
    }
    if let Some(rest) = path.strip_prefix("/2015-02-01/") {
        let parts: Vec<&str> = rest.trim_end_matches('/').split('/').collect();
        let op = match (method.as_str(), parts.as_slice()) {
            ("POST", ["mount-targets"]) => "CreateMountTarget",
            ("GET", ["mount-targets"]) => "DescribeMountTargets",
            ("DELETE", ["mount-targets", _]) => "DeleteMountTarget",
            ("GET", ["mount-targets", _, "security-groups"]) => "DescribeMountTargetSecurityGroups",
            ("PUT", ["mount-targets", _, "security-groups"]) => "ModifyMountTargetSecurityGroups",
            ("POST", ["file-systems"]) => "CreateFileSystem",
            ("GET", ["file-systems"]) => "DescribeFileSystems",
            ("DELETE", ["file-systems", _]) => "DeleteFileSystem",
            ("PUT", ["file-systems", _]) => "UpdateFileSystem",
            ("POST", ["access-points"]) => "CreateAccessPoint",
            ("GET", ["access-points"]) => "DescribeAccessPoints",
            ("DELETE", ["access-points", _]) => "DeleteAccessPoint",
            _ => return (format!("EFS {method} {path}"), Protocol::RestJson),
        };
        return (op.to_string(), Protocol::RestJson);
    }
    let form = String::from_utf8_lossy(body);
    if let Some(action) = form
        .split('&')
        .find_map(|pair| pair.strip_prefix("Action="))
    {
        return (action.to_string(), Protocol::Ec2Query);
    }
    (format!("{method} {path}"), Protocol::Unknown)
}

type Reply = Response<Full<Bytes>>;

async fn handle(
    req: Request<Incoming>,
    state: Arc<Mutex<State>>,
    upstream: Arc<String>,
    client: Client<HttpConnector, Full<Bytes>>,
) -> Result<Reply, Infallible> {
    let (parts, body) = req.into_parts();
    let body = match body.collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => {
            return Ok(plain(
                StatusCode::BAD_REQUEST,
                format!("proxy: bad body: {e}"),
            ))
        }
    };
    let path = parts.uri.path().to_string();
    let (mut op, protocol) = operation(&parts.method, &path, &parts.headers, &body);
    // The function's writes of its own state parameter are told apart from the list's.
    if op == "PutParameter"
        && serde_json::from_slice::<Value>(&body)
            .is_ok_and(|v| v["Name"] == json!(super::world::STATE_PARAMETER_NAME))
    {
        op = STATE_WRITE.to_string();
    }

    // Count it, and fail it if a fault is due.
    let (key, service) = signed_by(&parts.headers);
    let fault = count_and_fault(&state, &op, &service, &key);
    match fault {
        Some(FaultKind::Stall) => return Ok(stalled().await),
        Some(FaultKind::LoseAnswer) | None => {}
        Some(kind) => return Ok(injected(kind, protocol, &op)),
    }
    if let Some(reply) = refusal(&state, &op, &body) {
        return Ok(reply);
    }
    if let Some(reply) = tasks::answer(&state, &op, &body) {
        return Ok(reply);
    }
    if let Some(reply) = stale::answer(&state, &op, &body) {
        return Ok(reply);
    }
    if op == "PutParameter" || op == STATE_WRITE {
        stale::remember(&state, &parts, &body, &upstream, &client).await;
    }
    if op == "DeleteMountTarget" {
        if let Some(reply) = deleting::redelete(&state, &path) {
            return Ok(reply);
        }
        deleting::remember(&state, &parts, &upstream, &client, &path).await;
    }

    // Forward it, then play what AWS does to the answer.
    let paged = Paged::of(&state, &op, parts.uri.query().unwrap_or_default(), &body);
    let (mut answer_parts, answer_body) =
        match forward(&parts, &body, &op, paged.is_some(), &upstream, &client).await {
            Ok(answer) => answer,
            Err(reply) => return Ok(reply),
        };
    let answer_body = play(
        &state,
        &op,
        &parts,
        paged.as_ref(),
        &body,
        &mut answer_parts.status,
        answer_body,
    );

    if fault == Some(FaultKind::LoseAnswer) {
        state.lock().unwrap().stalled += 1;
        return Ok(stalled().await);
    }

    let mut reply = Response::builder().status(answer_parts.status);
    for (name, value) in answer_parts
        .headers
        .drain()
        .filter_map(|(n, v)| n.map(|n| (n, v)))
    {
        if !is_hop_by_hop(&name) && name != hyper::header::CONTENT_LENGTH {
            reply = reply.header(name, value);
        }
    }
    Ok(reply.body(Full::new(answer_body)).expect("reply"))
}

/// Counts the request, and returns the fault due to it, if any.
fn count_and_fault(state: &Mutex<State>, op: &str, service: &str, key: &str) -> Option<FaultKind> {
    let mut s = state.lock().unwrap();
    *s.counts.entry(op.to_string()).or_default() += 1;
    s.order.push(op.to_string());
    let by_service = format!("service:{service}");
    let mut fault = s
        .faults
        .iter_mut()
        .find(|f| (f.operation == op || f.operation == by_service) && f.remaining > 0)
        .map(|f| {
            f.remaining -= 1;
            f.kind
        });
    match s.stall_after {
        Some(0) => fault = Some(FaultKind::Stall),
        Some(n) => s.stall_after = Some(n - 1),
        None => {}
    }
    if fault.is_some() {
        *s.faulted.entry(op.to_string()).or_default() += 1;
        let by = (key.to_string(), op.to_string());
        *s.faulted_by_key.entry(by).or_default() += 1;
    }
    if fault == Some(FaultKind::Throttle) {
        *s.throttled.entry(service.to_string()).or_default() += 1;
        let by = (key.to_string(), service.to_string());
        *s.throttled_by_key.entry(by).or_default() += 1;
    }
    if matches!(fault, Some(FaultKind::Stall)) {
        s.stalled += 1;
    }
    fault
}

/// Who signed a request, and the service it was signed for: the first and the fourth part of
/// its SigV4 credential scope (`Credential=<key>/<date>/<region>/<service>/aws4_request`), or
/// `unsigned`.
fn signed_by(headers: &HeaderMap) -> (String, String) {
    let scope = headers
        .get(hyper::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|auth| auth.split("Credential=").nth(1));
    let part = |n: usize| {
        let part = scope.and_then(|scope| scope.split(['/', ',']).nth(n));
        part.unwrap_or("unsigned").to_string()
    };
    (part(0), part(3))
}

/// Sends the request on to moto (a paged one without its markers: moto answers everything)
/// and returns its answer, or the reply to give when moto could not be reached.
async fn forward(
    parts: &hyper::http::request::Parts,
    body: &Bytes,
    op: &str,
    paged: bool,
    upstream: &str,
    client: &Client<HttpConnector, Full<Bytes>>,
) -> Result<(hyper::http::response::Parts, Bytes), Reply> {
    let query = match (paged, parts.uri.query()) {
        (true, Some(q)) => format!("?{}", paging::without_params(q, &["Marker", "MaxItems"])),
        (false, Some(q)) => format!("?{q}"),
        (_, None) => String::new(),
    };
    let body = match (paged, op) {
        (true, "DescribeSubnets") => Bytes::from(paging::without_params(
            &String::from_utf8_lossy(body),
            &["NextToken", "MaxResults"],
        )),
        _ => body.clone(),
    };
    let mut request = Request::builder()
        .method(parts.method.clone())
        .uri(format!("{upstream}{}{query}", parts.uri.path()));
    for (name, value) in parts.headers.iter() {
        if !is_hop_by_hop(name) && name != hyper::header::CONTENT_LENGTH {
            request = request.header(name, value);
        }
    }
    let request = request.body(Full::new(body)).expect("forwarded request");
    let answer = client
        .request(request)
        .await
        .map_err(|e| plain(StatusCode::BAD_GATEWAY, format!("proxy: upstream: {e}")))?;
    let (answer_parts, answer_body) = answer.into_parts();
    let answer_body = answer_body.collect().await.map_err(|e| {
        plain(
            StatusCode::BAD_GATEWAY,
            format!("proxy: upstream body: {e}"),
        )
    })?;
    Ok((answer_parts, answer_body.to_bytes()))
}

/// moto's answer as AWS would give it: targets still `deleting`, one page, targets still
/// `creating`, the file system's type, the services' deployments.
fn play(
    state: &Mutex<State>,
    op: &str,
    parts: &hyper::http::request::Parts,
    paged: Option<&Paged>,
    request: &[u8],
    status: &mut StatusCode,
    mut answer: Bytes,
) -> Bytes {
    let (path, query) = (parts.uri.path(), parts.uri.query().unwrap_or_default());
    if op == "DescribeMountTargets" {
        if let Some(shown) = deleting::by_id(state, query) {
            *status = StatusCode::OK;
            answer = shown;
        } else if status.is_success() {
            answer = deleting::add(state, query, answer);
        }
    }
    if !status.is_success() {
        return answer;
    }
    if op == "DeleteMountTarget" {
        deleting::start(state, path);
    }
    if op == "PutParameter" || op == STATE_WRITE {
        stale::written(state, request);
    }
    if let Some(p) = paged {
        answer = p.cut(state, op, answer);
    }
    match op {
        "CreateMountTarget" => on_created(state, answer),
        "DescribeMountTargets" => on_described(state, answer),
        "DescribeFileSystems" => on_file_systems(state, answer),
        "DescribeServices" => {
            tasks::on_services(state, &answer);
            on_services(state, answer)
        }
        "UpdateService" => {
            on_update_service(state, request);
            tasks::on_update_service(state, request, &answer);
            answer
        }
        "RunTask" => tasks::on_run_task(state, &answer),
        _ => answer,
    }
}

/// Holds a request until the caller gives up (or the test ends).
async fn stalled() -> Reply {
    tokio::time::sleep(std::time::Duration::from_secs(3600)).await;
    plain(StatusCode::GATEWAY_TIMEOUT, "stalled".into())
}

/// What AWS answers where moto would accept: a refused subnet, or UpdateService forcing a
/// deployment of a service another controller runs.
fn refusal(state: &Mutex<State>, op: &str, body: &[u8]) -> Option<Reply> {
    let request: Value = serde_json::from_slice(body).ok()?;
    let mut s = state.lock().unwrap();
    if let Some(value) = request["Value"].as_str() {
        s.longest_value = s.longest_value.max(value.chars().count());
    }
    match op {
        "CreateMountTarget" => {
            let subnet = request["SubnetId"].as_str()?;
            let r = s.refusals.iter().find(|r| r.subnet_id == subnet)?;
            Some(aws_error(Protocol::RestJson, r.status, &r.code, &r.message))
        }
        "PutParameter" | STATE_WRITE => {
            let limit = s.value_limit?;
            let len = request["Value"].as_str()?.chars().count();
            let standard = matches!(request["Tier"].as_str(), None | Some("Standard"));
            (standard && len > limit).then(|| {
                aws_error(
                    Protocol::AwsJson,
                    400,
                    "ValidationException",
                    &format!(
                        "Standard tier parameters support a maximum parameter value of {limit} \
                         characters. To create a larger parameter value, upgrade the parameter \
                         to use the advanced-parameter tier."
                    ),
                )
            })
        }
        "DescribeServices" => {
            let n = request["services"].as_array()?.len();
            (n > 10).then(|| {
                aws_error(
                    Protocol::AwsJson,
                    400,
                    "InvalidParameterException",
                    "Services cannot have more than 10 elements.",
                )
            })
        }
        "UpdateService" if request["forceNewDeployment"] == json!(true) => {
            let service = request["service"].as_str()?;
            let name = service.rsplit('/').next().unwrap_or(service);
            let controller = s.controllers.get(name)?;
            Some(aws_error(
                Protocol::AwsJson,
                400,
                "InvalidParameterException",
                &format!(
                    "Unable to update the service because a {controller} deployment controller is being used."
                ),
            ))
        }
        _ => None,
    }
}

fn on_file_systems(state: &Mutex<State>, body: Bytes) -> Bytes {
    let Ok(mut v) = serde_json::from_slice::<Value>(&body) else {
        return body;
    };
    let s = state.lock().unwrap();
    if s.one_zone.is_none() && s.file_system_state.is_none() {
        return body;
    }
    if let Some(systems) = v["FileSystems"].as_array_mut() {
        for fs in systems {
            if let Some((az, az_id)) = &s.one_zone {
                fs["AvailabilityZoneName"] = json!(az);
                fs["AvailabilityZoneId"] = json!(az_id);
            }
            if let Some(state) = &s.file_system_state {
                fs["LifeCycleState"] = json!(state);
            }
        }
    }
    Bytes::from(v.to_string())
}

/// A forced deployment while rollouts are held: the deployment that was PRIMARY keeps its
/// tasks, `ACTIVE`, beside any older one still running (a rollout interrupted by another).
fn on_update_service(state: &Mutex<State>, request: &[u8]) {
    let Ok(v) = serde_json::from_slice::<Value>(request) else {
        return;
    };
    let mut s = state.lock().unwrap();
    if !s.hold_rollouts || v["forceNewDeployment"] != json!(true) {
        return;
    }
    let service = v["service"].as_str().unwrap_or_default();
    let name = service.rsplit('/').next().unwrap_or(service).to_string();
    let n: usize = s.rolling.values().map(Vec::len).sum();
    let id = s.primaries.get(&name).cloned();
    let id = id.unwrap_or_else(|| format!("ecs-svc/old-{n}"));
    s.rolling.entry(name).or_default().push(json!({
        "id": id,
        "status": "ACTIVE",
        "taskDefinition": "ingest",
        "desiredCount": 0,
        "pendingCount": 0,
        "runningCount": 1,
        "createdAt": 0,
        "rolloutState": "COMPLETED",
    }));
}

fn on_services(state: &Mutex<State>, body: Bytes) -> Bytes {
    let Ok(mut v) = serde_json::from_slice::<Value>(&body) else {
        return body;
    };
    let mut s = state.lock().unwrap();
    for service in v["services"].as_array().into_iter().flatten() {
        let primary = service["deployments"].as_array().into_iter().flatten();
        if let (Some(name), Some(id)) = (
            service["serviceName"].as_str(),
            primary
                .filter(|d| d["status"] == json!("PRIMARY"))
                .find_map(|d| d["id"].as_str()),
        ) {
            s.primaries.insert(name.to_string(), id.to_string());
        }
    }
    if s.controllers.is_empty() && s.rollouts_failed.is_empty() && !s.hold_rollouts {
        return body;
    }
    if let Some(services) = v["services"].as_array_mut() {
        for service in services {
            let name = service["serviceName"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            if let Some(controller) = s.controllers.get(&name) {
                service["deploymentController"] = json!({"type": controller});
            }
            if let Some(deployments) = service["deployments"].as_array_mut() {
                if s.hold_rollouts {
                    // moto's PRIMARY stays IN_PROGRESS with no tasks: as on ECS, it is
                    // COMPLETED once no old deployment runs.
                    let rolling = s.rolling.get(&name).filter(|old| !old.is_empty());
                    for d in deployments
                        .iter_mut()
                        .filter(|d| d["status"] == json!("PRIMARY"))
                    {
                        d["rolloutState"] = json!(if rolling.is_some() {
                            "IN_PROGRESS"
                        } else {
                            "COMPLETED"
                        });
                    }
                    // Newest first, as ECS lists them.
                    deployments.extend(rolling.into_iter().flatten().rev().cloned());
                }
            }
            if let Some(reason) = s.rollouts_failed.get(&name) {
                if let Some(deployments) = service["deployments"].as_array_mut() {
                    for d in deployments
                        .iter_mut()
                        .filter(|d| d["status"] == json!("PRIMARY"))
                    {
                        d["rolloutState"] = json!("FAILED");
                        d["rolloutStateReason"] = json!(reason);
                    }
                }
            }
        }
    }
    Bytes::from(v.to_string())
}

/// Records a new mount target; shows it `creating` when targets are being held.
fn on_created(state: &Mutex<State>, body: Bytes) -> Bytes {
    let Ok(mut v) = serde_json::from_slice::<Value>(&body) else {
        return body;
    };
    let Some(id) = v["MountTargetId"].as_str().map(str::to_string) else {
        return body;
    };
    let mut s = state.lock().unwrap();
    s.created.push(id.clone());
    match s.hold_creating {
        Some(k) => {
            s.held.insert(id, k);
            v["LifeCycleState"] = json!("creating");
            Bytes::from(v.to_string())
        }
        None => body,
    }
}

/// Shows held targets `creating`, counting down each one's remaining describes.
fn on_described(state: &Mutex<State>, body: Bytes) -> Bytes {
    let Ok(mut v) = serde_json::from_slice::<Value>(&body) else {
        return body;
    };
    let mut s = state.lock().unwrap();
    let mut changed = false;
    if let Some(targets) = v["MountTargets"].as_array_mut() {
        for t in targets {
            let Some(id) = t["MountTargetId"].as_str() else {
                continue;
            };
            if let Some(remaining) = s.held.get_mut(id) {
                if *remaining > 0 {
                    *remaining -= 1;
                    if t["LifeCycleState"] == json!("available") {
                        t["LifeCycleState"] = json!("creating");
                        changed = true;
                    }
                }
            }
        }
    }
    if changed {
        Bytes::from(v.to_string())
    } else {
        body
    }
}

/// An injected error in the wire format of the request's protocol.
fn injected(kind: FaultKind, protocol: Protocol, op: &str) -> Reply {
    let (status, code, message) = match (kind, protocol) {
        (FaultKind::Throttle, Protocol::Ec2Query) => {
            (503, "RequestLimitExceeded", "Request limit exceeded.")
        }
        (FaultKind::Throttle, Protocol::RestJson) => (429, "ThrottlingException", "Rate exceeded"),
        (FaultKind::Throttle, _) => (400, "ThrottlingException", "Rate exceeded"),
        (FaultKind::ServerError(s), Protocol::Ec2Query) => {
            (s, "InternalError", "An internal error has occurred")
        }
        (FaultKind::ServerError(s), Protocol::AwsJson) => {
            (s, "InternalServerError", "Internal server error")
        }
        (FaultKind::ServerError(s), _) => (s, "InternalServerError", "Internal server error"),
        (FaultKind::Stall | FaultKind::LoseAnswer, _) => unreachable!("no answer to inject"),
    };
    let message = format!("{message} (injected by the test proxy into {op})");
    aws_error(protocol, status, code, &message)
}

/// An error answer in the wire format of `protocol`.
fn aws_error(protocol: Protocol, status: u16, code: &str, message: &str) -> Reply {
    let request_id = "00000000-1111-2222-3333-444444444444";
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let builder = Response::builder()
        .status(status)
        .header("x-amzn-requestid", request_id);
    let reply = match protocol {
        Protocol::Ec2Query => builder.header("content-type", "text/xml;charset=UTF-8").body(
            format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Response><Errors><Error><Code>{code}</Code><Message>{message}</Message></Error></Errors><RequestID>{request_id}</RequestID></Response>"
            ),
        ),
        Protocol::AwsJson => builder
            .header("content-type", "application/x-amz-json-1.1")
            .body(json!({"__type": code, "message": message}).to_string()),
        Protocol::RestJson | Protocol::Unknown => builder
            .header("content-type", "application/json")
            .header("x-amzn-errortype", code)
            .body(json!({"ErrorCode": code, "Message": message}).to_string()),
    };
    reply
        .map(|b| b.map(|s| Full::new(Bytes::from(s))))
        .expect("injected reply")
}

fn plain(status: StatusCode, text: String) -> Reply {
    Response::builder()
        .status(status)
        .header("content-type", "text/plain")
        .body(Full::new(Bytes::from(text)))
        .unwrap()
}

fn is_hop_by_hop(name: &HeaderName) -> bool {
    matches!(
        name.as_str(),
        "connection"
            | "keep-alive"
            | "proxy-connection"
            | "transfer-encoding"
            | "te"
            | "trailer"
            | "upgrade"
    )
}

/// A request the proxy answers one page of (moto is asked for everything).
struct Paged {
    from: usize,
    size: usize,
    marker: Option<String>,
}

impl Paged {
    /// DescribeMountTargets of a file system, and DescribeSubnets by filter (given ids are
    /// never paged), while paging is on.
    fn of(state: &Mutex<State>, op: &str, query: &str, body: &[u8]) -> Option<Paged> {
        let size = state.lock().unwrap().page_size?;
        let marker = match op {
            "DescribeMountTargets" => {
                paging::param(query, "FileSystemId")?;
                paging::param(query, "Marker")
            }
            "DescribeSubnets" => {
                let form = String::from_utf8_lossy(body);
                if form.contains("SubnetId.") {
                    return None;
                }
                paging::param(&form, "NextToken")
            }
            _ => return None,
        };
        Some(Paged {
            from: paging::offset(marker.as_deref()),
            size,
            marker,
        })
    }

    fn cut(&self, state: &Mutex<State>, op: &str, body: Bytes) -> Bytes {
        *state
            .lock()
            .unwrap()
            .pages
            .entry(op.to_string())
            .or_default() += 1;
        let more = |state: &Mutex<State>, what: &'static str| {
            *state.lock().unwrap().played.entry(what).or_default() += 1;
        };
        if op == "DescribeSubnets" {
            let text = String::from_utf8_lossy(&body);
            let page = paging::page_xml(&text, "subnetSet", self.from, self.size);
            if page.as_ref().is_some_and(|p| p.contains("<nextToken>")) {
                more(state, "DescribeSubnets pages with more to follow");
            }
            return page.map_or(body.clone(), Bytes::from);
        }
        let Ok(mut v) = serde_json::from_slice::<Value>(&body) else {
            return body;
        };
        paging::page_json(
            &mut v,
            "MountTargets",
            self.from,
            self.size,
            self.marker.as_deref(),
        );
        if v.get("NextMarker").is_some() {
            more(state, "DescribeMountTargets pages with more to follow");
        }
        Bytes::from(v.to_string())
    }
}
