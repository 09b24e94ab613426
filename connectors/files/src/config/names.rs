//! Option names of the files source (the spelling used in documentation; matching is
//! case-insensitive). A leaf module: every part of the crate names options through it.

/// Directory, file or glob to ingest.
pub const PATH: &str = "path";
/// File format.
pub const FORMAT: &str = "cloudFiles.format";
/// Spark DDL schema.
pub const SCHEMA: &str = "schema";
/// Infer typed columns for JSON/CSV.
pub const INFER_COLUMN_TYPES: &str = "cloudFiles.inferColumnTypes";
/// Files sampled for inference.
pub const SAMPLE_FILES: &str = "cloudFiles.schemaInference.sampleSize.numFiles";
/// Records sampled for inference.
pub const SAMPLE_RECORDS: &str = "cloudFiles.schemaInference.sampleSize.numRecords";
/// Glob on file names.
pub const PATH_GLOB_FILTER: &str = "pathGlobFilter";
/// Ingest files present at the first listing.
pub const INCLUDE_EXISTING: &str = "cloudFiles.includeExistingFiles";
/// Re-ingest files whose modification time changed.
pub const ALLOW_OVERWRITES: &str = "cloudFiles.allowOverwrites";
/// Files per batch (hard).
pub const MAX_FILES: &str = "cloudFiles.maxFilesPerTrigger";
/// Bytes per batch (soft).
pub const MAX_BYTES: &str = "cloudFiles.maxBytesPerTrigger";
/// Oldest file considered.
pub const MAX_FILE_AGE: &str = "cloudFiles.maxFileAge";
/// PERMISSIVE or FAILFAST.
pub const MODE: &str = "mode";
/// Name of the rescued data column.
pub const RESCUED: &str = "rescuedDataColumn";
/// CSV header line.
pub const HEADER: &str = "header";
/// CSV separator.
pub const SEP: &str = "sep";
/// CSV separator (alias of `sep`).
pub const DELIMITER: &str = "delimiter";
/// Skip files that vanished between discovery and read.
pub const IGNORE_MISSING: &str = "ignoreMissingFiles";
/// JSON: each file is one document (an object, or an array of objects).
pub const MULTI_LINE: &str = "multiLine";
/// What new columns in the data do.
pub const SCHEMA_EVOLUTION_MODE: &str = "cloudFiles.schemaEvolutionMode";
/// Types for some columns of an inferred schema (DDL).
pub const SCHEMA_HINTS: &str = "cloudFiles.schemaHints";
/// What happens to ingested files: OFF, DELETE or MOVE.
pub const CLEAN_SOURCE: &str = "cloudFiles.cleanSource";
/// Where MOVE puts them.
pub const CLEAN_MOVE_DESTINATION: &str = "cloudFiles.cleanSource.moveDestination";
/// How long after its batch committed a file is cleaned.
pub const CLEAN_RETENTION: &str = "cloudFiles.cleanSource.retentionDuration";
/// Incremental (lexical `start_after`) listing: auto, true or false.
pub const USE_INCREMENTAL_LISTING: &str = "cloudFiles.useIncrementalListing";
/// Interval of the asynchronous full (backfill) listing.
pub const BACKFILL_INTERVAL: &str = "cloudFiles.backfillInterval";
/// Discover files from change notifications instead of listings.
pub const USE_NOTIFICATIONS: &str = "cloudFiles.useNotifications";
/// The SQS queue receiving the bucket's event notifications.
pub const QUEUE_URL: &str = "cloudFiles.queueUrl";
/// The Azure Storage queue receiving the account's Blob events (Event Grid).
pub const QUEUE_NAME: &str = "cloudFiles.queueName";
/// Azure automatic notification setup: the resource group (refused: not supported).
pub const RESOURCE_GROUP: &str = "cloudFiles.resourceGroup";
/// Azure automatic notification setup: the subscription id (refused: not supported).
pub const SUBSCRIPTION_ID: &str = "cloudFiles.subscriptionId";
/// Object-store endpoint URL (S3-compatible stores, emulators).
pub const ENDPOINT: &str = "cloudFiles.endpoint";
/// Cloud region.
pub const REGION: &str = "cloudFiles.region";
/// AWS access key id.
pub const AWS_ACCESS_KEY: &str = "cloudFiles.awsAccessKey";
/// AWS secret access key.
pub const AWS_SECRET_KEY: &str = "cloudFiles.awsSecretKey";
/// IAM role to assume.
pub const ROLE_ARN: &str = "cloudFiles.roleArn";
/// External id for the role.
pub const ROLE_EXTERNAL_ID: &str = "cloudFiles.roleExternalId";
/// Session name for the role.
pub const ROLE_SESSION_NAME: &str = "cloudFiles.roleSessionName";
/// STS endpoint for the role.
pub const STS_ENDPOINT: &str = "cloudFiles.stsEndpoint";
/// Azure storage connection string.
pub const CONNECTION_STRING: &str = "cloudFiles.connectionString";
/// Azure service principal (application) id.
pub const CLIENT_ID: &str = "cloudFiles.clientId";
/// Azure service principal secret.
pub const CLIENT_SECRET: &str = "cloudFiles.clientSecret";
/// Azure tenant id.
pub const TENANT_ID: &str = "cloudFiles.tenantId";
/// GCP service account e-mail.
pub const CLIENT_EMAIL: &str = "cloudFiles.clientEmail";
/// GCP service account private key (PEM).
pub const PRIVATE_KEY: &str = "cloudFiles.privateKey";
/// GCP service account private key id.
pub const PRIVATE_KEY_ID: &str = "cloudFiles.privateKeyId";
/// Spark's file-source name of `cloudFiles.maxFilesPerTrigger`.
pub const SPARK_MAX_FILES: &str = "maxFilesPerTrigger";
/// Spark's file-source name of `cloudFiles.maxBytesPerTrigger`.
pub const SPARK_MAX_BYTES: &str = "maxBytesPerTrigger";
/// Hive-style partition columns taken from the directory names.
pub const PARTITION_COLUMNS: &str = "cloudFiles.partitionColumns";
/// Where the inferred schema and its evolution history are kept.
pub const SCHEMA_LOCATION: &str = "cloudFiles.schemaLocation";
/// Validate the options (always on here).
pub const VALIDATE_OPTIONS: &str = "cloudFiles.validateOptions";
/// Threads fetching messages from the notification queue.
pub const FETCH_PARALLELISM: &str = "cloudFiles.fetchParallelism";
/// Tags on the notification resources the source creates (a prefix: `cloudFiles.resourceTag.<key>`).
pub const RESOURCE_TAG: &str = "cloudFiles.resourceTag.";
/// JSON and CSV: the pattern of timestamp values.
pub const TIMESTAMP_FORMAT: &str = "timestampFormat";
/// JSON and CSV: the pattern of date values.
pub const DATE_FORMAT: &str = "dateFormat";
/// JSON: Java/C++ style comments are allowed.
pub const ALLOW_COMMENTS: &str = "allowComments";
/// JSON: infer every primitive value as a string.
pub const PRIMITIVES_AS_STRING: &str = "primitivesAsString";
/// CSV: the quote character.
pub const QUOTE: &str = "quote";
/// CSV: the character escaping a quote inside a quoted field.
pub const ESCAPE: &str = "escape";
/// CSV: the text of a null value.
pub const NULL_VALUE: &str = "nullValue";
/// CSV: lines starting with this character are skipped.
pub const COMMENT: &str = "comment";
/// JSON and CSV: the character set of the files.
pub const ENCODING: &str = "encoding";
/// Spark's alias of `encoding`.
pub const CHARSET: &str = "charset";
/// Spark's corrupt-record column (Auto Loader uses the rescued data column).
pub const CORRUPT_RECORD_COLUMN: &str = "columnNameOfCorruptRecord";
/// spark.read's inference switch (Auto Loader: `cloudFiles.inferColumnTypes`).
pub const INFER_SCHEMA: &str = "inferSchema";
