//! The SAM template (`template.yaml`) checked against the code it deploys:
//!
//! - the function's environment is exactly the contract's variables (`config::ENV_VARS`),
//!   each from a parameter whose default is the function's own and whose constraints allow
//!   only what the function accepts (its `Config::from_lookup` on the environment the
//!   template sets, on each bound and just past it); every whole number is a `String` with a
//!   pattern that refuses fractions and what is past its bounds, as the function or AWS does
//!   ([`WHOLE_NUMBERS`]); every parameter is in one of the console's groups;
//! - the schedules send the payloads of `events/reconcile.json` and `events/rebalance.json`;
//! - the role allows every action the code calls (`aws::CALLED_ACTIONS`) plus the named,
//!   explained actions AWS needs on its behalf ([`IMPLIED_ACTIONS`]), nothing else, each on
//!   the narrowest resource IAM supports (`*` only where IAM has no resource-level
//!   permission, [`UNSCOPABLE`], or where its resource is not the one IAM checks and a
//!   condition scopes it instead, [`SCOPED_BY_CONDITION`]); network interfaces are created only
//!   in the subnets the function uses (`SUBNET_IDS` and `FunctionSubnetIds`) when the template
//!   names them, and re-addressed only in `FunctionSubnetIds`;
//! - the alarms and the dashboard name the namespace, metrics and dimensions that
//!   `metrics.rs` emits; the dashboard shows the largest shard against `FILE_THRESHOLD`, shards
//!   against desired shards (and `MAX_SHARDS`), mount targets against desired ones; its URL
//!   is on the console of the stack's partition;
//! - the role has a permissions boundary and tags only when the parameters give them.
//!
//! The template is read with cfn-lint's own YAML decoder (short-form tags such as `!Sub`
//! become `{"Fn::Sub": …}`), run as `python3` (or `$PYTHON`); cfn-lint is part of
//! `make test`'s tools. Intrinsic functions are then evaluated by a small evaluator below,
//! for chosen parameter values, so that the checks see the policy CloudFormation would
//! create.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use efs_mount_autoscaler::aws::CALLED_ACTIONS;
use efs_mount_autoscaler::config::{Config, DEFAULT_MAX_SHARDS, ENV_VARS};
use efs_mount_autoscaler::error::{ConfigError, Error};
use efs_mount_autoscaler::event::Action;
use efs_mount_autoscaler::metrics::{self, MetricSpec};
use efs_router::list::MAX_LIST_SHARDS;
use serde_json::{json, Map, Value};

/// Actions the role must allow although the code does not call them: AWS calls them with the
/// role's credentials on the function's behalf.
const IMPLIED_ACTIONS: &[(&str, &str)] = &[
    (
        "ec2:DescribeNetworkInterfaceAttribute",
        "DescribeMountTargetSecurityGroups requires it on the mount target's network interface \
         (EFS API reference, DescribeMountTargetSecurityGroups; the aws-sdk-efs doc comment of \
         that operation)",
    ),
    (
        "ec2:DescribeNetworkInterfaces",
        "CreateMountTarget requires it of its caller (EFS API reference); Lambda uses it to \
         attach the function to its VPC",
    ),
    (
        "ec2:CreateNetworkInterface",
        "CreateMountTarget creates the mount target's network interface with its caller's \
         permissions; Lambda creates the function's VPC network interfaces with the role",
    ),
    (
        "ec2:DeleteNetworkInterface",
        "DeleteMountTarget removes the mount target's network interface with its caller's \
         permissions (EFS API reference); Lambda removes the function's VPC network interfaces",
    ),
    (
        "ec2:AssignPrivateIpAddresses",
        "Lambda VPC networking (as in AWSLambdaVPCAccessExecutionRole)",
    ),
    (
        "ec2:UnassignPrivateIpAddresses",
        "Lambda VPC networking (as in AWSLambdaVPCAccessExecutionRole)",
    ),
    (
        "elasticfilesystem:ClientMount",
        "Lambda mounts the file system through the access point (needed when the file \
         system has a resource policy)",
    ),
    (
        "elasticfilesystem:ClientWrite",
        "the function creates the shard directories",
    ),
    (
        "elasticfilesystem:ClientRootAccess",
        "only when the created access point's POSIX user is root (uid 0)",
    ),
    ("logs:CreateLogStream", "Lambda writes the function's log"),
    ("logs:PutLogEvents", "Lambda writes the function's log"),
];

/// Actions without resource-level permissions (Service Authorization Reference: no resource
/// type): IAM only allows them with `"Resource": "*"`.
const UNSCOPABLE: &[&str] = &[
    "ecs:ListTasks",
    "ec2:DescribeSubnets",
    "ec2:DescribeNetworkInterfaces",
    "ec2:DescribeNetworkInterfaceAttribute",
];

/// Actions allowed on `*` but only under a condition that scopes them: IAM checks ListTasks
/// on `*` whatever resource type the Service Authorization Reference gives it (a role with
/// only the cluster's container-instance ARN is refused "on resource: *"), and its `ecs:cluster`
/// condition key keeps it to the cluster.
const SCOPED_BY_CONDITION: &[&str] = &["ecs:ListTasks"];

const FUNCTION: &str = "AutoscalerFunction";
const ROLE: &str = "FunctionRole";
const REGION: &str = "us-east-1";
const ACCOUNT: &str = "123456789012";

/// The checkout: the one `cargo test` names when it runs the test, else the compile-time one
/// (a shared target directory may keep a binary built in another clone).
fn repo() -> &'static Path {
    static DIR: OnceLock<std::path::PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(
            || std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")),
            std::path::PathBuf::from,
        )
    })
}

/// `template.yaml` as JSON, decoded by cfn-lint.
fn template() -> &'static Value {
    static TEMPLATE: OnceLock<Value> = OnceLock::new();
    TEMPLATE.get_or_init(|| {
        let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
        let script = "import json, sys\n\
                      from cfnlint.decode import decode\n\
                      tpl, matches = decode(sys.argv[1])\n\
                      if matches or tpl is None:\n\
                      \x20   sys.exit('cannot decode the template: ' + '; '.join(str(m) for m in matches))\n\
                      json.dump(tpl, sys.stdout)\n";
        let out = Command::new(&python)
            .args(["-c", script])
            .arg(repo().join("template.yaml"))
            .output()
            .unwrap_or_else(|e| panic!("cannot run {python} (needed with cfn-lint): {e}"));
        assert!(
            out.status.success(),
            "{python} with cfn-lint's decoder failed (pip install cfn-lint): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("the decoder prints JSON")
    })
}

fn resource(name: &str) -> &'static Value {
    template()["Resources"]
        .get(name)
        .unwrap_or_else(|| panic!("no resource {name}"))
}

fn function() -> &'static Value {
    resource(FUNCTION)
}

fn read_json(rel: &str) -> Value {
    let path: PathBuf = repo().join(rel);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

// ---------------------------------------------------------------------------------------
// A small evaluator of CloudFormation intrinsic functions, for given parameter values.

/// The values of the template's parameters (defaults, overridden), as CloudFormation passes
/// them: strings, and lists of strings for `List<…>` types.
struct Eval {
    params: BTreeMap<String, Value>,
    /// `AWS::Partition` and `AWS::Region`.
    partition: &'static str,
    region: &'static str,
}

impl Eval {
    /// Defaults, then the required parameters, then `overrides`.
    fn new(overrides: &[(&str, &str)]) -> Eval {
        let mut given: BTreeMap<&str, &str> = [
            ("FileSystemId", "fs-0123456789abcdef0"),
            ("EcsClusterName", "prod"),
            ("EcsServiceName", "api"),
            ("FunctionSubnetIds", "subnet-aaa,subnet-bbb"),
            ("FunctionSecurityGroupIds", "sg-fff"),
            ("FileSystemVpcId", "vpc-0abc"),
        ]
        .into_iter()
        .collect();
        given.extend(overrides.iter().copied());
        let mut params = BTreeMap::new();
        for (name, decl) in template()["Parameters"].as_object().unwrap() {
            let text = match given.get(name.as_str()) {
                Some(v) => v.to_string(),
                None => match decl.get("Default") {
                    Some(Value::String(s)) => s.clone(),
                    Some(other) => other.to_string(),
                    None => panic!("parameter {name} has no default and no test value"),
                },
            };
            let ty = decl["Type"].as_str().unwrap();
            let value = if ty.starts_with("List<") || ty == "CommaDelimitedList" {
                Value::Array(text.split(',').map(|s| json!(s)).collect())
            } else {
                json!(text)
            };
            params.insert(name.clone(), value);
        }
        Eval {
            params,
            partition: "aws",
            region: REGION,
        }
    }

    /// The same values, in a stack of another partition and Region.
    fn in_partition(self, partition: &'static str, region: &'static str) -> Eval {
        Eval {
            partition,
            region,
            ..self
        }
    }

    fn var(&self, name: &str, sub_vars: &Map<String, Value>) -> Value {
        if let Some(v) = sub_vars.get(name) {
            return self.eval(v).expect("a Sub variable has a value");
        }
        match name {
            "AWS::Partition" => return json!(self.partition),
            "AWS::Region" => return json!(self.region),
            "AWS::AccountId" => return json!(ACCOUNT),
            "AWS::StackName" => return json!("stack"),
            "AWS::URLSuffix" => return json!("amazonaws.com"),
            _ => {}
        }
        if let Some(v) = self.params.get(name) {
            return v.clone();
        }
        if let Some((res, attr)) = name.split_once('.') {
            resource(res);
            return json!(format!("<{res}.{attr}>"));
        }
        resource(name);
        json!(format!("<{name}>"))
    }

    fn sub(&self, text: &str, vars: &Map<String, Value>) -> String {
        let mut out = String::new();
        let mut rest = text;
        while let Some(start) = rest.find("${") {
            out.push_str(&rest[..start]);
            let after = &rest[start + 2..];
            let end = after.find('}').expect("closed ${…}");
            let name = &after[..end];
            if let Some(literal) = name.strip_prefix('!') {
                out.push_str("${");
                out.push_str(literal);
                out.push('}');
            } else {
                match self.var(name, vars) {
                    Value::String(s) => out.push_str(&s),
                    other => panic!("${{{name}}} in a Sub is not a string: {other}"),
                }
            }
            rest = &after[end + 1..];
        }
        out.push_str(rest);
        out
    }

    fn condition(&self, name: &str) -> bool {
        let c = &template()["Conditions"][name];
        assert!(!c.is_null(), "no condition {name}");
        self.eval(c)
            .unwrap()
            .as_bool()
            .expect("a condition is a boolean")
    }

    /// The value of `v`; `None` for `AWS::NoValue`.
    fn eval(&self, v: &Value) -> Option<Value> {
        match v {
            Value::Array(items) => Some(Value::Array(
                items.iter().filter_map(|i| self.eval(i)).collect(),
            )),
            Value::Object(map) if map.len() == 1 => {
                let (key, arg) = map.iter().next().unwrap();
                self.function(key, arg).unwrap_or_else(|| {
                    let mut out = Map::new();
                    if let Some(v) = self.eval(arg) {
                        out.insert(key.clone(), v);
                    }
                    Some(Value::Object(out))
                })
            }
            Value::Object(map) => Some(Value::Object(
                map.iter()
                    .filter_map(|(k, v)| self.eval(v).map(|v| (k.clone(), v)))
                    .collect(),
            )),
            scalar => Some(scalar.clone()),
        }
    }

    /// `Some(value)` when `key` is an intrinsic function, else `None`.
    fn function(&self, key: &str, arg: &Value) -> Option<Option<Value>> {
        let s = |v: &Value| -> String {
            match self.eval(v) {
                Some(Value::String(s)) => s,
                Some(Value::Number(n)) => n.to_string(),
                other => panic!("not a string: {other:?}"),
            }
        };
        let list = |v: &Value| -> Vec<Value> {
            match self.eval(v) {
                Some(Value::Array(a)) => a,
                other => panic!("not a list: {other:?}"),
            }
        };
        let args = |n: usize| -> &Vec<Value> {
            let a = arg
                .as_array()
                .unwrap_or_else(|| panic!("{key} takes a list"));
            assert_eq!(a.len(), n, "{key} takes {n} arguments");
            a
        };
        Some(match key {
            "Ref" if arg == "AWS::NoValue" => None,
            "Ref" => Some(self.var(arg.as_str().unwrap(), &Map::new())),
            "Fn::Sub" => Some(json!(match arg {
                Value::String(text) => self.sub(text, &Map::new()),
                Value::Array(a) => self.sub(a[0].as_str().unwrap(), a[1].as_object().unwrap()),
                other => panic!("bad Fn::Sub {other}"),
            })),
            "Fn::Join" => {
                let a = args(2);
                let parts: Vec<String> = list(&a[1])
                    .iter()
                    .map(|p| p.as_str().unwrap().to_string())
                    .collect();
                Some(json!(parts.join(a[0].as_str().unwrap())))
            }
            "Fn::Split" => {
                let a = args(2);
                let text = s(&a[1]);
                Some(json!(text
                    .split(a[0].as_str().unwrap())
                    .collect::<Vec<_>>()))
            }
            "Fn::Select" => {
                let a = args(2);
                let i: usize = s(&a[0]).parse().unwrap();
                let l = list(&a[1]);
                Some(
                    l.get(i)
                        .unwrap_or_else(|| panic!("Select {i} of {l:?}"))
                        .clone(),
                )
            }
            "Fn::If" => {
                let a = args(3);
                let branch = if self.condition(a[0].as_str().unwrap()) {
                    &a[1]
                } else {
                    &a[2]
                };
                self.eval(branch)
            }
            "Fn::GetAtt" => {
                let a = args(2);
                let (res, attr) = (a[0].as_str().unwrap(), a[1].as_str().unwrap());
                resource(res);
                Some(json!(format!("<{res}.{attr}>")))
            }
            "Fn::FindInMap" => {
                let a = args(3);
                let v = &template()["Mappings"][s(&a[0])][s(&a[1])][s(&a[2])];
                assert!(!v.is_null(), "FindInMap {a:?}");
                Some(v.clone())
            }
            "Fn::Equals" => {
                let a = args(2);
                Some(json!(s(&a[0]) == s(&a[1])))
            }
            "Fn::Not" => Some(json!(!self.eval(&args(1)[0]).unwrap().as_bool().unwrap())),
            "Fn::And" => Some(json!(arg.as_array().unwrap().iter().all(|c| self
                .eval(c)
                .unwrap()
                .as_bool()
                .unwrap()))),
            "Fn::Or" => Some(json!(arg.as_array().unwrap().iter().any(|c| self
                .eval(c)
                .unwrap()
                .as_bool()
                .unwrap()))),
            "Condition" => Some(json!(self.condition(arg.as_str().unwrap()))),
            _ => return None,
        })
    }
}

// ---------------------------------------------------------------------------------------
// The function, its environment and its schedule.

#[test]
fn the_function_is_a_rust_arm64_lambda_that_never_overlaps_itself() {
    let f = function();
    assert_eq!(f["Type"], "AWS::Serverless::Function");
    assert_eq!(f["Metadata"]["BuildMethod"], "rust-cargolambda");
    // The package's binary (src/main.rs) is named after the package.
    assert_eq!(
        f["Metadata"]["BuildProperties"]["Binary"],
        env!("CARGO_PKG_NAME")
    );
    let p = &f["Properties"];
    assert_eq!(p["Runtime"], "provided.al2023");
    assert_eq!(p["Architectures"], json!(["arm64"]));
    assert_eq!(p["Handler"], "bootstrap");
    assert_eq!(p["ReservedConcurrentExecutions"], 1);
    assert_eq!(p["Timeout"], json!({"Ref": "FunctionTimeout"}));
    assert_eq!(p["MemorySize"], json!({"Ref": "FunctionMemorySize"}));
    assert_eq!(p["Role"], json!({"Fn::GetAtt": [ROLE, "Arn"]}));
    assert!(
        p.get("Policies").is_none(),
        "the role is FunctionRole alone"
    );

    // Long enough to wait for a mount target (1-2 minutes, more on bad days).
    let timeout = &template()["Parameters"]["FunctionTimeout"];
    let seconds: u64 = timeout["Default"].as_str().unwrap().parse().unwrap();
    assert!(seconds >= 600, "{timeout}");

    // JSON logs, in a log group with a retention period, never filtered above INFO (the
    // metric lines have no level, which Lambda takes as INFO).
    let logging = &p["LoggingConfig"];
    assert_eq!(logging["LogFormat"], "JSON");
    assert_eq!(logging["LogGroup"], json!({"Ref": "LogGroup"}));
    assert_eq!(logging["ApplicationLogLevel"], "INFO");
    let group = resource("LogGroup");
    assert_eq!(group["Type"], "AWS::Logs::LogGroup");
    assert_eq!(
        group["Properties"]["RetentionInDays"],
        json!({"Ref": "LogRetentionDays"})
    );

    assert_eq!(
        p["VpcConfig"],
        json!({
            "SubnetIds": {"Ref": "FunctionSubnetIds"},
            "SecurityGroupIds": {"Ref": "FunctionSecurityGroupIds"},
        })
    );
}

#[test]
fn the_file_system_is_mounted_through_an_access_point_rooted_at_slash() {
    let p = &function()["Properties"];
    let configs = p["FileSystemConfigs"].as_array().unwrap();
    assert_eq!(configs.len(), 1);
    assert_eq!(configs[0]["LocalMountPath"], json!({"Ref": "EfsMountPath"}));

    let created = Eval::new(&[]);
    assert_eq!(
        created.eval(&configs[0]["Arn"]).unwrap(),
        "<AccessPoint.Arn>"
    );
    let ap = resource("AccessPoint");
    assert_eq!(ap["Condition"], "CreateAccessPoint");
    assert_eq!(ap["Properties"]["RootDirectory"]["Path"], "/");
    assert_eq!(
        ap["Properties"]["FileSystemId"],
        json!({"Ref": "FileSystemId"})
    );
    assert!(ap["Properties"]["PosixUser"].is_object());

    let arn =
        "arn:aws:elasticfilesystem:us-east-1:123456789012:access-point/fsap-0123456789abcdef0";
    let existing = Eval::new(&[("ExistingAccessPointArn", arn)]);
    assert!(!existing.condition("CreateAccessPoint"));
    assert_eq!(existing.eval(&configs[0]["Arn"]).unwrap(), arn);
}

#[test]
fn the_environment_is_exactly_the_contract() {
    let vars = function()["Properties"]["Environment"]["Variables"]
        .as_object()
        .unwrap();
    let got: BTreeSet<&str> = vars.keys().map(String::as_str).collect();
    let want: BTreeSet<&str> = ENV_VARS.iter().copied().collect();
    assert_eq!(got, want);
    assert_eq!(vars.len(), ENV_VARS.len());

    // Each variable comes from a parameter (nothing an operator must edit in the template).
    let params = template()["Parameters"].as_object().unwrap();
    for (name, value) in vars {
        let refs = refs_in(value);
        assert!(
            refs.iter().any(|r| params.contains_key(r)),
            "{name} is not set from a parameter: {value}"
        );
    }

    // With the defaults, the values are the contract's defaults; optional settings are left
    // unset, so that the function applies its own default.
    let defaults = Eval::new(&[]);
    let env = |e: &Eval| -> BTreeMap<String, Value> {
        vars.iter()
            .filter_map(|(k, v)| e.eval(v).map(|v| (k.clone(), v)))
            .collect()
    };
    let got = env(&defaults);
    let want: BTreeMap<String, Value> = [
        ("EFS_FILE_SYSTEM_ID", "fs-0123456789abcdef0"),
        ("SSM_PARAMETER_NAME", "/efs-mount-autoscaling/mount-targets"),
        ("STATE_PARAMETER_NAME", "/efs-mount-autoscaling/state"),
        ("ECS_CLUSTER_NAME", "prod"),
        ("ECS_SERVICE_NAME", "api"),
        ("EFS_MOUNT_PATH", "/mnt/efs"),
        ("WATCH_DIR", "data/analysis"),
        ("FILE_THRESHOLD", "50000"),
        ("MAX_SHARDS", "256"),
        ("SCALE_IN_RATIO", "0.6"),
        ("SCALE_IN_COOLDOWN_SECONDS", "1800"),
        // The function's own subnets: never remove the mount target it mounts through.
        ("PROTECTED_SUBNET_IDS", "subnet-aaa,subnet-bbb"),
        ("SUBNET_EXCLUSION_SECONDS", "86400"),
        ("API_ATTEMPT_TIMEOUT_SECONDS", "10"),
        ("API_CALL_TIMEOUT_SECONDS", "30"),
        ("CLIENT_REFRESH_SECONDS", "0"),
        ("MOVE_CONCURRENCY", "16"),
        ("CLIENT_REPORTS", "require"),
        ("ABANDONED_AFTER_SECONDS", "3600"),
        ("CLOSE_PLACEMENTS", "when-every-writer-reports"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), json!(v)))
    .collect();
    assert_eq!(got, want);

    // Every setting reaches the function when given.
    let given = Eval::new(&[
        ("SsmParameterName", "/x/list"),
        ("StateParameterName", "/x/state"),
        ("EcsServiceName", "api,worker"),
        ("EfsMountPath", "/mnt/data"),
        ("WatchDir", "in/box"),
        ("FileThreshold", "1000"),
        ("MountTargetSubnetIds", "subnet-1,subnet-2"),
        ("MountTargetSecurityGroupIds", "sg-1"),
        ("MaxMountTargets", "4"),
        ("MaxShards", "512"),
        ("ScaleInRatio", "0.5"),
        ("ScaleInCooldownSeconds", "60"),
        ("ProtectedSubnetIds", "subnet-9"),
        ("SubnetExclusionSeconds", "3600"),
        ("ApiAttemptTimeoutSeconds", "5"),
        ("ApiCallTimeoutSeconds", "20"),
        ("ClientRefreshSeconds", "120"),
        ("MoveConcurrency", "4"),
        ("EcsClientFamilies", "batch,report"),
        ("ClientReports", "ecs-may-hide-files"),
        ("RebalanceMaxVisits", "5000"),
        ("AbandonedAfterSeconds", "60"),
        ("ClosePlacements", "unseen-writers-may-hide-files"),
    ]);
    let got = env(&given);
    for (k, v) in [
        ("SSM_PARAMETER_NAME", "/x/list"),
        ("STATE_PARAMETER_NAME", "/x/state"),
        ("ECS_SERVICE_NAME", "api,worker"),
        ("EFS_MOUNT_PATH", "/mnt/data"),
        ("WATCH_DIR", "in/box"),
        ("FILE_THRESHOLD", "1000"),
        ("SUBNET_IDS", "subnet-1,subnet-2"),
        ("SECURITY_GROUP_IDS", "sg-1"),
        ("MAX_MOUNT_TARGETS", "4"),
        ("MAX_SHARDS", "512"),
        ("SCALE_IN_RATIO", "0.5"),
        ("SCALE_IN_COOLDOWN_SECONDS", "60"),
        ("PROTECTED_SUBNET_IDS", "subnet-9"),
        ("SUBNET_EXCLUSION_SECONDS", "3600"),
        ("API_ATTEMPT_TIMEOUT_SECONDS", "5"),
        ("API_CALL_TIMEOUT_SECONDS", "20"),
        ("CLIENT_REFRESH_SECONDS", "120"),
        ("MOVE_CONCURRENCY", "4"),
        ("ECS_CLIENT_FAMILIES", "batch,report"),
        ("CLIENT_REPORTS", "ecs-may-hide-files"),
        ("REBALANCE_MAX_VISITS", "5000"),
        ("ABANDONED_AFTER_SECONDS", "60"),
        ("CLOSE_PLACEMENTS", "unseen-writers-may-hide-files"),
    ] {
        assert_eq!(got.get(k), Some(&json!(v)), "{k}");
    }
    assert_eq!(got.len(), ENV_VARS.len());
}

/// `MaxShards` offers what the function accepts for `MAX_SHARDS` and defaults to its default,
/// so that CloudFormation refuses a value the function would fail on at every run (its bounds:
/// [`WHOLE_NUMBERS`], tried by `every_whole_number_refuses_fractions_and_what_is_past_its_bounds`).
#[test]
fn max_shards_is_bounded_as_the_function_bounds_it() {
    let p = &template()["Parameters"]["MaxShards"];
    assert_eq!(p["Default"], json!(DEFAULT_MAX_SHARDS.to_string()));
    let bounds = whole_number("MaxShards");
    assert_eq!((bounds.least, bounds.most), (1, MAX_LIST_SHARDS as u64));
    assert_eq!(bounds.above, Refuses);
    assert!(
        p["Description"]
            .as_str()
            .unwrap()
            .starts_with("MAX_SHARDS - "),
        "the description names the variable, as the others do: {p}"
    );
    assert_eq!(
        function()["Properties"]["Environment"]["Variables"]["MAX_SHARDS"],
        json!({"Ref": "MaxShards"})
    );
}

// ---------------------------------------------------------------------------------------
// Each setting's constraints against what the function accepts.

/// What the function does with a value (`Config::from_lookup` on the environment the
/// template sets).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FunctionSays {
    Accepts,
    /// A `ConfigError` naming the parameter's variable.
    Refuses,
    /// A `ConfigError` naming another variable, which the value is checked against.
    RefusesAs(&'static str),
}

impl FunctionSays {
    /// What `Config::from_lookup` returns, as `Err(variable)`, for a value of the parameter of
    /// variable `var`.
    fn verdict(self, var: &'static str) -> Result<(), &'static str> {
        match self {
            Accepts => Ok(()),
            Refuses => Err(var),
            RefusesAs(other) => Err(other),
        }
    }
}

use FunctionSays::{Accepts, Refuses, RefusesAs};

/// Values of parameters, given together.
type Given = &'static [(&'static str, &'static str)];

/// Values to try: whether the template allows them, what the function says, and the variable
/// it names when it refuses them.
struct Probe {
    given: Vec<(String, String)>,
    allowed: bool,
    says: FunctionSays,
    var: &'static str,
}

/// For one parameter of the function's environment: values the template allows besides those
/// the test takes from its declaration (`Default`, `AllowedValues`), which the function must
/// accept; and values just outside what the template allows, each with what the function does
/// with it (`Accepts`: the template is the stricter, as with an empty value, which means the
/// default). A whole number's bounds and fractions are in [`WHOLE_NUMBERS`].
struct Edges {
    param: &'static str,
    /// Other parameters given with each value, where the function's bound depends on them.
    with: Given,
    inside: &'static [&'static str],
    outside: &'static [(&'static str, FunctionSays)],
}

const EDGES: &[Edges] = &[
    Edges {
        param: "FileSystemId",
        with: &[],
        inside: &["fs-01234567", "fs-0123456789abcdef0123456789abcdef01234567"],
        outside: &[
            ("", Refuses),
            ("fs-0123456", Accepts),
            ("fs-0123ABCD", Accepts),
        ],
    },
    Edges {
        param: "SsmParameterName",
        with: &[],
        inside: &["/x", "/a/b.c-d_e/f"],
        outside: &[("", Accepts), ("x", Accepts)],
    },
    Edges {
        param: "StateParameterName",
        with: &[],
        inside: &["/x", "/a/b.c-d_e/f"],
        outside: &[("", Accepts), ("x", Accepts)],
    },
    Edges {
        param: "EcsClusterName",
        with: &[],
        inside: &["a", "prod-1_b"],
        outside: &[("", Refuses), ("my cluster", Accepts)],
    },
    Edges {
        param: "EcsServiceName",
        with: &[],
        inside: &["api", "a,b,c,d,e", "api,api"],
        outside: &[
            ("", Refuses),
            ("a,,b", Refuses),
            (",a", Refuses),
            ("a,b,c,d,e,f", Accepts),
            ("a, b", Accepts),
        ],
    },
    Edges {
        param: "EfsMountPath",
        with: &[],
        inside: &["/mnt/data", "/mnt/a.b-c_d"],
        outside: &[
            ("mnt/efs", Refuses),
            ("", Accepts),
            ("/data", Accepts),
            ("/mnt/", Accepts),
        ],
    },
    Edges {
        param: "WatchDir",
        with: &[],
        inside: &["a", "in/box", ".hidden/a..b", "...x", "a/.b"],
        outside: &[
            ("..", Refuses),
            ("../etc", Refuses),
            ("data/../etc", Refuses),
            ("data/..", Refuses),
            ("", Accepts),
            (".", Accepts),
            ("/data", Accepts),
            ("data/", Accepts),
        ],
    },
    Edges {
        param: "FileThreshold",
        with: &[],
        inside: &[],
        outside: &[],
    },
    Edges {
        param: "MountTargetSubnetIds",
        with: &[],
        inside: &["", "subnet-0a1b2c", "subnet-1,subnet-2"],
        outside: &[
            ("subnet-1,", Refuses),
            (",subnet-1", Refuses),
            (",", Refuses),
            ("subnet-1 subnet-2", Refuses),
            ("subnet-1, subnet-2", Accepts),
            ("subnet-xyz", Accepts),
        ],
    },
    Edges {
        param: "MountTargetSecurityGroupIds",
        with: &[],
        inside: &["", "sg-0a1b", "sg-1,sg-2"],
        outside: &[
            ("sg-1,,sg-2", Refuses),
            ("sg-1 sg-2", Refuses),
            ("sg-1, sg-2", Accepts),
        ],
    },
    Edges {
        param: "MaxMountTargets",
        with: &[],
        inside: &["", "1", "999"],
        outside: &[
            ("0", Refuses),
            ("-1", Refuses),
            ("1000", Accepts),
            ("01", Accepts),
        ],
    },
    Edges {
        param: "MaxShards",
        with: &[],
        inside: &[],
        outside: &[],
    },
    Edges {
        param: "ScaleInRatio",
        with: &[],
        inside: &["0.000001", "0.999999", ".5", "0.50", "0.5000000000"],
        outside: &[
            ("0", Refuses),
            ("1", Refuses),
            ("0.0", Refuses),
            ("1.0", Refuses),
            (".000000", Refuses),
            ("1.5", Refuses),
            ("-0.5", Refuses),
            ("0.0000001", Accepts),
            ("0.9999999", Accepts),
            ("", Accepts),
        ],
    },
    Edges {
        param: "ScaleInCooldownSeconds",
        with: &[],
        inside: &[],
        outside: &[],
    },
    Edges {
        param: "ProtectedSubnetIds",
        with: &[],
        inside: &["", "subnet-9", "subnet-1,subnet-2"],
        outside: &[
            ("subnet-1,", Refuses),
            ("subnet-1 subnet-2", Refuses),
            ("subnet-1, subnet-2", Accepts),
        ],
    },
    Edges {
        param: "SubnetExclusionSeconds",
        with: &[],
        inside: &[],
        outside: &[],
    },
    Edges {
        param: "ApiAttemptTimeoutSeconds",
        with: &[],
        inside: &["30"],
        outside: &[],
    },
    Edges {
        param: "ApiCallTimeoutSeconds",
        // The whole call holds at least one attempt: BETWEEN_PARAMETERS.
        with: &[("ApiAttemptTimeoutSeconds", "1")],
        inside: &[],
        outside: &[],
    },
    Edges {
        param: "ClientRefreshSeconds",
        with: &[],
        inside: &[],
        outside: &[],
    },
    Edges {
        param: "MoveConcurrency",
        with: &[],
        inside: &[],
        outside: &[],
    },
    Edges {
        param: "EcsClientFamilies",
        with: &[],
        inside: &["", "batch", "batch,report"],
        outside: &[
            ("batch,", Refuses),
            ("batch report", Refuses),
            ("batch, report", Accepts),
        ],
    },
    Edges {
        param: "ClientReports",
        with: &[],
        inside: &[],
        outside: &[
            ("ecs", Refuses),
            ("always", Refuses),
            ("Require", Refuses),
            ("", Accepts),
        ],
    },
    Edges {
        param: "ClosePlacements",
        with: &[],
        inside: &[],
        outside: &[
            ("true", Refuses),
            ("Unseen-writers-may-hide-files", Refuses),
            ("", Accepts),
        ],
    },
    Edges {
        param: "AbandonedAfterSeconds",
        with: &[],
        inside: &[],
        outside: &[],
    },
    Edges {
        param: "RebalanceMaxVisits",
        with: &[],
        inside: &["", "1", "999999999"],
        outside: &[
            ("0", Refuses),
            ("-1", Refuses),
            ("ten", Refuses),
            ("1000000000", Accepts),
            ("01", Accepts),
        ],
    },
];

/// Values of parameters the function checks against each other: whether the template allows
/// them, and the variable the function names when it refuses them. Two names are compared by
/// a rule of the template; the two time limits cannot be, as CloudFormation's rules test
/// equality and not order: a gap, pinned here (and said in the parameters' descriptions).
const BETWEEN_PARAMETERS: &[(Given, bool, &str)] = &[
    (
        &[("StateParameterName", "/efs-mount-autoscaling/mount-targets")],
        false,
        "STATE_PARAMETER_NAME",
    ),
    (
        &[("SsmParameterName", "/efs-mount-autoscaling/state")],
        false,
        "STATE_PARAMETER_NAME",
    ),
    (
        &[("SsmParameterName", "/x"), ("StateParameterName", "/x")],
        false,
        "STATE_PARAMETER_NAME",
    ),
    // Shorter than the default attempt (10 s), or an attempt longer than the default call
    // (30 s).
    (
        &[("ApiCallTimeoutSeconds", "9")],
        true,
        "API_CALL_TIMEOUT_SECONDS",
    ),
    (
        &[("ApiAttemptTimeoutSeconds", "31")],
        true,
        "API_CALL_TIMEOUT_SECONDS",
    ),
];

/// Whether CloudFormation allows `value` for `String` parameter `name` by its declaration
/// (`MinLength`, `MaxLength`, `AllowedValues`, `AllowedPattern`); `matches` answers for a
/// pattern. A `Number` is refused here: it takes fractions (1800.5, 1e3), and its `MinValue` and
/// `MaxValue` cannot refuse them.
fn declaration_allows(name: &str, value: &str, matches: &BTreeMap<(String, String), bool>) -> bool {
    let decl = template()["Parameters"][name]
        .as_object()
        .unwrap_or_else(|| panic!("no parameter {name}"));
    for key in decl.keys() {
        assert!(
            matches!(
                key.as_str(),
                "Type"
                    | "Description"
                    | "Default"
                    | "ConstraintDescription"
                    | "NoEcho"
                    | "MinLength"
                    | "MaxLength"
                    | "AllowedValues"
                    | "AllowedPattern"
            ),
            "{name}: this test does not know the constraint {key}"
        );
    }
    let number = |key: &str| decl.get(key).map(|v| v.as_f64().expect("a number"));
    let ty = decl["Type"].as_str().unwrap();
    assert_eq!(ty, "String", "{name}: this test does not check a {ty}");
    let len = value.chars().count() as f64;
    number("MinLength").is_none_or(|min| len >= min)
        && number("MaxLength").is_none_or(|max| len <= max)
        && decl
            .get("AllowedPattern")
            .is_none_or(|p| matches[&(p.as_str().unwrap().to_string(), value.to_string())])
        && decl.get("AllowedValues").is_none_or(|allowed| {
            allowed.as_array().unwrap().iter().any(|a| match a {
                Value::String(s) => s == value,
                other => panic!("{name}: an allowed value that is not a string: {other}"),
            })
        })
}

/// Whether each value matches its pattern as a whole, as an `AllowedPattern` must; by Python's
/// `re`, as cfn-lint checks a default (the template's patterns use nothing in which it and
/// CloudFormation's differ).
fn full_matches(pairs: BTreeSet<(String, String)>) -> BTreeMap<(String, String), bool> {
    use std::io::Write;
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let script = "import json, re, sys\n\
                  pairs = json.load(sys.stdin)\n\
                  json.dump([re.fullmatch(p, v) is not None for p, v in pairs], sys.stdout)\n";
    let mut child = Command::new(&python)
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {python}: {e}"));
    let pairs: Vec<(String, String)> = pairs.into_iter().collect();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(&serde_json::to_vec(&pairs).unwrap())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{python} could not match the patterns"
    );
    let verdicts: Vec<bool> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(verdicts.len(), pairs.len());
    pairs.into_iter().zip(verdicts).collect()
}

/// Whether the template's `Rules` let a stack be created with these values.
fn rules_hold(e: &Eval) -> bool {
    let Some(rules) = template().get("Rules").and_then(Value::as_object) else {
        return true;
    };
    let holds = |v: &Value| {
        e.eval(v)
            .and_then(|v| v.as_bool())
            .unwrap_or_else(|| panic!("a rule's condition is a boolean: {v}"))
    };
    rules.values().all(|rule| {
        !rule.get("RuleCondition").is_none_or(holds)
            || rule["Assertions"]
                .as_array()
                .unwrap()
                .iter()
                .all(|a| holds(&a["Assert"]))
    })
}

/// The function's environment as the template sets it (a variable set to `AWS::NoValue` is
/// absent).
fn environment(e: &Eval) -> BTreeMap<String, String> {
    function()["Properties"]["Environment"]["Variables"]
        .as_object()
        .unwrap()
        .iter()
        .filter_map(|(var, v)| {
            e.eval(v).map(|v| {
                let v = v.as_str().unwrap_or_else(|| panic!("{var} is a string"));
                (var.clone(), v.to_string())
            })
        })
        .collect()
}

fn config_of(env: &BTreeMap<String, String>) -> Result<Config, ConfigError> {
    Config::from_lookup(|var| env.get(var).cloned())
}

/// Every value the template allows for a setting is one the function accepts, and just outside
/// what it allows, the function refuses wherever the template's bound is the function's: so
/// that a stack never deploys a setting that fails every run, and a bound changed on one side
/// only shows here. The values come from the template's declarations, and from [`EDGES`] for
/// what a pattern allows; a whole number's bounds and fractions are tried by
/// `every_whole_number_refuses_fractions_and_what_is_past_its_bounds`. The gap no parameter
/// constraint can close is pinned as a gap: an order between two parameters
/// ([`BETWEEN_PARAMETERS`]).
#[test]
fn each_setting_allows_only_what_the_function_accepts() {
    let params = template()["Parameters"].as_object().unwrap();
    let vars = function()["Properties"]["Environment"]["Variables"]
        .as_object()
        .unwrap();
    // The parameters the environment is made of, with their variables (CloudFormation checks
    // those of an AWS type, `List<AWS::EC2::Subnet::Id>`, against the account).
    let mut var_of: BTreeMap<&str, &str> = BTreeMap::new();
    for (var, value) in vars {
        for name in refs_in(value) {
            let Some((name, decl)) = params.get_key_value(&name) else {
                continue;
            };
            if decl["Type"] == "String" {
                assert_eq!(var_of.insert(name, var), None, "{name} sets two variables");
            }
        }
    }
    assert_eq!(
        var_of.keys().copied().collect::<BTreeSet<_>>(),
        EDGES.iter().map(|e| e.param).collect::<BTreeSet<_>>(),
        "EDGES has each parameter of the environment, once"
    );
    assert_eq!(EDGES.len(), var_of.len());

    let mut probes: Vec<Probe> = Vec::new();
    for edge in EDGES {
        let decl = &params[edge.param];
        let var = var_of[edge.param];
        let text = |v: &Value| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let mut inside: Vec<String> = edge.inside.iter().map(|v| v.to_string()).collect();
        let outside: Vec<(String, FunctionSays)> = edge
            .outside
            .iter()
            .map(|(v, says)| (v.to_string(), *says))
            .collect();
        inside.extend(decl.get("Default").map(text));
        if let Some(values) = decl.get("AllowedValues") {
            inside.extend(values.as_array().unwrap().iter().map(text));
        }
        let given = |v: &str| -> Vec<(String, String)> {
            edge.with
                .iter()
                .map(|(p, v)| (p.to_string(), v.to_string()))
                .chain([(edge.param.to_string(), v.to_string())])
                .collect()
        };
        let probe = |v: &str, allowed, says| Probe {
            given: given(v),
            allowed,
            says,
            var,
        };
        probes.extend(inside.iter().map(|v| probe(v, true, Accepts)));
        probes.extend(outside.iter().map(|(v, says)| probe(v, false, *says)));
    }
    for (given, allowed, var) in BETWEEN_PARAMETERS {
        probes.push(Probe {
            given: given
                .iter()
                .map(|(p, v)| (p.to_string(), v.to_string()))
                .collect(),
            allowed: *allowed,
            says: Refuses,
            var,
        });
    }

    let matches = full_matches(
        probes
            .iter()
            .flat_map(|probe| &probe.given)
            .filter_map(|(p, v)| {
                let pattern = params[p.as_str()].get("AllowedPattern")?.as_str()?;
                Some((pattern.to_string(), v.clone()))
            })
            .collect(),
    );
    let mut wrong: Vec<String> = Vec::new();
    for Probe {
        given,
        allowed,
        says,
        var,
    } in &probes
    {
        let given: Vec<(&str, &str)> = given
            .iter()
            .map(|(p, v)| (p.as_str(), v.as_str()))
            .collect();
        let e = Eval::new(&given);
        let template_allows = given
            .iter()
            .all(|(p, v)| declaration_allows(p, v, &matches))
            && rules_hold(&e);
        let got = config_of(&environment(&e))
            .map(|_| ())
            .map_err(|err| err.var);
        let want = says.verdict(var);
        if template_allows != *allowed || got != want {
            wrong.push(format!(
                "{given:?}: the template allows it: {template_allows} (expected {allowed}); \
                 the function: {got:?} (expected {want:?})"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// A whole-number parameter: the least and the most its pattern allows, and what the function
/// does with one more than the most (`Refuses` where the bound is the function's own; `Accepts`
/// where the function has none below `u64` and the template's is a sane cap, which also keeps
/// sums of seconds far from `u64`'s end).
struct Whole {
    param: &'static str,
    least: u64,
    most: u64,
    above: FunctionSays,
    /// Empty allowed (an optional parameter: unset, or none).
    optional: bool,
    /// Other parameters given with each value, where the function's bound depends on them.
    with: Given,
}

const fn whole(param: &'static str, least: u64, most: u64, above: FunctionSays) -> Whole {
    Whole {
        param,
        least,
        most,
        above,
        optional: false,
        with: &[],
    }
}

/// Seconds and counts the function bounds only by `u64`: capped at nine digits.
const NINE_DIGITS: u64 = 999_999_999;

/// Every whole-number parameter. CloudFormation's `Number` takes 1800.5 and 1e3, so each is a
/// `String` with a pattern: these are the bounds that pattern must keep.
const WHOLE_NUMBERS: &[Whole] = &[
    whole("FileThreshold", 1, NINE_DIGITS, Accepts),
    Whole {
        optional: true,
        ..whole("MaxMountTargets", 1, 999, Accepts)
    },
    whole("MaxShards", 1, MAX_LIST_SHARDS as u64, Refuses),
    whole("ScaleInCooldownSeconds", 0, NINE_DIGITS, Accepts),
    whole("SubnetExclusionSeconds", 0, NINE_DIGITS, Accepts),
    // An attempt longer than the call is refused as the call's (BETWEEN_PARAMETERS).
    Whole {
        with: &[("ApiCallTimeoutSeconds", "999999999")],
        ..whole(
            "ApiAttemptTimeoutSeconds",
            1,
            NINE_DIGITS,
            RefusesAs("API_CALL_TIMEOUT_SECONDS"),
        )
    },
    Whole {
        with: &[("ApiAttemptTimeoutSeconds", "1")],
        ..whole("ApiCallTimeoutSeconds", 1, NINE_DIGITS, Accepts)
    },
    whole("ClientRefreshSeconds", 0, NINE_DIGITS, Accepts),
    whole("MoveConcurrency", 1, 256, Refuses),
    Whole {
        optional: true,
        ..whole("RebalanceMaxVisits", 1, NINE_DIGITS, Accepts)
    },
    whole("AbandonedAfterSeconds", 60, NINE_DIGITS, Accepts),
    // The rebalance schedule's max_moves, which the event refuses past 100,000.
    whole("RebalanceMaxMoves", 0, 100_000, Refuses),
    // Checked by AWS alone (Lambda, EFS): their own bounds.
    whole("FunctionTimeout", 60, 900, Refuses),
    whole("FunctionMemorySize", 128, 10_240, Refuses),
    whole("AccessPointUid", 0, u32::MAX as u64, Refuses),
    whole("AccessPointGid", 0, u32::MAX as u64, Refuses),
    Whole {
        optional: true,
        ..whole("ExistingAccessPointUid", 0, u32::MAX as u64, Refuses)
    },
];

/// Parameters that no code of this repository reads, only AWS: the template's bounds are theirs.
const CHECKED_BY_AWS_ONLY: &[&str] = &[
    "FunctionTimeout",
    "FunctionMemorySize",
    "AccessPointUid",
    "AccessPointGid",
    "ExistingAccessPointUid",
];

fn whole_number(param: &str) -> &'static Whole {
    WHOLE_NUMBERS
        .iter()
        .find(|w| w.param == param)
        .unwrap_or_else(|| panic!("{param} is not in WHOLE_NUMBERS"))
}

/// Values to try for a whole number: those its pattern allows, and those it must refuse, each
/// with what the function does with it.
fn whole_probes(w: &Whole) -> (Vec<String>, Vec<(String, FunctionSays)>) {
    let mut inside = vec![w.least.to_string(), w.most.to_string()];
    if w.optional {
        inside.push(String::new());
    }
    let below = match w.least {
        0 => "-1".to_string(),
        n => (n - 1).to_string(),
    };
    let outside = vec![
        (below, Refuses),
        ((w.most + 1).to_string(), w.above),
        (format!("{}.5", w.least), Refuses),
        ("1800.5".to_string(), Refuses),
        (format!("{}.0", w.most), Refuses),
        ("1e3".to_string(), Refuses),
        ("ten".to_string(), Refuses),
    ];
    (inside, outside)
}

/// The variable of the function's environment that `param` sets, if any.
fn env_var_of(param: &str) -> Option<&'static str> {
    let vars = function()["Properties"]["Environment"]["Variables"]
        .as_object()
        .unwrap();
    vars.iter()
        .find(|(_, v)| refs_in(v).contains(param))
        .map(|(var, _)| var.as_str())
}

/// What the code does with the values `e` gives: the function's settings for a parameter of its
/// environment (`Err` naming the variable it refuses), the rebalance schedule's event for
/// `RebalanceMaxMoves` (`Err("max_moves")`); `None` for a parameter only AWS reads.
fn code_verdict(param: &str, e: &Eval) -> Option<Result<(), &'static str>> {
    if env_var_of(param).is_some() {
        return Some(
            config_of(&environment(e))
                .map(|_| ())
                .map_err(|err| err.var),
        );
    }
    let rebalance = schedules()["RebalanceSchedule"];
    if refs_in(&rebalance["Input"]).contains(param) {
        let input = e.eval(&rebalance["Input"]).unwrap();
        let Ok(event) = serde_json::from_str::<Value>(input.as_str().unwrap()) else {
            return Some(Err("max_moves"));
        };
        return Some(match Action::from_event(&event) {
            Ok(_) => Ok(()),
            Err(Error::UnsupportedEvent { .. }) => Err("max_moves"),
            Err(other) => panic!("the rebalance event {event}: {other:?}"),
        });
    }
    assert!(
        CHECKED_BY_AWS_ONLY.contains(&param),
        "{param} reaches neither the function nor its events: add it to CHECKED_BY_AWS_ONLY"
    );
    None
}

/// Each whole-number parameter, given a fraction (1800.5, 1.0), a number in another notation
/// (1e3), a word, or a number just past its bounds, is refused by the template's constraints,
/// and by the function where it reads the value: so that no such value deploys and then fails
/// every run. On its bounds, both accept it.
#[test]
fn every_whole_number_refuses_fractions_and_what_is_past_its_bounds() {
    let params = template()["Parameters"].as_object().unwrap();
    // No Number: its MinValue and MaxValue let fractions through, and AllowedPattern does not
    // apply to it.
    for (name, decl) in params {
        assert_ne!(decl["Type"], "Number", "{name} takes fractions");
    }
    // Every parameter whose default is a whole number is one (but for a list of allowed
    // values, which leaves no fraction in), and its default is within its bounds.
    for (name, decl) in params {
        let default = decl["Default"].as_str().unwrap_or("");
        if !default.is_empty() && default.bytes().all(|b| b.is_ascii_digit()) {
            if let Some(allowed) = decl.get("AllowedValues") {
                assert!(allowed.as_array().unwrap().iter().all(Value::is_string));
                continue;
            }
            let w = whole_number(name);
            let n: u64 = default.parse().unwrap();
            assert!((w.least..=w.most).contains(&n), "{name}'s default {n}");
        }
    }

    let mut cases: Vec<(&Whole, String, bool, FunctionSays)> = Vec::new();
    for w in WHOLE_NUMBERS {
        let (inside, outside) = whole_probes(w);
        cases.extend(inside.into_iter().map(|v| (w, v, true, Accepts)));
        cases.extend(outside.into_iter().map(|(v, says)| (w, v, false, says)));
    }
    let given = |w: &Whole, v: &str| -> Vec<(String, String)> {
        w.with
            .iter()
            .map(|(p, v)| (p.to_string(), v.to_string()))
            .chain([(w.param.to_string(), v.to_string())])
            .collect()
    };
    let matches = full_matches(
        cases
            .iter()
            .flat_map(|(w, v, ..)| given(w, v))
            .filter_map(|(p, v)| Some((params[&p].get("AllowedPattern")?.as_str()?.to_string(), v)))
            .collect(),
    );
    let mut wrong: Vec<String> = Vec::new();
    for (w, value, allowed, says) in &cases {
        let given = given(w, value);
        let given: Vec<(&str, &str)> = given
            .iter()
            .map(|(p, v)| (p.as_str(), v.as_str()))
            .collect();
        let e = Eval::new(&given);
        let template_allows = given
            .iter()
            .all(|(p, v)| declaration_allows(p, v, &matches))
            && rules_hold(&e);
        let var = env_var_of(w.param).unwrap_or("max_moves");
        let got = code_verdict(w.param, &e);
        let want = got.map(|_| says.verdict(var));
        if template_allows != *allowed || got != want {
            wrong.push(format!(
                "{}={value:?}: the template allows it: {template_allows} (expected {allowed}); \
                 the code: {got:?} (expected {want:?})",
                w.param
            ));
        }
    }
    // A list of allowed whole numbers takes none of them written as a fraction.
    for (name, decl) in params {
        for v in decl["AllowedValues"].as_array().into_iter().flatten() {
            let v = v.as_str().unwrap();
            if v.bytes().all(|b| b.is_ascii_digit()) {
                for fraction in [format!("{v}.0"), format!("{v}.5")] {
                    if declaration_allows(name, &fraction, &BTreeMap::new()) {
                        wrong.push(format!("{name}={fraction:?}: the template allows it"));
                    }
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The template's defaults are the function's own, but for `PROTECTED_SUBNET_IDS`, which the
/// template sets to the function's subnets.
#[test]
fn the_template_defaults_are_the_functions() {
    let from_template =
        config_of(&environment(&Eval::new(&[]))).expect("the defaults are accepted");
    let own: BTreeMap<String, String> = [
        ("EFS_FILE_SYSTEM_ID", "fs-0123456789abcdef0"),
        ("ECS_CLUSTER_NAME", "prod"),
        ("ECS_SERVICE_NAME", "api"),
        ("PROTECTED_SUBNET_IDS", "subnet-aaa,subnet-bbb"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    assert_eq!(from_template, config_of(&own).unwrap());
}

/// The console's interface lists every parameter, once.
#[test]
fn every_parameter_is_in_one_parameter_group() {
    let groups = template()["Metadata"]["AWS::CloudFormation::Interface"]["ParameterGroups"]
        .as_array()
        .expect("parameter groups");
    let mut grouped: Vec<&str> = groups
        .iter()
        .flat_map(|g| g["Parameters"].as_array().unwrap())
        .map(|p| p.as_str().unwrap())
        .collect();
    grouped.sort_unstable();
    let mut declared: Vec<&str> = template()["Parameters"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    declared.sort_unstable();
    assert_eq!(grouped, declared);
}

/// Parameter names referenced (`Ref`, `Fn::Sub` variables) anywhere in `v`.
fn refs_in(v: &Value) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    fn walk(v: &Value, out: &mut BTreeSet<String>) {
        match v {
            Value::Object(m) => {
                for (k, v) in m {
                    match (k.as_str(), v) {
                        ("Ref", Value::String(name)) => {
                            out.insert(name.clone());
                        }
                        ("Fn::Sub", Value::String(text)) => {
                            for part in text.split("${").skip(1) {
                                out.insert(part.split('}').next().unwrap().to_string());
                            }
                        }
                        _ => walk(v, out),
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    walk(v, &mut out);
    out
}

/// The function's schedules: event name → properties.
fn schedules() -> BTreeMap<&'static str, &'static Value> {
    function()["Properties"]["Events"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, e)| e["Type"] == "Schedule")
        .map(|(name, e)| (name.as_str(), &e["Properties"]))
        .collect()
}

/// A schedule's payload, evaluated with `e`, as JSON.
fn payload(e: &Eval, props: &Value) -> Value {
    let input = e.eval(&props["Input"]).unwrap();
    serde_json::from_str(input.as_str().expect("the Input is a string")).expect("the Input is JSON")
}

#[test]
fn the_schedules_send_the_payloads_in_events() {
    let schedules = schedules();
    assert_eq!(
        schedules.keys().copied().collect::<Vec<_>>(),
        ["RebalanceSchedule", "ReconcileSchedule"]
    );
    let defaults = Eval::new(&[]);

    // Reconcile: a constant input, every ScheduleRateMinutes, switched by ScheduleEnabled.
    let reconcile = schedules["ReconcileSchedule"];
    assert!(reconcile["Input"].is_string(), "a constant Input");
    assert_eq!(
        payload(&defaults, reconcile),
        read_json("events/reconcile.json")
    );
    assert_eq!(
        defaults.eval(&reconcile["Schedule"]).unwrap(),
        "rate(5 minutes)"
    );
    assert_eq!(defaults.eval(&reconcile["State"]).unwrap(), "ENABLED");
    let off = Eval::new(&[("ScheduleEnabled", "false")]);
    assert_eq!(off.eval(&reconcile["State"]).unwrap(), "DISABLED");

    // Rebalance: daily off-peak, with max_moves from RebalanceMaxMoves.
    let rebalance = schedules["RebalanceSchedule"];
    assert_eq!(
        payload(&defaults, rebalance),
        read_json("events/rebalance.json")
    );
    assert_eq!(
        defaults.eval(&rebalance["Schedule"]).unwrap(),
        "cron(0 17 * * ? *)"
    );
    assert_eq!(defaults.eval(&rebalance["State"]).unwrap(), "ENABLED");
    let given = Eval::new(&[
        ("RebalanceMaxMoves", "500"),
        ("RebalanceScheduleEnabled", "false"),
    ]);
    assert_eq!(payload(&given, rebalance)["max_moves"], 500);
    assert_eq!(given.eval(&rebalance["State"]).unwrap(), "DISABLED");

    // Every allowed rate has a schedule expression and the matching period.
    let rates = &template()["Mappings"]["ScheduleRate"];
    let allowed = template()["Parameters"]["ScheduleRateMinutes"]["AllowedValues"]
        .as_array()
        .unwrap();
    assert_eq!(allowed.len(), rates.as_object().unwrap().len());
    for minutes in allowed {
        let minutes = minutes.as_str().unwrap();
        let n: u64 = minutes.parse().unwrap();
        let rate = &rates[minutes];
        let unit = if n == 1 { "minute" } else { "minutes" };
        assert_eq!(rate["Expression"], format!("rate({n} {unit})"));
        assert_eq!(rate["Seconds"], n * 60);
    }
}

#[test]
fn the_sample_events_are_the_accepted_shapes() {
    assert_eq!(read_json("events/plan.json"), json!({"action": "plan"}));
    assert_eq!(
        read_json("events/reconcile.json"),
        json!({"action": "reconcile"})
    );
    assert_eq!(read_json("events/rebalance.json")["action"], "rebalance");
    assert_eq!(
        read_json("events/scheduled.json")["detail-type"],
        "Scheduled Event"
    );
}

// ---------------------------------------------------------------------------------------
// IAM.

/// Every statement of the function's role, evaluated with `e`.
fn statements(e: &Eval) -> Vec<Value> {
    let role = resource(ROLE);
    assert_eq!(role["Type"], "AWS::IAM::Role");
    let props = &role["Properties"];
    assert!(
        props.get("ManagedPolicyArns").is_none(),
        "no managed policy"
    );
    let principal = &props["AssumeRolePolicyDocument"]["Statement"][0]["Principal"];
    assert_eq!(principal["Service"], "lambda.amazonaws.com");
    let mut out = Vec::new();
    for policy in props["Policies"].as_array().unwrap() {
        let doc = e.eval(&policy["PolicyDocument"]).unwrap();
        out.extend(doc["Statement"].as_array().unwrap().iter().cloned());
    }
    out
}

fn strings(v: &Value) -> Vec<String> {
    match v {
        Value::String(s) => vec![s.clone()],
        Value::Array(a) => a.iter().map(|s| s.as_str().unwrap().to_string()).collect(),
        other => panic!("not a string or a list: {other}"),
    }
}

/// action → the resources it is allowed on (and the statement's condition, if any).
fn allowed(e: &Eval) -> BTreeMap<String, (BTreeSet<String>, Value)> {
    let mut out: BTreeMap<String, (BTreeSet<String>, Value)> = BTreeMap::new();
    for s in statements(e) {
        assert_eq!(s["Effect"], "Allow", "{s}");
        assert!(s.get("NotAction").is_none() && s.get("NotResource").is_none());
        let resources = strings(&s["Resource"]);
        for action in strings(&s["Action"]) {
            assert!(!action.contains('*'), "wildcard action {action}");
            let entry = out.entry(action.clone()).or_default();
            assert!(
                entry.0.is_empty(),
                "{action} is in two statements: keep one place per action"
            );
            entry.0.extend(resources.iter().cloned());
            entry.1 = s.get("Condition").cloned().unwrap_or(Value::Null);
        }
    }
    out
}

/// The resources each action must be scoped to, for the parameters of [`Eval::new`] plus
/// `services` as `EcsServiceName`.
fn expected_resources(action: &str, services: &[&str]) -> Vec<String> {
    let arn = |service: &str, rest: &str| format!("arn:aws:{service}:{REGION}:{ACCOUNT}:{rest}");
    let eni = arn("ec2", "network-interface/*");
    let (service, name) = action.split_once(':').unwrap();
    match (service, name) {
        ("elasticfilesystem", _) => {
            vec![arn("elasticfilesystem", "file-system/fs-0123456789abcdef0")]
        }
        ("ssm", _) => vec![
            arn("ssm", "parameter/efs-mount-autoscaling/mount-targets"),
            arn("ssm", "parameter/efs-mount-autoscaling/state"),
        ],
        ("ecs", "ListTasks") => vec!["*".into()],
        ("ecs", "DescribeTasks") => vec![arn("ecs", "task/prod/*")],
        ("ecs", _) => services
            .iter()
            .map(|s| arn("ecs", &format!("service/prod/{s}")))
            .collect(),
        ("logs", _) => vec!["<LogGroup.Arn>".into()],
        ("ec2", "CreateNetworkInterface") => vec![
            eni,
            // In a shared VPC, subnets and security groups belong to the VPC's owner.
            format!("arn:aws:ec2:{REGION}:*:subnet/*"),
            format!("arn:aws:ec2:{REGION}:*:security-group/*"),
        ],
        ("ec2", _) if UNSCOPABLE.contains(&action) => vec!["*".into()],
        ("ec2", _) => vec![eni],
        _ => panic!("no expected resource for {action}: add it here and to the template"),
    }
}

fn implied(root_access: bool) -> impl Iterator<Item = &'static str> {
    IMPLIED_ACTIONS
        .iter()
        .map(|(a, _)| *a)
        .filter(move |a| root_access || *a != "elasticfilesystem:ClientRootAccess")
}

#[test]
fn the_role_allows_exactly_what_the_code_calls_and_what_aws_needs_for_it() {
    const ARN: &str = "arn:aws:elasticfilesystem:us-east-1:123456789012:access-point/fsap-0abc";
    for (overrides, root_access) in [
        (vec![("AccessPointUid", "0")], true),
        (vec![("AccessPointUid", "1000")], false),
        // An existing access point: root access follows its real user, whatever
        // AccessPointUid (default 0) says.
        (
            vec![
                ("ExistingAccessPointArn", ARN),
                ("ExistingAccessPointUid", "1000"),
            ],
            false,
        ),
        (
            vec![
                ("ExistingAccessPointArn", ARN),
                ("ExistingAccessPointUid", "0"),
            ],
            true,
        ),
    ] {
        let uid = format!("{overrides:?}");
        let e = Eval::new(&overrides);
        let got: BTreeSet<String> = allowed(&e).into_keys().collect();
        let want: BTreeSet<String> = CALLED_ACTIONS
            .iter()
            .copied()
            .chain(implied(root_access))
            .map(String::from)
            .collect();
        let missing: Vec<_> = want.difference(&got).collect();
        let extra: Vec<_> = got.difference(&want).collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "uid {uid}: the template misses {missing:?} and allows more than needed: {extra:?}"
        );
    }
}

#[test]
fn every_action_is_on_the_narrowest_resource() {
    for services in [
        vec!["api"],
        vec!["api", "worker", "ingest"],
        vec!["a", "b", "c", "d", "e"],
    ] {
        let joined = services.join(",");
        let e = Eval::new(&[("EcsServiceName", &joined)]);
        for (action, (resources, condition)) in allowed(&e) {
            let want: BTreeSet<String> =
                expected_resources(&action, &services).into_iter().collect();
            assert_eq!(resources, want, "{action} with services {joined}");
            if resources.contains("*") {
                assert!(
                    UNSCOPABLE.contains(&action.as_str())
                        || SCOPED_BY_CONDITION.contains(&action.as_str()),
                    "{action} on * although IAM can scope it"
                );
            }
            // Network interfaces are created, deleted and re-addressed only in the file
            // system's VPC ([`network_interfaces_only_in_the_subnets_the_function_uses`]).
            match action.as_str() {
                "ec2:CreateNetworkInterface" => assert_eq!(
                    condition,
                    json!({"ArnLikeIfExists": {"ec2:Vpc": VPC_ARN}}),
                    "{action}: only in the file system's VPC"
                ),
                "ec2:DeleteNetworkInterface" => assert_eq!(
                    condition,
                    json!({"ArnLike": {"ec2:Vpc": VPC_ARN}}),
                    "{action}: only in the file system's VPC"
                ),
                "ec2:AssignPrivateIpAddresses" | "ec2:UnassignPrivateIpAddresses" => assert_eq!(
                    condition,
                    json!({"ArnLike": {
                        "ec2:Vpc": VPC_ARN,
                        "ec2:Subnet": [subnet_arn("subnet-aaa"), subnet_arn("subnet-bbb")],
                    }}),
                    "{action}: only the function's own interfaces"
                ),
                _ => {}
            }
            // The cluster's tasks, and only its.
            if matches!(action.as_str(), "ecs:ListTasks" | "ecs:DescribeTasks") {
                assert_eq!(
                    condition,
                    json!({"ArnEquals": {"ecs:cluster": "arn:aws:ecs:us-east-1:123456789012:cluster/prod"}}),
                    "{action}: only in the cluster"
                );
            }
            if action.starts_with("elasticfilesystem:Client") {
                assert_eq!(
                    condition,
                    json!({"StringEquals": {"elasticfilesystem:AccessPointArn": "<AccessPoint.Arn>"}}),
                    "{action}: only through the function's access point"
                );
            }
        }
    }
}

#[test]
fn nothing_else_grants_the_function_permissions() {
    for (name, r) in template()["Resources"].as_object().unwrap() {
        let ty = r["Type"].as_str().unwrap();
        assert!(
            !matches!(
                ty,
                "AWS::IAM::Policy" | "AWS::IAM::ManagedPolicy" | "AWS::IAM::RolePolicy"
            ),
            "{name}: {ty} would add permissions outside FunctionRole"
        );
        if ty == "AWS::Serverless::Function" {
            assert_eq!(name, FUNCTION, "one function");
        }
    }
    // Each implied action says why it is there.
    for (action, why) in IMPLIED_ACTIONS {
        assert!(!why.is_empty(), "{action}");
        assert!(
            !CALLED_ACTIONS.contains(action),
            "{action} is called, not implied"
        );
    }
}

/// The file system's VPC ([`Eval::new`]'s `FileSystemVpcId`), as `ec2:Vpc` names it.
const VPC_ARN: &str = "arn:aws:ec2:us-east-1:*:vpc/vpc-0abc";

/// A subnet as the role names it: any partition, region and account (a shared VPC's subnets
/// belong to its owner), the one subnet id.
fn subnet_arn(id: &str) -> String {
    format!("arn:*:ec2:*:*:subnet/{id}")
}

/// CreateNetworkInterface serves CreateMountTarget (the mount target's interface, in a subnet
/// of `SUBNET_IDS`) and Lambda (the function's interfaces, in `FunctionSubnetIds`). With
/// `MountTargetSubnetIds` the role names exactly those subnets; without it the function may
/// pick any subnet of the VPC, so any subnet, under `ec2:Vpc`. Re-addressing is Lambda's alone,
/// on its interfaces in `FunctionSubnetIds`. Deleting stays VPC-wide: a target the function
/// created in a subnet since dropped from the list must still go.
#[test]
fn network_interfaces_only_in_the_subnets_the_function_uses() {
    let function_subnets = ["subnet-aaa", "subnet-bbb"];
    let eni = format!("arn:aws:ec2:{REGION}:{ACCOUNT}:network-interface/*");
    let security_groups = format!("arn:aws:ec2:{REGION}:*:security-group/*");
    let any_subnet = format!("arn:aws:ec2:{REGION}:*:subnet/*");
    for (given, mount_target_subnets) in [
        ("", None),
        ("subnet-0a1", Some(vec!["subnet-0a1"])),
        (
            "subnet-0a1,subnet-0b2",
            Some(vec!["subnet-0a1", "subnet-0b2"]),
        ),
        // A function subnet may also be a mount target subnet.
        (
            "subnet-aaa,subnet-0c3",
            Some(vec!["subnet-aaa", "subnet-0c3"]),
        ),
    ] {
        let e = Eval::new(&[("MountTargetSubnetIds", given)]);
        let config = config_of(&environment(&e)).expect("the template's environment is accepted");
        assert_eq!(
            config.subnet_ids,
            mount_target_subnets
                .clone()
                .map(|ids| ids.iter().map(|s| s.to_string()).collect::<Vec<_>>()),
            "MountTargetSubnetIds {given:?} is the function's SUBNET_IDS"
        );
        let allowed = allowed(&e);

        let (resources, condition) = &allowed["ec2:CreateNetworkInterface"];
        let mut want: BTreeSet<String> = [eni.clone(), security_groups.clone()].into();
        match &config.subnet_ids {
            Some(ids) => want.extend(
                ids.iter()
                    .map(String::as_str)
                    .chain(function_subnets)
                    .map(subnet_arn),
            ),
            None => {
                want.insert(any_subnet.clone());
            }
        }
        assert_eq!(resources, &want, "CreateNetworkInterface with {given:?}");
        if config.subnet_ids.is_some() {
            assert!(
                resources.iter().all(|r| !r.ends_with("subnet/*")),
                "{given:?}: no subnet wildcard beside the named subnets"
            );
        }
        assert_eq!(
            condition,
            &json!({"ArnLikeIfExists": {"ec2:Vpc": VPC_ARN}}),
            "CreateNetworkInterface with {given:?}: in the file system's VPC"
        );

        for action in [
            "ec2:AssignPrivateIpAddresses",
            "ec2:UnassignPrivateIpAddresses",
        ] {
            let (resources, condition) = &allowed[action];
            assert_eq!(resources, &BTreeSet::from([eni.clone()]), "{action}");
            let subnets: Vec<String> = function_subnets.into_iter().map(subnet_arn).collect();
            assert_eq!(
                condition,
                &json!({"ArnLike": {"ec2:Vpc": VPC_ARN, "ec2:Subnet": subnets}}),
                "{action} with {given:?}: the function's interfaces only"
            );
        }

        let (resources, condition) = &allowed["ec2:DeleteNetworkInterface"];
        assert_eq!(resources, &BTreeSet::from([eni.clone()]));
        assert_eq!(
            condition,
            &json!({"ArnLike": {"ec2:Vpc": VPC_ARN}}),
            "DeleteNetworkInterface with {given:?}: any interface of the VPC"
        );
    }
}

/// UpdateService is allowed on the named services with no condition: IAM has no key for what
/// the function changes (a forced deployment) or must not (desired count, deployment settings),
/// and none AWS documents as absent when no task definition is named
/// (docs/operations-reference.md, "What IAM cannot limit UpdateService to").
/// A condition added here must come with that evidence.
#[test]
fn the_forced_deployment_has_no_condition() {
    let e = Eval::new(&[("EcsServiceName", "api,worker")]);
    let allowed = allowed(&e);
    for action in ["ecs:UpdateService", "ecs:DescribeServices"] {
        let (resources, condition) = &allowed[action];
        assert_eq!(
            resources,
            &BTreeSet::from([
                format!("arn:aws:ecs:{REGION}:{ACCOUNT}:service/prod/api"),
                format!("arn:aws:ecs:{REGION}:{ACCOUNT}:service/prod/worker"),
            ]),
            "{action}"
        );
        assert_eq!(condition, &Value::Null, "{action}");
    }
}

// ---------------------------------------------------------------------------------------
// Metrics, alarms, dashboard.

fn spec(name: &str) -> &'static MetricSpec {
    metrics::METRICS
        .iter()
        .find(|m| m.name == name)
        .unwrap_or_else(|| panic!("{name} is not a metric that metrics.rs emits"))
}

fn alarms() -> Vec<(&'static str, &'static Value)> {
    template()["Resources"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, r)| r["Type"] == "AWS::CloudWatch::Alarm")
        .map(|(k, r)| (k.as_str(), &r["Properties"]))
        .collect()
}

/// `(namespace, metric name, dimension names)` of an alarm's metric or metric-math inputs.
fn alarm_metrics(p: &Value) -> Vec<(String, String, Vec<String>)> {
    let one = |m: &Value| {
        (
            m["Namespace"].as_str().unwrap().to_string(),
            m["MetricName"].as_str().unwrap().to_string(),
            m["Dimensions"]
                .as_array()
                .map(|d| {
                    d.iter()
                        .map(|d| d["Name"].as_str().unwrap().to_string())
                        .collect()
                })
                .unwrap_or_default(),
        )
    };
    if p.get("MetricName").is_some() {
        return vec![one(p)];
    }
    p["Metrics"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m.get("MetricStat").map(|s| one(&s["Metric"])))
        .collect()
}

#[test]
fn the_alarms_use_the_emitted_metrics() {
    let mut ours = 0;
    for (name, p) in alarms() {
        for (namespace, metric, dims) in alarm_metrics(p) {
            if namespace == metrics::NAMESPACE {
                ours += 1;
                assert_eq!(dims, spec(&metric).dimensions, "{name}: {metric}");
            }
        }
    }
    assert!(ours > 0);
}

#[test]
fn the_four_alarms_are_there() {
    let by_metric = |ns: &str, metric: &str| {
        alarms()
            .into_iter()
            .filter(|(_, p)| {
                alarm_metrics(p)
                    .iter()
                    .any(|(n, m, _)| n == ns && m == metric)
            })
            .map(|(_, p)| p)
            .collect::<Vec<_>>()
    };
    let e = Eval::new(&[]);
    // Function errors.
    let errors: Vec<_> = by_metric("AWS/Lambda", "Errors")
        .into_iter()
        .filter(|p| p.get("MetricName").is_some())
        .collect();
    assert_eq!(errors.len(), 1);
    assert_eq!(
        errors[0]["ComparisonOperator"],
        "GreaterThanOrEqualToThreshold"
    );
    assert_eq!(errors[0]["Threshold"], 1);
    // At capacity.
    let at_capacity = by_metric(metrics::NAMESPACE, metrics::AT_CAPACITY);
    assert_eq!(at_capacity.len(), 1);
    assert_eq!(at_capacity[0]["Statistic"], "Maximum");
    assert_eq!(at_capacity[0]["Threshold"], 1);
    assert_eq!(
        e.eval(&at_capacity[0]["Dimensions"]).unwrap(),
        json!([{"Name": "FileSystemId", "Value": "fs-0123456789abcdef0"}])
    );
    // It means MAX_SHARDS now; a modulo-sha256 list is capped by the AZs until migrated; a
    // list held at version 1 (ListVersionHeld) is the routers' to release, not MAX_SHARDS'.
    let description = at_capacity[0]["AlarmDescription"].as_str().unwrap();
    for says in [
        "MAX_SHARDS",
        "FILE_THRESHOLD",
        metrics::LIST_VERSION_HELD,
        "modulo-sha256",
        r#"{"action":"migrate","strategy":"rendezvous"}"#,
    ] {
        assert!(description.contains(says), "{says}: {description}");
    }
    // A rollout that failed: the tasks still run the previous list.
    let rollouts = by_metric(metrics::NAMESPACE, metrics::ROLLOUTS_FAILED);
    assert_eq!(rollouts.len(), 1);
    assert_eq!(rollouts[0]["Statistic"], "Maximum");
    assert_eq!(rollouts[0]["Threshold"], 1);
    assert_eq!(
        rollouts[0]["ComparisonOperator"],
        "GreaterThanOrEqualToThreshold"
    );
    // No successful run for 3 periods of the schedule; no run at all breaches.
    // It counts reconcile runs only (a metric no other invocation emits), so a stream of
    // rebalance events cannot hide a failing schedule.
    assert!(by_metric("AWS/Lambda", "Invocations").is_empty());
    let runs: Vec<_> = by_metric(metrics::NAMESPACE, metrics::RECONCILE_RUNS);
    assert_eq!(runs.len(), 1);
    let p = runs[0];
    assert_eq!(p["Statistic"], "Sum");
    assert_eq!(p["EvaluationPeriods"], 3);
    assert_eq!(p["DatapointsToAlarm"], 3);
    assert_eq!(p["TreatMissingData"], "breaching");
    assert_eq!(p["ComparisonOperator"], "LessThanThreshold");
    assert_eq!(p["Threshold"], 1);
    assert_eq!(e.eval(&p["Period"]).unwrap(), 300, "the schedule's period");
    for metric in [metrics::FLEET_NOT_CONVERGED, metrics::UNREADABLE_SHARDS] {
        let alarms = by_metric(metrics::NAMESPACE, metric);
        assert_eq!(alarms.len(), 1, "{metric}");
        assert_eq!(alarms[0]["Threshold"], 1, "{metric}");
    }
}

/// The dashboard body as CloudFormation would render it for parameters `overrides` (numbers
/// stay numbers, names and ARNs are strings), parsed; and the raw text.
fn dashboard(overrides: &[(&str, &str)]) -> (Value, &'static str) {
    let sub = &resource("Dashboard")["Properties"]["DashboardBody"]["Fn::Sub"];
    let (text, vars) = match sub {
        Value::Array(a) => (a[0].as_str().unwrap(), a[1].as_object().unwrap().clone()),
        Value::String(s) => (s.as_str(), Map::new()),
        other => panic!("DashboardBody is not a Fn::Sub: {other}"),
    };
    // Every variable resolves: a Sub variable, a parameter, a resource (attribute), a pseudo
    // parameter.
    let e = Eval::new(overrides);
    let mut plain = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        plain.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after.find('}').unwrap();
        match e.var(&after[..end], &vars) {
            Value::String(s) => plain.push_str(&s),
            other => plain.push_str(&other.to_string()),
        }
        rest = &after[end + 1..];
    }
    plain.push_str(rest);
    let body = serde_json::from_str(&plain)
        .unwrap_or_else(|err| panic!("the dashboard body is not JSON: {err}\n{plain}"));
    (body, text)
}

/// `(namespace, metric, dimension names)` of a dashboard metric row, or of a SEARCH
/// expression's `{Namespace,Dim,…} MetricName="…"`.
fn widget_metrics(row: &Value) -> Option<(String, String, Vec<String>)> {
    let row = row.as_array()?;
    if let Some(expr) = row.first()?.get("expression").and_then(Value::as_str) {
        let schema = expr.split('{').nth(1)?.split('}').next()?;
        let mut parts = schema.split(',').map(str::trim);
        let namespace = parts.next()?.to_string();
        let dims = parts.map(String::from).collect();
        let metric = expr
            .split("MetricName=\"")
            .nth(1)?
            .split('"')
            .next()?
            .to_string();
        return Some((namespace, metric, dims));
    }
    let names: Vec<&str> = row.iter().map_while(Value::as_str).collect();
    let (namespace, metric) = (names.first()?, names.get(1)?);
    let dims = names[2..]
        .chunks(2)
        .map(|pair| pair[0].to_string())
        .collect();
    Some((namespace.to_string(), metric.to_string(), dims))
}

/// The dashboard's widgets and, for each metric of ours it shows, the widget that shows it
/// (its dimensions checked against what `metrics.rs` emits).
fn dashboard_metrics(body: &Value) -> (Vec<Value>, Vec<(usize, String)>) {
    let widgets = body["widgets"].as_array().unwrap().clone();
    let mut shown: Vec<(usize, String)> = Vec::new();
    for (i, w) in widgets.iter().enumerate() {
        let Some(rows) = w["properties"]["metrics"].as_array() else {
            continue;
        };
        for row in rows {
            let (namespace, metric, dims) =
                widget_metrics(row).unwrap_or_else(|| panic!("cannot read the row {row}"));
            if namespace == metrics::NAMESPACE {
                assert_eq!(dims, spec(&metric).dimensions, "dashboard: {metric}");
                shown.push((i, metric));
            }
        }
    }
    (widgets, shown)
}

fn widget_of(shown: &[(usize, String)], metric: &str) -> usize {
    shown
        .iter()
        .find(|(_, m)| m == metric)
        .map(|(i, _)| *i)
        .unwrap_or_else(|| panic!("the dashboard does not show {metric}"))
}

/// The values of a widget's horizontal annotations (its lines).
fn lines_of(widget: &Value) -> Vec<Value> {
    widget["properties"]["annotations"]["horizontal"]
        .as_array()
        .map(|a| a.iter().map(|l| l["value"].clone()).collect())
        .unwrap_or_default()
}

#[test]
fn the_dashboard_shows_every_metric_and_mount_targets_against_desired() {
    let (body, _) = dashboard(&[]);
    let (widgets, shown) = dashboard_metrics(&body);
    // Every emitted metric is on the dashboard, with its dimensions.
    for m in metrics::METRICS {
        widget_of(&shown, m.name);
    }
    // Mount targets against desired, in one widget.
    assert_eq!(
        widget_of(&shown, metrics::MOUNT_TARGETS),
        widget_of(&shown, metrics::DESIRED_MOUNT_TARGETS)
    );
    // Files per mount target: one line per target, found by a search over the per-target
    // dimension; no FILE_THRESHOLD line there (a target serves several shards, each held to
    // the threshold).
    let targets = &widgets[widget_of(&shown, metrics::FILE_COUNT)];
    let row = &targets["properties"]["metrics"][0][0];
    let expr = row["expression"].as_str().expect("a SEARCH expression");
    assert!(
        expr.contains(&format!(
            "{{{},{},{}}}",
            metrics::NAMESPACE,
            metrics::DIM_FILE_SYSTEM_ID,
            metrics::DIM_MOUNT_TARGET
        )),
        "{expr}"
    );
    assert!(
        expr.contains(r#"FileSystemId="fs-0123456789abcdef0""#),
        "{expr}"
    );
    assert!(lines_of(targets).is_empty(), "{targets}");
}

#[test]
fn the_dashboard_shows_the_largest_shard_against_the_threshold_and_shards_against_desired() {
    // Values no default has, so that each line is seen to come from its own parameter.
    let (body, text) = dashboard(&[("FileThreshold", "12345"), ("MaxShards", "777")]);
    let (widgets, shown) = dashboard_metrics(&body);

    // The fullest shard directory, with FILE_THRESHOLD as a horizontal line: the comparison
    // that makes the function add a shard.
    let largest_at = widget_of(&shown, metrics::LARGEST_SHARD_FILES);
    let largest = &widgets[largest_at];
    assert_eq!(lines_of(largest), [json!(12345)], "{largest}");
    assert!(
        text.contains(r#""value": ${FileThreshold}"#),
        "the threshold line is the FileThreshold parameter"
    );
    let others: Vec<&String> = shown
        .iter()
        .filter(|(i, m)| *i == largest_at && m != metrics::LARGEST_SHARD_FILES)
        .map(|(_, m)| m)
        .collect();
    assert!(
        others.is_empty(),
        "only the largest shard is held to the threshold: {others:?}"
    );

    // Shards against desired shards, in one widget, with MAX_SHARDS as the line they stop at.
    let shards = widget_of(&shown, metrics::SHARDS);
    assert_eq!(shards, widget_of(&shown, metrics::DESIRED_SHARDS));
    assert_eq!(lines_of(&widgets[shards]), [json!(777)]);

    // Shards and mount targets apart: two quantities, two widgets.
    assert_ne!(shards, widget_of(&shown, metrics::MOUNT_TARGETS));
}

// ---------------------------------------------------------------------------------------
// Outputs and samconfig.

#[test]
fn the_outputs_name_the_function_the_schedule_the_parameter_and_the_dashboard() {
    let outputs = template()["Outputs"].as_object().unwrap();
    let value = |name: &str| &outputs[name]["Value"];
    assert_eq!(value("FunctionName"), &json!({"Ref": FUNCTION}));
    // SAM names a schedule's rule <function><event>.
    assert_eq!(
        value("ScheduleRuleName"),
        &json!({"Ref": format!("{FUNCTION}ReconcileSchedule")})
    );
    assert_eq!(
        value("RebalanceScheduleRuleName"),
        &json!({"Ref": format!("{FUNCTION}RebalanceSchedule")})
    );
    assert_eq!(value("ParameterName"), &json!({"Ref": "SsmParameterName"}));
    assert_eq!(value("DashboardName"), &json!({"Ref": "Dashboard"}));
    assert!(outputs.contains_key("DashboardUrl"));
}

/// The dashboard's address is on the console of the stack's partition: China and GovCloud have
/// their own hosts.
#[test]
fn the_dashboard_url_is_on_the_console_of_the_stacks_partition() {
    let url = &template()["Outputs"]["DashboardUrl"]["Value"];
    for (partition, region, host) in [
        ("aws", "us-east-1", "us-east-1.console.aws.amazon.com"),
        ("aws", "eu-west-1", "eu-west-1.console.aws.amazon.com"),
        ("aws-cn", "cn-north-1", "console.amazonaws.cn"),
        ("aws-cn", "cn-northwest-1", "console.amazonaws.cn"),
        (
            "aws-us-gov",
            "us-gov-west-1",
            "console.amazonaws-us-gov.com",
        ),
    ] {
        let e = Eval::new(&[]).in_partition(partition, region);
        assert_eq!(
            e.eval(url).unwrap(),
            json!(format!(
                "https://{host}/cloudwatch/home?region={region}#dashboards:name=<Dashboard>"
            )),
            "{partition}"
        );
    }
}

// ---------------------------------------------------------------------------------------
// What an organisation may require of the role: a permissions boundary, tags.

#[test]
fn the_role_has_a_permissions_boundary_and_tags_only_when_given() {
    let role = &resource(ROLE)["Properties"];
    let defaults = Eval::new(&[]);
    assert_eq!(defaults.eval(&role["PermissionsBoundary"]), None);
    assert_eq!(defaults.eval(&role["Tags"]), None);

    let arn = "arn:aws:iam::123456789012:policy/boundaries/data-team";
    let given = Eval::new(&[
        ("PermissionsBoundaryArn", arn),
        (
            "RoleTags",
            "team=data,cost-center=42,note=,a:b/c=d@e.f,owner=x+y",
        ),
    ]);
    assert_eq!(given.eval(&role["PermissionsBoundary"]), Some(json!(arn)));
    let tag = |k: &str, v: &str| json!({"Key": k, "Value": v});
    assert_eq!(
        given.eval(&role["Tags"]),
        Some(json!([
            tag("team", "data"),
            tag("cost-center", "42"),
            tag("note", ""),
            tag("a:b/c", "d@e.f"),
            tag("owner", "x+y"),
        ]))
    );
    let one = Eval::new(&[("RoleTags", "team=data")]);
    assert_eq!(one.eval(&role["Tags"]), Some(json!([tag("team", "data")])));

    // What the parameters take and refuse: a pair always has its `=`, at most five pairs.
    let cases: &[(&str, &str, bool)] = &[
        ("PermissionsBoundaryArn", "", true),
        ("PermissionsBoundaryArn", arn, true),
        (
            "PermissionsBoundaryArn",
            "arn:aws:iam::aws:policy/PowerUserAccess",
            true,
        ),
        (
            "PermissionsBoundaryArn",
            "arn:aws-cn:iam::123456789012:policy/b",
            true,
        ),
        (
            "PermissionsBoundaryArn",
            "arn:aws-us-gov:iam::123456789012:policy/b",
            true,
        ),
        (
            "PermissionsBoundaryArn",
            "arn:aws:iam::123456789012:role/b",
            false,
        ),
        ("PermissionsBoundaryArn", "boundaries/data-team", false),
        (
            "PermissionsBoundaryArn",
            "arn:aws:iam::123456789012:policy/",
            false,
        ),
        ("RoleTags", "", true),
        ("RoleTags", "a=1,b=2,c=3,d=4,e=5", true),
        ("RoleTags", "a=1,b=2,c=3,d=4,e=5,f=6", false),
        ("RoleTags", "team", false),
        ("RoleTags", "=data", false),
        ("RoleTags", "a=b=c", false),
        ("RoleTags", "a=1,", false),
        ("RoleTags", "a=1, b=2", false),
        ("RoleTags", "my team=data", false),
    ];
    let matches = full_matches(
        cases
            .iter()
            .map(|(p, v, _)| {
                let pattern = template()["Parameters"][p]["AllowedPattern"]
                    .as_str()
                    .unwrap();
                (pattern.to_string(), v.to_string())
            })
            .collect(),
    );
    for (param, value, allowed) in cases {
        assert_eq!(
            declaration_allows(param, value, &matches),
            *allowed,
            "{param}={value:?}"
        );
    }
}

#[test]
fn samconfig_overrides_only_parameters_that_exist() {
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let script = "import json, sys, tomllib\n\
                  json.dump(tomllib.load(open(sys.argv[1], 'rb')), sys.stdout)\n";
    let out = Command::new(&python)
        .args(["-c", script])
        .arg(repo().join("samconfig.toml"))
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "samconfig.toml: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let config: Value = serde_json::from_slice(&out.stdout).unwrap();
    let deploy = &config["default"]["deploy"]["parameters"];
    let capabilities = strings(&deploy["capabilities"]).join(" ");
    assert!(
        capabilities.contains("CAPABILITY_IAM"),
        "the stack creates a role"
    );
    let params = template()["Parameters"].as_object().unwrap();
    if let Some(overrides) = deploy.get("parameter_overrides") {
        for o in strings(overrides).iter().flat_map(|o| o.split_whitespace()) {
            let name = o.split('=').next().unwrap();
            assert!(params.contains_key(name), "samconfig.toml overrides {name}");
        }
    }
}
