//! The proof: a randomized, seeded soak, in the manner of FoundationDB's simulation and Jepsen.
//!
//! One world (moto_server as AWS, three AZs, one mount target in us-east-1a, the contract's list
//! published), the real function binary run as Lambda runs it (our Runtime API; a new process
//! each invocation) against moto behind the fault-injecting proxy, and simulated clients that
//! route with the real routing library (`efs_router::Router`, `Layout::single_mount`). Where
//! they all see the file system is [`Views`]: one temporary directory, or on the NFS tier
//! (`EFS_NFS_MOUNTS` set, `make soak`) an NFS mount for the function and two for the clients,
//! each with its own caches, and the exported directory itself for the checks. Each step is one
//! of:
//!
//! - a **client operation**: write a new logical path (flat, `data/analysis/<name>.json`, which
//!   the function counts, or nested, `data/analysis/<dir>/…/<name>.json`, which it moves but
//!   does not count), rewrite one, read one (`read_with_fallback`), delete one
//!   (`Router::delete`: where the client's list says a copy can be) or `create` one (the one
//!   call for check-then-write: a new path is written at home; a live one must be found
//!   wherever its writer's list put it, and left as it is: no second copy). One client of the
//!   fleet mounts each shard apart (`Layout::per_target`, each shard's directory standing for
//!   its `ip:root` mount: one file system, so a rename between them works where separate NFS
//!   mounts would refuse it). Every write's bytes are
//!   unique, so any copy found says which write it is. The files grow and shrink in phases, across
//!   `FILE_THRESHOLD` = 20, so the function adds shards and drains them within the run
//!   (`SCALE_IN_COOLDOWN_SECONDS` = 0);
//! - a **function run**: reconcile, or rebalance with a small `max_moves` (most often once no
//!   rollout is held) and, most of the time, `REBALANCE_MAX_VISITS` of 1 to 30 files, so that a
//!   pass spans runs and each resumes where the last stopped; sometimes with a
//!   fault injected by the proxy (throttling, of one operation or of every service at once,
//!   5xx, a stalled call under
//!   `API_ATTEMPT_TIMEOUT_SECONDS` = 1 and `API_CALL_TIMEOUT_SECONDS` = 2, an answer lost after
//!   AWS did the call, a deadline too short to move anything, a new target that stays
//!   `creating` past the run) or **killed** where it stands (the
//!   proxy stalls every request after the Nth, or the request whose answer it lost, and the
//!   harness kills the process as Lambda would at its deadline), or **killed among its moves**
//!   (a thread watching the files kills it a random 0-4 ms after the first misplaced file left
//!   its place; moves make no AWS call, so no proxy fault lands there), most of these **within
//!   a move**: once the moves begin, the thread freezes the run (SIGSTOP) every few
//!   microseconds of its running and kills it only while a move's private name is on disk.
//!   No client works beside such a run, so a file gone is the function's doing. The harness
//!   kills a run at its deadline, as Lambda does, and a run that answered after it fails the
//!   soak. Faults are cleared after the run. Some runs have client operations going on beside
//!   them (new paths, reads, deletes while the fleet runs the published list, and rewrites of
//!   a path away from home, which race the run's move of it; past a quarter of the steps with
//!   no such race yet, a rebalance that will move has them instead of a kill);
//! - **an ECS rollout completes** (`Proxy::complete_rollouts`; rollouts are held from the
//!   start, as ECS's rolling update keeps old tasks running). The tasks a deployment replaced
//!   stop slowly (`Proxy::stop_tasks_slowly`): before each step ECS moves them a status on
//!   (DEACTIVATING, STOPPING, DEPROVISIONING, STOPPED) now and then, and more often from a
//!   drawn lag after a rollout completes, so either of ECS's two signals may lead.
//!
//! **Clients and lists.** A client's list is what SSM held when its task started. When a run
//! forces a deployment, each client is replaced (takes the list published now) or not (keeps
//! the one it had: an old task) at random; when the test completes the rollout, every client
//! takes the list of the last forced deployment. So several lists are in use at once, exactly
//! while the function can see (DescribeServices) that the fleet has not converged.
//!
//! **What ECS hides** (issue 20), drawn before each step from a generator of its own: a
//! replaced client that goes on as a **stopping task** (DEACTIVATING, STOPPING), reporting and
//! writing on its old list for some steps; a client whose **refresh fails**, keeping its old
//! list for some steps after its rollout completed; a **silent** client, dead without a word,
//! whose report (on the list before the current one, written beside the routers' own) stays
//! until it is aged past its lifetime (the soak runs faster than real time); an **old
//! router** that reads version 1 only, reporting the published list; and a **standalone
//! task**, started with RunTask (in no service), whose router reports and writes on the list
//! published when it started. ECS shows the standalone task only by its family
//! (`ECS_CLIENT_FAMILIES`), and the others not at all: only their reports can hold the
//! function. So after every run: no file moved and no target deleted while a live report
//! named an older list than the published one at the run's start. That is judged on what the
//! run did, not on what it answered: the clients' files on disk and AWS's targets before and
//! after every run, answered, failed or killed (a client path that lost a copy, the paths of
//! the traffic beside the run aside; a target that went from AWS or shows `deleting`); and a
//! run that answered it moved nothing must have taken no file from its place.
//!
//! **What ECS alone shows** (issue 29). The function runs with its default,
//! `CLIENT_REPORTS=require`: every running task of the service and the family must have a live
//! report naming it. Each task of the service has a router that reports the list published
//! when the task started and names the task (through a task metadata endpoint), until the
//! task is STOPPING; ECS then shows it STOPPING and DEPROVISIONING with no report, so ECS's task
//! rule (a task created no later than the list's publish and not STOPPED) holds alone. And now
//! and then (always at step 2) a task of the service runs a **router older than reports**
//! (it reads list versions 1 and 2, writes on the list it started with, and reports nothing;
//! on a version 3 list, a current router built with reports off), or is **the app on plain
//! paths** itself, beside the routed tasks after adoption (it writes where a plain path lands,
//! under the first shard `/`; past a quarter of the steps with no such write yet, the next one
//! is): only ECS shows it, until it stops or a forced deployment replaces it. After every run:
//! nothing moved or deleted while ECS showed a task the soak saw before the run that published
//! the current list and not STOPPED yet, or a running task that writes no report; the answer
//! names that task `unreported` in `clients_behind` (unless ECS's tasks could not be listed);
//! and while it runs the published list stays one it reads.
//!
//! **A hostile co-tenant** (issue 27), drawn before each step from a generator of its own
//! (`support::hostile` does it on disk): a writer with the clients' uid that plants links in
//! the shards' watched trees (to another shard's directory, to victim files the test owns
//! outside the shards, to one victim, to the reports' directory), makes directories of its own
//! and swaps one for a link between steps and, on a thread, again and again while a run walks;
//! writes reports of clients that do not exist dated far in the future (by `written_at`, mtime
//! or both; of the published list, or of one nobody published); puts junk in the reports'
//! directory (directories, files that are not JSON, `.tmp` names, oversize files, a link or a
//! FIFO named like a report); plants the router's private names (`.moving` directories and
//! files, `.tmp` files) with its own content; and names that are not UTF-8. Its entries are
//! not the clients' data (the function may move, keep or leave them), and each goes after a
//! few steps (its reports sooner; some that hold no drain live past `ABANDONED_AFTER`); in the
//! wind-down, what it has outside the first shard goes within 20 steps. What is checked: the
//! victims are never moved, changed or deleted, and nothing appears beside them; no name of
//! the co-tenant's holds a client's bytes; every live router's report stays; the checks
//! below hold for the clients' files; no file moves while a report of the co-tenant's (or its
//! junk named like one) names another list; a report's future time is taken as its file's
//! change; and a run the clients do not work beside counts at least the clients' files, and
//! one that wants more shards than serve decides to grow (`SOAK_HOSTILE_SKIP=link,report,
//! junk,private,non-utf8` or `all` leaves kinds out).
//!
//! **What AWS does and moto does not** (issue 29), played by the proxy from the start, its
//! parameters drawn from the seed (`AwsWays`): DescribeMountTargets, DescribeSubnets and
//! ListTasks answer in pages of one or two; a deleted target stays `deleting` for a few
//! describes, and a delete of it meanwhile is refused (`IncorrectMountTargetState` or
//! `MountTargetNotFound`, as drawn); PutParameter refuses a value past SSM's 4,096 characters;
//! and SSM's reads lag its writes: right after a PutParameter of the state or the list, the
//! next reads of it, within a window drawn in time and reads, may answer the previous version
//! (or "not found" for a new parameter). Beside the faults aimed at one operation (ListTasks,
//! DescribeTasks and RunTask among them: RunTask is the harness's own, so a fault drawn for it
//! waits for the next standalone task's start, which may also draw one, and the harness calls
//! again), a **throttling burst** hits EFS, SSM, ECS and EC2 at once. A fault counts only
//! when the function's own call met it (the proxy tells its calls by the key that signed
//! them); the harness's RunTask's are counted apart. `assert_statistics` holds the default run
//! to each of them having fired (`REQUIRED`), and the summary counts them.
//!
//! **After every step** (failing with the seed, the step and the step log):
//!
//! 1. no logical path written and not deleted is lost: its latest version is a regular file at
//!    its relative location under some root of the published list (draining ones included),
//!    or, hidden and counted, in a move's private name there, for at most three times
//!    `ABANDONED_AFTER` (the function gives it back); and every copy of any path under a
//!    listed root, private names included, holds bytes some client wrote under that name. Stronger, at **checkpoints**: once the fleet has converged (no rollout held, every
//!    client on the published list) and a rebalance has then moved every misplaced file
//!    (`remaining`, `failed` and `skipped` 0), every such path reads back its latest version
//!    through a client on the published list. Only there: while old clients write to their old
//!    homes, a stale copy may sit at the new home (written earlier by a new client), and a
//!    reader on the new list reads it until a rebalance compares the two and keeps the newer;
//!    the router says so (`router/REFERENCE.md`, known limits);
//! 2. no file lies under `<mount>/<root>/data/analysis` for a root not in the published list
//!    (a move's private name included; nothing outside those trees is looked at), and the old state directory `.efs-mount-autoscaler` does not exist (the state is in
//!    SSM);
//! 3. no mount target is deleted while its shard holds a file: after each run, the tree of
//!    each target it deleted holds no regular file, in a private name or not (and the first
//!    shard `/` is never deleted);
//! 4. the published list names only targets AWS has, draining ones included, and none that AWS
//!    (the proxy, which plays `creating` where moto makes a target available at once) still
//!    shows `creating`. ("At most one mount target per AZ" is not checked: moto refuses a
//!    second target in an AZ itself, so the check could not fail.)
//!
//! 5. a deleted path stays deleted: right after a client's delete (nothing else runs then) no
//!    copy is left under a root of that client's list (on version 3 the delete looks only where
//!    the list says a copy can be, so a copy under another of its roots is one the published
//!    placements missed: it fails too); a copy under a root its list does not
//!    name (a shard added since it started, where a newer client wrote or moved the path) stays,
//!    the one cause docs/routing.md leaves open, and is remembered; after every step, a deleted
//!    path on disk is one of those, or the soak fails.
//!
//! 6. no client is handed a list it cannot read: every client's and task's router holds a list
//!    of a version it reads, and a router that reads version 1 only, handed the published list
//!    at each refresh, is never handed a version 2 one.
//!
//! 7. no target the function created is forgotten: each one AWS has is, in the state as SSM
//!    holds it, recorded as the function's own, or a create asked for in its subnet (which
//!    the next run records), however SSM's reads lagged and wherever a run was killed. At the
//!    end every target it created is deleted, or listed or draining and its own still.
//!
//! 8. nothing is hidden from a reader: each live reader (a client of the fleet, a stopping,
//!    standalone or unreported task) reads `ORACLE_READS` live paths drawn for the step
//!    through its own router, on its own list and mount (`read_with_fallback`), and finds a
//!    version of each that has a copy under a listed root. A miss fails the soak on any list
//!    version: the user's oracle is the library's read, not where the copies lie. The one
//!    exception is the app on plain paths (no router): its files are under `/`, and a reader
//!    whose list does not look in `/` skips them, as the clients' own reads, creates and
//!    deletes may miss them (one judgement, `Model::out_of_sight`); but (8b) every reconcile
//!    run that answers naming that app's task unreported must leave a published list that
//!    does (the function reopens `/` for misses while a writer may be unseen). A run that
//!    could not list ECS's tasks has not seen it, and is counted apart; a rebalance run
//!    publishes nothing.
//!
//! **The wind-down.** After the main steps the clients delete down to a few paths, while
//! faults, kills and the clients ECS does not show go on, until AWS has only the mount target
//! it started with and the list one shard (failing if that takes more than `WIND_DOWN_STEPS`
//! and `WIND_DOWN_TIME`, which a kill's private name holding a drain for `ABANDONED_AFTER` can
//! take).
//! Whatever a seed's course, it then drains shards and deletes every target the function
//! created, checked as every other step is; the summary counts those deletions apart.
//!
//! AWS changes only during function runs, so checks 3-4 use what was described after the last
//! run. Reads are checked too: the bytes are a version of that path; "not found" for a live
//! path only when no shard of the reader's list holds a copy (never for a reader on the
//! published list). A run with no fault injected must succeed; a faulted one may fail only with
//! the error the fault explains (`Throttled`, `Aws`, `TimedOut`). At the end the faults stop and
//! the system must settle (a reconcile that changes nothing, within 20 runs), then a full pass
//! of rebalances one file a run (`REBALANCE_MAX_VISITS=1`): a pass a main step left half done
//! ends first, and the pass that begins then must end, after resuming run after run, with
//! every file at home (a checkpoint).
//!
//! "Latest" is what the file system's clock says (`relocate` keeps the newer by modification
//! time, home winning a tie; router/REFERENCE.md): the harness never writes one path twice
//! within 20 ms, so two versions of a path never share a time stamp.
//!
//! **Reproducing.** `SOAK_SEED` (decimal or 0x-hex; default below) and `SOAK_STEPS` (default
//! 400): `make soak SEED=… STEPS=…` on the NFS tier, `make soak-local SEED=… STEPS=…` on one
//! directory. Every step draws from its own generator, seeded from the
//! seed and the step number (splitmix64), so a seed replays the same choices; what the
//! function does with them depends on timing only where AWS calls race inside one run (the
//! request a kill lands on).
//!
//! Needs `moto_server` on PATH (`pip install "moto[server]"`), or one at `MOTO_ENDPOINT`.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::fmt::Write as _;
use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use efs_mount_autoscaler::reports::MAX_SKEW_SECS;
use efs_router::names::{private_kind, Private};
use efs_router::report::{ListSeen, Report, LIFETIME_SECS};
use efs_router::reporter::Reporting;
use efs_router::{Deleted, Layout, MountTargetList, Place, Router};
use serde_json::{json, Value};

use support::hostile::{self, Victims};
use support::testbed::LONG;
use support::world::MountTarget;
use support::{event, strings, Testbed, World};

/// `ABANDONED_AFTER_SECONDS` in the soak: the least the function accepts.
const ABANDONED_AFTER: Duration = Duration::from_secs(60);
const BIN: &str = env!("CARGO_BIN_EXE_efs-mount-autoscaler");

/// A seed whose 400 steps create, drain and delete targets, kill runs, among moves and within
/// one too, delete paths beside runs and with copies in several shards, meet each kind of
/// client ECS does not show and a task only ECS shows, announce and switch homes, and resume
/// rebalances: `assert_statistics` holds the default run to that. (With the wind-down, every
/// seed drains and deletes targets.) Seed 26 was the default until homes changed in two
/// publishes, which moved its course off kills among moves.
const DEFAULT_SEED: u64 = 1;
const DEFAULT_STEPS: u64 = 400;

/// Files per mount target: small, so that shards come and go within a short run.
const THRESHOLD: u64 = 20;
const WATCH_DIR: &str = "data/analysis";
const CLIENTS: usize = 4;
/// An unreported task of the service is the app on plain paths this often.
const PLAIN_APP_PER_MILLE: u64 = 400;
const PLAIN_APP: &str = "an app on plain paths";
/// The client of the fleet whose router mounts each shard apart (`Layout::per_target`).
const PER_TARGET_CLIENT: usize = 3;
/// Two versions of one path are written at least this far apart (see the module's comment).
const TICK: Duration = Duration::from_millis(20);
/// Reconcile runs the end may take to settle once the faults stop.
const HEAL_RUNS: usize = 20;

// What ECS hides (issue 20). Each holds the moves while it lives, so the rates are low enough
// that the default seed still drains and deletes targets within its 400 steps (higher ones
// delay the drains past the end).
/// A client a rollout replaces goes on as a stopping task this often, for 1..=N steps.
const STOPPING_PER_MILLE: u64 = 200;
const STOPPING_STEPS: u64 = 8;
/// A client a completed rollout would replace keeps its list (its refresh fails) this often,
/// for 1..=N steps.
const LAGGING_PER_MILLE: u64 = 150;
const LAGGING_STEPS: u64 = 6;
/// A client goes silent this often before a rebalance that would move files while nothing
/// else holds it (one at a time), its report, on the list before the current one, live for
/// 1..=N steps: where only its report can hold the moves.
const SILENT_PER_MILLE: u64 = 250;
const SILENT_STEPS: u64 = 3;
/// A router reading version 1 only starts this often a step (one at a time, on a version 1
/// list), for 5..5+N steps.
const OLD_ROUTER_PER_MILLE: u64 = 30;
const OLD_ROUTER_STEPS: u64 = 20;
/// A task started with RunTask (in no service) starts this often a step (one at a time), on
/// the list published then, for 5..5+N steps: once a newer list is out it is an old client
/// that ECS shows only by its family.
const STANDALONE_PER_MILLE: u64 = 15;
const STANDALONE_STEPS: u64 = 30;
/// The task definition family of the standalone tasks, named to the function in
/// `ECS_CLIENT_FAMILIES` (the service's own: the world registers no other).
const STANDALONE_FAMILY: &str = "ingest";
/// A task of the service whose router writes no report (older than reports, on a list of
/// version 1 or 2; else built with reports off) starts this often a step (one at a time; the
/// second step always), for 3..3+N steps: ECS lists it running, nothing else shows it, and
/// under `CLIENT_REPORTS=require` it holds every move while it runs.
const UNREPORTED_PER_MILLE: u64 = 12;
const UNREPORTED_STEPS: u64 = 12;
/// The list versions such a router reads.
const UNREPORTED_READS: &[u32] = &[1, 2];
/// A task ECS is stopping (`stop_tasks_slowly`) goes one status on (DEACTIVATING, STOPPING,
/// DEPROVISIONING, STOPPED) this often a step, whatever the rollouts do; from 1..=N steps
/// after a rollout completes, more often. So either of ECS's two signals, the deployments
/// and the tasks, may lag the other.
const TASK_STOP_PER_MILLE: u64 = 150;
const TASK_STOP_LAG_STEPS: u64 = 6;
/// ... and once that lag is over, this often a step, until none is left stopping.
const TASK_STOP_AFTER_PER_MILLE: u64 = 600;
/// A rebalance runs with `REBALANCE_MAX_VISITS` this often, at 1..=N files (drawn apart): it
/// stops after that many, and the next rebalance resumes where it stopped.
const VISITS_CAPPED_PER_MILLE: u64 = 600;
const VISITS_CAP: u64 = 30;
/// Runs steered to a rewrite racing a move at most: each takes a moment files are away from
/// home from the kills among moves, which need them too. A steered run that took none of the
/// rewritten paths' sources (it waited for a task, switched homes, or met a fault) raced
/// nothing and gives its attempt back, up to `RACE_STEERED` steered runs in all.
const RACE_ATTEMPTS: usize = 3;
const RACE_STEERED: usize = 12;
/// A client's new path or read is a `create` this often.
const CREATE_PER_MILLE: u64 = 250;
/// A client's operation on a live path beside a run is a rewrite of one away from home this
/// often, while some is (they race the run's moves).
const REWRITE_BESIDE_PER_MILLE: u64 = 400;
/// A kill among moves lands within a move this often (the others after a drawn delay).
const KILL_WITHIN_PER_MILLE: u64 = 600;
/// A function run is a rebalance this often once ECS shows no rollout held (else 300).
const REBALANCE_SETTLED_PER_MILLE: u64 = 650;
/// Steps the wind-down may take: after the main steps, the clients delete down to a few files
/// (faults, kills and the clients ECS does not show go on), until AWS is back to the one mount
/// target and the list to one shard. Every seed then drains and deletes targets, whatever
/// its course before. On the NFS tier a step is slow, so this bound, not the time, decides.
const WIND_DOWN_STEPS: u64 = 3000;
/// Past this many wind-down steps nothing new holds a drain: no kill lands among moves (each
/// may hold one for `ABANDONED_AFTER`) and no client that holds moves starts by chance
/// ([`Soak::quiet`]), so the wind-down ends well within `WIND_DOWN_STEPS`. Before, such
/// clients went on starting: seed 1's 400-step course on the tier once passed 1,500
/// wind-down steps, the function still unlisting its last drained target.
const KILLS_END_IN_WIND_DOWN: u64 = 1500;
/// ... and the time it may take at least: a move a kill cut short holds its shard's drain
/// until its private name is `ABANDONED_AFTER` old, however many steps run meanwhile (the
/// wind-down's, mostly client operations, run at 20 or more a second on the host).
const WIND_DOWN_TIME: Duration = Duration::from_secs(3 * ABANDONED_AFTER.as_secs());
/// Live paths the wind-down's clients keep: the end still reads some back.
const WIND_DOWN_KEEPS: usize = 3;

// A hostile co-tenant (issue 27), drawn before each step from a generator of its own. Its
// entries that hold a drain (links, names that are not UTF-8, a move's private name) or every
// move (a report of another list, junk named like a report) live a few steps, so that drains
// still happen; those that hold nothing, or only in the first shard (which never drains), may
// live long enough for the function to find them abandoned (`ABANDONED_AFTER`).
/// The co-tenant acts this often a step.
const HOSTILE_PER_MILLE: u64 = 80;
/// Its entries live 1..=N steps ...
const HOSTILE_STEPS: u64 = 40;
/// ... those that hold every move (reports, junk named like one) 1..=N ...
const HOSTILE_REPORT_STEPS: u64 = 8;
/// ... and, this often where they hold no drain, from the first to the second of these.
const HOSTILE_LONG_PER_MILLE: u64 = 125;
const HOSTILE_LONG_STEPS: (u64, u64) = (450, 900);
/// In the wind-down, its entries outside the first shard live at most this many steps.
const HOSTILE_WIND_DOWN_STEPS: u64 = 20;
/// A run has a directory of the co-tenant's swapped for a link and back while it walks this
/// often (when it has one in a listed shard).
const SWAP_PER_MILLE: u64 = 400;
/// What the co-tenant does, by kind (the prefix of each action's name in the statistics), as
/// `SOAK_HOSTILE_SKIP` names them, and the actions of each kind a run of `HOSTILE_ALL_STEPS`
/// or more must have done.
const HOSTILE_KINDS: &[(&str, &str, &[&str])] = &[
    (
        "link",
        "links",
        &[
            "link: to another shard",
            "link: to the victims",
            "link: to a victim file",
            "link: to the reports",
            "link: a directory of its own",
            "link: swapped between steps",
            "link: swapped during a run",
        ],
    ),
    ("report", "future-dated reports", &["report: future-dated"]),
    (
        "junk",
        "junk among the reports",
        &[
            "junk: a subdirectory",
            "junk: not JSON",
            "junk: a .tmp name",
            "junk: oversize",
            "junk: a link or FIFO named like a report",
        ],
    ),
    (
        "private",
        "private names in shards",
        &[
            "private: a .moving directory",
            "private: a .moving file",
            "private: a .tmp file",
        ],
    ),
    (
        "non-utf8",
        "names that are not UTF-8",
        &["non-UTF-8: a file", "non-UTF-8: a directory"],
    ),
];
/// A run this long must have done every action of the co-tenant (shorter ones: every kind).
const HOSTILE_ALL_STEPS: u64 = 2000;
/// Live paths each reader reads through its own router after every step (check 8), and what
/// sets their draw apart from the course's.
const ORACLE_READS: usize = 1;
const ORACLE_SEED: u64 = 0x6f72_6163_6c65;

/// Where a statistic of the soak must be met: on both of its grounds, on one local directory
/// only (`host`), or on the NFS tier only (`tier`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum On {
    Both,
    Host,
    Tier,
}

impl On {
    /// As docs/testing.md's table of statistics writes it.
    fn word(self) -> &'static str {
        match self {
            On::Both => "both",
            On::Host => "host",
            On::Tier => "tier",
        }
    }
}

/// A statistic the soak asserts above zero (`Soak::assert_statistics`), and when: in runs of
/// `from` steps or more, `on` which ground, of the default seed only or of any, and only when
/// the statistic `given` names is above zero. docs/testing.md's table of statistics is this
/// one (the test `the_statistics_table_is_required`). A statistic the course is steered to
/// (`Soak::owed`) says `(steered)`.
#[derive(Clone, Copy, Debug)]
struct Required {
    name: &'static str,
    from: u64,
    on: On,
    default_seed_only: bool,
    given: Option<&'static str>,
}

impl Required {
    /// Required of every seed of `DEFAULT_STEPS` or more, `on` that ground.
    const fn of(name: &'static str, on: On) -> Required {
        Required {
            name,
            from: DEFAULT_STEPS,
            on,
            default_seed_only: false,
            given: None,
        }
    }

    /// Only in runs of `HOSTILE_ALL_STEPS` or more.
    const fn long(self) -> Required {
        Required {
            from: HOSTILE_ALL_STEPS,
            ..self
        }
    }

    /// Only of the default seed.
    const fn default_seed(self) -> Required {
        Required {
            default_seed_only: true,
            ..self
        }
    }

    /// Only when the statistic `other` is above zero.
    const fn given(self, other: &'static str) -> Required {
        Required {
            given: Some(other),
            ..self
        }
    }

    /// Whether a run of `steps` from `seed`, on the tier or not, must meet it (`given` aside).
    fn applies(&self, steps: u64, tier: bool, seed: u64) -> bool {
        let ground = match self.on {
            On::Both => true,
            On::Host => !tier,
            On::Tier => tier,
        };
        steps >= self.from && ground && (!self.default_seed_only || seed == DEFAULT_SEED)
    }
}

/// Runs that only ECS's task rule held: a task started before the list, not STOPPED yet.
const HELD_BY_TASKS_ALONE: &str = "runs held by ECS's task rule alone (steered)";

/// Every statistic the soak asserts, in the order it asserts them. Where one is not `Both`, or
/// not of every seed, the course that makes it rests on timing the NFS tier changes, or on
/// what some seeds lack, as each comment says.
const REQUIRED: &[Required] = &[
    Required::of("reconcile runs", On::Both),
    Required::of("rebalance runs", On::Both),
    Required::of("faults that fired", On::Both),
    Required::of("runs killed", On::Both),
    Required::of("kills among moves", On::Both),
    Required::of(
        "killed runs that moved files, judged on disk (steered)",
        On::Both,
    ),
    Required::of("kills within a move (steered)", On::Both),
    Required::of("targets created", On::Both),
    Required::of("drains", On::Both),
    // The wind-down deletes every target the function created, on the tier too.
    Required::of("targets deleted", On::Both),
    Required::of("checkpoints", On::Both),
    // Names are abandoned after ABANDONED_AFTER_SECONDS (60 here), in real time: how many a
    // host run meets depends on how fast the host ran it (a minute or two), so only the tier's
    // runs, which last minutes, must meet one.
    // And one kill within a move in 400 steps need not leave one to age: seed 26's tier run
    // met none once the course took `create`s, plain-path writes and rewrites beside runs (its
    // one private name went otherwise); the default seed's meets 6 (7 kills within a move).
    // `moves::tests` gives cut-short moves back on every run.
    Required::of("abandoned names cleaned up", On::Tier).default_seed(),
    Required::of("paths deleted", On::Both),
    Required::of("deletes beside runs", On::Both),
    // Copies in several shards come of old clients' writes, whose timing the tier changes as
    // it changes the kills'.
    Required::of("deletes of copies in several shards", On::Host),
    // What ECS hides comes of the course (rollouts, a version 1 list, files to move), and of
    // its timing, which the NFS tier changes: held to it on one directory.
    Required::of("silent clients", On::Host),
    // Each written through a client's mount: a run named it, on the tier too.
    Required::of("silent clients named by a run", On::Both).given("silent clients"),
    Required::of("stopping tasks", On::Host),
    Required::of("clients whose refresh failed", On::Host),
    Required::of("routers reading version 1 only", On::Host),
    Required::of("old-list writes by stopping tasks", On::Host),
    Required::of("old-list writes by standalone tasks (steered)", On::Host),
    Required::of("standalone tasks (steered)", On::Host),
    // A publish while such a router lives is seldom in 400 steps (one in the default seed's).
    // Only one such router starts once the list is past version 1, and whether the function
    // publishes while it lives is the course's luck: seed 1,010 publishes none in 2,000 steps.
    Required::of("lists published beside a version 1 router", On::Host)
        .long()
        .default_seed(),
    Required::of("runs held by reports alone", On::Host),
    Required::of("runs beside a version 1 router", On::Host),
    // Readers found every file while misses looked only where placements were open. The first
    // version 3 list knows no past and says `everywhere`, and so does each after it until a
    // clean pass closes the placements: the default seed has none open in 400 steps (those
    // lists counted only while `everywhere` counted as open), 13 in 2,000. Closing takes a
    // clean pass with no drain under way while every writer is seen, and how often the course
    // gives one rests on its timing: seeds 34, 55 and 1,010 closed none in 2,000 steps, two
    // at a time on the two cores (seed 34 alone closed 3 times and opened 26). So the default
    // seed's long runs must close, and any run that closed must then open a placement: the
    // change after a close names where files went, not `everywhere`.
    Required::of("version 3 lists with none open", On::Both)
        .long()
        .default_seed(),
    Required::of("version 3 lists with a placement open", On::Both)
        .long()
        .given("version 3 lists with none open"),
    // What ECS alone shows (issue 29): a task whose router writes no report, and tasks
    // stopping slowly while the rollouts lag or lead them.
    Required::of(
        "runs beside a task whose router writes no report (steered)",
        On::Both,
    ),
    Required::of("answers naming it unreported (steered)", On::Both),
    Required::of("steps of ECS stopping tasks", On::Both),
    // Of the course and its timing, as the hidden clients' are, and seldom in 400 steps.
    Required::of("runs that moved once it was gone", On::Host).long(),
    // Steered where it is asserted (`Soak::tasks_rule_owed`).
    Required::of(HELD_BY_TASKS_ALONE, On::Host).long(),
    // The resumable rebalance (issue 29): capped runs stop, the next resume.
    Required::of("rebalances stopped by their cap", On::Both),
    Required::of("rebalances resumed", On::Both),
    Required::of("resumes in the last pass", On::Both),
    // A drain that starts within `ABANDONED_AFTER` of a kill inside a move in its shard waits
    // for the function to give the move's private name back: the default seed's long runs
    // meet one (others may not: seed 2 in 2,000 steps; tests/scale_in.rs has it end to end).
    Required::of("drains held by a cut-short move", On::Both)
        .long()
        .default_seed(),
    // What AWS does that moto does not, as the proxy played it, and the faults with it.
    Required::of("targets shown deleting", On::Both),
    Required::of("describes showing a target deleting", On::Both),
    Required::of("pages of mount targets with more to follow", On::Both),
    Required::of("pages of subnets with more to follow", On::Both),
    Required::of("pages of tasks with more to follow", On::Both),
    Required::of("stopped tasks no longer shown", On::Both),
    // SSM's lag is played on both grounds, and held to on one directory only: a write opens
    // a window of reads for a time (the tier's ten times the host's), and whether the next
    // read falls in it rests on the VM's speed, not on NFS. The default seed's tier run met
    // no stale read of the list when the VM ran three times slower than the day before
    // (1,267 s against 548).
    Required::of("stale reads of the state parameter", On::Host),
    Required::of("stale reads of the list parameter", On::Host),
    // A read of the version a write made (`<name>:<version>`) lags too: the function's check
    // of a read can be fooled, and its writes are checked instead.
    Required::of("versioned reads that lagged a write", On::Host),
    Required::of("throttle bursts across services", On::Both),
    // Met by the function's own calls (RunTask is the harness's, and counted apart).
    Required::of("faults on ECS's task operations", On::Both),
    Required::of("faults on ListTasks", On::Both).long(),
    Required::of("faults on DescribeTasks", On::Both).long(),
    // Every change of homes goes out twice (docs/data-plane.md, "When homes change"): the
    // growths and drains of the course announce, and switch once the fleet runs the list.
    Required::of("runs that announced new homes", On::Both),
    Required::of("runs that switched homes", On::Both),
    // Check 8 read through a router on a list older than the published one: the rollouts of
    // the course leave some reader behind in every seed.
    Required::of("readers' reads on an older list", On::Both),
    // What users do (issue 40 item 6): `create` across lists, a per-target layout, the app on
    // plain paths beside routed tasks; and a rewrite racing a move, which needs a rebalance
    // with files away from home while the fleet runs the list: few in 400 steps.
    Required::of("creates of a path written on another list", On::Both),
    Required::of("writes through a per-target layout", On::Both),
    Required::of("writes by the app on plain paths (steered)", On::Both),
    Required::of("rewrites racing a move (steered)", On::Both).long(),
];
/// Decisions that grow: what a run must decide when it wants more shards than serve.
const GROWTH: &[&str] = &[
    "create",
    "add_shards",
    "wait_for_creating",
    "one_a_run",
    "cancel_drain",
];

/// Operations whose requests a fault may hit (the proxy's names).
const OPERATIONS: &[&str] = &[
    "DescribeFileSystems",
    "DescribeMountTargets",
    "DescribeMountTargetSecurityGroups",
    "CreateMountTarget",
    "DeleteMountTarget",
    "DescribeSubnets",
    "GetParameter",
    "PutParameter",
    "PutParameter(state)",
    "DescribeServices",
    "UpdateService",
    "ListTasks",
    "DescribeTasks",
    // The function never calls it: a fault drawn for it waits for the harness's next RunTask
    // (a standalone task's start), which retries.
    "RunTask",
];
/// Operations that change something: an answer lost after AWS did it matters most there.
const MUTATING: &[&str] = &[
    "CreateMountTarget",
    "DeleteMountTarget",
    "PutParameter",
    "PutParameter(state)",
    "UpdateService",
];

// ----------------------------------------------------------------------------- randomness

/// splitmix64: a tiny, good-enough generator with a 64-bit state.
#[derive(Clone, Debug)]
struct Rng(u64);

impl Rng {
    /// The generator of one step: the seed and the step number mixed, so that a step's choices
    /// do not depend on how many numbers earlier steps drew.
    fn for_step(seed: u64, step: u64) -> Rng {
        let mut r = Rng(seed ^ step.wrapping_mul(0xD1B5_4A32_D192_ED03));
        r.next();
        r
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` > 0).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn index(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }

    /// True `per_mille` times in a thousand.
    fn chance(&mut self, per_mille: u64) -> bool {
        self.below(1000) < per_mille
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.index(items.len())]
    }
}

fn env_number(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) if !v.trim().is_empty() => {
            let v = v.trim();
            let parsed = match v.strip_prefix("0x") {
                Some(hex) => u64::from_str_radix(hex, 16),
                None => v.parse(),
            };
            parsed.unwrap_or_else(|e| panic!("{name}={v:?} is not a whole number: {e}"))
        }
        _ => default,
    }
}

// ----------------------------------------------------------------------------- the views

/// Where each actor sees the file system. Locally, one directory is all of them. On the NFS
/// tier (`EFS_NFS_MOUNTS` set: scripts/nfs-tier/run.sh) the function and the clients each reach
/// one export through their own NFS mount, with its own name and attribute caches, as each ECS
/// task and the Lambda have their own NFS client; the checks look at the exported directory
/// itself (`EFS_NFS_BACKING`), which no client's cache stands in front of.
struct Views {
    /// The function's `EFS_MOUNT_PATH`.
    function: PathBuf,
    /// Client `i` mounts `clients[i % len]`.
    clients: Vec<PathBuf>,
    /// What the file system holds, for the checks.
    truth: PathBuf,
    tier: bool,
}

impl Views {
    /// The tier's mounts when the test runs inside it; one temporary directory otherwise.
    fn new() -> (Views, support::Mount) {
        let Some(mounts) = std::env::var_os("EFS_NFS_MOUNTS").filter(|m| !m.is_empty()) else {
            let mount = support::Mount::temp();
            let dir = mount.path().to_path_buf();
            let views = Views {
                function: dir.clone(),
                clients: vec![dir.clone()],
                truth: dir,
                tier: false,
            };
            return (views, mount);
        };
        // Comma-separated, as run.sh gives them (router/tests/nfs.rs reads them alike).
        let mounts: Vec<PathBuf> = mounts
            .to_string_lossy()
            .split(',')
            .map(PathBuf::from)
            .collect();
        assert!(
            mounts.len() >= 2,
            "EFS_NFS_MOUNTS names {} mount(s): the soak needs one for the function and one or more for the clients",
            mounts.len()
        );
        let backing = std::env::var_os("EFS_NFS_BACKING")
            .map(PathBuf::from)
            .expect("EFS_NFS_BACKING is not set beside EFS_NFS_MOUNTS");
        // A directory of its own in the export, so other tests of one boot do not meet it.
        let sub = format!("soak-{}", std::process::id());
        let mount = support::Mount::at(&mounts[0].join(&sub));
        let views = Views {
            function: mount.path().to_path_buf(),
            clients: mounts[1..].iter().map(|m| m.join(&sub)).collect(),
            truth: backing.join(&sub),
            tier: true,
        };
        (views, mount)
    }

    fn client(&self, i: usize) -> &Path {
        &self.clients[i % self.clients.len()]
    }

    fn label(&self) -> String {
        if self.tier {
            format!(
                "NFS tier: the function on {}, clients on {:?}",
                self.function.display(),
                self.clients
            )
        } else {
            format!("one local directory {}", self.truth.display())
        }
    }
}

// ----------------------------------------------------------------------------- the model

/// The published list as SSM holds it.
#[derive(Clone, Debug)]
struct Published {
    list: MountTargetList,
    /// The parameter's value exactly as read: what a reporting client names by its SHA-256.
    text: String,
    version: i64,
}

impl Published {
    fn roots(&self) -> BTreeSet<String> {
        self.list.shards().into_iter().map(|t| t.root).collect()
    }

    /// The list's own `version` field (1 when absent): the form a router must read.
    fn form(&self) -> u64 {
        u64::from(ListSeen::of(&self.text, None).version)
    }

    /// `v3[/, /shards/use1-az4 (draining)]`, for the log.
    fn label(&self) -> String {
        let roots: Vec<String> = self
            .list
            .shards()
            .iter()
            .map(|t| {
                if t.draining {
                    format!("{} (draining)", t.root)
                } else {
                    t.root.clone()
                }
            })
            .collect();
        format!("v{}[{}]", self.version, roots.join(", "))
    }
}

/// One client (an ECS task) with the list it read when it started.
#[derive(Clone)]
struct Client {
    list: Published,
    router: Router,
}

impl Client {
    fn on(list: &Published, mount: &Path) -> Client {
        let router = Router::new(list.list.clone(), Layout::single_mount(mount))
            .unwrap_or_else(|e| panic!("a router on {}: {e}", list.label()));
        Client {
            list: list.clone(),
            router,
        }
    }

    /// A client of the fleet: it reports the list it runs, as every router of a task does, so
    /// the function waits for it (and lets the list grow to version 2 only as it reads it).
    fn reporting(list: &Published, mount: &Path, i: usize) -> Client {
        let options = Reporting {
            parameter_version: Some(list.version),
            label: Some(format!("soak client {i}")),
            ..Reporting::default()
        };
        let router = Router::reporting(&list.text, Client::layout(list, mount, i), options)
            .unwrap_or_else(|e| panic!("a reporting router on {}: {e}", list.label()));
        Client {
            list: list.clone(),
            router,
        }
    }

    /// How client `i` mounts the shards: one mount for all, or for `PER_TARGET_CLIENT` one a
    /// shard (its root's directory, as `ip:root` would be mounted; one file system here, so a
    /// rename between them works where separate NFS mounts would refuse it).
    fn layout(list: &Published, mount: &Path, i: usize) -> Layout {
        if i % CLIENTS != PER_TARGET_CLIENT {
            return Layout::single_mount(mount);
        }
        let shards = list.list.shards();
        Layout::per_target(shards.iter().map(|t| root_dir(mount, &t.root)).collect())
    }

    /// The root `path` is written to by this client.
    fn home_root(&self, path: &str) -> String {
        match self.router.resolve(path) {
            Ok(r) => self.router.shards()[r.index].root.clone(),
            Err(e) => format!("(unroutable: {e})"),
        }
    }
}

/// A client the function can know of only by its report: what ECS hides (issue 20).
enum Actor {
    /// A replaced task still running (DEACTIVATING, STOPPING; no longer in any deployment's
    /// `runningCount`): its router lives, reporting and writing on its old list, until step
    /// `until`, when it stops (dropping the router removes its report).
    Stopping { client: Client, until: u64 },
    /// A client that died without a word: its report, on the list it had, stays as it was
    /// last written; at step `until` it is aged past its lifetime (the soak runs faster than
    /// real time), and the function must count it no longer.
    Silent {
        list: Published,
        file: PathBuf,
        until: u64,
    },
    /// A router older than list version 2 (`reads: [1]`), refreshing: its report names the
    /// published list each step, until step `until`, when it stops and removes it.
    OldRouter {
        client: String,
        file: PathBuf,
        until: u64,
    },
    /// A task started with RunTask, in no service: its router reports and writes on the list
    /// published when it started, and ECS lists it by its family (`task` is its id) until step
    /// `until`, when it stops.
    Standalone {
        client: Client,
        task: String,
        until: u64,
    },
    /// A task of the service (ECS lists it running) whose router writes no report (older than
    /// reports, or built with them off): it writes on the list published when it started and
    /// reports nothing, so only ECS shows it. At step `until`, or when a forced deployment
    /// replaces it, its task stops and the router with it. `task` is its ARN.
    Unreported {
        client: Client,
        task: String,
        until: u64,
        /// The list versions it reads.
        reads: &'static [u32],
        /// The app on plain paths (no router: its "router" knows the first shard alone, where
        /// a plain path lands); it writes, and is no reader that check 8 could hold to a list.
        plain: bool,
    },
}

impl Actor {
    fn until(&self) -> u64 {
        match self {
            Actor::Stopping { until, .. }
            | Actor::Silent { until, .. }
            | Actor::OldRouter { until, .. }
            | Actor::Standalone { until, .. }
            | Actor::Unreported { until, .. } => *until,
        }
    }

    /// The list its live report names, when that is not the published one (an old router
    /// names the published list: it is rewritten before every step).
    fn behind(&self, published: &Published) -> Option<String> {
        let (what, list) = match self {
            Actor::Stopping { client, .. } => ("a stopping task", &client.list),
            Actor::Standalone { client, .. } => ("a standalone task", &client.list),
            Actor::Silent { list, .. } => ("a silent client", list),
            // It writes no report: ECS shows it (`Soak::ecs_behind`).
            Actor::OldRouter { .. } | Actor::Unreported { .. } => return None,
        };
        (list.text != published.text).then(|| format!("{what} on {}", list.label()))
    }

    /// A client with a router of its own that writes on its list: what it is, and it.
    fn writer(&self) -> Option<(&'static str, &Client)> {
        match self {
            Actor::Stopping { client, .. } => Some(("a stopping task", client)),
            Actor::Standalone { client, .. } => Some(("a standalone task", client)),
            Actor::Unreported {
                client,
                plain: true,
                ..
            } => Some((PLAIN_APP, client)),
            Actor::Unreported { client, .. } => Some(("an unreported task", client)),
            Actor::Silent { .. } | Actor::OldRouter { .. } => None,
        }
    }
}

/// A task of the service as ECS runs it (the proxy plays them): its router reports the list
/// published when the task started, naming the task (`CLIENT_REPORTS=require`), until the
/// task's containers are told to stop (STOPPING), when the router goes, and its report: ECS
/// then shows the task STOPPING and DEPROVISIONING with no report of it.
struct ServiceTask {
    arn: String,
    client: Client,
}

/// Whether a read under `list` looks in the first shard `/` (for a path in `WATCH_DIR`): where
/// every home is `/`; a miss of the earlier forms, in every listed shard; of version 3 where it
/// says `everywhere`, or where a placement that puts every path in `/` is open.
/// Whether `client`'s router looks in `/` for `path`: its home there, or `/` open for misses.
fn looks_for_in_first(client: &Client, path: &str) -> bool {
    looks_in_first(&client.list.list) || client.home_root(path) == "/"
}

fn looks_in_first(list: &MountTargetList) -> bool {
    let in_first = |t: &efs_router::placement::Placed| t.root == "/" && t.shards == 1;
    let all_in_first = |p: &efs_router::placement::Placement| {
        !p.targets.is_empty() && p.targets.iter().all(in_first)
    };
    // Every path's home is `/` (the others draining): a read looks there first.
    if all_in_first(&list.placement()) {
        return true;
    }
    match &list.open {
        None | Some(efs_router::Open::Everywhere(_)) => true,
        Some(efs_router::Open::Placements(open)) => open.iter().any(all_in_first),
    }
}

/// What a plain path reaches: the first shard's directory, `/`, alone (a version 1 list of
/// its target).
fn first_shard_only(list: &MountTargetList) -> Result<MountTargetList, String> {
    let first = list.mount_targets.iter().find(|t| t.root == "/");
    let first = first.ok_or_else(|| "the list has no first shard `/`".to_string())?;
    let entry = json!({
        "id": first.id, "ip": first.ip, "az": first.az, "az_id": first.az_id,
        "subnet_id": first.subnet_id, "root": "/",
    });
    let text = json!({ "mount_targets": [entry] }).to_string();
    MountTargetList::from_json(&text).map_err(|e| format!("the first shard's list: {e}"))
}

/// The last part of a task's ARN: its id, as the proxy names it.
fn task_id(arn: &str) -> &str {
    arn.rsplit('/').next().unwrap_or(arn)
}

/// A client is handed only a list it reads: `reads` are the list versions its router reads.
fn hand(who: &str, reads: &[u32], list: &Published) -> Result<(), String> {
    let form = list.form();
    if reads.iter().any(|r| u64::from(*r) == form) {
        Ok(())
    } else {
        Err(format!(
            "{who}, which reads list versions {reads:?}, was handed {} of version {form}",
            list.label()
        ))
    }
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A report as a router would write it, for a client that has no router here.
fn report_of(client: &str, list: &Published, reads: Vec<u32>, label: &str) -> Report {
    let seen = ListSeen::of(&list.text, Some(list.version));
    let router = "efs-router-rust/0.0.0 (soak)";
    Report {
        label: Some(label.into()),
        ..Report::loaded(client, router, reads, seen, unix_now())
    }
}

/// Where client `client`'s report is on `mount`.
fn report_file(mount: &Path, client: &str) -> PathBuf {
    mount
        .join(efs_router::report::DIR)
        .join(format!("{client}.json"))
}

/// (Re)writes `report` at `file`, written at `at` (Unix seconds), its mtime `at` too.
fn rewrite_report(file: &Path, report: &Report, at: u64) {
    let mut report = report.clone();
    report.written_at = at;
    if let Some(dir) = file.parent() {
        fs::create_dir_all(dir).expect("the reports' directory");
    }
    fs::write(file, report.to_json()).unwrap_or_else(|e| panic!("write {}: {e}", file.display()));
    let f = fs::File::options()
        .write(true)
        .open(file)
        .expect("open the report");
    f.set_modified(UNIX_EPOCH + Duration::from_secs(at))
        .expect("set the report's mtime");
}

/// Ages the report at `file` past its lifetime, as if its client had been silent that long.
fn age_report(file: &Path) {
    let Ok(bytes) = fs::read(file) else {
        return;
    };
    let name = file.file_name().map(|n| n.to_string_lossy().into_owned());
    if let Ok(report) = Report::parse(name.as_deref().unwrap_or_default(), &bytes) {
        rewrite_report(file, &report, unix_now().saturating_sub(2 * LIFETIME_SECS));
    }
}

/// Where an entry of the co-tenant's is.
#[derive(Clone, Debug)]
enum Spot {
    /// In the watched tree of the shard at `root`, by its path below the watched directory: the
    /// function may move a file of it to the same path in another shard, so it is looked for
    /// in every shard when it goes.
    Shard { root: String, within: PathBuf },
    /// In the reports' directory.
    Reports { name: OsString },
}

/// What an entry of the co-tenant's in the reports' directory makes the function wait for.
#[derive(Clone, Debug, PartialEq)]
enum Holds {
    Nothing,
    /// A report naming the list with this text: a client behind while that is not the
    /// published one (its times in the future: the function bounds them by the file's change).
    List(String),
    /// Named like a report, and none (not JSON, too large, a link, a FIFO), changed now: a
    /// client on a list nobody knows.
    Unreadable,
}

/// An entry the co-tenant planted, and the step it removes it at.
struct Planted {
    spot: Spot,
    what: &'static str,
    until: u64,
    holds: Holds,
    /// A directory of its own, which it may swap for a link.
    own_dir: bool,
    /// Swapped for a link: the real directory's path below the watched directory.
    away: Option<PathBuf>,
    /// A directory of its own to swap for a link at this step.
    swap_at: Option<u64>,
    /// The client id of a report of its.
    client: Option<String>,
}

impl Planted {
    fn root(&self) -> Option<&str> {
        match &self.spot {
            Spot::Shard { root, .. } => Some(root),
            Spot::Reports { .. } => None,
        }
    }
}

/// The hostile co-tenant (issue 27): a writer of the file system with the clients' uid that
/// plants links (to another shard, to victims outside the shards, to the reports), swaps a
/// directory of its own for a link between steps and while the function walks, writes
/// future-dated reports of clients that do not exist, leaves junk in the reports' directory,
/// private-looking names with its own content in the shards, and names that are not UTF-8.
/// Its entries are not the clients' data: the function may move, keep or leave them. What is
/// checked: the victims are never moved, changed or deleted; every client's file stays found;
/// the function never moves while a report of its names another list; a report's future time
/// is bounded; and the function counts every client's file and grows when it wants to.
struct CoTenant {
    /// Where it reaches the shards: a mount of its own on the NFS tier.
    view: PathBuf,
    /// The reports' directory, through the function's own mount (as the silent clients'
    /// reports: what the function must wait for must be seen by it at once).
    reports: PathBuf,
    victims: Victims,
    planted: Vec<Planted>,
    /// For fresh names.
    next: u64,
    /// Kinds of action left out (`SOAK_HOSTILE_SKIP`: `link`, `report`, `junk`, `private`,
    /// `non-utf8`, comma-separated, or `all`).
    skip: BTreeSet<String>,
}

impl CoTenant {
    fn new(view: &Path, function: &Path) -> CoTenant {
        let skip = std::env::var("SOAK_HOSTILE_SKIP")
            .unwrap_or_default()
            .split(',')
            .map(|k| k.trim().to_string())
            .filter(|k| !k.is_empty())
            .flat_map(|k| {
                if k == "all" {
                    HOSTILE_KINDS.iter().map(|(k, ..)| k.to_string()).collect()
                } else {
                    vec![k]
                }
            })
            .collect();
        CoTenant {
            view: view.to_path_buf(),
            reports: function.join(efs_router::report::DIR),
            victims: Victims::plant(view),
            planted: Vec::new(),
            next: 0,
            skip,
        }
    }

    fn fresh(&mut self) -> u64 {
        self.next += 1;
        self.next
    }

    /// The watched directory of the shard at `root`, as the co-tenant reaches it.
    fn watched(&self, root: &str) -> PathBuf {
        root_dir(&self.view, root).join(WATCH_DIR)
    }

    /// Every shard's watched directory on disk: `/`'s and each `/shards/<name>`'s.
    fn watched_dirs(&self) -> Vec<PathBuf> {
        let mut dirs = vec![self.view.join(WATCH_DIR)];
        if let Ok(shards) = fs::read_dir(self.view.join("shards")) {
            for e in shards.filter_map(Result::ok) {
                dirs.push(e.path().join(WATCH_DIR));
            }
        }
        dirs
    }

    /// Removes one of its entries, wherever the function moved it; never through a link (a
    /// directory of its own swapped for one), which would reach a victim.
    fn remove(&self, p: &Planted) {
        let through_no_link = |dir: &Path, within: &Path| {
            within
                .ancestors()
                .skip(1)
                .filter(|a| !a.as_os_str().is_empty())
                .all(|a| !fs::symlink_metadata(dir.join(a)).is_ok_and(|m| m.is_symlink()))
        };
        match &p.spot {
            Spot::Shard { within, .. } => {
                for dir in self.watched_dirs() {
                    for rel in std::iter::once(within).chain(&p.away) {
                        if through_no_link(&dir, rel) {
                            let _ = hostile::remove(&dir.join(rel));
                        }
                    }
                }
            }
            Spot::Reports { name } => {
                let _ = hostile::remove(&self.reports.join(name));
            }
        }
    }

    /// Whether it has an entry in a shard now.
    fn in_shards(&self) -> bool {
        self.planted.iter().any(|p| p.root().is_some())
    }
}

/// Whether `path` is a directory itself (not through a link).
fn is_real_dir(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.is_dir())
}

/// What the clients wrote: the latest bytes of every live path, and every version ever written.
#[derive(Default)]
struct Model {
    live: BTreeMap<String, Vec<u8>>,
    history: BTreeMap<String, Vec<Vec<u8>>>,
    last_write: BTreeMap<String, Instant>,
    next_name: u64,
    writes: u64,
    /// Growing (writes dominate) or shrinking (deletes dominate), between `low` and `high`
    /// flat files.
    shrinking: bool,
    high: usize,
    low: usize,
    /// Live paths whose latest version the app on plain paths wrote (under `/`).
    plain: BTreeSet<String>,
    /// Every version the app on plain paths wrote: which copies under `/` are its.
    plain_versions: BTreeSet<Vec<u8>>,
}

impl Model {
    /// A path never used before: flat (counted) mostly, nested sometimes.
    fn fresh_path(&mut self, rng: &mut Rng) -> String {
        self.next_name += 1;
        let n = self.next_name;
        match rng.below(10) {
            0..=7 => format!("{WATCH_DIR}/device-{n}.json"),
            8 => format!("{WATCH_DIR}/batch-{}/reading-{n}.json", rng.below(3)),
            _ => format!("{WATCH_DIR}/batch-{}/late/reading-{n}.json", rng.below(2)),
        }
    }

    /// Files the function counts: directly in the watched directory.
    fn flat(&self) -> usize {
        self.live.keys().filter(|p| is_flat(p)).count()
    }

    /// Unique bytes for the next write of `path`.
    fn next_bytes(&mut self, path: &str, client: usize, list: i64) -> Vec<u8> {
        self.writes += 1;
        format!(
            "{{\"path\":\"{path}\",\"write\":{},\"client\":{client},\"list\":{list}}}\n",
            self.writes
        )
        .into_bytes()
    }

    /// How long until `path` may be written again (see `TICK`).
    fn until_tick(&self, path: &str) -> Duration {
        let since = self.last_write.get(path).map_or(TICK, Instant::elapsed);
        TICK.saturating_sub(since)
    }

    /// Waits until `path` may be written again (see `TICK`).
    fn wait_tick(&self, path: &str) {
        if let Some(at) = self.last_write.get(path) {
            let since = at.elapsed();
            if since < TICK {
                std::thread::sleep(TICK - since);
            }
        }
    }

    /// Whether `path`'s latest version is the app on plain paths' copy under `/`, where
    /// `client`'s router does not look for it (`looks_for_in_first`). Until a list reopens
    /// `/` (check 8b), the window docs/data-plane.md gives, a routed read or create misses
    /// that copy.
    fn out_of_sight(&self, path: &str, client: &Client) -> bool {
        self.plain.contains(path) && !looks_for_in_first(client, path)
    }

    fn record(&mut self, path: &str, bytes: Vec<u8>, at: Instant) {
        self.plain.remove(path);
        self.history
            .entry(path.to_string())
            .or_default()
            .push(bytes.clone());
        self.live.insert(path.to_string(), bytes);
        self.last_write.insert(path.to_string(), at);
    }

    /// `v3 of 5` (which write of this path the bytes are), or what else they are.
    fn describe(&self, path: &str, bytes: &[u8]) -> String {
        let versions = self.history.get(path).map(Vec::as_slice).unwrap_or(&[]);
        match versions.iter().position(|v| v == bytes) {
            Some(i) => format!("version {} of {}", i + 1, versions.len()),
            None => format!("unknown bytes {:?}", String::from_utf8_lossy(bytes)),
        }
    }

    fn is_version(&self, path: &str, bytes: &[u8]) -> bool {
        self.history
            .get(path)
            .is_some_and(|v| v.iter().any(|b| b == bytes))
    }
}

fn is_flat(path: &str) -> bool {
    path.matches('/').count() == 2
}

/// Where a file under the mount belongs: its shard root and its logical path, when it lies in
/// a watched tree (`<mount>/data/analysis/…` for `/`, `<mount>/shards/<x>/data/analysis/…`).
fn placed(rel: &str) -> Option<(String, String)> {
    let parts: Vec<&str> = rel.split('/').collect();
    let (root, rest) = if parts[0] == "shards" && parts.len() > 2 {
        (format!("/shards/{}", parts[1]), &parts[2..])
    } else {
        ("/".to_string(), &parts[..])
    };
    let watch: Vec<&str> = WATCH_DIR.split('/').collect();
    (rest.len() > watch.len() && rest[..watch.len()] == watch[..]).then(|| (root, rest.join("/")))
}

/// Regular files under `dir` (paths relative to it, `/`-separated), links never followed;
/// anything else that is not a directory is returned apart.
fn files_under(dir: &Path) -> (Vec<(String, PathBuf)>, Vec<String>) {
    fn walk(dir: &Path, rel: &str, files: &mut Vec<(String, PathBuf)>, odd: &mut Vec<String>) {
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let name = e.file_name().to_string_lossy().into_owned();
            let rel = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            let path = e.path();
            match fs::symlink_metadata(&path) {
                Ok(m) if m.is_dir() => walk(&path, &rel, files, odd),
                Ok(m) if m.is_file() => files.push((rel, path)),
                Ok(_) => odd.push(rel),
                Err(_) => {} // gone meanwhile
            }
        }
    }
    let mut files = Vec::new();
    let mut odd = Vec::new();
    walk(dir, "", &mut files, &mut odd);
    (files, odd)
}

/// The roots of `router`'s shards, by position.
fn shard_roots(router: &Router) -> Vec<String> {
    router.shards().iter().map(|t| t.root.clone()).collect()
}

/// The roots under which `path` is a file on disk: `/` and every `/shards/<name>` there is.
fn copies_on_disk(truth: &Path, path: &str) -> Vec<String> {
    let mut roots: Vec<(String, PathBuf)> = vec![("/".into(), truth.to_path_buf())];
    if let Ok(shards) = fs::read_dir(truth.join("shards")) {
        for e in shards.filter_map(Result::ok) {
            let name = e.file_name().to_string_lossy().into_owned();
            roots.push((format!("/shards/{name}"), e.path()));
        }
    }
    roots
        .into_iter()
        .filter(|(_, dir)| fs::symlink_metadata(dir.join(path)).is_ok_and(|m| m.is_file()))
        .map(|(root, _)| root)
        .collect()
}

/// One of the router's own names, or inside one (a move's private directory).
fn is_private(rel: &str) -> bool {
    rel.split('/')
        .any(|name| private_kind(name.as_bytes()).is_some())
}

/// The path a move's private name stands for: its `.moving` directory left out. `None` for a
/// write's temporary name and the reports, which stand for no client path.
fn unprivate(rel: &str) -> Option<String> {
    let mut kept = Vec::new();
    for name in rel.split('/') {
        match private_kind(name.as_bytes()) {
            Some(Private::Moving) => {}
            Some(_) => return None,
            None => kept.push(name),
        }
    }
    Some(kept.join("/"))
}

/// A file of the co-tenant's under one of the router's own names: its content says so.
fn planted_by_hostile(path: &Path) -> bool {
    fs::read(path).is_ok_and(|b| b.starts_with(hostile::CONTENT))
}

/// Where the clients' files are on disk, under any root: the roots by logical path (private
/// names and the co-tenant's aside).
fn places_on_disk(truth: &Path) -> Places {
    let (files, _) = files_under(truth);
    let mut places = Places::new();
    for (rel, _) in files {
        if is_private(&rel) || hostile::is_hostile(&rel) {
            continue;
        }
        if let Some((root, logical)) = placed(&rel) {
            places.entry(logical).or_default().insert(root);
        }
    }
    places
}

/// The router's own names under `dir` (files and directories), relative to it.
fn privates_under(dir: &Path) -> BTreeSet<String> {
    fn walk(dir: &Path, rel: &str, out: &mut BTreeSet<String>) {
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        for e in entries.filter_map(Result::ok) {
            let name = e.file_name().to_string_lossy().into_owned();
            let rel = if rel.is_empty() {
                name.clone()
            } else {
                format!("{rel}/{name}")
            };
            if private_kind(name.as_bytes()).is_some() {
                out.insert(rel.clone());
            }
            if fs::symlink_metadata(e.path()).is_ok_and(|m| m.is_dir()) {
                walk(&e.path(), &rel, out);
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(dir, "", &mut out);
    out
}

/// Kills process `pid` `delay` after the first of `sources` has left its place (a move's retire
/// took it), unless `done` is set first; true when it killed. It spins rather than sleeps: on a
/// local directory a move takes some tens of microseconds. With `delay` zero it kills within a
/// move: once the moves have begun (a private name appeared beside a source, or a source left),
/// it freezes the process (SIGSTOP) every few microseconds of its running, looks beside the
/// sources for a private name that was not there when it began (a move's retire makes its
/// private directory, and takes the source into it), and kills the frozen process when there
/// is one, or lets it go on (SIGCONT). One look when a source left would come too late: a
/// batch of moves ends within tens of microseconds.
fn kill_among_moves(
    pid: u32,
    sources: Vec<PathBuf>,
    delay: Duration,
    done: Arc<AtomicBool>,
) -> std::thread::JoinHandle<bool> {
    std::thread::spawn(move || {
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return false;
        };
        // SAFETY: kill(2) takes plain integers; the process is the function's, still running
        // (the harness stops it only after `done`).
        let signal = |sig: libc::c_int| unsafe { libc::kill(pid, sig) == 0 };
        let spin = |d: Duration| {
            let at = Instant::now() + d;
            while Instant::now() < at {
                if done.load(Ordering::Acquire) {
                    return false;
                }
                std::hint::spin_loop();
            }
            !done.load(Ordering::Acquire)
        };
        if delay.is_zero() {
            let dirs: BTreeSet<&Path> = sources.iter().filter_map(|p| p.parent()).collect();
            // The private names beside the sources.
            let beside = || -> BTreeSet<PathBuf> {
                let mut out = BTreeSet::new();
                for d in &dirs {
                    for e in fs::read_dir(d).into_iter().flatten().filter_map(Result::ok) {
                        if private_kind(e.file_name().as_encoded_bytes()).is_some() {
                            out.insert(e.path());
                        }
                    }
                }
                out
            };
            let before = beside();
            let gone = |p: &PathBuf| matches!(fs::symlink_metadata(p), Err(e) if e.kind() == ErrorKind::NotFound);
            // Until the moves begin (a private name beside a source, or a source gone), only
            // look; from then on, freeze it again and again.
            while beside().is_subset(&before) && !sources.iter().any(gone) {
                if done.load(Ordering::Acquire) {
                    return false;
                }
                std::thread::yield_now();
            }
            let mut turn = 0u64;
            loop {
                if !signal(libc::SIGSTOP) {
                    return false;
                }
                wait_stopped(pid);
                // A private name alone may be a directory made before its first retire: the
                // kill waits for a source to have left its place too, so it takes a file.
                if !beside().is_subset(&before) && sources.iter().any(gone) {
                    return signal(libc::SIGKILL);
                }
                signal(libc::SIGCONT);
                turn += 1;
                if !spin(Duration::from_micros(2 + turn % 7)) {
                    return false;
                }
            }
        }
        let gone = |p: &PathBuf| matches!(fs::symlink_metadata(p), Err(e) if e.kind() == ErrorKind::NotFound);
        while !sources.iter().any(gone) {
            if done.load(Ordering::Acquire) {
                return false;
            }
            std::thread::yield_now();
        }
        spin(delay) && signal(libc::SIGKILL)
    })
}

/// Waits (up to a second) until every thread of process `pid` is stopped, as SIGSTOP leaves
/// them: the disk it looks at then is what a kill would leave.
fn wait_stopped(pid: libc::pid_t) {
    let until = Instant::now() + Duration::from_secs(1);
    let tasks = PathBuf::from(format!("/proc/{pid}/task"));
    while Instant::now() < until {
        let Ok(entries) = fs::read_dir(&tasks) else {
            return;
        };
        let running = entries.filter_map(Result::ok).any(|e| {
            let stat = fs::read_to_string(e.path().join("stat")).unwrap_or_default();
            // The state follows the command's closing parenthesis.
            let state = stat.rsplit_once(')').map(|(_, rest)| rest.trim_start());
            !matches!(
                state.and_then(|s| s.chars().next()),
                Some('T' | 't' | 'Z' | 'X') | None
            )
        });
        if !running {
            return;
        }
        std::thread::yield_now();
    }
}

/// The count of `key` in `counts`.
fn count(counts: &BTreeMap<String, usize>, key: &str) -> usize {
    counts.get(key).copied().unwrap_or_default()
}

fn root_dir(mount: &Path, root: &str) -> PathBuf {
    mount.join(root.trim_start_matches('/'))
}

// ----------------------------------------------------------------------------- faults

#[derive(Clone, Debug, PartialEq)]
enum Fault {
    None,
    Throttle(&'static str, usize),
    ServerError(&'static str, u16, usize),
    Stall(&'static str, usize),
    /// Every service throttles at once, each its next N requests (`THROTTLED_SERVICES`).
    ThrottleBurst(usize),
    /// AWS does the call, the function never hears; `kill`: killed while it waits.
    LoseAnswer {
        op: &'static str,
        kill: bool,
    },
    /// Every request after the first `after` stalls; the process is killed at the first.
    KillAfter(usize),
    /// Killed this long after the first file it was to move left its place: among the moves
    /// (moves make no AWS call, so no proxy fault lands there); zero: within one, frozen
    /// while a move's private name is on disk (`kill_among_moves`).
    KillAmongMoves(Duration),
    /// A deadline that leaves the run no time to wait or move (the 20 s margin eats it).
    ShortDeadline,
    /// Targets created in this run look `creating` in their first N describes (as on AWS,
    /// where that takes minutes), with a deadline too short to wait for them.
    SlowCreate(usize),
}

impl Fault {
    fn draw(rng: &mut Rng) -> Fault {
        let r = rng.below(1000);
        let op = *rng.pick(OPERATIONS);
        let k = 1 + rng.index(3);
        match r {
            0..=539 => Fault::None,
            540..=609 => Fault::Throttle(op, k),
            610..=639 => Fault::ThrottleBurst(k),
            640..=719 => Fault::ServerError(op, *rng.pick(&[500, 503]), k),
            720..=779 => Fault::Stall(op, 1 + rng.index(2)),
            780..=859 => Fault::LoseAnswer {
                op: MUTATING[rng.index(MUTATING.len())],
                kill: rng.chance(500),
            },
            860..=939 => Fault::KillAfter(rng.index(12)),
            940..=969 => Fault::ShortDeadline,
            _ => Fault::SlowCreate(k),
        }
    }

    /// Whether the run may fail because of it (and with which error types).
    fn may_fail(&self) -> bool {
        !matches!(
            self,
            Fault::None | Fault::ShortDeadline | Fault::SlowCreate(_)
        )
    }

    fn kills(&self) -> bool {
        matches!(
            self,
            Fault::KillAfter(_) | Fault::LoseAnswer { kill: true, .. } | Fault::KillAmongMoves(_)
        )
    }

    /// The operation the proxy fails, for the faults aimed at one.
    fn operation(&self) -> Option<&'static str> {
        match self {
            Fault::Throttle(op, _)
            | Fault::ServerError(op, ..)
            | Fault::Stall(op, _)
            | Fault::LoseAnswer { op, .. } => Some(op),
            _ => None,
        }
    }

    fn name(&self) -> &'static str {
        match self {
            Fault::None => "none",
            Fault::Throttle(..) => "throttle",
            Fault::ThrottleBurst(_) => "throttle burst",
            Fault::ServerError(..) => "5xx",
            Fault::Stall(..) => "stall",
            Fault::LoseAnswer { kill: false, .. } => "lost answer",
            Fault::LoseAnswer { kill: true, .. } => "lost answer + kill",
            Fault::KillAfter(_) => "kill",
            Fault::KillAmongMoves(_) => "kill among moves",
            Fault::ShortDeadline => "short deadline",
            Fault::SlowCreate(_) => "slow create",
        }
    }
}

/// What AWS does that moto does not, played by the proxy from the soak's start, each drawn
/// from the seed (`AwsWays::draw`): pages of DescribeMountTargets and DescribeSubnets, and of
/// ListTasks, of 1..=N items ...
const PAGE_ITEMS: usize = 2;
/// ... a deleted target `deleting` for 1..=N describes, a delete of it meanwhile refused ...
const DELETING_DESCRIBES: usize = 4;
/// ... and SSM reads lagging a write: a write opens a window this often (per mille, drawn
/// between the two), in which the next 2..=N reads of it, within the time drawn (ms), answer
/// what it held before (a read of the version the write made: not found). The function reads
/// a parameter, then asks for the next version: windows of 2 reads or more fool that check,
/// and a window of 1 never could (seeds 77 and 31,337 drew 1 and met no versioned read that
/// lagged in 2,000 steps), so a draw of 1 counts as 2. Reading again after a lag the check
/// saw is `aws::ssm`'s tests' (`not_found_while_its_first_version_exists_is_read_again_then_refused`).
const STALE_PER_MILLE: (u64, u64) = (150, 500);
const STALE_READS: usize = 4;
const STALE_WINDOW_MS: (u64, u64) = (200, 1500);
/// A standalone task's RunTask meets a fault of its own this often (per mille), when no run
/// left it one: the harness retries it.
const RUN_TASK_FAULT_PER_MILLE: u64 = 400;
/// Calls of RunTask the harness makes before it gives up (each with the SDK's own retries).
const RUN_TASK_TRIES: usize = 4;

/// The AWS ways a soak plays, as drawn from its seed.
#[derive(Debug)]
struct AwsWays {
    page_items: usize,
    task_page_items: usize,
    deleting_describes: usize,
    /// What a delete of a target still `deleting` is answered.
    redelete: (u16, &'static str),
    stale_per_mille: u64,
    stale_reads: usize,
    stale_window: Duration,
}

impl AwsWays {
    fn draw(seed: u64) -> AwsWays {
        let mut rng = Rng::for_step(seed ^ 0xA3A5_3A75, 0);
        let between = |rng: &mut Rng, (low, high): (u64, u64)| low + rng.below(high - low + 1);
        AwsWays {
            page_items: 1 + rng.index(PAGE_ITEMS),
            task_page_items: 1 + rng.index(PAGE_ITEMS),
            deleting_describes: 1 + rng.index(DELETING_DESCRIBES),
            redelete: *rng.pick(&[
                (409, "IncorrectMountTargetState"),
                (404, "MountTargetNotFound"),
            ]),
            stale_per_mille: between(&mut rng, STALE_PER_MILLE),
            stale_reads: (1 + rng.index(STALE_READS)).max(2),
            stale_window: Duration::from_millis(between(&mut rng, STALE_WINDOW_MS)),
        }
    }

    /// Sets the proxy to play them; SSM's Standard-tier limit on a value (4,096 characters)
    /// always, as on AWS: the function must never write past it.
    fn play(&self, proxy: &support::proxy::Proxy, seed: u64) {
        proxy.page(self.page_items);
        proxy.task_page_size(self.task_page_items);
        proxy.delete_slowly(self.deleting_describes, self.redelete.0, self.redelete.1);
        proxy.limit_parameter_values(SSM_VALUE_LIMIT);
        proxy.lag_parameter_reads(
            self.stale_per_mille,
            self.stale_reads,
            self.stale_window,
            seed,
        );
    }
}

/// SSM's limit on a Standard-tier parameter's value, in characters.
const SSM_VALUE_LIMIT: usize = 4096;

/// The services a throttling burst hits, as the proxy names them (SigV4's service names).
const THROTTLED_SERVICES: &[&str] = &["elasticfilesystem", "ssm", "ecs", "ec2"];

/// Error types a faulted run may answer: the fault's own.
const FAULT_ERRORS: &[&str] = &["Throttled", "Aws", "TimedOut"];
/// Error types a run may answer after the proxy served it a stale read (SSM's lag).
const STALE_ERRORS: &[&str] = &["StaleWrite", "StaleParameter"];

// ----------------------------------------------------------------------------- the soak

#[derive(Default, Debug)]
struct Stats {
    runs: BTreeMap<&'static str, usize>,
    /// The runs' time, all of it and the longest, and the most AWS calls one made (its
    /// ListTasks): on the NFS tier the runs take most of the soak's time.
    run_time: Duration,
    longest_run: Duration,
    most_calls: (usize, usize),
    /// Faults drawn for a run, by name.
    drawn: BTreeMap<&'static str, usize>,
    /// Faults that fired in a function run: the proxy answered the function's call with them
    /// (or the run was killed, the deadline was short, a new target was held `creating`).
    faults: BTreeMap<&'static str, usize>,
    /// Faults aimed at one operation that the function's own calls met, by operation.
    faulted_operations: BTreeMap<&'static str, usize>,
    /// Faults the harness's own RunTask met (the function never calls it), by name: not the
    /// function's, so in no statistic of its faults.
    harness_faults: BTreeMap<&'static str, usize>,
    /// Throttling errors of the bursts that fired, by service.
    burst_throttles: BTreeMap<String, usize>,
    /// RunTask calls the harness made again after a fault.
    run_task_retries: usize,
    failed_runs: usize,
    kills: usize,
    /// Kills after some moves of the run began and before they all ended.
    kills_among_moves: usize,
    /// Kills that left a private name of a move behind: within one move.
    kills_within_a_move: usize,
    /// Runs that stopped because a read lagged SSM (`StaleWrite`: written over a version
    /// they never read, which they put back; `StaleParameter`: still lagging after reading
    /// again), by kind.
    stale_stops: BTreeMap<String, usize>,
    /// Runs whose read of the list was older than the publish the state records, by their
    /// log's `kind`: each read it again, and went on or stopped (`StaleParameter`).
    list_older_than_published: usize,
    /// Steps begun while a kill among moves was owed (`Soak::quiet`): a course the steering
    /// changed.
    quiet_steps: usize,
    /// When the last of them was: its private name may hold a drain for `ABANDONED_AFTER`.
    last_within_a_move: Option<Instant>,
    client_ops: BTreeMap<&'static str, usize>,
    concurrent_ops: usize,
    reads: BTreeMap<&'static str, usize>,
    created: usize,
    drains: usize,
    deleted: usize,
    max_targets: usize,
    /// The most shards a published list had.
    max_shards: usize,
    rollouts_completed: usize,
    deployments: usize,
    checkpoints: usize,
    publishes: usize,
    /// Writes by a client on a list older than the published one.
    old_writes: usize,
    /// Reads that answered a version older than the latest.
    stale_reads: usize,
    /// Writes beside a run that closed the placements (a pass's clean end).
    writes_beside_close: usize,
    /// Writes by the app on plain paths (an unreported task of the service); check 8's reads
    /// of its paths by a reader whose list does not look in `/` (skipped); and runs whose
    /// answer came while it ran (each must leave a list that looks in `/`).
    plain_writes: usize,
    plain_unlooked: usize,
    /// Routed reads (a client's, between or beside runs) and creates that missed its copy
    /// under `/`.
    plain_missed: usize,
    runs_beside_plain_app: usize,
    /// Runs that answered beside it without naming it (ECS's tasks not listed).
    runs_beside_plain_app_unseen: usize,
    /// Routed deletes of a path it wrote last that left its copy under `/`, where the
    /// deleting client's list did not look.
    plain_left_by_delete: usize,
    /// Runs steered to a rewrite racing a move that took a rewritten path's source
    /// (`RACE_ATTEMPTS`), and all runs steered so (`RACE_STEERED`).
    race_attempts: usize,
    race_steered: usize,
    /// Writes by the client whose router mounts each shard apart.
    per_target_writes: usize,
    /// `create`s of a live path (found, nothing written), and those whose latest version a
    /// client on another list wrote.
    creates_found: usize,
    creates_across_lists: usize,
    /// Rewrites beside a run of a path away from home whose copy the run moved meanwhile.
    rewrites_racing_moves: usize,
    /// Check 8's reads, and those by a reader on a list older than the published one.
    oracle_reads: usize,
    oracle_reads_old_list: usize,
    /// Deletes whose client's list did not name a root holding a copy (a shard added since it
    /// started): the copy stays, as docs/routing.md says.
    missed_by_old_list: BTreeSet<String>,
    /// Deleted paths seen on disk again: each one of `missed_by_old_list`, or the soak fails.
    resurrected: BTreeSet<String>,
    /// Deletes beside a function run, racing its moves.
    deletes_beside_runs: usize,
    /// Deletes that removed copies in more than one shard.
    deletes_of_several_copies: usize,
    /// Clients ECS does not show, by kind: stopping tasks, clients whose refresh failed,
    /// silent ones, routers that read version 1 only.
    actors: BTreeMap<&'static str, usize>,
    /// Writes on lists older than the published one by the clients ECS does not show that
    /// write: stopping and standalone tasks.
    hidden_writes: BTreeMap<&'static str, usize>,
    /// Lists the function published while a router that reads version 1 only was live: each
    /// one it must read (check 6). (Not the refreshes that hand it them: the harness does those
    /// at every step, whatever the function publishes.)
    published_beside_old_routers: usize,
    /// Targets deleted in the wind-down (counted in `deleted` too).
    deleted_winding_down: usize,
    /// Steps the wind-down took.
    wind_down_steps: u64,
    /// Runs begun while ECS showed no rollout held but a live report named an older list:
    /// only the reports could hold them.
    held_by_reports: usize,
    /// Silent clients' reports, written through a client's mount, by client id: when written;
    /// and for each the time until a run's answer first named it, and the runs before that.
    silent_written: BTreeMap<String, Instant>,
    silent_named_after: Vec<(Duration, usize)>,
    /// Runs since each unnamed silent client's report was written.
    silent_runs_before: BTreeMap<String, usize>,
    /// Runs whose answer named clients behind (`clients_behind`).
    runs_naming_clients: usize,
    /// Runs begun on a version 1 list while a router that reads version 1 only was live.
    runs_beside_old_routers: usize,
    /// Lists of version 2 published.
    v2_published: usize,
    /// Lists of version 3 published with a placement open (a list of them, not `everywhere`),
    /// with none (closed by a pass), and saying `everywhere`.
    v3_open: usize,
    v3_closed: usize,
    v3_everywhere: usize,
    /// Abandoned names rebalances cleaned up or gave back (`abandoned_removed`), in runs where
    /// no private name of the co-tenant's went (those are counted apart).
    abandoned_removed: u64,
    /// The co-tenant's actions, by name (`HOSTILE_KINDS`).
    hostile: BTreeMap<&'static str, usize>,
    /// Swaps of a directory of the co-tenant's for a link, either way, while a run walked.
    swaps_in_runs: u64,
    /// Runs that wanted more shards than served, and decided to grow, while the co-tenant had
    /// entries on disk.
    growth_beside_hostile: usize,
    /// Runs whose file count was checked against the clients' (no traffic beside them) while
    /// the co-tenant had entries in the shards.
    counted_beside_hostile: usize,
    /// Runs that named a report of the co-tenant's among the clients behind, its time bounded.
    hostile_reports_named: usize,
    /// Runs begun while a report of the co-tenant's (or its junk) named another list.
    held_by_hostile: usize,
    /// The co-tenant's entries found in the tree of a target the function deleted.
    hostile_left_in_deleted: usize,
    /// Abandoned names removed or given back in runs where a private name of the co-tenant's
    /// went too.
    abandoned_beside_hostile: u64,
    /// Runs that took a client's file from its place on disk or deleted a target in AWS, by how
    /// they ended (`answered`, `failed`, `killed`): each judged by the fleet rule on that.
    changed_on_disk: BTreeMap<&'static str, usize>,
    /// Paths whose latest version was, at some check, only in a private name of a move (a
    /// version a move hid), and the longest any stayed so before it was given back.
    hidden_latest: usize,
    longest_hidden: Duration,
    /// The paths whose latest version is hidden now, since when.
    hidden_since: BTreeMap<String, Instant>,
    /// Runs whose answer said a cut-short move's private name held a drain (within
    /// `ABANDONED_AFTER` of the kill), and the client files found in private names at all.
    drains_held_by_moves: usize,
    private_copies: BTreeSet<String>,
    /// Runs by where the homes of the list they published stood (`homes`: `announced`,
    /// `switched`, `switched_early`; docs/data-plane.md, "When homes change").
    homes: BTreeMap<String, usize>,
    /// Runs begun while a task of the service whose router writes no report ran, and those
    /// whose answer named it `unreported`.
    runs_beside_unreported: usize,
    unreported_named: usize,
    /// Runs that moved files after such a task had stopped or been replaced: released.
    unreported_released: usize,
    /// Runs begun while only ECS's task rule held them: no rollout held, every live report on
    /// the published list, and a task ECS had not stopped yet, started before the list.
    held_by_tasks_alone: usize,
    /// Steps of the course (not the end's) after which ECS showed a stopping task on another
    /// status than before (`advance_tasks`).
    task_stop_steps: usize,
    /// Rebalances that walked (by kind): resumed where a capped or timed-out one stopped,
    /// stopped by `REBALANCE_MAX_VISITS` or the time, and compared against added shards only.
    rebalances_resumed: usize,
    rebalances_stopped: usize,
    compared_with_added: usize,
    /// Runs of the end's last pass, one file a run, that resumed where the one before stopped.
    final_pass_resumes: usize,
}

/// A client operation beside a function run.
#[derive(Clone, Debug)]
enum Beside {
    Write(Vec<u8>),
    /// A new version of a path that was away from home when the run began, from its copy
    /// there (the source a move takes).
    Rewrite(Vec<u8>, PathBuf),
    Read,
    Delete,
}

/// What an operation beside a run answered.
#[derive(Debug)]
enum Answer {
    Wrote,
    Read(efs_router::Read),
    /// With the roots of the deleting router's shards, by position.
    Deleted(Deleted, Vec<String>),
}

/// A client operation planned beside a run: the client, its pause before it, the path.
type Planned = (usize, Duration, String, Beside);

/// An operation beside a run as it went: the client, its list's version, the path, the
/// operation, when it answered, and what.
type Done = (
    usize,
    i64,
    String,
    Beside,
    Instant,
    Result<Answer, efs_router::Error>,
);

/// A directory of the co-tenant's swapped for a link and back beside a run: which of its
/// entries, its name while away, and the thread that swaps until `done`.
struct SwapRun {
    index: usize,
    away: PathBuf,
    done: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<hostile::Swapped>,
}

/// What the soak saw at a run's start: what the run is judged against afterwards.
struct BeforeRun {
    converged: bool,
    /// The list versions the fleet ran.
    lists: String,
    /// The live clients whose reports named another list than the published one.
    behind: Vec<String>,
    targets: Vec<MountTarget>,
    /// The published list's version.
    version: i64,
    /// For a kill among moves: the misplaced files it watches, and the private names on disk
    /// it is counted against (walked only then).
    sources: Vec<PathBuf>,
    privates: BTreeSet<String>,
    /// Flat paths the clients have: the least the function may count, when no client works
    /// beside the run (`quiet`).
    flat: usize,
    quiet: bool,
    /// Shards of the published list that take new files.
    serving: usize,
    /// The private names of the co-tenant's on disk.
    hostile_privates: Vec<PathBuf>,
    /// Where the clients' files were: the run is judged on what it changed, whether it
    /// answered or not.
    places: Places,
    /// What ECS alone showed holding the moves (`Soak::ecs_behind`), and the running tasks of
    /// routers that write no report (ARNs).
    ecs_behind: Vec<String>,
    unreported: Vec<String>,
    /// Stale reads the proxy had served of SSM's parameters (`Proxy::stale_reads`).
    stale_served: usize,
    /// A rebalance that goes on where an earlier one stopped (the state kept a position).
    resumes: bool,
}

/// How a run went: its answer (`None`: killed), how long it took, its deadline.
struct Ran {
    outcome: Option<Result<Value, Value>>,
    took: Duration,
    /// AWS calls it made (through the proxy), ListTasks among them.
    calls: (usize, usize),
    deadline: Duration,
    killed_among_moves: bool,
}

/// Every copy under a listed root, by logical path: its root and its bytes.
type Copies = BTreeMap<String, Vec<(String, Vec<u8>)>>;

/// The roots under which each client path has a copy on disk (private names aside).
type Places = BTreeMap<String, BTreeSet<String>>;

struct Soak {
    seed: u64,
    steps: u64,
    step: u64,
    tb: Testbed,
    views: Views,
    clients: Vec<Client>,
    model: Model,
    published: Published,
    /// The list SSM held at the last forced deployment: what a completed rollout runs.
    deployed: Published,
    targets: Vec<MountTarget>,
    deployment_ids: Vec<String>,
    /// Every root a target id was published with.
    roots_by_id: BTreeMap<String, String>,
    /// A checkpoint: converged, and a rebalance since then moved every misplaced file.
    clean: bool,
    log: Vec<String>,
    last_run: String,
    stats: Stats,
    started: Instant,
    /// What ECS hides, live now.
    actors: Vec<Actor>,
    /// Clients whose refresh fails: they keep their old list until the step named.
    lagging: BTreeMap<usize, u64>,
    /// The list published before the current one.
    previous: Option<Published>,
    phase: Phase,
    /// ECS through the proxy, for RunTask.
    ecs: aws_sdk_ecs::Client,
    /// A fault a run drew for RunTask, which only the harness calls: its next RunTask meets it.
    run_task_fault: Option<Fault>,
    /// What AWS does that moto does not, as this seed plays it.
    aws: AwsWays,
    /// The hostile co-tenant.
    hostile: CoTenant,
    /// The task metadata endpoint the service's tasks' routers learn their ARN from.
    metadata: String,
    /// The service's tasks with a reporting router.
    service_tasks: Vec<ServiceTask>,
    /// Every task ECS has shown, by id: the runs begun when the soak first saw it.
    task_born: BTreeMap<String, u64>,
    /// Function runs begun so far, and the one that published the current list (0: the
    /// world's).
    runs_begun: u64,
    published_run: u64,
    /// The step by which ECS has stopped every task it was stopping (a rollout completed).
    tasks_stop_by: Option<u64>,
    /// A task of a router that writes no report has stopped since the last run that moved.
    unreported_ended: bool,
    /// The last rebalance that walked: whether it resumed, and whether it ended its pass.
    last_walk: Option<(bool, bool)>,
}

/// One step's outcome: a line for the log, or what broke.
type Step = Result<String, String>;

/// Where the soak is: its main steps, the wind-down, or the end, which must settle.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Phase {
    Main,
    /// The clients delete down to a few files, and nothing else changes: faults, kills and
    /// the clients ECS does not show go on.
    WindingDown,
    /// No more faults, traffic or clients ECS does not show.
    Healing,
}

impl Soak {
    async fn new(seed: u64, steps: u64) -> Soak {
        let (views, mount) = Views::new();
        let mut tb = Testbed::with_mount(BIN, World::builder(), mount).await;
        // The default: every running task of the service and the family must report, so a
        // task whose router writes none holds the moves (issue 29).
        tb.env("CLIENT_REPORTS", "require")
            .env("FILE_THRESHOLD", THRESHOLD.to_string())
            .env("SCALE_IN_COOLDOWN_SECONDS", "0")
            // moto answers ~10x slower in the tier's VM.
            .env(
                "API_ATTEMPT_TIMEOUT_SECONDS",
                if views.tier { "10" } else { "1" },
            )
            .env(
                "API_CALL_TIMEOUT_SECONDS",
                if views.tier { "20" } else { "2" },
            )
            .env("MOVE_CONCURRENCY", "4")
            .env("ECS_CLIENT_FAMILIES", STANDALONE_FAMILY)
            // Its least: what kills leave behind is given back within the soak's minutes.
            .env(
                "ABANDONED_AFTER_SECONDS",
                ABANDONED_AFTER.as_secs().to_string(),
            );
        tb.proxy.hold_rollouts();
        let mut aws = AwsWays::draw(seed);
        if views.tier {
            // The function runs about ten times slower there (its AWS timeouts above too): a
            // window of the host's length would close before its next read.
            aws.stale_window *= 10;
        }
        aws.play(&tb.proxy, seed);
        // Replaced tasks go DEACTIVATING, STOPPING, DEPROVISIONING, STOPPED as the soak moves
        // them on (`tasks_step`), not at once.
        tb.proxy.stop_tasks_slowly();
        // The service's tasks run before the function's first run.
        tb.start_tasks().await;
        let ecs = support::Aws::at(&tb.proxy.endpoint()).await.ecs;
        fs::create_dir_all(views.function.join(WATCH_DIR))
            .expect("create the first shard's directory");
        let published = read_published(&tb.world).await;
        let targets = tb.world.mount_targets().await;
        let deployment_ids = tb.world.deployment_ids().await;
        let clients = (0..CLIENTS)
            .map(|i| Client::reporting(&published, views.client(i), i))
            .collect();
        let hostile = CoTenant::new(views.client(CLIENTS + 1), &views.function);
        let mut soak = Soak {
            seed,
            steps,
            step: 0,
            tb,
            views,
            clients,
            model: Model {
                high: 42,
                low: 4,
                ..Model::default()
            },
            deployed: published.clone(),
            published,
            targets,
            deployment_ids,
            roots_by_id: BTreeMap::new(),
            clean: false,
            log: Vec::new(),
            last_run: String::new(),
            stats: Stats::default(),
            started: Instant::now(),
            actors: Vec::new(),
            lagging: BTreeMap::new(),
            previous: None,
            phase: Phase::Main,
            ecs,
            run_task_fault: None,
            aws,
            hostile,
            metadata: support::metadata::endpoint(),
            service_tasks: Vec::new(),
            task_born: BTreeMap::new(),
            runs_begun: 0,
            published_run: 0,
            tasks_stop_by: None,
            unreported_ended: false,
            last_walk: None,
        };
        soak.follow_tasks();
        soak.remember_roots();
        soak.stats.max_targets = soak.targets.len();
        soak
    }

    /// The command that runs this soak again: on the NFS tier, or on one local directory.
    fn make_target(&self) -> &'static str {
        if self.views.tier {
            "soak"
        } else {
            "soak-local"
        }
    }

    fn remember_roots(&mut self) {
        for t in &self.published.list.mount_targets {
            self.roots_by_id.insert(t.id.clone(), t.root.clone());
        }
    }

    /// Every client on the published list, no rollout held, and no live report of a client
    /// ECS does not show naming an older list.
    fn converged(&self) -> bool {
        self.tb.proxy.rolling_services().is_empty()
            && self
                .clients
                .iter()
                .all(|c| c.list.version == self.published.version)
            && self.behind().is_empty()
            && self.hostile_behind().is_empty()
            && self.ecs_behind().is_empty()
    }

    /// The co-tenant's entries in the reports' directory that the function must count as
    /// clients behind: reports of another list than the published one, and junk named like a
    /// report.
    fn hostile_behind(&self) -> Vec<String> {
        self.hostile
            .planted
            .iter()
            .filter_map(|p| {
                let Spot::Reports { name } = &p.spot else {
                    return None;
                };
                let name = name.to_string_lossy();
                match &p.holds {
                    Holds::List(text) if *text != self.published.text => {
                        Some(format!("the co-tenant's report {name} ({})", p.what))
                    }
                    Holds::Unreadable => Some(format!("the co-tenant's {name} ({})", p.what)),
                    Holds::List(_) | Holds::Nothing => None,
                }
            })
            .collect()
    }

    /// The live clients whose reports name a list other than the published one, for a
    /// message: those of the fleet and those ECS does not show.
    fn behind(&self) -> Vec<String> {
        let fleet = self
            .clients
            .iter()
            .enumerate()
            .filter(|(_, c)| c.list.text != self.published.text)
            .map(|(i, c)| {
                let lag = if self.lagging.contains_key(&i) {
                    ", its refresh failing"
                } else {
                    ""
                };
                format!("client {i} on {}{lag}", c.list.label())
            });
        let hidden = self.actors.iter().filter_map(|a| a.behind(&self.published));
        let tasks = self
            .service_tasks
            .iter()
            .filter(|t| t.client.list.text != self.published.text)
            .map(|t| {
                format!(
                    "the service's task {} on {}",
                    task_id(&t.arn),
                    t.client.list.label()
                )
            });
        fleet.chain(hidden).chain(tasks).collect()
    }

    /// Whether a router that reads version 1 only is live.
    fn old_router_live(&self) -> bool {
        self.actors
            .iter()
            .any(|a| matches!(a, Actor::OldRouter { .. }))
    }

    // ------------------------------------------------------------------------- what ECS shows

    /// The groups of the tasks the function is told of: the services' and the family's.
    fn task_groups(&self) -> Vec<String> {
        let services = self
            .tb
            .world
            .services
            .iter()
            .map(|s| format!("service:{s}"));
        services
            .chain([format!("family:{STANDALONE_FAMILY}")])
            .collect()
    }

    /// The tasks of those groups that ECS has not STOPPED and no longer wants running: (id,
    /// last status).
    fn stopping_tasks(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for g in self.task_groups() {
            let running: Vec<String> = self.tb.proxy.running_task_arns(&g);
            let running: Vec<&str> = running.iter().map(|a| task_id(a)).collect();
            for (id, status) in self.tb.proxy.tasks(&g) {
                if status != "STOPPED" && !running.contains(&id.as_str()) {
                    out.push((id, status));
                }
            }
        }
        out
    }

    /// The last status of every task of those groups, by id.
    fn task_statuses(&self) -> BTreeMap<String, String> {
        let groups = self.task_groups().into_iter();
        groups.flat_map(|g| self.tb.proxy.tasks(&g)).collect()
    }

    /// Coverage a statistic is still owed: past half the main steps with none of it yet, the
    /// course is steered to it (an actor starts, lives or writes for sure), so the statistic
    /// does not rest on the seed's luck.
    fn owed(&self, met: usize) -> bool {
        self.phase == Phase::Main && self.step > self.steps / 2 && met == 0
    }

    /// A run held by ECS's task rule alone is owed, where it is asserted: ECS then takes its
    /// stopping tasks no further than DEPROVISIONING (their routers gone, their reports with
    /// them), so that a run after a completed rollout meets one that only the rule holds. (A
    /// seed's course may otherwise stop every task before a run comes: seed 202's did.)
    fn tasks_rule_owed(&self) -> bool {
        let asserted = REQUIRED.iter().any(|r| {
            r.name == HELD_BY_TASKS_ALONE && r.applies(self.steps, self.views.tier, self.seed)
        });
        asserted && self.owed(self.stats.held_by_tasks_alone)
    }

    /// Late in a long wind-down: nothing new holds a drain (`KILLS_END_IN_WIND_DOWN`).
    fn late_in_wind_down(&self) -> bool {
        self.phase == Phase::WindingDown && self.step > self.steps + KILLS_END_IN_WIND_DOWN
    }

    /// Coverage: past half the main steps with no kill within a move, or none judged on disk
    /// to have moved files, yet (one that moved a single file may end before the watcher finds
    /// it), every run that will move is one, in the wind-down too (its drains move files
    /// where the main steps' fleet held them).
    fn kill_owed(&self) -> bool {
        let killed_moved = self.stats.changed_on_disk.get("killed").copied();
        !self.late_in_wind_down()
            && self.step > self.steps / 2
            && (self.stats.kills_within_a_move == 0 || killed_moved.unwrap_or(0) == 0)
    }

    /// While a kill among moves is owed, no client that holds the moves starts by chance (a
    /// silent one, an old router, a standalone or unreported task, a stopping or lagging
    /// one), and those live run out: the default seed's course otherwise held all but three
    /// or four runs that would move in its thousand steps, and under load none was killed
    /// among its moves. Late in a long wind-down too, so that it ends. The ones a statistic of
    /// their own is owed still start.
    fn quiet(&self) -> bool {
        self.kill_owed() || self.late_in_wind_down()
    }

    /// Runs beside a task whose router writes no report, and answers naming one, are owed.
    fn unreported_owed(&self) -> bool {
        let s = &self.stats;
        self.owed(s.runs_beside_unreported.min(s.unreported_named))
    }

    /// A standalone task's write on an old list is owed.
    fn standalone_write_owed(&self) -> bool {
        let n = self.stats.hidden_writes.get("a standalone task");
        self.owed(n.copied().unwrap_or(0))
    }

    /// The tasks of the services that ECS wants running (ARNs).
    fn service_running(&self) -> Vec<String> {
        self.tb.service_tasks()
    }

    /// The tasks of the routers that write no report, while ECS wants them running (ARNs).
    fn unreported_running(&self) -> Vec<String> {
        let running = self.service_running();
        self.actors
            .iter()
            .filter_map(|a| match a {
                Actor::Unreported { task, .. } if running.contains(task) => Some(task.clone()),
                _ => None,
            })
            .collect()
    }

    /// What ECS alone shows holding the moves: a task it has not STOPPED that the soak saw
    /// before the run that published the current list (the task rule: created no later than
    /// that publish), and a running task whose router writes no report (`CLIENT_REPORTS=
    /// require`). A task first seen in that run may have started after the publish: the
    /// function may let it be, so the soak does.
    fn ecs_behind(&self) -> Vec<String> {
        let mut out = Vec::new();
        for g in self.task_groups() {
            for (id, status) in self.tb.proxy.tasks(&g) {
                let born = self.task_born.get(&id).copied().unwrap_or(u64::MAX);
                if status != "STOPPED" && born < self.published_run {
                    out.push(format!(
                        "task {id} ({g}, {status}), started before {} was published",
                        self.published.label()
                    ));
                }
            }
        }
        for arn in self.unreported_running() {
            out.push(format!(
                "task {} running a router that writes no report",
                task_id(&arn)
            ));
        }
        out
    }

    /// The service's tasks as ECS has them now: a task seen for the first time is dated (by
    /// the runs begun so far), a running one gets a reporting router on the published list
    /// (but the task of a router that writes none), and a stopping one's router goes once its
    /// containers are told to stop (STOPPING).
    fn follow_tasks(&mut self) {
        let mut status = BTreeMap::new();
        for g in self.task_groups() {
            for (id, s) in self.tb.proxy.tasks(&g) {
                self.task_born.entry(id.clone()).or_insert(self.runs_begun);
                status.insert(id, s);
            }
        }
        self.service_tasks.retain(|t| {
            matches!(
                status.get(task_id(&t.arn)).map(String::as_str),
                Some("RUNNING" | "DEACTIVATING")
            )
        });
        let unreported: Vec<String> = self
            .actors
            .iter()
            .filter_map(|a| match a {
                Actor::Unreported { task, .. } => Some(task.clone()),
                _ => None,
            })
            .collect();
        for service in self.tb.world.services.clone() {
            for arn in self
                .tb
                .proxy
                .running_task_arns(&format!("service:{service}"))
            {
                if unreported.contains(&arn) || self.service_tasks.iter().any(|t| t.arn == arn) {
                    continue;
                }
                let list = self.published.clone();
                let options = Reporting {
                    parameter_version: Some(list.version),
                    label: Some(format!("soak service task {}", task_id(&arn))),
                    metadata_uri: Some(format!("{}/{arn}", self.metadata)),
                    ..Reporting::default()
                };
                let router = Router::reporting(
                    &list.text,
                    Layout::single_mount(self.views.client(CLIENTS)),
                    options,
                )
                .unwrap_or_else(|e| panic!("a service task's router on {}: {e}", list.label()));
                self.service_tasks.push(ServiceTask {
                    arn,
                    client: Client { list, router },
                });
            }
        }
    }

    /// Before each step, after the clients ECS does not show: ECS moves the tasks it is
    /// stopping on a status now and then, more often once a completed rollout's lag is over;
    /// then the soak follows the tasks.
    fn tasks_step(&mut self, said: &mut Vec<String>) {
        let mut rng = Rng::for_step(self.seed ^ 0x5709_7A5C, self.step);
        let from = self.stopping_tasks();
        if from.is_empty() {
            self.tasks_stop_by = None;
        }
        let per_mille = match self.tasks_stop_by {
            Some(by) if by <= self.step => TASK_STOP_AFTER_PER_MILLE,
            _ => TASK_STOP_PER_MILLE,
        };
        if !from.is_empty() && rng.chance(per_mille) {
            let moved = self.advance_tasks_counted(&from, self.tasks_rule_owed());
            said.push(format!(
                "ECS moves its stopping tasks one status on from {from:?}: {moved} moved"
            ));
        }
        self.follow_tasks();
    }

    /// ECS moves its stopping tasks one status on; how many of `from` moved, and the step
    /// counted among the steps of ECS stopping tasks as [`stop_step_counts`] says.
    fn advance_tasks_counted(&mut self, from: &[(String, String)], short: bool) -> usize {
        match short {
            true => self.tb.proxy.advance_tasks_short_of_stopped(),
            false => self.tb.proxy.advance_tasks(),
        }
        let now = self.task_statuses();
        self.stats.task_stop_steps += usize::from(stop_step_counts(self.phase, from, &now));
        moved_statuses(from, &now)
    }

    /// Every task ECS is stopping is STOPPED: the end's doing, not the course's, so not counted
    /// in `task_stop_steps` ([`stop_step_counts`]).
    fn stop_tasks_now(&mut self) {
        for _ in 0..4 {
            let from = self.stopping_tasks();
            self.advance_tasks_counted(&from, false);
        }
        self.follow_tasks();
    }

    /// Sometimes a task of the service starts with a router that writes no report (the second
    /// step always: a fleet still upgrading): a router older than reports while the published
    /// list is one it reads, else a current one built with reports off (`Router::new`, as an
    /// app that never turned them on). Drawn from a generator of its own.
    fn maybe_start_unreported(&mut self, said: &mut Vec<String>) -> Result<(), String> {
        let mut rng = Rng::for_step(self.seed ^ 0x0DE9_0A7E, self.step);
        let per_mille = match self.step {
            2 => 1000,
            _ if self.unreported_owed() => 1000,
            _ if self.quiet() => 0,
            _ => UNREPORTED_PER_MILLE,
        };
        let live = self
            .actors
            .iter()
            .any(|a| matches!(a, Actor::Unreported { .. }));
        let Some(service) = self.tb.world.services.first().cloned() else {
            return Ok(());
        };
        if live || !rng.chance(per_mille) {
            return Ok(());
        }
        let list = self.published.clone();
        let (what, reads) = match hand("a router older than reports", UNREPORTED_READS, &list) {
            Ok(()) => ("a router older than reports", UNREPORTED_READS),
            Err(_) => (
                "a router with reports off",
                &efs_router::reporter::READS[..],
            ),
        };
        let arn = self
            .tb
            .proxy
            .start_task(&format!("service:{service}"), STANDALONE_FAMILY);
        let until = self.step + 3 + rng.below(UNREPORTED_STEPS);
        // Some are the app itself, on plain paths, beside the routed tasks after adoption.
        let plain_owed = self.step > self.steps / 4 && self.stats.plain_writes == 0;
        let plain = rng.chance(PLAIN_APP_PER_MILLE) || plain_owed;
        let (what, routed) = match plain {
            true => (PLAIN_APP, first_shard_only(&list.list)?),
            false => (what, list.list.clone()),
        };
        let router = Router::new(routed, Layout::single_mount(self.views.client(CLIENTS)))
            .map_err(|e| format!("{what} on {}: {e}", list.label()))?;
        *self.stats.actors.entry("unreported").or_default() += 1;
        said.push(format!(
            "task {} of the service starts {what} (no report) on {}, until #{until}",
            task_id(&arn),
            list.label()
        ));
        self.actors.push(Actor::Unreported {
            client: Client { list, router },
            task: arn,
            until,
            reads,
            plain,
        });
        Ok(())
    }

    // ------------------------------------------------------------------------- what ECS hides

    /// Before each step: clients ECS does not show end, are aged, report, write and start,
    /// drawn from a generator of their own (so the step's own draws stay as they were).
    async fn actors_step(&mut self) -> Result<Option<String>, String> {
        let mut rng = Rng::for_step(self.seed ^ 0xAC7025, self.step);
        let mut said = Vec::new();
        self.end_due_actors(&mut said);
        self.refresh_old_routers();
        self.hidden_writes(&mut rng, &mut said)?;
        self.maybe_go_silent(&mut rng, &mut said);
        self.maybe_start_old_router(&mut rng, &mut said);
        if !self
            .actors
            .iter()
            .any(|a| matches!(a, Actor::Standalone { .. }))
            && (self.standalone_write_owed() || (rng.chance(STANDALONE_PER_MILLE) && !self.quiet()))
        {
            said.push(self.start_standalone(&mut rng).await?);
        }
        self.maybe_start_unreported(&mut said)?;
        self.tasks_step(&mut said);
        Ok((!said.is_empty()).then(|| said.join("; ")))
    }

    /// The actors whose time is up end, and clients whose refresh failed until now take the
    /// list of the last forced deployment.
    fn end_due_actors(&mut self, said: &mut Vec<String>) {
        let step = self.step;
        // A task of a router that writes no report that a forced deployment replaced ends too.
        let running = self.unreported_running();
        let replaced =
            |a: &Actor| matches!(a, Actor::Unreported { task, .. } if !running.contains(task));
        // While its coverage is owed, an actor that gives it lives on past its time.
        let (unreported_owed, standalone_owed) =
            (self.unreported_owed(), self.standalone_write_owed());
        let kept = |a: &Actor| match a {
            Actor::Unreported { .. } => unreported_owed,
            Actor::Standalone { .. } => standalone_owed,
            _ => false,
        };
        let (ended, live): (Vec<Actor>, Vec<Actor>) = std::mem::take(&mut self.actors)
            .into_iter()
            .partition(|a| (a.until() <= step && !kept(a)) || replaced(a));
        self.actors = live;
        for a in ended {
            said.push(self.end(a));
        }
        let lag_over: Vec<usize> = self
            .lagging
            .iter()
            .filter(|(_, until)| **until <= step)
            .map(|(i, _)| *i)
            .collect();
        for i in lag_over {
            self.lagging.remove(&i);
            if self.clients[i].list.version != self.deployed.version {
                self.clients[i] = Client::reporting(&self.deployed, self.views.client(i), i);
                said.push(format!(
                    "client {i}'s refresh works again: on {}",
                    self.deployed.label()
                ));
            }
        }
    }

    /// Every live router that reads version 1 only refreshes: handed the published list
    /// (check 6: one it reads), it reports it.
    fn refresh_old_routers(&mut self) {
        let published = self.published.clone();
        for a in &self.actors {
            if let Actor::OldRouter { client, file, .. } = a {
                let report = report_of(client, &published, vec![1], "soak: a version 1 router");
                rewrite_report(file, &report, unix_now());
            }
        }
    }

    /// A stopping or standalone task writes on its old list: a new path, or a rewrite of a
    /// live one.
    fn hidden_writes(&mut self, rng: &mut Rng, said: &mut Vec<String>) -> Result<(), String> {
        let standalone_owed = self.standalone_write_owed();
        for k in 0..self.actors.len() {
            let sure = standalone_owed
                && matches!(&self.actors[k], Actor::Standalone { client, .. }
                    if client.list.text != self.published.text);
            if self.actors[k].writer().is_none() || !(sure || rng.chance(400)) {
                continue;
            }
            let live: Vec<String> = self.model.live.keys().cloned().collect();
            let path = if live.is_empty() || rng.chance(500) {
                self.model.fresh_path(rng)
            } else {
                rng.pick(&live).clone()
            };
            let Some((what, client)) = self.actors[k].writer() else {
                continue;
            };
            let client = client.clone();
            self.model.wait_tick(&path);
            let bytes = self.model.next_bytes(&path, 100 + k, client.list.version);
            client.router.write(&path, &bytes).map_err(|e| {
                format!(
                    "{what} on {} could not write {path}: {e}",
                    client.list.label()
                )
            })?;
            let at = Instant::now();
            if client.list.text != self.published.text {
                *self.stats.hidden_writes.entry(what).or_default() += 1;
            }
            said.push(format!(
                "{what} on {} wrote {path} (write {}) -> {}",
                client.list.label(),
                self.model.writes,
                client.home_root(&path)
            ));
            // Recorded first: a routed write of the path takes it out of the app's again.
            self.model.record(&path, bytes.clone(), at);
            if what == PLAIN_APP {
                self.stats.plain_writes += 1;
                self.model.plain.insert(path.clone());
                self.model.plain_versions.insert(bytes);
            }
        }
        Ok(())
    }

    /// Sometimes a client dies without a word, on the list before the current one, just when
    /// nothing else holds the function (no rollout held, nobody behind, a rebalance next with
    /// files to move): only its report can.
    fn maybe_go_silent(&mut self, rng: &mut Rng, said: &mut Vec<String>) {
        if !self
            .actors
            .iter()
            .any(|a| matches!(a, Actor::Silent { .. }))
            && self.tb.proxy.rolling_services().is_empty()
            && self.behind().is_empty()
            && self.previous.is_some()
            && self.rebalance_next()
            && rng.chance(SILENT_PER_MILLE)
            && !self.quiet()
            && !self.misplaced().is_empty()
        {
            let list = self
                .previous
                .clone()
                .unwrap_or_else(|| self.published.clone());
            let client = format!("{:016x}", rng.next());
            // Through a client's own mount, as a task writes its report: on the NFS tier the
            // function's client must still see the new name at its next run (it opens the
            // directory, which asks the server), or it would move files the report holds.
            let file = report_file(self.views.client(CLIENTS), &client);
            self.stats
                .silent_written
                .insert(client.clone(), Instant::now());
            rewrite_report(
                &file,
                &report_of(&client, &list, vec![1, 2], "soak: silent"),
                unix_now(),
            );
            let until = self.step + 1 + rng.below(SILENT_STEPS);
            said.push(format!(
                "a client on {} goes silent until #{until}",
                list.label()
            ));
            *self.stats.actors.entry("silent").or_default() += 1;
            self.actors.push(Actor::Silent { list, file, until });
        }
    }

    /// Sometimes, on a version 1 list, a router that reads version 1 only starts, reporting
    /// the published list.
    fn maybe_start_old_router(&mut self, rng: &mut Rng, said: &mut Vec<String>) {
        // Once every live client reads version 3 the list takes it, and a router reading
        // version 1 only can never join again: the first step starts one, as a fleet still
        // upgrading its routers has.
        let per_mille = match self.step {
            1 => 1000,
            _ => OLD_ROUTER_PER_MILLE,
        };
        if !self.old_router_live()
            && self.published.form() == 1
            && rng.chance(per_mille)
            && (self.step == 1 || !self.quiet())
        {
            let client = format!("{:016x}", rng.next());
            let file = report_file(&self.views.function, &client);
            let report = report_of(
                &client,
                &self.published,
                vec![1],
                "soak: a version 1 router",
            );
            rewrite_report(&file, &report, unix_now());
            // The first one lives long enough for runs to begin beside it (about one in five
            // steps runs the function).
            let least = match self.step {
                1 => 40,
                _ => 5,
            };
            let until = self.step + least + rng.below(OLD_ROUTER_STEPS);
            said.push(format!(
                "a router reading version 1 only starts, until #{until}"
            ));
            *self.stats.actors.entry("old router").or_default() += 1;
            self.actors.push(Actor::OldRouter {
                client,
                file,
                until,
            });
        }
    }

    /// A task started with RunTask: ECS lists it in its family, and its router reports the
    /// list published now.
    async fn start_standalone(&mut self, rng: &mut Rng) -> Result<String, String> {
        let (out, met) = self.run_task().await?;
        let task = out
            .tasks()
            .first()
            .and_then(|t| t.task_arn())
            .and_then(|arn| arn.rsplit('/').next())
            .ok_or("RunTask answered no task")?
            .to_string();
        let published = self.published.clone();
        hand(
            "a standalone task",
            &efs_router::reporter::READS,
            &published,
        )?;
        let options = Reporting {
            parameter_version: Some(published.version),
            label: Some(format!("soak standalone task {task}")),
            ..Reporting::default()
        };
        let router = Router::reporting(
            &published.text,
            Layout::single_mount(self.views.client(CLIENTS)),
            options,
        )
        .map_err(|e| format!("a standalone task's router on {}: {e}", published.label()))?;
        let until = self.step + 5 + rng.below(STANDALONE_STEPS);
        *self.stats.actors.entry("standalone").or_default() += 1;
        self.actors.push(Actor::Standalone {
            client: Client {
                list: published.clone(),
                router,
            },
            task: task.clone(),
            until,
        });
        Ok(format!(
            "RunTask{met}: a standalone task {task} starts on {}, until #{until}",
            published.label()
        ))
    }

    /// RunTask of a standalone task, meeting the fault a run left for it or one drawn now
    /// (apart, so the actors' draws stay as they were): the harness calls again, a few times,
    /// after each error or a call that hangs. Answers the task and what it met, for the log.
    async fn run_task(
        &mut self,
    ) -> Result<(aws_sdk_ecs::operation::run_task::RunTaskOutput, String), String> {
        let mut rng = Rng::for_step(self.seed ^ 0x7A5C, self.step);
        let fault = self.run_task_fault.take().or_else(|| {
            rng.chance(RUN_TASK_FAULT_PER_MILLE)
                .then(|| match rng.below(3) {
                    0 => Fault::Throttle("RunTask", 1 + rng.index(3)),
                    1 => Fault::ServerError("RunTask", *rng.pick(&[500, 503]), 1 + rng.index(3)),
                    _ => Fault::Stall("RunTask", 1),
                })
        });
        let proxy = &self.tb.proxy;
        match &fault {
            Some(Fault::Throttle(op, k)) => proxy.throttle(op, *k),
            Some(Fault::ServerError(op, status, k)) => proxy.server_error(op, *status, *k),
            Some(Fault::Stall(op, k)) => proxy.stall(op, *k),
            _ => {}
        }
        let faulted_before = proxy.faulted("RunTask");
        let mut tries = 0;
        let out = loop {
            tries += 1;
            let call = self
                .ecs
                .run_task()
                .cluster(&self.tb.world.cluster)
                .task_definition(STANDALONE_FAMILY)
                .launch_type(aws_sdk_ecs::types::LaunchType::Fargate)
                .send();
            let error = match tokio::time::timeout(Duration::from_secs(2), call).await {
                Ok(Ok(out)) => break out,
                Ok(Err(e)) => format!("{e:?}"),
                Err(_) => "no answer within 2 s".to_string(),
            };
            if tries == RUN_TASK_TRIES {
                return Err(format!("RunTask, {tries} calls with {fault:?}: {error}"));
            }
            self.stats.run_task_retries += 1;
        };
        proxy.clear_faults();
        let Some(fault) = fault.filter(|_| proxy.faulted("RunTask") > faulted_before) else {
            return Ok((out, String::new()));
        };
        // The harness's call, not the function's: counted apart from the faults it met.
        *self.stats.harness_faults.entry(fault.name()).or_default() += 1;
        Ok((out, format!(" (met {fault:?}, {tries} call(s))")))
    }

    /// Whether this step is a rebalance, as `one_step` and `function_step` will draw it (from
    /// a generator of their own: nothing is taken from theirs).
    fn rebalance_next(&self) -> bool {
        let mut rng = Rng::for_step(self.seed, self.step);
        rng.below(1000) < 120 && rng.chance(self.rebalance_per_mille())
    }

    /// How often a function run is a rebalance: most once ECS shows no rollout held, so that
    /// passes end, clean ones are recorded, and later ones compare against the shards added
    /// since (issue 29); a held rebalance walks nothing.
    fn rebalance_per_mille(&self) -> u64 {
        if self.tb.proxy.rolling_services().is_empty() {
            REBALANCE_SETTLED_PER_MILLE
        } else {
            300
        }
    }

    /// An actor's end: a stopping task stops, a silent client's report outlives its lifetime,
    /// an old router stops (removing its report, as a router does).
    fn end(&mut self, actor: Actor) -> String {
        match actor {
            Actor::Stopping { client, .. } => {
                let line = format!("a stopping task on {} is STOPPED", client.list.label());
                drop(client);
                line
            }
            Actor::Silent { list, file, .. } => {
                age_report(&file);
                format!(
                    "the silent client on {}: its report is past its lifetime",
                    list.label()
                )
            }
            Actor::OldRouter { file, .. } => {
                let _ = fs::remove_file(&file);
                "the version 1 router stops".to_string()
            }
            Actor::Unreported { client, task, .. } => {
                let id = task_id(&task).to_string();
                let replaced = !self.service_running().contains(&task);
                self.tb.proxy.stop_task(&id);
                self.unreported_ended = true;
                let how = if replaced {
                    "was replaced by a deployment"
                } else {
                    "stops"
                };
                drop(client);
                format!("the task {id} of a router that writes no report {how}")
            }
            Actor::Standalone { client, task, .. } => {
                self.tb.proxy.stop_task(&task);
                let line = format!(
                    "the standalone task {task} on {} is STOPPED",
                    client.list.label()
                );
                drop(client);
                line
            }
        }
    }

    /// When a rollout replaces client `i` by `new`: the old one goes on as a stopping task
    /// sometimes (drawn apart, so the step's own draws stay as they were).
    fn replace_client(&mut self, i: usize, new: Client, rng: &mut Rng) {
        let old = std::mem::replace(&mut self.clients[i], new);
        self.lagging.remove(&i);
        if self.phase != Phase::Healing && rng.chance(STOPPING_PER_MILLE) && !self.quiet() {
            let until = self.step + 1 + rng.below(STOPPING_STEPS);
            *self.stats.actors.entry("stopping").or_default() += 1;
            self.log.push(format!(
                "   client {i}'s old task on {} stops until #{until}",
                old.list.label()
            ));
            self.actors.push(Actor::Stopping { client: old, until });
        }
    }

    /// Ends every actor: the end of the soak, which must settle.
    fn end_actors(&mut self) {
        for a in std::mem::take(&mut self.actors) {
            let line = self.end(a);
            self.log.push(format!("   {line}"));
        }
        self.lagging.clear();
    }

    fn lists_in_use(&self) -> String {
        let versions: BTreeSet<i64> = self.clients.iter().map(|c| c.list.version).collect();
        let v: Vec<String> = versions.iter().map(|v| format!("v{v}")).collect();
        v.join(",")
    }

    fn fail(&self, what: &str) -> ! {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "\nSOAK FAILED: seed {} (0x{:x}), step {} of {}: {what}",
            self.seed, self.seed, self.step, self.steps
        );
        let _ = writeln!(
            out,
            "reproduce: make {} SEED={} STEPS={} ({})",
            self.make_target(),
            self.seed,
            self.steps,
            self.views.label()
        );
        let _ = writeln!(
            out,
            "published {}; clients on {}; rollouts held: {:?}",
            self.published.label(),
            self.lists_in_use(),
            self.tb.proxy.rolling_services()
        );
        let _ = writeln!(out, "--- step log (seed {}) ---", self.seed);
        for line in &self.log {
            let _ = writeln!(out, "{line}");
        }
        let _ = writeln!(
            out,
            "--- end of step log; the last function run ---\n{}",
            self.last_run
        );
        panic!("{out}");
    }

    // ------------------------------------------------------------------------- the co-tenant

    /// Before each step, after the clients ECS does not show: the co-tenant removes what is
    /// due, then, drawn from a generator of its own (so the step's own draws stay as they
    /// were), does one thing.
    fn hostile_step(&mut self) -> Result<Option<String>, String> {
        let mut said = Vec::new();
        let step = self.step;
        let (due, live): (Vec<Planted>, Vec<Planted>) = std::mem::take(&mut self.hostile.planted)
            .into_iter()
            .partition(|p| p.until <= step);
        self.hostile.planted = live;
        for p in &due {
            self.hostile.remove(p);
        }
        if !due.is_empty() {
            let what: BTreeSet<&str> = due.iter().map(|p| p.what).collect();
            said.push(format!("removes {} entries ({what:?})", due.len()));
        }
        let mut swaps = Rng::for_step(self.seed ^ 0x5A9_5A90, step);
        for i in 0..self.hostile.planted.len() {
            if self.hostile.planted[i].swap_at.is_some_and(|at| at <= step) {
                self.hostile.planted[i].swap_at = None;
                let n = self.hostile.fresh();
                if let Some(line) = self.hostile_swap_now(&mut swaps, i, n)? {
                    said.push(line);
                }
            }
        }
        let mut rng = Rng::for_step(self.seed ^ 0x4057_11E0, step);
        if self.phase != Phase::Healing && rng.chance(HOSTILE_PER_MILLE) {
            let (kind, ..) = HOSTILE_KINDS[rng.index(HOSTILE_KINDS.len())];
            if !self.hostile.skip.contains(kind) {
                let line = match kind {
                    "link" => self.hostile_link(&mut rng),
                    "report" => self.hostile_report(&mut rng),
                    "junk" => self.hostile_junk(&mut rng),
                    "private" => self.hostile_private(&mut rng),
                    _ => self.hostile_non_utf8(&mut rng),
                }?;
                said.push(line);
            }
        }
        Ok((!said.is_empty()).then(|| said.join("; ")))
    }

    /// Records an entry planted now, living as its place allows (`long`: it holds no drain
    /// wherever it is), and counts the action.
    fn hostile_plant(&mut self, rng: &mut Rng, what: &'static str, spot: Spot, long: bool) -> u64 {
        let holds_moves = matches!(spot, Spot::Reports { .. }) && !long;
        let in_first = matches!(&spot, Spot::Shard { root, .. } if root == "/");
        let until = match self.phase {
            Phase::WindingDown if !in_first => self.step + 1 + rng.below(HOSTILE_WIND_DOWN_STEPS),
            _ if holds_moves => self.step + 1 + rng.below(HOSTILE_REPORT_STEPS),
            Phase::Main if (long || in_first) && rng.chance(HOSTILE_LONG_PER_MILLE) => {
                let (lo, hi) = HOSTILE_LONG_STEPS;
                self.step + lo + rng.below(hi - lo)
            }
            _ => self.step + 1 + rng.below(HOSTILE_STEPS),
        };
        *self.stats.hostile.entry(what).or_default() += 1;
        self.hostile.planted.push(Planted {
            spot,
            what,
            until,
            holds: Holds::Nothing,
            own_dir: false,
            away: None,
            swap_at: None,
            client: None,
        });
        until
    }

    /// A listed shard whose watched directory exists, to plant in.
    fn hostile_shard(&self, rng: &mut Rng) -> Option<String> {
        let roots: Vec<String> = self
            .published
            .roots()
            .into_iter()
            .filter(|r| is_real_dir(&self.hostile.watched(r)))
            .collect();
        (!roots.is_empty()).then(|| rng.pick(&roots).clone())
    }

    /// Where in the shard at `root` to plant: its watched directory, a directory of the
    /// co-tenant's own there, or one of the clients' nested directories.
    fn hostile_spot_dir(&self, rng: &mut Rng, root: &str) -> PathBuf {
        let watched = self.hostile.watched(root);
        let mut options = vec![PathBuf::new()];
        for p in &self.hostile.planted {
            if let Spot::Shard { root: r, within } = &p.spot {
                if r == root && p.own_dir && p.away.is_none() && is_real_dir(&watched.join(within))
                {
                    options.push(within.clone());
                }
            }
        }
        for b in 0..3 {
            for nested in [format!("batch-{b}"), format!("batch-{b}/late")] {
                if is_real_dir(&watched.join(&nested)) {
                    options.push(PathBuf::from(nested));
                }
            }
        }
        rng.pick(&options).clone()
    }

    /// A link target for a link at `within` below the watched directory of `root`: another
    /// listed shard's watched directory (or the victims', when there is none), relative to it.
    fn hostile_other_shard(&self, rng: &mut Rng, root: &str, within: &Path) -> (PathBuf, String) {
        let others: Vec<String> = self
            .published
            .roots()
            .into_iter()
            .filter(|r| r != root)
            .collect();
        let target = if others.is_empty() {
            PathBuf::from(hostile::VICTIMS)
        } else {
            Path::new(rng.pick(&others).trim_start_matches('/')).join(WATCH_DIR)
        };
        let at = Path::new(root.trim_start_matches('/'))
            .join(WATCH_DIR)
            .join(within);
        let label = target.display().to_string();
        (hostile::relative_target(&at, &target), label)
    }

    /// Links: to another shard's watched directory, to the victims' directory or one victim,
    /// to the reports' directory; a directory of its own (with its files); one of those swapped
    /// for a link between steps.
    fn hostile_link(&mut self, rng: &mut Rng) -> Result<String, String> {
        let Some(root) = self.hostile_shard(rng) else {
            return Ok("no shard to plant a link in".into());
        };
        let n = self.hostile.fresh();
        let watched = self.hostile.watched(&root);
        let choice = rng.below(6);
        if choice == 5 {
            if let Some(line) = self.hostile_swap_between_steps(rng, n)? {
                return Ok(line);
            }
        }
        if choice >= 4 {
            let within = PathBuf::from(format!("{}d-{n}", hostile::PREFIX));
            let files = 1 + rng.below(hostile::OWN_FILES);
            let made = hostile::own_dir(&watched.join(&within), files, &format!("dir {n}"));
            if let Some(line) = spot_gone(&made, &root) {
                return Ok(line);
            }
            made.map_err(|e| format!("the co-tenant's directory: {e}"))?;
            let spot = Spot::Shard {
                root: root.clone(),
                within: within.clone(),
            };
            let until = self.hostile_plant(rng, "link: a directory of its own", spot, false);
            // Asked to swap one and it had none: this one, once the function may have seen it.
            let swap_at = (choice == 5).then(|| self.step + 1 + rng.below(3));
            if let Some(p) = self.hostile.planted.last_mut() {
                p.own_dir = true;
                p.swap_at = swap_at;
                p.until = p.until.max(swap_at.map_or(0, |at| at + 1));
            }
            let until = self.hostile.planted.last().map_or(until, |p| p.until);
            return Ok(format!(
                "makes a directory of its own {} in {root} with {files} files, until #{until}{}",
                within.display(),
                swap_at.map_or(String::new(), |at| format!(", to swap for a link at #{at}"))
            ));
        }
        let dir = self.hostile_spot_dir(rng, &root);
        let (name, what) = match choice {
            0 => (
                format!("{}l-{n}", hostile::PREFIX),
                "link: to another shard",
            ),
            1 => (format!("{}l-{n}", hostile::PREFIX), "link: to the victims"),
            2 => (
                format!("{}l-{n}.json", hostile::PREFIX),
                "link: to a victim file",
            ),
            _ => (format!("{}l-{n}", hostile::PREFIX), "link: to the reports"),
        };
        let within = dir.join(&name);
        let at = Path::new(root.trim_start_matches('/'))
            .join(WATCH_DIR)
            .join(&within);
        let (target, label) = match choice {
            0 => self.hostile_other_shard(rng, &root, &within),
            1 => (
                hostile::relative_target(&at, Path::new(hostile::VICTIMS)),
                hostile::VICTIMS.to_string(),
            ),
            2 => {
                let victims = self.hostile.victims.files();
                let victim = rng.pick(&victims).clone();
                (
                    hostile::relative_target(&at, &victim),
                    victim.display().to_string(),
                )
            }
            _ => (
                hostile::relative_target(&at, Path::new(efs_router::report::DIR)),
                efs_router::report::DIR.to_string(),
            ),
        };
        let made = std::os::unix::fs::symlink(&target, watched.join(&within));
        if let Some(line) = spot_gone(&made, &dir.display().to_string()) {
            return Ok(line);
        }
        made.map_err(|e| format!("the co-tenant's link {}: {e}", within.display()))?;
        let spot = Spot::Shard {
            root: root.clone(),
            within: within.clone(),
        };
        let until = self.hostile_plant(rng, what, spot, false);
        Ok(format!(
            "links {} in {root} to {label}, until #{until}",
            within.display()
        ))
    }

    /// A real directory of its own in a listed shard, by its index among the planted.
    fn hostile_swappable(&self) -> Vec<usize> {
        let listed = self.published.roots();
        self.hostile
            .planted
            .iter()
            .enumerate()
            .filter(|(_, p)| p.own_dir && p.away.is_none())
            .filter(|(_, p)| match &p.spot {
                Spot::Shard { root, within } => {
                    listed.contains(root) && is_real_dir(&self.hostile.watched(root).join(within))
                }
                Spot::Reports { .. } => false,
            })
            .map(|(i, _)| i)
            .collect()
    }

    /// What a swap of the directory of its own `i` for a link puts where: the directory, its
    /// name while away, the link's target (the victims', or another shard's watched directory).
    fn hostile_swap(&self, rng: &mut Rng, i: usize, n: u64) -> Option<(hostile::Swap, PathBuf)> {
        let Spot::Shard { root, within } = &self.hostile.planted[i].spot else {
            return None;
        };
        let name = within.file_name()?.to_string_lossy().into_owned();
        let away = within.with_file_name(format!("{name}.away-{n}"));
        let watched = self.hostile.watched(root);
        let target = if rng.chance(700) {
            let at = Path::new(root.trim_start_matches('/'))
                .join(WATCH_DIR)
                .join(within);
            hostile::relative_target(&at, Path::new(hostile::VICTIMS))
        } else {
            self.hostile_other_shard(rng, root, within).0
        };
        let swap = hostile::Swap {
            dir: watched.join(within),
            away: watched.join(&away),
            target,
        };
        Some((swap, away))
    }

    /// Swaps a directory of its own for a link, between steps; `None` when it has none.
    fn hostile_swap_between_steps(
        &mut self,
        rng: &mut Rng,
        n: u64,
    ) -> Result<Option<String>, String> {
        let swappable = self.hostile_swappable();
        if swappable.is_empty() {
            return Ok(None);
        }
        let i = *rng.pick(&swappable);
        self.hostile_swap_now(rng, i, n)
    }

    /// Swaps the directory of its own `i` for a link, between steps; `None` when it is not
    /// a real directory in a listed shard any more.
    fn hostile_swap_now(
        &mut self,
        rng: &mut Rng,
        i: usize,
        n: u64,
    ) -> Result<Option<String>, String> {
        if !self.hostile_swappable().contains(&i) {
            return Ok(None);
        }
        let Some((swap, away)) = self.hostile_swap(rng, i, n) else {
            return Ok(None);
        };
        hostile::swap_for_link(&swap.dir, &swap.away, &swap.target)
            .map_err(|e| format!("the co-tenant's swap of {}: {e}", swap.dir.display()))?;
        *self
            .stats
            .hostile
            .entry("link: swapped between steps")
            .or_default() += 1;
        let p = &mut self.hostile.planted[i];
        p.away = Some(away);
        Ok(Some(format!(
            "swaps {} for a link to {}",
            swap.dir.display(),
            swap.target.display()
        )))
    }

    /// A report of a client that does not exist, dated far in the future (its `written_at`,
    /// its file's mtime, or both), of the published list or of one nobody published.
    fn hostile_report(&mut self, rng: &mut Rng) -> Result<String, String> {
        let n = self.hostile.fresh();
        let client = format!("{:016x}", rng.next());
        let text = if rng.chance(500) {
            self.published.text.clone()
        } else {
            format!("{{\"mount_targets\":[],\"hostile\":{n}}}")
        };
        let reads = if rng.chance(800) { vec![1, 2] } else { vec![1] };
        let now = hostile::unix_now();
        let ahead = hostile::years_ahead(10);
        let (written_at, mtime) = match rng.below(3) {
            0 => (ahead, now),
            1 => (now, ahead),
            _ => (u64::MAX, hostile::years_ahead(80)),
        };
        fs::create_dir_all(&self.hostile.reports).map_err(|e| format!("the reports: {e}"))?;
        let name = format!("{client}.json");
        hostile::write_report(
            &self.hostile.reports.join(&name),
            &client,
            &text,
            reads.clone(),
            written_at,
            UNIX_EPOCH + Duration::from_secs(mtime),
        )
        .map_err(|e| format!("the co-tenant's report: {e}"))?;
        let current = text == self.published.text;
        let spot = Spot::Reports { name: name.into() };
        let until = self.hostile_plant(rng, "report: future-dated", spot, false);
        if let Some(p) = self.hostile.planted.last_mut() {
            p.holds = Holds::List(text);
            p.client = Some(client.clone());
        }
        Ok(format!(
            "reports as client {client} ({}, reads {reads:?}), written at {written_at}, mtime {mtime}, until #{until}",
            if current { "the published list" } else { "a list nobody published" }
        ))
    }

    /// Junk in the reports' directory: directories (one named like a report), files that are
    /// not JSON (one named like a report), `.tmp` names, oversize files (one named like a
    /// report), a link or a FIFO named like a report.
    fn hostile_junk(&mut self, rng: &mut Rng) -> Result<String, String> {
        let n = self.hostile.fresh();
        let dir = self.hostile.reports.clone();
        fs::create_dir_all(&dir).map_err(|e| format!("the reports: {e}"))?;
        let like_report = format!("{:016x}.json", rng.next());
        let hex = format!("{:016x}", rng.next());
        let now = SystemTime::now();
        let own = |path: &Path| hostile::write_own(path, &format!("junk {n}"));
        let r = rng.below(10);
        let (name, what, holds) = match r {
            0 => (
                format!("{}junk-{n}", hostile::PREFIX),
                "junk: a subdirectory",
                Holds::Nothing,
            ),
            1 => (like_report, "junk: a subdirectory", Holds::Nothing),
            2 => (
                format!("{}notes-{n}.txt", hostile::PREFIX),
                "junk: not JSON",
                Holds::Nothing,
            ),
            3 | 4 => (like_report, "junk: not JSON", Holds::Unreadable),
            5 => (
                format!(".efs-router-{hex}.tmp"),
                "junk: a .tmp name",
                Holds::Nothing,
            ),
            6 => (
                format!("{like_report}.tmp"),
                "junk: a .tmp name",
                Holds::Nothing,
            ),
            7 => (
                if rng.chance(500) {
                    like_report
                } else {
                    format!("{}big-{n}.bin", hostile::PREFIX)
                },
                "junk: oversize",
                Holds::Nothing,
            ),
            _ => (
                like_report,
                "junk: a link or FIFO named like a report",
                Holds::Unreadable,
            ),
        };
        let path = dir.join(&name);
        let done = match r {
            0 | 1 => fs::create_dir(&path).and_then(|()| own(&path.join("inside.json"))),
            2 => own(&path),
            3 | 4 => {
                // Changed now, or dated far back: then no client, and the function may remove it.
                fs::write(&path, b"{ not json").and_then(|()| {
                    if r == 4 {
                        hostile::set_mtime(&path, now - Duration::from_secs(2 * 3600))
                    } else {
                        hostile::set_mtime(&path, now + Duration::from_secs(10 * 365 * 86400))
                    }
                })
            }
            5 | 6 => {
                if rng.chance(300) {
                    fs::create_dir(&path).and_then(|()| own(&path.join("inside.json")))
                } else {
                    own(&path)
                }
            }
            7 => fs::write(&path, vec![b' '; 5000 + rng.index(300_000)]),
            _ => {
                if rng.chance(500) {
                    let victims = self.hostile.victims.files();
                    let victim = rng.pick(&victims).clone();
                    let at = Path::new(efs_router::report::DIR).join(&name);
                    std::os::unix::fs::symlink(hostile::relative_target(&at, &victim), &path)
                } else {
                    hostile::fifo(&path)
                }
            }
        };
        done.map_err(|e| format!("the co-tenant's junk {name}: {e}"))?;
        // A file named like a report changed now is a client; an oversize one too.
        let holds = match r {
            4 => Holds::Nothing,
            7 if name.ends_with(".json") => Holds::Unreadable,
            _ => holds,
        };
        let spot = Spot::Reports {
            name: name.clone().into(),
        };
        let until = self.hostile_plant(rng, what, spot, holds == Holds::Nothing);
        if let Some(p) = self.hostile.planted.last_mut() {
            p.holds = holds.clone();
        }
        Ok(format!(
            "puts {name} among the reports ({what}; {holds:?}), until #{until}"
        ))
    }

    /// Private-looking names in a shard, with its own content: a `.moving` directory (its
    /// files, and a link to the victims), a `.moving` file, a `.tmp` file.
    fn hostile_private(&mut self, rng: &mut Rng) -> Result<String, String> {
        let Some(root) = self.hostile_shard(rng) else {
            return Ok("no shard to plant a private name in".into());
        };
        let n = self.hostile.fresh();
        let dir = self.hostile_spot_dir(rng, &root);
        let watched = self.hostile.watched(&root);
        let hex = format!("{:016x}", rng.next());
        let tag = format!("private {n}");
        let (name, what) = match rng.below(3) {
            0 => (
                format!(".efs-router-{hex}.moving"),
                "private: a .moving directory",
            ),
            1 => (
                format!(".efs-router-{hex}.moving"),
                "private: a .moving file",
            ),
            _ => (format!(".efs-router-{hex}.tmp"), "private: a .tmp file"),
        };
        let within = dir.join(&name);
        let path = watched.join(&within);
        let mut inside = Vec::new();
        let made = if what == "private: a .moving directory" {
            fs::create_dir(&path).and_then(|()| {
                for k in 0..1 + rng.below(3) {
                    let file = format!("{}m-{n}-{k}.json", hostile::PREFIX);
                    hostile::write_own(&path.join(&file), &tag)?;
                    inside.push(file);
                }
                if rng.chance(500) {
                    let link = format!("{}ml-{n}", hostile::PREFIX);
                    let at = Path::new(root.trim_start_matches('/'))
                        .join(WATCH_DIR)
                        .join(&within)
                        .join(&link);
                    std::os::unix::fs::symlink(
                        hostile::relative_target(&at, Path::new(hostile::VICTIMS)),
                        path.join(&link),
                    )?;
                    inside.push(link);
                }
                Ok(())
            })
        } else {
            hostile::write_own(&path, &tag)
        };
        if let Some(line) = spot_gone(&made, &dir.display().to_string()) {
            return Ok(line);
        }
        made.map_err(|e| format!("the co-tenant's {}: {e}", within.display()))?;
        // A `.moving` file is never taken away (it may be a version's only copy): it holds a
        // drain as long as it lives. A `.tmp` file holds nothing, and a `.moving` directory is
        // given back once abandoned.
        let long = what != "private: a .moving file";
        let spot = Spot::Shard {
            root: root.clone(),
            within: within.clone(),
        };
        let until = self.hostile_plant(rng, what, spot, long);
        // What a give-back leaves beside it goes with it.
        for file in &inside {
            self.hostile.planted.push(Planted {
                spot: Spot::Shard {
                    root: root.clone(),
                    within: dir.join(file),
                },
                what: "(given back)",
                until,
                holds: Holds::Nothing,
                own_dir: false,
                away: None,
                swap_at: None,
                client: None,
            });
        }
        Ok(format!(
            "plants {} in {root} ({what}, {inside:?} inside), until #{until}",
            within.display()
        ))
    }

    /// Names that are not UTF-8 in a shard: a file, or a directory with files of its own.
    fn hostile_non_utf8(&mut self, rng: &mut Rng) -> Result<String, String> {
        let Some(root) = self.hostile_shard(rng) else {
            return Ok("no shard to plant a name that is not UTF-8 in".into());
        };
        let n = self.hostile.fresh();
        let dir = self.hostile_spot_dir(rng, &root);
        let watched = self.hostile.watched(&root);
        let (name, what) = if rng.chance(500) {
            (hostile::non_utf8(&format!("{n}.json")), "non-UTF-8: a file")
        } else {
            (
                hostile::non_utf8(&format!("d-{n}")),
                "non-UTF-8: a directory",
            )
        };
        let within = dir.join(&name);
        let path = watched.join(&within);
        let tag = format!("non-UTF-8 {n}");
        let made = if what == "non-UTF-8: a file" {
            hostile::write_own(&path, &tag)
        } else {
            hostile::own_dir(&path, 1 + rng.below(3), &tag)
        };
        if let Some(line) = spot_gone(&made, &dir.display().to_string()) {
            return Ok(line);
        }
        made.map_err(|e| format!("the co-tenant's {}: {e}", within.display()))?;
        let spot = Spot::Shard {
            root: root.clone(),
            within: within.clone(),
        };
        let until = self.hostile_plant(rng, what, spot, false);
        Ok(format!(
            "plants {} in {root} ({what}), until #{until}",
            within.to_string_lossy()
        ))
    }

    /// A directory of its own swapped for a link and back while the run walks, sometimes:
    /// the swap's thread, and what it is done with.
    fn swap_in_run(&mut self) -> Option<SwapRun> {
        if self.phase == Phase::Healing || self.hostile.skip.contains("link") {
            return None;
        }
        let mut rng = Rng::for_step(self.seed ^ 0x5A9_0000, self.step);
        if !rng.chance(SWAP_PER_MILLE) {
            return None;
        }
        let swappable = self.hostile_swappable();
        if swappable.is_empty() {
            return None;
        }
        let i = *rng.pick(&swappable);
        let n = self.hostile.fresh();
        let (swap, away) = self.hostile_swap(&mut rng, i, n)?;
        let pauses = (0..8)
            .map(|_| Duration::from_micros(rng.below(20_000)))
            .collect();
        let done = Arc::new(AtomicBool::new(false));
        let thread = hostile::swap_beside(swap, pauses, done.clone());
        Some(SwapRun {
            index: i,
            away,
            done,
            thread,
        })
    }

    /// The swap beside a run ends: where the directory is now, and what it did, for the log.
    fn swap_ends(&mut self, swap: Option<SwapRun>) -> Option<String> {
        let swap = swap?;
        swap.done.store(true, Ordering::Release);
        let swapped = swap.thread.join().expect("the co-tenant's swaps");
        self.stats.swaps_in_runs += swapped.flips;
        if swapped.flips > 0 {
            *self
                .stats
                .hostile
                .entry("link: swapped during a run")
                .or_default() += 1;
        }
        let p = &mut self.hostile.planted[swap.index];
        if swapped.swapped {
            p.away = Some(swap.away);
        }
        let Spot::Shard { root, within } = &p.spot else {
            return None;
        };
        Some(format!(
            "the co-tenant swapped {} in {root} {} times, ending {}",
            within.display(),
            swapped.flips,
            if swapped.swapped {
                "a link"
            } else {
                "its directory"
            }
        ))
    }

    /// The wind-down: what the co-tenant has outside the first shard goes within a few
    /// steps, so that every drain can end.
    fn hostile_winds_down(&mut self) {
        let last = self.step + HOSTILE_WIND_DOWN_STEPS;
        for p in &mut self.hostile.planted {
            if p.root() != Some("/") {
                p.until = p.until.min(last);
            }
        }
    }

    /// The end: the co-tenant removes all it has.
    fn hostile_ends(&mut self) {
        let planted = std::mem::take(&mut self.hostile.planted);
        for p in &planted {
            self.hostile.remove(p);
        }
        self.log.push(format!(
            "   the co-tenant removes its {} entries",
            planted.len()
        ));
    }

    /// The private names of the co-tenant's on disk, as the checks see them.
    fn hostile_privates(&self) -> Vec<PathBuf> {
        self.hostile
            .planted
            .iter()
            .filter_map(|p| match &p.spot {
                Spot::Shard { root, within } if is_private(&within.to_string_lossy()) => Some(
                    root_dir(&self.views.truth, root)
                        .join(WATCH_DIR)
                        .join(within),
                ),
                _ => None,
            })
            .filter(|p| fs::symlink_metadata(p).is_ok())
            .collect()
    }

    // ------------------------------------------------------------------------- the loop

    async fn run(&mut self) {
        println!(
            "soak: seed {} (0x{:x}), {} steps on {}; reproduce with `make {} SEED={} STEPS={}`",
            self.seed,
            self.seed,
            self.steps,
            self.views.label(),
            self.make_target(),
            self.seed,
            self.steps
        );
        for step in 1..=self.steps {
            self.step_once(step).await;
        }
        self.wind_down().await;
        self.phase = Phase::Healing;
        if let Err(e) = self.heal().await {
            self.fail(&e);
        }
        self.assert_nothing_forgotten().await;
        if std::env::var_os("SOAK_LOG").is_some_and(|v| !v.is_empty()) {
            for line in &self.log {
                println!("{line}");
            }
        }
        self.summary();
        self.assert_statistics();
    }

    /// Step `step`: the clients ECS does not show, then one step, then the checks.
    async fn step_once(&mut self, step: u64) {
        self.step = step;
        // Counted for the kill only: the wind-down's quiet is its own bound's.
        self.stats.quiet_steps += usize::from(self.kill_owed());
        // A budget of its own (`SOAK_DEADLINE_SECS`, below the VM's limit on the tier): past
        // it the soak fails with its step log, rather than be killed with nothing to show.
        let budget = env_number("SOAK_DEADLINE_SECS", 0);
        if budget > 0 && self.started.elapsed() >= Duration::from_secs(budget) {
            self.log.push(format!("#{step} not started: out of time"));
            self.fail(&format!(
                "out of time: {:.0} s spent, SOAK_DEADLINE_SECS={budget}, before step {step} ({:?})",
                self.started.elapsed().as_secs_f64(),
                self.phase
            ));
        }
        match self.actors_step().await {
            Ok(Some(line)) => self.log.push(format!("#{step} (not in ECS) {line}")),
            Ok(None) => {}
            Err(e) => {
                self.log.push(format!("#{step} FAILED"));
                self.fail(&e);
            }
        }
        match self.hostile_step() {
            Ok(Some(line)) => self.log.push(format!("#{step} (co-tenant) {line}")),
            Ok(None) => {}
            Err(e) => {
                self.log.push(format!("#{step} FAILED"));
                self.fail(&e);
            }
        }
        let mut rng = Rng::for_step(self.seed, step);
        let outcome = self.one_step(&mut rng).await;
        match outcome {
            Ok(line) => self.log.push(format!("#{step} {line}")),
            Err(e) => {
                self.log.push(format!("#{step} FAILED"));
                self.fail(&e);
            }
        }
        if let Err(e) = self.check().await {
            self.fail(&e);
        }
    }

    /// After the main steps: the clients delete down to a few files, with faults, kills and
    /// the clients ECS does not show going on as before, until AWS has the one mount target it
    /// started with and the list one shard. That the function gets there is checked (within
    /// `WIND_DOWN_STEPS` and `WIND_DOWN_TIME`), and so is everything it does on the way.
    async fn wind_down(&mut self) {
        self.phase = Phase::WindingDown;
        self.log
            .push("wind-down: the clients delete down to a few files".into());
        self.hostile_winds_down();
        let first = self.steps + 1;
        let mut step = first;
        let started = Instant::now();
        while self.targets.len() > 1 || self.published.list.shard_count() > 1 {
            // Each kill within a move may hold a drain for `ABANDONED_AFTER`: the time runs from
            // the wind-down's start or the last such kill, whichever is later.
            let since = self
                .stats
                .last_within_a_move
                .map_or(started, |t| t.max(started));
            if step - first >= WIND_DOWN_STEPS && since.elapsed() >= WIND_DOWN_TIME {
                self.fail(&format!(
                    "the wind-down did not end in {WIND_DOWN_STEPS} steps and {WIND_DOWN_TIME:?}: {} counted files, AWS has {} mount targets, and the list is {}; targets the function created and no longer knows as its own: {:?}",
                    self.model.flat(),
                    self.targets.len(),
                    self.published.label(),
                    self.forgotten_targets().await
                ));
            }
            self.step_once(step).await;
            step += 1;
        }
        self.stats.wind_down_steps = step - first;
    }

    /// The targets the function created (the proxy saw it) that AWS still has, and that its
    /// state, as SSM holds it now, does not name as its own, or that neither the published list
    /// names nor the state drains: forgotten, kept for good.
    async fn forgotten_targets(&self) -> Vec<String> {
        let state = self.tb.world.state().await;
        let created = self.tb.proxy.created_mount_targets();
        let listed = self.published.list.shards();
        self.targets
            .iter()
            .map(|t| t.id.clone())
            .filter(|id| created.contains(id))
            .filter(|id| {
                let own = state["created"].get(id).is_some();
                let kept =
                    listed.iter().any(|t| t.id == *id) || state["draining"].get(id).is_some();
                !(own && kept)
            })
            .collect()
    }

    /// The end: every target the function created is deleted, or listed or draining and the
    /// function's own still. None is forgotten, whatever SSM's reads did.
    async fn assert_nothing_forgotten(&mut self) {
        let forgotten = self.forgotten_targets().await;
        if !forgotten.is_empty() {
            self.fail(&format!(
                "the function created {forgotten:?} and forgot it: AWS has it, and the state does not name it as the function's own, or neither the list nor a drain does (state {})",
                self.tb.world.state().await
            ));
        }
    }

    /// A soak of the default length or longer must have exercised what it is for: each
    /// statistic of [`REQUIRED`] above zero where that table says. (A shorter run reproduces a
    /// failure, and may not reach them.)
    fn assert_statistics(&self) {
        if self.steps < DEFAULT_STEPS {
            return;
        }
        let values: BTreeMap<&str, usize> = self
            .course_statistics()
            .into_iter()
            .chain(self.aws_statistics())
            .collect();
        let named: BTreeSet<&str> = values.keys().copied().collect();
        let required: BTreeSet<&str> = REQUIRED.iter().map(|r| r.name).collect();
        assert_eq!(
            named, required,
            "soak: the statistics counted are not REQUIRED's"
        );
        for r in REQUIRED {
            let given = r.given.is_none_or(|g| values[g] > 0);
            if !(r.applies(self.steps, self.views.tier, self.seed) && given) {
                continue;
            }
            assert!(
                values[r.name] > 0,
                "soak: seed {}, {} steps: no {}; the soak did not test what it is for",
                self.seed,
                self.steps,
                r.name
            );
        }
        let longest = self.tb.proxy.longest_parameter_value();
        assert!(
            longest <= SSM_VALUE_LIMIT,
            "soak: seed {}, {} steps: a parameter value of {longest} characters was written, past SSM's {SSM_VALUE_LIMIT}",
            self.seed,
            self.steps
        );
        self.assert_hostile_statistics();
    }

    /// The course's statistics, by their names in [`REQUIRED`]: what the function did, what
    /// the clients ECS shows and hides did, and the resumable rebalance.
    fn course_statistics(&self) -> Vec<(&'static str, usize)> {
        let s = &self.stats;
        let runs = |kind: &str| s.runs.get(kind).copied().unwrap_or(0);
        let actor = |kind: &str| s.actors.get(kind).copied().unwrap_or(0);
        let hidden = |kind: &str| s.hidden_writes.get(kind).copied().unwrap_or(0);
        vec![
            ("reconcile runs", runs("reconcile")),
            ("rebalance runs", runs("rebalance")),
            ("faults that fired", s.faults.values().sum()),
            ("runs killed", s.kills),
            ("kills among moves", s.kills_among_moves),
            // Judged on disk: a killed run took files from their place, with no answer to say so.
            (
                "killed runs that moved files, judged on disk (steered)",
                s.changed_on_disk.get("killed").copied().unwrap_or(0),
            ),
            // Inside the function's move phase: a private name of a move left on disk (issue 29).
            ("kills within a move (steered)", s.kills_within_a_move),
            ("targets created", s.created),
            ("drains", s.drains),
            ("targets deleted", s.deleted),
            ("checkpoints", s.checkpoints),
            ("abandoned names cleaned up", s.abandoned_removed as usize),
            (
                "paths deleted",
                s.client_ops.get("delete").copied().unwrap_or(0),
            ),
            ("deletes beside runs", s.deletes_beside_runs),
            (
                "deletes of copies in several shards",
                s.deletes_of_several_copies,
            ),
            ("silent clients", actor("silent")),
            ("silent clients named by a run", s.silent_named_after.len()),
            ("stopping tasks", actor("stopping")),
            ("clients whose refresh failed", actor("refresh failing")),
            ("routers reading version 1 only", actor("old router")),
            (
                "old-list writes by stopping tasks",
                hidden("a stopping task"),
            ),
            (
                "old-list writes by standalone tasks (steered)",
                hidden("a standalone task"),
            ),
            ("standalone tasks (steered)", actor("standalone")),
            (
                "lists published beside a version 1 router",
                s.published_beside_old_routers,
            ),
            ("runs held by reports alone", s.held_by_reports),
            ("runs beside a version 1 router", s.runs_beside_old_routers),
            ("version 3 lists with none open", s.v3_closed),
            ("version 3 lists with a placement open", s.v3_open),
            (
                "runs beside a task whose router writes no report (steered)",
                s.runs_beside_unreported,
            ),
            ("answers naming it unreported (steered)", s.unreported_named),
            ("steps of ECS stopping tasks", s.task_stop_steps),
            ("runs that moved once it was gone", s.unreported_released),
            (HELD_BY_TASKS_ALONE, s.held_by_tasks_alone),
            ("rebalances stopped by their cap", s.rebalances_stopped),
            ("rebalances resumed", s.rebalances_resumed),
            ("resumes in the last pass", s.final_pass_resumes),
            (
                "runs that announced new homes",
                count(&s.homes, "announced"),
            ),
            ("runs that switched homes", count(&s.homes, "switched")),
            ("readers' reads on an older list", s.oracle_reads_old_list),
            (
                "creates of a path written on another list",
                s.creates_across_lists,
            ),
            ("writes through a per-target layout", s.per_target_writes),
            ("writes by the app on plain paths (steered)", s.plain_writes),
            ("rewrites racing a move (steered)", s.rewrites_racing_moves),
            (
                "drains held by a cut-short move",
                s.drains_held_by_moves.min(s.private_copies.len()),
            ),
        ]
    }

    /// What AWS does that moto does not, as the proxy played it (`AwsWays`), and the faults
    /// that came with it, by their names in [`REQUIRED`].
    fn aws_statistics(&self) -> Vec<(&'static str, usize)> {
        let s = &self.stats;
        let played = self.tb.proxy.played();
        let play = |what: &str| played.get(what).copied().unwrap_or(0);
        let stale = self.tb.proxy.stale_reads();
        let stale_of = |name: &str| -> usize {
            let of = stale
                .iter()
                .filter(|((n, kind), _)| n == name && *kind == "previous version");
            of.map(|(_, n)| n).sum()
        };
        // The function's own calls only (RunTask is the harness's).
        let on = |op: &str| s.faulted_operations.get(op).copied().unwrap_or(0);
        vec![
            ("targets shown deleting", play("targets shown deleting")),
            (
                "describes showing a target deleting",
                play("describes showing a target deleting"),
            ),
            (
                "pages of mount targets with more to follow",
                play("DescribeMountTargets pages with more to follow"),
            ),
            (
                "pages of subnets with more to follow",
                play("DescribeSubnets pages with more to follow"),
            ),
            (
                "pages of tasks with more to follow",
                play("ListTasks pages with more to follow"),
            ),
            (
                "stopped tasks no longer shown",
                play("stopped tasks no longer shown"),
            ),
            (
                "stale reads of the state parameter",
                stale_of(support::world::STATE_PARAMETER_NAME),
            ),
            (
                "stale reads of the list parameter",
                stale_of(&self.tb.world.parameter_name),
            ),
            (
                "versioned reads that lagged a write",
                stale
                    .iter()
                    .filter(|((_, kind), _)| *kind == "version not found")
                    .map(|(_, n)| n)
                    .sum(),
            ),
            (
                "throttle bursts across services",
                s.faults.get("throttle burst").copied().unwrap_or(0),
            ),
            (
                "faults on ECS's task operations",
                on("ListTasks") + on("DescribeTasks"),
            ),
            ("faults on ListTasks", on("ListTasks")),
            ("faults on DescribeTasks", on("DescribeTasks")),
        ]
    }

    /// The co-tenant did each kind of thing (each of its actions in a run of
    /// `HOSTILE_ALL_STEPS` or more), and the function grew beside it.
    fn assert_hostile_statistics(&self) {
        let s = &self.stats;
        let done = |what: &str| s.hostile.get(what).copied().unwrap_or(0);
        for (kind, label, actions) in HOSTILE_KINDS {
            if self.hostile.skip.contains(*kind) {
                continue;
            }
            let n: usize = actions.iter().map(|a| done(a)).sum();
            assert!(
                n > 0,
                "soak: seed {}, {} steps: the co-tenant made no {label}",
                self.seed,
                self.steps
            );
            if self.steps >= HOSTILE_ALL_STEPS {
                for a in *actions {
                    assert!(
                        done(a) > 0,
                        "soak: seed {}, {} steps: the co-tenant never did {a:?}",
                        self.seed,
                        self.steps
                    );
                }
            }
        }
        if self.hostile.skip.len() < HOSTILE_KINDS.len() {
            assert!(
                s.growth_beside_hostile > 0,
                "soak: seed {}, {} steps: no run grew beside the co-tenant's entries",
                self.seed,
                self.steps
            );
        }
    }

    async fn one_step(&mut self, rng: &mut Rng) -> Step {
        let r = rng.below(1000);
        if r < 120 {
            self.function_step(rng).await
        } else if r < 170 {
            Ok(self.complete_rollouts())
        } else {
            self.client_step(rng)
        }
    }

    fn complete_rollouts(&mut self) -> String {
        let held = self.tb.proxy.rolling_services();
        self.tb.proxy.complete_rollouts();
        // The tasks ECS is stopping lag the rollout by a few steps (drawn apart); at the end,
        // none.
        if self.phase == Phase::Healing {
            self.stop_tasks_now();
        } else if self.tasks_stop_by.is_none() && !self.stopping_tasks().is_empty() {
            let mut lag = Rng::for_step(self.seed ^ 0x1A95, self.step);
            self.tasks_stop_by = Some(self.step + 1 + lag.below(TASK_STOP_LAG_STEPS));
        }
        let mut moved = 0;
        let mut lag = Vec::new();
        // Drawn apart, so that the step's own draws stay as they were.
        let mut rng = Rng::for_step(self.seed ^ 0x1A66, self.step);
        for i in 0..self.clients.len() {
            if self.clients[i].list.version == self.deployed.version
                || self.lagging.contains_key(&i)
            {
                continue;
            }
            if self.phase != Phase::Healing && rng.chance(LAGGING_PER_MILLE) && !self.quiet() {
                // Its refresh fails: it keeps its old list, and its report says so.
                let until = self.step + 1 + rng.below(LAGGING_STEPS);
                self.clients[i].router.note_refresh(false);
                self.lagging.insert(i, until);
                *self.stats.actors.entry("refresh failing").or_default() += 1;
                lag.push(i);
                continue;
            }
            let new = Client::reporting(&self.deployed, self.views.client(i), i);
            self.replace_client(i, new, &mut rng);
            moved += 1;
        }
        if held.is_empty() && moved == 0 && lag.is_empty() {
            return "rollouts: none held".to_string();
        }
        self.stats.rollouts_completed += 1;
        format!(
            "rollouts of {held:?} complete: {moved} old client(s) replaced, on {}; clients {lag:?} keep theirs (refresh failing)",
            self.deployed.label()
        )
    }

    // ------------------------------------------------------------------------- clients

    fn client_step(&mut self, rng: &mut Rng) -> Step {
        let flat = self.model.flat();
        if self.phase == Phase::WindingDown {
            // Deletes dominate to the end.
            self.model.shrinking = true;
        } else if !self.model.shrinking && flat >= self.model.high {
            self.model.shrinking = true;
            self.model.low = 2 + rng.index(7);
        } else if self.model.shrinking && flat <= self.model.low {
            self.model.shrinking = false;
            self.model.high = 25 + rng.index(26);
        }
        let c = rng.index(CLIENTS);
        let r = rng.below(100);
        // While clients run different lists, rewrites and reads of the same paths are where
        // versions can diverge between old and new homes: more of them then.
        let (write_new, rewrite, read) = match (self.model.shrinking, self.converged()) {
            (true, true) => (8, 18, 35),
            (false, true) => (65, 77, 92),
            (true, false) => (8, 30, 55),
            (false, false) => (45, 70, 92),
        };
        let live: Vec<String> = self.model.live.keys().cloned().collect();
        // Some writes of new paths and reads are `create`s, drawn apart: the one call for
        // check-then-write, which must find a path wherever another list's client put it.
        let create = Rng::for_step(self.seed ^ 0xC4EA7E, self.step).chance(CREATE_PER_MILLE);
        if live.is_empty() || r < write_new {
            let path = self.model.fresh_path(rng);
            if create {
                return self.create(c, &path);
            }
            *self.stats.client_ops.entry("write").or_default() += 1;
            return self.write(c, &path, "write");
        }
        let path = rng.pick(&live).clone();
        if create && r >= rewrite && r < read {
            return self.create(c, &path);
        }
        if r < rewrite {
            *self.stats.client_ops.entry("rewrite").or_default() += 1;
            self.write(c, &path, "rewrite")
        } else if r < read || (self.phase == Phase::WindingDown && live.len() <= WIND_DOWN_KEEPS) {
            *self.stats.client_ops.entry("read").or_default() += 1;
            self.read(c, &path)
        } else {
            *self.stats.client_ops.entry("delete").or_default() += 1;
            self.delete(c, &path)
        }
    }

    /// The router's `create`: a new path is written at home; a live one is found, wherever
    /// its writer's list put it, and left as it is (no second copy).
    fn create(&mut self, c: usize, path: &str) -> Step {
        self.model.wait_tick(path);
        let client = &self.clients[c];
        let head = format!("c{c}@v{} create {path}", client.list.version);
        let bytes = self.model.next_bytes(path, c, client.list.version);
        let mut before = copies_on_disk(&self.views.truth, path);
        before.sort();
        let made = client
            .router
            .create(path, &bytes)
            .map_err(|e| format!("{head}: {e}"))?;
        let at = Instant::now();
        *self.stats.client_ops.entry("create").or_default() += 1;
        let Some(latest) = self.model.live.get(path) else {
            if !made.created() {
                return Err(format!("{head}: {}, but no client wrote it", made.as_str()));
            }
            let root = client.home_root(path);
            self.model.record(path, bytes, at);
            return Ok(format!("{head}: created -> {root}"));
        };
        let theirs = serde_json::from_slice::<Value>(latest).ok();
        let across = theirs.and_then(|v| v["list"].as_i64()) != Some(client.list.version);
        // Its latest version only in a move's private name is hidden, for a bounded time
        // (check 1): a create then writes one, as a write would.
        if made.created() && self.stats.hidden_since.contains_key(path) {
            self.model.record(path, bytes, at);
            return Ok(format!("{head}: created beside a version a move hides"));
        }
        // The app on plain paths' copy under `/`, out of this client's sight: the create
        // misses it as a read would, and writes the path's latest version at home.
        if made.created() && self.plain_missed(path, &self.clients[c]) {
            self.stats.plain_missed += 1;
            self.model.record(path, bytes, at);
            return Ok(format!(
                "{head}: created beside the app on plain paths' copy under /, out of its list's sight"
            ));
        }
        if made.created() {
            return Err(format!(
                "{head}: created a second copy under {}, beside {before:?} ({}), written on another list: {across}",
                client.home_root(path),
                self.model.describe(path, latest)
            ));
        }
        let mut after = copies_on_disk(&self.views.truth, path);
        after.sort();
        if after != before {
            return Err(format!(
                "{head}: already there, but its copies went from {before:?} to {after:?}"
            ));
        }
        self.stats.creates_found += 1;
        self.stats.creates_across_lists += usize::from(across);
        Ok(format!(
            "{head}: already there (written on another list: {across})"
        ))
    }

    fn write(&mut self, c: usize, path: &str, what: &str) -> Step {
        self.model.wait_tick(path);
        let client = &self.clients[c];
        let bytes = self.model.next_bytes(path, c, client.list.version);
        client
            .router
            .write(path, &bytes)
            .map_err(|e| format!("client {c} could not write {path}: {e}"))?;
        let at = Instant::now();
        let root = client.home_root(path);
        if client.list.version != self.published.version {
            self.stats.old_writes += 1;
        }
        self.stats.per_target_writes += usize::from(c % CLIENTS == PER_TARGET_CLIENT);
        let line = format!(
            "c{c}@v{} {what} {path} (write {}) -> {root}",
            client.list.version, self.model.writes
        );
        self.model.record(path, bytes, at);
        Ok(line)
    }

    fn read(&mut self, c: usize, path: &str) -> Step {
        let client = &self.clients[c];
        let head = format!("c{c}@v{} read {path}", client.list.version);
        match client.router.read_with_fallback(path) {
            Ok(read) => {
                if !self.model.is_version(path, &read.data) {
                    return Err(format!(
                        "{head}: {} ({})",
                        self.model.describe(path, &read.data),
                        read.place.as_str()
                    ));
                }
                *self.stats.reads.entry(read.place.as_str()).or_default() += 1;
                let latest = self.model.live.get(path).is_some_and(|l| *l == read.data);
                self.stats.stale_reads += usize::from(!latest);
                Ok(format!(
                    "{head}: {}{} ({})",
                    self.model.describe(path, &read.data),
                    if latest { ", the latest" } else { ", stale" },
                    place_text(&read.place, &client.list)
                ))
            }
            Err(efs_router::Error::NotFound { .. }) => {
                *self.stats.reads.entry("not found").or_default() += 1;
                if self.plain_missed(path, client) {
                    self.stats.plain_missed += 1;
                    return Ok(format!(
                        "{head}: not found; the app on plain paths' copy is under /, where its list {} does not look",
                        client.list.label()
                    ));
                }
                if client.list.version == self.published.version {
                    return Err(format!(
                        "{head}: not found, by a client on the published list {}",
                        self.published.label()
                    ));
                }
                // An old client finds what any client wrote: the function announces every
                // change of homes and switches them once the fleet runs the announcement
                // (docs/data-plane.md, "When homes change"). Homes switched after the fleet's
                // patience would be the one exception, and fail the soak where answered.
                let roots: BTreeSet<String> = client
                    .list
                    .roots()
                    .union(&self.published.roots())
                    .cloned()
                    .collect();
                for root in roots {
                    let copy = root_dir(&self.views.truth, &root).join(path);
                    let Ok(bytes) = fs::read(&copy) else {
                        continue;
                    };
                    return Err(format!(
                        "{head}: not found by a client on {}, but {} holds it ({})",
                        client.list.label(),
                        copy.display(),
                        self.model.describe(path, &bytes)
                    ));
                }
                Ok(format!(
                    "{head}: not found (no shard holds it; an old client on {})",
                    client.list.label()
                ))
            }
            Err(e) => Err(format!("{head}: {e}")),
        }
    }

    /// The router's delete: where its list says a copy can be. Nothing else runs now, so what
    /// is left is checked at once (check 5).
    fn delete(&mut self, c: usize, path: &str) -> Step {
        let client = &self.clients[c];
        let head = format!("c{c}@v{} delete {path}", client.list.version);
        let done = client
            .router
            .delete(path)
            .map_err(|e| format!("{head}: {e}"))?;
        let list = client.list.clone();
        let roots = shard_roots(&client.router);
        let line = self.deleted(&head, &roots, &done)?;
        let left = copies_on_disk(&self.views.truth, path);
        // The app on plain paths' copy under `/`, where this client does not look for it,
        // stays, as the path's latest version.
        let stays = self.plain_copy_unseen(path, &self.clients[c]);
        if let Some(root) = left
            .iter()
            .find(|r| list.roots().contains(*r) && !(stays && r.as_str() == "/"))
        {
            return Err(format!(
                "{line}: a copy under {root}, a root of the deleting client's list {}, is left",
                list.label()
            ));
        }
        if stays {
            self.plain_copy_stays(path);
            return Ok(format!(
                "{line}; the app on plain paths' copy under / stays, where its list {} does not look",
                list.label()
            ));
        }
        self.model.live.remove(path);
        if left.is_empty() {
            return Ok(line);
        }
        self.stats.missed_by_old_list.insert(path.to_string());
        Ok(format!(
            "{line}; copies under {left:?}, which its list {} does not name, stay",
            list.label()
        ))
    }

    /// Whether a routed read or create by `client` may miss `path`: its latest version is
    /// the app on plain paths' copy under `/`, out of the client's sight.
    fn plain_missed(&self, path: &str, client: &Client) -> bool {
        self.model.out_of_sight(path, client) && self.plain_copy_unseen(path, client)
    }

    /// Whether `/` holds a copy of `path` the app on plain paths wrote, where `client`'s router
    /// does not look for it: a routed delete leaves it, whichever version was the latest. One
    /// judgement for the deletes between runs and beside them.
    fn plain_copy_unseen(&self, path: &str, client: &Client) -> bool {
        !looks_for_in_first(client, path)
            && fs::read(root_dir(&self.views.truth, "/").join(path))
                .is_ok_and(|b| self.model.plain_versions.contains(&b))
    }

    /// After a routed delete that left the app on plain paths' copy under `/`: that copy is
    /// the path's latest version now, live, as the app sees it.
    fn plain_copy_stays(&mut self, path: &str) {
        self.stats.plain_left_by_delete += 1;
        if let Ok(bytes) = fs::read(root_dir(&self.views.truth, "/").join(path)) {
            self.model.live.insert(path.to_string(), bytes);
            self.model.plain.insert(path.to_string());
        }
    }

    /// The log line of a delete by a router whose shards have `roots`, counted; what it left
    /// (links, FIFOs) fails the soak, which plants none.
    fn deleted(&mut self, head: &str, roots: &[String], done: &Deleted) -> Step {
        let removed: Vec<&str> = done.removed.iter().map(|&i| roots[i].as_str()).collect();
        if !done.left.is_empty() {
            return Err(format!("{head}: left {:?}", done.left));
        }
        self.stats.deletes_of_several_copies += usize::from(done.removed.len() > 1);
        Ok(format!(
            "{head}: removed in {removed:?} ({} rounds)",
            done.rounds
        ))
    }

    // ------------------------------------------------------------------------- the function

    async fn function_step(&mut self, rng: &mut Rng) -> Step {
        let rebalance = rng.chance(self.rebalance_per_mille());
        let max_moves = 1 + rng.below(40);
        // A kill among moves, when the run will move something (files are misplaced, and the
        // fleet runs the published list): mostly in rebalances, which move the most;
        // reconciles move files when they drain a shard.
        // Late in a long wind-down no more kills land among moves: each may hold a drain for
        // `ABANDONED_AFTER`, and the wind-down must end.
        let late = self.late_in_wind_down();
        // One walk of the files away from home serves the kill's draw and the rewrites.
        let misplaced = match self.converged() {
            true => self.misplaced(),
            false => Vec::new(),
        };
        let movable = !late && !misplaced.is_empty();
        let owed = self.kill_owed();
        // Coverage of a rewrite racing a move: past a quarter of the main steps with none yet,
        // a rebalance that will move has rewrites beside it instead of a kill (before the kill
        // within a move is owed, which the moments files are away from home are few for).
        let race_owed = rebalance
            && movable
            && self.phase == Phase::Main
            && self.step > self.steps / 4
            && self.stats.rewrites_racing_moves == 0
            && self.stats.race_attempts < RACE_ATTEMPTS
            && self.stats.race_steered < RACE_STEERED;
        self.stats.race_attempts += usize::from(race_owed);
        self.stats.race_steered += usize::from(race_owed);
        let owed = owed && !race_owed;
        let fault = if race_owed {
            Fault::None
        } else if (owed || rng.chance(if rebalance { 700 } else { 150 })) && movable {
            // Most of them within a move (zero: the watcher freezes the run to find a move's
            // private name on disk, and kills it then); the others 0-4 ms after the first
            // source left.
            let micros = rng.below(4000);
            let micros = if rng.chance(KILL_WITHIN_PER_MILLE) || owed {
                0
            } else {
                micros.max(1)
            };
            Fault::KillAmongMoves(Duration::from_micros(micros))
        } else {
            Fault::draw(rng)
        };
        // REBALANCE_MAX_VISITS, drawn apart (the step's own draws stay as they were).
        let mut caps = Rng::for_step(self.seed ^ 0xCA95, self.step);
        // Not on a run steered to race a move: a cap could stop it before the misplaced paths.
        let cap = (rebalance && !race_owed && caps.chance(VISITS_CAPPED_PER_MILLE))
            .then(|| 1 + caps.below(VISITS_CAP));
        let event = if rebalance {
            json!({"action": "rebalance", "max_moves": max_moves})
        } else {
            event("reconcile")
        };
        // Client traffic beside the run: new paths, reads and deletes, spaced over its time.
        // Which reads become deletes is drawn apart; only while the fleet runs the published
        // list, so that a copy left is the router's fault, never the documented old-list case
        // (check 5). None beside a kill among moves: a source a client's read moved home, or
        // its delete removed, would set the kill off outside the function's moves.
        let burst = if matches!(fault, Fault::KillAmongMoves(_)) {
            0
        } else if race_owed {
            6
        } else if rng.chance(500) {
            1 + rng.index(6)
        } else {
            0
        };
        let mut deletes = Rng::for_step(self.seed ^ 0xDE1E7E, self.step);
        // Rewrites of a misplaced path beside a run, drawn apart too: they race its move.
        let mut rewrites = Rng::for_step(self.seed ^ 0x5E3B17E, self.step);
        let misplaced = self.live_paths_of(&misplaced);
        let mut planned = Vec::new();
        // The wind-down keeps a few files, beside runs too: the last pass resumes over them.
        let mut deleting = BTreeSet::new();
        for _ in 0..burst {
            if race_owed && misplaced.is_empty() {
                break; // no live path away from home: nothing to race
            }
            let c = rng.index(CLIENTS);
            let pause = Duration::from_millis(rng.below(40));
            let live: Vec<&String> = self.model.live.keys().collect();
            if !race_owed && (live.is_empty() || rng.chance(600)) {
                let path = self.model.fresh_path(rng);
                let bytes = self
                    .model
                    .next_bytes(&path, c, self.clients[c].list.version);
                planned.push((c, pause, path, Beside::Write(bytes)));
            } else if !misplaced.is_empty()
                && (race_owed || rewrites.chance(REWRITE_BESIDE_PER_MILLE))
            {
                let (path, source) = rewrites.pick(&misplaced).clone();
                let pause = pause.max(self.model.until_tick(&path));
                let bytes = self
                    .model
                    .next_bytes(&path, c, self.clients[c].list.version);
                planned.push((c, pause, path, Beside::Rewrite(bytes, source)));
            } else {
                let path = (*rng.pick(&live)).clone();
                let kept = self.phase == Phase::WindingDown
                    && !deleting.contains(&path)
                    && live.len() <= WIND_DOWN_KEEPS + deleting.len();
                let op = if deletes.chance(350) && self.converged() && !kept {
                    deleting.insert(path.clone());
                    Beside::Delete
                } else {
                    Beside::Read
                };
                planned.push((c, pause, path, op));
            }
        }
        match cap {
            Some(n) => self.tb.env("REBALANCE_MAX_VISITS", n.to_string()),
            None => self.tb.unset("REBALANCE_MAX_VISITS"),
        };
        let sources: Vec<PathBuf> = planned
            .iter()
            .filter_map(|(.., op)| match op {
                Beside::Rewrite(_, source) => Some(source.clone()),
                _ => None,
            })
            .collect();
        let mut line = self.run_function(&event, fault, planned).await?;
        if race_owed && sources.iter().all(|s| fs::symlink_metadata(s).is_ok()) {
            self.stats.race_attempts -= 1;
            let _ = write!(line, " [steered to race a move; it took none]");
        }
        if let Some(n) = cap {
            let _ = write!(line, " [visits capped at {n}]");
        }
        Ok(line)
    }

    /// Runs the function once (with `fault`, and `planned` client operations beside it) and
    /// checks what it did.
    async fn run_function(&mut self, event: &Value, fault: Fault, planned: Vec<Planned>) -> Step {
        let action = event["action"].as_str().unwrap_or("reconcile").to_string();
        let mut before = self.before_run(&action, &fault, planned.is_empty());
        if action == "rebalance" {
            let state = self.tb.world.state().await;
            before.resumes = state["rebalancing"]["next"].is_object();
        }
        self.inject(&fault);
        // What a kill among moves watches, and what it is counted against: walked only then.
        if matches!(fault, Fault::KillAmongMoves(_)) {
            before.sources = self.misplaced();
            before.privates = privates_under(&self.views.truth);
        }
        let beside: BTreeSet<String> = planned.iter().map(|(_, _, p, _)| p.clone()).collect();
        let writes_beside = planned
            .iter()
            .filter(|(.., op)| matches!(op, Beside::Write(_) | Beside::Rewrite(..)))
            .count();
        let traffic = self.traffic_beside(planned);
        let swap = self.swap_in_run();
        let ran = self.invoke(event, &fault, &before.sources).await;
        let swapped = self.swap_ends(swap);
        let traffic = traffic.await.expect("client traffic");
        let (old, forced) = self.read_aws().await?;
        // A forced deployment started tasks (and stops the ones it replaced).
        self.follow_tasks();

        // The answer.
        let (calls, listings) = ran.calls;
        let mut line = format!(
            "run {action} ({:.1} s, {calls} AWS calls, {listings} ListTasks)",
            ran.took.as_secs_f64()
        );
        if action == "rebalance" {
            let _ = write!(line, " (max_moves {})", event["max_moves"]);
        }
        if fault != Fault::None {
            let _ = write!(line, " with {fault:?}");
        }
        if let Some(swapped) = swapped {
            let _ = write!(line, " ({swapped})");
        }
        let rebalanced_all = self.check_answer(&mut line, &action, &fault, &ran, &before)?;
        self.judge_on_disk(&mut line, &before, &beside, &ran)?;
        self.check_deleted_targets(&mut line, &before.targets)?;
        self.count_created(&mut line, &before.targets);
        self.lists_and_fleet(&mut line, &old, forced, &before, rebalanced_all);
        self.check_plain_app_seen(&action, &ran)?;
        // The run closed the placements while clients wrote beside it.
        let closed = |p: &Published| open_kind(&p.list) == Some(OpenKind::Closed);
        if closed(&self.published) && !closed(&old) {
            self.stats.writes_beside_close += writes_beside;
        }
        self.traffic_results(&mut line, traffic, before.version)?;
        Ok(line)
    }

    /// Counts the run and its fault, and captures what the run is judged against afterwards:
    /// the fleet, the reports and AWS as they were at its start.
    fn before_run(&mut self, action: &str, fault: &Fault, quiet: bool) -> BeforeRun {
        *self
            .stats
            .runs
            .entry(if action == "rebalance" {
                "rebalance"
            } else {
                "reconcile"
            })
            .or_default() += 1;
        *self.stats.drawn.entry(fault.name()).or_default() += 1;
        let converged = self.converged();
        let lists = self.lists_in_use();
        // What the live reports say at the run's start (rewritten before the step).
        let mut behind = self.behind();
        let ecs_done = self.tb.proxy.rolling_services().is_empty();
        if ecs_done && !behind.is_empty() {
            self.stats.held_by_reports += 1;
        }
        let hostile = self.hostile_behind();
        self.stats.held_by_hostile += usize::from(!hostile.is_empty());
        behind.extend(hostile);
        let old_router = self.old_router_live() && self.published.form() == 1;
        self.stats.runs_beside_old_routers += usize::from(old_router);
        self.runs_begun += 1;
        let ecs_behind = self.ecs_behind();
        let unreported = self.unreported_running();
        self.stats.runs_beside_unreported += usize::from(!unreported.is_empty());
        // Only ECS's task rule holds: no rollout held, no report behind, no client on another
        // list, and a task started before the list is not STOPPED yet.
        let fleet_current = self
            .clients
            .iter()
            .all(|c| c.list.version == self.published.version);
        if ecs_done
            && fleet_current
            && behind.is_empty()
            && unreported.is_empty()
            && !ecs_behind.is_empty()
        {
            self.stats.held_by_tasks_alone += 1;
        }
        BeforeRun {
            converged,
            lists,
            behind,
            targets: self.targets.clone(),
            version: self.published.version,
            sources: Vec::new(),
            privates: BTreeSet::new(),
            flat: self.model.flat(),
            quiet,
            serving: self
                .published
                .list
                .shards()
                .iter()
                .filter(|t| !t.draining)
                .count(),
            hostile_privates: self.hostile_privates(),
            places: places_on_disk(&self.views.truth),
            ecs_behind,
            unreported,
            stale_served: self.tb.proxy.stale_reads().values().sum(),
            resumes: false,
        }
    }

    /// Sets the proxy's part of `fault` (a kill among moves and a short deadline are the
    /// harness's own).
    fn inject(&mut self, fault: &Fault) {
        if fault.operation() == Some("RunTask") {
            // Only the harness calls it: its next RunTask meets the fault.
            self.run_task_fault = Some(fault.clone());
            return;
        }
        let proxy = &self.tb.proxy;
        match fault {
            Fault::None | Fault::ShortDeadline => {}
            Fault::ThrottleBurst(k) => proxy.throttle_services(THROTTLED_SERVICES, *k),
            Fault::Throttle(op, k) => proxy.throttle(op, *k),
            Fault::ServerError(op, status, k) => proxy.server_error(op, *status, *k),
            Fault::Stall(op, k) => proxy.stall(op, *k),
            Fault::LoseAnswer { op, .. } => proxy.lose_answer(op, 1),
            Fault::KillAfter(n) => proxy.stall_everything_after(*n),
            Fault::SlowCreate(k) => proxy.hold_creating(*k),
            Fault::KillAmongMoves(_) => {}
        }
    }

    /// The client traffic beside the run, on threads of its own, each operation after its
    /// pause.
    fn traffic_beside(&self, planned: Vec<Planned>) -> tokio::task::JoinHandle<Vec<Done>> {
        let routers: Vec<(usize, Router, i64)> = planned
            .iter()
            .map(|(c, ..)| {
                (
                    *c,
                    self.clients[*c].router.clone(),
                    self.clients[*c].list.version,
                )
            })
            .collect();
        tokio::task::spawn_blocking(move || {
            let mut out = Vec::new();
            for ((_, pause, path, op), (c, router, version)) in planned.into_iter().zip(routers) {
                std::thread::sleep(pause);
                let result = match &op {
                    Beside::Write(b) | Beside::Rewrite(b, _) => {
                        router.write(&path, b).map(|_| Answer::Wrote)
                    }
                    Beside::Read => router.read_with_fallback(&path).map(Answer::Read),
                    Beside::Delete => router
                        .delete(&path)
                        .map(|done| Answer::Deleted(done, shard_roots(&router))),
                };
                let at = Instant::now();
                out.push((c, version, path, op, at, result));
            }
            out
        })
    }

    /// The run: invoked, and killed as `fault` says (by the proxy's stall or among its moves);
    /// then whether the fault fired, and the faults cleared.
    async fn invoke(&mut self, event: &Value, fault: &Fault, sources: &[PathBuf]) -> Ran {
        let proxy = &self.tb.proxy;
        let deadline = if matches!(fault, Fault::ShortDeadline | Fault::SlowCreate(_)) {
            Duration::from_secs(20)
        } else {
            LONG
        };
        // Each run is the schedule's next, 5 minutes after the last.
        proxy.next_run();
        let (calls_before, listings_before) = (proxy.total(), proxy.count("ListTasks"));
        let stalled_before = proxy.stalled_requests();
        let created_before = proxy.created_mount_targets().len();
        // Only the function's own calls count: the harness's (its RunTask, say) are signed with
        // another key.
        let key = support::function::ACCESS_KEY_ID;
        let faulted_before = fault
            .operation()
            .map_or(0, |op| faults_met_by_function(proxy, op));
        let throttled_before = proxy.throttled_signed_by(key);
        let mut instance = self.tb.function.start().await;
        let started = Instant::now();
        let mut killed_among_moves = false;
        let outcome = if let Fault::KillAmongMoves(delay) = fault {
            let done = Arc::new(AtomicBool::new(false));
            let pid = instance.pid().expect("the function is running");
            let watcher = kill_among_moves(pid, sources.to_vec(), *delay, done.clone());
            let result = instance.invoke(event, deadline).await.result;
            done.store(true, Ordering::Release);
            let killed = watcher.join().expect("the kill's watcher");
            // Killed before it answered; one that answered first was not killed by it.
            killed_among_moves = killed && result.is_err();
            (!killed_among_moves).then_some(result)
        } else if fault.kills() {
            let watch = async {
                while proxy.stalled_requests() == stalled_before {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            };
            tokio::select! {
                inv = instance.invoke(event, deadline) => Some(inv.result),
                () = watch => None,
            }
        } else {
            Some(instance.invoke(event, deadline).await.result)
        };
        let took = started.elapsed();
        let calls = (
            proxy.total().saturating_sub(calls_before),
            proxy.count("ListTasks").saturating_sub(listings_before),
        );
        let logs = instance.stop().await;
        if logs.contains(efs_mount_autoscaler::LIST_OLDER_THAN_PUBLISHED) {
            self.stats.list_older_than_published += 1;
        }
        self.stats.run_time += took;
        self.stats.longest_run = self.stats.longest_run.max(took);
        self.stats.most_calls = self.stats.most_calls.max(calls);
        let fired = match fault {
            Fault::None => false,
            Fault::Throttle(..)
            | Fault::ServerError(..)
            | Fault::Stall(..)
            | Fault::LoseAnswer { .. } => fault
                .operation()
                .is_some_and(|op| faults_met_by_function(proxy, op) > faulted_before),
            Fault::ThrottleBurst(_) => {
                let mut services = 0;
                for (service, n) in proxy.throttled_signed_by(key) {
                    let new =
                        n.saturating_sub(throttled_before.get(&service).copied().unwrap_or(0));
                    services += usize::from(new > 0);
                    *self.stats.burst_throttles.entry(service).or_default() += new;
                }
                // A burst: more than one service at once.
                services > 1
            }
            Fault::KillAfter(_) => proxy.stalled_requests() > stalled_before,
            Fault::KillAmongMoves(_) => killed_among_moves,
            Fault::ShortDeadline => true,
            Fault::SlowCreate(_) => proxy.created_mount_targets().len() > created_before,
        };
        if fired {
            *self.stats.faults.entry(fault.name()).or_default() += 1;
            if let Some(op) = fault.operation() {
                *self.stats.faulted_operations.entry(op).or_default() += 1;
            }
        }
        proxy.clear_faults();
        if let Fault::SlowCreate(k) = fault {
            // New targets are no longer held; those held count down their describes.
            proxy.release_creating_after(*k);
        }
        self.last_run = format!(
            "{event} with fault {fault:?}: {}\n--- function logs ---\n{logs}--- end of logs ---",
            match &outcome {
                None => "killed".to_string(),
                Some(Ok(v)) => format!("response {v}"),
                Some(Err(e)) => format!("error {e}"),
            }
        );
        Ran {
            outcome,
            took,
            calls,
            deadline,
            killed_among_moves,
        }
    }

    /// What AWS and SSM show after a run: the targets and the published list are taken in;
    /// answers the list published before, and whether a deployment was forced.
    async fn read_aws(&mut self) -> Result<(Published, bool), String> {
        self.targets = self.tb.world.mount_targets().await;
        let published = self.tb.world.published().await;
        let list = MountTargetList::from_json(&published.value).map_err(|e| {
            format!(
                "the published list does not parse ({e}): {}",
                published.value
            )
        })?;
        let old = std::mem::replace(
            &mut self.published,
            Published {
                list,
                text: published.value.clone(),
                version: published.version,
            },
        );
        self.remember_roots();
        let ids = self.tb.world.deployment_ids().await;
        let forced = ids != self.deployment_ids;
        self.deployment_ids = ids;
        Ok((old, forced))
    }

    /// The run's answer, against its deadline and its fault: answers whether it was a
    /// rebalance that moved every misplaced file.
    fn check_answer(
        &mut self,
        line: &mut String,
        action: &str,
        fault: &Fault,
        ran: &Ran,
        before: &BeforeRun,
    ) -> Result<bool, String> {
        let mut rebalanced_all = false;
        // Lambda stops a run at its deadline: one that was not killed answered before it.
        if ran.outcome.is_some() && ran.took >= ran.deadline {
            return Err(format!(
                "{line}: the run took {:?}, past its deadline of {:?}",
                ran.took, ran.deadline
            ));
        }
        match &ran.outcome {
            None => {
                self.stats.kills += 1;
                line.push_str(": killed");
                if ran.killed_among_moves {
                    let said = self.count_kill_among_moves(&before.sources, &before.privates);
                    let _ = write!(line, "{said}");
                }
            }
            Some(Ok(r)) => rebalanced_all = self.check_response(line, action, r, before)?,
            Some(Err(e)) => {
                self.stats.failed_runs += 1;
                let kind = e["errorType"].as_str().unwrap_or_default();
                let _ = write!(line, ": error {kind}");
                // SSM's lag, played from the start, may stop any run: only after a stale read.
                let lagged = STALE_ERRORS.contains(&kind)
                    && self.tb.proxy.stale_reads().values().sum::<usize>() > before.stale_served;
                if lagged {
                    *self.stats.stale_stops.entry(kind.to_owned()).or_default() += 1;
                } else if !fault.may_fail() || !FAULT_ERRORS.contains(&kind) {
                    return Err(format!(
                        "{line}: the run failed, which fault {fault:?} does not explain: {e}"
                    ));
                }
            }
        }
        if ran.outcome.is_none() && !fault.kills() {
            return Err(format!("{line}: killed without a kill injected"));
        }
        Ok(rebalanced_all)
    }

    /// How long a silent client's report, written through another mount than the function's,
    /// took to be named by a run (on the NFS tier: another client's name cache in between).
    fn count_silent_named(&mut self, r: &Value) {
        let named: BTreeSet<&str> = r["clients_behind"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|b| b["client"].as_str())
            .collect();
        let s = &mut self.stats;
        let written: Vec<(String, Instant)> = s
            .silent_written
            .iter()
            .map(|(c, t)| (c.clone(), *t))
            .collect();
        for (client, at) in written {
            let runs = s.silent_runs_before.entry(client.clone()).or_default();
            if named.contains(client.as_str()) {
                s.silent_named_after.push((at.elapsed(), *runs));
                s.silent_written.remove(&client);
                s.silent_runs_before.remove(&client);
            } else {
                *runs += 1;
            }
        }
    }

    /// The fleet rule judged on what the run did, not on what it said: the client paths that
    /// lost a copy on disk (a move takes its source; the paths of the traffic beside it aside)
    /// and the targets AWS shows deleted or deleting since it began, whether it answered,
    /// failed or was killed. An answer that moved nothing must have taken nothing.
    fn judge_on_disk(
        &mut self,
        line: &mut String,
        before: &BeforeRun,
        beside: &BTreeSet<String>,
        ran: &Ran,
    ) -> Result<(), String> {
        let after = places_on_disk(&self.views.truth);
        let taken: Vec<&String> = before
            .places
            .iter()
            .filter(|(path, roots)| {
                !beside.contains(*path) && after.get(*path).is_none_or(|now| !roots.is_subset(now))
            })
            .map(|(path, _)| path)
            .collect();
        let gone = |state: &str| state == "deleting" || state == "deleted";
        let now: BTreeMap<&str, &str> = self
            .targets
            .iter()
            .map(|t| (t.id.as_str(), t.state.as_str()))
            .collect();
        let deleted: Vec<&str> = before
            .targets
            .iter()
            .filter(|t| !gone(&t.state) && now.get(t.id.as_str()).is_none_or(|s| gone(s)))
            .map(|t| t.id.as_str())
            .collect();
        if taken.is_empty() && deleted.is_empty() {
            return Ok(());
        }
        let outcome = match &ran.outcome {
            None => "killed",
            Some(Ok(_)) => "answered",
            Some(Err(_)) => "failed",
        };
        *self.stats.changed_on_disk.entry(outcome).or_default() += 1;
        if !before.behind.is_empty() || !before.converged {
            return Err(format!(
                "{line}: the run ({outcome}) took {taken:?} from their place on disk and deleted {deleted:?} in AWS while clients ran lists {} (behind: {:?}) and {} was published",
                before.lists,
                before.behind,
                self.published.label()
            ));
        }
        if let Some(Ok(r)) = &ran.outcome {
            let m = &r["moves"];
            let said = m["moved"].as_u64().unwrap_or(0) + m["dropped_older"].as_u64().unwrap_or(0);
            if said == 0 && !taken.is_empty() {
                return Err(format!(
                    "{line}: the run took {taken:?} from their place on disk, and its answer says it moved none"
                ));
            }
        }
        Ok(())
    }

    /// A run's response: 200, and nothing moved or deleted unless the fleet had converged at
    /// its start; answers whether it rebalanced every misplaced file.
    fn check_response(
        &mut self,
        line: &mut String,
        action: &str,
        r: &Value,
        before: &BeforeRun,
    ) -> Result<bool, String> {
        if r["statusCode"] != json!(200) {
            return Err(format!("{line}: a response without statusCode 200: {r}"));
        }
        let actions = strings(r, "actions");
        let _ = write!(line, ": {actions:?}");
        if r["moves"].is_object() {
            let _ = write!(line, " moves {}", r["moves"]);
        }
        if action == "reconcile" {
            let _ = write!(line, " ({})", r["reason"].as_str().unwrap_or_default());
        }
        let waiting = strings(r, "waiting_for");
        if !waiting.is_empty() {
            let _ = write!(line, " waiting for {waiting:?}");
        }
        // What holds a drain, named by the function.
        let held: Vec<String> = strings(r, "warning_kinds")
            .iter()
            .zip(strings(r, "warnings"))
            .filter(|(k, _)| k.starts_with("drain_held") || *k == "cut_short_move")
            .map(|(_, w)| w)
            .collect();
        if !held.is_empty() {
            let _ = write!(line, " held by {held:?}");
        }
        if strings(r, "warning_kinds")
            .iter()
            .any(|k| k == "drain_held_by_move")
        {
            self.stats.drains_held_by_moves += 1;
        }
        if let Some(homes) = r["homes"].as_str() {
            let _ = write!(line, " homes {homes}");
            // The soak runs for minutes: the fleet's patience (30) never passes, so an early
            // switch would mean the fleet was misjudged, and older lists could miss files.
            if homes == "switched_early" {
                return Err(format!(
                    "{line}: homes switched after the fleet's patience, which no soak waits"
                ));
            }
            *self.stats.homes.entry(homes.to_owned()).or_default() += 1;
        }
        let m = &r["moves"];
        // A step of a rebalance pass. A drain's moves (`move_drained`) walk the draining shards
        // alone: no pass ends or goes on there, whatever its moves say.
        let pass_walk = action == "rebalance"
            && r["decision"] != json!("move_drained")
            && actions.iter().any(|a| a == "move_files");
        let walked_all = pass_walk && m["remaining"] == json!(0) && m["incomplete"] != json!(true);
        // The co-tenant's links are skipped and its names that are not UTF-8 fail: then every
        // client's file must be at home on disk.
        let clean = m["failed"] == json!(0) && m["skipped"] == json!(0);
        // A run that resumed walked only the end of its pass; the files before its start were
        // walked by earlier runs, before clients wrote since: all at home only if none is
        // misplaced on disk now.
        let whole = !before.resumes || self.misplaced().is_empty();
        let rebalanced_all = walked_all
            && whole
            && (clean || (self.hostile.in_shards() && self.misplaced().is_empty()));
        // Files move, and targets go, only while every client runs the published
        // list (publish → converge → move → publish → converge → delete).
        let moved = m["moved"].as_u64().unwrap_or(0) + m["dropped_older"].as_u64().unwrap_or(0);
        let abandoned = m["abandoned_removed"].as_u64().unwrap_or(0);
        // The co-tenant's private names the function took away are not what this counts.
        if before
            .hostile_privates
            .iter()
            .any(|p| fs::symlink_metadata(p).is_err())
        {
            self.stats.abandoned_beside_hostile += abandoned;
        } else {
            self.stats.abandoned_removed += abandoned;
        }
        self.check_hostile_answer(line, action, r, before)?;
        self.count_silent_named(r);
        if r["clients_behind"]
            .as_array()
            .is_some_and(|a| !a.is_empty())
        {
            self.stats.runs_naming_clients += 1;
        }
        let behind_before = &before.behind;
        if (moved > 0 || !strings(r, "deleted").is_empty()) && !behind_before.is_empty() {
            return Err(format!(
                "{line}: files moved or a target deleted while live clients reported older lists than {}: {behind_before:?}",
                self.published.label()
            ));
        }
        if (moved > 0 || !strings(r, "deleted").is_empty()) && !before.converged {
            return Err(format!(
                "{line}: files moved or a target deleted while clients ran lists {} and {} was published",
                before.lists,
                self.published.label()
            ));
        }
        self.check_ecs_answer(line, r, before, moved)?;
        if pass_walk {
            let ended = m["incomplete"] != json!(true);
            self.last_walk = Some((before.resumes, ended));
            self.stats.rebalances_resumed += usize::from(before.resumes);
            self.stats.rebalances_stopped += usize::from(!ended);
            if m["comparison"] == json!("added_shards") {
                self.stats.compared_with_added += 1;
            }
            if before.resumes {
                let _ = write!(line, " (resumed)");
            }
        }
        Ok(rebalanced_all)
    }

    /// What ECS alone shows must hold too: nothing moved or deleted while a task started
    /// before the list was not STOPPED, or a task whose router writes no report ran; the
    /// answer names that task `unreported` (unless ECS's tasks could not be listed, or a
    /// deployment this run forced replaced it); and a run that moves once it is gone
    /// releases it.
    fn check_ecs_answer(
        &mut self,
        line: &str,
        r: &Value,
        before: &BeforeRun,
        moved: u64,
    ) -> Result<(), String> {
        let changed = moved > 0 || !strings(r, "deleted").is_empty();
        if changed && !before.ecs_behind.is_empty() {
            return Err(format!(
                "{line}: files moved or a target deleted while ECS showed {:?}",
                before.ecs_behind
            ));
        }
        let named = r["clients_behind"].as_array().cloned().unwrap_or_default();
        // ECS's tasks could not be listed: the run holds everything, and says so by a warning
        // when nothing was to move.
        let unknown = named.iter().any(|c| c["why"] == json!("tasks-unknown"))
            || strings(r, "warning_kinds")
                .iter()
                .any(|k| k == "tasks_unknown");
        let running = self.service_running();
        for arn in before.unreported.iter().filter(|a| running.contains(a)) {
            if named
                .iter()
                .any(|c| c["why"] == json!("unreported") && c["client"] == json!(arn))
            {
                self.stats.unreported_named += 1;
            } else if !unknown {
                return Err(format!(
                    "{line}: task {arn} ran a router that writes no report, and the answer does not name it unreported: {}",
                    r["clients_behind"]
                ));
            }
        }
        if moved > 0 && before.unreported.is_empty() && self.unreported_ended {
            self.unreported_ended = false;
            self.stats.unreported_released += 1;
        }
        Ok(())
    }

    /// What the co-tenant must not change in a run's answer: the run counts every file the
    /// clients have (when none works beside it), it grows when it wants more shards than
    /// serve, no shard is skipped, and a report of the co-tenant's is never seen later than
    /// its file's change allows.
    fn check_hostile_answer(
        &mut self,
        line: &str,
        action: &str,
        r: &Value,
        before: &BeforeRun,
    ) -> Result<(), String> {
        let on_disk = !self.hostile.planted.is_empty();
        if before.quiet {
            if let Some(counted) = r["file_count"].as_u64() {
                if counted < before.flat as u64 {
                    return Err(format!(
                        "{line}: counted {counted} files, fewer than the {} the clients have directly in the watched directories",
                        before.flat
                    ));
                }
                self.stats.counted_beside_hostile += usize::from(self.hostile.in_shards());
            }
        }
        if strings(r, "warning_kinds")
            .iter()
            .any(|k| k == "shard_skipped")
        {
            return Err(format!("{line}: a shard was skipped: {}", r["warnings"]));
        }
        if action == "reconcile" {
            // What the run's first plan wanted and decided, against what served at its start.
            let wanted = r["desired_shards"].as_u64().unwrap_or(0);
            let decision = r["decision"].as_str().unwrap_or_default();
            // A router that reads version 1 only holds the list at one shard a target: with
            // every AZ used, the run is at capacity, and says why.
            let held_by_v1 = decision == "at_capacity"
                && strings(r, "warning_kinds")
                    .iter()
                    .any(|k| k == "list_version_held")
                && self.old_router_live();
            // A run that read a parameter as it was before a write (SSM's lag) planned from that:
            // the next run reads it afresh.
            let stale = self.tb.proxy.stale_reads().values().sum::<usize>() > before.stale_served;
            // A run that finishes the growth of one killed after saving its state decides
            // `keep`, having planned from the saved shards, and publishes them.
            let grew = r["shards"].as_u64().unwrap_or(0) > before.serving as u64;
            // Growth announced (now or before) takes files once the fleet runs the list that
            // announces it (docs/data-plane.md, "When homes change").
            let announced = matches!(r["homes"].as_str(), Some("announced" | "waiting"));
            if wanted > before.serving as u64
                && !GROWTH.contains(&decision)
                && !held_by_v1
                && !announced
                && !stale
                && !grew
            {
                return Err(format!(
                    "{line}: {wanted} shards wanted and {} served, and the run decided {decision}: growth stopped",
                    before.serving
                ));
            }
            if GROWTH.contains(&decision) {
                self.stats.growth_beside_hostile += usize::from(on_disk);
            }
        }
        let now = unix_now();
        for b in r["clients_behind"].as_array().into_iter().flatten() {
            let client = b["client"].as_str().unwrap_or_default();
            let ours = self.hostile.planted.iter().any(|p| {
                p.client.as_deref() == Some(client)
                    || matches!(&p.spot, Spot::Reports { name } if name.to_str() == Some(client))
            });
            if !ours {
                continue;
            }
            self.stats.hostile_reports_named += 1;
            if let Some(seen) = b["last_seen"].as_u64() {
                if seen > now + MAX_SKEW_SECS {
                    return Err(format!(
                        "{line}: the co-tenant's {client} was last seen at {seen}, past its file's change (now is {now}): its own future time was taken"
                    ));
                }
            }
        }
        Ok(())
    }

    /// 3: a target deleted only with its tree empty (and never the first shard).
    fn check_deleted_targets(
        &mut self,
        line: &mut String,
        before_targets: &[MountTarget],
    ) -> Result<(), String> {
        let now: BTreeSet<&str> = self.targets.iter().map(|t| t.id.as_str()).collect();
        for gone in before_targets
            .iter()
            .filter(|t| !now.contains(t.id.as_str()))
        {
            self.stats.deleted += 1;
            if self.phase == Phase::WindingDown {
                self.stats.deleted_winding_down += 1;
            }
            let root = self
                .roots_by_id
                .get(&gone.id)
                .cloned()
                .unwrap_or_else(|| format!("/shards/{}", gone.az_id));
            let _ = write!(line, "; deleted {} ({root})", gone.id);
            if root == "/" {
                return Err(format!("{line}: the first shard's target was deleted"));
            }
            let (files, mut odd) = files_under(&root_dir(&self.views.truth, &root));
            // The co-tenant's entries may be left (one swapped in beside the run, after the
            // drain found the tree empty; a write's temporary name, which holds nothing).
            let left = files
                .iter()
                .filter(|(rel, _)| hostile::is_hostile(rel))
                .count()
                + odd.iter().filter(|rel| hostile::is_hostile(rel)).count();
            self.stats.hostile_left_in_deleted += left;
            odd.retain(|rel| !hostile::is_hostile(rel));
            // A private name counts too: a move's may hold a client's only latest version.
            let data: Vec<&String> = files
                .iter()
                .filter(|(rel, path)| {
                    !(hostile::is_hostile(rel) || is_private(rel) && planted_by_hostile(path))
                })
                .map(|(rel, _)| rel)
                .collect();
            if !data.is_empty() || !odd.is_empty() {
                return Err(format!(
                    "{line}: mount target {} was deleted while its shard {root} holds {data:?} {odd:?}",
                    gone.id
                ));
            }
        }
        Ok(())
    }

    /// The targets the run created, and the most targets and shards seen, for the summary.
    fn count_created(&mut self, line: &mut String, before_targets: &[MountTarget]) {
        let before_ids: BTreeSet<&str> = before_targets.iter().map(|t| t.id.as_str()).collect();
        let created = self
            .targets
            .iter()
            .filter(|t| !before_ids.contains(t.id.as_str()))
            .count();
        self.stats.created += created;
        if created > 0 {
            let _ = write!(line, "; {created} target(s) created");
        }
        self.stats.max_targets = self.stats.max_targets.max(self.targets.len());
        self.stats.max_shards = self.stats.max_shards.max(self.published.list.shard_count());
    }

    /// The list and the fleet after a run: a new list published, a deployment forced (each
    /// client replaced or not, drawn apart), a checkpoint reached.
    fn lists_and_fleet(
        &mut self,
        line: &mut String,
        old: &Published,
        forced: bool,
        before: &BeforeRun,
        rebalanced_all: bool,
    ) {
        if self.published.version != before.version {
            // Tasks the soak saw before this run started before this publish.
            self.published_run = self.runs_begun;
            self.stats.publishes += 1;
            let old_router = self.old_router_live();
            self.stats.published_beside_old_routers += usize::from(old_router);
            if self.published.form() >= 2 && old.form() < 2 {
                self.stats.v2_published += 1;
            }
            match open_kind(&self.published.list) {
                Some(OpenKind::Closed) => self.stats.v3_closed += 1,
                Some(OpenKind::Placements) => self.stats.v3_open += 1,
                Some(OpenKind::Everywhere) => self.stats.v3_everywhere += 1,
                None => {}
            }
            self.previous = Some(old.clone());
            self.clean = false;
            let old_shards = old.list.shards();
            let drains = self
                .published
                .list
                .shards()
                .iter()
                .filter(|t| t.draining)
                .filter(|t| !old_shards.iter().any(|o| o.root == t.root && o.draining))
                .count();
            self.stats.drains += drains;
            let _ = write!(line, "; published {}", self.published.label());
        }
        if forced {
            self.stats.deployments += 1;
            self.deployed = self.published.clone();
            let mut replaced = Vec::new();
            let mut rng = Rng::for_step(self.seed ^ 0x5EED, self.step);
            let mut stopping = Rng::for_step(self.seed ^ 0x5709, self.step);
            for i in 0..self.clients.len() {
                if rng.chance(500) {
                    let new = Client::reporting(&self.deployed, self.views.client(i), i);
                    self.replace_client(i, new, &mut stopping);
                    replaced.push(i);
                }
            }
            let _ = write!(
                line,
                "; deployment forced: clients {replaced:?} replaced (on {}), the others keep theirs",
                self.deployed.label()
            );
        }
        if rebalanced_all && before.converged && self.published.version == before.version {
            self.clean = true;
            let _ = write!(line, "; checkpoint");
        }
    }

    /// The traffic beside the run: writes recorded, deletes checked (5) and reads checked
    /// against the model.
    fn traffic_results(
        &mut self,
        line: &mut String,
        traffic: Vec<Done>,
        published: i64,
    ) -> Result<(), String> {
        // A read may miss a path deleted beside it; a live one, never on the published list.
        let deleted: BTreeSet<String> = traffic
            .iter()
            .filter(|(_, _, _, op, _, result)| matches!(op, Beside::Delete) && result.is_ok())
            .map(|(_, _, path, ..)| path.clone())
            .collect();
        for (c, version, path, op, at, result) in traffic {
            self.stats.concurrent_ops += 1;
            match (op, result) {
                (Beside::Write(bytes), Ok(_)) => {
                    let _ = write!(line, "; c{c}@v{version} wrote {path}");
                    self.model.record(&path, bytes, at);
                }
                // A race with a move only if the run took the misplaced copy from its place.
                (Beside::Rewrite(bytes, source), Ok(_)) => {
                    let moved = fs::symlink_metadata(&source).is_err();
                    let said = if moved {
                        "racing its move"
                    } else {
                        "beside the run"
                    };
                    let _ = write!(line, "; c{c}@v{version} rewrote misplaced {path} {said}");
                    self.stats.rewrites_racing_moves += usize::from(moved);
                    self.model.record(&path, bytes, at);
                }
                (Beside::Delete, Ok(Answer::Deleted(done, roots))) => {
                    let head = format!("c{c}@v{version} delete {path} beside the run");
                    let said = self.deleted(&head, &roots, &done)?;
                    let _ = write!(line, "; {said}");
                    self.stats.deletes_beside_runs += 1;
                    // As between runs (`Soak::delete`): the app on plain paths' copy under
                    // `/`, where the client's list did not look, stays the path's latest.
                    if self.plain_copy_unseen(&path, &self.clients[c]) {
                        self.plain_copy_stays(&path);
                        let _ = write!(line, " (the app on plain paths' copy under / stays)");
                    } else {
                        self.model.live.remove(&path);
                    }
                }
                (Beside::Read, Ok(Answer::Read(read))) => {
                    if !self.model.is_version(&path, &read.data) {
                        return Err(format!(
                            "{line}: c{c}@v{version} read {path} beside the run: {}",
                            self.model.describe(&path, &read.data)
                        ));
                    }
                    *self.stats.reads.entry(read.place.as_str()).or_default() += 1;
                    let _ = write!(
                        line,
                        "; c{c}@v{version} read {path}: {}",
                        read.place.as_str()
                    );
                }
                (Beside::Read, Err(efs_router::Error::NotFound { .. }))
                    if self.plain_missed(&path, &self.clients[c]) =>
                {
                    self.stats.plain_missed += 1;
                    let _ = write!(
                        line,
                        "; c{c}@v{version} read {path}: not found (the app on plain paths' copy under /)"
                    );
                }
                (Beside::Read, Err(efs_router::Error::NotFound { .. })) => {
                    let live = self.model.live.contains_key(&path) && !deleted.contains(&path);
                    if live && version == published {
                        return Err(format!(
                            "{line}: c{c}@v{version}, on the published list, read {path} beside the run: not found, and no client deleted it"
                        ));
                    }
                    // An older list finds what newer ones write (docs/data-plane.md, "When
                    // homes change").
                    if live {
                        return Err(format!(
                            "{line}: c{c}@v{version}, on an older list, read {path} beside the run: not found, and no client deleted it"
                        ));
                    }
                    *self.stats.reads.entry("not found").or_default() += 1;
                    let _ = write!(line, "; c{c}@v{version} read {path}: not found");
                }
                (_, Err(e)) => {
                    return Err(format!(
                        "{line}: c{c}@v{version} {path} beside the run: {e}"
                    ))
                }
                (op, Ok(answer)) => unreachable!("{op:?} answered {answer:?}"),
            }
        }
        Ok(())
    }

    /// The files under the published list's roots that are not at their home there: what a
    /// run may move (as the server holds them).
    fn misplaced(&self) -> Vec<PathBuf> {
        let truth = Client::on(&self.published, &self.views.truth);
        let (files, _) = files_under(&self.views.truth);
        files
            .into_iter()
            .filter(|(rel, _)| !is_private(rel) && !hostile::is_hostile(rel))
            .filter_map(|(rel, path)| {
                let (root, logical) = placed(&rel)?;
                (truth.home_root(&logical) != root).then_some(path)
            })
            .collect()
    }

    /// The live paths of `copies` (files on disk, as [`Soak::misplaced`] gives them), each with
    /// its copy.
    fn live_paths_of(&self, copies: &[PathBuf]) -> Vec<(String, PathBuf)> {
        let live = &self.model.live;
        let paths = copies.iter().filter_map(|p| {
            let rel = p.strip_prefix(&self.views.truth).ok()?;
            let (_, logical) = placed(&rel.to_string_lossy())?;
            live.contains_key(&logical).then(|| (logical, p.clone()))
        });
        paths.collect()
    }

    /// Where a kill among moves landed, for the log and the statistics: after some moves and
    /// before others (`sources` still at their place and gone), and within one (a private name
    /// of the router's that was not there before the run).
    fn count_kill_among_moves(
        &mut self,
        sources: &[PathBuf],
        privates_before: &BTreeSet<String>,
    ) -> String {
        let left = sources
            .iter()
            .filter(|p| fs::symlink_metadata(p).is_ok())
            .count();
        let gone = sources.len() - left;
        // The co-tenant's directories swap for links while a run walks: names inside them are
        // not the run's.
        let within: Vec<String> = privates_under(&self.views.truth)
            .difference(privates_before)
            .filter(|rel| !hostile::is_hostile(rel))
            .cloned()
            .collect();
        // Among the moves: some gone and some left, or a move's private name left (within one,
        // its retire begun, whatever was gone).
        if (gone > 0 && left > 0) || !within.is_empty() {
            self.stats.kills_among_moves += 1;
        }
        if !within.is_empty() {
            self.stats.kills_within_a_move += 1;
            self.stats.last_within_a_move = Some(Instant::now());
        }
        format!(
            " after {gone} of {} misplaced files left their place; new private names {within:?}",
            sources.len()
        )
    }

    // ------------------------------------------------------------------------- the checks

    /// The checks after every step, in their order: 2 (which gathers every copy on disk), 5
    /// and 1 on those copies, 4, 6, and 1 again at a checkpoint.
    async fn check(&mut self) -> Result<(), String> {
        self.hostile.victims.check(&self.views.truth)?;
        self.check_reports_kept()?;
        let (copies, hidden) = self.check_listed_roots()?;
        self.check_deleted_stay_deleted(&copies)?;
        self.check_none_lost(&copies, &hidden)?;
        self.check_readers_find(&copies)?;
        self.check_listed_targets()?;
        self.check_lists_handed()?;
        self.check_targets_own().await?;
        self.check_checkpoint()
    }

    /// 8: each live reader finds, through its own router and mount, a version of
    /// `ORACLE_READS` live paths drawn for the step, of those with a copy under a listed root
    /// (one only in a move's private name is hidden, and bounded, by check 1).
    fn check_readers_find(&mut self, copies: &Copies) -> Result<(), String> {
        let paths: Vec<&String> = self
            .model
            .live
            .keys()
            .filter(|p| copies.contains_key(*p))
            .collect();
        if paths.is_empty() {
            return Ok(());
        }
        let mut rng = Rng::for_step(self.seed ^ ORACLE_SEED, self.step);
        let fleet = self.clients.iter().map(|c| ("a client", c));
        let tasks = self
            .service_tasks
            .iter()
            .map(|t| ("a task of the service", &t.client));
        let others = self.actors.iter().filter_map(Actor::writer);
        let readers: Vec<(&str, &Client)> = fleet
            .chain(tasks)
            .chain(others)
            .filter(|(what, _)| *what != PLAIN_APP)
            .collect();
        let (mut reads, mut old) = (0, 0);
        for (what, c) in readers {
            for _ in 0..ORACLE_READS {
                let path = paths[rng.index(paths.len())];
                // The plain app's files are under `/`: found by a reader whose list looks
                // there (the function reopens `/` once it sees the app, check 8b), and until
                // then by none but at home.
                if self.model.out_of_sight(path, c) {
                    self.stats.plain_unlooked += 1;
                    continue;
                }
                reads += 1;
                old += usize::from(c.list.version < self.published.version);
                let head = format!("check 8: {what} on {} reads {path}", c.list.label());
                match c.router.read_with_fallback(path) {
                    Ok(read) if self.model.is_version(path, &read.data) => {}
                    Ok(read) => {
                        return Err(format!("{head}: {}", self.model.describe(path, &read.data)))
                    }
                    Err(e) => {
                        let roots: Vec<&String> = copies[path].iter().map(|(r, _)| r).collect();
                        return Err(format!(
                            "{head}: hidden ({e}); copies under {roots:?}, published {}",
                            self.published.label()
                        ));
                    }
                }
            }
        }
        self.stats.oracle_reads += reads;
        self.stats.oracle_reads_old_list += old;
        Ok(())
    }

    /// 8b: a run of the reconcile that answered naming the app on plain paths unreported (ECS
    /// shows its task, which reports nothing) leaves a published list whose misses look in
    /// `/`, where that app writes.
    fn check_plain_app_seen(&mut self, action: &str, ran: &Ran) -> Result<(), String> {
        let tasks: Vec<&String> = self
            .actors
            .iter()
            .filter_map(|a| match a {
                Actor::Unreported {
                    plain: true, task, ..
                } => Some(task),
                _ => None,
            })
            .collect();
        let Some(Ok(r)) = &ran.outcome else {
            return Ok(());
        };
        // The rebalance publishes nothing (it moves files under the published list): the
        // reconcile does, on its own schedule.
        if tasks.is_empty() || action == "rebalance" {
            return Ok(());
        }
        // Seen: the answer names its task unreported. A run that could not list ECS's tasks
        // has not seen it, and holds everything (the window data-plane.md gives).
        let behind = r["clients_behind"].as_array().cloned().unwrap_or_default();
        let seen = behind.iter().any(|c| {
            c["why"] == json!("unreported") && tasks.iter().any(|t| c["client"] == json!(t))
        });
        if !seen {
            self.stats.runs_beside_plain_app_unseen += 1;
            return Ok(());
        }
        self.stats.runs_beside_plain_app += 1;
        match looks_in_first(&self.published.list) {
            true => Ok(()),
            false => Err(format!(
                "check 8b: the reconcile answered naming the app on plain paths unreported, and the published list {} does not look in /, where it writes; clients behind {}",
                self.published.label(),
                r["clients_behind"]
            )),
        }
    }

    /// 7: every target the function created that AWS has is its own in the state as SSM holds
    /// it: recorded (`created`), or a create asked for in its subnet (`creating`, which the next
    /// run records). Whatever SSM's reads and the kills did.
    async fn check_targets_own(&self) -> Result<(), String> {
        let state = self.tb.world.state().await;
        let created = self.tb.proxy.created_mount_targets();
        let lost: Vec<&str> = self
            .targets
            .iter()
            .filter(|t| created.contains(&t.id))
            .filter(|t| state["created"].get(&t.id).is_none())
            .filter(|t| state["creating"].get(&t.subnet_id).is_none())
            .map(|t| t.id.as_str())
            .collect();
        match lost.is_empty() {
            true => Ok(()),
            false => Err(format!(
                "the function created {lost:?} and its state no longer says so: {state}"
            )),
        }
    }

    /// 2: no state directory on the file system; nothing under a root that is not listed.
    /// Answers every copy under a listed root, by logical path: each some client's write of it;
    /// and apart, the copies in a move's private names there, each one too.
    fn check_listed_roots(&mut self) -> Result<(Copies, Copies), String> {
        let listed = self.published.roots();
        if self.views.truth.join(".efs-mount-autoscaler").exists() {
            return Err("the old state directory .efs-mount-autoscaler exists".into());
        }
        let (files, odd) = files_under(&self.views.truth);
        let mut copies = Copies::new();
        let mut hidden = Copies::new();
        for (rel, path) in &files {
            let Some((root, logical)) = placed(rel) else {
                continue;
            };
            if is_private(rel) && !hostile::is_hostile(rel) {
                // A move's private name holds a client's file until the move settles or the
                // function gives it back: a copy like any other, only hidden from reads.
                let Some((_, logical)) = unprivate(rel).as_deref().and_then(placed) else {
                    continue; // a write's temporary name: no path's version yet
                };
                let bytes = fs::read(path).map_err(|e| format!("cannot read {rel}: {e}"))?;
                if bytes.starts_with(hostile::CONTENT) {
                    continue; // the co-tenant plants the router's names too
                }
                if !listed.contains(&root) {
                    return Err(format!(
                        "{rel}, a private name under {root}, which the published list {} does not name, holds a file",
                        self.published.label()
                    ));
                }
                if !self.model.is_version(&logical, &bytes) {
                    return Err(format!(
                        "{rel} holds {}",
                        self.model.describe(&logical, &bytes)
                    ));
                }
                self.stats.private_copies.insert(rel.clone());
                hidden.entry(logical).or_default().push((root, bytes));
                continue;
            }
            if hostile::is_hostile(rel) {
                // The co-tenant's (under any root: it may be left), and never a client's bytes.
                let bytes = fs::read(path).map_err(|e| format!("cannot read {rel}: {e}"))?;
                if !bytes.starts_with(hostile::CONTENT) {
                    return Err(format!(
                        "{rel}, the co-tenant's name, holds {:?}: a client's file was moved there",
                        String::from_utf8_lossy(&bytes)
                    ));
                }
                continue;
            }
            if !listed.contains(&root) {
                return Err(format!(
                    "{rel} lies under {root}, which the published list {} does not name",
                    self.published.label()
                ));
            }
            let bytes = fs::read(path).map_err(|e| format!("cannot read {rel}: {e}"))?;
            // Every copy is some client's write of that very path.
            if !self.model.is_version(&logical, &bytes) {
                return Err(format!(
                    "{rel} holds {}",
                    self.model.describe(&logical, &bytes)
                ));
            }
            copies.entry(logical).or_default().push((root, bytes));
        }
        if let Some(rel) = odd
            .iter()
            .find(|rel| placed(rel).is_some() && !hostile::is_hostile(rel))
        {
            return Err(format!("{rel} is not a regular file or directory"));
        }
        Ok((copies, hidden))
    }

    /// Every live router's report is where it wrote it: nothing the function walked (through a
    /// link to the reports' directory the co-tenant planted) took it away.
    fn check_reports_kept(&self) -> Result<(), String> {
        let fleet = self.clients.iter().map(|c| ("a client", c));
        let hidden = self.actors.iter().filter_map(Actor::writer);
        for (what, c) in fleet.chain(hidden) {
            let Some(file) = c.router.report_file() else {
                continue;
            };
            let Some(name) = file.file_name() else {
                continue;
            };
            let truth = self.views.truth.join(efs_router::report::DIR).join(name);
            if !fs::symlink_metadata(&truth).is_ok_and(|m| m.is_file()) {
                return Err(format!(
                    "the report of {what} on {} is gone from {}",
                    c.list.label(),
                    truth.display()
                ));
            }
        }
        Ok(())
    }

    /// 5: a deleted path on disk again is a copy its deleting client's list did not name.
    fn check_deleted_stay_deleted(&mut self, copies: &Copies) -> Result<(), String> {
        for (path, found) in copies {
            if self.model.live.contains_key(path) {
                continue;
            }
            let roots: Vec<&String> = found.iter().map(|(root, _)| root).collect();
            if !self.stats.missed_by_old_list.contains(path) {
                return Err(format!(
                    "{path}, deleted, is on disk again under {roots:?}, and its deleting client's list named every root that held it"
                ));
            }
            if self.stats.resurrected.insert(path.clone()) {
                self.log.push(format!(
                    "   note: {path}, deleted by a client whose list lacked a root of a copy, is on disk under {roots:?}"
                ));
            }
        }
        Ok(())
    }

    /// 1: the latest version of every live path is under a listed root. One only in a move's
    /// private name there is hidden, not lost, until the function gives it back: for at most
    /// three times `ABANDONED_AFTER`.
    fn check_none_lost(&mut self, copies: &Copies, hidden: &Copies) -> Result<(), String> {
        let mut still = BTreeMap::new();
        for (path, latest) in &self.model.live {
            let found = copies.get(path).map(Vec::as_slice).unwrap_or(&[]);
            let in_private = hidden.get(path).map(Vec::as_slice).unwrap_or(&[]);
            if !found.iter().any(|(_, b)| b == latest)
                && in_private.iter().any(|(_, b)| b == latest)
            {
                let since = match self.stats.hidden_since.get(path) {
                    Some(t) => *t,
                    None => {
                        self.stats.hidden_latest += 1;
                        Instant::now()
                    }
                };
                let long = since.elapsed();
                self.stats.longest_hidden = self.stats.longest_hidden.max(long);
                if long > 3 * ABANDONED_AFTER {
                    return Err(format!(
                        "{path}: its latest version ({}) has been only in a private name for {long:?}",
                        self.model.describe(path, latest)
                    ));
                }
                still.insert(path.clone(), since);
                continue;
            }
            if !found.iter().any(|(_, b)| b == latest) {
                let seen: Vec<String> = found
                    .iter()
                    .map(|(root, b)| format!("{root}: {}", self.model.describe(path, b)))
                    .collect();
                return Err(format!(
                    "{path} lost: its latest version ({}) is under no listed root; copies: {seen:?}",
                    self.model.describe(path, latest)
                ));
            }
        }
        self.stats.hidden_since = still;
        Ok(())
    }

    /// 4: the list names only targets AWS has, and none AWS still shows `creating` (moto
    /// makes every target available at once; the proxy plays AWS's `creating`).
    fn check_listed_targets(&self) -> Result<(), String> {
        let creating = self.tb.proxy.shown_creating();
        for t in &self.published.list.mount_targets {
            if !self.targets.iter().any(|d| d.id == t.id) {
                return Err(format!(
                    "the published list {} names {}, which AWS does not have",
                    self.published.label(),
                    t.id
                ));
            }
            if creating.contains(&t.id) {
                return Err(format!(
                    "the published list {} names {}, which AWS still shows creating",
                    self.published.label(),
                    t.id
                ));
            }
        }
        Ok(())
    }

    /// 6: no client is handed a list it cannot read: the fleet's and the tasks' routers read
    /// versions 1 and 2, and a router reading version 1 only is handed the published list
    /// at each refresh.
    fn check_lists_handed(&self) -> Result<(), String> {
        let reads = efs_router::reporter::READS;
        for (i, c) in self.clients.iter().enumerate() {
            hand(&format!("client {i}"), &reads, &c.list)?;
        }
        for a in &self.actors {
            if let Some((what, c)) = a.writer() {
                hand(what, &reads, &c.list)?;
            }
        }
        if self.old_router_live() {
            hand("a router reading version 1 only", &[1], &self.published)?;
        }
        // While a task whose router writes no report runs, the list stays one it reads (the
        // function cannot know what it reads: it must not go on to version 3; a version 3
        // list stays so, so a router with reports off starts only on one).
        let running = self.unreported_running();
        for a in &self.actors {
            if let Actor::Unreported { task, reads, .. } = a {
                if running.contains(task) {
                    hand(
                        "a task whose router writes no report",
                        reads,
                        &self.published,
                    )?;
                }
            }
        }
        for t in &self.service_tasks {
            hand("a task of the service", &reads, &t.client.list)?;
        }
        Ok(())
    }

    /// 1, at a checkpoint: every live path reads back its latest version on the list.
    fn check_checkpoint(&mut self) -> Result<(), String> {
        self.clean &= self.converged();
        if self.clean {
            self.stats.checkpoints += 1;
            let client = Client::on(&self.published, self.views.client(0));
            for (path, latest) in &self.model.live {
                match client.router.read_with_fallback(path) {
                    Ok(read) if read.data == *latest => {}
                    Ok(read) => {
                        return Err(format!(
                            "checkpoint: {path} reads back {} ({}), not its latest version ({})",
                            self.model.describe(path, &read.data),
                            place_text(&read.place, &client.list),
                            self.model.describe(path, latest)
                        ))
                    }
                    Err(e) => return Err(format!("checkpoint: {path}: {e}")),
                }
            }
        }
        Ok(())
    }

    // ------------------------------------------------------------------------- the end

    /// The faults stop: rollouts complete after each run, until a reconcile changes nothing;
    /// then a rebalance of everything, and a checkpoint.
    async fn heal(&mut self) -> Result<(), String> {
        self.log
            .push("heal: no more faults or client traffic".into());
        self.end_actors();
        self.hostile_ends();
        let mut settled = false;
        for _ in 0..HEAL_RUNS {
            self.step += 1;
            let line = self.complete_rollouts();
            self.log.push(format!("#{} {line}", self.step));
            self.check().await?;
            self.step += 1;
            self.tb.proxy.reset_counts();
            let line = self
                .run_function(&event("reconcile"), Fault::None, Vec::new())
                .await?;
            self.log.push(format!("#{} {line}", self.step));
            self.check().await?;
            if self.tb.proxy.mutating_calls().is_empty() {
                settled = true;
                break;
            }
        }
        if !settled {
            return Err(format!(
                "the system did not settle: every one of {HEAL_RUNS} reconcile runs after the faults stopped changed something"
            ));
        }
        self.step += 1;
        let line = self.complete_rollouts();
        self.log.push(format!("#{} {line}", self.step));
        // A full pass, one file a run (`REBALANCE_MAX_VISITS=1`): each run after the pass's
        // first resumes where the one before stopped, and the pass that began here must end
        // with every file at home (a checkpoint). A pass a main step left half done ends
        // first.
        self.tb.env("REBALANCE_MAX_VISITS", "1");
        let rebalance = json!({"action": "rebalance", "max_moves": 100_000});
        let (mut began, mut resumes, mut ended) = (false, 0, false);
        let mut line = String::new();
        self.clean = false;
        for _ in 0..self.model.live.len() * 4 + 20 {
            self.step += 1;
            self.last_walk = None;
            line = self
                .run_function(&rebalance, Fault::None, Vec::new())
                .await?;
            self.log.push(format!("#{} {line}", self.step));
            if self.last_walk.is_none() {
                // Held (a list to publish first, as a pass's end closes placements): the
                // reconcile publishes it, and the rollout completes.
                self.check().await?;
                self.step += 1;
                let line = self
                    .run_function(&event("reconcile"), Fault::None, Vec::new())
                    .await?;
                self.log.push(format!("#{} {line}", self.step));
                self.check().await?;
                self.step += 1;
                let line = self.complete_rollouts();
                self.log.push(format!("#{} {line}", self.step));
                self.clean = false;
                continue;
            }
            match self.last_walk {
                Some((false, _)) => {
                    began = true;
                    resumes = 0;
                }
                Some((true, _)) if began => resumes += 1,
                _ => {}
            }
            ended = began && self.last_walk.is_some_and(|(_, end)| end);
            if !ended {
                // Not yet the end of a whole pass that began here.
                self.clean = false;
            }
            self.check().await?;
            if ended {
                break;
            }
        }
        self.tb.unset("REBALANCE_MAX_VISITS");
        if !ended || !self.clean {
            return Err(format!(
                "after settling, a full pass of rebalances one file a run (resumed {resumes} times) did not reach a checkpoint: {line}"
            ));
        }
        self.stats.final_pass_resumes = resumes;
        self.check().await?;
        let flat = self.model.flat() as u64;
        // Shards are not capped by the AZs: settled, the serving shards hold every file.
        let serving = self
            .published
            .list
            .shards()
            .iter()
            .filter(|t| !t.draining)
            .count() as u64;
        if flat > THRESHOLD * serving {
            return Err(format!(
                "settled with {flat} counted files on {serving} serving shard(s) at {THRESHOLD} per shard"
            ));
        }
        Ok(())
    }

    fn summary(&self) {
        let s = &self.stats;
        let proxy = &self.tb.proxy;
        println!(
            "soak: seed {} (0x{:x}), {} steps clean in {:.1} s",
            self.seed,
            self.seed,
            self.steps,
            self.started.elapsed().as_secs_f64()
        );
        println!(
            "  runs {:?} in {:.0} s (longest {:.1} s, most AWS calls {} with {} ListTasks) (failed as their fault explains: {}, killed: {}, among moves: {}, within a move: {}); faults fired {:?} of drawn {:?}; abandoned names cleaned up {}",
            s.runs, s.run_time.as_secs_f64(), s.longest_run.as_secs_f64(), s.most_calls.0, s.most_calls.1, s.failed_runs, s.kills, s.kills_among_moves, s.kills_within_a_move, s.faults, s.drawn, s.abandoned_removed
        );
        println!(
            "  runs that changed disk or AWS, judged on that {:?}; client files seen in private names {}; latest versions hidden there {} (longest {:.1} s); drains held by a cut-short move {}",
            s.changed_on_disk, s.private_copies.len(), s.hidden_latest, s.longest_hidden.as_secs_f64(), s.drains_held_by_moves
        );
        let named = &s.silent_named_after;
        println!(
            "  silent clients' reports, written through a client's mount: {} named by a run, {} by the first run after it (longest {:.1} s, most runs before {}); {} never named",
            named.len(),
            named.iter().filter(|(_, runs)| *runs == 0).count(),
            named.iter().map(|(d, _)| d.as_secs_f64()).fold(0.0, f64::max),
            named.iter().map(|(_, r)| *r).max().unwrap_or(0),
            s.silent_written.len()
        );
        println!(
            "  targets created {}, drains {}, deleted {} ({} in the wind-down of {} steps), most at once {}; most shards in a list {}; lists published {}, deployments {}, rollouts completed {}; runs stopped by a stale read {} {:?}",
            s.created, s.drains, s.deleted, s.deleted_winding_down, s.wind_down_steps, s.max_targets, s.max_shards, s.publishes, s.deployments, s.rollouts_completed, s.stale_stops.values().sum::<usize>(), s.stale_stops
        );
        println!(
            "  client ops {:?}, beside runs {}; reads {:?}, stale {}; writes {} ({} on an older list); live paths {} ({} counted); checkpoints {}",
            s.client_ops,
            s.concurrent_ops,
            s.reads,
            s.stale_reads,
            self.model.writes,
            s.old_writes,
            self.model.live.len(),
            self.model.flat(),
            s.checkpoints
        );
        println!(
            "  final list {}; deletes of several copies {}, beside runs {}; deleted paths seen on disk again: {} (all by a client whose list lacked a root of a copy: {})",
            self.published.label(),
            s.deletes_of_several_copies,
            s.deletes_beside_runs,
            s.resurrected.len(),
            s.missed_by_old_list.len()
        );
        println!(
            "  not in ECS: actors {:?}, old-list writes {:?}; runs held by reports alone {}, answers naming clients {}; runs beside a version 1 router {}, lists published beside one {}; version 2 lists published {}; version 3 lists with placements open {}, with none {}, saying everywhere {}; runs by homes {:?}",
            s.actors,
            s.hidden_writes,
            s.held_by_reports,
            s.runs_naming_clients,
            s.runs_beside_old_routers,
            s.published_beside_old_routers,
            s.v2_published,
            s.v3_open,
            s.v3_closed,
            s.v3_everywhere,
            s.homes
        );
        println!(
            "  AWS's ways {:?}: played {:?}; stale reads {:?}; longest parameter value {} characters; faults the function met by operation {:?}; throttle bursts by service {:?}; the harness's RunTask: faults met {:?}, calls again {}",
            self.aws,
            proxy.played(),
            proxy.stale_reads(),
            proxy.longest_parameter_value(),
            s.faulted_operations,
            s.burst_throttles,
            s.harness_faults,
            s.run_task_retries
        );
        println!(
            "  co-tenant: {:?}; swaps during runs {}; runs growing beside it {}, counted beside it {}; runs begun while its reports held {}, answers naming them {}; its entries left in deleted targets' trees {}; abandoned names taken with its own {}",
            s.hostile,
            s.swaps_in_runs,
            s.growth_beside_hostile,
            s.counted_beside_hostile,
            s.held_by_hostile,
            s.hostile_reports_named,
            s.hostile_left_in_deleted,
            s.abandoned_beside_hostile
        );
        println!(
            "  ECS: runs beside a task whose router writes no report {} (answers naming it {}, runs that moved once it was gone {}); steps of stopping tasks {}; runs held by the task rule alone {}; rebalances stopped by their cap {}, resumed {}, compared against added shards {}; resumes in the last pass {}",
            s.runs_beside_unreported,
            s.unreported_named,
            s.unreported_released,
            s.task_stop_steps,
            s.held_by_tasks_alone,
            s.rebalances_stopped,
            s.rebalances_resumed,
            s.compared_with_added,
            s.final_pass_resumes
        );
        // The same figures on one line for a script (`make soak-long` tables it): each
        // statistic of REQUIRED in its order, then the summary's other counts.
        let mut values: BTreeMap<&str, usize> = self.course_statistics().into_iter().collect();
        values.extend(self.aws_statistics());
        let mut statistics: Vec<(&str, usize)> =
            REQUIRED.iter().map(|r| (r.name, values[r.name])).collect();
        statistics.extend([
            ("wind-down steps", s.wind_down_steps as usize),
            ("targets deleted in the wind-down", s.deleted_winding_down),
            ("runs stopped by a stale read", s.stale_stops.values().sum()),
            (
                "runs that read a list older than the recorded publish",
                s.list_older_than_published,
            ),
            ("steps kept quiet for a kill among moves", s.quiet_steps),
            ("client files seen in private names", s.private_copies.len()),
            ("latest versions hidden in private names", s.hidden_latest),
            ("readers' reads of check 8", s.oracle_reads),
            (
                "writes beside a run that closed the placements",
                s.writes_beside_close,
            ),
            (
                "runs answered beside the app on plain paths",
                s.runs_beside_plain_app,
            ),
            (
                "runs answered beside it, ECS's tasks not listed",
                s.runs_beside_plain_app_unseen,
            ),
            (
                "its paths skipped by check 8 (a list not looking in /)",
                s.plain_unlooked,
            ),
            (
                "its copies left by a routed delete (a list not looking in /)",
                s.plain_left_by_delete,
            ),
            (
                "its paths missed by a routed read or create (a list not looking in /)",
                s.plain_missed,
            ),
            ("creates that found a path", s.creates_found),
            ("deleted paths seen on disk again", s.resurrected.len()),
            ("writes", self.model.writes as usize),
            ("live paths", self.model.live.len()),
        ]);
        let line = json!({
            "seed": self.seed,
            "steps": self.steps,
            "on": if self.views.tier { "tier" } else { "host" },
            "secs": self.started.elapsed().as_secs_f64(),
            "statistics": statistics,
        });
        println!("soak-statistics: {line}");
    }
}

/// The directory the co-tenant picked to plant in was gone when it planted (a drain removed
/// it, seen through another mount whose cache still showed it: fact 13): nothing planted.
/// Faults aimed at `op` that the function's own calls met: told from the harness's (its RunTask,
/// say) by the key that signed them.
fn faults_met_by_function(proxy: &support::proxy::Proxy, op: &str) -> usize {
    proxy.faulted_signed_by(support::function::ACCESS_KEY_ID, op)
}

/// How many tasks of `from` (id, status) show another status `now`.
fn moved_statuses(from: &[(String, String)], now: &BTreeMap<String, String>) -> usize {
    let moved = from
        .iter()
        .filter(|(id, status)| now.get(id.as_str()).is_some_and(|s| s != status));
    moved.count()
}

/// Whether a step counts among the steps of ECS stopping tasks: in the course (not the end,
/// which stops every task itself), some task of `from` shows another status `now`. Counted on
/// what ECS shows, not on having asked it to move them.
fn stop_step_counts(
    phase: Phase,
    from: &[(String, String)],
    now: &BTreeMap<String, String>,
) -> bool {
    phase != Phase::Healing && moved_statuses(from, now) > 0
}

/// What a version 3 list's `open` is, as the statistics count it.
#[derive(Debug, PartialEq, Eq)]
enum OpenKind {
    /// It names placements: misses look there (`version 3 lists with a placement open`).
    Placements,
    /// It names none: a clean pass closed them.
    Closed,
    /// `everywhere`: a miss looks in every shard, as in the earlier forms; no placement is open.
    Everywhere,
}

fn open_kind(list: &MountTargetList) -> Option<OpenKind> {
    match &list.open {
        Some(efs_router::Open::Placements(p)) if p.is_empty() => Some(OpenKind::Closed),
        Some(efs_router::Open::Placements(_)) => Some(OpenKind::Placements),
        Some(efs_router::Open::Everywhere(_)) => Some(OpenKind::Everywhere),
        None => None,
    }
}

fn spot_gone<T>(made: &std::io::Result<T>, spot: &str) -> Option<String> {
    match made {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(format!(
            "the co-tenant's spot {spot:?} was gone when it planted: nothing planted"
        )),
        _ => None,
    }
}

fn place_text(place: &Place, list: &Published) -> String {
    let root = |i: &usize| {
        list.list
            .shards()
            .get(*i)
            .map_or("?".to_string(), |t| t.root.clone())
    };
    match place {
        Place::Home => "home".into(),
        Place::MovedHome { from } => format!("moved home from {}", root(from)),
        Place::MovedByAnother { from } => format!("moved by another from {}", root(from)),
        Place::LeftElsewhere { index, reason } => {
            format!("left in {}: {reason}", root(index))
        }
        Place::AtPlacement { index } => format!("left at an open placement, {}", root(index)),
    }
}

async fn read_published(world: &World) -> Published {
    let p = world.published().await;
    let list = MountTargetList::from_json(&p.value)
        .unwrap_or_else(|e| panic!("the published list does not parse ({e}): {}", p.value));
    Published {
        list,
        text: p.value.clone(),
        version: p.version,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_seeded_soak_loses_no_file_and_keeps_every_invariant() {
    let seed = env_number("SOAK_SEED", DEFAULT_SEED);
    let steps = env_number("SOAK_STEPS", DEFAULT_STEPS);
    let mut soak = Soak::new(seed, steps).await;
    soak.run().await;
}

/// A Markdown row's cells, trimmed.
fn cells(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
    inner.split('|').map(|c| c.trim().to_string()).collect()
}

/// `n` as the docs write a step count: `400`, `2,000`.
fn with_commas(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// docs/testing.md's table of the soak's statistics (first column `statistic`) is
/// [`REQUIRED`]: the same names in the same order, each required from the same step count, on
/// the same ground, of the same seeds, given the same statistic. Values, not the prose around.
#[test]
fn the_statistics_table_is_required() {
    let doc = "docs/testing.md";
    let text = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(doc))
        .unwrap_or_else(|e| panic!("{doc}: {e}"));
    let lines: Vec<&str> = text.lines().collect();
    let headers: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].trim_start().starts_with("| statistic |"))
        .collect();
    assert_eq!(headers.len(), 1, "{doc}: one table headed `statistic`");
    assert_eq!(
        cells(lines[headers[0]]),
        ["statistic", "from steps", "on", "seeds", "given"],
        "{doc}: the statistics table's columns"
    );
    let documented: Vec<Vec<String>> = lines[headers[0] + 2..]
        .iter()
        .take_while(|l| l.trim_start().starts_with('|'))
        .map(|l| cells(l))
        .collect();
    let code: Vec<Vec<String>> = REQUIRED
        .iter()
        .map(|r| {
            let seeds = match r.default_seed_only {
                true => DEFAULT_SEED.to_string(),
                false => "any".to_string(),
            };
            let given = r.given.unwrap_or("").to_string();
            let row = [r.name.to_string(), with_commas(r.from), r.on.word().into()];
            row.into_iter().chain([seeds, given]).collect()
        })
        .collect();
    let names =
        |rows: &[Vec<String>]| -> Vec<String> { rows.iter().map(|r| r[0].clone()).collect() };
    let (doc_names, code_names) = (names(&documented), names(&code));
    let missing: Vec<&String> = code_names
        .iter()
        .filter(|n| !doc_names.contains(n))
        .collect();
    let extra: Vec<&String> = doc_names
        .iter()
        .filter(|n| !code_names.contains(n))
        .collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "{doc}, statistics: missing {missing:?}, not in REQUIRED {extra:?}"
    );
    assert_eq!(
        doc_names, code_names,
        "{doc}, statistics: not in REQUIRED's order"
    );
    for (d, c) in documented.iter().zip(&code) {
        assert_eq!(
            d, c,
            "{doc}, statistics: the row of {:?} is not REQUIRED's",
            c[0]
        );
    }
    // Each given names a statistic required before it, so that it is counted by then.
    for (i, r) in REQUIRED.iter().enumerate() {
        if let Some(g) = r.given {
            assert!(
                REQUIRED[..i].iter().any(|o| o.name == g),
                "{}: given {g}",
                r.name
            );
        }
    }
}

/// docs/testing.md's step counts in its prose are the code's: the run length from which the
/// statistics are asserted (`DEFAULT_STEPS`), and the one from which the co-tenant must have
/// done every action (`HOSTILE_ALL_STEPS`). The table's counts are pinned above.
#[test]
fn the_step_counts_testing_md_states_are_the_codes() {
    let doc = "docs/testing.md";
    let text = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(doc))
        .unwrap_or_else(|e| panic!("{doc}: {e}"));
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let claims = [
        format!(
            "A run of {} steps or more asserts each statistic",
            with_commas(DEFAULT_STEPS)
        ),
        format!(
            "every kind of action must have happened at least once (every action in {} steps)",
            with_commas(HOSTILE_ALL_STEPS)
        ),
    ];
    for claim in claims {
        assert!(text.contains(&claim), "{doc} does not say: {claim}");
    }
}

/// The accounting of three statistics that could not fail (issue 40): each counts what it
/// names, and a change that counts anything else fails here.
mod statistics {
    use super::*;

    fn statuses(of: &[(&str, &str)]) -> Vec<(String, String)> {
        of.iter()
            .map(|(i, s)| (i.to_string(), s.to_string()))
            .collect()
    }

    /// A step of ECS stopping tasks is one after which a task shows another status, in the
    /// course: not one where ECS was asked and nothing moved, nor the end's stop of every task.
    #[test]
    fn a_step_of_ecs_stopping_tasks_is_a_status_that_moved_in_the_course() {
        let from = statuses(&[("t1", "DEACTIVATING"), ("t2", "STOPPING")]);
        let same: BTreeMap<String, String> = from.iter().cloned().collect();
        let mut moved = same.clone();
        moved.insert("t2".into(), "DEPROVISIONING".into());
        for phase in [Phase::Main, Phase::WindingDown] {
            assert!(
                !stop_step_counts(phase, &from, &same),
                "{phase:?}: none moved"
            );
            assert!(
                stop_step_counts(phase, &from, &moved),
                "{phase:?}: t2 moved"
            );
        }
        assert!(
            !stop_step_counts(Phase::Healing, &from, &moved),
            "the end's"
        );
        assert!(!stop_step_counts(Phase::Main, &[], &moved), "none stopping");
        assert_eq!(moved_statuses(&from, &moved), 1);
    }

    fn v3(open: &str) -> MountTargetList {
        let text = format!(
            r#"{{"mount_targets":[{{"id":"fsmt-a","ip":"10.0.1.4","az_id":"use1-az1","root":"/"}}],"open":{open},"strategy":"rendezvous","version":3}}"#
        );
        MountTargetList::from_json(&text).unwrap()
    }

    /// `version 3 lists with a placement open` counts lists that name placements; one that says
    /// `everywhere` opens none (a miss looks everywhere, as in the earlier forms).
    #[test]
    fn a_list_that_says_everywhere_has_no_placement_open() {
        let open = v3(r#"[{"strategy":"rendezvous","targets":[{"root":"/"}]}]"#);
        assert_eq!(open_kind(&open), Some(OpenKind::Placements));
        assert_eq!(
            open_kind(&v3(r#""everywhere""#)),
            Some(OpenKind::Everywhere)
        );
        assert_eq!(open_kind(&v3("[]")), Some(OpenKind::Closed));
        let v1 = r#"{"mount_targets":[{"id":"fsmt-a","ip":"10.0.1.4"}]}"#;
        assert_eq!(open_kind(&MountTargetList::from_json(v1).unwrap()), None);
    }

    /// `faults on ECS's task operations` count the function's calls only: a fault the harness's
    /// own call meets (signed with another key, as its RunTask is) is counted apart. The proxy
    /// answers a fault without asking moto, so none runs here.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_fault_the_harness_meets_is_not_the_functions() {
        let proxy = support::proxy::Proxy::start("http://127.0.0.1:9").await;
        let harness = support::aws::Aws::at(&proxy.endpoint()).await.ecs;
        let key = support::function::ACCESS_KEY_ID;
        let function = {
            let credentials =
                aws_sdk_ecs::config::Credentials::new(key, "secret", None, None, "the function");
            let config = harness
                .config()
                .to_builder()
                .credentials_provider(credentials);
            aws_sdk_ecs::Client::from_conf(config.build())
        };
        for (client, by_function) in [(&harness, 0), (&function, 1)] {
            proxy.throttle("ListTasks", 1);
            let before = proxy.faulted("ListTasks");
            let _ = client.list_tasks().cluster("c").send().await;
            assert_eq!(proxy.faulted("ListTasks"), before + 1, "the fault fired");
            assert_eq!(faults_met_by_function(&proxy, "ListTasks"), by_function);
        }
    }
}
