//! The docs against the code: every table of names, defaults and fields the docs give is read
//! here and compared with the values the code uses. Values only, never a sentence: a test fails
//! naming the document, the table and the names missing or extra.

use crate::config::{ClientReports, ClosePlacements, Config, ENV_VARS};
use crate::event::Action;
use crate::metrics::METRICS;
use crate::plan::{Decision, StepKind};
use std::collections::BTreeSet;
use std::path::Path;

/// A file of the repository, by its path from the root.
fn read(path: &str) -> String {
    let full = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A Markdown row's cells, trimmed; `\|` inside a cell is not a boundary.
fn cells(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
    let mut out = vec![String::new()];
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                out.last_mut().unwrap().push('|');
                chars.next();
            }
            '|' => out.push(String::new()),
            _ => out.last_mut().unwrap().push(c),
        }
    }
    out.iter().map(|c| c.trim().to_string()).collect()
}

/// The rows of the one table of `doc` whose header's first cell is `first`, without the header
/// and its separator. Panics, naming the document, when there is no such table or more than one.
fn table(doc: &str, text: &str, first: &str) -> Vec<Vec<String>> {
    let lines: Vec<&str> = text.lines().collect();
    let starts: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].trim_start().starts_with('|'))
        .filter(|&i| i == 0 || !lines[i - 1].trim_start().starts_with('|'))
        .filter(|&i| cells(lines[i]).first().map(String::as_str) == Some(first))
        .collect();
    assert_eq!(
        starts.len(),
        1,
        "{doc}: expected one table whose first column is headed `{first}`"
    );
    lines[starts[0] + 2..]
        .iter()
        .take_while(|l| l.trim_start().starts_with('|'))
        .map(|l| cells(l))
        .collect()
}

/// The `code spans` of a cell, in order.
fn ticked(cell: &str) -> Vec<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// The first column's code spans, all rows together.
fn first_column(rows: &[Vec<String>]) -> Vec<String> {
    rows.iter().flat_map(|r| ticked(&r[0])).collect()
}

/// Equal lists, or a message naming the document, the table and what differs.
fn same_list(doc: &str, what: &str, documented: &[String], code: &[&str]) {
    let doc_set: BTreeSet<&str> = documented.iter().map(String::as_str).collect();
    let code_set: BTreeSet<&str> = code.iter().copied().collect();
    let missing: Vec<&str> = code_set.difference(&doc_set).copied().collect();
    let extra: Vec<&str> = doc_set.difference(&code_set).copied().collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "{doc}, {what}: missing {missing:?}, not in the code {extra:?}"
    );
    assert_eq!(
        documented.len(),
        doc_set.len(),
        "{doc}, {what}: a name is listed twice: {documented:?}"
    );
    assert_eq!(
        documented, code,
        "{doc}, {what}: the names are not in the code's order"
    );
}

#[test]
fn the_decision_table_is_decision_names() {
    let doc = "docs/contract.md";
    let rows = table(doc, &read(doc), "decision");
    for row in &rows {
        assert_eq!(
            ticked(&row[0]).len(),
            1,
            "{doc}: one decision a row: {row:?}"
        );
    }
    same_list(doc, "decisions", &first_column(&rows), &Decision::NAMES);
}

/// Every kind of step. The match fails to compile when a kind is added, until it is listed here
/// in `StepKind`'s order (the order steps run in, which the docs' table follows).
fn step_kinds() -> Vec<StepKind> {
    let all = [
        StepKind::SaveState,
        StepKind::CreateShardDir,
        StepKind::CreateMountTarget,
        StepKind::MoveFiles,
        StepKind::DeleteMountTarget,
        StepKind::Wait,
        StepKind::Publish,
        StepKind::ForceDeployment,
        StepKind::RemoveShardDirs,
    ];
    for kind in all {
        match kind {
            StepKind::SaveState
            | StepKind::CreateShardDir
            | StepKind::CreateMountTarget
            | StepKind::MoveFiles
            | StepKind::DeleteMountTarget
            | StepKind::Wait
            | StepKind::Publish
            | StepKind::ForceDeployment
            | StepKind::RemoveShardDirs => {}
        }
    }
    assert!(
        all.windows(2).all(|w| w[0] < w[1]),
        "listed in StepKind's order"
    );
    all.to_vec()
}

#[test]
fn the_action_table_is_the_step_kinds() {
    let doc = "docs/contract.md";
    let rows = table(doc, &read(doc), "action");
    let names: Vec<&str> = step_kinds().into_iter().map(StepKind::name).collect();
    same_list(doc, "actions", &first_column(&rows), &names);
}

#[test]
fn the_event_table_is_the_events() {
    let doc = "docs/contract.md";
    let rows = table(doc, &read(doc), "event");
    let documented: Vec<String> = rows
        .iter()
        .flat_map(|r| {
            r[0].split("\"action\": \"")
                .skip(1)
                .map(|s| s.split('"').next().unwrap_or_default().to_string())
                .collect::<Vec<_>>()
        })
        .collect();
    let all = [
        Action::Reconcile,
        Action::Plan,
        Action::Rebalance { max_moves: 1 },
        Action::Migrate,
        Action::Undo,
    ];
    for action in all {
        match action {
            Action::Reconcile
            | Action::Plan
            | Action::Rebalance { .. }
            | Action::Migrate
            | Action::Undo => {}
        }
    }
    let names: Vec<&str> = all.iter().map(|a| a.as_str()).collect();
    same_list(doc, "events", &documented, &names);
}

/// The README's settings: one row a variable, in `ENV_VARS`'s order.
#[test]
fn the_settings_table_is_env_vars() {
    let doc = "README.md";
    let rows = table(doc, &read(doc), "variable");
    for row in &rows {
        assert_eq!(
            ticked(&row[0]).len(),
            1,
            "{doc}: one variable a row: {row:?}"
        );
    }
    same_list(doc, "settings", &first_column(&rows), ENV_VARS);
}

/// The template parameter each row names is the one the template passes to that variable.
#[test]
fn the_settings_table_names_the_template_parameters() {
    let doc = "README.md";
    let template = read("template.yaml");
    for row in table(doc, &read(doc), "variable") {
        let var = &ticked(&row[0])[0];
        let line = template
            .lines()
            .map(str::trim)
            .find(|l| l.starts_with(&format!("{var}: ")))
            .unwrap_or_else(|| panic!("template.yaml passes no {var}"));
        let parameter = line
            .split("!Ref ")
            .nth(1)
            .and_then(|s| s.split([',', ']', ' ']).next())
            .unwrap_or_else(|| panic!("template.yaml: no parameter on {line:?}"));
        assert_eq!(
            ticked(&row[1]),
            [parameter],
            "{doc}: {var}'s template parameter"
        );
    }
}

/// The defaults the code applies, as the README writes them: `None` where the README says it in
/// words (no default value of its own).
fn code_defaults(c: &Config) -> Vec<(&'static str, Option<String>)> {
    let secs = |d: std::time::Duration| Some(d.as_secs().to_string());
    vec![
        ("SSM_PARAMETER_NAME", Some(c.parameter_name.clone())),
        ("STATE_PARAMETER_NAME", Some(c.state_parameter_name.clone())),
        ("EFS_MOUNT_PATH", Some(c.mount_path.display().to_string())),
        ("WATCH_DIR", Some(c.watch_dir.clone())),
        ("FILE_THRESHOLD", Some(c.file_threshold.to_string())),
        ("SUBNET_IDS", c.subnet_ids.as_ref().map(|v| v.join(","))),
        (
            "SECURITY_GROUP_IDS",
            c.security_group_ids.as_ref().map(|v| v.join(",")),
        ),
        (
            "MAX_MOUNT_TARGETS",
            c.max_mount_targets.map(|n| n.to_string()),
        ),
        ("MAX_SHARDS", Some(c.max_shards.to_string())),
        ("SCALE_IN_RATIO", Some(c.scale_in_ratio.to_string())),
        ("SCALE_IN_COOLDOWN_SECONDS", secs(c.scale_in_cooldown)),
        (
            "PROTECTED_SUBNET_IDS",
            none_if_empty(&c.protected_subnet_ids),
        ),
        ("SUBNET_EXCLUSION_SECONDS", secs(c.subnet_exclusion)),
        ("API_ATTEMPT_TIMEOUT_SECONDS", secs(c.api_timeouts.attempt)),
        ("API_CALL_TIMEOUT_SECONDS", secs(c.api_timeouts.call)),
        ("CLIENT_REFRESH_SECONDS", secs(c.client_refresh)),
        ("MOVE_CONCURRENCY", Some(c.move_concurrency.to_string())),
        ("ECS_CLIENT_FAMILIES", none_if_empty(&c.client_families)),
        (
            "CLIENT_REPORTS",
            Some(client_reports(c.client_reports).to_string()),
        ),
        (
            "REBALANCE_MAX_VISITS",
            c.rebalance_max_visits.map(|n| n.to_string()),
        ),
        ("ABANDONED_AFTER_SECONDS", secs(c.abandoned_after)),
        (
            "CLOSE_PLACEMENTS",
            Some(close_placements(c.close_placements).to_string()),
        ),
    ]
}

fn close_placements(when: ClosePlacements) -> &'static str {
    match when {
        ClosePlacements::WhenEveryWriterReports => ClosePlacements::WHEN_EVERY_WRITER_REPORTS,
        ClosePlacements::UnseenWritersMayHideFiles => {
            ClosePlacements::UNSEEN_WRITERS_MAY_HIDE_FILES
        }
    }
}

fn client_reports(mode: ClientReports) -> &'static str {
    match mode {
        ClientReports::Require => ClientReports::REQUIRE,
        ClientReports::EcsMayHideFiles => ClientReports::ECS_MAY_HIDE_FILES,
    }
}

fn none_if_empty(v: &[String]) -> Option<String> {
    (!v.is_empty()).then(|| v.join(","))
}

const REQUIRED: [&str; 3] = ["EFS_FILE_SYSTEM_ID", "ECS_CLUSTER_NAME", "ECS_SERVICE_NAME"];

/// Each default the README states: `required` where the code refuses to run without the
/// variable, the code's own value in the first code span where it has one, and no value where
/// it has none.
#[test]
fn the_settings_table_states_the_code_defaults() {
    let doc = "README.md";
    let only_required = |name: &str| REQUIRED.contains(&name).then(|| "x".to_string());
    let config = Config::from_lookup(only_required).expect("the required variables suffice");
    let defaults = code_defaults(&config);
    for row in table(doc, &read(doc), "variable") {
        let var = ticked(&row[0]).remove(0);
        let cell = &row[2];
        if REQUIRED.contains(&var.as_str()) {
            assert_eq!(cell, "required", "{doc}: {var}'s default");
            let without = |name: &str| (name != var).then(|| "x".to_string());
            let err = Config::from_lookup(without).expect_err("required");
            assert_eq!(err.var, var, "{doc}: {var} is required, the code says");
            continue;
        }
        let (_, code) = defaults
            .iter()
            .find(|(name, _)| *name == var)
            .unwrap_or_else(|| panic!("{doc}: {var} has no default in this test"));
        let stated = cell.starts_with('`').then(|| ticked(cell).remove(0));
        assert_eq!(&stated, code, "{doc}: {var}'s default ({cell:?})");
    }
}

/// The metrics table: every metric of `METRICS`, in its order, with its unit and dimensions.
#[test]
fn the_metric_table_is_metrics() {
    let doc = "docs/contract.md";
    let rows = table(doc, &read(doc), "metric");
    let names: Vec<&str> = METRICS.iter().map(|m| m.name).collect();
    same_list(doc, "metrics", &first_column(&rows), &names);
    for row in &rows {
        for name in ticked(&row[0]) {
            let spec = METRICS.iter().find(|m| m.name == name).unwrap();
            let unit = row[1].split_whitespace().next().unwrap_or_default();
            assert_eq!(unit, spec.unit.as_str(), "{doc}: {name}'s unit");
            let dims: Vec<String> = ticked(&row[2]);
            assert_eq!(dims, spec.dimensions, "{doc}: {name}'s dimensions");
        }
    }
}

/// Each `Error::kind` of src/error.rs, in its order, read from the source: the enum's variants
/// carry sources that a test cannot make up.
fn error_kinds() -> Vec<&'static str> {
    let source: &'static str = read("src/error.rs").leak();
    let kind_fn = source
        .split("pub fn kind(&self)")
        .nth(1)
        .expect("src/error.rs has Error::kind");
    let body = &kind_fn[..kind_fn.find("\n    }\n").expect("its end")];
    let kinds: Vec<&str> = body
        .split("=> \"")
        .skip(1)
        .map(|s| s.split('"').next().unwrap_or_default())
        .collect();
    assert!(
        kinds.len() > 10,
        "src/error.rs: Error::kind read as {kinds:?}"
    );
    kinds
}

/// The error types: each `Error::kind` of src/error.rs, read from its source (the enum's
/// variants carry sources that a test cannot make up).
#[test]
fn the_error_table_is_the_error_kinds() {
    let doc = "docs/contract.md";
    let rows = table(doc, &read(doc), "error type");
    let kinds = error_kinds();
    same_list(doc, "error types", &first_column(&rows), &kinds);
}

/// The error kinds a run handles itself and never returns (docs/contract.md says so of each).
const HANDLED_INSIDE: [&str; 3] = ["MountTargetConflict", "SubnetRefused", "TooManyTasks"];

/// The runbook of FunctionErrorsAlarm: a row for every error type a run can return.
#[test]
fn the_runbook_covers_every_returned_error_type() {
    let doc = "docs/operations.md";
    let rows = table(doc, &read(doc), "error type");
    let mut documented = first_column(&rows);
    documented.sort();
    let mut kinds = error_kinds();
    kinds.retain(|k| !HANDLED_INSIDE.contains(k));
    kinds.sort();
    same_list(doc, "error types of the runbook", &documented, &kinds);
}

/// The response's fields, as serialized from a response with every optional field present.
#[test]
fn the_response_tables_are_the_fields() {
    use crate::moves::Moves;
    use crate::response::{NewMountTarget, Response};
    use crate::state::rebalancing::Cursor;
    let moves = Moves {
        abandoned_removed: 1,
        incomplete: true,
        kept_hidden: 1,
        resume_at: Some(Cursor {
            root: "/".into(),
            path: String::new(),
        }),
        comparison: Some("full"),
        ..Moves::default()
    };
    let response = Response {
        status_code: 200,
        action: "reconcile",
        file_count: 0,
        files_per_shard: Default::default(),
        files_per_target: Default::default(),
        threshold: 1,
        desired: 1,
        shards: 1,
        desired_shards: 1,
        at_capacity: false,
        new_mount_target: Some(NewMountTarget {
            id: "fsmt-1".into(),
            ip: None,
            az: "az".into(),
            subnet_id: "subnet-1".into(),
            root: "/".into(),
        }),
        total: 1,
        mount_targets: vec![],
        waiting_for: vec![],
        waiting_for_tasks: vec![crate::plan::OldTask {
            id: "t".into(),
            group: "service:s".into(),
            last_status: "RUNNING".into(),
        }],
        // A `Behind` cannot be made here (its `Why` is private to the plan): its field is
        // added below by name.
        clients_behind: vec![],
        actions: vec![],
        decision: "keep",
        reason: String::new(),
        homes: Some("announced"),
        warnings: vec![],
        warning_kinds: vec![],
        excluded_subnets: vec![crate::plan::Excluded {
            key: "subnet-1".into(),
            until: 0,
            reason: String::new(),
        }],
        moves: Some(moves),
        deleted: vec!["fsmt-1".into()],
    };
    let value = serde_json::to_value(&response).expect("serializes");
    let keys = |v: &serde_json::Value| -> Vec<String> {
        v.as_object().expect("an object").keys().cloned().collect()
    };
    let mut fields = keys(&value);
    fields.push("clients_behind".into());
    fields.sort();
    let code: Vec<&str> = fields.iter().map(String::as_str).collect();
    let doc = "docs/contract.md";
    let text = read(doc);
    let mut documented = first_column(&table(doc, &text, "field"));
    documented.sort();
    same_list(doc, "response fields", &documented, &code);
    let mut moves_fields = keys(&value["moves"]);
    moves_fields.sort();
    let moves_code: Vec<&str> = moves_fields.iter().map(String::as_str).collect();
    let mut documented = first_column(&table(doc, &text, "`moves` field"));
    documented.sort();
    same_list(doc, "`moves` fields", &documented, &moves_code);
}

/// The Python package's module table: one row a module of clients/python/src/efs_router/.
#[test]
fn the_python_module_table_is_the_package() {
    let doc = "clients/python/README.md";
    let rows = table(doc, &read(doc), "module");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("clients/python/src/efs_router");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .expect("the package's directory")
        .map(|e| {
            e.expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|n| n.ends_with(".py") && n != "__init__.py")
        .collect();
    files.sort();
    let mut documented = first_column(&rows);
    documented.sort();
    let files: Vec<&str> = files.iter().map(String::as_str).collect();
    same_list(doc, "modules", &documented, &files);
}

/// The modules a source file declares (`mod x;`, whatever its visibility), not inline ones.
fn declared(source: &str) -> Vec<String> {
    source
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            let l = l.strip_prefix("pub ").unwrap_or(l);
            let l = l.strip_prefix("pub(crate) ").unwrap_or(l);
            l.strip_prefix("mod ")?
                .strip_suffix(';')
                .map(str::to_string)
        })
        .collect()
}

/// Each crate's map (the list in its lib.rs's doc comment) against its modules: every module
/// of the crate and of its folders is named there, and every item of the map names a module
/// or a file that exists.
#[test]
fn the_module_maps_are_the_modules() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for src in ["src", "router/src"] {
        let lib = format!("{src}/lib.rs");
        let text = read(&lib);
        // The crate's folders: the modules with a mod.rs of their own.
        let folders: Vec<String> = declared(&text)
            .into_iter()
            .filter(|m| root.join(format!("{src}/{m}/mod.rs")).is_file())
            .collect();
        assert!(folders.len() > 1, "{lib}: folders found {folders:?}");
        let map: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("//!")).collect();
        let map = map.join("\n");
        let named = |name: &str| map.contains(&format!("`{name}`"));
        for m in declared(&text) {
            assert!(named(&m), "{lib}: its map does not name the module {m}");
        }
        for folder in &folders {
            for m in declared(&read(&format!("{src}/{folder}/mod.rs"))) {
                assert!(
                    named(&format!("{folder}::{m}")) || named(&format!("{m}.rs")),
                    "{lib}: its map does not name the module {folder}::{m}"
                );
            }
        }
        let items = map
            .lines()
            .filter_map(|l| l.trim_start().strip_prefix("- "))
            .filter_map(|item| item.split('`').nth(1));
        for item in items {
            let path = item.replace("::", "/");
            let mut places = vec![format!("{src}/{path}"), format!("{src}/{path}.rs")];
            places.push(format!("{src}/{path}/mod.rs"));
            places.extend(folders.iter().map(|f| format!("{src}/{f}/{path}")));
            assert!(
                places.iter().any(|p| root.join(p).is_file()),
                "{lib}: its map names {item}, which is no module or file of {src}"
            );
        }
    }
}

/// The map says `aws` is the only code that sees the SDK: no other file of src/ names it.
#[test]
fn only_the_aws_modules_see_the_sdk() {
    let sdk = concat!("aws", "_sdk_");
    let mut dirs = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("src")];
    let mut seen = 0;
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("a source directory") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                seen += 1;
                let outside = !path.parent().is_some_and(|p| p.ends_with("src/aws"));
                let text = std::fs::read_to_string(&path).expect("a source file");
                assert!(
                    !(outside && text.contains(sdk)),
                    "{} names the SDK ({sdk}…), which only src/aws/ may",
                    path.display()
                );
            }
        }
    }
    assert!(seen > 40, "read {seen} source files of src/");
}

/// scripts/efs-drive.py decides by decision names (`RESTING`, `NEEDS_OPERATOR`): each must be
/// one the function gives, or a renamed decision would leave the driver waiting for nothing.
#[test]
fn the_drivers_decisions_are_decision_names() {
    let script = "scripts/efs-drive.py";
    let text = read(script);
    for set in ["RESTING = {", "NEEDS_OPERATOR = {"] {
        let start = text
            .find(set)
            .unwrap_or_else(|| panic!("{script}: no {set}"));
        let body = &text[start + set.len()..];
        let body = &body[..body.find('}').expect("a set's end")];
        let names: Vec<&str> = body.split('"').skip(1).step_by(2).collect();
        assert!(!names.is_empty(), "{script}: {set} names nothing");
        for name in names {
            assert!(
                Decision::NAMES.contains(&name),
                "{script}: {set} names {name:?}, not a decision"
            );
        }
    }
}

/// What each reader reads first, in the README's table of readers, and the most bytes it may
/// come to: half of what the same reader had to read on 2026-12-06 (operator: README.md,
/// docs/operations.md and docs/contract.md, 136,969 bytes; app author: docs/routing.md,
/// router/README.md and clients/python/README.md, 128,289; contributor: docs/design.md,
/// data-plane.md, code.md, testing.md and scaling.md, 116,884).
const READER_PATHS: [(&str, &[&str], usize); 3] = [
    ("operator", &["README.md", "docs/operations.md"], 68_484),
    (
        "app author",
        &[
            "docs/routing.md",
            "router/README.md",
            "clients/python/README.md",
        ],
        64_144,
    ),
    (
        "contributor",
        &["docs/design.md", "docs/code.md", "docs/testing.md"],
        58_442,
    ),
];

/// The targets of a cell's Markdown links, without their anchors.
fn link_targets(cell: &str) -> Vec<String> {
    cell.split("](")
        .skip(1)
        .map(|s| s[..s.find(')').unwrap_or(s.len())].to_string())
        .map(|s| s.split('#').next().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn each_readers_path_is_the_readmes_table() {
    let doc = "README.md";
    let rows = table(doc, &read(doc), "reader");
    let readers: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
    let names: Vec<&str> = READER_PATHS.iter().map(|(reader, ..)| *reader).collect();
    assert_eq!(readers, names, "{doc}: the readers of its table");
    for (row, (reader, files, _)) in rows.iter().zip(READER_PATHS) {
        assert_eq!(
            link_targets(&row[1]),
            files,
            "{doc}: what the {reader} reads first"
        );
        for target in link_targets(&row[1]).iter().chain(&link_targets(&row[2])) {
            let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(target);
            assert!(path.exists(), "{doc}: the {reader}'s path links {target}");
        }
    }
}

#[test]
fn each_readers_path_is_within_its_budget() {
    for (reader, files, budget) in READER_PATHS {
        let bytes: usize = files.iter().map(|f| read(f).len()).sum();
        assert!(
            bytes <= budget,
            "the {reader}'s path {files:?} is {bytes} bytes, over its budget of {budget}: \
             cut repetition, or move what is looked up rather than read to a reference"
        );
    }
}

/// router/README.md's parity table: a row for each file of tests/vectors/, and each row's
/// Rust and Python tests name that file.
#[test]
fn the_parity_table_names_every_vector_file() {
    let doc = "router/README.md";
    let rows = table(doc, &read(doc), "vectors");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .expect("tests/vectors")
        .map(|e| {
            e.expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|n| n.ends_with(".json"))
        .collect();
    files.sort();
    let mut documented = first_column(&rows);
    documented.sort();
    let files: Vec<&str> = files.iter().map(String::as_str).collect();
    same_list(doc, "vector files", &documented, &files);
    for row in &rows {
        let vectors = &ticked(&row[0])[0];
        for (cell, side) in [
            (&row[1], "router/tests/"),
            (&row[2], "clients/python/tests/"),
        ] {
            let tests = ticked(cell);
            assert!(!tests.is_empty(), "{doc}: {vectors} has no test in {side}");
            for test in tests {
                assert!(test.starts_with(side), "{doc}: {test} is not in {side}");
                assert!(
                    read(&test).contains(vectors.as_str()),
                    "{doc}: {test} does not name {vectors}"
                );
            }
        }
    }
}
