//! SSM Parameter Store: the published list of mount targets.

use super::{sdk_error, time};
use crate::error::Error;
use crate::observed::Parameter;
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
        let out = match self.client.get_parameter().name(name).send().await {
            Ok(out) => out,
            Err(err)
                if err
                    .as_service_error()
                    .is_some_and(|e| e.is_parameter_not_found()) =>
            {
                return Ok(None)
            }
            Err(err) => return Err(sdk_error("GetParameter", err)),
        };
        let p = out.parameter();
        let list = MountTargetList::from_json(p.and_then(|p| p.value()).unwrap_or_default())
            .map_err(|source| Error::CorruptParameter {
                name: name.to_owned(),
                source,
            })?;
        Ok(Some(Parameter {
            list,
            last_modified: time(p.and_then(|p| p.last_modified_date())),
        }))
    }

    pub async fn write(&self, name: &str, list: &MountTargetList) -> Result<(), Error> {
        self.client
            .put_parameter()
            .name(name)
            .value(list.to_json())
            .r#type(ParameterType::String)
            .overwrite(true)
            .send()
            .await
            .map_err(|e| sdk_error("PutParameter", e))?;
        Ok(())
    }
}
