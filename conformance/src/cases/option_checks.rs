//! Checks shared by the source and sink suites: unknown and misspelt options, and the secret
//! store whose one value the secrets cases look for in every output.

use tributary_sdk::{
    Error, ErrorCode, OptionKind, OptionSpec, Options, Result, Secret, SecretRef, SecretStore,
};

use crate::cases::{ensure, Failure};

/// The value every `{{secrets/conformance/...}}` reference resolves to in the secrets cases
/// (a fixture whose connection needs a real secret provisions it with this value).
pub const SECRET_MARKER: &str = "c0nf0rmance-s3cret-V4lue";
pub(crate) const MARKER: &str = SECRET_MARKER;

/// Resolves every reference to one value that is not [`SECRET_MARKER`].
#[derive(Debug)]
pub(crate) struct WrongStore;

/// What [`WrongStore`] resolves to.
pub(crate) const WRONG_SECRET: &str = "n0t-the-c0nformance-value";

impl SecretStore for WrongStore {
    fn resolve(&self, _reference: &SecretRef) -> Result<Secret> {
        Ok(Secret::new(WRONG_SECRET))
    }
}

/// Resolves scope `conformance` to [`MARKER`].
#[derive(Debug)]
pub(crate) struct MarkerStore;

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

/// Whether `text` shows the secret.
pub(crate) fn leaks(text: &str) -> bool {
    text.contains(MARKER)
}

/// Whether an error shows the secret in its message, debug form or JSON.
pub(crate) fn error_leaks(e: &Error) -> bool {
    leaks(&format!("{e} {e:?} {}", e.to_json()))
}

/// The names of the options a connector marks sensitive.
pub(crate) fn sensitive_options(specs: Vec<OptionSpec>) -> Vec<String> {
    specs
        .into_iter()
        .filter(|o| o.sensitive && o.kind != OptionKind::Prefix)
        .map(|o| o.name)
        .collect()
}

/// An unknown option added to `base` fails `validate` and `create` with `UNKNOWN_OPTION` naming
/// it, and a real option name missing its last letter is answered with "did you mean".
pub(crate) fn check_unknown_option(
    specs: &[OptionSpec],
    base: &Options,
    validate: &dyn Fn(&Options) -> Result<()>,
    create: &dyn Fn(&Options) -> Result<()>,
) -> std::result::Result<(), Failure> {
    validate(base)
        .map_err(|e| Failure(format!("the fixture's own options do not validate: {e}")))?;
    let bad = base.clone().with("conformanceNoSuchOption", "1");
    let e = match validate(&bad) {
        Ok(()) => {
            return Err(Failure(
                "the unknown option 'conformanceNoSuchOption' passed validation".into(),
            ))
        }
        Err(e) => e,
    };
    ensure!(
        e.code() == ErrorCode::UnknownOption,
        "unknown option gave {} instead of UNKNOWN_OPTION: {e}",
        e.code()
    );
    ensure!(
        e.message().contains("conformanceNoSuchOption"),
        "the error does not name the option 'conformanceNoSuchOption': {e}"
    );
    match create(&bad) {
        Ok(()) => {
            return Err(Failure(
                "create accepted the unknown option 'conformanceNoSuchOption'".into(),
            ))
        }
        Err(e) => {
            ensure!(
                e.code() == ErrorCode::UnknownOption,
                "create refused an unknown option with {} instead of UNKNOWN_OPTION: {e}",
                e.code()
            );
            ensure!(
                e.message().contains("conformanceNoSuchOption"),
                "create's error does not name the option 'conformanceNoSuchOption': {e}"
            );
        }
    }
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
        let e = validate(&base.clone().with(typo, "1"))
            .err()
            .ok_or_else(|| Failure(format!("the misspelt option '{typo}' passed validation")))?;
        ensure!(
            e.message()
                .contains(&format!("did you mean '{}'", spec.name)),
            "misspelt '{typo}' did not suggest '{}': {e}",
            spec.name
        );
    }
    Ok(())
}
