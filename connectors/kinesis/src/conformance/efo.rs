//! The EFO parts of the Kinesis conformance fixture: the options of an [`EfoSetup`], the
//! server's description of a consumer, and the leak report read from the source's metrics
//! (`efo.leakedConsumers`).

use aws_sdk_kinesis::Client;
use tributary_conformance::fixture::{EfoConsumer, EfoSetup};
use tributary_sdk::{Error, ErrorCode, Options, Result, SourceMetrics};

use crate::efo::consumers;

/// Sets the EFO options of a read.
pub(crate) fn efo_options(efo: &EfoSetup, o: &mut Options) {
    o.set("consumerMode", "efo");
    match &efo.prefix {
        Some(p) => o.set("consumerNamePrefix", p),
        None => o.set("consumerName", &efo.consumer_name),
    };
    o.set(
        "requireConsumerDeregistration",
        efo.deregister_on_stop.to_string(),
    );
}

/// The consumer `name` of stream `target`, as kinesis-mock describes it.
pub(crate) async fn describe(
    client: &Client,
    target: &str,
    name: &str,
) -> Result<Option<EfoConsumer>> {
    let arn = consumers::stream_arn(client, &consumers::stream_ref(target)).await?;
    Ok(consumers::describe(client, &arn, name)
        .await?
        .map(|c| EfoConsumer {
            active: c.is_active(),
            name: c.name,
            id: c.arn,
            created_ms: c.created_ms,
        }))
}

/// The names in the source's `efo.leakedConsumers` metric.
pub(crate) fn leak_report(metrics: &SourceMetrics) -> Result<Vec<String>> {
    let v = metrics.get("efo.leakedConsumers").ok_or_else(|| {
        Error::new(
            ErrorCode::Internal,
            "the source has no efo.leakedConsumers metric (not an EFO source?)",
        )
    })?;
    serde_json::from_value(v.clone()).map_err(|e| {
        Error::new(
            ErrorCode::Internal,
            "efo.leakedConsumers is not a list of names",
        )
        .with_cause(e)
    })
}
