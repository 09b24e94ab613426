//! Shutdown, secrets and option validation.

use std::sync::Arc;

use tributary_sdk::{
    ConnectorContext, Error, ErrorCode, OptionKind, ReadLimit, Result, Secret, SecretRef,
    SecretStore, SourceFactory,
};

use crate::cases::{drain, ensure, CaseEnv, CaseResult, Failure, Outcome};
use crate::fixture::{Fixture, ReadSetup};

/// `stop` succeeds, and a new instance over the same state (checkpoint directory, consumer group)
/// works afterwards: nothing the first one held is left locked.
pub async fn shutdown_releases_resources(
    connector: &dyn SourceFactory,
    fixture: &mut dyn Fixture,
) -> CaseResult {
    let env = CaseEnv::new()?;
    let target = fixture.create_target("shutdown").await?;
    fixture.produce(&target, 4).await?;
    let options = fixture.source_options(&ReadSetup::target(&target))?;
    let mut source = connector.create(&options, &env.context)?;
    let start = source.initial_offset().await?;
    crate::cases::wait_for_data(
        source.as_mut(),
        &start,
        &ReadLimit::All,
        std::time::Duration::from_secs(20),
    )
    .await?;
    let (_, end) = drain(source.as_mut(), start, &ReadLimit::All, 100).await?;
    source.stop().await?;
    drop(source);
    let mut again = connector.create(&options, &env.context)?;
    let next = again.latest_offset(&end, &ReadLimit::All).await?;
    ensure!(
        next == end,
        "a new instance after stop planned {end}..{next} with nothing new produced"
    );
    again.stop().await?;
    Ok(Outcome::Passed)
}

const MARKER: &str = "c0nf0rmance-s3cret-V4lue";

#[derive(Debug)]
struct MarkerStore;

impl SecretStore for MarkerStore {
    fn resolve(&self, reference: &SecretRef) -> Result<Secret> {
        if reference.scope == "conformance" {
            Ok(Secret::new(MARKER))
        } else {
            Err(Error::new(
                ErrorCode::SecretNotFound,
                format!("no secret {reference}"),
            ))
        }
    }
}

fn leaks(text: &str) -> bool {
    text.contains(MARKER)
}

/// Every option the connector marks sensitive, given either as a secret reference or in the
/// clear, never shows up in the factory's or source's `Debug` output, nor in errors.
pub async fn secrets_hidden(
    connector: &dyn SourceFactory,
    fixture: &mut dyn Fixture,
) -> CaseResult {
    let sensitive: Vec<String> = connector
        .options()
        .into_iter()
        .filter(|o| o.sensitive && o.kind != OptionKind::Prefix)
        .map(|o| o.name)
        .collect();
    if sensitive.is_empty() {
        return Ok(Outcome::Skipped(format!(
            "connector '{}' declares no sensitive option",
            connector.name()
        )));
    }
    let env = CaseEnv::new()?;
    let context = ConnectorContext {
        secrets: Arc::new(MarkerStore),
        ..env.context.clone()
    };
    let target = fixture.create_target("secrets").await?;
    let base = fixture.source_options(&ReadSetup::target(&target))?;
    for name in &sensitive {
        for value in [
            format!("{{{{secrets/conformance/{name}}}}}"),
            MARKER.to_string(),
        ] {
            let options = base.clone().with(name.clone(), value);
            ensure!(
                !leaks(&format!("{options:?}")),
                "Debug of the options shows '{name}'"
            );
            if let Err(e) = connector.validate(&options) {
                ensure!(
                    !leaks(&e.to_string()) && !leaks(&e.to_json().to_string()),
                    "validation error shows the value of '{name}': {e}"
                );
            }
            match connector.create(&options, &context) {
                Ok(mut source) => {
                    ensure!(
                        !leaks(&format!("{source:?}")),
                        "Debug of the source shows '{name}'"
                    );
                    if let Err(e) = source.initial_offset().await {
                        ensure!(
                            !leaks(&format!("{e} {e:?}")),
                            "an error shows '{name}': {e}"
                        );
                    }
                    let _ = source.stop().await;
                }
                Err(e) => {
                    ensure!(
                        !leaks(&format!("{e} {e:?} {}", e.to_json())),
                        "create error shows the value of '{name}': {e}"
                    );
                }
            }
        }
    }
    ensure!(
        !leaks(&format!("{connector:?}")),
        "Debug of the factory shows a secret"
    );
    Ok(Outcome::Passed)
}

/// An unknown option fails validation and creation with `UNKNOWN_OPTION`; a near miss of a real
/// option name is answered with "did you mean".
pub async fn unknown_option_refused(
    connector: &dyn SourceFactory,
    fixture: &mut dyn Fixture,
) -> CaseResult {
    let env = CaseEnv::new()?;
    let target = fixture.create_target("unknown").await?;
    let base = fixture.source_options(&ReadSetup::target(&target))?;
    connector
        .validate(&base)
        .map_err(|e| Failure(format!("the fixture's own options do not validate: {e}")))?;
    let bad = base.clone().with("conformanceNoSuchOption", "1");
    let e = match connector.validate(&bad) {
        Ok(()) => return Err(Failure("an unknown option passed validation".into())),
        Err(e) => e,
    };
    ensure!(
        e.code() == ErrorCode::UnknownOption,
        "unknown option gave {} instead of UNKNOWN_OPTION: {e}",
        e.code()
    );
    ensure!(
        e.message().contains("conformanceNoSuchOption"),
        "the error does not name the option: {e}"
    );
    match connector.create(&bad, &env.context) {
        Ok(_) => return Err(Failure("create accepted an unknown option".into())),
        Err(e) => ensure!(
            e.code() == ErrorCode::UnknownOption,
            "create refused an unknown option with {} instead of UNKNOWN_OPTION",
            e.code()
        ),
    }
    let specs = connector.options();
    let known = specs
        .iter()
        .filter(|o| o.kind != OptionKind::Prefix && o.name.len() >= 6)
        .find(|o| {
            let typo = &o.name[..o.name.len() - 1];
            !specs.iter().any(|s| s.name.eq_ignore_ascii_case(typo))
                && !specs.iter().any(|s| {
                    s.kind == OptionKind::Prefix
                        && typo
                            .to_ascii_lowercase()
                            .starts_with(&s.name.to_ascii_lowercase())
                })
        });
    if let Some(spec) = known {
        let typo = &spec.name[..spec.name.len() - 1];
        let e = connector
            .validate(&base.clone().with(typo, "1"))
            .err()
            .ok_or_else(|| Failure(format!("the misspelt option '{typo}' passed validation")))?;
        ensure!(
            e.message()
                .contains(&format!("did you mean '{}'", spec.name)),
            "misspelt '{typo}' did not suggest '{}': {e}",
            spec.name
        );
    }
    Ok(Outcome::Passed)
}
