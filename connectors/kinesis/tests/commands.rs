//! `tributary connector kinesis consumers ...` against kinesis-mock: register, list shows the
//! consumer, the leak report names it, deregister, list is empty; a bad argument prints usage.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::*;
use tributary_sdk::typed::SourceConnector;
use tributary_sdk::{EnvSecretStore, ErrorCode};

fn lines(out: &str) -> Vec<serde_json::Value> {
    out.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test]
async fn consumers_register_list_deregister_through_the_connector_command() {
    if !available(Server::Mock) {
        return;
    }
    let client = raw_client(Server::Mock).await;
    let stream = create_stream(&client, "cmd", 1).await;
    let commands = tributary_kinesis::KinesisSourceFactory.commands();
    let cmd = commands
        .iter()
        .find(|c| c.name() == "consumers")
        .expect("the kinesis connector offers `consumers`");
    // The secret key goes in as a secret reference, resolved by the store the CLI passes.
    std::env::set_var("TRIBUTARY_TEST_CMD_SECRET", "test-secret");
    let base: Vec<String> = [
        "--streamName",
        &stream,
        "--endpoint",
        &endpoint(Server::Mock),
        "--region",
        "us-east-1",
        "--awsAccessKey",
        "AKIDTEST",
        "--awsSecretKey",
        "{{secrets/env/TRIBUTARY_TEST_CMD_SECRET}}",
        "--option",
        &format!("tls.truststore.location={}", ca()),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let secrets: Arc<dyn tributary_sdk::SecretStore> = Arc::new(EnvSecretStore);
    let run = |action: &[&str]| {
        let mut args: Vec<String> = vec![action[0].to_string()];
        args.extend(base.iter().cloned());
        args.extend(action[1..].iter().map(|s| s.to_string()));
        let (cmd, secrets) = (Arc::clone(cmd), Arc::clone(&secrets));
        async move { cmd.run(&args, secrets).await }
    };

    assert!(lines(&run(&["list"]).await.unwrap()).is_empty());
    let reg = lines(
        &run(&["register", "--consumerName", "cmdtest_a"])
            .await
            .unwrap(),
    );
    assert_eq!(reg.len(), 1);
    assert_eq!(reg[0]["consumerName"], "cmdtest_a");
    assert_eq!(reg[0]["consumerStatus"], "ACTIVE");
    let arn = reg[0]["consumerARN"].as_str().unwrap().to_string();

    let listed = lines(&run(&["list"]).await.unwrap());
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["consumerARN"], arn.as_str());
    assert_eq!(listed[0]["stream"], stream.as_str());
    // The leak report: no running pipeline owns it, unless one is named.
    let leaked = lines(
        &run(&["list", "--orphaned", "--consumerNamePrefix", "cmdtest_"])
            .await
            .unwrap(),
    );
    assert_eq!(leaked.len(), 1);
    assert_eq!(leaked[0]["consumerName"], "cmdtest_a");
    let owned = run(&[
        "list",
        "--orphaned",
        "--consumerNamePrefix",
        "cmdtest_",
        "--owner",
        "a",
    ])
    .await
    .unwrap();
    assert!(lines(&owned).is_empty(), "{owned}");

    let dereg = lines(
        &run(&["deregister", "--consumerName", "cmdtest_a"])
            .await
            .unwrap(),
    );
    assert_eq!(dereg.len(), 1);
    assert_eq!(dereg[0]["deregistered"], true);
    assert_eq!(dereg[0]["consumerARN"], arn.as_str());
    assert!(
        lines(&run(&["list"]).await.unwrap()).is_empty(),
        "gone after deregister"
    );
    let again = lines(
        &run(&["deregister", "--consumerName", "cmdtest_a"])
            .await
            .unwrap(),
    );
    assert_eq!(again[0]["deregistered"], false);

    // Bad arguments: usage, or the option specs' own errors.
    let e = run(&["frobnicate"]).await.unwrap_err();
    assert!(e.to_string().contains(&cmd.usage()), "{e}");
    let e = run(&["register"]).await.unwrap_err();
    assert!(e.to_string().contains("needs --consumerName"), "{e}");
    let e = run(&["list", "--regoin", "x"]).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::UnknownOption);
    assert!(!e.to_string().contains("test-secret"));
    assert!(run(&["--help"]).await.unwrap().contains("usage:"));
    let _ = client.delete_stream().stream_name(&stream).send().await;
}
