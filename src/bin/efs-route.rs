//! efs-route: where does a logical path live? For operators.
//!
//! ```text
//! efs-route (--list FILE|- | --ssm NAME) [--base DIR | --mounts TEMPLATE] [--json] resolve PATH...
//! efs-route (--list FILE|- | --ssm NAME) [--base DIR | --mounts TEMPLATE] [--json] where PATH...
//! efs-route (--list FILE|- | --ssm NAME) [--json] show
//! efs-route (--list FILE|- | --ssm NAME) [--base DIR] [--json] clients
//! ```
//!
//! A shard is a directory; a mount target of a version 2 list serves several. Shard positions
//! (`resolve`'s `shard`, `--mounts`' `{i}`) count the list's shards in order, as `show` lists them.

use efs_mount_autoscaler::aws::Aws;
use efs_router::{Found, Layout, MountTargetList, Resolved, Router, Target};
use serde_json::json;
use std::io::Read as _;
use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "\
usage: efs-route (--list FILE|- | --ssm NAME) [--base DIR | --mounts TEMPLATE] [--json] COMMAND [PATH...]

Routes logical paths by the published list of mount targets (efs-mount-autoscaler).

commands:
  resolve PATH...   the home shard of each path (its position, root and mount target)
                    and its real path (touches no file)
  where PATH...     the same, and whether the file is at home, elsewhere or missing
                    (looks at each shard directory; moves nothing)
  show              the list as this tool reads it: strategy, version, and each mount
                    target with its shards (position, root, draining), with totals
  clients           the clients' reports under <base>/.efs-router-clients: each
                    client, whether it is live and runs this list, the list version
                    it routes by, what it can read, when it was last seen (removes
                    nothing)

options:
  --list FILE       the published list (JSON, any form); '-' reads standard input
  --ssm NAME        read it from this SSM parameter (AWS_REGION, credentials and
                    AWS_ENDPOINT_URL from the environment, as the AWS CLI does)
  --base DIR        the file system root is mounted once at DIR (default /mnt/efs):
                    a file is DIR/<root>/<path>
  --mounts TEMPLATE one mount per shard, TEMPLATE with {i} for the shard's position
                    (as show numbers them), e.g. /mnt/efs-{i}: shard i's ip:root is
                    mounted at <mount i>, and a file is <mount i>/<path>
  --json            one JSON object per path (show: one for the list) instead of text
";

/// Where the published list comes from.
#[derive(Debug)]
enum ListSource {
    File(PathBuf),
    Stdin,
    Ssm(String),
}

/// Reads and parses the list from its source, with the SHA-256 of its text (what clients
/// report); the error names the source.
fn read_list(source: &ListSource) -> Result<(MountTargetList, String), String> {
    let (name, text) = match source {
        ListSource::File(path) => (
            path.display().to_string(),
            std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?,
        ),
        ListSource::Stdin => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|e| format!("standard input: {e}"))?;
            ("standard input".to_owned(), text)
        }
        ListSource::Ssm(name) => return read_ssm(name),
    };
    let list = MountTargetList::from_json(&text).map_err(|e| format!("{name}: {e}"))?;
    Ok((list, efs_router::report::list_sha256(&text)))
}

/// Through the function's own SSM module, so both read the parameter the same way.
fn read_ssm(name: &str) -> Result<(MountTargetList, String), String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let aws = Aws::from_env(Default::default()).await;
        match aws.ssm.read(name).await {
            Ok(Some(parameter)) => Ok((parameter.list, parameter.sha256)),
            Ok(None) => Err(format!("SSM parameter {name} does not exist")),
            Err(e) => Err(e.to_string()),
        }
    })
}

#[derive(Debug)]
struct Args {
    list: ListSource,
    mounts: Option<String>,
    base: Option<PathBuf>,
    json: bool,
    command: String,
    paths: Vec<String>,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let (mut list, mut mounts, mut base, mut json) = (None, None, None, false);
    let mut rest = Vec::new();
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--list" => {
                let v = value("--list")?;
                list = Some(if v == "-" {
                    ListSource::Stdin
                } else {
                    ListSource::File(v.into())
                });
            }
            "--ssm" => list = Some(ListSource::Ssm(value("--ssm")?)),
            "--base" => base = Some(PathBuf::from(value("--base")?)),
            "--mounts" => mounts = Some(value("--mounts")?),
            "--json" => json = true,
            "-h" | "--help" => return Err(String::new()),
            "--" => {
                rest.extend(args.by_ref());
            }
            s if s.starts_with("--") => return Err(format!("unknown option {s}")),
            _ => rest.push(arg),
        }
    }
    if base.is_some() && mounts.is_some() {
        return Err("--base and --mounts are two different layouts: give one".to_owned());
    }
    let list = list.ok_or("--list or --ssm is required")?;
    let mut rest = rest.into_iter();
    let command = rest.next().ok_or("no command")?;
    let paths: Vec<String> = rest.collect();
    match command.as_str() {
        "resolve" | "where" if paths.is_empty() => {
            return Err(format!("{command} needs at least one PATH"))
        }
        "resolve" | "where" => {}
        "show" | "clients" if !paths.is_empty() => return Err(format!("{command} takes no PATH")),
        "show" | "clients" => {}
        other => return Err(format!("unknown command {other:?}")),
    }
    Ok(Args {
        list,
        mounts,
        base,
        json,
        command,
        paths,
    })
}

fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(a) => a,
        Err(e) if e.is_empty() => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("efs-route: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("efs-route: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Ok(false) when some path could not be routed (each is reported and the others still are).
fn run(args: &Args) -> Result<bool, String> {
    let (list, sha256) = read_list(&args.list)?;
    if args.command == "show" {
        show(&list, args.json);
        return Ok(true);
    }
    if args.command == "clients" {
        let base = args.base.clone().unwrap_or_else(|| "/mnt/efs".into());
        clients(&base, &sha256, args.json);
        return Ok(true);
    }
    let n = list.shard_count();
    let layout = match (&args.mounts, &args.base) {
        (Some(t), _) => Layout::per_target_template(t, n).map_err(|e| e.to_string())?,
        (None, base) => Layout::single_mount(base.clone().unwrap_or_else(|| "/mnt/efs".into())),
    };
    let router = Router::new(list, layout).map_err(|e| e.to_string())?;
    let mut all_ok = true;
    for (k, path) in args.paths.iter().enumerate() {
        let answer = if args.command == "where" {
            router.locate(path).map(|l| (l.home, Some(l.found)))
        } else {
            router.resolve(path).map(|r| (r, None))
        };
        match answer {
            Ok((home, found)) => print_answer(&router, path, &home, found.as_ref(), args.json, k),
            Err(e) => {
                all_ok = false;
                if args.json {
                    println!("{}", json!({"path": path, "error": e.to_string()}));
                } else {
                    eprintln!("efs-route: {e}");
                }
            }
        }
    }
    Ok(all_ok)
}

/// The clients' reports, one line (or JSON object) each, then what could not be read.
fn clients(base: &std::path::Path, sha256: &str, as_json: bool) {
    let reports = efs_mount_autoscaler::reports::look(base);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    for f in &reports.files {
        let live = f.is_live(now);
        let seen = f.last_seen();
        let ago = now.saturating_sub(seen);
        let line = match &f.read {
            Ok(r) => json!({
                "client": r.client, "live": live, "current": r.list.sha256 == sha256,
                "list_version": r.list.version, "parameter_version": r.list.parameter_version,
                "reads": r.reads, "router": r.router, "last_seen": seen,
                "refreshed_at": r.refreshed_at, "refresh_failed_at": r.refresh_failed_at,
                "task": r.task, "label": r.label,
            }),
            Err(kind) => json!({"file": f.file, "live": live, "fault": kind, "last_seen": seen}),
        };
        if as_json {
            println!("{line}");
            continue;
        }
        let state = if !live {
            "gone"
        } else if line["current"] == true {
            "current"
        } else {
            "BEHIND"
        };
        // Every string here is a task's to choose: escaped, so that none drives the terminal.
        match &f.read {
            Ok(r) => println!(
                "{}  {state:<7}  list v{} (parameter version {})  reads {:?}  seen {ago} s ago  {}{}",
                printable(&r.client),
                r.list.version,
                r.list.parameter_version.map_or("?".into(), |v| v.to_string()),
                r.reads,
                printable(&r.router),
                r.task
                    .as_deref()
                    .map_or(String::new(), |t| format!("  task {}", printable(t))),
            ),
            Err(kind) => println!(
                "{}  {}  not a report ({kind}), seen {ago} s ago",
                printable(&f.file),
                if live { "UNKNOWN" } else { "gone   " }
            ),
        }
    }
    if reports.unread > 0 || reports.dir_problem.is_some() {
        let problem = reports
            .dir_problem
            .as_deref()
            .unwrap_or("too many, or too slow");
        match as_json {
            true => println!("{}", json!({"unread": reports.unread, "problem": problem})),
            false => println!("{} entries not read: {problem}", reports.unread),
        }
    }
}

/// `text` with its control characters (a terminal's escape sequences among them) written as
/// Rust escapes: shown, never obeyed.
fn printable(text: &str) -> String {
    text.chars()
        .map(|c| match c.is_control() {
            true => c.escape_default().to_string(),
            false => c.to_string(),
        })
        .collect()
}

/// The mount targets, each with its shards and their positions among the list's shards.
fn show(list: &MountTargetList, as_json: bool) {
    let mut first = 0;
    let grouped: Vec<(&Target, usize)> = list
        .mount_targets
        .iter()
        .map(|t| {
            let at = first;
            first += t.shard_roots().len();
            (t, at)
        })
        .collect();
    match as_json {
        true => println!("{}", list_json(list, &grouped)),
        false => print_list(list, &grouped),
    }
}

/// The list as `show --json` gives it: `grouped` is each target with its first shard's position.
fn list_json(list: &MountTargetList, grouped: &[(&Target, usize)]) -> serde_json::Value {
    let shards = list.shard_count();
    let draining = list.shards().iter().filter(|s| s.draining).count();
    let targets: Vec<_> = grouped
            .iter()
            .map(|(t, at)| {
                let shards: Vec<_> = (0u32..)
                    .zip(t.shard_roots())
                    .map(|(k, root)| {
                        json!({"shard": at + k as usize, "root": root, "draining": t.shard_draining(k)})
                    })
                    .collect();
                json!({
                    "id": t.id,
                    "ip": t.ip,
                    "az": t.az,
                    "az_id": t.az_id,
                    "subnet_id": t.subnet_id,
                    "draining": t.draining,
                    "shards": shards,
                })
            })
            .collect();
    json!({
        "strategy": list.strategy.as_str(),
        "version": list.version(),
        "targets": list.mount_targets.len(),
        "shards": shards,
        "draining_shards": draining,
        "open": list.open,
        "mount_targets": targets,
    })
}

/// The list as `show` prints it for a reader: `grouped` as [`list_json`]'s.
fn print_list(list: &MountTargetList, grouped: &[(&Target, usize)]) {
    let shards = list.shard_count();
    let draining = list.shards().iter().filter(|s| s.draining).count();
    println!("strategy: {}", list.strategy);
    println!("version:  {}", list.version());
    println!("targets:  {}", list.mount_targets.len());
    println!("shards:   {shards} ({draining} draining)");
    // Where a miss looks besides home (list version 3).
    match &list.open {
        None => {}
        Some(efs_router::Open::Everywhere(_)) => println!("open:     everywhere"),
        Some(efs_router::Open::Placements(p)) => {
            let each: Vec<String> = p.iter().map(|p| p.roots().join(" ")).collect();
            println!("open:     {} placements [{}]", p.len(), each.join("; "));
        }
    }
    for &(t, at) in grouped {
        println!();
        println!(
            "{} {} {}/{} {}{}",
            t.id,
            t.ip,
            t.az.as_deref().unwrap_or("-"),
            t.az_id.as_deref().unwrap_or("-"),
            t.subnet_id.as_deref().unwrap_or("-"),
            if t.draining { " (draining)" } else { "" }
        );
        for (k, root) in (0u32..).zip(t.shard_roots()) {
            println!(
                "  shard {}: {root}{}",
                at + k as usize,
                if t.shard_draining(k) {
                    " (draining)"
                } else {
                    ""
                }
            );
        }
    }
}

fn print_answer(
    router: &Router,
    path: &str,
    home: &Resolved,
    found: Option<&Found>,
    as_json: bool,
    k: usize,
) {
    // The home shard: a copy of its mount target's entry with the shard's root.
    let t = &router.shards()[home.index];
    let (status, at) = match found {
        None => (None, None),
        Some(Found::Home) => (Some("home"), None),
        Some(Found::Elsewhere { index, real }) => (Some("elsewhere"), Some((*index, real))),
        Some(Found::Missing) => (Some("missing"), None),
    };
    if as_json {
        let mut v = json!({
            "path": path,
            "normalised": home.logical.as_str(),
            "shard": home.index,
            "id": t.id,
            "ip": t.ip,
            "root": t.root,
            "real_path": home.real,
            "strategy": router.list().strategy.as_str(),
        });
        if let Some(s) = status {
            v["status"] = json!(s);
        }
        if let Some((index, real)) = at {
            let o = &router.shards()[index];
            v["found"] =
                json!({"shard": index, "id": o.id, "ip": o.ip, "root": o.root, "real_path": real});
        }
        println!("{v}");
        return;
    }
    if k > 0 {
        println!();
    }
    println!("path:       {path}");
    println!("normalised: {}", home.logical);
    println!(
        "shard:      {} (root {}, mount target {} {})",
        home.index, t.root, t.id, t.ip
    );
    println!("real path:  {}", home.real.display());
    if let Some(s) = status {
        println!("status:     {s}");
    }
    if let Some((index, real)) = at {
        let o = &router.shards()[index];
        println!(
            "found at:   shard {index} (root {}, mount target {}): {}",
            o.root,
            o.id,
            real.display()
        );
    }
}
