//! SSM reads that lag a write, as AWS's can and moto's never do: right after a PutParameter
//! of a name, a GetParameter of it may answer what it held before (the previous value, with
//! its `Version` and `LastModifiedDate`), or `ParameterNotFound` when the write created it.
//! Before a write is forwarded the proxy asks moto for the parameter as it stands, and after
//! moto took the write it opens, with the chance a test set, a window: the next reads of that
//! name within it (by count and by time) are answered that, as a lagging replica would; a read
//! of the version the write made (`<name>:<version>`) within it is answered that the version
//! does not exist. SSM documents no bound on the lag; the window is the test's.

use super::{aws_error, is_hop_by_hop, Protocol, Reply, State};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::http::request::Parts;
use hyper::{Request, Response, StatusCode};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How reads lag: the chance a write opens a window, its reads and its time.
#[derive(Debug)]
pub(super) struct Lag {
    per_mille: u64,
    reads: usize,
    window: Duration,
    /// splitmix64: whether a write opens a window is drawn from the test's seed.
    rng: u64,
}

/// What the parameter held before a write (`None`: it did not exist).
#[derive(Debug)]
struct Window {
    before: Option<Bytes>,
    reads: usize,
    until: Instant,
}

#[derive(Debug, Default)]
pub(super) struct Stale {
    pub(super) lag: Option<Lag>,
    /// Parameter name → what it held before the write being forwarded now.
    pending: BTreeMap<String, Option<Bytes>>,
    windows: BTreeMap<String, Window>,
    /// Stale answers served, by parameter name and kind (`previous version`, `not found`).
    pub(super) served: BTreeMap<(String, &'static str), usize>,
}

pub(super) fn lag(state: &Mutex<State>, per_mille: u64, reads: usize, window: Duration, seed: u64) {
    state.lock().unwrap().stale.lag = Some(Lag {
        per_mille: per_mille.min(1000),
        reads,
        window,
        rng: seed,
    });
}

fn name(body: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(body).ok()?;
    v["Name"].as_str().map(str::to_owned)
}

/// Before a PutParameter is forwarded: the parameter as moto holds it now.
pub(super) async fn remember(
    state: &Mutex<State>,
    parts: &Parts,
    body: &[u8],
    upstream: &str,
    client: &Client<HttpConnector, Full<Bytes>>,
) {
    if state.lock().unwrap().stale.lag.is_none() {
        return;
    }
    let Some(name) = name(body) else {
        return;
    };
    let mut ask = Request::builder()
        .method("POST")
        .uri(format!("{upstream}{}", parts.uri.path()));
    for (header, value) in parts.headers.iter() {
        if !is_hop_by_hop(header) && header != hyper::header::CONTENT_LENGTH {
            ask = ask.header(header, value);
        }
    }
    let ask = ask.header("x-amz-target", "AmazonSSM.GetParameter");
    let request = Full::new(Bytes::from(json!({ "Name": name }).to_string()));
    let Ok(answer) = client.request(ask.body(request).unwrap()).await else {
        return;
    };
    let ok = answer.status().is_success();
    let Ok(collected) = answer.into_body().collect().await else {
        return;
    };
    let bytes = collected.to_bytes();
    let before = match ok {
        true => Some(bytes),
        false if String::from_utf8_lossy(&bytes).contains("ParameterNotFound") => None,
        // Anything else: no window for this write.
        false => return,
    };
    state.lock().unwrap().stale.pending.insert(name, before);
}

/// After moto took a PutParameter: reads of it may lag for a while, as drawn.
pub(super) fn written(state: &Mutex<State>, body: &[u8]) {
    let Some(name) = name(body) else {
        return;
    };
    let mut s = state.lock().unwrap();
    let stale = &mut s.stale;
    let Some(before) = stale.pending.remove(&name) else {
        return;
    };
    let Some(lag) = stale.lag.as_mut() else {
        return;
    };
    if next(&mut lag.rng) % 1000 >= lag.per_mille {
        stale.windows.remove(&name);
        return;
    }
    let window = Window {
        before,
        reads: lag.reads,
        until: Instant::now() + lag.window,
    };
    stale.windows.insert(name, window);
}

/// A GetParameter inside a write's window: what the parameter held before the write. A read of
/// a version (`<name>:<version>`) lags alike: the version the write made is not found yet
/// (`ParameterVersionNotFound`), as a replica that has not seen the write answers; an older
/// version is answered as it is.
pub(super) fn answer(state: &Mutex<State>, op: &str, body: &[u8]) -> Option<Reply> {
    if op != "GetParameter" {
        return None;
    }
    let asked = name(body)?;
    let (name, version) = match asked.rsplit_once(':') {
        Some((name, v)) => (name.to_owned(), Some(v.parse::<i64>().ok()?)),
        None => (asked.clone(), None),
    };
    let mut s = state.lock().unwrap();
    let stale = &mut s.stale;
    let w = stale.windows.get_mut(&name)?;
    if w.reads == 0 || Instant::now() >= w.until {
        stale.windows.remove(&name);
        return None;
    }
    // The version the write made: the one before it, plus one.
    let written = w
        .before
        .as_deref()
        .and_then(version_of)
        .map_or(1, |v| v + 1);
    if version.is_some_and(|v| v < written) {
        return None;
    }
    w.reads -= 1;
    let (reply, kind) = match (&w.before, version) {
        (_, Some(v)) => (
            aws_error(
                Protocol::AwsJson,
                400,
                "ParameterVersionNotFound",
                &format!("Systems Manager could not find version {v} of {name}."),
            ),
            "version not found",
        ),
        (Some(before), None) => (
            Response::builder()
                .status(StatusCode::OK)
                .header("content-type", "application/x-amz-json-1.1")
                .header("x-amzn-requestid", "00000000-1111-2222-3333-555555555555")
                .body(Full::new(before.clone()))
                .expect("a stale answer"),
            "previous version",
        ),
        (None, None) => (
            aws_error(
                Protocol::AwsJson,
                400,
                "ParameterNotFound",
                &format!("Parameter {name} not found."),
            ),
            "not found",
        ),
    };
    *stale.served.entry((name, kind)).or_default() += 1;
    Some(reply)
}

/// The `Version` of a GetParameter answer.
fn version_of(answer: &[u8]) -> Option<i64> {
    let v: Value = serde_json::from_slice(answer).ok()?;
    v["Parameter"]["Version"].as_i64()
}

fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
