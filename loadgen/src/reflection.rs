//! A server reflection client: the schema of one service, asked of the server itself, as grpcurl
//! does. It tries `grpc.reflection.v1` and falls back to `grpc.reflection.v1alpha` when the
//! server does not implement v1 (older servers only have v1alpha).

use std::time::Duration;

use bytes::Bytes;
use prost_reflect::DescriptorPool;
use tonic::metadata::MetadataMap;
use tonic::transport::{Channel, Endpoint};

use crate::method;
use crate::transport::Connector;
use crate::LoadgenError;

/// Asks each of `targets` in turn for the schema of `service` until one answers: a target that
/// cannot be reached is skipped, but a server's refusal holds for every target and ends the
/// search.
pub async fn schema_from_any(
    targets: &[crate::target::Target],
    transport: &crate::transport::Transport,
    authority: Option<&http::uri::Authority>,
    metadata: &MetadataMap,
    service: &str,
) -> Result<DescriptorPool, LoadgenError> {
    let mut errors = Vec::new();
    for t in targets {
        let connector = Connector {
            transport: transport.clone(),
            host: t.host.clone(),
            addr: t.addr,
        };
        match schema_of(connector, authority, metadata, service).await {
            Err(e @ LoadgenError::ReflectionUnreachable { .. }) => errors.push(e),
            other => return other,
        }
    }
    Err(LoadgenError::NoReflection {
        service: service.to_string(),
        unreachable: errors,
    })
}

/// A reflection exchange that took longer than it may.
#[derive(Debug, thiserror::Error)]
#[error("no answer within {0:?}")]
pub struct NoAnswer(pub Duration);

/// How long one reflection exchange may take.
const TIMEOUT: Duration = Duration::from_secs(10);

/// Asks the server behind `connector` for the schema of `service` and every file it imports.
/// `metadata` goes with each request (servers may require credentials for reflection too).
pub async fn schema_of(
    connector: Connector,
    authority: Option<&http::uri::Authority>,
    metadata: &MetadataMap,
    service: &str,
) -> Result<DescriptorPool, LoadgenError> {
    let addr = connector.addr;
    // The same check as before a run ([`Transport::probe`](crate::transport::Transport::probe)),
    // so that plaintext against a TLS server, a failed handshake or a refused client certificate
    // get the same clear reason here as with --proto, not a bare "transport error".
    let probe = connector.transport.probe(&connector.host, addr);
    match tokio::time::timeout(TIMEOUT, probe).await {
        Ok(Ok(())) => {}
        Ok(Err(source)) => return Err(LoadgenError::ReflectionUnreachable { addr, source }),
        Err(_) => {
            return Err(LoadgenError::ReflectionUnreachable {
                addr,
                source: Box::new(NoAnswer(TIMEOUT)),
            })
        }
    }
    let authority = authority.map_or_else(|| addr.to_string(), ToString::to_string);
    let endpoint = Endpoint::from_shared(format!("http://{authority}"))
        .map_err(|e| LoadgenError::Target {
            target: addr.to_string(),
            problem: e.into(),
        })?
        .connect_timeout(TIMEOUT)
        .timeout(TIMEOUT);
    let channel = endpoint
        .connect_with_connector(connector)
        .await
        .map_err(|e| LoadgenError::ReflectionUnreachable {
            addr,
            source: Box::new(e),
        })?;
    let files = match v1::files(channel.clone(), metadata, service).await {
        Err(status) if status.code() == tonic::Code::Unimplemented => {
            v1alpha::files(channel, metadata, service).await
        }
        other => other,
    }
    .map_err(|status| crate::ReflectionRefused {
        addr,
        code: status.code().description().to_string(),
        message: lblab_message::text::printable(status.message()),
    })?;
    Ok(method::pool_from_files(files)?)
}

/// One client per reflection version: the two protos have the same shape in different packages.
macro_rules! reflection_client {
    ($version:ident) => {
        mod $version {
            use super::*;
            use tonic_reflection::pb::$version::server_reflection_client::ServerReflectionClient;
            use tonic_reflection::pb::$version::server_reflection_request::MessageRequest;
            use tonic_reflection::pb::$version::server_reflection_response::MessageResponse;
            use tonic_reflection::pb::$version::ServerReflectionRequest;

            /// One request on its own stream; the files of the answer.
            async fn ask(
                client: &mut ServerReflectionClient<Channel>,
                metadata: &MetadataMap,
                message: MessageRequest,
            ) -> Result<Vec<Bytes>, tonic::Status> {
                let request = ServerReflectionRequest {
                    host: String::new(),
                    message_request: Some(message),
                };
                let mut req = tonic::Request::new(tokio_stream::once(request));
                *req.metadata_mut() = metadata.clone();
                let mut replies = client.server_reflection_info(req).await?.into_inner();
                let reply = replies.message().await?.ok_or_else(|| {
                    tonic::Status::unknown("the reflection stream ended without an answer")
                })?;
                match reply.message_response {
                    Some(MessageResponse::FileDescriptorResponse(f)) => Ok(f
                        .file_descriptor_proto
                        .into_iter()
                        .map(Bytes::from)
                        .collect()),
                    Some(MessageResponse::ErrorResponse(e)) => Err(tonic::Status::new(
                        tonic::Code::from_i32(e.error_code),
                        e.error_message,
                    )),
                    _ => Err(tonic::Status::unknown("unexpected reflection answer")),
                }
            }

            /// The services the server lists, for an error message.
            async fn services(
                client: &mut ServerReflectionClient<Channel>,
                metadata: &MetadataMap,
            ) -> Option<Vec<String>> {
                let request = ServerReflectionRequest {
                    host: String::new(),
                    message_request: Some(MessageRequest::ListServices(String::new())),
                };
                let mut req = tonic::Request::new(tokio_stream::once(request));
                *req.metadata_mut() = metadata.clone();
                let mut replies = client.server_reflection_info(req).await.ok()?.into_inner();
                match replies.message().await.ok()??.message_response? {
                    MessageResponse::ListServicesResponse(l) => {
                        Some(l.service.into_iter().map(|s| s.name).collect())
                    }
                    _ => None,
                }
            }

            /// The file that defines `service`, and every file it imports, transitively.
            pub(super) async fn files(
                channel: Channel,
                metadata: &MetadataMap,
                service: &str,
            ) -> Result<Vec<Bytes>, tonic::Status> {
                use prost::Message as _;
                let mut client = ServerReflectionClient::new(channel);
                let first = match ask(
                    &mut client,
                    metadata,
                    MessageRequest::FileContainingSymbol(service.to_string()),
                )
                .await
                {
                    Err(s) if s.code() == tonic::Code::NotFound => {
                        let listed = services(&mut client, metadata).await.unwrap_or_default();
                        return Err(tonic::Status::not_found(format!(
                            "no service {service:?} on this server; it lists: {}",
                            listed.join(", ")
                        )));
                    }
                    other => other?,
                };
                let mut files: Vec<Bytes> = Vec::new();
                let mut names: Vec<String> = Vec::new();
                let mut wanted: Vec<String> = Vec::new();
                let add = |batch: Vec<Bytes>,
                           files: &mut Vec<Bytes>,
                           names: &mut Vec<String>,
                           wanted: &mut Vec<String>|
                 -> Result<(), tonic::Status> {
                    for bytes in batch {
                        let proto = prost_types::FileDescriptorProto::decode(bytes.clone())
                            .map_err(|e| tonic::Status::internal(e.to_string()))?;
                        let name = proto.name().to_string();
                        if names.contains(&name) {
                            continue;
                        }
                        wanted.extend(proto.dependency.iter().cloned());
                        names.push(name);
                        files.push(bytes);
                    }
                    Ok(())
                };
                add(first, &mut files, &mut names, &mut wanted)?;
                // Servers usually send the imports with the file; ask for any that are missing.
                let mut asked = 0;
                while let Some(dep) = wanted.pop() {
                    if names.contains(&dep) {
                        continue;
                    }
                    asked += 1;
                    if asked > 1000 {
                        return Err(tonic::Status::internal("more than 1000 imported files"));
                    }
                    let batch =
                        ask(&mut client, metadata, MessageRequest::FileByFilename(dep)).await?;
                    add(batch, &mut files, &mut names, &mut wanted)?;
                }
                Ok(files)
            }
        }
    };
}

reflection_client!(v1);
reflection_client!(v1alpha);
