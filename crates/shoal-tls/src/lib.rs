//! TLS for Shoal, on rustls with the `ring` provider: Redis's `tls-*` settings become rustls
//! configurations ([`load`]), held where listeners and links take them at each new
//! connection and replaced whole on `CONFIG SET` ([`Tls`]); [`Stream`] is a connection that
//! is plain TCP or TLS, so the I/O loops above serve both.
//!
//! The crate knows no Shoal settings type: the node turns its configuration into
//! [`Settings`]. Handshakes are not timed here; callers put their deadline on them.

mod load;
mod stream;

use std::net::IpAddr;
use std::sync::{Arc, RwLock};

use shoal_net::TcpStream;
use tokio_rustls::{TlsAcceptor, TlsConnector};

pub use load::{load, AuthClients, Configs, Settings, TlsError};
pub use stream::{ReadHalf, Stream, WriteHalf};

/// The TLS configuration in force; clones share it, so a [`Tls::reload`] reaches every
/// listener and link at their next handshake (connections already up keep theirs).
#[derive(Clone)]
pub struct Tls {
    current: Arc<RwLock<Arc<Configs>>>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls").finish_non_exhaustive()
    }
}

impl Tls {
    /// Loads `settings`' files.
    pub fn load(settings: &Settings) -> Result<Tls, TlsError> {
        Ok(Tls {
            current: Arc::new(RwLock::new(Arc::new(load(settings)?))),
        })
    }

    /// Loads `settings`' files and puts them in force; on an error the configuration in
    /// force stays.
    pub fn reload(&self, settings: &Settings) -> Result<(), TlsError> {
        let next = Arc::new(load(settings)?);
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = next;
        Ok(())
    }

    fn configs(&self) -> Arc<Configs> {
        self.current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The server side of a handshake on an accepted connection.
    pub async fn accept(&self, tcp: TcpStream) -> std::io::Result<Stream> {
        let acceptor = TlsAcceptor::from(self.configs().server.clone());
        let tls = acceptor.accept(tcp).await?;
        Ok(Stream::Tls(Box::new(tls.into())))
    }

    /// The server side of a handshake on an accepted inter-node link: the peer must present
    /// a certificate the CA signed. Fails when links are not configured.
    pub async fn accept_link(&self, tcp: TcpStream) -> std::io::Result<Stream> {
        let Some(server) = self.configs().link_server.clone() else {
            return Err(std::io::Error::other(
                "TLS for inter-node links is not configured",
            ));
        };
        let tls = TlsAcceptor::from(server).accept(tcp).await?;
        Ok(Stream::Tls(Box::new(tls.into())))
    }

    /// The client side of a handshake to the node at `ip`: its certificate must chain to
    /// the CA (the name in it is not checked; see `load`). Fails when the configuration
    /// has no client side (`Settings::links` was off).
    pub async fn connect(&self, tcp: TcpStream, ip: IpAddr) -> std::io::Result<Stream> {
        let Some(client) = self.configs().client.clone() else {
            return Err(std::io::Error::other(
                "TLS for inter-node links is not configured",
            ));
        };
        let connector = TlsConnector::from(client);
        let tls = connector
            .connect(rustls::pki_types::ServerName::IpAddress(ip.into()), tcp)
            .await?;
        Ok(Stream::Tls(Box::new(tls.into())))
    }
}
