//! Where a request comes from, for the audit log: the peer's address or,
//! when the peer is a trusted proxy (a balancer in front of the
//! replicas), the client its `X-Forwarded-For` names — the rightmost
//! address there that is not itself a trusted proxy, since every proxy
//! appends the address it received the request from and only the
//! trusted ones can be believed.

use std::net::{IpAddr, SocketAddr};

use axum::http::HeaderMap;
use ipnet::IpNet;

/// The client's address: `ip`, or `ip:port` when the peer is the
/// client itself; empty when the service is embedded without peer
/// addresses.
pub(crate) fn client_address(
    peer: Option<SocketAddr>,
    headers: &HeaderMap,
    trusted: &[IpNet],
) -> String {
    let Some(peer) = peer else {
        return String::new();
    };
    let is_trusted = |ip: &IpAddr| trusted.iter().any(|net| net.contains(ip));
    if !is_trusted(&peer.ip()) {
        return peer.to_string();
    }
    let forwarded: Vec<IpAddr> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|a| a.trim().parse().ok())
        .collect();
    match forwarded.iter().rev().find(|ip| !is_trusted(ip)) {
        Some(client) => client.to_string(),
        // Every hop is trusted: the first is the client.
        None => forwarded
            .first()
            .map_or_else(|| peer.to_string(), ToString::to_string),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn a_forwarded_address_is_believed_from_a_trusted_proxy_only() {
        let trusted: Vec<IpNet> = vec!["127.0.0.0/8".parse().unwrap()];
        let mut headers = HeaderMap::new();
        headers.insert(
            "x-forwarded-for",
            HeaderValue::from_static("6.6.6.6, 10.1.2.3"),
        );
        let proxy: SocketAddr = "127.0.0.1:5000".parse().unwrap();
        let direct: SocketAddr = "192.0.2.7:5000".parse().unwrap();
        // The rightmost untrusted hop: what the trusted proxy saw.
        assert_eq!(client_address(Some(proxy), &headers, &trusted), "10.1.2.3");
        // From an untrusted peer the header is ignored.
        assert_eq!(
            client_address(Some(direct), &headers, &trusted),
            "192.0.2.7:5000"
        );
        assert_eq!(client_address(Some(proxy), &headers, &[]), "127.0.0.1:5000");
        assert_eq!(
            client_address(Some(proxy), &HeaderMap::new(), &trusted),
            "127.0.0.1:5000"
        );
        assert_eq!(client_address(None, &headers, &trusted), "");
    }
}

/// The client's address as an extractor (see [`client_address`]).
#[derive(Debug, Clone)]
pub(crate) struct Peer(pub String);

impl axum::extract::FromRequestParts<super::AppState> for Peer {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &super::AppState,
    ) -> Result<Peer, std::convert::Infallible> {
        let peer = parts
            .extensions
            .get::<axum::extract::ConnectInfo<SocketAddr>>()
            .map(|c| c.0);
        Ok(Peer(client_address(
            peer,
            &parts.headers,
            &state.limits.trusted_proxies,
        )))
    }
}
