//! Amazon Kinesis Data Streams for Tributary: a polling and enhanced fan-out source, a sink and
//! the consumer manager, with the option names of the Databricks Kinesis connector.
