//! A stream spec bound to its source connector: `[source] kind` names a source connector of the
//! registry, whose [`StreamBinding`] says which `[source]` field lists what the stream reads,
//! which source options the stream sets itself, and which metadata columns its ingestion table
//! carries. The checks of a spec that need the binding live here; those that need nothing are
//! [`StreamSpec::check`].

use std::sync::Arc;

use tributary_sdk::options::conflicting;
use tributary_sdk::{Error, ErrorCode, Result, StreamBinding, Subscription, SubscriptionKind};

use super::spec::StreamSpec;
use crate::registry::Registry;

/// The column telling stream rows from backfill rows.
pub const RECORD_SOURCE: &str = "record_source";

/// The record time column.
pub const STREAM_RECORD_TIMESTAMP: &str = "stream_record_timestamp";

/// The option naming the source connector.
const KIND: &str = "source.kind";

/// The source connectors of `registry` that can back a stream, by name.
pub fn stream_sources(registry: &Registry) -> Vec<String> {
    registry
        .source_names()
        .into_iter()
        .filter(|n| {
            registry
                .source(n)
                .is_ok_and(|f| f.stream_binding().is_some())
        })
        .map(str::to_string)
        .collect()
}

/// `a, b or c` (`none` when empty).
pub fn or_list(names: &[String]) -> String {
    match names {
        [] => "none".to_string(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

/// The binding of the source connector `kind`; an unknown connector, or one that cannot back a
/// stream, is refused naming the connectors that can.
pub fn resolve(registry: &Registry, kind: &str) -> Result<Arc<dyn StreamBinding>> {
    let can = || stream_sources(registry).join(", ");
    let factory = registry.source(kind).map_err(|e| {
        Error::new(
            e.code(),
            format!(
                "option '{KIND}': {}; the sources that can back a stream: {}",
                e.message(),
                can()
            ),
        )
        .with_context("option", KIND)
        .with_context("connector", kind)
    })?;
    factory.stream_binding().ok_or_else(|| {
        Error::new(
            ErrorCode::UnknownConnector,
            format!(
                "option '{KIND}': the '{kind}' source cannot back a stream (it has no stream binding); the sources that can: {}",
                can()
            ),
        )
        .with_context("option", KIND)
        .with_context("connector", kind)
    })
}

/// Every check of a spec without I/O before its pipeline is built: [`StreamSpec::check`], the
/// connector, and the checks that need its binding. Returns the binding.
pub fn check(spec: &StreamSpec, registry: &Registry) -> Result<Arc<dyn StreamBinding>> {
    spec.check()?;
    let binding = resolve(registry, &spec.source.kind)?;
    check_bound(spec, binding.as_ref())?;
    Ok(binding)
}

fn invalid(option: &str, message: String) -> Error {
    Error::new(ErrorCode::InvalidPipeline, message).with_context("option", option)
}

/// What the stream reads: the names under the binding's field, or one of the connector's
/// other subscription fields (a pattern, an assignment) — exactly one, checked.
pub fn subscription(spec: &StreamSpec, binding: &dyn StreamBinding) -> Result<Subscription> {
    let s = &spec.source;
    let mut fields = vec![(binding.names_field(), SubscriptionKind::Names)];
    fields.extend(binding.subscription_fields());
    let allowed = || {
        or_list(
            &fields
                .iter()
                .map(|(f, _)| format!("source.{f}"))
                .collect::<Vec<_>>(),
        )
    };
    if let Some(other) = s.names.keys().find(|k| !fields.iter().any(|(f, _)| f == k)) {
        let other = format!("source.{other}");
        return Err(invalid(
            &other,
            format!(
                "option '{other}' does not apply to a {} source; it reads {}",
                s.kind,
                allowed()
            ),
        ));
    }
    let given: Vec<&(&str, SubscriptionKind)> = fields
        .iter()
        .filter(|(f, _)| s.names.contains_key(*f))
        .collect();
    let (field, kind) = match given.as_slice() {
        [] => {
            let option = format!("source.{}", binding.names_field());
            return Err(Error::new(
                ErrorCode::MissingOption,
                format!(
                    "option '{option}' is required: the {} source reads {} (one of them)",
                    s.kind,
                    allowed()
                ),
            )
            .with_context("option", &option));
        }
        [one] => **one,
        [a, b, ..] => {
            return Err(conflicting(
                &format!("source.{}", a.0),
                &format!("source.{}", b.0),
                &format!(
                    "conflicts with 'source.{}': a stream reads by one subscription",
                    b.0
                ),
            ))
        }
    };
    let option = format!("source.{field}");
    let value = &s.names[field];
    match kind {
        SubscriptionKind::Names => names_list(&option, value, &s.kind).map(Subscription::Names),
        SubscriptionKind::Pattern => match value.as_str() {
            Some(p) if !p.trim().is_empty() => Ok(Subscription::Pattern(p.to_string())),
            _ => Err(invalid(
                &option,
                format!("option '{option}' must be a non-empty regular expression (\"orders-.*\")"),
            )),
        },
        SubscriptionKind::Assign => assignment(&option, value).map(Subscription::Assign),
    }
}

fn names_list(option: &str, value: &serde_json::Value, kind: &str) -> Result<Vec<String>> {
    let bad = || {
        invalid(
            option,
            format!("option '{option}' must be a list of names ([\"a\", \"b\"])"),
        )
    };
    let names = value
        .as_array()
        .ok_or_else(bad)?
        .iter()
        .map(|v| v.as_str().map(str::to_string))
        .collect::<Option<Vec<_>>>()
        .ok_or_else(bad)?;
    if names.is_empty() {
        return Err(Error::new(
            ErrorCode::MissingOption,
            format!("option '{option}' is required: the {kind} source reads at least one"),
        )
        .with_context("option", option));
    }
    if let Some(bad) = names.iter().find(|n| !is_name(n)) {
        return Err(invalid(
            option,
            format!("option '{option}': '{bad}' is not a name (empty, or holds ',' or spaces)"),
        ));
    }
    Ok(names)
}

fn is_name(n: &str) -> bool {
    !(n.trim().is_empty() || n.contains(',') || n.contains(char::is_whitespace))
}

fn assignment(
    option: &str,
    value: &serde_json::Value,
) -> Result<std::collections::BTreeMap<String, Vec<u32>>> {
    let bad = |why: &str| {
        invalid(
            option,
            format!("option '{option}' must be a table of names to partition numbers ({{ orders = [0, 1] }}): {why}"),
        )
    };
    let table = value.as_object().ok_or_else(|| bad("it is not a table"))?;
    if table.is_empty() {
        return Err(bad("it is empty"));
    }
    let mut out = std::collections::BTreeMap::new();
    for (name, parts) in table {
        if !is_name(name) {
            return Err(bad(&format!("'{name}' is not a name")));
        }
        let parts = parts
            .as_array()
            .filter(|a| !a.is_empty())
            .ok_or_else(|| bad(&format!("'{name}' needs a non-empty list of partitions")))?
            .iter()
            .map(|p| p.as_u64().and_then(|p| u32::try_from(p).ok()))
            .collect::<Option<Vec<u32>>>()
            .ok_or_else(|| bad(&format!("the partitions of '{name}' are not numbers >= 0")))?;
        out.insert(name.clone(), parts);
    }
    Ok(out)
}

/// The ingestion table's top-level columns: key, value, time, record source, then the
/// connector's metadata columns.
pub fn ingestion_columns(binding: &dyn StreamBinding) -> Vec<String> {
    ["key", "value", STREAM_RECORD_TIMESTAMP, RECORD_SOURCE]
        .into_iter()
        .map(str::to_string)
        .chain(binding.metadata_columns().into_iter().map(|c| c.column))
        .collect()
}

/// The checks that need the binding: the names, options the stream sets itself, the key
/// schema, the deduplication columns.
pub fn check_bound(spec: &StreamSpec, binding: &dyn StreamBinding) -> Result<()> {
    subscription(spec, binding)?;
    let owned = binding.owned_options();
    for key in spec
        .source
        .options
        .keys()
        .chain(spec.connection.options.keys())
    {
        if let Some((option, by)) = owned.iter().find(|(o, _)| o.eq_ignore_ascii_case(key)) {
            return Err(conflicting(
                option,
                by,
                &format!(
                    "is set by the stream itself: it reads its {} from its creation time on",
                    binding.names_field()
                ),
            ));
        }
    }
    if let (Some(reason), Some(_)) = (binding.key_schema_refused(), &spec.schema.key) {
        return Err(invalid(
            "schema.key",
            format!(
                "[schema.key] does not apply to a {} stream: {reason}",
                spec.source.kind
            ),
        ));
    }
    let columns = ingestion_columns(binding);
    for path in &spec.ingestion.deduplication_columns {
        let head = path.split('.').next().unwrap_or_default();
        if path.split('.').any(str::is_empty) || !columns.iter().any(|c| c == head) {
            return Err(invalid(
                "ingestion.deduplication_columns",
                format!(
                    "deduplication column '{path}' is not a dot path into the ingestion table's columns ({})",
                    columns.join(", ")
                ),
            ));
        }
        if head != "key" && head != "value" && path.contains('.') {
            return Err(invalid(
                "ingestion.deduplication_columns",
                format!("deduplication column '{path}': only key and value have nested fields"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::or_list;

    #[test]
    fn or_lists_read_as_prose() {
        let s = |v: &[&str]| or_list(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(s(&[]), "none");
        assert_eq!(s(&["a"]), "a");
        assert_eq!(s(&["a", "b"]), "a or b");
        assert_eq!(s(&["a", "b", "c"]), "a, b or c");
    }
}
