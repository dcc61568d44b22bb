//! The `efs-route` command-line tool, run as a process.

mod support;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

const LIST: &str = r#"{"mount_targets":[
  {"id":"fsmt-a","ip":"10.0.1.4","az":"us-east-1a","az_id":"use1-az6","subnet_id":"subnet-1","root":"/"},
  {"id":"fsmt-b","ip":"10.0.2.7","az":"us-east-1b","az_id":"use1-az4","subnet_id":"subnet-2","root":"/shards/use1-az4"},
  {"id":"fsmt-c","ip":"10.0.3.9","az":"us-east-1c","az_id":"use1-az1","subnet_id":"subnet-3","root":"/shards/use1-az1"}
 ],"strategy":"rendezvous"}"#;

/// Version 2: fsmt-a serves `/`, `/shards/use1-az1.1`, `/shards/use1-az1.2`; fsmt-b serves
/// `/shards/use1-az2` and `/shards/use1-az2.1`, the last draining; fsmt-c drains whole.
const V2: &str = r#"{"mount_targets":[
  {"id":"fsmt-a","ip":"10.0.1.4","az":"us-east-1a","az_id":"use1-az1","subnet_id":"subnet-1","root":"/","shards":3},
  {"id":"fsmt-b","ip":"10.0.2.7","az":"us-east-1b","az_id":"use1-az2","subnet_id":"subnet-2","root":"/shards/use1-az2","shards":2,"draining_shards":1},
  {"id":"fsmt-c","ip":"10.0.3.9","az":"us-east-1c","az_id":"use1-az3","subnet_id":"subnet-3","root":"/shards/use1-az3","draining":true}
 ],"strategy":"rendezvous","version":2}"#;

fn run(args: &[&str], stdin: Option<&str>) -> Output {
    run_with_env(args, stdin, &[])
}

fn run_with_env(args: &[&str], stdin: Option<&str>, env: &[(&str, &str)]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_efs-route"))
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    // The tool may exit (usage error) before it reads: a broken pipe here is fine.
    let _ = input.write_all(stdin.unwrap_or("").as_bytes());
    drop(input);
    child.wait_with_output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn json_lines(o: &Output) -> Vec<serde_json::Value> {
    stdout(o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn resolve_from_a_file_and_from_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("list.json");
    std::fs::write(&list, LIST).unwrap();
    let path = "/data/analysis/device-42-1700000000.json";
    let targets = efs_router::MountTargetList::from_json(LIST)
        .unwrap()
        .shards();
    let want = efs_router::shard_index(path, &targets, efs_router::Strategy::Rendezvous).unwrap();

    let o = run(
        &["--list", list.to_str().unwrap(), "--json", "resolve", path],
        None,
    );
    assert!(o.status.success(), "{o:?}");
    let v = &json_lines(&o)[0];
    assert_eq!(v["shard"], want);
    assert_eq!(v["normalised"], "data/analysis/device-42-1700000000.json");
    let root = targets[want].root.trim_start_matches('/');
    let real = Path::new("/mnt/efs")
        .join(root)
        .join("data/analysis/device-42-1700000000.json");
    assert_eq!(v["real_path"], real.to_str().unwrap());

    let o = run(
        &["--list", "-", "--mounts", "/mnt/efs-{i}", "resolve", path],
        Some(LIST),
    );
    assert!(o.status.success(), "{o:?}");
    let text = stdout(&o);
    assert!(
        text.contains(&format!(
            "real path:  /mnt/efs-{want}/data/analysis/device-42-1700000000.json"
        )),
        "{text}"
    );
}

#[test]
fn where_says_home_elsewhere_or_missing() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("efs");
    let list = efs_router::MountTargetList::from_json(LIST).unwrap();
    let router = efs_router::Router::new(list, efs_router::Layout::single_mount(&base)).unwrap();
    router.write("data/a.json", b"a").unwrap();
    // b.json written into a shard that is not its home.
    let b = router.resolve("data/b.json").unwrap();
    let other = (b.index + 1) % 3;
    let misplaced = router
        .layout()
        .real_path(router.shards(), other, &b.logical);
    std::fs::create_dir_all(misplaced.parent().unwrap()).unwrap();
    std::fs::write(&misplaced, b"b").unwrap();

    let o = run(
        &[
            "--list",
            "-",
            "--base",
            base.to_str().unwrap(),
            "--json",
            "where",
            "data/a.json",
            "data/b.json",
            "data/c.json",
        ],
        Some(LIST),
    );
    assert!(o.status.success(), "{o:?}");
    let v = json_lines(&o);
    assert_eq!(v[0]["status"], "home");
    assert_eq!(v[1]["status"], "elsewhere");
    assert_eq!(v[1]["found"]["shard"], other);
    assert_eq!(v[1]["found"]["real_path"], misplaced.to_str().unwrap());
    assert_eq!(v[2]["status"], "missing");
    assert!(misplaced.exists(), "where moved a file");
}

#[test]
fn errors_and_usage() {
    let o = run(
        &["--list", "-", "resolve", "../etc/passwd", "data/ok"],
        Some(LIST),
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("leaves its root"));
    assert!(
        stdout(&o).contains("data/ok"),
        "the good path is still answered"
    );

    let o = run(&["--list", "-", "resolve", "x"], Some("{\"nope\":1}"));
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("standard input: not a mount target list"));

    for args in [
        &["resolve", "x"][..],
        &["--list", "-"],
        &["--list", "-", "frobnicate"],
        &["--list", "-", "resolve"],
        &[
            "--list", "-", "--base", "/a", "--mounts", "/m-{i}", "resolve", "x",
        ],
    ] {
        let o = run(args, Some(LIST));
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(String::from_utf8_lossy(&o.stderr).contains("usage:"));
    }
    let o = run(&["--help"], None);
    assert!(o.status.success() && stdout(&o).contains("usage:"));

    let o = run(&["--list", "-", "show"], Some(LIST));
    assert!(o.status.success());
    assert!(
        stdout(&o).starts_with(
            "strategy: rendezvous\nversion:  1\ntargets:  3\nshards:   3 (0 draining)\n\n\
             fsmt-a 10.0.1.4 us-east-1a/use1-az6 subnet-1\n  shard 0: /\n"
        ),
        "{}",
        stdout(&o)
    );
}

#[test]
fn show_groups_a_version_2_lists_shards_by_mount_target() {
    let o = run(&["--list", "-", "show"], Some(V2));
    assert!(o.status.success(), "{o:?}");
    assert_eq!(
        stdout(&o),
        "\
strategy: rendezvous
version:  2
targets:  3
shards:   6 (2 draining)

fsmt-a 10.0.1.4 us-east-1a/use1-az1 subnet-1
  shard 0: /
  shard 1: /shards/use1-az1.1
  shard 2: /shards/use1-az1.2

fsmt-b 10.0.2.7 us-east-1b/use1-az2 subnet-2
  shard 3: /shards/use1-az2
  shard 4: /shards/use1-az2.1 (draining)

fsmt-c 10.0.3.9 us-east-1c/use1-az3 subnet-3 (draining)
  shard 5: /shards/use1-az3 (draining)
"
    );

    let o = run(&["--list", "-", "--json", "show"], Some(V2));
    assert!(o.status.success(), "{o:?}");
    let v = &json_lines(&o)[0];
    assert_eq!(
        (
            &v["strategy"],
            &v["version"],
            &v["targets"],
            &v["shards"],
            &v["draining_shards"]
        ),
        (
            &"rendezvous".into(),
            &2.into(),
            &3.into(),
            &6.into(),
            &2.into()
        )
    );
    let b = &v["mount_targets"][1];
    assert_eq!(b["id"], "fsmt-b");
    assert_eq!(b["az_id"], "use1-az2");
    assert_eq!(
        b["shards"],
        serde_json::json!([
            {"shard": 3, "root": "/shards/use1-az2", "draining": false},
            {"shard": 4, "root": "/shards/use1-az2.1", "draining": true},
        ])
    );
    assert_eq!(v["mount_targets"][2]["draining"], true);
}

#[test]
fn show_says_where_a_miss_looks_on_a_version_3_list() {
    let v3 = r#"{"mount_targets":[{"id":"fsmt-a","ip":"10.0.1.4","az_id":"use1-az1","root":"/"},{"id":"fsmt-b","ip":"10.0.2.7","az_id":"use1-az2","root":"/shards/use1-az2"}],"open":[{"strategy":"rendezvous","targets":[{"root":"/"}]}],"strategy":"rendezvous","version":3}"#;
    let o = run(&["--list", "-", "--json", "show"], Some(v3));
    assert!(o.status.success(), "{o:?}");
    let v = &json_lines(&o)[0];
    assert_eq!(v["version"], 3);
    assert_eq!(v["open"][0]["targets"][0]["root"], "/");
    let o = run(&["--list", "-", "show"], Some(v3));
    assert!(
        stdout(&o).contains("open:     1 placements [/]"),
        "{}",
        stdout(&o)
    );
    let everywhere = v3.replace(
        r#"[{"strategy":"rendezvous","targets":[{"root":"/"}]}]"#,
        r#""everywhere""#,
    );
    let o = run(&["--list", "-", "--json", "show"], Some(&everywhere));
    assert_eq!(json_lines(&o)[0]["open"], "everywhere");
}

#[test]
fn resolve_and_where_over_a_version_2_list_name_the_shard_and_its_target() {
    let list = efs_router::MountTargetList::from_json(V2).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("efs");
    let router = efs_router::Router::new(list, efs_router::Layout::single_mount(&base)).unwrap();
    // A path at home in a derived shard of fsmt-a, and one misplaced into fsmt-b's draining shard.
    let path = |want: usize, tag: &str| {
        (0..)
            .map(|i| format!("data/{tag}-{i}.json"))
            .find(|p| router.resolve(p).unwrap().index == want)
            .unwrap()
    };
    let at_home = path(2, "h");
    let misplaced = path(1, "m");
    router.write(&at_home, b"h").unwrap();
    let m = router.resolve(&misplaced).unwrap();
    let in_draining = router.layout().real_path(router.shards(), 4, &m.logical);
    std::fs::create_dir_all(in_draining.parent().unwrap()).unwrap();
    std::fs::write(&in_draining, b"m").unwrap();

    let o = run(
        &[
            "--list",
            "-",
            "--base",
            base.to_str().unwrap(),
            "--json",
            "where",
            &at_home,
            &misplaced,
        ],
        Some(V2),
    );
    assert!(o.status.success(), "{o:?}");
    let v = json_lines(&o);
    assert_eq!(
        (&v[0]["shard"], &v[0]["id"], &v[0]["root"], &v[0]["status"]),
        (
            &2.into(),
            &"fsmt-a".into(),
            &"/shards/use1-az1.2".into(),
            &"home".into()
        )
    );
    assert_eq!(
        v[0]["real_path"],
        base.join("shards/use1-az1.2")
            .join(&at_home)
            .to_str()
            .unwrap()
    );
    assert_eq!(
        (&v[1]["shard"], &v[1]["root"]),
        (&1.into(), &"/shards/use1-az1.1".into())
    );
    assert_eq!(v[1]["status"], "elsewhere");
    assert_eq!(
        v[1]["found"],
        serde_json::json!({"shard": 4, "id": "fsmt-b", "ip": "10.0.2.7", "root": "/shards/use1-az2.1",
                           "real_path": in_draining.to_str().unwrap()})
    );

    let o = run(
        &[
            "--list",
            "-",
            "--base",
            base.to_str().unwrap(),
            "where",
            &misplaced,
        ],
        Some(V2),
    );
    let text = stdout(&o);
    assert!(
        text.contains("shard:      1 (root /shards/use1-az1.1, mount target fsmt-a 10.0.1.4)\n"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "found at:   shard 4 (root /shards/use1-az2.1, mount target fsmt-b): {}\n",
            in_draining.display()
        )),
        "{text}"
    );

    // --mounts: {i} is the shard's position, one mount per shard.
    let o = run(
        &[
            "--list",
            "-",
            "--mounts",
            "/mnt/efs-{i}",
            "--json",
            "resolve",
            &at_home,
        ],
        Some(V2),
    );
    assert!(o.status.success(), "{o:?}");
    assert_eq!(
        json_lines(&o)[0]["real_path"],
        format!("/mnt/efs-2/{at_home}")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn reads_the_list_from_ssm() {
    let moto = support::Moto::start();
    let aws = support::Aws::at(&moto.endpoint()).await;
    aws.ssm
        .put_parameter()
        .name("/efs-mount-autoscaling/mount-targets")
        .value(LIST)
        .r#type(aws_sdk_ssm::types::ParameterType::String)
        .send()
        .await
        .unwrap();
    let endpoint = moto.endpoint();
    let env = [
        ("AWS_ENDPOINT_URL", endpoint.as_str()),
        ("AWS_REGION", "us-east-1"),
        ("AWS_ACCESS_KEY_ID", "test"),
        ("AWS_SECRET_ACCESS_KEY", "test"),
        ("AWS_EC2_METADATA_DISABLED", "true"),
    ];
    let from_ssm = run_with_env(
        &[
            "--ssm",
            "/efs-mount-autoscaling/mount-targets",
            "--json",
            "resolve",
            "data/analysis/device-7.json",
        ],
        None,
        &env,
    );
    assert!(
        from_ssm.status.success(),
        "{}",
        String::from_utf8_lossy(&from_ssm.stderr)
    );
    let from_stdin = run(
        &[
            "--list",
            "-",
            "--json",
            "resolve",
            "data/analysis/device-7.json",
        ],
        Some(LIST),
    );
    assert_eq!(json_lines(&from_ssm), json_lines(&from_stdin));

    let missing = run_with_env(&["--ssm", "/nope", "show"], None, &env);
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("/nope"));
}

#[test]
fn clients_shows_each_report_live_or_gone_and_whether_it_runs_the_list() {
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("list.json");
    std::fs::write(&list, LIST).unwrap();
    let mount = support::Mount::at(&dir.path().join("mnt"));
    mount.report("aaaaaaaaaaaaaaaa", LIST, &[1, 2]);
    mount.report("bbbbbbbbbbbbbbbb", V2, &[1, 2]);
    std::fs::write(
        mount.reports_dir().join("cccccccccccccccc.json"),
        b"garbage",
    )
    .unwrap();
    let base = mount.path().to_str().unwrap();
    let o = run(
        &[
            "--list",
            list.to_str().unwrap(),
            "--base",
            base,
            "--json",
            "clients",
        ],
        None,
    );
    assert!(o.status.success(), "{o:?}");
    let lines = json_lines(&o);
    let seen: Vec<(&str, bool, bool)> = lines[..2]
        .iter()
        .map(|l| {
            let current = l["current"].as_bool().unwrap();
            (
                l["client"].as_str().unwrap(),
                l["live"].as_bool().unwrap(),
                current,
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("aaaaaaaaaaaaaaaa", true, true),
            ("bbbbbbbbbbbbbbbb", true, false)
        ]
    );
    assert_eq!(lines[1]["list_version"], 2);
    assert_eq!(lines[2]["file"], "cccccccccccccccc.json");
    assert_eq!(lines[2]["fault"], "malformed");
    // It removes nothing, and a file system without reports has none to show.
    assert_eq!(std::fs::read_dir(mount.reports_dir()).unwrap().count(), 3);
    let empty = tempfile::tempdir().unwrap();
    let o = run(
        &[
            "--list",
            list.to_str().unwrap(),
            "--base",
            empty.path().to_str().unwrap(),
            "clients",
        ],
        None,
    );
    assert!(o.status.success(), "{o:?}");
    assert_eq!(stdout(&o), "");
}

#[test]
fn clients_prints_a_reports_strings_escaped_never_as_terminal_codes() {
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("list.json");
    std::fs::write(&list, LIST).unwrap();
    let mount = support::Mount::at(&dir.path().join("mnt"));
    // A task writes what it likes into its report: here a clear-screen and a title change.
    let path = mount.report_of_task(
        "aaaaaaaaaaaaaaaa",
        LIST,
        &[1, 2],
        "arn:aws:ecs:us-east-1:1:task/c/\u{1b}]0;owned\u{7}",
    );
    let mut report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    report["router"] = "efs-router\u{1b}[2J".into();
    std::fs::write(&path, report.to_string()).unwrap();
    let base = mount.path().to_str().unwrap();
    let o = run(
        &["--list", list.to_str().unwrap(), "--base", base, "clients"],
        None,
    );
    assert!(o.status.success(), "{o:?}");
    assert!(!o.stdout.contains(&0x1b), "{o:?}");
    assert!(!o.stdout.contains(&0x07), "{o:?}");
    // Shown, escaped: the operator still sees what the task wrote.
    assert!(stdout(&o).contains("\\u{1b}[2J"), "{}", stdout(&o));
}
