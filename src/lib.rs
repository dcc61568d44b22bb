//! efs-mount-autoscaler: observe → plan → apply, once per invocation.
//!
//! Public is only what the binaries and the tests use: the AWS clients, the settings, the
//! event, one run, the error, and the metric and IAM lists the template is checked against.
//! Why the code is shaped this way: docs/design.md; what it promises (settings, events, the
//! response, decisions, metrics): docs/contract.md; how files move: docs/data-plane.md.
//!
//! # Where things are
//!
//! In floors, bottom to top: a module imports from its own floor and those below, never from
//! one above, and no import circle spans two folders (the test `floors` holds the code to
//! this map). One line a module; the plan's parts each in a file of their own.
//!
//! Floor 0, what everything uses:
//! - `error`: the one error type; `Error::kind` is the Lambda error type.
//! - `metrics`: CloudWatch metrics in the Embedded Metric Format (`METRICS`).
//! - `event`: the events an invocation may send (`Action`).
//! - `when`: a moment (`When`).
//!
//! Floor 1, settings and data:
//! - `config`: the settings (`ENV_VARS`, `Config`, `ClientReports`, `ABANDONED_AFTER`), checked
//!   before any AWS call.
//! - `state`: the function's own state, in its SSM parameter.
//!   - `state::rebalancing`: what the rebalance keeps between runs: its position, the shards
//!     its last clean pass balanced against.
//!   - `state::comparison`: how a rebalance compares a file's shard, all or the added ones.
//! - `observed`: what a run reads, as plain data (`Observed`, `Noticed`).
//! - `reports`: the clients' reports as the function reads them.
//! - `shard`: which shard root each mount target owns (`FirstRoot`).
//!
//! Floor 2, the services:
//! - `aws`: one module per AWS service (`aws::ec2`, `aws::ecs`, `aws::efs`, `aws::ssm`), the
//!   only code that sees the SDK (`Aws`, their clients; `CALLED_ACTIONS`).
//!
//! Floor 3, the decision:
//! - `plan`: the decision, a pure function of what was observed (no I/O, no clock): `plan()`,
//!   a pipeline of its parts, and `Plan`.
//!   - `plan::policy`: the settings a plan reads (`Policy`).
//!   - `plan::counts`: files per shard root, and in all.
//!   - `plan::room`: where a new mount target may go (`Excluded`: subnets AWS refused).
//!   - `plan::sizing`: how many shards are needed, wanted and possible; the scale-in band.
//!   - `plan::tracking`: the state brought up to date with what AWS shows.
//!   - `plan::fleet`: which services run the list published last, and why files may not move.
//!   - `plan::tasks`: the ECS tasks that may still run an older list (`OldTask`).
//!   - `plan::clients`: the clients as their reports show them (`Behind`).
//!   - `plan::list`: the list clients should see, rebuilt from the published one.
//!   - `plan::placements`: the earlier placements a version 3 list keeps open.
//!   - `plan::announcement`: a change of homes announced first, switched once the fleet runs it.
//!   - `plan::rendezvous`: a `modulo-sha256` list under rendezvous (the migrate event).
//!   - `plan::scale_in`: what a scale-in would drain, and the drain under way.
//!   - `plan::decision`: the one decision (`decide`, `Decision::name`, `Decision::NAMES`), in
//!     families, a file each with their decisions, names, effects and words: `grow.rs`,
//!     `drain.rs`, `wait.rs` (a drain's waits), `scale_in.rs` (and `keep`), `event.rs`.
//!   - `plan::effect`: what a decision does; its family says it, in an exhaustive match.
//!   - `plan::reason`: the decision in words, its family's.
//!   - `plan::upkeep`: what every run does whatever it decided.
//!   - `plan::step`: the steps a plan asks for, and their order (`StepKind`).
//!   - `plan::warning`: `Warning`, with `kind()`.
//!   - `plan::tests`: the plan's table tests by subject, with fixtures built by hand.
//!
//! Floor 4, the moves:
//! - `moves`: files moved home: a drain's walk (`drain_shards`) and the rebalance's, one
//!   `Mover`.
//!   - `moves::count`: what a run moved (`Moves`).
//!   - `moves::mover`: one run's walk of a shard, entry by entry, within its `Budget`.
//!   - `moves::batch`: misplaced files moved a batch at a time.
//!   - `moves::give_back`: the router's abandoned names cleaned up, cut-short moves given back.
//!   - `moves::drain`: a drain's walk; whether a draining tree holds a file (`holds_files`).
//!   - `moves::walk`: a rebalance run's walk, from where the last run stopped (`rebalance`).
//!   - `moves::pass`: the rebalance, a little each run (`run`, its result `Rebalanced`).
//!   - `moves::tests`: drains, rebalance runs and give-backs on a local file system.
//!
//! Floor 5, the run:
//! - `observe`: what a run reads (reads only).
//! - `apply`: carrying out a plan's steps, each idempotent.
//! - `response`: the invocation's answer.
//! - `reconcile`: one invocation: observe, plan, apply (again after a step that changes what
//!   a run sees), or the rebalance; the response and the run summary.
//!
//! On no floor:
//! - `main.rs`: logging, the settings, the AWS services' clients (`Aws`), `lambda_runtime::run`.
//! - `bin/efs-route.rs`: the operators' routing tool.
//! - `docs` (tests only): the docs' tables of names, defaults and fields against the code.
//! - `floors` (tests only): the floors of this map held to the code.
//!
//! Beside this crate: `router/` (the routing library, `efs-router`; its map is in
//! router/src/lib.rs), `clients/python/` (the Python client; its modules are listed in
//! clients/python/README.md), `netfs/` (a FUSE passthrough that costs like NFS, for tests and
//! benchmarks), `scripts/nfs-tier/` (a real NFSv4.1 server and client in a VM), `tests/`
//! (end-to-end against moto_server, the Runtime API and a fault proxy; the template; the
//! soak) and `template.yaml` with `samconfig.toml` (the SAM application). How each is tested:
//! docs/testing.md. The habits the code keeps, and its size rules: docs/code.md.

pub mod aws;
pub mod config;
pub mod error;
pub mod event;
pub mod metrics;
pub mod reconcile;
pub mod reports;

mod apply;
#[cfg(test)]
mod docs;
#[cfg(test)]
mod floors;
mod moves;
mod observe;
/// The log `kind` of a run whose list read was older than the recorded publish (the soak
/// counts such runs).
pub use observe::LIST_OLDER_THAN_PUBLISHED;
mod observed;
mod plan;
mod response;
mod shard;
mod state;
mod when;

/// The rebalance's walk as a run makes it, for `examples/rebalance_bench.rs`: not an API.
#[doc(hidden)]
pub mod bench {
    pub use crate::config::ABANDONED_AFTER;
    pub use crate::moves::{rebalance, Budget, Moves, Walk};
    pub use crate::state::comparison::{comparison, Comparison};
    pub use crate::state::rebalancing::ShardSet;
}
