//! Any unary method of any gRPC service (`--call package.Service/Method`): its schema from the
//! server's reflection service or from `.proto` files, the request built once from JSON and
//! encoded, and a codec that sends those bytes on every call and takes the reply as bytes.
//!
//! The request is checked against the schema before any load is sent: a JSON field the message
//! does not have, or a value of the wrong type, is an error naming it. Replies are not decoded
//! (as in ghz: a load generator measures the call, not the payload), so the client's CPU per call
//! is the RPC stack's and the policy's.

use std::path::PathBuf;

use bytes::{Buf, BufMut, Bytes};
use prost::Message as _;
pub use prost_reflect::DescriptorPool;
use prost_reflect::{DynamicMessage, MethodDescriptor};
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};

/// Why a method or its request cannot be used. The messages name the method, message and field,
/// not the command-line flag that gave them: a caller adds that as context.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MethodError {
    /// Not `package.Service/Method`.
    #[error("{call:?}: expected package.Service/Method (e.g. helloworld.Greeter/SayHello)")]
    NotAMethodName {
        /// What was given.
        call: String,
    },
    /// The schema has no such service.
    #[error(
        "no service {service:?} in the schema; it has: {}",
        list_or(known, "no services")
    )]
    NoSuchService {
        /// The service asked for.
        service: String,
        /// The services there are.
        known: Vec<String>,
    },
    /// The service has no such method.
    #[error("service {service} has no method {method:?}; its methods: {}", known.join(", "))]
    NoSuchMethod {
        /// The service.
        service: String,
        /// The method asked for.
        method: String,
        /// Its methods.
        known: Vec<String>,
    },
    /// A client- or bidirectional-streaming method.
    #[error("{method} takes a stream of requests; lblab loadgen calls unary and server-streaming methods")]
    ClientStreaming {
        /// The method.
        method: String,
    },
    /// The request is not JSON.
    #[error("not valid JSON: {0}")]
    Json(#[source] serde_json::Error),
    /// An empty JSON array of requests.
    #[error("an empty JSON array: give at least one request message")]
    NoRequests,
    /// The request does not fit the method's input message.
    #[error(
        "{}does not fit {message} (the request of {method}):{} {source}",
        index.map(|i| format!("message {} of the array ", i + 1)).unwrap_or_default(),
        field.as_ref().map(|f| format!(" field {f}:")).unwrap_or_default()
    )]
    Mismatch {
        /// Which request of a list (0-based), when the requests were a list.
        index: Option<usize>,
        /// The input message's full name.
        message: String,
        /// The method.
        method: String,
        /// The field that can be blamed, if one can.
        field: Option<String>,
        /// What the decoder said.
        source: serde_json::Error,
    },
    /// `.proto` files that do not compile.
    #[error(transparent)]
    Compile(#[from] protox::Error),
    /// A protoset that does not decode.
    #[error(
        "{}: not a FileDescriptorSet with its imports (protoc --include_imports \
         --descriptor_set_out): {source}",
        file.display()
    )]
    Protoset {
        /// The file.
        file: PathBuf,
        /// The decoder's error.
        source: prost_reflect::DescriptorError,
    },
    /// Server reflection returned a file descriptor that does not decode.
    #[error("server reflection returned a file descriptor that does not decode: {0}")]
    ReflectedFile(#[source] prost::DecodeError),
    /// Server reflection returned files that do not make a schema.
    #[error("server reflection returned an incomplete or invalid schema: {0}")]
    ReflectedSchema(#[source] prost_reflect::DescriptorError),
    /// A protoset file that cannot be read.
    #[error("{}: {source}", file.display())]
    Read {
        /// The file.
        file: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// `items` joined by `, `, or `none` when there are none.
fn list_or(items: &[String], none: &str) -> String {
    if items.is_empty() {
        none.to_string()
    } else {
        items.join(", ")
    }
}

/// The method to call and the requests to send.
#[derive(Debug, Clone)]
pub struct Call {
    /// `/package.Service/Method`.
    pub path: http::uri::PathAndQuery,
    /// `package.Service/Method`, for messages.
    pub name: String,
    /// The request messages, encoded: calls send them in turn (round-robin), as ghz does with a
    /// JSON array.
    pub requests: Vec<Bytes>,
    /// Whether the server answers with a stream (read to its end; the call's latency is to the
    /// end of the stream).
    pub server_streaming: bool,
}

impl Call {
    /// The request of the `n`th call.
    pub fn request(&self, n: u64) -> Bytes {
        match self.requests.len() {
            0 => Bytes::new(),
            len => self.requests[(n % len as u64) as usize].clone(),
        }
    }

    /// How the requests read in a message: `a 12-byte request`, `3 requests of 10-14 bytes`.
    pub fn describe(&self) -> String {
        let sizes = self.requests.iter().map(Bytes::len);
        let (lo, hi) = (sizes.clone().min().unwrap_or(0), sizes.max().unwrap_or(0));
        let kind = if self.server_streaming {
            " (server-streaming)"
        } else {
            ""
        };
        match self.requests.len() {
            1 => format!("{}{kind} with a {lo}-byte request", self.name),
            n if lo == hi => format!(
                "{}{kind} with {n} requests of {lo} bytes in turn",
                self.name
            ),
            n => format!(
                "{}{kind} with {n} requests of {lo}-{hi} bytes in turn",
                self.name
            ),
        }
    }
}

/// Where a method's schema comes from.
#[derive(Debug, Clone)]
pub enum Schema {
    /// The server's reflection service (grpc.reflection.v1, else v1alpha).
    Reflection,
    /// `.proto` files compiled here (protox), with their import paths.
    Protos {
        /// The files.
        files: Vec<PathBuf>,
        /// Where imports are looked up besides the files' own folders.
        import_paths: Vec<PathBuf>,
    },
    /// A compiled `FileDescriptorSet` (`protoc --descriptor_set_out`, ghz's `--protoset`).
    Protoset(PathBuf),
}

/// Splits `package.Service/Method` (or `package.Service.Method`, as grpcurl also takes) into the
/// service's full name and the method's name.
pub fn split_call(call: &str) -> Result<(&str, &str), MethodError> {
    let call = call.trim_start_matches('/');
    call.rsplit_once('/')
        .or_else(|| call.rsplit_once('.'))
        .filter(|(s, m)| !s.is_empty() && !m.is_empty())
        .ok_or_else(|| MethodError::NotAMethodName {
            call: call.to_string(),
        })
}

/// Compiles `.proto` files into a descriptor pool. Imports are looked up in each file's own
/// folder and then in `import_paths` (as protoc's `-I`, they add to the folders, not replace
/// them).
pub fn pool_from_protos(
    files: &[PathBuf],
    import_paths: &[PathBuf],
) -> Result<DescriptorPool, MethodError> {
    let mut includes: Vec<PathBuf> = Vec::new();
    for f in files {
        let dir = f
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), PathBuf::from);
        if !includes.contains(&dir) {
            includes.push(dir);
        }
    }
    for p in import_paths {
        if !includes.contains(p) {
            includes.push(p.clone());
        }
    }
    let mut compiler = protox::Compiler::new(&includes)?;
    compiler.include_imports(true);
    for f in files {
        compiler.open_file(f)?;
    }
    Ok(compiler.descriptor_pool())
}

/// Reads a compiled `FileDescriptorSet` (`protoc --include_imports --descriptor_set_out=FILE`).
pub fn pool_from_protoset(file: &std::path::Path) -> Result<DescriptorPool, MethodError> {
    let bytes = std::fs::read(file).map_err(|source| MethodError::Read {
        file: file.to_path_buf(),
        source,
    })?;
    DescriptorPool::decode(bytes.as_slice()).map_err(|source| MethodError::Protoset {
        file: file.to_path_buf(),
        source,
    })
}

/// Adds serialized `FileDescriptorProto`s (as server reflection returns them) to a pool.
pub fn pool_from_files(files: Vec<Bytes>) -> Result<DescriptorPool, MethodError> {
    let protos = files
        .into_iter()
        .map(prost_types::FileDescriptorProto::decode)
        .collect::<Result<Vec<_>, _>>()
        .map_err(MethodError::ReflectedFile)?;
    let mut pool = DescriptorPool::new();
    pool.add_file_descriptor_protos(protos)
        .map_err(MethodError::ReflectedSchema)?;
    Ok(pool)
}

/// Finds the method `call` in `pool` (unary or server-streaming) and encodes the request `json`
/// (`{}` when `None`); a JSON array is a list of requests, sent in turn.
pub fn resolve(pool: &DescriptorPool, call: &str, json: Option<&str>) -> Result<Call, MethodError> {
    let method = find_method(pool, call)?;
    let (service, name) = (
        method.parent_service().full_name().to_string(),
        method.name(),
    );
    let full = format!("{service}/{name}");
    if method.is_client_streaming() {
        return Err(MethodError::ClientStreaming { method: full });
    }
    let input = method.input();
    let value: serde_json::Value =
        serde_json::from_str(json.unwrap_or("{}")).map_err(MethodError::Json)?;
    let (values, listed) = match value {
        serde_json::Value::Array(items) if items.is_empty() => return Err(MethodError::NoRequests),
        serde_json::Value::Array(items) => (items, true),
        one => (vec![one], false),
    };
    let mut requests = Vec::with_capacity(values.len());
    for (i, value) in values.iter().enumerate() {
        let message = DynamicMessage::deserialize(input.clone(), value).map_err(|source| {
            MethodError::Mismatch {
                index: listed.then_some(i),
                message: input.full_name().to_string(),
                method: full.clone(),
                field: blame(&input, value, ""),
                source,
            }
        })?;
        requests.push(message.encode_to_vec().into());
    }
    let path = format!("/{full}");
    Ok(Call {
        path: path.parse().map_err(|_| MethodError::NotAMethodName {
            call: call.to_string(),
        })?,
        name: full,
        requests,
        server_streaming: method.is_server_streaming(),
    })
}

/// The path of the first field of `value` that does not fit `desc` (`name`, `outer.inner`,
/// `list[2]`), found by trying the fields one at a time.
fn blame(
    desc: &prost_reflect::MessageDescriptor,
    value: &serde_json::Value,
    at: &str,
) -> Option<String> {
    let object = value.as_object()?;
    for (key, v) in object {
        let path = if at.is_empty() {
            key.clone()
        } else {
            format!("{at}.{key}")
        };
        let alone = serde_json::Value::Object([(key.clone(), v.clone())].into_iter().collect());
        if DynamicMessage::deserialize(desc.clone(), &alone).is_ok() {
            continue;
        }
        let field = desc
            .get_field_by_json_name(key)
            .or_else(|| desc.get_field_by_name(key));
        let inner = field.as_ref().and_then(|f| f.kind().as_message().cloned());
        if let Some(inner) = inner {
            match v {
                serde_json::Value::Array(items) => {
                    for (i, item) in items.iter().enumerate() {
                        let p = format!("{path}[{i}]");
                        if let Some(deeper) = blame(&inner, item, &p) {
                            return Some(deeper);
                        }
                    }
                }
                _ => {
                    if let Some(deeper) = blame(&inner, v, &path) {
                        return Some(deeper);
                    }
                }
            }
        }
        return Some(path);
    }
    None
}

fn find_method(pool: &DescriptorPool, call: &str) -> Result<MethodDescriptor, MethodError> {
    let (service, method) = split_call(call)?;
    let Some(svc) = pool.get_service_by_name(service) else {
        return Err(MethodError::NoSuchService {
            service: service.to_string(),
            known: pool.services().map(|s| s.full_name().to_string()).collect(),
        });
    };
    let found = svc.methods().find(|m| m.name() == method);
    found.ok_or_else(|| MethodError::NoSuchMethod {
        service: service.to_string(),
        method: method.to_string(),
        known: svc.methods().map(|m| m.name().to_string()).collect(),
    })
}

/// Sends pre-encoded request bytes and returns the reply's bytes undecoded.
#[derive(Debug, Clone, Copy, Default)]
pub struct RawCodec;

/// [`RawCodec`]'s encoder.
#[derive(Debug, Clone, Copy, Default)]
pub struct RawEncoder;

/// [`RawCodec`]'s decoder.
#[derive(Debug, Clone, Copy, Default)]
pub struct RawDecoder;

impl Codec for RawCodec {
    type Encode = Bytes;
    type Decode = Bytes;
    type Encoder = RawEncoder;
    type Decoder = RawDecoder;

    fn encoder(&mut self) -> RawEncoder {
        RawEncoder
    }

    fn decoder(&mut self) -> RawDecoder {
        RawDecoder
    }
}

impl Encoder for RawEncoder {
    type Item = Bytes;
    type Error = tonic::Status;

    fn encode(&mut self, item: Bytes, dst: &mut EncodeBuf<'_>) -> Result<(), tonic::Status> {
        dst.put_slice(&item);
        Ok(())
    }
}

impl Decoder for RawDecoder {
    type Item = Bytes;
    type Error = tonic::Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Bytes>, tonic::Status> {
        Ok(Some(src.copy_to_bytes(src.remaining())))
    }
}

#[cfg(test)]
mod tests;
