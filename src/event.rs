//! What an invocation asks for.

use crate::error::Error;
use serde_json::Value;
use std::time::{Duration, SystemTime};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Observe, plan and apply.
    Reconcile,
    /// Observe and plan; change nothing.
    Plan,
    /// Move misplaced files home, at most `max_moves`.
    Rebalance { max_moves: u64 },
    /// Reconcile, republishing a `modulo-sha256` list under `rendezvous` first.
    Migrate,
    /// Reconcile towards the file system as the function found it: every file home to `/`,
    /// a one-shard list, the targets it created deleted (one step of that a run).
    Undo,
}

/// The most files one rebalancing run may be asked to move: anyone allowed to invoke the
/// function could otherwise hold its one concurrent run for 15 minutes at a time.
pub const MOST_MOVES: u64 = 100_000;

/// Moves a rebalance makes when the event does not say (the original plan: about 10,000 a day).
pub const DEFAULT_MAX_MOVES: u64 = 10_000;

/// The least `budget_seconds` an event may give its run: the time a run keeps back after its
/// waits (20 s: observe again, publish, redeploy, answer) and 10 s to do something.
pub const LEAST_BUDGET_SECS: u64 = 30;

/// The most: Lambda's longest run.
pub const MOST_BUDGET_SECS: u64 = 900;

/// The run's deadline: Lambda's, or sooner when the event gives `budget_seconds`, so that a
/// manual invocation answers within a client's read timeout (60 s for the AWS CLI and SDKs,
/// which retry a timed-out call while the first goes on unseen). Its waits and moves stop as
/// at Lambda's deadline, and what is left is the next invocation's (scripts/efs-drive).
pub fn deadline(event: &Value, lambda: SystemTime) -> Result<SystemTime, Error> {
    let Some(v) = event.get("budget_seconds").filter(|v| !v.is_null()) else {
        return Ok(lambda);
    };
    let secs = v
        .as_u64()
        .filter(|n| (LEAST_BUDGET_SECS..=MOST_BUDGET_SECS).contains(n))
        .ok_or_else(|| Error::UnsupportedEvent {
            received: format!(
                "budget_seconds {v}: a whole number of seconds from {LEAST_BUDGET_SECS} to \
                 {MOST_BUDGET_SECS} is expected"
            ),
        })?;
    Ok(lambda.min(SystemTime::now() + Duration::from_secs(secs)))
}

impl Action {
    /// An EventBridge scheduled event or `{"action":"reconcile"}` reconciles;
    /// `{"action":"plan"}` plans; `{"action":"rebalance"}` (with an optional `max_moves`)
    /// rebalances; `{"action":"migrate","strategy":"rendezvous"}` migrates. Anything else is
    /// refused before any AWS call.
    pub fn from_event(event: &Value) -> Result<Self, Error> {
        if event.get("detail-type").and_then(Value::as_str) == Some("Scheduled Event") {
            return Ok(Action::Reconcile);
        }
        match event.get("action").and_then(Value::as_str) {
            Some("reconcile") => Ok(Action::Reconcile),
            Some("plan") => Ok(Action::Plan),
            Some("undo") => Ok(Action::Undo),
            // Explicit about where it goes: the only strategy a list can migrate to.
            Some("migrate") => match event.get("strategy").and_then(Value::as_str) {
                Some("rendezvous") => Ok(Action::Migrate),
                other => Err(Error::UnsupportedEvent {
                    received: format!(
                        "migrate to strategy {}: only {{\"action\":\"migrate\",\"strategy\":\"rendezvous\"}} \
                         is supported",
                        other.map_or("(none given)".to_owned(), |s| format!("{s:?}"))
                    ),
                }),
            },
            Some("rebalance") => match event.get("max_moves") {
                None | Some(Value::Null) => Ok(Action::Rebalance {
                    max_moves: DEFAULT_MAX_MOVES,
                }),
                Some(v) => v
                    .as_u64()
                    .filter(|n| *n <= MOST_MOVES)
                    .map(|max_moves| Action::Rebalance { max_moves })
                    .ok_or_else(|| Error::UnsupportedEvent {
                        received: format!(
                            "max_moves {v}: a whole number of files up to {MOST_MOVES} is expected"
                        ),
                    }),
            },
            _ => {
                let mut received = event.to_string();
                if received.len() > 200 {
                    received.truncate(received.floor_char_boundary(200));
                    received.push('…');
                }
                Err(Error::UnsupportedEvent { received })
            }
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Action::Reconcile => "reconcile",
            Action::Plan => "plan",
            Action::Rebalance { .. } => "rebalance",
            Action::Migrate => "migrate",
            Action::Undo => "undo",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event_file(name: &str) -> Value {
        // The checkout cargo runs the test in (a shared target directory may keep a binary built
        // in another clone, with that clone's compile-time path).
        let dir = std::env::var("CARGO_MANIFEST_DIR")
            .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string());
        let path = format!("{dir}/events/{name}");
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
    }

    #[test]
    fn the_sample_events_are_understood() {
        assert_eq!(
            Action::from_event(&event_file("scheduled.json")).unwrap(),
            Action::Reconcile
        );
        assert_eq!(
            Action::from_event(&event_file("reconcile.json")).unwrap(),
            Action::Reconcile
        );
        assert_eq!(
            Action::from_event(&event_file("plan.json")).unwrap(),
            Action::Plan
        );
        assert_eq!(
            Action::from_event(&event_file("rebalance.json")).unwrap(),
            Action::Rebalance { max_moves: 10_000 }
        );
        assert_eq!(
            Action::from_event(&serde_json::json!({"action": "rebalance"})).unwrap(),
            Action::Rebalance { max_moves: 10_000 }
        );
        assert_eq!(
            Action::from_event(&event_file("migrate.json")).unwrap(),
            Action::Migrate
        );
        assert_eq!(
            Action::from_event(&event_file("undo.json")).unwrap(),
            Action::Undo
        );
    }

    #[test]
    fn a_budget_brings_the_deadline_forward_never_back() {
        let lambda = SystemTime::now() + Duration::from_secs(900);
        let none = serde_json::json!({"action": "undo"});
        assert_eq!(deadline(&none, lambda).unwrap(), lambda);
        let short = serde_json::json!({"action": "undo", "budget_seconds": 45});
        let d = deadline(&short, lambda).unwrap();
        assert!(d < lambda && d <= SystemTime::now() + Duration::from_secs(45));
        let soon = SystemTime::now() + Duration::from_secs(10);
        assert_eq!(deadline(&short, soon).unwrap(), soon);
        for bad in [
            serde_json::json!(29),
            serde_json::json!(901),
            serde_json::json!(45.5),
            serde_json::json!("45"),
            serde_json::json!(-45),
        ] {
            let event = serde_json::json!({"action": "undo", "budget_seconds": bad});
            let e = deadline(&event, lambda).unwrap_err();
            assert_eq!(e.kind(), "UnsupportedEvent");
        }
    }

    #[test]
    fn anything_else_is_refused_with_what_is_accepted() {
        for bad in [
            serde_json::json!({}),
            serde_json::json!({"action": "explode"}),
            serde_json::json!({"action": 1}),
            serde_json::json!({"action": "rebalance", "max_moves": -1}),
            serde_json::json!({"action": "migrate"}),
            serde_json::json!({"action": "migrate", "strategy": "modulo-sha256"}),
            serde_json::json!({"action": "rebalance", "max_moves": "lots"}),
            serde_json::json!({"action": "rebalance", "max_moves": MOST_MOVES + 1}),
            serde_json::json!({"detail-type": "EC2 Instance State-change Notification"}),
            serde_json::json!("reconcile"),
            serde_json::json!(null),
        ] {
            let err = Action::from_event(&bad).unwrap_err().to_string();
            assert!(
                err.contains("\"action\":\"plan\"") && err.contains("Scheduled Event"),
                "{err}"
            );
        }
    }
}
