//! efs-mount-autoscaler: observe → plan → apply, once per invocation.
//!
//! Public is only what the binaries and the tests use: the AWS clients, the settings, the
//! event, one run, the error, and the metric and IAM lists the template is checked against.
//! Why the code is shaped this way: docs/design.md; what it promises (settings, events, the
//! response, decisions, metrics): docs/contract.md; how files move: docs/data-plane.md.
//!
//! # Where things are
//!
//! One line a module; the plan's parts each in a file of their own.
//!
//! - `main.rs`: logging, the settings, the AWS services' clients (`Aws`), `lambda_runtime::run`.
//! - `config`: the settings (`ENV_VARS`, `Config`), checked before any AWS call.
//! - `event`: the events an invocation may send (`Action`).
//! - `reconcile`: one invocation: observe, plan, apply (again after a step that changes what
//!   a run sees), or the rebalance; the response and the run summary.
//! - `observe`, `observed`: what a run reads (reads only), as plain data.
//! - `plan`: the decision, a pure function of what was observed (no I/O, no clock): `plan()`,
//!   a pipeline of its parts, and `Plan`.
//!   - `plan::policy`: the settings a plan reads (`Policy`, `ClientReports`).
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
//! - `shard`: which shard root each mount target owns (`FirstRoot`).
//! - `apply`: carrying out a plan's steps, each idempotent.
//! - `homing`: the walk that moves files home: a drain's (`drain_shards`) and the rebalance's
//!   (`rebalance`), one `Mover`.
//! - `rebalance`: the rebalance, a little each run (`run`); what it keeps between runs
//!   (`rebalance::record`: its position, the shards its last clean pass balanced against); how
//!   it compares a file's shard, all or the added ones (`rebalance::comparison`).
//! - `reports`: the clients' reports as the function reads them.
//! - `state`: the function's own state, in its SSM parameter.
//! - `response`: the invocation's answer.
//! - `metrics`: CloudWatch metrics in the Embedded Metric Format (`METRICS`).
//! - `error`: the one error type; `Error::kind` is the Lambda error type.
//! - `aws`: one module per AWS service (`aws::ec2`, `aws::ecs`, `aws::efs`, `aws::ssm`), the
//!   only code that sees the SDK (`Aws`, their clients; `CALLED_ACTIONS`).
//! - `bin/efs-route.rs`: the operators' routing tool.
//! - `docs` (tests only): the docs' tables of names, defaults and fields against the code.
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
mod homing;
mod observe;
mod observed;
mod plan;
mod rebalance;
mod response;
mod shard;
mod state;

/// The rebalance's walk as a run makes it, for `examples/rebalance_bench.rs`: not an API.
#[doc(hidden)]
pub mod bench {
    pub use crate::homing::{rebalance, Budget, Moves, Walk, ABANDONED_AFTER};
    pub use crate::rebalance::{comparison, Comparison, ShardSet};
}
