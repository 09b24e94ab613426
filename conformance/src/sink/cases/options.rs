//! Option validation and secrets: the sink twins of the source cases in `cases/lifecycle.rs`.

use std::sync::Arc;

use tributary_sdk::{ConnectorContext, SinkFactory, SinkFactoryExt};

use crate::cases::option_checks::{
    check_unknown_option, error_leaks, leaks, sensitive_options, MarkerStore, MARKER,
};
use crate::cases::{ensure, CaseEnv, CaseResult, Failure, Outcome};
use crate::sink::cases::new_target;
use crate::sink::fixture::SinkFixture;
use crate::sink::rows::{micro_batch, test_schema};

/// An unknown option fails validation and creation with `UNKNOWN_OPTION` naming the option; a
/// near miss of a real option name is answered with "did you mean".
pub async fn sink_unknown_option_refused(
    connector: &dyn SinkFactory,
    fixture: &mut dyn SinkFixture,
) -> CaseResult {
    let env = CaseEnv::new()?;
    let (_, base) = new_target(fixture, "unknown").await?;
    check_unknown_option(
        &connector.options(),
        &base,
        &|o| connector.validate(o),
        &|o| connector.create(o, &env.context).map(drop),
    )?;
    Ok(Outcome::Passed)
}

/// Every option the sink marks sensitive, given either as a secret reference or in the clear,
/// never shows up in the options', factory's or sink's `Debug` output, nor in an error of
/// validate, create, open, write or stop. Skipped when the sink declares no sensitive option.
pub async fn sink_secrets_hidden(
    connector: &dyn SinkFactory,
    fixture: &mut dyn SinkFixture,
) -> CaseResult {
    let sensitive = sensitive_options(connector.options());
    if sensitive.is_empty() {
        return Ok(Outcome::Skipped(format!(
            "sink '{}' declares no sensitive option",
            connector.name()
        )));
    }
    let env = CaseEnv::new()?;
    let context = ConnectorContext {
        secrets: Arc::new(MarkerStore),
        ..env.context.clone()
    };
    let rows = fixture.input(&micro_batch(0)?).map_err(|e| {
        Failure(format!(
            "the fixture cannot shape the rows for the sink: {e}"
        ))
    })?;
    for name in &sensitive {
        for value in [
            format!("{{{{secrets/conformance/{name}}}}}"),
            MARKER.to_string(),
        ] {
            let (_, base) = new_target(fixture, "secrets").await?;
            let options = base.with(name.clone(), value);
            ensure!(
                !leaks(&format!("{options:?}")),
                "Debug of the options shows the value of '{name}'"
            );
            if let Err(e) = connector.validate(&options) {
                ensure!(
                    !error_leaks(&e),
                    "validation error shows the value of '{name}': {e}"
                );
            }
            let mut sink = match connector.create(&options, &context) {
                Ok(sink) => sink,
                Err(e) => {
                    ensure!(
                        !error_leaks(&e),
                        "create error shows the value of '{name}': {e}"
                    );
                    continue;
                }
            };
            ensure!(
                !leaks(&format!("{sink:?}")),
                "Debug of the sink shows the value of '{name}'"
            );
            let steps = [
                ("open", sink.open(fixture.input_schema(test_schema())).await),
                ("write", sink.write(0, &rows).await),
                ("stop", sink.stop().await),
            ];
            for (step, result) in steps {
                if let Err(e) = result {
                    ensure!(
                        !error_leaks(&e),
                        "an error of {step} shows the value of '{name}': {e}"
                    );
                }
            }
            ensure!(
                !leaks(&format!("{sink:?}")),
                "Debug of the sink shows the value of '{name}' after a write"
            );
        }
    }
    ensure!(
        !leaks(&format!("{connector:?}")),
        "Debug of the factory shows a secret"
    );
    Ok(Outcome::Passed)
}
