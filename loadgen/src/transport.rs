//! How a connection to one endpoint is opened: TCP with `TCP_NODELAY`, then TLS (rustls, ALPN
//! `h2`) when the run uses it. Both balancers use it: lblab's [`Balancer`](crate::balance::Balancer)
//! directly, tower's through [`Connector`].
//!
//! TLS follows what a gRPC client does: the server's certificate is verified against `--cacert`
//! (or the Mozilla roots of `webpki-roots` when none is given) for the name of the target, or the
//! `--authority` when one is set; `--cert`/`--key` add a client certificate (mutual TLS);
//! `--skip-tls-verify` skips the verification of the server's certificate (its signatures over
//! the handshake are still checked). The server must select HTTP/2 by ALPN.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};

use lblab_message::setting::{Names, Setting};

/// A boxed error, as connection attempts report them.
use crate::balance::BoxError;

/// TLS settings as given on the command line.
#[derive(Debug, Clone, Default)]
pub struct TlsOptions {
    /// PEM file with the certificates that may sign the server's (default: webpki-roots).
    pub cacert: Option<PathBuf>,
    /// PEM file with the client's certificate chain (mutual TLS); needs `key`.
    pub cert: Option<PathBuf>,
    /// PEM file with the client's private key; needs `cert`.
    pub key: Option<PathBuf>,
    /// Accept any server certificate (`--skip-tls-verify`).
    pub insecure: bool,
}

/// How every connection of a run is made; cheap to clone.
#[derive(Clone, Default)]
pub struct Transport {
    tls: Option<Arc<rustls::ClientConfig>>,
    /// The name the server's certificate must have, instead of each target's host.
    server_name: Option<String>,
    /// How the hints of a failed connection spell settings (`None`: [`Setting::word`]).
    names: Option<Names>,
}

impl std::fmt::Debug for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transport")
            .field("tls", &self.tls.is_some())
            .field("server_name", &self.server_name)
            .finish()
    }
}

impl Transport {
    /// Plaintext HTTP/2 (h2c), as lblab's own fleet serves it.
    pub fn plaintext() -> Transport {
        Transport::default()
    }

    /// TLS with `options`; `server_name` overrides each target's host as the name verified
    /// (gRPC uses the channel's authority). Reads and checks the PEM files now, so a bad file is
    /// an error before any load is sent.
    pub fn tls(options: &TlsOptions, server_name: Option<String>) -> Result<Transport, TlsError> {
        Ok(Transport {
            tls: Some(Arc::new(client_config(options)?)),
            server_name,
            names: None,
        })
    }

    /// The transport with the settings its hints name (TLS, a client certificate) spelt by
    /// `names`.
    pub fn with_names(self, names: Names) -> Transport {
        Transport {
            names: Some(names),
            ..self
        }
    }

    /// How `setting` is spelt in a hint.
    fn name(&self, setting: Setting) -> &'static str {
        self.names.map_or(setting.word(), |names| names(setting))
    }

    /// True when connections use TLS.
    pub fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// Opens a connection to `addr`; `host` is the target's name, verified against the server's
    /// certificate unless a server name was set.
    pub async fn connect(&self, host: &str, addr: SocketAddr) -> Result<Stream, BoxError> {
        let tcp = TcpStream::connect(addr).await?;
        tcp.set_nodelay(true)?;
        let Some(config) = &self.tls else {
            return Ok(Stream::Plain(tcp));
        };
        let name = self.server_name.as_deref().unwrap_or(host);
        let name = ServerName::try_from(name.trim_start_matches('[').trim_end_matches(']'))
            .map_err(|e| format!("{name:?} is not a valid TLS server name: {e}"))?
            .to_owned();
        let tls = tokio_rustls::TlsConnector::from(config.clone())
            .connect(name, tcp)
            .await
            .map_err(|e| {
                let hint = if not_tls(&e) {
                    format!(
                        " (the server does not answer in TLS: is it a plaintext server? then \
                         leave out {})",
                        self.name(Setting::Tls)
                    )
                } else {
                    String::new()
                };
                format!("TLS handshake with {addr} failed: {e}{hint}")
            })?;
        let alpn = tls.get_ref().1.alpn_protocol().map(<[u8]>::to_vec);
        if alpn.as_deref() != Some(b"h2") {
            return Err(format!(
                "TLS with {addr}: the server did not select HTTP/2 by ALPN ({}); gRPC needs h2",
                alpn.map_or("no protocol".into(), |p| String::from_utf8_lossy(&p)
                    .into_owned())
            )
            .into());
        }
        Ok(Stream::Tls(Box::new(tls)))
    }
}

impl Transport {
    /// Connects to `addr` and makes sure an HTTP/2 server answers there, as a gRPC channel does
    /// before it calls a connection READY: sends the client connection preface and waits for the
    /// server's SETTINGS frame. A server that refuses the connection after the TLS handshake (a
    /// missing or rejected client certificate, under TLS 1.3) or that does not speak HTTP/2 fails
    /// here, with its reason, instead of failing every call of the run.
    pub async fn probe(&self, host: &str, addr: SocketAddr) -> Result<(), BoxError> {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let mut stream = self.connect(host, addr).await?;
        // The preface, then an empty SETTINGS frame (length 0, type 4, no flags, stream 0).
        let mut hello = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        hello.extend_from_slice(&[0, 0, 0, 4, 0, 0, 0, 0, 0]);
        stream.write_all(&hello).await?;
        stream.flush().await?;
        let mut header = [0u8; 9];
        match stream.read_exact(&mut header).await {
            Ok(_) if header[3] == 4 => Ok(()),
            Ok(_) => Err(format!(
                "{addr} did not answer as an HTTP/2 server (its first frame is of type {}, not SETTINGS)",
                header[3]
            )
            .into()),
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Err(format!(
                "{addr} closed the connection without an HTTP/2 answer{}",
                if self.is_tls() {
                    format!(
                        " (after the TLS handshake: does it require a client certificate? see {} \
                         and {})",
                        self.name(Setting::Cert),
                        self.name(Setting::Key)
                    )
                } else {
                    format!(" (is it a TLS server? then add {})", self.name(Setting::Tls))
                }
            )
            .into()),
            Err(e) => Err(format!("{addr} refused the connection: {e}").into()),
        }
    }
}

/// Whether a handshake failed because the server does not speak TLS at all: it closed the
/// connection at the ClientHello, or answered with bytes that are no TLS record (an HTTP/2 frame).
fn not_tls(e: &io::Error) -> bool {
    let garbled = e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        .is_some_and(|r| matches!(r, rustls::Error::InvalidMessage(_)));
    garbled || e.kind() == io::ErrorKind::UnexpectedEof
}

/// Why the TLS settings cannot be used. Each names the file concerned; the caller adds the flag
/// that gave it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// A PEM file that cannot be read or holds nothing usable.
    #[error("{}: {problem}", file.display())]
    Pem {
        /// Which setting: `cacert`, `cert` or `key`.
        setting: &'static str,
        /// The file.
        file: PathBuf,
        /// What is wrong with it.
        #[source]
        problem: PemProblem,
    },
    /// A client certificate without its key, or the other way round.
    #[error("a client certificate and its key go together (mutual TLS needs both)")]
    CertWithoutKey,
    /// rustls refused the protocol versions or the verifier.
    #[error(transparent)]
    Rustls(#[from] rustls::Error),
    /// rustls could not build a verifier from the trusted certificates.
    #[error(transparent)]
    Verifier(#[from] rustls::client::VerifierBuilderError),
    /// rustls refused the client certificate and key.
    #[error("the client certificate and key: {0}")]
    ClientAuth(#[source] rustls::Error),
}

/// What is wrong with a PEM file ([`TlsError::Pem`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PemProblem {
    /// It cannot be read.
    #[error(transparent)]
    Read(#[from] io::Error),
    /// It is not a PEM file of `what`.
    #[error("not a PEM file of {what}: {source}")]
    NotPem {
        /// What it should hold: certificates, private keys.
        what: &'static str,
        /// The parser's error.
        source: rustls::pki_types::pem::Error,
    },
    /// It holds none of `what`.
    #[error("holds no {0} (a PEM file is expected)")]
    Empty(&'static str),
    /// rustls refuses one of its certificates as a trusted root.
    #[error(transparent)]
    Root(#[from] rustls::Error),
}

fn read_pem<T: PemObject>(
    path: &Path,
    setting: &'static str,
    what: &'static str,
) -> Result<Vec<T>, TlsError> {
    let bad = |problem: PemProblem| TlsError::Pem {
        setting,
        file: path.to_path_buf(),
        problem,
    };
    let bytes = std::fs::read(path).map_err(|e| bad(e.into()))?;
    let items = T::pem_slice_iter(&bytes)
        .collect::<Result<Vec<T>, _>>()
        .map_err(|source| bad(PemProblem::NotPem { what, source }))?;
    if items.is_empty() {
        return Err(bad(PemProblem::Empty(what)));
    }
    Ok(items)
}

/// The rustls client configuration of `options`.
fn client_config(options: &TlsOptions) -> Result<rustls::ClientConfig, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let algorithms = provider.signature_verification_algorithms;
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?;
    let accept = if options.insecure {
        Some(Accept::Any)
    } else if let Some(path) = &options.cacert {
        let certs = read_pem::<CertificateDer<'static>>(path, "cacert", "certificates")?;
        let mut roots = rustls::RootCertStore::empty();
        for cert in &certs {
            roots.add(cert.clone()).map_err(|e| TlsError::Pem {
                setting: "cacert",
                file: path.clone(),
                problem: e.into(),
            })?;
        }
        let signed =
            rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()?;
        Some(Accept::SignedOrPinned {
            signed,
            pinned: certs,
        })
    } else {
        None
    };
    let builder = match accept {
        Some(accept) => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(Verifier { accept, algorithms })),
        None => {
            let mut roots = rustls::RootCertStore::empty();
            roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
            builder.with_root_certificates(roots)
        }
    };
    let mut config = match (&options.cert, &options.key) {
        (Some(cert), Some(key_file)) => {
            let chain = read_pem::<CertificateDer<'static>>(cert, "cert", "certificates")?;
            let key = read_pem::<PrivateKeyDer<'static>>(key_file, "key", "private keys")?
                .into_iter()
                .next()
                .ok_or_else(|| TlsError::Pem {
                    setting: "key",
                    file: key_file.clone(),
                    problem: PemProblem::Empty("private keys"),
                })?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(TlsError::ClientAuth)?
        }
        (None, None) => builder.with_no_client_auth(),
        _ => return Err(TlsError::CertWithoutKey),
    };
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(config)
}

/// Which server certificates a [`Verifier`] accepts.
#[derive(Debug)]
enum Accept {
    /// Any (`--skip-tls-verify`).
    Any,
    /// Those the `--cacert` certificates sign, and one that *is* one of them, byte for byte (the
    /// usual `openssl req -x509` self-signed certificate, which says it is a CA and which webpki
    /// therefore refuses as a server's: `CaUsedAsEndEntity`). The user named that very
    /// certificate as trusted, as grpcio's and Go's clients take it; its names must still match
    /// the server's.
    SignedOrPinned {
        /// webpki's verification against the `--cacert` roots.
        signed: Arc<rustls::client::WebPkiServerVerifier>,
        /// The `--cacert` certificates themselves.
        pinned: Vec<CertificateDer<'static>>,
    },
}

/// A server certificate verifier that accepts certificates as [`Accept`] says, and verifies the
/// handshake's signatures with the provider's algorithms whatever it accepts.
#[derive(Debug)]
struct Verifier {
    accept: Accept,
    algorithms: rustls::crypto::WebPkiSupportedAlgorithms,
}

impl rustls::client::danger::ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        let Accept::SignedOrPinned { signed, pinned } = &self.accept else {
            return Ok(rustls::client::danger::ServerCertVerified::assertion());
        };
        match signed.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Ok(v) => Ok(v),
            Err(e) if pinned.iter().any(|p| p.as_ref() == end_entity.as_ref()) => {
                let parsed = rustls::server::ParsedCertificate::try_from(end_entity)
                    .map_err(|_| e.clone())?;
                rustls::client::verify_server_name(&parsed, server_name)?;
                Ok(rustls::client::danger::ServerCertVerified::assertion())
            }
            Err(e) => Err(e),
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// A connection: plain TCP or TLS over it.
#[derive(Debug)]
pub enum Stream {
    /// Plaintext.
    Plain(TcpStream),
    /// TLS.
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Stream::Plain(s) => s.is_write_vectored(),
            Stream::Tls(s) => s.is_write_vectored(),
        }
    }
}

/// tower's balancer's connector: a tonic [`Endpoint`](tonic::transport::Endpoint) connects with
/// it to one fixed address, over the run's [`Transport`].
#[derive(Clone, Debug)]
pub struct Connector {
    /// The transport.
    pub transport: Transport,
    /// The target's host name (verified by TLS).
    pub host: String,
    /// The address.
    pub addr: SocketAddr,
}

impl tower::Service<http::Uri> for Connector {
    type Response = TokioIo<Stream>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _uri: http::Uri) -> Self::Future {
        let this = self.clone();
        Box::pin(async move {
            let stream = this.transport.connect(&this.host, this.addr).await?;
            Ok(TokioIo::new(stream))
        })
    }
}
