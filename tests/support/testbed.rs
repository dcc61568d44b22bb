//! Everything one scenario needs, wired together: moto, the world, a mount full of files,
//! the proxy in front of moto, and the function pointed at the proxy with the world's
//! contract variables.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use super::aws::Aws;
use super::files::Mount;
use super::function::{Function, Invocation};
use super::moto::Moto;
use super::proxy::Proxy;
use super::world::{World, WorldBuilder};

/// The client id of the simulated fleet's report ([`Testbed::fleet_reports`]).
pub const FLEET_CLIENT: &str = "f1ee7000f1ee7000";

/// The first half of the client ids of the services' tasks' reports (`fleet_reports`).
const TASK_CLIENT_PREFIX: &str = "f1ee7a5c";

/// A deadline long enough for any run against moto.
pub const LONG: Duration = Duration::from_secs(60);

pub struct Testbed {
    pub world: World,
    pub mount: Mount,
    pub proxy: Proxy,
    pub function: Function,
    pub aws: Aws,
    pub moto: Moto,
}

impl Testbed {
    /// An SSM client whose calls go through the proxy, as the function's do: its writes open
    /// the proxy's windows of lagging reads.
    pub fn ssm_through_the_proxy(&self) -> aws_sdk_ssm::Client {
        aws_sdk_ssm::Client::from_conf(
            self.aws
                .ssm
                .config()
                .to_builder()
                .endpoint_url(self.proxy.endpoint())
                .build(),
        )
    }

    /// Puts `value` in SSM parameter `name` through the proxy, as another writer would: the
    /// proxy's SSM lag, when a test set one, applies to its reads.
    pub async fn put_through_the_proxy(&self, name: &str, value: &str) {
        self.ssm_through_the_proxy()
            .put_parameter()
            .name(name)
            .value(value)
            .r#type(aws_sdk_ssm::types::ParameterType::String)
            .overwrite(true)
            .send()
            .await
            .unwrap_or_else(|e| panic!("PutParameter {name}: {e:?}"));
    }

    /// Starts moto, builds `world`, and sets up the function (`binary`) against it through a
    /// proxy, with `EFS_MOUNT_PATH` an empty temporary mount.
    pub async fn new(binary: impl Into<PathBuf>, world: WorldBuilder) -> Testbed {
        Testbed::with_mount(binary, world, Mount::temp()).await
    }

    /// [`Testbed::new`] with `EFS_MOUNT_PATH` the given mount (an NFS mount's directory on the
    /// NFS tier).
    pub async fn with_mount(
        binary: impl Into<PathBuf>,
        world: WorldBuilder,
        mount: Mount,
    ) -> Testbed {
        let moto = Moto::start();
        let aws = Aws::at(&moto.endpoint()).await;
        let world = world.build(&aws).await;
        let proxy = Proxy::start(&moto.endpoint()).await;
        let function =
            Function::new(binary, &proxy.endpoint()).envs(world.function_env(mount.path()));
        let tb = Testbed {
            world,
            mount,
            proxy,
            function,
            aws,
            moto,
        };
        // The services' tasks run before the function's first run, as on ECS: else whether
        // its first ListTasks finds them would hang on the host's timing (issue 29).
        tb.describe_services().await;
        tb.proxy.reset_counts();
        tb
    }

    /// Sets one of the function's variables.
    pub fn env(&mut self, key: &str, value: impl Into<String>) -> &mut Self {
        self.function = self.function.clone().env(key, value);
        self
    }

    /// `CLIENT_REPORTS=ecs-may-hide-files`: the proxy plays the services' tasks, and they run
    /// no router that reports, so under the default (`require`) nothing would move. The tests
    /// of the move machinery take the opt-in; the default is tested in `tests/day_one.rs`, in
    /// the plan's tests, and by the tests that write a report for each task.
    pub fn trust_ecs_alone(&mut self) -> &mut Self {
        self.env("CLIENT_REPORTS", "ecs-may-hide-files")
    }

    /// Removes one of the function's variables.
    pub fn unset(&mut self, key: &str) -> &mut Self {
        self.function = self.function.clone().without(key);
        self
    }

    /// One cold invocation with a long deadline.
    pub async fn invoke(&self, event: &Value) -> Invocation {
        self.function.invoke(event, LONG).await
    }

    /// One cold invocation with this deadline.
    pub async fn invoke_with_deadline(&self, event: &Value, timeout: Duration) -> Invocation {
        self.function.invoke(event, timeout).await
    }

    /// One cold invocation told the deadline `now + told` (e.g. inside the margin the function
    /// keeps, so that it has no time to wait), but waited for up to [`LONG`]: what it does with
    /// little time, not how fast this host starts it.
    pub async fn invoke_told(&self, event: &Value, told: Duration) -> Invocation {
        self.function.invoke_told(event, told, LONG).await
    }

    /// The simulated fleet reports: one client that routes by the list published now and
    /// reads the list versions `reads` (what lets the list grow to version 2, or holds it),
    /// and a router in each running task of the services, naming its task (the default
    /// `CLIENT_REPORTS=require` wants one); the reports of tasks no longer running go.
    pub async fn fleet_reports(&self, reads: &[u32]) {
        let text = self.world.published().await.value;
        self.mount.report(FLEET_CLIENT, &text, reads);
        let mut written = Vec::new();
        for (i, arn) in self.service_tasks().iter().enumerate() {
            let id = format!("{TASK_CLIENT_PREFIX}{:08x}", i + 1);
            written.push(self.mount.report_of_task(&id, &text, reads, arn));
        }
        let Ok(dir) = std::fs::read_dir(self.mount.reports_dir()) else {
            return;
        };
        for e in dir.flatten() {
            let ours = e
                .file_name()
                .to_string_lossy()
                .starts_with(TASK_CLIENT_PREFIX);
            if ours && !written.contains(&e.path()) {
                std::fs::remove_file(e.path()).expect("remove a stopped task's report");
            }
        }
    }

    /// The fleet runs the list published now: ECS's rollouts complete and every task's router
    /// reports that list (reading the list versions `reads`).
    pub async fn converge(&self, reads: &[u32]) {
        self.proxy.complete_rollouts();
        self.fleet_reports(reads).await;
    }

    /// The running tasks of the services, as the proxy plays them (ARNs).
    pub fn service_tasks(&self) -> Vec<String> {
        let services = self.world.services.iter();
        services
            .flat_map(|s| self.proxy.running_task_arns(&format!("service:{s}")))
            .collect()
    }

    /// The services' tasks as ECS runs them before the function's first run: the proxy plays
    /// them from the first DescribeServices answer it passes, so one is sent now, and each
    /// service's running tasks are returned by group (`service:<name>`).
    pub async fn start_tasks(&self) -> Vec<String> {
        self.describe_services().await;
        let arns = self.service_tasks();
        let services = &self.world.services;
        assert!(
            !arns.is_empty(),
            "the proxy started no task for {services:?}"
        );
        arns
    }

    /// One DescribeServices through the proxy, which starts the services' tasks (once).
    async fn describe_services(&self) {
        if self.world.services.is_empty() {
            return;
        }
        let ecs = Aws::at(&self.proxy.endpoint()).await.ecs;
        // At most 10 a call, as ECS takes them.
        for ten in self.world.services.chunks(10) {
            ecs.describe_services()
                .cluster(&self.world.cluster)
                .set_services(Some(ten.to_vec()))
                .send()
                .await
                .expect("DescribeServices through the proxy");
        }
    }

    /// No create, delete, put or update of any kind went through the proxy.
    pub fn assert_nothing_changed(&self, inv: &Invocation) {
        let mutating = self.proxy.mutating_calls();
        assert!(
            mutating.is_empty(),
            "expected no mutating call, got {mutating:?} (all calls: {:?})\n{}",
            self.proxy.counts(),
            inv.describe()
        );
    }
}
