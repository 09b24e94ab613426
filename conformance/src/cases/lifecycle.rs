//! Shutdown, secrets and option validation.

use std::sync::Arc;

use tributary_sdk::{ConnectorContext, ReadLimit, SourceFactory, SourceFactoryExt};

use crate::cases::option_checks::{
    check_unknown_option, leaks, sensitive_options, MarkerStore, WrongStore, MARKER, WRONG_SECRET,
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

/// Every option the connector marks sensitive, given as a secret reference, in the clear, in
/// the clear with a space in it (an unquoted JAAS password) or as a URL's user information,
/// never shows up in the factory's or source's `Debug` output, nor in errors; nor does the user
/// information of a URL given in any of the fixture's [`Fixture::url_options`].
pub async fn secrets_hidden(
    connector: &dyn SourceFactory,
    fixture: &mut dyn Fixture,
) -> CaseResult {
    let sensitive = sensitive_options(connector.options());
    let urls = fixture.url_options();
    if sensitive.is_empty() && urls.is_empty() {
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
    let tried = sensitive
        .iter()
        .flat_map(|name| {
            [
                format!("{{{{secrets/conformance/{name}}}}}"),
                MARKER.to_string(),
                format!("{MARKER} {MARKER}"),
                format!("https://user:{MARKER}@host/path"),
            ]
            .map(|v| (name.clone(), v))
        })
        .chain(urls.iter().flat_map(|(name, url)| {
            [
                url.replacen("://", &format!("://{MARKER}:{MARKER}@"), 1),
                url.replacen("://", &format!("://user:{MARKER} with space@"), 1),
            ]
            .map(|v| (name.clone(), v))
        }))
        .collect::<Vec<_>>();
    for (name, value) in tried {
        {
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
    if let Some(option) = fixture.secret_option() {
        secret_is_used(connector, &base, &option, &env.context).await?;
    }
    Ok(Outcome::Passed)
}

/// The fixture's connection depends on `option` (a secret reference in `base`): with the
/// suite's store the source plans a batch, with a store resolving to another value it fails,
/// and neither the right nor the wrong value shows in any output.
async fn secret_is_used(
    connector: &dyn SourceFactory,
    base: &tributary_sdk::Options,
    option: &str,
    context: &ConnectorContext,
) -> std::result::Result<(), Failure> {
    ensure!(
        base.get(option).is_some_and(|v| v.contains("{{secrets/")),
        "the fixture names '{option}' as its secret but gives it no secret reference"
    );
    let right = ConnectorContext {
        secrets: Arc::new(MarkerStore),
        ..context.clone()
    };
    let mut source = connector
        .create(base, &right)
        .map_err(|e| Failure(format!("create with the resolved '{option}' failed: {e}")))?;
    let planned = async {
        let start = source.initial_offset().await?;
        source.latest_offset(&start, &ReadLimit::All).await
    }
    .await;
    ensure!(
        !leaks(&format!("{source:?}")),
        "Debug of the source shows '{option}'"
    );
    let _ = source.stop().await;
    if let Err(e) = planned {
        return Err(Failure(format!(
            "the source did not plan a batch with the resolved '{option}': {e}"
        )));
    }
    let wrong = ConnectorContext {
        secrets: Arc::new(WrongStore),
        ..context.clone()
    };
    let failed = match connector.create(base, &wrong) {
        Err(e) => Some(e),
        Ok(mut source) => {
            let r = async {
                let start = source.initial_offset().await?;
                source.latest_offset(&start, &ReadLimit::All).await
            }
            .await;
            let _ = source.stop().await;
            r.err()
        }
    };
    match failed {
        None => Err(Failure(format!(
            "the source planned a batch although '{option}' resolved to a wrong value: the \
             secret is not used"
        ))),
        Some(e) => {
            let shown = format!("{e} {e:?} {}", e.to_json());
            ensure!(
                !leaks(&shown) && !shown.contains(WRONG_SECRET),
                "the error for a wrong '{option}' shows a secret: {e}"
            );
            Ok(())
        }
    }
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
    check_unknown_option(
        &connector.options(),
        &base,
        &|o| connector.validate(o),
        &|o| connector.create(o, &env.context).map(drop),
    )?;
    Ok(Outcome::Passed)
}
