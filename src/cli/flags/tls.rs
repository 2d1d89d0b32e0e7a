//! The TLS flags: certificates, server name and `--insecure`.

use std::path::PathBuf;

use lblab_loadgen::transport::{TlsError, TlsOptions, Transport};

use lblab_lab::{LabError, Result};

/// TLS.
#[derive(Debug, clap::Args)]
pub struct Tls {
    /// Connect with TLS (rustls; ALPN h2).
    #[arg(long)]
    pub tls: bool,
    /// PEM file of the certificates that may sign the server's, or of the server's own
    /// self-signed certificate [default: the Mozilla roots].
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// PEM file of the client certificate chain, for mutual TLS (with --key).
    #[arg(long, value_name = "FILE", requires = "key")]
    pub cert: Option<PathBuf>,
    /// PEM file of the client's private key, for mutual TLS (with --cert).
    #[arg(long, value_name = "FILE", requires = "cert")]
    pub key: Option<PathBuf>,
    /// TLS without verifying the server's certificate (implies --tls; ghz's --skipTLS). Anyone
    /// on the path can then read and change the calls.
    #[arg(long, alias = "skipTLS")]
    pub skip_tls_verify: bool,
    /// Plaintext, as ghz's --insecure (plaintext is already the default). Refused with a TLS
    /// flag: for TLS without verification, use --skip-tls-verify.
    #[arg(long)]
    pub insecure: bool,
}

impl Tls {
    /// Plaintext, or TLS with these flags; `server_name` is the name to verify instead of each
    /// target's host.
    pub fn transport(&self, server_name: Option<String>) -> Result<Transport> {
        let tls_flags = [
            ("--tls", self.tls),
            ("--skip-tls-verify", self.skip_tls_verify),
            ("--cacert", self.cacert.is_some()),
            ("--cert", self.cert.is_some()),
        ];
        if let Some((flag, _)) = tls_flags.iter().find(|(_, given)| *given && self.insecure) {
            return Err(LabError::Message(format!(
                "--insecure means plaintext (as in ghz), but {flag} asks for TLS: for TLS without \
                 verifying the server's certificate, use --tls --skip-tls-verify (ghz's --skipTLS); \
                 for plaintext, leave out {flag}"
            )));
        }
        if !(self.tls || self.skip_tls_verify) {
            if let Some((flag, _)) = tls_flags[2..].iter().find(|(_, given)| *given) {
                return Err(LabError::Message(format!(
                    "{flag} is a TLS setting: add --tls"
                )));
            }
            return Ok(Transport::plaintext().with_names(crate::cli::names::flag));
        }
        if self.skip_tls_verify {
            lblab_lab::errln!(
                "warning: --skip-tls-verify: the servers' certificates are NOT verified; anyone on \
                 the path can impersonate them and read or change the calls"
            );
        }
        let options = TlsOptions {
            cacert: self.cacert.clone(),
            cert: self.cert.clone(),
            key: self.key.clone(),
            insecure: self.skip_tls_verify,
        };
        Transport::tls(&options, server_name)
            .map(|t| t.with_names(crate::cli::names::flag))
            .map_err(|e| {
                let flag = match &e {
                    TlsError::Pem { setting, .. } => format!("--{setting}"),
                    TlsError::CertWithoutKey => "--cert/--key".into(),
                    _ => "--tls".into(),
                };
                LabError::Context {
                    context: flag,
                    source: Box::new(e),
                }
            })
    }
}
