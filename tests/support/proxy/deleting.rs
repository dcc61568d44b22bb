//! A deleted mount target as AWS shows it: `deleting` for a while (DeleteMountTarget answers
//! while the target is still `deleting`, and DescribeMountTargets shows it so), and a delete
//! of it retried meanwhile refused. moto deletes at once, so the proxy keeps the target's last
//! description and shows it `deleting` for the describes a test asks.

use super::{aws_error, is_hop_by_hop, paging, Protocol, Reply, State};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::http::request::Parts;
use hyper::Request;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use serde_json::{json, Value};
use std::sync::Mutex;

fn target_id(path: &str) -> String {
    path.trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or_default()
        .to_string()
}

/// The answer to a DeleteMountTarget of a target still `deleting`, when one is played.
pub(super) fn redelete(state: &Mutex<State>, path: &str) -> Option<Reply> {
    let mut s = state.lock().unwrap();
    let id = target_id(path);
    let (status, code) = s.redelete.clone()?;
    s.deleting.get(&id).filter(|(_, left)| *left > 0)?;
    *s.played
        .entry("deletes refused while deleting")
        .or_default() += 1;
    let message = format!("Mount target {id} is in the deleting state");
    Some(aws_error(Protocol::RestJson, status, &code, &message))
}

/// Before a delete is forwarded: the target's description, from moto, to show once it is gone.
pub(super) async fn remember(
    state: &Mutex<State>,
    parts: &Parts,
    upstream: &str,
    client: &Client<HttpConnector, Full<Bytes>>,
    path: &str,
) {
    if state.lock().unwrap().hold_deleting.is_none() {
        return;
    }
    let id = target_id(path);
    let mut ask = Request::builder().method("GET").uri(format!(
        "{upstream}/2015-02-01/mount-targets?MountTargetId={id}"
    ));
    for (name, value) in parts.headers.iter() {
        if !is_hop_by_hop(name) && name != hyper::header::CONTENT_LENGTH {
            ask = ask.header(name, value);
        }
    }
    let Ok(answer) = client
        .request(ask.body(Full::new(Bytes::new())).unwrap())
        .await
    else {
        return;
    };
    let Ok(body) = answer.into_body().collect().await else {
        return;
    };
    let v: Value = serde_json::from_slice(&body.to_bytes()).unwrap_or_default();
    if let Some(d) = v["MountTargets"].as_array().and_then(|a| a.first()) {
        let mut s = state.lock().unwrap();
        s.deleting.insert(id, (d.clone(), 0));
    }
}

/// After moto deleted it: the target is shown `deleting` for the describes asked.
pub(super) fn start(state: &Mutex<State>, path: &str) {
    let mut s = state.lock().unwrap();
    let Some(describes) = s.hold_deleting else {
        return;
    };
    let s = &mut *s;
    if let Some((d, left)) = s.deleting.get_mut(&target_id(path)) {
        if *left == 0 && d["LifeCycleState"] != json!("deleting") {
            d["LifeCycleState"] = json!("deleting");
            *left = describes;
            *s.played.entry("targets shown deleting").or_default() += 1;
        }
    }
}

/// A describe of one target still `deleting` (moto answers 404): it, `deleting`.
pub(super) fn by_id(state: &Mutex<State>, query: &str) -> Option<Bytes> {
    let id = paging::param(query, "MountTargetId")?;
    let mut s = state.lock().unwrap();
    let s = &mut *s;
    let (d, left) = s.deleting.get_mut(&id).filter(|(_, left)| *left > 0)?;
    *left -= 1;
    let shown = json!({"MountTargets": [d.clone()]}).to_string();
    *s.played
        .entry("describes showing a target deleting")
        .or_default() += 1;
    Some(Bytes::from(shown))
}

/// A describe of the file system's targets: those still `deleting` are among them.
pub(super) fn add(state: &Mutex<State>, query: &str, body: Bytes) -> Bytes {
    let Some(fs) = paging::param(query, "FileSystemId") else {
        return body;
    };
    let Ok(mut v) = serde_json::from_slice::<Value>(&body) else {
        return body;
    };
    let mut s = state.lock().unwrap();
    let Some(targets) = v["MountTargets"].as_array_mut() else {
        return body;
    };
    let s = &mut *s;
    let mut changed = false;
    for (id, (d, left)) in s.deleting.iter_mut() {
        let shown = targets.iter().any(|t| t["MountTargetId"] == json!(id));
        if *left > 0 && d["FileSystemId"] == json!(fs) && !shown {
            targets.push(d.clone());
            *left -= 1;
            changed = true;
        }
    }
    if changed {
        *s.played
            .entry("describes showing a target deleting")
            .or_default() += 1;
        Bytes::from(v.to_string())
    } else {
        body
    }
}
