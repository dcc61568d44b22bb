use efs_mount_autoscaler::error::{chain, Error};
use efs_mount_autoscaler::event::{deadline, Action};
use efs_mount_autoscaler::{aws::Aws, config::Config, reconcile};
use lambda_runtime::{service_fn, Diagnostic, LambdaEvent};
use serde_json::Value;

/// Carries our error to the Runtime API with its variant as the error type.
#[derive(Debug)]
struct Failure(Error);

impl From<Failure> for Diagnostic {
    fn from(Failure(e): Failure) -> Self {
        Diagnostic {
            error_type: e.kind().to_owned(),
            error_message: chain(&e),
        }
    }
}

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    lambda_runtime::tracing::init_default_subscriber();
    // A bad setting is logged now and answered to every invocation, naming the variable,
    // before any AWS call: the invoker sees it (an init failure shows only an exit status).
    let config =
        Config::from_env().inspect_err(|e| tracing::error!(error = %e, "bad configuration"));
    let timeouts = config.as_ref().map(|c| c.api_timeouts).unwrap_or_default();
    let aws = Aws::from_env(timeouts).await;
    let (config, aws) = (&config, &aws);
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| async move {
        let run = async {
            let config = config.as_ref().map_err(|e| Error::from(e.clone()))?;
            let action = Action::from_event(&event.payload)?;
            let deadline = deadline(&event.payload, event.context.deadline())?;
            reconcile::run(aws, config, action, deadline).await
        };
        run.await.map_err(|e| {
            tracing::error!(error = %chain(&e), kind = e.kind(), "run failed; nothing after the failing step was done");
            Failure(e)
        })
    }))
    .await
}
