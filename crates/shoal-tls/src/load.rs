//! From Redis's `tls-*` settings to rustls configurations: read the PEM files, check that
//! they fit together, and build the server side (every TLS listener) and the client side
//! (outgoing inter-node links).

use std::fmt;
use std::io::Read;
use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, ServerConfig,
    SignatureScheme, SupportedProtocolVersion,
};

/// Largest certificate, key or CA file read (a bundle of many CAs fits easily).
const MAX_FILE: u64 = 4 * 1024 * 1024;
/// Most files read from `tls-ca-cert-dir`.
const MAX_DIR_FILES: usize = 4096;

/// Redis's `tls-auth-clients`: must a client present a certificate signed by the CA?
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AuthClients {
    /// A client without a valid certificate is refused (Redis's default).
    #[default]
    Yes,
    /// No certificate is asked for.
    No,
    /// A certificate is asked for; one that is sent must be valid, none is accepted too.
    Optional,
}

impl AuthClients {
    pub fn name(self) -> &'static str {
        match self {
            AuthClients::Yes => "yes",
            AuthClients::No => "no",
            AuthClients::Optional => "optional",
        }
    }
}

impl FromStr for AuthClients {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "yes" | "true" => Ok(AuthClients::Yes),
            "no" | "false" => Ok(AuthClients::No),
            "optional" => Ok(AuthClients::Optional),
            _ => Err("argument(s) must be one of the following: no, yes, optional".into()),
        }
    }
}

/// The files and choices a TLS configuration is built from (Redis's names in the docs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Settings {
    /// `tls-cert-file`: this node's certificate chain, leaf first (PEM).
    pub cert_file: String,
    /// `tls-key-file`: its private key (PEM: PKCS#8, PKCS#1 or SEC1, unencrypted).
    pub key_file: String,
    /// `tls-client-cert-file`/`tls-client-key-file`: what this node presents when it
    /// connects to another node; empty = the server certificate and key.
    pub client_cert_file: String,
    pub client_key_file: String,
    /// `tls-ca-cert-file` and `tls-ca-cert-dir`: the CAs client and peer certificates must
    /// chain to.
    pub ca_cert_file: String,
    pub ca_cert_dir: String,
    pub auth_clients: AuthClients,
    /// `tls-protocols`: `TLSv1.2`, `TLSv1.3` or both, space-separated; empty = both.
    pub protocols: String,
    /// Outgoing inter-node links use TLS (`tls-cluster`): build the client side too.
    pub links: bool,
}

/// Why a TLS configuration could not be built; the text names the setting and the file.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read {setting} '{path}': {source}")]
    Read {
        setting: &'static str,
        path: String,
        source: std::io::Error,
    },
    #[error("{setting} '{path}' is larger than {MAX_FILE} bytes")]
    TooLarge { setting: &'static str, path: String },
    #[error("{setting} '{path}' holds no {what} in PEM form")]
    Missing {
        setting: &'static str,
        path: String,
        what: &'static str,
    },
    #[error("{0}")]
    Settings(String),
    #[error("{context}: {source}")]
    Rustls {
        context: &'static str,
        source: rustls::Error,
    },
}

/// The server side (every TLS client listener) and, for `tls-cluster`, both sides of links.
pub struct Configs {
    pub server: Arc<ServerConfig>,
    /// Links: what this node presents when it connects to another node.
    pub client: Option<Arc<ClientConfig>>,
    /// Links: the inter-node listener, which always asks for a certificate the CA signed
    /// (as Redis's cluster bus), whatever `tls-auth-clients` says.
    pub link_server: Option<Arc<ServerConfig>>,
}

impl fmt::Debug for Configs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Configs")
            .field("client", &self.client.is_some())
            .finish_non_exhaustive()
    }
}

/// The protocol versions `tls-protocols` names (Redis's spelling, any case).
pub fn protocol_versions(text: &str) -> Result<Vec<&'static SupportedProtocolVersion>, String> {
    let mut out = Vec::new();
    for word in text.split_whitespace() {
        let v = match word.to_ascii_lowercase().as_str() {
            "tlsv1.2" => &rustls::version::TLS12,
            "tlsv1.3" => &rustls::version::TLS13,
            "tlsv1" | "tlsv1.1" => {
                return Err(format!(
                    "tls-protocols: {word} is not supported (Shoal speaks TLSv1.2 and TLSv1.3)"
                ))
            }
            _ => return Err(format!("tls-protocols: unknown protocol '{word}'")),
        };
        if !out.contains(&v) {
            out.push(v);
        }
    }
    if out.is_empty() {
        out = vec![&rustls::version::TLS13, &rustls::version::TLS12];
    }
    Ok(out)
}

/// Checks what can be checked without reading files (Redis's start-up rules): a
/// certificate and key, and a CA when clients or peers must present certificates.
pub fn check(s: &Settings) -> Result<(), String> {
    if s.cert_file.is_empty() || s.key_file.is_empty() {
        return Err("TLS needs tls-cert-file and tls-key-file".into());
    }
    if s.client_cert_file.is_empty() != s.client_key_file.is_empty() {
        return Err("tls-client-cert-file and tls-client-key-file go together".into());
    }
    let needs_ca = s.links || s.auth_clients != AuthClients::No;
    if needs_ca && s.ca_cert_file.is_empty() && s.ca_cert_dir.is_empty() {
        return Err(
            "Either tls-ca-cert-file or tls-ca-cert-dir must be specified when \
                    tls-cluster or tls-auth-clients are enabled"
                .into(),
        );
    }
    protocol_versions(&s.protocols)?;
    Ok(())
}

/// Reads the files and builds the configurations.
pub fn load(s: &Settings) -> Result<Configs, TlsError> {
    check(s).map_err(TlsError::Settings)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let versions = protocol_versions(&s.protocols).map_err(TlsError::Settings)?;
    let certs = read_certs("tls-cert-file", &s.cert_file)?;
    let key = read_key("tls-key-file", &s.key_file)?;
    let roots = if s.ca_cert_file.is_empty() && s.ca_cert_dir.is_empty() {
        None
    } else {
        Some(Arc::new(read_roots(s)?))
    };
    let rustls_err = |context| move |source| TlsError::Rustls { context, source };

    let server_config = |auth: AuthClients| -> Result<ServerConfig, TlsError> {
        let builder = ServerConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&versions)
            .map_err(rustls_err("tls-protocols"))?;
        let builder = match (auth, &roots) {
            (AuthClients::No, _) | (_, None) => builder.with_no_client_auth(),
            (mode, Some(roots)) => {
                let verifier =
                    WebPkiClientVerifier::builder_with_provider(roots.clone(), provider.clone());
                let verifier = if mode == AuthClients::Optional {
                    verifier.allow_unauthenticated()
                } else {
                    verifier
                };
                let verifier = verifier.build().map_err(|e| {
                    TlsError::Settings(format!(
                        "tls-ca-cert-file: cannot verify client certificates with these CAs: {e}"
                    ))
                })?;
                builder.with_client_cert_verifier(verifier)
            }
        };
        builder
            .with_single_cert(certs.clone(), key.clone_key())
            .map_err(rustls_err("tls-cert-file and tls-key-file"))
    };
    let server = server_config(s.auth_clients)?;
    let link_server = if s.links {
        Some(Arc::new(server_config(AuthClients::Yes)?))
    } else {
        None
    };

    let client = if s.links {
        let roots = roots.expect("check() asks for a CA with tls-cluster");
        let (certs, key) = if s.client_cert_file.is_empty() {
            (certs, key)
        } else {
            (
                read_certs("tls-client-cert-file", &s.client_cert_file)?,
                read_key("tls-client-key-file", &s.client_key_file)?,
            )
        };
        let verifier = WebPkiServerVerifier::builder_with_provider(roots, provider.clone())
            .build()
            .map_err(|e| {
                TlsError::Settings(format!(
                    "tls-ca-cert-file: cannot verify peer certificates with these CAs: {e}"
                ))
            })?;
        let config = ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(&versions)
            .map_err(rustls_err("tls-protocols"))?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(ChainOnly(verifier)))
            .with_client_auth_cert(certs, key)
            .map_err(rustls_err("tls-client-cert-file and tls-client-key-file"))?;
        Some(Arc::new(config))
    } else {
        None
    };
    Ok(Configs {
        server: Arc::new(server),
        client,
        link_server,
    })
}

/// Reads a whole file of at most `MAX_FILE` bytes.
fn read_file(setting: &'static str, path: &str) -> Result<Vec<u8>, TlsError> {
    let read_err = |source| TlsError::Read {
        setting,
        path: path.to_owned(),
        source,
    };
    let file = std::fs::File::open(path).map_err(read_err)?;
    let mut data = Vec::new();
    file.take(MAX_FILE + 1)
        .read_to_end(&mut data)
        .map_err(read_err)?;
    if data.len() as u64 > MAX_FILE {
        return Err(TlsError::TooLarge {
            setting,
            path: path.to_owned(),
        });
    }
    Ok(data)
}

fn read_certs(setting: &'static str, path: &str) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let data = read_file(setting, path)?;
    let certs: Vec<_> = CertificateDer::pem_slice_iter(&data)
        .filter_map(Result::ok)
        .collect();
    if certs.is_empty() {
        return Err(TlsError::Missing {
            setting,
            path: path.to_owned(),
            what: "certificate",
        });
    }
    Ok(certs)
}

fn read_key(setting: &'static str, path: &str) -> Result<PrivateKeyDer<'static>, TlsError> {
    let data = read_file(setting, path)?;
    PrivateKeyDer::from_pem_slice(&data).map_err(|_| TlsError::Missing {
        setting,
        path: path.to_owned(),
        what: "unencrypted private key",
    })
}

/// The CAs of `tls-ca-cert-file` and every certificate in the files of `tls-ca-cert-dir`.
fn read_roots(s: &Settings) -> Result<RootCertStore, TlsError> {
    let mut roots = RootCertStore::empty();
    if !s.ca_cert_file.is_empty() {
        let (added, _) =
            roots.add_parsable_certificates(read_certs("tls-ca-cert-file", &s.ca_cert_file)?);
        if added == 0 {
            return Err(TlsError::Missing {
                setting: "tls-ca-cert-file",
                path: s.ca_cert_file.clone(),
                what: "usable CA certificate",
            });
        }
    }
    if !s.ca_cert_dir.is_empty() {
        let dir = &s.ca_cert_dir;
        let entries = std::fs::read_dir(dir).map_err(|source| TlsError::Read {
            setting: "tls-ca-cert-dir",
            path: dir.clone(),
            source,
        })?;
        let mut added = 0;
        for entry in entries.flatten().take(MAX_DIR_FILES) {
            let path = entry.path();
            if !path.is_file() {
                continue;
            }
            let Some(name) = path.to_str() else { continue };
            // Files that are not certificates (an index, a README) are skipped, as OpenSSL
            // skips what does not parse.
            if let Ok(certs) = read_certs("tls-ca-cert-dir", name) {
                added += roots.add_parsable_certificates(certs).0;
            }
        }
        if added == 0 && roots.is_empty() {
            return Err(TlsError::Missing {
                setting: "tls-ca-cert-dir",
                path: Path::new(dir).display().to_string(),
                what: "CA certificate",
            });
        }
    }
    Ok(roots)
}

/// Verifies a peer node's certificate chain against the CA but not the name in it: nodes
/// dial each other by IP address, which certificates seldom name (Redis does not check
/// names on its cluster bus either). The cluster secret's handshake then proves the peer
/// is a member.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        // The chain is checked before the name: a name error means the chain is good.
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocols_use_redis_spelling() {
        assert_eq!(protocol_versions("").unwrap().len(), 2);
        assert_eq!(
            protocol_versions("TLSv1.3").unwrap(),
            vec![&rustls::version::TLS13]
        );
        assert_eq!(protocol_versions("tlsv1.2 TLSv1.2").unwrap().len(), 1);
        assert!(protocol_versions("TLSv1.1")
            .unwrap_err()
            .contains("not supported"));
        assert!(protocol_versions("SSLv3").unwrap_err().contains("unknown"));
    }

    #[test]
    fn auth_clients_parses_redis_values() {
        assert_eq!("YES".parse(), Ok(AuthClients::Yes));
        assert_eq!("optional".parse(), Ok(AuthClients::Optional));
        assert_eq!("no".parse(), Ok(AuthClients::No));
        assert!("maybe".parse::<AuthClients>().is_err());
    }

    #[test]
    fn a_ca_is_needed_when_certificates_are_checked() {
        let base = Settings {
            cert_file: "c.pem".into(),
            key_file: "k.pem".into(),
            ..Settings::default()
        };
        assert!(check(&base).unwrap_err().contains("tls-ca-cert-file"));
        let no_auth = Settings {
            auth_clients: AuthClients::No,
            ..base.clone()
        };
        assert_eq!(check(&no_auth), Ok(()));
        let links = Settings {
            links: true,
            ..no_auth.clone()
        };
        assert!(check(&links).is_err());
        let with_ca = Settings {
            ca_cert_file: "ca.pem".into(),
            ..links
        };
        assert_eq!(check(&with_ca), Ok(()));
        let half_client = Settings {
            client_cert_file: "cc.pem".into(),
            ..with_ca
        };
        assert!(check(&half_client).is_err());
        assert!(check(&Settings::default()).is_err());
    }

    #[test]
    fn a_missing_file_is_named() {
        let s = Settings {
            cert_file: "/nonexistent/cert.pem".into(),
            key_file: "/nonexistent/key.pem".into(),
            auth_clients: AuthClients::No,
            ..Settings::default()
        };
        let e = load(&s).unwrap_err().to_string();
        assert!(
            e.contains("tls-cert-file") && e.contains("/nonexistent/cert.pem"),
            "{e}"
        );
    }
}
