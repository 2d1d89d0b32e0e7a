//! `--call`, `--proto`, `--data` and `--metadata`: what each call is, resolved against the
//! server's reflection or the given descriptors.

use std::io::Read as _;
use std::path::PathBuf;

use lblab_loadgen::method::{self, Call};

use lblab_lab::{Context, LabError, Result};

/// What each call sends.
#[derive(Debug, clap::Args)]
pub struct Calls {
    /// The method to call, package.Service/Method, unary or server-streaming [default: lblab's
    /// Echo/Unary, which carries the scenario's backend behaviour].
    #[arg(long, value_name = "METHOD")]
    pub call: Option<String>,
    /// The request message as JSON (protobuf's JSON mapping), checked against the schema; a
    /// JSON array is a list of messages sent in turn; @ reads it from stdin.
    #[arg(short = 'd', long, value_name = "JSON", conflicts_with = "data_file")]
    pub data: Option<String>,
    /// A file holding the request message (or array of messages) as JSON.
    #[arg(short = 'D', long, value_name = "FILE")]
    pub data_file: Option<PathBuf>,
    /// .proto file with the method's service (repeatable) [default: ask the server by
    /// reflection, grpc.reflection.v1 or v1alpha].
    #[arg(long = "proto", value_name = "FILE", conflicts_with = "protoset")]
    pub protos: Vec<PathBuf>,
    /// A compiled FileDescriptorSet with the method's service and its imports (protoc
    /// --include_imports --descriptor_set_out).
    #[arg(long, value_name = "FILE")]
    pub protoset: Option<PathBuf>,
    /// Where imports of --proto files are found besides each file's own folder (repeatable, or
    /// comma-separated).
    #[arg(
        short = 'i',
        long = "import-path",
        visible_alias = "import-paths",
        value_name = "DIR",
        value_delimiter = ','
    )]
    pub import_paths: Vec<PathBuf>,
    /// Metadata sent with every call: key:value, or a JSON object of keys and values as ghz's
    /// -m (repeatable; a key ending in -bin takes base64).
    #[arg(
        short = 'H',
        visible_short_alias = 'm',
        long = "metadata",
        value_name = "KEY:VALUE"
    )]
    pub metadata: Vec<String>,
    /// A file holding metadata as a JSON object of keys and values.
    #[arg(short = 'M', long, value_name = "FILE")]
    pub metadata_file: Option<PathBuf>,
}

impl Calls {
    /// The request's JSON: `--data` (`@`: stdin), or the contents of `--data-file`.
    pub fn request_json(&self) -> Result<Option<String>> {
        match (&self.data, &self.data_file) {
            (Some(d), _) if d.trim() == "@" => {
                let mut text = String::new();
                std::io::stdin()
                    .take(lblab_record::MAX_RESULT_FILE)
                    .read_to_string(&mut text)
                    .context("--data @: reading the request from stdin")?;
                Ok(Some(text))
            }
            (Some(d), _) => Ok(Some(d.clone())),
            (None, Some(path)) => {
                let text = lblab_record::read_result_file(path)
                    .with_context(|| format!("--data-file {}", path.display()))?;
                Ok(Some(text))
            }
            (None, None) => Ok(None),
        }
    }

    /// The metadata of `--metadata` and `--metadata-file`.
    pub fn metadata(&self) -> Result<tonic::metadata::MetadataMap> {
        let mut entries = self.metadata.clone();
        if let Some(path) = &self.metadata_file {
            let text = lblab_record::read_result_file(path)
                .with_context(|| format!("--metadata-file {}", path.display()))?;
            entries.push(text);
        }
        lblab_loadgen::metadata::parse(&entries).context("--metadata")
    }

    /// Refuses request flags without `--call`.
    pub fn check(&self, data: Option<&str>) -> Result<()> {
        if self.call.is_some() {
            return Ok(());
        }
        let misplaced = [
            ("--data", data.is_some()),
            ("--proto", !self.protos.is_empty()),
            ("--protoset", self.protoset.is_some()),
            ("--import-path", !self.import_paths.is_empty()),
        ];
        if let Some((flag, _)) = misplaced.iter().find(|(_, given)| *given) {
            return Err(LabError::Message(format!(
                "{flag} describes the request of --call, which is not given"
            )));
        }
        Ok(())
    }

    /// The method and its requests from `--proto` or `--protoset`, when given; `None` when the
    /// schema is to be asked by reflection.
    pub fn schema_files_call(&self, name: &str, data: Option<&str>) -> Result<Option<Call>> {
        let pool = if let Some(set) = &self.protoset {
            method::pool_from_protoset(set).context("--protoset")?
        } else if !self.protos.is_empty() {
            method::pool_from_protos(&self.protos, &self.import_paths).context("--proto")?
        } else {
            return Ok(None);
        };
        resolve(&pool, name, data).map(Some)
    }
}

/// The first of ghz's call templates (`{{.RequestNumber}}`, `{{newUUID}}`, ...) in `text`, if any.
pub(super) fn ghz_template(text: &str) -> Option<&str> {
    let start = text.find("{{")?;
    let len = text[start..].find("}}")? + 2;
    let inner = text[start + 2..start + len - 2].trim();
    let ghz = inner.starts_with('.')
        || ["newUUID", "randomString", "randomInt"]
            .iter()
            .any(|f| inner.starts_with(f));
    ghz.then(|| &text[start..start + len])
}

/// `method::resolve` with the flag of each error.
pub fn resolve(pool: &method::DescriptorPool, name: &str, data: Option<&str>) -> Result<Call> {
    use method::MethodError as E;
    method::resolve(pool, name, data).map_err(|e| {
        let flag = match &e {
            E::Json { .. } | E::NoRequests | E::Mismatch { .. } => "--data",
            _ => "--call",
        };
        LabError::Context {
            context: flag.into(),
            source: Box::new(e),
        }
    })
}
