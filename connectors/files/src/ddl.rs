//! Spark DDL schema strings (`id BIGINT, name STRING, tags ARRAY<STRING>`) parsed into Arrow.
//!
//! The grammar is the one `DataFrameReader.schema(String)` accepts: comma-separated
//! `name type` pairs (an optional `:` between them, backquoted names, `NOT NULL`, `COMMENT '...'`),
//! with `STRUCT<...>`, `ARRAY<...>` and `MAP<..., ...>` nesting. Types map the way Spark's
//! Arrow conversion maps them: `TIMESTAMP` is microseconds in UTC, `TIMESTAMP_NTZ` microseconds
//! without a zone, `DATE` is `Date32`, `DECIMAL(p, s)` is `Decimal128(p, s)` (default `(10, 0)`).
//!
//! This small recursive-descent parser is hand-written: the SQL parser crates parse full SQL
//! statements, not this type-list dialect (colon-separated struct fields, Spark type aliases),
//! and mapping their type trees to Arrow would take as much code as parsing.

use std::sync::Arc;

use arrow_schema::{DataType, Field, Fields, Schema, TimeUnit, DECIMAL128_MAX_PRECISION};
use tributary_sdk::{Error, ErrorCode, Result};

use crate::config::names;

/// Parses a Spark DDL schema string into an Arrow schema (every field nullable unless
/// `NOT NULL`).
pub fn parse_ddl(text: &str) -> Result<Schema> {
    let mut p = Parser {
        tokens: tokenize(text)?,
        pos: 0,
        text,
    };
    let fields = p.fields(None)?;
    if let Some(t) = p.peek() {
        return Err(p.error(format!("unexpected '{}' after the last column", t.text)));
    }
    if fields.is_empty() {
        return Err(p.error("the schema has no columns".into()));
    }
    Ok(Schema::new(fields))
}

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Word,
    Quoted,
    Str,
    Punct,
}

#[derive(Debug, Clone)]
struct Token {
    kind: Kind,
    text: String,
    at: usize,
}

fn ddl_error(text: &str, at: usize, msg: String) -> Error {
    Error::new(
        ErrorCode::Schema,
        format!(
            "invalid schema in option 'schema' at character {}: {msg} (schema: '{text}')",
            at + 1
        ),
    )
    .with_context("option", names::SCHEMA)
}

fn tokenize(text: &str) -> Result<Vec<Token>> {
    let mut out = Vec::new();
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut i = 0;
    while i < chars.len() {
        let (at, c) = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_alphanumeric() || c == '_' {
            let mut s = String::new();
            while i < chars.len() && (chars[i].1.is_alphanumeric() || chars[i].1 == '_') {
                s.push(chars[i].1);
                i += 1;
            }
            out.push(Token {
                kind: Kind::Word,
                text: s,
                at,
            });
        } else if c == '`' || c == '\'' || c == '"' {
            let mut s = String::new();
            i += 1;
            loop {
                match chars.get(i) {
                    None => return Err(ddl_error(text, at, format!("unterminated {c}"))),
                    Some((_, d)) if *d == c => {
                        // A doubled quote is an escaped quote.
                        if chars.get(i + 1).map(|x| x.1) == Some(c) {
                            s.push(c);
                            i += 2;
                        } else {
                            i += 1;
                            break;
                        }
                    }
                    Some((_, d)) => {
                        s.push(*d);
                        i += 1;
                    }
                }
            }
            let kind = if c == '`' { Kind::Quoted } else { Kind::Str };
            out.push(Token { kind, text: s, at });
        } else if "<>(),:".contains(c) {
            out.push(Token {
                kind: Kind::Punct,
                text: c.to_string(),
                at,
            });
            i += 1;
        } else {
            return Err(ddl_error(text, at, format!("unexpected character '{c}'")));
        }
    }
    Ok(out)
}

struct Parser<'a> {
    tokens: Vec<Token>,
    pos: usize,
    text: &'a str,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos)
    }

    fn error(&self, msg: String) -> Error {
        let at = self.peek().map_or(self.text.len(), |t| t.at);
        ddl_error(self.text, at, msg)
    }

    fn is_punct(&self, p: &str) -> bool {
        self.peek()
            .is_some_and(|t| t.kind == Kind::Punct && t.text == p)
    }

    fn is_word(&self, w: &str) -> bool {
        self.peek()
            .is_some_and(|t| t.kind == Kind::Word && t.text.eq_ignore_ascii_case(w))
    }

    fn expect_punct(&mut self, p: &str) -> Result<()> {
        if self.is_punct(p) {
            self.pos += 1;
            Ok(())
        } else {
            let found = self
                .peek()
                .map_or("the end".to_string(), |t| format!("'{}'", t.text));
            Err(self.error(format!("expected '{p}', found {found}")))
        }
    }

    /// Fields until the end or until `close` (not consumed).
    fn fields(&mut self, close: Option<&str>) -> Result<Vec<Field>> {
        let mut fields: Vec<Field> = Vec::new();
        loop {
            if self.peek().is_none() || close.is_some_and(|c| self.is_punct(c)) {
                if !fields.is_empty() {
                    return Err(self.error("expected a column after ','".into()));
                }
                return Ok(fields);
            }
            let field = self.field()?;
            if fields
                .iter()
                .any(|f| f.name().eq_ignore_ascii_case(field.name()))
            {
                return Err(self.error(format!("column '{}' appears twice", field.name())));
            }
            fields.push(field);
            if self.is_punct(",") {
                self.pos += 1;
                continue;
            }
            return Ok(fields);
        }
    }

    fn field(&mut self) -> Result<Field> {
        let name = match self.peek() {
            Some(t) if t.kind == Kind::Word || t.kind == Kind::Quoted => t.text.clone(),
            Some(t) => {
                return Err(self.error(format!("expected a column name, found '{}'", t.text)))
            }
            None => return Err(self.error("expected a column name".into())),
        };
        self.pos += 1;
        if self.is_punct(":") {
            self.pos += 1;
        }
        let data_type = self.data_type()?;
        let mut nullable = true;
        if self.is_word("NOT") {
            self.pos += 1;
            if !self.is_word("NULL") {
                return Err(self.error("expected NULL after NOT".into()));
            }
            self.pos += 1;
            nullable = false;
        }
        if self.is_word("COMMENT") {
            self.pos += 1;
            match self.peek() {
                Some(t) if t.kind == Kind::Str => self.pos += 1,
                _ => return Err(self.error("expected a quoted comment after COMMENT".into())),
            }
        }
        Ok(Field::new(name, data_type, nullable))
    }

    fn int_arg(&mut self) -> Result<u64> {
        match self.peek() {
            Some(t) if t.kind == Kind::Word => {
                let v = t
                    .text
                    .parse::<u64>()
                    .map_err(|_| self.error(format!("expected a number, found '{}'", t.text)))?;
                self.pos += 1;
                Ok(v)
            }
            _ => Err(self.error("expected a number".into())),
        }
    }

    fn data_type(&mut self) -> Result<DataType> {
        let word = match self.peek() {
            Some(t) if t.kind == Kind::Word => t.text.to_ascii_uppercase(),
            Some(t) => return Err(self.error(format!("expected a type, found '{}'", t.text))),
            None => return Err(self.error("expected a type".into())),
        };
        let at = self.pos;
        self.pos += 1;
        let ty = match word.as_str() {
            "BOOLEAN" | "BOOL" => DataType::Boolean,
            "TINYINT" | "BYTE" => DataType::Int8,
            "SMALLINT" | "SHORT" => DataType::Int16,
            "INT" | "INTEGER" => DataType::Int32,
            "BIGINT" | "LONG" => DataType::Int64,
            "FLOAT" | "REAL" => DataType::Float32,
            "DOUBLE" => DataType::Float64,
            "STRING" | "TEXT" => DataType::Utf8,
            "VARCHAR" | "CHAR" => {
                // The length is accepted and not enforced (Spark reads them as STRING).
                if self.is_punct("(") {
                    self.pos += 1;
                    self.int_arg()?;
                    self.expect_punct(")")?;
                }
                DataType::Utf8
            }
            "BINARY" => DataType::Binary,
            "DATE" => DataType::Date32,
            "TIMESTAMP" | "TIMESTAMP_LTZ" => {
                DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
            }
            "TIMESTAMP_NTZ" => DataType::Timestamp(TimeUnit::Microsecond, None),
            "DECIMAL" | "DEC" | "NUMERIC" => {
                let (mut precision, mut scale) = (10u64, 0u64);
                if self.is_punct("(") {
                    self.pos += 1;
                    precision = self.int_arg()?;
                    if self.is_punct(",") {
                        self.pos += 1;
                        scale = self.int_arg()?;
                    }
                    self.expect_punct(")")?;
                }
                if precision == 0
                    || precision > u64::from(DECIMAL128_MAX_PRECISION)
                    || scale > precision
                {
                    self.pos = at;
                    return Err(self.error(format!(
                        "DECIMAL({precision}, {scale}) is out of range: precision 1 to 38, scale 0 to precision"
                    )));
                }
                DataType::Decimal128(precision as u8, scale as i8)
            }
            "ARRAY" => {
                self.expect_punct("<")?;
                let item = self.data_type()?;
                self.expect_punct(">")?;
                DataType::List(Arc::new(Field::new("element", item, true)))
            }
            "MAP" => {
                self.expect_punct("<")?;
                let key = self.data_type()?;
                self.expect_punct(",")?;
                let value = self.data_type()?;
                self.expect_punct(">")?;
                DataType::Map(
                    Arc::new(Field::new(
                        "entries",
                        DataType::Struct(Fields::from(vec![
                            Field::new("key", key, false),
                            Field::new("value", value, true),
                        ])),
                        false,
                    )),
                    false,
                )
            }
            "STRUCT" => {
                self.expect_punct("<")?;
                let fields = self.fields(Some(">"))?;
                self.expect_punct(">")?;
                DataType::Struct(Fields::from(fields))
            }
            other => {
                self.pos = at;
                return Err(self.error(format!(
                    "unknown type '{other}'; supported: BOOLEAN, TINYINT, SMALLINT, INT, BIGINT, \
                     FLOAT, DOUBLE, DECIMAL(p,s), STRING, BINARY, DATE, TIMESTAMP, TIMESTAMP_NTZ, \
                     ARRAY<..>, MAP<..,..>, STRUCT<..>"
                )));
            }
        };
        Ok(ty)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_spark_types() {
        let s = parse_ddl("id BIGINT, name STRING, price DOUBLE, ts TIMESTAMP, ok BOOLEAN, d DATE")
            .unwrap();
        let types: Vec<_> = s
            .fields()
            .iter()
            .map(|f| (f.name().as_str(), f.data_type().clone()))
            .collect();
        assert_eq!(
            types,
            vec![
                ("id", DataType::Int64),
                ("name", DataType::Utf8),
                ("price", DataType::Float64),
                (
                    "ts",
                    DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
                ),
                ("ok", DataType::Boolean),
                ("d", DataType::Date32),
            ]
        );
        assert!(s.fields().iter().all(|f| f.is_nullable()));
    }

    #[test]
    fn nested_types_decimals_quotes_and_modifiers() {
        let s = parse_ddl(
            "`user id` int NOT NULL COMMENT 'the id', amount decimal(12, 2), \
             tags array<string>, attrs MAP<STRING, BIGINT>, \
             addr STRUCT<city: STRING, zip INT>, t timestamp_ntz, c varchar(10), b tinyint",
        )
        .unwrap();
        assert_eq!(s.field(0).name(), "user id");
        assert!(!s.field(0).is_nullable());
        assert_eq!(s.field(1).data_type(), &DataType::Decimal128(12, 2));
        assert!(
            matches!(s.field(2).data_type(), DataType::List(f) if f.data_type() == &DataType::Utf8)
        );
        assert!(matches!(s.field(3).data_type(), DataType::Map(_, false)));
        match s.field(4).data_type() {
            DataType::Struct(f) => {
                assert_eq!(f[0].name(), "city");
                assert_eq!(f[1].data_type(), &DataType::Int32);
            }
            other => panic!("{other}"),
        }
        assert_eq!(
            s.field(5).data_type(),
            &DataType::Timestamp(TimeUnit::Microsecond, None)
        );
        assert_eq!(s.field(6).data_type(), &DataType::Utf8);
        assert_eq!(s.field(7).data_type(), &DataType::Int8);
        assert_eq!(
            parse_ddl("x decimal").unwrap().field(0).data_type(),
            &DataType::Decimal128(10, 0)
        );
    }

    #[test]
    fn errors_name_the_position_and_problem() {
        let e = parse_ddl("id BIGINT, name STRNG").unwrap_err();
        assert_eq!(e.code(), ErrorCode::Schema);
        assert_eq!(e.context_value("option"), Some("schema"));
        assert!(
            e.message().contains("unknown type 'STRNG'"),
            "{}",
            e.message()
        );
        assert!(e.message().contains("character 17"), "{}", e.message());
        for bad in [
            "",
            "id",
            "id INT,",
            "id INT name STRING",
            "a ARRAY<INT",
            "a DECIMAL(40, 2)",
            "a INT, A STRING",
            "a INT NOT",
            "a 'x'",
            "a INT; DROP",
        ] {
            assert!(parse_ddl(bad).is_err(), "{bad:?} should fail");
        }
    }
}
