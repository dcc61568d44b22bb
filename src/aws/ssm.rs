//! SSM Parameter Store: the published list of mount targets, and the function's own state.

use super::{sdk_error, time};
use crate::error::Error;
use crate::observed::Parameter;
use crate::observed::When;
use crate::state::State;
use aws_sdk_ssm::error::ProvideErrorMetadata;
use aws_sdk_ssm::types::ParameterType;
use efs_router::list::MountTargetList;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

#[derive(Clone, Debug)]
pub struct Ssm {
    client: aws_sdk_ssm::Client,
    /// The newest version of each parameter this process read or wrote. SSM's reads may lag
    /// its writes, versioned reads (`<name>:<version>`) too: a read older than this lagged,
    /// and a write whose version is past the next one wrote over a version the run never read.
    versions: Arc<Mutex<BTreeMap<String, i64>>>,
    /// The value of each parameter at a version this process read (as the newest) or wrote.
    values: Arc<Mutex<BTreeMap<String, (i64, String)>>>,
}

impl Ssm {
    pub fn new(client: aws_sdk_ssm::Client) -> Self {
        Ssm {
            client,
            versions: Arc::default(),
            values: Arc::default(),
        }
    }

    /// What this process read or wrote, at `version` (none known: 0, not held).
    fn hold(&self, name: &str, version: i64, value: &str) {
        if version <= 0 {
            return;
        }
        let mut values = self.values.lock().unwrap();
        values.insert(name.to_owned(), (version, value.to_owned()));
    }

    /// The value at the newest version this process knows, when it read or wrote that
    /// version itself.
    fn own_newest(&self, name: &str) -> Option<String> {
        let values = self.values.lock().unwrap();
        let (version, value) = values.get(name)?;
        (Some(*version) == self.known(name)).then(|| value.clone())
    }

    fn known(&self, name: &str) -> Option<i64> {
        self.versions.lock().unwrap().get(name).copied()
    }

    fn saw(&self, name: &str, version: i64) {
        let mut versions = self.versions.lock().unwrap();
        let known = versions.entry(name.to_owned()).or_insert(version);
        *known = (*known).max(version);
    }

    /// The published list; `None` when the parameter does not exist. A value that is not a
    /// list of the contract's shape is an error naming the parameter.
    pub async fn read(&self, name: &str) -> Result<Option<Parameter>, Error> {
        let Some((text, last_modified, version)) = self.get(name).await? else {
            return Ok(None);
        };
        let list = MountTargetList::from_json(&text).map_err(|source| Error::CorruptParameter {
            name: name.to_owned(),
            source,
        })?;
        Ok(Some(Parameter {
            list,
            version,
            last_modified,
            sha256: efs_router::report::list_sha256(&text),
        }))
    }

    /// The published list as new as `version` at least (the one the state records as
    /// published last): read again while SSM's read lags; [`Error::StaleParameter`] when it
    /// still does.
    pub async fn read_since(&self, name: &str, version: i64) -> Result<Option<Parameter>, Error> {
        self.saw(name, version);
        self.read(name).await
    }

    /// Publishes `list`; over a version the run never read, puts that version back
    /// ([`Ssm::write_checked`]). The version it made.
    pub async fn write(&self, name: &str, list: &MountTargetList) -> Result<i64, Error> {
        self.write_checked(name, list.to_json(), LIST_FIX, Ok).await
    }

    /// The function's state; `None` when the parameter does not exist yet. A value that is
    /// not a state is an error naming the parameter: only the function writes it.
    pub async fn read_state(&self, name: &str) -> Result<Option<State>, Error> {
        let Some((text, ..)) = self.get(name).await? else {
            return Ok(None);
        };
        state_of(name, &text).map(Some)
    }

    /// A parameter's value and last modification, as SSM holds it now; `None` when it does
    /// not exist. SSM's reads may lag its writes (an older version, for a moment after a
    /// write): a run that planned from the previous version could undo the last run's work
    /// (a list without the shards it added, a state without a target it created). So each read
    /// asks whether the next version exists, and reads again while it does;
    /// [`Error::StaleParameter`] when it still lags after [`FRESH_READS`] reads.
    ///
    /// A read that lags the write that created the parameter answers `ParameterNotFound`:
    /// a run that took that for "none yet" would start from an empty state, forget the targets
    /// it created, and save that over the state. That write made version 1, so a parameter
    /// not found is asked for as version 1 too, and read again while that exists (version 0
    /// in the error: read as not found).
    ///
    /// A versioned read may lag as well, and then says nothing newer exists: a read older than
    /// a version this process already read or wrote is stale whatever it says, and a write
    /// checks what it wrote over ([`Ssm::write_checked`]).
    async fn get(&self, name: &str) -> Result<Option<(String, Option<When>, i64)>, Error> {
        for attempt in 1..=FRESH_READS {
            let read = self.get_once(name).await?;
            let version = read.as_ref().map_or(0, |(_, _, v)| *v);
            let newer = match self.known(name).filter(|known| *known > version) {
                Some(known) => known,
                None if !self.has_version(name, version + 1).await? => {
                    self.saw(name, version);
                    if let Some((text, ..)) = &read {
                        self.hold(name, version, text);
                    }
                    return Ok(read);
                }
                None => version + 1,
            };
            tracing::warn!(parameter = %name, read = version, newer, attempt, "SSM answered an older version: reading it again");
            if attempt == FRESH_READS {
                return Err(Error::StaleParameter {
                    name: name.to_owned(),
                    read: version,
                    newer,
                });
            }
            tokio::time::sleep(std::time::Duration::from_millis(200 * attempt as u64)).await;
        }
        unreachable!("the last attempt returns")
    }

    async fn get_once(&self, name: &str) -> Result<Option<(String, Option<When>, i64)>, Error> {
        Ok(self.get_parameter(name).await?.map(|p| {
            (
                p.value().unwrap_or_default().to_owned(),
                time(p.last_modified_date()),
                p.version(),
            )
        }))
    }

    /// Whether version `version` of the parameter exists (`<name>:<version>`, GetParameter's
    /// version selector).
    async fn has_version(&self, name: &str, version: i64) -> Result<bool, Error> {
        let selector = format!("{name}:{version}");
        Ok(self.get_parameter(&selector).await?.is_some())
    }

    /// One GetParameter of `name` (a version selector included); `None` when SSM has no such
    /// parameter or version.
    async fn get_parameter(
        &self,
        name: &str,
    ) -> Result<Option<aws_sdk_ssm::types::Parameter>, Error> {
        match self.client.get_parameter().name(name).send().await {
            Ok(out) => {
                Ok(Some(out.parameter.unwrap_or_else(|| {
                    aws_sdk_ssm::types::Parameter::builder().build()
                })))
            }
            Err(err)
                if err.as_service_error().is_some_and(|e| {
                    e.is_parameter_not_found() || e.is_parameter_version_not_found()
                }) =>
            {
                Ok(None)
            }
            Err(err) => Err(sdk_error("GetParameter", err)),
        }
    }

    /// Writes `state` as it fits the parameter ([`State::within`]), saying what had to go;
    /// over a version the run never read, puts that version back ([`Ssm::write_checked`]).
    pub async fn write_state(&self, name: &str, state: &State) -> Result<(), Error> {
        self.write_checked(name, fitted(name, state), STATE_FIX, Ok)
            .await
            .map(drop)
    }

    /// Reads the state, changes it and writes it back (one run at a time). Written over a
    /// version the run never read, the change goes on that version, put back, and the run
    /// stops ([`Error::StaleWrite`]): what the change records (a target the run created) is
    /// kept either way.
    ///
    /// It starts from the newest version the run knows when the run read or wrote that version
    /// itself: a read would answer it or a newer one, and a read that lagged the run's own
    /// write (between a publish and its record, say) would stop the run for nothing. A version
    /// written since by another is caught by the write's check, as after any read.
    pub async fn update_state(&self, name: &str, change: impl Fn(&mut State)) -> Result<(), Error> {
        let mut state = match self.own_newest(name) {
            Some(text) => state_of(name, &text)?,
            None => self.read_state(name).await?.unwrap_or_default(),
        };
        change(&mut state);
        let redo = |missed: String| {
            let mut state = state_of(name, &missed)?;
            change(&mut state);
            Ok(fitted(name, &state))
        };
        self.write_checked(name, fitted(name, &state), STATE_FIX, redo)
            .await
            .map(drop)
    }

    /// Writes `value`, then checks what it wrote over. SSM has no conditional write, and its
    /// reads (versioned ones too) may lag a write: a run that read version N and made a
    /// version past N + 1 wrote over versions it never read, and one that planned from
    /// version N would undo their work (forget a target a run created). Each version between
    /// is read (again while it lags: it exists), and one that is not this run's own value (a
    /// retried put's) is put back as `redo` makes it, the newest such; the run then stops
    /// with [`Error::StaleWrite`]. Not checked when this process never read the parameter.
    /// The version it made.
    async fn write_checked(
        &self,
        name: &str,
        value: String,
        fix: &'static str,
        redo: impl Fn(String) -> Result<String, Error>,
    ) -> Result<i64, Error> {
        let read = self.known(name);
        let wrote = self.put(name, value.clone(), fix).await?;
        self.saw(name, wrote);
        self.hold(name, wrote, &value);
        let Some(read) = read else {
            return Ok(wrote);
        };
        for missed in (read + 1..wrote).rev() {
            let text = self.version_value(name, missed, read).await?;
            if text == value {
                continue;
            }
            tracing::warn!(parameter = %name, read, missed, wrote, "written over a version the run never read: putting it back");
            let restored_value = redo(text)?;
            let restored = self.put(name, restored_value.clone(), fix).await?;
            self.saw(name, restored);
            self.hold(name, restored, &restored_value);
            return Err(Error::StaleWrite {
                name: name.to_owned(),
                read,
                missed,
            });
        }
        Ok(wrote)
    }

    /// The value of version `version`, which exists (a later one was written), read again
    /// while SSM's read lags; [`Error::StaleParameter`] when it still does.
    async fn version_value(&self, name: &str, version: i64, read: i64) -> Result<String, Error> {
        let selector = format!("{name}:{version}");
        for attempt in 1..=FRESH_READS {
            if let Some(p) = self.get_parameter(&selector).await? {
                return Ok(p.value().unwrap_or_default().to_owned());
            }
            tokio::time::sleep(std::time::Duration::from_millis(200 * attempt as u64)).await;
        }
        Err(Error::StaleParameter {
            name: name.to_owned(),
            read,
            newer: version,
        })
    }

    /// Refused before asking when it cannot fit (SSM would refuse it with a
    /// `ValidationException`), and mapped alike when SSM refuses it anyway. The version it
    /// made (0 when SSM's answer names none).
    async fn put(&self, name: &str, value: String, fix: &'static str) -> Result<i64, Error> {
        fits(name, &value, fix)?;
        let chars = value.chars().count();
        let out = self
            .client
            .put_parameter()
            .name(name)
            .value(value)
            .r#type(ParameterType::String)
            .overwrite(true)
            .send()
            .await
            .map_err(|err| {
                let too_large = err.as_service_error().is_some_and(|e| {
                    e.code() == Some("ValidationException")
                        && e.message()
                            .is_some_and(|m| m.contains("maximum parameter value"))
                });
                match too_large {
                    true => too_large_error(name, chars, fix),
                    false => sdk_error("PutParameter", err),
                }
            })?;
        Ok(out.version())
    }
}

/// `state` as it fits the parameter ([`State::within`]), saying what had to go.
fn fitted(name: &str, state: &State) -> String {
    let (state, cuts) = state.within(STANDARD_VALUE_LIMIT);
    if !cuts.is_empty() {
        let cuts: Vec<_> = cuts.iter().map(|c| c.name()).collect();
        tracing::warn!(parameter = %name, ?cuts, "state shortened to fit its parameter");
    }
    state.to_json()
}

/// Reads of a parameter before a run gives up on SSM's lag ([`Ssm::get`]).
const FRESH_READS: u32 = 4;

/// The most characters a Standard-tier parameter's value may hold (the function writes its
/// parameters without a tier, so on the account's default, Standard unless changed).
pub const STANDARD_VALUE_LIMIT: usize = 4096;

const LIST_FIX: &str = "the list names each mount target once, so this means entries of targets \
                        that are gone: remove them from the parameter by hand";
const STATE_FIX: &str = "see what fills it (aws ssm get-parameter): entries of `excluded` and \
                         `missing` may be removed by hand, those of `created` must stay";

/// `Ok` when `value` fits in a Standard-tier parameter, else the error naming `name`.
pub fn fits(name: &str, value: &str, fix: &'static str) -> Result<(), Error> {
    let chars = value.chars().count();
    match chars > STANDARD_VALUE_LIMIT {
        true => Err(too_large_error(name, chars, fix)),
        false => Ok(()),
    }
}

/// Whether the list and the state a run would write fit, checked before its first step.
pub fn list_fits(name: &str, list: &MountTargetList) -> Result<(), Error> {
    fits(name, &list.to_json(), LIST_FIX)
}

/// Whether `state` fits once shortened as [`Ssm::write_state`] does.
pub fn state_fits(name: &str, state: &State) -> Result<(), Error> {
    fits(
        name,
        &state.within(STANDARD_VALUE_LIMIT).0.to_json(),
        STATE_FIX,
    )
}

fn too_large_error(name: &str, chars: usize, fix: &'static str) -> Error {
    Error::ParameterTooLarge {
        name: name.to_owned(),
        chars,
        limit: STANDARD_VALUE_LIMIT,
        fix,
    }
}

/// The state a parameter's value holds; an error naming the parameter when it holds none.
fn state_of(name: &str, text: &str) -> Result<State, Error> {
    State::from_json(text).map_err(|e| Error::StateParameter {
        name: name.to_owned(),
        problem: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::Published;
    use aws_sdk_ssm::operation::get_parameter::{GetParameterError, GetParameterOutput};
    use aws_sdk_ssm::operation::put_parameter::PutParameterOutput;
    use aws_sdk_ssm::types::error::ParameterNotFound;
    use aws_sdk_ssm::types::error::ParameterVersionNotFound;
    use aws_sdk_ssm::Client;
    use aws_smithy_mocks::{mock, mock_client, RuleMode};
    use efs_router::list::Strategy;

    fn holding(value: &'static str) -> aws_smithy_mocks::Rule {
        mock!(Client::get_parameter)
            .match_requests(|r| !r.name().unwrap_or_default().contains(':'))
            .then_output(move || {
                GetParameterOutput::builder()
                    .parameter(
                        aws_sdk_ssm::types::Parameter::builder()
                            .name("/p")
                            .value(value)
                            .version(1)
                            .last_modified_date(aws_smithy_types::DateTime::from_secs(
                                1_700_000_000,
                            ))
                            .build(),
                    )
                    .build()
            })
    }

    /// The answer to `<name>:<version>`: that version exists, or not.
    fn next_version(exists: bool) -> aws_smithy_mocks::Rule {
        let rule = mock!(Client::get_parameter)
            .match_requests(|r| r.name().unwrap_or_default().contains(':'));
        match exists {
            true => rule.then_output(|| GetParameterOutput::builder().build()),
            false => rule.then_error(|| {
                GetParameterError::ParameterVersionNotFound(
                    ParameterVersionNotFound::builder().build(),
                )
            }),
        }
    }

    #[tokio::test]
    async fn a_value_over_the_standard_limit_is_never_sent_and_names_the_parameter() {
        let put = mock!(Client::put_parameter).then_output(|| {
            aws_sdk_ssm::operation::put_parameter::PutParameterOutput::builder().build()
        });
        let ssm = Ssm::new(mock_client!(aws_sdk_ssm, [&put]));
        let fits = "x".repeat(STANDARD_VALUE_LIMIT);
        ssm.put("/p", fits, LIST_FIX).await.unwrap();
        let err = ssm
            .put("/p", "x".repeat(STANDARD_VALUE_LIMIT + 1), LIST_FIX)
            .await
            .unwrap_err();
        assert!(
            matches!(&err, Error::ParameterTooLarge { name, chars: 4097, .. } if name == "/p"),
            "{err:?}"
        );
        assert_eq!(put.num_calls(), 1);
    }

    #[tokio::test]
    async fn ssm_refusing_a_value_as_too_large_is_the_same_error() {
        let put = mock!(Client::put_parameter).then_error(|| {
            aws_sdk_ssm::operation::put_parameter::PutParameterError::generic(
                aws_sdk_ssm::error::ErrorMetadata::builder()
                    .code("ValidationException")
                    .message("Standard tier parameters support a maximum parameter value of 4096 characters.")
                    .build(),
            )
        });
        let ssm = Ssm::new(mock_client!(aws_sdk_ssm, [&put]));
        let err = ssm.put("/p", "{}".into(), STATE_FIX).await.unwrap_err();
        assert!(matches!(err, Error::ParameterTooLarge { .. }), "{err:?}");
    }

    fn not_found() -> aws_smithy_mocks::Rule {
        mock!(Client::get_parameter)
            .match_requests(|r| !r.name().unwrap_or_default().contains(':'))
            .then_error(|| {
                GetParameterError::ParameterNotFound(ParameterNotFound::builder().build())
            })
    }

    #[tokio::test]
    async fn a_missing_parameter_is_none() {
        let (rule, first) = (not_found(), next_version(false));
        let ssm = Ssm::new(mock_client!(
            aws_sdk_ssm,
            RuleMode::MatchAny,
            [&rule, &first]
        ));
        assert_eq!(ssm.read("/p").await.unwrap(), None);
        assert_eq!(ssm.read_state("/p").await.unwrap(), None);
        assert_eq!(first.num_calls(), 2);
    }

    /// Not found, while its first version exists: the read lagged the write that created it.
    /// Taken for "none yet", it would start the state afresh and save that over it.
    #[tokio::test]
    async fn not_found_while_its_first_version_exists_is_read_again_then_refused() {
        let (rule, first) = (not_found(), next_version(true));
        let ssm = Ssm::new(mock_client!(
            aws_sdk_ssm,
            RuleMode::MatchAny,
            [&rule, &first]
        ));
        let err = ssm.read_state("/state").await.unwrap_err();
        assert!(
            matches!(&err, Error::StaleParameter { name, read: 0, newer: 1 } if name == "/state"),
            "{err:?}"
        );
        assert_eq!(rule.num_calls(), FRESH_READS as usize);
    }

    #[tokio::test]
    async fn a_value_of_another_shape_is_corrupt_and_named() {
        let rule = holding(r#"{"targets": []}"#);
        let fresh = next_version(false);
        let ssm = Ssm::new(mock_client!(
            aws_sdk_ssm,
            RuleMode::MatchAny,
            [&rule, &fresh]
        ));
        let err = ssm.read("/p").await.unwrap_err();
        assert!(
            matches!(&err, Error::CorruptParameter { name, .. } if name == "/p"),
            "{err:?}"
        );
    }

    #[tokio::test]
    async fn the_original_form_reads_with_its_time() {
        let rule = holding(r#"{"mount_targets":[{"id":"fsmt-1","ip":"10.0.1.4"}]}"#);
        let fresh = next_version(false);
        let ssm = Ssm::new(mock_client!(
            aws_sdk_ssm,
            RuleMode::MatchAny,
            [&rule, &fresh]
        ));
        let p = ssm.read("/p").await.unwrap().unwrap();
        assert_eq!(p.list.strategy, Strategy::ModuloSha256);
        assert_eq!(p.last_modified, Some(When::from_secs(1_700_000_000)));
        assert_eq!(fresh.num_calls(), 1);
    }

    /// The state at version 1 and, later, at version 2; SSM's read of version 2 lags at first.
    fn lagging_state(version_2: &'static str) -> [aws_smithy_mocks::Rule; 3] {
        let read = mock!(Client::get_parameter)
            .match_requests(|r| r.name() == Some("/state"))
            .then_output(|| {
                let p = aws_sdk_ssm::types::Parameter::builder()
                    .value(r#"{"below_since":1}"#)
                    .version(1);
                GetParameterOutput::builder().parameter(p.build()).build()
            });
        let second = mock!(Client::get_parameter)
            .match_requests(|r| r.name() == Some("/state:2"))
            .sequence()
            .error(|| {
                GetParameterError::ParameterVersionNotFound(
                    ParameterVersionNotFound::builder().build(),
                )
            })
            .output(move || {
                let p = aws_sdk_ssm::types::Parameter::builder()
                    .value(version_2)
                    .version(2);
                GetParameterOutput::builder().parameter(p.build()).build()
            })
            .repeatedly()
            .build();
        let put = mock!(Client::put_parameter)
            .sequence()
            .output(|| PutParameterOutput::builder().version(3).build())
            .output(|| PutParameterOutput::builder().version(4).build())
            .build();
        [read, second, put]
    }

    /// The read of version 1 lagged (version 2 said not found), so the save made version 3 over
    /// version 2, which the run never read: version 2 goes back, the change it was recording on
    /// it, and the run stops with `StaleWrite`.
    #[tokio::test]
    async fn a_write_over_a_version_never_read_puts_it_back_and_stops() {
        let [read, second, put] = lagging_state(r#"{"created":{"fsmt-b":{"az_id":"z2","at":2}}}"#);
        let ssm = Ssm::new(mock_client!(
            aws_sdk_ssm,
            RuleMode::MatchAny,
            [&read, &second, &put]
        ));
        let err = ssm
            .update_state("/state", |s| s.record_created("fsmt-c", "z3", 3))
            .await
            .unwrap_err();
        assert!(
            matches!(&err, Error::StaleWrite { name, read: 1, missed: 2 } if name == "/state"),
            "{err:?}"
        );
        assert_eq!(put.num_calls(), 2, "the save, and version 2 put back");
        assert_eq!(ssm.known("/state"), Some(4));
    }

    /// A change on the state this run just wrote starts from what it wrote: SSM's reads, which
    /// answer an older version here, are not asked, so a read that lags the run's own write
    /// (between a publish and its record) cannot stop it.
    #[tokio::test]
    async fn a_change_on_the_runs_own_write_reads_nothing() {
        let stale =
            mock!(Client::get_parameter).then_output(|| GetParameterOutput::builder().build());
        let put = mock!(Client::put_parameter)
            .sequence()
            .output(|| PutParameterOutput::builder().version(7).build())
            .output(|| PutParameterOutput::builder().version(8).build())
            .build();
        let ssm = Ssm::new(mock_client!(
            aws_sdk_ssm,
            RuleMode::MatchAny,
            [&stale, &put]
        ));
        let saved = State {
            below_since: Some(5),
            ..State::default()
        };
        ssm.write_state("/state", &saved).await.unwrap();
        let record = Published { version: 3, at: 9 };
        ssm.update_state("/state", |s| s.published = Some(record))
            .await
            .unwrap();
        assert_eq!(stale.num_calls(), 0);
        let (version, text) = ssm.values.lock().unwrap()["/state"].clone();
        let wrote = State::from_json(&text).unwrap();
        assert_eq!(
            (version, wrote.below_since, wrote.published),
            (8, Some(5), Some(record))
        );
    }

    /// A retried put (its first answer lost) makes two versions of the run's own value: nothing
    /// was written over.
    #[tokio::test]
    async fn a_version_between_that_is_the_runs_own_value_is_no_stale_write() {
        let own = r#"{"below_since":7}"#;
        let [read, second, put] = lagging_state(own);
        let ssm = Ssm::new(mock_client!(
            aws_sdk_ssm,
            RuleMode::MatchAny,
            [&read, &second, &put]
        ));
        assert_eq!(
            ssm.read_state("/state").await.unwrap().unwrap().below_since,
            Some(1)
        );
        let state = State {
            below_since: Some(7),
            ..State::default()
        };
        // Version 3 was made of it; version 2, read again, is its value too.
        ssm.write_state("/state", &state).await.unwrap();
        assert_eq!(put.num_calls(), 1);
    }

    #[tokio::test]
    async fn a_read_while_a_newer_version_exists_is_read_again_then_refused() {
        let rule = holding(r#"{"mount_targets":[{"id":"fsmt-1","ip":"10.0.1.4"}]}"#);
        let newer = next_version(true);
        let ssm = Ssm::new(mock_client!(
            aws_sdk_ssm,
            RuleMode::MatchAny,
            [&rule, &newer]
        ));
        let err = ssm.read("/p").await.unwrap_err();
        assert!(
            matches!(&err, Error::StaleParameter { name, read: 1, newer: 2 } if name == "/p"),
            "{err:?}"
        );
        assert_eq!(rule.num_calls(), FRESH_READS as usize);
    }

    /// The state records version 3 as published; the read answers version 1 and says nothing
    /// newer exists (SSM's versioned read lags too): it is read again, then refused.
    #[tokio::test]
    async fn a_read_older_than_the_recorded_publish_is_read_again_then_refused() {
        let rule = holding(r#"{"mount_targets":[{"id":"fsmt-1","ip":"10.0.1.4"}]}"#);
        let newer = next_version(false);
        let ssm = Ssm::new(mock_client!(
            aws_sdk_ssm,
            RuleMode::MatchAny,
            [&rule, &newer]
        ));
        assert_eq!(ssm.read("/p").await.unwrap().map(|p| p.version), Some(1));
        let err = ssm.read_since("/p", 3).await.unwrap_err();
        assert!(
            matches!(&err, Error::StaleParameter { name, read: 1, newer: 3 } if name == "/p"),
            "{err:?}"
        );
        assert_eq!(rule.num_calls(), 1 + FRESH_READS as usize);
    }
}
