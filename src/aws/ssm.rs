//! SSM Parameter Store: the published list of mount targets, and the function's own state.

use super::{sdk_error, time};
use crate::error::Error;
use crate::observed::Parameter;
use crate::observed::When;
use crate::state::State;
use aws_sdk_ssm::types::ParameterType;
use efs_router::list::MountTargetList;

#[derive(Clone, Debug)]
pub struct Ssm {
    client: aws_sdk_ssm::Client,
}

impl Ssm {
    pub fn new(client: aws_sdk_ssm::Client) -> Self {
        Ssm { client }
    }

    /// The published list; `None` when the parameter does not exist. A value that is not a
    /// list of the contract's shape is an error naming the parameter.
    pub async fn read(&self, name: &str) -> Result<Option<Parameter>, Error> {
        let Some((text, last_modified)) = self.get(name).await? else {
            return Ok(None);
        };
        let list = MountTargetList::from_json(&text).map_err(|source| Error::CorruptParameter {
            name: name.to_owned(),
            source,
        })?;
        Ok(Some(Parameter {
            list,
            last_modified,
        }))
    }

    pub async fn write(&self, name: &str, list: &MountTargetList) -> Result<(), Error> {
        self.put(name, list.to_json()).await
    }

    /// The function's state; `None` when the parameter does not exist yet. A value that is
    /// not a state is an error naming the parameter: only the function writes it.
    pub async fn read_state(&self, name: &str) -> Result<Option<State>, Error> {
        let Some((text, _)) = self.get(name).await? else {
            return Ok(None);
        };
        State::from_json(&text)
            .map(Some)
            .map_err(|e| Error::StateParameter {
                name: name.to_owned(),
                problem: e.to_string(),
            })
    }

    /// A parameter's value and last modification; `None` when it does not exist.
    async fn get(&self, name: &str) -> Result<Option<(String, Option<When>)>, Error> {
        match self.client.get_parameter().name(name).send().await {
            Ok(out) => {
                let p = out.parameter();
                Ok(Some((
                    p.and_then(|p| p.value()).unwrap_or_default().to_owned(),
                    time(p.and_then(|p| p.last_modified_date())),
                )))
            }
            Err(err)
                if err
                    .as_service_error()
                    .is_some_and(|e| e.is_parameter_not_found()) =>
            {
                Ok(None)
            }
            Err(err) => Err(sdk_error("GetParameter", err)),
        }
    }

    pub async fn write_state(&self, name: &str, state: &State) -> Result<(), Error> {
        self.put(name, state.to_json()).await
    }

    async fn put(&self, name: &str, value: String) -> Result<(), Error> {
        self.client
            .put_parameter()
            .name(name)
            .value(value)
            .r#type(ParameterType::String)
            .overwrite(true)
            .send()
            .await
            .map_err(|e| sdk_error("PutParameter", e))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_ssm::operation::get_parameter::{GetParameterError, GetParameterOutput};
    use aws_sdk_ssm::types::error::ParameterNotFound;
    use aws_sdk_ssm::Client;
    use aws_smithy_mocks::{mock, mock_client};
    use efs_router::list::Strategy;

    fn holding(value: &'static str) -> aws_smithy_mocks::Rule {
        mock!(Client::get_parameter).then_output(move || {
            GetParameterOutput::builder()
                .parameter(
                    aws_sdk_ssm::types::Parameter::builder()
                        .name("/p")
                        .value(value)
                        .last_modified_date(aws_smithy_types::DateTime::from_secs(1_700_000_000))
                        .build(),
                )
                .build()
        })
    }

    #[tokio::test]
    async fn a_missing_parameter_is_none() {
        let rule = mock!(Client::get_parameter).then_error(|| {
            GetParameterError::ParameterNotFound(ParameterNotFound::builder().build())
        });
        let ssm = Ssm::new(mock_client!(aws_sdk_ssm, [&rule]));
        assert_eq!(ssm.read("/p").await.unwrap(), None);
    }

    #[tokio::test]
    async fn a_value_of_another_shape_is_corrupt_and_named() {
        let rule = holding(r#"{"targets": []}"#);
        let ssm = Ssm::new(mock_client!(aws_sdk_ssm, [&rule]));
        let err = ssm.read("/p").await.unwrap_err();
        assert!(
            matches!(&err, Error::CorruptParameter { name, .. } if name == "/p"),
            "{err:?}"
        );
    }

    #[tokio::test]
    async fn the_original_form_reads_with_its_time() {
        let rule = holding(r#"{"mount_targets":[{"id":"fsmt-1","ip":"10.0.1.4"}]}"#);
        let ssm = Ssm::new(mock_client!(aws_sdk_ssm, [&rule]));
        let p = ssm.read("/p").await.unwrap().unwrap();
        assert_eq!(p.list.strategy, Strategy::ModuloSha256);
        assert_eq!(p.last_modified, Some(When::from_secs(1_700_000_000)));
    }
}
