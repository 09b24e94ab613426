//! A small parser for the JAAS line of Spark's `kafka.sasl.jaas.config`:
//! `<LoginModule class> <flag> [key=value ...];`, values quoted (`"..."` with `\"` and `\\`
//! escapes) or bare words.
//!
//! Errors never show a value: the line holds a password. They name the option and what is
//! wrong (a missing `;`, an unterminated quote, an unknown key).

use std::fmt;

use tributary_sdk::{Error, ErrorCode, Result, Secret};

/// The option this parser reads.
pub(crate) const OPTION: &str = "kafka.sasl.jaas.config";

/// The login modules the connector understands, by class name (shading prefixes such as
/// `kafkashaded.` are ignored).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LoginModule {
    /// `org.apache.kafka.common.security.plain.PlainLoginModule` (SASL PLAIN).
    Plain,
    /// `org.apache.kafka.common.security.scram.ScramLoginModule` (SCRAM-SHA-256/512).
    Scram,
    /// `software.amazon.msk.auth.iam.IAMLoginModule` (AWS MSK IAM).
    MskIam,
    /// `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule` (OAUTHBEARER,
    /// served with AWS MSK IAM tokens).
    OAuthBearer,
}

impl LoginModule {
    /// The short class name.
    pub(crate) fn class_name(self) -> &'static str {
        match self {
            LoginModule::Plain => "PlainLoginModule",
            LoginModule::Scram => "ScramLoginModule",
            LoginModule::MskIam => "IAMLoginModule",
            LoginModule::OAuthBearer => "OAuthBearerLoginModule",
        }
    }
}

/// A parsed JAAS line. `Debug` hides the password.
#[derive(Clone)]
pub(crate) struct JaasConfig {
    /// The login module.
    pub module: LoginModule,
    /// `username="..."` (PLAIN and SCRAM).
    pub username: Option<String>,
    /// `password="..."` (PLAIN and SCRAM); may be a `{{secrets/...}}` reference.
    pub password: Option<Secret>,
}

impl fmt::Debug for JaasConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JaasConfig")
            .field("module", &self.module)
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| "***"))
            .finish()
    }
}

fn invalid(why: impl fmt::Display) -> Error {
    Error::new(
        ErrorCode::InvalidOption,
        format!(
            "option '{OPTION}' is not a JAAS line this connector reads: {why}; expected \
             `org.apache.kafka.common.security.scram.ScramLoginModule required username=\"...\" password=\"...\";` \
             (or PlainLoginModule, IAMLoginModule, OAuthBearerLoginModule)"
        ),
    )
    .with_context("option", OPTION)
}

/// Splits the line into tokens: words, `=` and `;`, with quoted strings unescaped.
#[derive(Debug, PartialEq, Eq)]
enum Token {
    Word(String),
    Quoted(String),
    Equals,
    Semicolon,
}

fn tokenize(text: &str) -> Result<Vec<Token>> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(&c) = chars.peek() {
        match c {
            c if c.is_whitespace() => {
                chars.next();
            }
            '=' => {
                chars.next();
                out.push(Token::Equals);
            }
            ';' => {
                chars.next();
                out.push(Token::Semicolon);
            }
            '"' | '\'' => {
                let quote = c;
                chars.next();
                let mut s = String::new();
                let mut closed = false;
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => match chars.next() {
                            Some(e) => s.push(e),
                            None => return Err(invalid("a value ends with a lone backslash")),
                        },
                        c if c == quote => {
                            closed = true;
                            break;
                        }
                        c => s.push(c),
                    }
                }
                if !closed {
                    return Err(invalid("a quoted value is not closed"));
                }
                out.push(Token::Quoted(s));
            }
            _ => {
                let mut s = String::new();
                while let Some(&c) = chars.peek() {
                    if c.is_whitespace() || c == '=' || c == ';' || c == '"' || c == '\'' {
                        break;
                    }
                    s.push(c);
                    chars.next();
                }
                out.push(Token::Word(s));
            }
        }
    }
    Ok(out)
}

/// Parses one JAAS line (the value of `kafka.sasl.jaas.config`).
pub(crate) fn parse(text: &str) -> Result<JaasConfig> {
    let tokens = tokenize(text)?;
    let mut it = tokens.into_iter();
    let class = match it.next() {
        Some(Token::Word(w)) => w,
        _ => return Err(invalid("it does not start with a login module class")),
    };
    let short = class.rsplit('.').next().unwrap_or(&class);
    let module = match short {
        "PlainLoginModule" => LoginModule::Plain,
        "ScramLoginModule" => LoginModule::Scram,
        "IAMLoginModule" => LoginModule::MskIam,
        "OAuthBearerLoginModule" => LoginModule::OAuthBearer,
        other => {
            // Quoted only when it reads as a Java class name: a JAAS value is secret as a
            // whole, and a first word that is not a class may be part of a password.
            let looks_like_class = other.ends_with("LoginModule")
                && other
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '$'));
            let shown = if looks_like_class {
                format!("'{other}'")
            } else {
                "(not shown: it is not a Java class name)".to_string()
            };
            return Err(invalid(format!(
                "the login module {shown} is not supported (Kerberos and custom modules need the Java client)"
            )));
        }
    };
    match it.next() {
        Some(Token::Word(flag))
            if ["required", "requisite", "sufficient", "optional"]
                .iter()
                .any(|f| f.eq_ignore_ascii_case(&flag)) => {}
        _ => {
            return Err(invalid(
                "the class must be followed by a control flag (required)",
            ))
        }
    }
    let mut username = None;
    let mut password = None;
    let mut ended = false;
    // Once a password was given, later keys are not quoted: an unquoted password with a space
    // ends at the space, and its tail would be read as the next key.
    let mut after_password = false;
    while let Some(tok) = it.next() {
        let key = match tok {
            Token::Semicolon => {
                ended = true;
                break;
            }
            Token::Word(k) => k,
            _ => return Err(invalid("expected key=value")),
        };
        let shown = if after_password {
            "after the password (not shown; quote a password that has spaces)".to_string()
        } else {
            format!("'{key}'")
        };
        if it.next() != Some(Token::Equals) {
            return Err(invalid(format!("the key {shown} has no '=' after it")));
        }
        let value = match it.next() {
            Some(Token::Word(v)) | Some(Token::Quoted(v)) => v,
            _ => return Err(invalid(format!("the key {shown} has no value"))),
        };
        after_password |= key == "password";
        match (module, key.as_str()) {
            (LoginModule::Plain | LoginModule::Scram, "username") => username = Some(value),
            (LoginModule::Plain | LoginModule::Scram, "password") => {
                password = Some(Secret::new(value))
            }
            (LoginModule::OAuthBearer, "clientId" | "clientSecret" | "scope") => {
                return Err(invalid(format!(
                    "the OAuthBearerLoginModule option {shown} is given here as a librdkafka property: kafka.sasl.oauthbearer.client.id, kafka.sasl.oauthbearer.client.secret (a secret reference) or kafka.sasl.oauthbearer.scope, with kafka.sasl.oauthbearer.method=oidc"
                )))
            }
            (LoginModule::MskIam | LoginModule::OAuthBearer, _) => {
                return Err(invalid(format!(
                    "the {} option {shown} is not supported: the connector signs MSK IAM tokens with the default AWS credential chain (set AWS_PROFILE, AWS_ROLE_ARN or the region with auth.awsRegion)",
                    module.class_name()
                )))
            }
            (_, _) => {
                return Err(invalid(format!(
                    "the {} option {shown} is not supported (only username and password)",
                    module.class_name()
                )))
            }
        }
    }
    if !ended {
        return Err(invalid("the line must end with ';'"));
    }
    if it.next().is_some() {
        return Err(invalid(
            "only one login module may be given (text follows the ';')",
        ));
    }
    if matches!(module, LoginModule::Plain | LoginModule::Scram) {
        let missing = match (&username, &password) {
            (None, _) => Some("username"),
            (_, None) => Some("password"),
            _ => None,
        };
        if let Some(k) = missing {
            return Err(Error::new(
                ErrorCode::MissingOption,
                format!(
                    "option '{OPTION}': the {} line has no {k}",
                    module.class_name()
                ),
            )
            .with_context("option", OPTION));
        }
    }
    Ok(JaasConfig {
        module,
        username,
        password,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn scram_and_plain_lines_with_quotes_and_escapes() {
        let j = parse(r#"org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="p\"a ss;w\\rd";"#).unwrap();
        assert_eq!(j.module, LoginModule::Scram);
        assert_eq!(j.username.as_deref(), Some("alice"));
        assert_eq!(j.password.as_ref().unwrap().expose(), r#"p"a ss;w\rd"#);
        assert!(!format!("{j:?}").contains("ss;w"));
        let j = parse("kafkashaded.org.apache.kafka.common.security.plain.PlainLoginModule required\n  username=bob\n  password='{{secrets/kafka/pw}}' ;").unwrap();
        assert_eq!(j.module, LoginModule::Plain);
        assert_eq!(j.username.as_deref(), Some("bob"));
        assert_eq!(j.password.unwrap().expose(), "{{secrets/kafka/pw}}");
        let j =
            parse("shadedmskiam.software.amazon.msk.auth.iam.IAMLoginModule required;").unwrap();
        assert_eq!(j.module, LoginModule::MskIam);
    }

    #[test]
    fn malformed_lines_are_refused_without_showing_the_password() {
        for (line, needle) in [
            (
                r#"ScramLoginModule required username="u" password="hunter2""#,
                "end with ';'",
            ),
            (
                r#"ScramLoginModule required username="u" password="hunter2;"#,
                "not closed",
            ),
            (
                r#"ScramLoginModule username="u" password="hunter2";"#,
                "control flag",
            ),
            (
                r#"Krb5LoginModule required password="hunter2";"#,
                "Krb5LoginModule",
            ),
            (
                r#"ScramLoginModule required username="u" tokenauth=true password="hunter2";"#,
                "tokenauth",
            ),
            (
                r#"ScramLoginModule required username="u" password="hunter2" tokenauth=true;"#,
                "after the password (not shown",
            ),
            (
                // An unquoted password with spaces: its tail must not be quoted as a key.
                r#"PlainLoginModule required username="u" password=hunter2 hunter2tail hunter2end;"#,
                "after the password (not shown",
            ),
            (
                r#"hunter2 required;"#,
                "not shown: it is not a Java class name",
            ),
            (
                r#"ScramLoginModule required username="u" password "hunter2";"#,
                "'password' has no '='",
            ),
            (
                r#"ScramLoginModule required username="u" password="hunter2"; more"#,
                "only one",
            ),
            (
                r#"IAMLoginModule required awsRoleArn="hunter2";"#,
                "awsRoleArn",
            ),
        ] {
            let e = parse(line).unwrap_err();
            assert_eq!(e.code(), ErrorCode::InvalidOption, "{line}");
            assert_eq!(e.context_value("option"), Some(OPTION));
            assert!(e.message().contains(needle), "{line}: {e}");
            assert!(!format!("{e} {e:?}").contains("hunter2"), "{e}");
        }
        let e = parse(r#"ScramLoginModule required username="u";"#).unwrap_err();
        assert_eq!(e.code(), ErrorCode::MissingOption);
        assert!(e.message().contains("no password"), "{e}");
    }
}
