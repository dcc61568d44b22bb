//! ECS tasks as AWS shows them, which moto does not: moto's services start no task, its
//! ListTasks ignores `serviceName` and answers in one piece, its tasks carry no `createdAt`,
//! and its DescribeTasks moves a task one state on (RUNNING → DEACTIVATING → … → STOPPED)
//! at each describe while `desiredStatus` stays RUNNING. So the proxy keeps the tasks itself
//! and answers ListTasks and DescribeTasks from them:
//!
//! - each service has its tasks (`desiredCount` of them, created with its PRIMARY deployment,
//!   as DescribeServices first shows it); a forced deployment starts new ones and replaces the
//!   old: their desired status is STOPPED at once, and their last status goes RUNNING →
//!   DEACTIVATING → STOPPING → DEPROVISIONING → STOPPED, one step each time the test
//!   advances them (`stop_tasks_slowly`), else at once;
//! - a RunTask goes to moto (which checks the cluster and the task definition and names the
//!   task); the proxy records its task, RUNNING, in its `group` (`family:<family>` unless the
//!   caller named one), until the test stops it;
//! - ListTasks filters by `serviceName`, `family` and `desiredStatus` (RUNNING when not
//!   given) and answers in pages (`nextToken`, at most `maxResults`, 100 by default, or the
//!   page size a test sets); STOPPED tasks stay listed, as on AWS, for an hour: 12 of the
//!   function's 5-minute runs, as a test counts them (`next_run`; one that never counts
//!   them keeps every task listed);
//! - DescribeTasks takes at most 100 tasks and names an unknown one in `failures` (`MISSING`).
//! - each task has an `availabilityZone`, as ECS gives it: the AZ of the subnet it runs in.
//!   moto's services have no network configuration here, so a task runs where the test puts
//!   it (`start_task_in`), else in the AZ new tasks are placed in (us-east-1a, where every
//!   world has its first mount target, unless the test says otherwise: `place_tasks_in`).

use super::{aws_error, paging, Protocol, Reply, State};
use bytes::Bytes;
use http_body_util::Full;
use hyper::{Response, StatusCode};
use serde_json::{json, Value};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

/// The statuses a task goes through once ECS wants it stopped.
const STOPPING: &[&str] = &[
    "RUNNING",
    "DEACTIVATING",
    "STOPPING",
    "DEPROVISIONING",
    "STOPPED",
];

/// ListTasks' page size, and DescribeTasks' most tasks a call.
const MOST: usize = 100;

/// How long ECS shows a STOPPED task, in the function's runs: an hour of EventBridge's
/// 5-minute schedule. A soak's runs stand for hours of them, so without it every task its
/// course ever stopped would stay listed, and each run would page through all of them.
const RUNS_AN_HOUR: usize = 12;

/// Where tasks run unless the test says otherwise.
const FIRST_AZ: &str = "us-east-1a";

#[derive(Clone, Debug)]
pub(super) struct Task {
    pub(super) arn: String,
    pub(super) group: String,
    family: String,
    pub(super) desired: &'static str,
    /// Index in [`STOPPING`].
    stage: usize,
    created_ms: u64,
    /// Its `availabilityZone`.
    az: String,
    /// The run ([`Tasks::runs`]) in which it reached STOPPED.
    stopped_in: Option<usize>,
}

impl Task {
    pub(super) fn last_status(&self) -> &'static str {
        STOPPING[self.stage]
    }

    /// ECS still shows it in `run`: not STOPPED for an hour yet.
    fn shown(&self, run: usize) -> bool {
        self.stopped_in.is_none_or(|r| run < r + RUNS_AN_HOUR)
    }

    fn json(&self) -> Value {
        let secs = |ms: u64| ms as f64 / 1000.0;
        json!({
            "taskArn": self.arn,
            "group": self.group,
            "lastStatus": self.last_status(),
            "desiredStatus": self.desired,
            "createdAt": secs(self.created_ms),
            "startedAt": secs(self.created_ms + 1),
            "taskDefinitionArn": format!("arn:aws:ecs:us-east-1:123456789012:task-definition/{}:1", self.family),
            "launchType": "FARGATE",
            "availabilityZone": self.az,
        })
    }
}

#[derive(Default)]
pub(super) struct Tasks {
    pub(super) all: Vec<Task>,
    /// Replaced tasks step through the stopping states as the test advances them.
    slowly: bool,
    page_size: Option<usize>,
    /// Pages of ListTasks served.
    pub(super) pages: usize,
    /// ... of which more followed (`nextToken`).
    pub(super) cut_short: usize,
    made: usize,
    /// The function's runs so far, as the test counts them ([`next_run`]).
    runs: usize,
    /// Tasks ECS no longer shows: STOPPED for an hour.
    pub(super) forgotten: usize,
    /// The AZ new tasks run in (none: [`FIRST_AZ`]).
    place_in: Option<String>,
}

impl Tasks {
    fn add(&mut self, group: String, family: &str, created_ms: u64) -> String {
        let az = self
            .place_in
            .clone()
            .unwrap_or_else(|| FIRST_AZ.to_string());
        self.add_in(group, family, created_ms, az)
    }

    fn add_in(&mut self, group: String, family: &str, created_ms: u64, az: String) -> String {
        self.made += 1;
        let arn = format!(
            "arn:aws:ecs:us-east-1:123456789012:task/cluster/{:032x}",
            self.made
        );
        self.all.push(Task {
            arn: arn.clone(),
            group,
            family: family.to_string(),
            desired: "RUNNING",
            stage: 0,
            created_ms,
            az,
            stopped_in: None,
        });
        arn
    }

    /// ECS wants it stopped: at once, or step by step.
    fn stop(&mut self, index: usize) {
        let (slowly, run) = (self.slowly, self.runs);
        let t = &mut self.all[index];
        t.desired = "STOPPED";
        if !slowly {
            t.stage = STOPPING.len() - 1;
            t.stopped_in.get_or_insert(run);
        }
    }
}

fn now_ms() -> u64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    since.as_millis() as u64
}

fn service_name(s: &str) -> String {
    s.rsplit('/').next().unwrap_or(s).to_string()
}

// ----------------------------------------------------------------------------- the test's hands

/// Replaced tasks from now on stay on their way to STOPPED until [`advance`] moves them.
pub(super) fn stop_slowly(state: &Mutex<State>) {
    state.lock().unwrap().tasks.slowly = true;
}

/// Every task on its way to STOPPED goes one step further; with `short`, no further than the
/// status before STOPPED.
pub(super) fn advance(state: &Mutex<State>, short: bool) {
    let mut s = state.lock().unwrap();
    let run = s.tasks.runs;
    let last = STOPPING.len() - 1 - usize::from(short);
    for t in s.tasks.all.iter_mut().filter(|t| t.desired == "STOPPED") {
        t.stage = (t.stage + 1).min(last.max(t.stage));
        if t.stage == STOPPING.len() - 1 {
            t.stopped_in.get_or_insert(run);
        }
    }
}

/// The function's next scheduled run (5 minutes on): a task STOPPED for an hour of them is
/// no longer listed or described (DescribeTasks names it `MISSING`).
pub(super) fn next_run(state: &Mutex<State>) {
    let mut s = state.lock().unwrap();
    let tasks = &mut s.tasks;
    tasks.runs += 1;
    let run = tasks.runs;
    let was_shown = |t: &&Task| t.shown(run - 1);
    let gone = tasks.all.iter().filter(was_shown).filter(|t| !t.shown(run));
    tasks.forgotten += gone.count();
}

/// A task started in `group` now, RUNNING: its ARN.
pub(super) fn start(state: &Mutex<State>, group: &str, family: &str) -> String {
    let mut s = state.lock().unwrap();
    s.tasks.add(group.to_string(), family, now_ms())
}

/// A task started in `group` now, RUNNING, in `az` (say `us-east-1b`): its ARN.
pub(super) fn start_in(state: &Mutex<State>, group: &str, family: &str, az: &str) -> String {
    let mut s = state.lock().unwrap();
    s.tasks
        .add_in(group.to_string(), family, now_ms(), az.to_string())
}

/// Tasks started from now on (a service's, a forced deployment's, RunTask's) run in `az`.
pub(super) fn place_in(state: &Mutex<State>, az: &str) {
    state.lock().unwrap().tasks.place_in = Some(az.to_string());
}

/// ECS wants this task (by id) stopped, as a StopTask or the end of its work would.
pub(super) fn stop_task(state: &Mutex<State>, id: &str) {
    let mut s = state.lock().unwrap();
    let found = s
        .tasks
        .all
        .iter()
        .position(|t| t.arn.ends_with(&format!("/{id}")));
    s.tasks
        .stop(found.unwrap_or_else(|| panic!("no task {id}")));
}

pub(super) fn page_size(state: &Mutex<State>, size: usize) {
    state.lock().unwrap().tasks.page_size = Some(size.clamp(1, MOST));
}

// ----------------------------------------------------------------------------- what moto answered

/// A service first described: its tasks, created with its PRIMARY deployment.
pub(super) fn on_services(state: &Mutex<State>, answer: &[u8]) {
    let Ok(v) = serde_json::from_slice::<Value>(answer) else {
        return;
    };
    let mut s = state.lock().unwrap();
    for service in v["services"].as_array().into_iter().flatten() {
        let group = format!(
            "service:{}",
            service["serviceName"].as_str().unwrap_or_default()
        );
        if s.tasks.all.iter().any(|t| t.group == group) {
            continue;
        }
        let deployments = service["deployments"].as_array().into_iter().flatten();
        let primary = deployments
            .filter(|d| d["status"] == json!("PRIMARY"))
            .find_map(|d| d["createdAt"].as_f64());
        let created = primary.map_or(0, |secs| (secs * 1000.0) as u64);
        for _ in 0..service["desiredCount"].as_u64().unwrap_or(1) {
            s.tasks.add(group.clone(), "ingest", created);
        }
    }
}

/// A forced deployment: new tasks start, the old ones are stopped. The new tasks are created
/// when moto created the new PRIMARY deployment, by moto's clock: the one the list's publish
/// time is read by (this process may run in a VM whose clock is behind the host's).
pub(super) fn on_update_service(state: &Mutex<State>, request: &[u8], answer: &[u8]) {
    let Ok(v) = serde_json::from_slice::<Value>(request) else {
        return;
    };
    if v["forceNewDeployment"] != json!(true) {
        return;
    }
    let group = format!(
        "service:{}",
        service_name(v["service"].as_str().unwrap_or_default())
    );
    let mut s = state.lock().unwrap();
    let old: Vec<usize> = (0..s.tasks.all.len())
        .filter(|i| s.tasks.all[*i].group == group && s.tasks.all[*i].desired == "RUNNING")
        .collect();
    let created = serde_json::from_slice::<Value>(answer)
        .ok()
        .and_then(|a| {
            let deployments = a["service"]["deployments"].as_array()?.clone();
            deployments
                .iter()
                .filter(|d| d["status"] == json!("PRIMARY"))
                .find_map(|d| d["createdAt"].as_f64())
        })
        .map_or_else(now_ms, |secs| (secs * 1000.0) as u64);
    for _ in 0..old.len().max(1) {
        s.tasks.add(group.clone(), "ingest", created);
    }
    for i in old {
        s.tasks.stop(i);
    }
}

/// A task moto started for RunTask: recorded, RUNNING, created now, and answered as the
/// proxy shows it (moto's answer gives a container's `cpu` as a number, which the SDK refuses).
pub(super) fn on_run_task(state: &Mutex<State>, answer: &[u8]) -> Bytes {
    let Ok(v) = serde_json::from_slice::<Value>(answer) else {
        return Bytes::copy_from_slice(answer);
    };
    let mut s = state.lock().unwrap();
    let mut started = Vec::new();
    for task in v["tasks"].as_array().into_iter().flatten() {
        let definition = task["taskDefinitionArn"].as_str().unwrap_or_default();
        let family = definition.rsplit('/').next().unwrap_or_default();
        let family = family.split(':').next().unwrap_or_default().to_string();
        let group = task["group"]
            .as_str()
            .map_or_else(|| format!("family:{family}"), str::to_string);
        s.tasks.add(group, &family, now_ms());
        started.push(s.tasks.all.last().map(Task::json));
    }
    Bytes::from(json!({"tasks": started, "failures": v["failures"]}).to_string())
}

// ----------------------------------------------------------------------------- what the proxy answers

/// ListTasks and DescribeTasks, answered from the proxy's tasks (never from moto's).
pub(super) fn answer(state: &Mutex<State>, op: &str, body: &[u8]) -> Option<Reply> {
    if !matches!(op, "ListTasks" | "DescribeTasks") {
        return None;
    }
    let request: Value = serde_json::from_slice(body).unwrap_or_default();
    let mut s = state.lock().unwrap();
    let v = match op {
        "ListTasks" => list(&mut s.tasks, &request),
        _ => {
            let asked = request["tasks"].as_array().cloned().unwrap_or_default();
            if asked.len() > MOST {
                return Some(aws_error(
                    Protocol::AwsJson,
                    400,
                    "InvalidParameterException",
                    "Tasks cannot have more than 100 elements.",
                ));
            }
            describe(&s.tasks, &asked)
        }
    };
    Some(
        Response::builder()
            .status(StatusCode::OK)
            .header("content-type", "application/x-amz-json-1.1")
            .header("x-amzn-requestid", "00000000-1111-2222-3333-444444444444")
            .body(Full::new(Bytes::from(v.to_string())))
            .unwrap(),
    )
}

fn list(tasks: &mut Tasks, request: &Value) -> Value {
    let desired = request["desiredStatus"].as_str().unwrap_or("RUNNING");
    let service = request["serviceName"]
        .as_str()
        .map(|s| format!("service:{}", service_name(s)));
    let family = request["family"].as_str();
    let arns: Vec<&str> = tasks
        .all
        .iter()
        .filter(|t| t.desired == desired && t.shown(tasks.runs))
        .filter(|t| service.as_ref().is_none_or(|g| &t.group == g))
        .filter(|t| family.is_none_or(|f| t.family == f))
        .map(|t| t.arn.as_str())
        .collect();
    let asked = request["maxResults"].as_u64().map_or(MOST, |n| n as usize);
    let size = asked.min(tasks.page_size.unwrap_or(MOST)).max(1);
    let from = paging::offset(request["nextToken"].as_str()).min(arns.len());
    let end = (from + size).min(arns.len());
    let mut v = json!({ "taskArns": arns[from..end] });
    if end < arns.len() {
        v["nextToken"] = json!(paging::token(end));
        tasks.cut_short += 1;
    }
    tasks.pages += 1;
    v
}

fn describe(tasks: &Tasks, asked: &[Value]) -> Value {
    let mut found = Vec::new();
    let mut failures = Vec::new();
    for a in asked.iter().filter_map(Value::as_str) {
        match tasks
            .all
            .iter()
            .filter(|t| t.shown(tasks.runs))
            .find(|t| t.arn == a || t.arn.ends_with(&format!("/{a}")))
        {
            Some(t) => found.push(t.json()),
            None => failures.push(json!({"arn": a, "reason": "MISSING"})),
        }
    }
    json!({"tasks": found, "failures": failures})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(state: &Mutex<State>, desired: &str) -> Vec<String> {
        let request = json!({ "desiredStatus": desired });
        let v = list(&mut state.lock().unwrap().tasks, &request);
        let arns = v["taskArns"].as_array().unwrap().iter();
        arns.map(|a| a.as_str().unwrap().to_string()).collect()
    }

    fn described(state: &Mutex<State>, arn: &str) -> Value {
        describe(&state.lock().unwrap().tasks, &[json!(arn)])
    }

    /// A task stopped in a run stays listed and described for 12 runs, an hour of the
    /// schedule; then ECS names it `MISSING`, and the proxy counts it once.
    #[test]
    fn a_stopped_task_is_shown_for_an_hour_of_runs() {
        let state = Mutex::new(State::default());
        let arn = start(&state, "family:batch", "batch");
        let id = arn.rsplit('/').next().unwrap().to_string();
        next_run(&state);
        stop_task(&state, &id);
        for _ in 1..RUNS_AN_HOUR {
            next_run(&state);
            assert_eq!(listed(&state, "STOPPED"), std::slice::from_ref(&arn));
            assert_eq!(described(&state, &arn)["tasks"][0]["lastStatus"], "STOPPED");
        }
        next_run(&state);
        assert!(listed(&state, "STOPPED").is_empty());
        assert_eq!(described(&state, &arn)["failures"][0]["reason"], "MISSING");
        next_run(&state);
        assert_eq!(state.lock().unwrap().tasks.forgotten, 1);
    }

    /// A task on its way out is shown all the way: its hour starts when it reaches STOPPED.
    #[test]
    fn a_stopping_task_is_shown_until_an_hour_after_it_stopped() {
        let state = Mutex::new(State::default());
        stop_slowly(&state);
        let arn = start(&state, "family:batch", "batch");
        stop_task(&state, arn.rsplit('/').next().unwrap());
        for _ in 0..RUNS_AN_HOUR * 2 {
            next_run(&state);
        }
        assert_eq!(listed(&state, "STOPPED"), std::slice::from_ref(&arn));
        for _ in 1..STOPPING.len() {
            advance(&state, false);
        }
        for _ in 1..RUNS_AN_HOUR {
            next_run(&state);
        }
        assert_eq!(listed(&state, "STOPPED"), [arn]);
        next_run(&state);
        assert!(listed(&state, "STOPPED").is_empty());
    }

    /// Advanced short of STOPPED, a stopping task waits at the status before it, however often;
    /// one plain advance then stops it.
    #[test]
    fn a_task_advanced_short_of_stopped_waits_before_it() {
        let state = Mutex::new(State::default());
        stop_slowly(&state);
        let arn = start(&state, "family:batch", "batch");
        stop_task(&state, arn.rsplit('/').next().unwrap());
        for _ in 0..STOPPING.len() * 2 {
            advance(&state, true);
        }
        let last = |s: &Mutex<State>| described(s, &arn)["tasks"][0]["lastStatus"].clone();
        assert_eq!(last(&state), STOPPING[STOPPING.len() - 2]);
        advance(&state, false);
        assert_eq!(last(&state), "STOPPED");
    }
}
