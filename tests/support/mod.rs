//! The end-to-end harness: moto_server, a small AWS world built through the SDK, a directory
//! laid out as the function's EFS mount, an in-test Lambda Runtime API that runs the function
//! binary as Lambda does, and a fault-injecting proxy between the function and moto.
//!
//! Shared by `tests/e2e.rs` and `examples/demo.rs` (`#[path = "../tests/support/mod.rs"]`);
//! each uses a part of it.
#![allow(dead_code, unused_imports, unused_macros)]

/// `assert!` for a test that invoked the function: on failure it prints the invocation (the
/// response or error, and the function's logs) after the message.
macro_rules! check {
    ($inv:expr, $cond:expr $(,)?) => {
        assert!($cond, "{}", $inv.describe())
    };
    ($inv:expr, $cond:expr, $($msg:tt)+) => {
        assert!($cond, "{}\n{}", format_args!($($msg)+), $inv.describe())
    };
}

/// `assert_eq!` that prints the invocation on failure, as [`check!`] does.
macro_rules! check_eq {
    ($inv:expr, $left:expr, $right:expr $(,)?) => {
        assert_eq!($left, $right, "{}", $inv.describe())
    };
    ($inv:expr, $left:expr, $right:expr, $($msg:tt)+) => {
        assert_eq!($left, $right, "{}\n{}", format_args!($($msg)+), $inv.describe())
    };
}

/// `assert_ne!` that prints the invocation on failure, as [`check!`] does.
macro_rules! check_ne {
    ($inv:expr, $left:expr, $right:expr $(,)?) => {
        assert_ne!($left, $right, "{}", $inv.describe())
    };
    ($inv:expr, $left:expr, $right:expr, $($msg:tt)+) => {
        assert_ne!($left, $right, "{}\n{}", format_args!($($msg)+), $inv.describe())
    };
}

pub mod aws;
pub mod files;
pub mod function;
pub mod hostile;
pub mod lambda_api;
pub mod metadata;
pub mod moto;
pub mod proxy;
pub mod runtime_api;
pub mod testbed;
pub mod world;

use std::path::{Path, PathBuf};

use serde_json::Value;

pub use self::aws::Aws;
pub use self::files::Mount;
pub use self::function::{Function, Invocation};
pub use self::moto::Moto;
pub use self::proxy::Proxy;
pub use self::testbed::Testbed;
pub use self::world::{Seed, World};

/// The crate's root directory: the one `cargo test` names when it runs the test, else the one
/// the test was compiled in. (A shared target directory keeps a binary built in another clone
/// when only the clone's path changed, and with it that clone's compile-time path.)
pub fn project_dir() -> &'static Path {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        std::env::var_os("CARGO_MANIFEST_DIR")
            .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
    })
}

/// A sample event from `events/<name>.json` (`scheduled`, `reconcile`, `plan`).
pub fn event(name: &str) -> Value {
    let path = project_dir().join("events").join(format!("{name}.json"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// The function binary built next to the running executable's directory: for
/// `target/debug/examples/demo`, `target/debug/efs-mount-autoscaler`.
pub fn binary_beside_exe() -> PathBuf {
    let exe = std::env::current_exe().expect("current exe");
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("the executable has no grandparent directory");
    dir.join(format!(
        "efs-mount-autoscaler{}",
        std::env::consts::EXE_SUFFIX
    ))
}

/// A response's array of strings at `key` (`actions`, `deleted`, `waiting_for`); absent: empty.
pub fn strings(response: &Value, key: &str) -> Vec<String> {
    response[key]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Whether the response's `actions` include `name`.
pub fn has_action(response: &Value, name: &str) -> bool {
    strings(response, "actions").iter().any(|a| a == name)
}

/// Whether the response warns of this kind (`warning_kinds`, the kinds of its `warnings`).
pub fn has_warning(response: &Value, kind: &str) -> bool {
    strings(response, "warning_kinds").iter().any(|k| k == kind)
}
