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
use prost_reflect::{DescriptorPool, DynamicMessage, MethodDescriptor};
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};

use crate::LoadgenError;

/// The method to call and the request to send.
#[derive(Debug, Clone)]
pub struct Call {
    /// `/package.Service/Method`.
    pub path: http::uri::PathAndQuery,
    /// `package.Service/Method`, for messages.
    pub name: String,
    /// The request message, encoded.
    pub request: Bytes,
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
        /// Where imports are looked up (the files' own folders when empty).
        import_paths: Vec<PathBuf>,
    },
}

/// Splits `package.Service/Method` (or `package.Service.Method`, as grpcurl also takes) into the
/// service's full name and the method's name.
pub fn split_call(call: &str) -> Result<(&str, &str), LoadgenError> {
    let call = call.trim_start_matches('/');
    let (service, method) = call
        .rsplit_once('/')
        .or_else(|| call.rsplit_once('.'))
        .filter(|(s, m)| !s.is_empty() && !m.is_empty())
        .ok_or_else(|| {
            LoadgenError::Config(format!(
                "--call {call:?}: expected package.Service/Method (e.g. helloworld.Greeter/SayHello)"
            ))
        })?;
    Ok((service, method))
}

/// Compiles `.proto` files into a descriptor pool.
pub fn pool_from_protos(
    files: &[PathBuf],
    import_paths: &[PathBuf],
) -> Result<DescriptorPool, LoadgenError> {
    let mut includes: Vec<PathBuf> = import_paths.to_vec();
    if includes.is_empty() {
        for f in files {
            let dir = f
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .map_or_else(|| PathBuf::from("."), PathBuf::from);
            if !includes.contains(&dir) {
                includes.push(dir);
            }
        }
    }
    let bad = |e: protox::Error| LoadgenError::Config(format!("--proto: {e}"));
    let mut compiler = protox::Compiler::new(&includes).map_err(bad)?;
    compiler.include_imports(true);
    for f in files {
        compiler.open_file(f).map_err(bad)?;
    }
    Ok(compiler.descriptor_pool())
}

/// Adds serialized `FileDescriptorProto`s (as server reflection returns them) to a pool.
pub fn pool_from_files(files: Vec<Bytes>) -> Result<DescriptorPool, LoadgenError> {
    let protos = files
        .into_iter()
        .map(prost_types::FileDescriptorProto::decode)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| {
            LoadgenError::Config(format!(
                "server reflection returned a file descriptor that does not decode: {e}"
            ))
        })?;
    let mut pool = DescriptorPool::new();
    pool.add_file_descriptor_protos(protos).map_err(|e| {
        LoadgenError::Config(format!(
            "server reflection returned an incomplete or invalid schema: {e}"
        ))
    })?;
    Ok(pool)
}

/// Finds the unary method `call` in `pool` and encodes the request `json` (`{}` when `None`).
pub fn resolve(
    pool: &DescriptorPool,
    call: &str,
    json: Option<&str>,
) -> Result<Call, LoadgenError> {
    let method = find_method(pool, call)?;
    let (service, name) = (
        method.parent_service().full_name().to_string(),
        method.name(),
    );
    if method.is_client_streaming() || method.is_server_streaming() {
        return Err(LoadgenError::Config(format!(
            "--call {service}/{name} is a streaming method; lblab loadgen calls unary methods only"
        )));
    }
    let input = method.input();
    let value: serde_json::Value = serde_json::from_str(json.unwrap_or("{}"))
        .map_err(|e| LoadgenError::Config(format!("--data is not valid JSON: {e}")))?;
    let message = DynamicMessage::deserialize(input.clone(), &value).map_err(|e| {
        let field = blame(&input, &value, "")
            .map(|f| format!(" field {f}:"))
            .unwrap_or_default();
        LoadgenError::Config(format!(
            "--data does not fit {} (the request of {service}/{name}):{field} {e}",
            input.full_name()
        ))
    })?;
    let path = format!("/{service}/{name}");
    Ok(Call {
        path: path.parse().map_err(|e| {
            LoadgenError::Config(format!("--call: {path:?} is not a valid request path: {e}"))
        })?,
        name: format!("{service}/{name}"),
        request: message.encode_to_vec().into(),
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

fn find_method(pool: &DescriptorPool, call: &str) -> Result<MethodDescriptor, LoadgenError> {
    let (service, method) = split_call(call)?;
    let Some(svc) = pool.get_service_by_name(service) else {
        let known: Vec<String> = pool.services().map(|s| s.full_name().to_string()).collect();
        return Err(LoadgenError::Config(format!(
            "--call: no service {service:?} in the schema; it has: {}",
            if known.is_empty() {
                "no services".to_string()
            } else {
                known.join(", ")
            }
        )));
    };
    let found = svc.methods().find(|m| m.name() == method);
    found.ok_or_else(|| {
        let known: Vec<String> = svc.methods().map(|m| m.name().to_string()).collect();
        LoadgenError::Config(format!(
            "--call: service {service} has no method {method:?}; its methods: {}",
            known.join(", ")
        ))
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
mod tests {
    use super::*;

    fn greeter() -> DescriptorPool {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("lblab-method-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("greeter.proto");
        std::fs::write(
            &file,
            "syntax = \"proto3\";\npackage demo.v1;\n\
             service Greeter {\n  rpc SayHello(HelloRequest) returns (HelloReply);\n  \
             rpc Chat(stream HelloRequest) returns (stream HelloReply);\n}\n\
             message HelloRequest { string name = 1; int32 times = 2; Inner inner = 3; }\n\
             message Inner { repeated int32 xs = 1; }\n\
             message HelloReply { string message = 1; }\n",
        )
        .unwrap();
        let pool = pool_from_protos(&[file], &[]).unwrap();
        std::fs::remove_dir_all(&dir).ok();
        pool
    }

    #[test]
    fn encodes_the_request_once_from_json() {
        let call = resolve(
            &greeter(),
            "demo.v1.Greeter/SayHello",
            Some(r#"{"name":"ab","times":3}"#),
        )
        .unwrap();
        assert_eq!(call.path.as_str(), "/demo.v1.Greeter/SayHello");
        // field 1 (string "ab"), field 2 (varint 3)
        assert_eq!(&call.request[..], &[0x0a, 2, b'a', b'b', 0x10, 3]);
        // grpcurl's dotted form names the same method.
        let dotted = resolve(&greeter(), "demo.v1.Greeter.SayHello", None).unwrap();
        assert_eq!(dotted.path, call.path);
        assert!(dotted.request.is_empty());
    }

    #[test]
    fn errors_name_the_field_the_service_and_the_method() {
        let pool = greeter();
        let err =
            |call: &str, json: &str| resolve(&pool, call, Some(json)).unwrap_err().to_string();
        let e = err("demo.v1.Greeter/SayHello", r#"{"nmae":"x"}"#);
        assert!(
            e.contains("nmae") && e.contains("demo.v1.HelloRequest"),
            "{e}"
        );
        let e = err("demo.v1.Greeter/SayHello", r#"{"name":"a","times":"many"}"#);
        assert!(e.contains("field times:"), "{e}");
        let e = err("demo.v1.Greeter/SayHello", r#"{"inner":{"xs":[1,"x"]}}"#);
        assert!(e.contains("field inner.xs:"), "{e}");
        let e = err("demo.v1.Greeter/SayHello", r#"{"name":"x"} trailing"#);
        assert!(e.contains("not valid JSON"), "{e}");
        let e = err("demo.v1.Greeter/SayBye", "{}");
        assert!(e.contains("SayBye") && e.contains("SayHello"), "{e}");
        let e = err("demo.v1.Nope/SayHello", "{}");
        assert!(
            e.contains("demo.v1.Nope") && e.contains("demo.v1.Greeter"),
            "{e}"
        );
        let e = err("demo.v1.Greeter/Chat", "{}");
        assert!(e.contains("streaming"), "{e}");
        assert!(split_call("Greeter").is_err());
        assert!(split_call("/").is_err());
    }

    #[test]
    fn proto_errors_name_the_file() {
        let e = pool_from_protos(&[PathBuf::from("/nonexistent/x.proto")], &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("x.proto"), "{e}");
    }
}
