//! Throttling: kinesis-mock does not enforce the GetRecords rate, so an SDK interceptor (an
//! injected fault, the only mock here) answers the first two GetRecords calls with
//! `ProvisionedThroughputExceededException` (HTTP 400, the service's JSON error). The source must
//! log exactly "Hit rate limit. Sleeping for 5 seconds.", halve its fetch size on each, then grow
//! it back, and lose nothing.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aws_sdk_kinesis::config::interceptors::{
    BeforeDeserializationInterceptorContextMut, BeforeTransmitInterceptorContextRef,
};
use aws_sdk_kinesis::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_smithy_types::body::SdkBody;
use common::*;
use tributary_kinesis::config::{source_option_specs, SourceConfig};
use tributary_kinesis::KinesisSource;
use tributary_sdk::{ConnectorContext, OptionSpec, Source, SourceIdentity};

#[derive(Debug, Default)]
struct Throttle {
    /// Limit of every GetRecords call, and whether it was throttled.
    calls: Mutex<Vec<(i64, bool)>>,
    throttle_next: Mutex<bool>,
}

#[derive(Debug, Clone)]
struct ThrottleFirstTwo(Arc<Throttle>);

impl Intercept for ThrottleFirstTwo {
    fn name(&self) -> &'static str {
        "ThrottleFirstTwo"
    }

    fn read_before_transmit(
        &self,
        ctx: &BeforeTransmitInterceptorContextRef<'_>,
        _: &RuntimeComponents,
        _: &mut ConfigBag,
    ) -> Result<(), aws_sdk_kinesis::error::BoxError> {
        let req = ctx.request();
        if req.headers().get("x-amz-target") == Some("Kinesis_20131202.GetRecords") {
            let body: serde_json::Value =
                serde_json::from_slice(req.body().bytes().unwrap()).unwrap();
            let mut calls = self.0.calls.lock().unwrap();
            let throttle = calls.len() < 2;
            calls.push((body["Limit"].as_i64().unwrap(), throttle));
            *self.0.throttle_next.lock().unwrap() = throttle;
        }
        Ok(())
    }

    fn modify_before_deserialization(
        &self,
        ctx: &mut BeforeDeserializationInterceptorContextMut<'_>,
        _: &RuntimeComponents,
        _: &mut ConfigBag,
    ) -> Result<(), aws_sdk_kinesis::error::BoxError> {
        let mut flag = self.0.throttle_next.lock().unwrap();
        if *flag {
            *flag = false;
            let resp = ctx.response_mut();
            *resp.status_mut() = 400u16.try_into().unwrap();
            resp.headers_mut()
                .insert("content-type", "application/x-amz-json-1.1");
            *resp.body_mut() = SdkBody::from(
                r#"{"__type":"ProvisionedThroughputExceededException","message":"Rate exceeded for shard"}"#,
            );
        }
        Ok(())
    }
}

#[tokio::test]
async fn throughput_exceeded_halves_the_fetch_size_logs_and_grows_back() {
    if !available(Server::Mock) {
        return;
    }
    let (log, _guard) = capture_logs(tracing::Level::WARN);

    let raw = raw_client(Server::Mock).await;
    let stream = create_stream(&raw, "throttle", 1).await;
    let sent = values("t", 20);
    put(&raw, &stream, "k", &sent).await;

    let options = source_options(
        Server::Mock,
        &stream,
        &[("maxRecordsPerFetch", "8"), ("minFetchPeriod", "0")],
    );
    let parsed = OptionSpec::validate_all(&source_option_specs(), &options, "kinesis").unwrap();
    let config = SourceConfig::parse(&parsed).unwrap();
    let state = Arc::new(Throttle::default());
    let conf = raw
        .config()
        .to_builder()
        .interceptor(ThrottleFirstTwo(state.clone()))
        .build();
    let client = aws_sdk_kinesis::Client::from_conf(conf);
    let identity = SourceIdentity {
        connector: "kinesis".into(),
        target: "test".into(),
    };
    let context = ConnectorContext::default();
    let mut source =
        KinesisSource::new(config, identity, context.secrets.clone(), &context).with_client(client);

    let started = Instant::now();
    let start = source.initial_offset().await.unwrap();
    let (batches, _) = drain(&mut source, start, 20, Duration::from_secs(60)).await;
    assert_eq!(data(&batches), sent, "nothing lost or duplicated");
    assert!(
        started.elapsed() >= Duration::from_secs(10),
        "two 5 s pauses"
    );

    let calls = state.calls.lock().unwrap().clone();
    let limits: Vec<i64> = calls.iter().map(|c| c.0).collect();
    assert_eq!(
        &limits[..5],
        &[8, 4, 2, 4, 8],
        "halved twice, then grown back: {calls:?}"
    );
    let text = String::from_utf8(log.0.lock().unwrap().clone()).unwrap();
    assert_eq!(
        text.matches("Hit rate limit. Sleeping for 5 seconds.")
            .count(),
        2,
        "{text}"
    );
    assert_eq!(source.metrics()["numThrottled"], 2);
}
