//! TLS at the node: the `tls-*` settings as `shoal_tls::Settings`, loading them at start,
//! reloading them on CONFIG SET, and the bounded server handshake of a client connection.

use std::time::Duration;

use shoal_cluster::Server;
use shoal_engine::config::NodeConfig;
use shoal_net::TcpStream;
use shoal_tls::{Stream, Tls};
use tokio_util::sync::CancellationToken;

/// A client that has not finished its TLS handshake within this long is dropped, so a
/// connection that sends nothing cannot hold a client slot.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// What `config`'s `tls-*` settings ask of `shoal-tls`.
pub fn settings(config: &NodeConfig) -> shoal_tls::Settings {
    shoal_tls::Settings {
        cert_file: config.tls_cert_file.clone(),
        key_file: config.tls_key_file.clone(),
        client_cert_file: config.tls_client_cert_file.clone(),
        client_key_file: config.tls_client_key_file.clone(),
        ca_cert_file: config.tls_ca_cert_file.clone(),
        ca_cert_dir: config.tls_ca_cert_dir.clone(),
        // Checked by `NodeConfig::validate` and CONFIG SET.
        auth_clients: config.tls_auth_clients.parse().unwrap_or_default(),
        protocols: config.tls_protocols.clone(),
        links: config.tls_cluster,
    }
}

/// Loads the TLS configuration when a listener or the links use TLS.
pub fn load(config: &NodeConfig) -> Result<Option<Tls>, String> {
    if !config.uses_tls() {
        return Ok(None);
    }
    Tls::load(&settings(config))
        .map(Some)
        .map_err(|e| e.to_string())
}

/// Makes CONFIG SET of any `tls-*` setting read the files again (Redis's way to put renewed
/// certificates in force); a configuration that does not load is refused with Redis's text
/// and the one in force stays.
pub fn reload_on_config_set(node: &Server, tls: Tls) {
    let hook: shoal_engine::engine::SettingsHook = Box::new(move |names, next| {
        let Some(name) = names.iter().find(|n| n.starts_with("tls-")) else {
            return Ok(());
        };
        match tls.reload(&settings(next)) {
            Ok(()) => {
                tracing::info!("TLS configuration reloaded");
                Ok(())
            }
            Err(e) => {
                tracing::warn!(error = %e, "CONFIG SET: the TLS configuration does not load; keeping the one in force");
                Err((
                    name.clone(),
                    "Unable to update TLS configuration. Check server logs.".into(),
                ))
            }
        }
    });
    let _ = node.engine.settings_hook.set(hook);
}

/// The server side of a client's TLS handshake, until `HANDSHAKE_TIMEOUT` or `stop`.
pub async fn accept(
    tls: &Tls,
    tcp: TcpStream,
    stop: &CancellationToken,
    client: u64,
) -> Option<Stream> {
    tokio::select! {
        biased;
        () = stop.cancelled() => None,
        r = tokio::time::timeout(HANDSHAKE_TIMEOUT, tls.accept(tcp)) => match r {
            Ok(Ok(stream)) => Some(stream),
            Ok(Err(e)) => {
                tracing::debug!(client, error = %e, "TLS handshake failed");
                None
            }
            Err(_) => {
                tracing::debug!(client, "TLS handshake timed out");
                None
            }
        },
    }
}
