//! go-plugin's handshake line: the one line a plugin prints on stdout once it
//! listens, `CORE|APP|NETWORK|ADDR|PROTOCOL|CERT` (PROTOCOL.md, "Terraform
//! provider plugins").

use base64::Engine;

/// The core protocol version go-plugin speaks.
pub const CORE_PROTOCOL_VERSION: u32 = 1;

/// The plugin protocol versions Converge speaks (tfplugin5 and tfplugin6),
/// sent in `PLUGIN_PROTOCOL_VERSIONS`; go-plugin servers pick the newest
/// they share.
pub const PROTOCOL_VERSIONS: &[u32] = &[5, 6];

/// How the plugin listens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Network {
    /// A unix domain socket; the address is its path.
    Unix,
    /// TCP; the address is `host:port`.
    Tcp,
}

/// A parsed handshake line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handshake {
    /// The plugin protocol version (tfplugin 5 or 6), one of those asked for.
    pub protocol_version: u32,
    pub network: Network,
    /// A socket path (unix) or `host:port` (tcp).
    pub address: String,
    /// The server's certificate (DER); `None`: the plugin serves plaintext.
    pub server_certificate: Option<Vec<u8>>,
}

/// What is wrong with a handshake line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandshakeError {
    #[error("it has {found} '|'-separated field(s); go-plugin's handshake has 6: CORE|APP|NETWORK|ADDR|PROTOCOL|CERT")]
    FieldCount { found: usize },
    #[error("core protocol version {found:?}: go-plugin's is {CORE_PROTOCOL_VERSION}")]
    CoreVersion { found: String },
    #[error("it speaks plugin protocol {found}, and Converge speaks {}", join(.accepted))]
    ProtocolVersion { found: String, accepted: Vec<u32> },
    #[error("network {found:?}: expected \"unix\" or \"tcp\"")]
    Network { found: String },
    #[error("the address is empty")]
    EmptyAddress,
    #[error("tcp address {found:?} is not host:port")]
    TcpAddress { found: String },
    #[error("protocol {found:?}: Terraform providers speak \"grpc\"")]
    Protocol { found: String },
    #[error("the server certificate is not base64 DER: {message}")]
    Certificate { message: String },
}

fn join(versions: &[u32]) -> String {
    versions
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(" and ")
}

impl Handshake {
    /// Parses `line` (surrounding whitespace ignored); the plugin protocol
    /// version must be one of `accepted`.
    pub fn parse(line: &str, accepted: &[u32]) -> Result<Handshake, HandshakeError> {
        let fields: Vec<&str> = line.trim().split('|').collect();
        // go-plugin writes 6 fields; a plugin without AutoMTLS may leave the
        // certificate off. Fewer would mean net/rpc, which Terraform never uses.
        if !(5..=6).contains(&fields.len()) {
            return Err(HandshakeError::FieldCount {
                found: fields.len(),
            });
        }
        if fields[0].parse::<u32>().ok() != Some(CORE_PROTOCOL_VERSION) {
            return Err(HandshakeError::CoreVersion {
                found: fields[0].to_owned(),
            });
        }
        let protocol_version = fields[1]
            .parse::<u32>()
            .ok()
            .filter(|v| accepted.contains(v))
            .ok_or_else(|| HandshakeError::ProtocolVersion {
                found: fields[1].to_owned(),
                accepted: accepted.to_vec(),
            })?;
        let network = match fields[2] {
            "unix" => Network::Unix,
            "tcp" => Network::Tcp,
            other => {
                return Err(HandshakeError::Network {
                    found: other.to_owned(),
                })
            }
        };
        let address = fields[3];
        if address.is_empty() {
            return Err(HandshakeError::EmptyAddress);
        }
        if network == Network::Tcp && !is_host_port(address) {
            return Err(HandshakeError::TcpAddress {
                found: address.to_owned(),
            });
        }
        if fields[4] != "grpc" {
            return Err(HandshakeError::Protocol {
                found: fields[4].to_owned(),
            });
        }
        let server_certificate = match fields.get(5).copied().unwrap_or("") {
            "" => None,
            text => Some(
                base64::engine::general_purpose::STANDARD_NO_PAD
                    .decode(text.trim_end_matches('='))
                    .map_err(|e| HandshakeError::Certificate {
                        message: e.to_string(),
                    })?,
            ),
        };
        Ok(Handshake {
            protocol_version,
            network,
            address: address.to_owned(),
            server_certificate,
        })
    }
}

fn is_host_port(address: &str) -> bool {
    match address.rsplit_once(':') {
        Some((host, port)) => !host.is_empty() && port.parse::<u16>().is_ok_and(|p| p != 0),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Result<Handshake, HandshakeError> {
        Handshake::parse(line, &[6])
    }

    #[test]
    fn a_unix_line_with_a_certificate() {
        let h = parse("1|6|unix|/tmp/x/py-tf-plugin.sock|grpc|AQID\n").unwrap();
        assert_eq!(
            h,
            Handshake {
                protocol_version: 6,
                network: Network::Unix,
                address: "/tmp/x/py-tf-plugin.sock".to_owned(),
                server_certificate: Some(vec![1, 2, 3]),
            }
        );
    }

    #[test]
    fn a_tcp_line_without_a_certificate_is_plaintext() {
        let h = parse("1|6|tcp|127.0.0.1:4321|grpc|").unwrap();
        assert_eq!(h.network, Network::Tcp);
        assert_eq!(h.address, "127.0.0.1:4321");
        assert_eq!(h.server_certificate, None);
        let five = parse("1|6|tcp|127.0.0.1:4321|grpc").unwrap();
        assert_eq!(five, h);
    }

    #[test]
    fn padding_is_tolerated() {
        let h = parse("1|6|unix|/s|grpc|AQI=").unwrap();
        assert_eq!(h.server_certificate, Some(vec![1, 2]));
    }

    #[test]
    fn version_5_only_when_asked_for() {
        assert!(Handshake::parse("1|5|unix|/s|grpc|", &[5, 6]).is_ok());
        assert_eq!(
            parse("1|5|unix|/s|grpc|").unwrap_err().to_string(),
            "it speaks plugin protocol 5, and Converge speaks 6"
        );
    }

    #[test]
    fn every_malformed_form_is_named() {
        let cases: &[(&str, HandshakeError)] = &[
            ("", HandshakeError::FieldCount { found: 1 }),
            ("hello world", HandshakeError::FieldCount { found: 1 }),
            ("1|6|unix|/s", HandshakeError::FieldCount { found: 4 }),
            (
                "1|6|unix|/s|grpc|x|y",
                HandshakeError::FieldCount { found: 7 },
            ),
            (
                "2|6|unix|/s|grpc|",
                HandshakeError::CoreVersion { found: "2".into() },
            ),
            (
                "one|6|unix|/s|grpc|",
                HandshakeError::CoreVersion {
                    found: "one".into(),
                },
            ),
            (
                "1|x|unix|/s|grpc|",
                HandshakeError::ProtocolVersion {
                    found: "x".into(),
                    accepted: vec![6],
                },
            ),
            (
                "1|6|udp|/s|grpc|",
                HandshakeError::Network {
                    found: "udp".into(),
                },
            ),
            ("1|6|unix||grpc|", HandshakeError::EmptyAddress),
            (
                "1|6|tcp|localhost|grpc|",
                HandshakeError::TcpAddress {
                    found: "localhost".into(),
                },
            ),
            (
                "1|6|tcp|127.0.0.1:0|grpc|",
                HandshakeError::TcpAddress {
                    found: "127.0.0.1:0".into(),
                },
            ),
            (
                "1|6|unix|/s|netrpc|",
                HandshakeError::Protocol {
                    found: "netrpc".into(),
                },
            ),
        ];
        for (line, expected) in cases {
            assert_eq!(&parse(line).unwrap_err(), expected, "line {line:?}");
        }
        let bad_cert = parse("1|6|unix|/s|grpc|not base64!").unwrap_err();
        assert!(
            matches!(bad_cert, HandshakeError::Certificate { .. }),
            "{bad_cert:?}"
        );
    }
}
