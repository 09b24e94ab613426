//! The options of the files source, each declared once: names and [`OptionSpec`]s.
//!
//! Option names follow Databricks Auto Loader (`cloudFiles.*`) and Spark's file sources
//! (`pathGlobFilter`, `mode`, `header`, `sep`, `ignoreMissingFiles`). [`option_specs`] is the
//! single declaration: documentation, validation, defaults and "did you mean" hints all come
//! from it; the parser ([`super::FilesConfig::parse`]) reads the defaults from it too.

use tributary_sdk::OptionSpec;

use super::names;
use crate::columns::RESCUED_DATA_COLUMN;

/// Every option the files source accepts.
pub fn option_specs() -> Vec<OptionSpec> {
    use names::*;
    vec![
        OptionSpec::string(
            PATH,
            "Directory to ingest (recursively), a single file, or a glob such as /data/*/*.json: \
             a local path or file:// URL, or an object-store URL (s3://bucket/prefix, \
             gs://bucket/prefix, abfss://container@account.dfs.core.windows.net/prefix, \
             az://container/prefix).",
        )
        .required(),
        OptionSpec::one_of(FORMAT, crate::format::kind::Format::NAMES, "File format: json (JSON lines), csv, parquet, avro, text (one row per line) or binaryFile (one row per file).")
            .required(),
        OptionSpec::string(
            SCHEMA,
            "Schema as a Spark DDL string, e.g. 'id BIGINT, name STRING, ts TIMESTAMP'. \
             Without it the schema is inferred from the first files and kept in the checkpoint.",
        ),
        OptionSpec::bool(
            INFER_COLUMN_TYPES,
            "JSON and CSV with an inferred schema: infer column types; when false (the default) \
             inferred columns are strings.",
        )
        .default_value(false),
        OptionSpec::int(SAMPLE_FILES, 1, i64::MAX, "How many files schema inference reads at most (without the 'schema' option).")
            .default_value(10),
        OptionSpec::int(
            SAMPLE_RECORDS,
            1,
            i64::MAX,
            "JSON and CSV without the 'schema' option: how many records (JSON lines or CSV rows) \
             schema inference reads at most, over all sampled files.",
        )
        .default_value(1000),
        OptionSpec::string(
            PATH_GLOB_FILTER,
            "Only ingest files whose name matches this glob, e.g. *.json.",
        ),
        OptionSpec::bool(
            INCLUDE_EXISTING,
            "Ingest the files present when the stream first starts; false ingests only files that arrive later.",
        )
        .default_value(true),
        OptionSpec::bool(
            ALLOW_OVERWRITES,
            "Ingest a file again when its modification time changes; by default a path is ingested once.",
        )
        .default_value(false),
        OptionSpec::int(MAX_FILES, 1, i64::MAX, "Most files per micro-batch (a hard limit).")
            .default_value(1000),
        OptionSpec::bytes(
            MAX_BYTES,
            "About this many bytes per micro-batch, e.g. 10g (a soft limit: at least one file is always taken).",
        ),
        OptionSpec::duration(
            MAX_FILE_AGE,
            "Ignore files whose modification time is older than this (e.g. 90 days; at least 14 \
             days, as in Auto Loader), and forget their file-state entries once their batch \
             committed, so the state stays bounded (a file that old is not listed again). \
             Default: none (files are tracked forever).",
        ),
        OptionSpec::one_of(
            MODE,
            &["PERMISSIVE", "FAILFAST", "DROPMALFORMED"],
            "JSON and CSV: PERMISSIVE turns a malformed record into nulls with its text in the \
             rescued data column and counts it; FAILFAST stops with MALFORMED_RECORD naming file and line. \
             DROPMALFORMED is refused (see its message).",
        )
        .default_value("PERMISSIVE"),
        OptionSpec::string(
            RESCUED,
            "Name of the column that receives records and values that do not fit the schema (JSON and CSV).",
        )
        .default_value(RESCUED_DATA_COLUMN),
        OptionSpec::one_of(
            CLEAN_SOURCE,
            &["OFF", "DELETE", "MOVE"],
            "What happens to a file once its batch committed and the retention passed: OFF \
             (kept), DELETE, or MOVE to cloudFiles.cleanSource.moveDestination.",
        )
        .default_value("OFF"),
        OptionSpec::string(
            CLEAN_MOVE_DESTINATION,
            "MOVE: the directory files move to (their path under the source directory is kept); \
             must not be inside the source path.",
        ),
        OptionSpec::duration(
            CLEAN_RETENTION,
            "With cloudFiles.cleanSource DELETE or MOVE: how long after its batch committed a \
             file is cleaned.",
        )
        .default_value("30 days"),
        OptionSpec::string(
            SCHEMA_HINTS,
            "Types for some columns of an inferred schema, as DDL (`id BIGINT, ts TIMESTAMP`): \
             a hinted column gets that type, a hinted column the sample lacks is added. Applied \
             when the schema is inferred (the first run); the stored schema keeps them.",
        ),
        OptionSpec::one_of(
            SCHEMA_EVOLUTION_MODE,
            &["addNewColumns", "rescue", "failOnNewColumns", "none"],
            "JSON and Parquet: what a column that is not in the schema does. addNewColumns \
             (default with an inferred schema): the stream stops with UNKNOWN_FIELD_EXCEPTION \
             after adding the columns to the stored schema, and a restart reads them; rescue \
             (JSON; default with a given schema): the values go to the rescued data column; \
             failOnNewColumns: the stream stops and the schema is kept; none (Parquet's default \
             with a given schema): the values are dropped.",
        ),
        OptionSpec::bool(
            MULTI_LINE,
            "JSON: each file is one JSON document spanning lines (an object, or an array whose \
             elements are the rows) instead of one object per line.",
        )
        .default_value(false),
        OptionSpec::bool(
            IGNORE_MISSING,
            "Skip (and count) a file that vanished between discovery and reading instead of failing \
             with CLOUD_FILES_FILE_NOT_FOUND.",
        )
        .default_value(false),
    ]
    .into_iter()
    .chain(cloud_option_specs())
    .chain(super::reader::specs())
    .chain(super::autoloader::specs())
    .chain(crate::format::options::specs())
    .collect()
}

/// The options of object-store access (credentials as `{{secrets/scope/key}}` references or
/// literal values, never printed). Names are those Databricks documents for Auto Loader
/// (`cloudFiles.awsAccessKey`, `cloudFiles.connectionString`, `cloudFiles.clientEmail`, ...);
/// without them each cloud's standard credential chain is used.
fn cloud_option_specs() -> Vec<OptionSpec> {
    use names::*;
    vec![
        OptionSpec::one_of(
            USE_INCREMENTAL_LISTING,
            &["auto", "true", "false"],
            "Object stores: list only the keys after the last one seen (file names arriving in \
             lexical order), with a full listing after every 7 incremental ones. auto (default) \
             turns it on while the new files of each full listing sort after every file seen \
             before; local directories are always listed in full under auto.",
        )
        .default_value("auto"),
        OptionSpec::bool(
            USE_NOTIFICATIONS,
            "Discover new files from change notifications instead of listing the input at each \
             trigger: S3 event notifications read from the SQS queue cloudFiles.queueUrl (without \
             it the source creates the queue tributary-<checkpointId>, its policy and the \
             bucket's s3:ObjectCreated:* notification, and reuses them on restart; remove them \
             with `tributary connector files notifications teardown`), Azure Blob events from \
             the Storage queue cloudFiles.queueName, local directories \
             through inotify. The input is listed once on the first run (and at \
             each start for local directories); cloudFiles.backfillInterval adds periodic full \
             listings.",
        )
        .default_value(false),
        OptionSpec::string(
            QUEUE_NAME,
            "With cloudFiles.useNotifications on Azure paths: the Storage queue (of the account \
             in cloudFiles.connectionString) to which an Event Grid subscription delivers the \
             account's Microsoft.Storage.BlobCreated events.",
        ),
        OptionSpec::string(
            RESOURCE_GROUP,
            "Azure: the resource group for automatic Event Grid setup. Not supported in this \
             build (refused): give cloudFiles.queueName instead.",
        ),
        OptionSpec::string(
            SUBSCRIPTION_ID,
            "Azure: the subscription for automatic Event Grid setup. Not supported in this \
             build (refused): give cloudFiles.queueName instead.",
        ),
        OptionSpec::string(
            QUEUE_URL,
            "With cloudFiles.useNotifications on s3:// paths: the URL of the SQS queue that \
             receives the bucket's s3:ObjectCreated:* event notifications (an existing queue; \
             without this option the source sets one up).",
        ),
        OptionSpec::duration(
            BACKFILL_INTERVAL,
            "Also run a full listing in the background at this interval (e.g. 1 day), finding \
             files that incremental listing or notifications missed; never a duplicate.",
        ),
        OptionSpec::string(
            ENDPOINT,
            "Object-store endpoint URL, for S3-compatible stores and emulators (e.g. \
             http://127.0.0.1:9000); for Azure the Blob endpoint including the account.",
        ),
        OptionSpec::string(
            REGION,
            "S3: the bucket's region (default: from the AWS configuration, else us-east-1).",
        ),
        OptionSpec::string(
            AWS_ACCESS_KEY,
            "S3: AWS access key id (with cloudFiles.awsSecretKey); default: the AWS credential \
             chain (environment, profile, web identity, container, instance metadata).",
        )
        .sensitive(),
        OptionSpec::string(
            AWS_SECRET_KEY,
            "S3: AWS secret access key (with cloudFiles.awsAccessKey).",
        )
        .sensitive(),
        OptionSpec::string(
            ROLE_ARN,
            "S3: an IAM role to assume with the credentials found.",
        ),
        OptionSpec::string(
            ROLE_EXTERNAL_ID,
            "S3: external id when assuming cloudFiles.roleArn.",
        ),
        OptionSpec::string(
            ROLE_SESSION_NAME,
            "S3: session name when assuming cloudFiles.roleArn.",
        ),
        OptionSpec::string(
            STS_ENDPOINT,
            "S3: the STS endpoint used to assume cloudFiles.roleArn.",
        ),
        OptionSpec::string(
            CONNECTION_STRING,
            "Azure: a storage account connection string (AccountName, AccountKey or \
             SharedAccessSignature, BlobEndpoint, QueueEndpoint).",
        )
        .sensitive(),
        OptionSpec::string(
            CLIENT_ID,
            "Azure: service principal (application) id, with clientSecret and tenantId.",
        ),
        OptionSpec::string(CLIENT_SECRET, "Azure: service principal secret.").sensitive(),
        OptionSpec::string(TENANT_ID, "Azure: the service principal's tenant id."),
        OptionSpec::string(
            CLIENT_EMAIL,
            "GCS: service account e-mail, with privateKey and privateKeyId.",
        ),
        OptionSpec::string(PRIVATE_KEY, "GCS: the service account's private key (PEM).")
            .sensitive(),
        OptionSpec::string(PRIVATE_KEY_ID, "GCS: the service account's private key id.")
            .sensitive(),
    ]
}
