//! AutoMTLS as go-plugin does it: we make a fresh self-signed client
//! certificate per launch (its key never leaves the process) and hand the
//! plugin its PEM in `PLUGIN_CLIENT_CERT`; the plugin prints its own
//! self-signed server certificate in the handshake line, and we trust
//! exactly that certificate, nothing else.
//!
//! What the plugin's certificate holds decides the rest:
//!
//! - go-plugin gives every provider an ECDSA **P-521** key. A Go TLS stack
//!   in TLS 1.2 signs with whichever ECDSA scheme the client lists first,
//!   whatever the curve (in TLS 1.2 a scheme names only the hash), so a
//!   P-521 key signs `ecdsa_secp256r1_sha256`; in TLS 1.3 the scheme is tied
//!   to the curve. Every ECDSA scheme is accepted with a P-256, P-384 or
//!   P-521 key in TLS 1.2, and the curve's own scheme in TLS 1.3.
//! - RSA keys sign RSA-PSS (TLS 1.2 and 1.3, 2048 bits and up) or PKCS#1
//!   v1.5 (TLS 1.2). PyPI's `tf` signs with a 1024-bit RSA key, which
//!   TLS 1.3 (RSA-PSS, 2048 bits and up in our crypto library) cannot
//!   verify: with an RSA key under 2048 bits we offer TLS 1.2 only, with
//!   any other key TLS 1.2 and 1.3. The pinned certificate, not the key
//!   size, is what authenticates the plugin here.
//!
//! When the handshake fails, [`Rejection`] says why in one line: the
//! certificate differs from the one printed, or the signature (its scheme
//! and the key) did not verify.

use std::sync::{Arc, Mutex};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{
    alg_id, AlgorithmIdentifier, CertificateDer, InvalidSignature, PrivateKeyDer,
    PrivatePkcs8KeyDer, ServerName, SignatureVerificationAlgorithm, UnixTime,
};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, SignatureScheme,
    SupportedProtocolVersion,
};

use crate::child::lock;

/// Why TLS could not be set up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TlsError {
    #[error("could not generate the client certificate: {0}")]
    Certificate(String),
    #[error("could not build the TLS configuration: {0}")]
    Config(String),
    #[error("the certificate in its handshake line is not a certificate Converge can read: {0}")]
    ServerCertificate(String),
}

/// The key in a plugin's certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerKey {
    /// ECDSA on a NIST curve: 256, 384 or 521 (bits).
    Ecdsa(u16),
    /// RSA of this many bits.
    Rsa(usize),
    Ed25519,
    /// Anything else.
    Other,
}

impl std::fmt::Display for ServerKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServerKey::Ecdsa(bits) => write!(f, "ECDSA P-{bits} key"),
            ServerKey::Rsa(bits) => write!(f, "{bits}-bit RSA key"),
            ServerKey::Ed25519 => write!(f, "Ed25519 key"),
            ServerKey::Other => write!(f, "key of an unsupported kind"),
        }
    }
}

impl ServerKey {
    /// The key of the certificate `der`.
    pub fn of(der: &[u8]) -> Result<ServerKey, TlsError> {
        use x509_parser::oid_registry::{
            OID_EC_P256, OID_KEY_TYPE_EC_PUBLIC_KEY, OID_NIST_EC_P384, OID_NIST_EC_P521,
            OID_PKCS1_RSAENCRYPTION, OID_SIG_ED25519,
        };
        use x509_parser::prelude::{FromDer, X509Certificate};
        use x509_parser::public_key::PublicKey;
        let (_, cert) = X509Certificate::from_der(der)
            .map_err(|e| TlsError::ServerCertificate(e.to_string()))?;
        let spki = &cert.tbs_certificate.subject_pki;
        let algorithm = &spki.algorithm.algorithm;
        if *algorithm == OID_PKCS1_RSAENCRYPTION {
            return match spki.parsed() {
                Ok(PublicKey::RSA(rsa)) => Ok(ServerKey::Rsa(rsa.key_size())),
                _ => Err(TlsError::ServerCertificate(
                    "its RSA public key is malformed".to_owned(),
                )),
            };
        }
        if *algorithm == OID_KEY_TYPE_EC_PUBLIC_KEY {
            let curve = spki
                .algorithm
                .parameters
                .as_ref()
                .and_then(|p| p.as_oid().ok());
            return Ok(match curve {
                Some(c) if c == OID_EC_P256 => ServerKey::Ecdsa(256),
                Some(c) if c == OID_NIST_EC_P384 => ServerKey::Ecdsa(384),
                Some(c) if c == OID_NIST_EC_P521 => ServerKey::Ecdsa(521),
                _ => ServerKey::Other,
            });
        }
        if *algorithm == OID_SIG_ED25519 {
            return Ok(ServerKey::Ed25519);
        }
        Ok(ServerKey::Other)
    }

    /// The TLS versions whose handshake signatures we can verify with
    /// this key.
    fn versions(self) -> &'static [&'static SupportedProtocolVersion] {
        static TLS12: &[&SupportedProtocolVersion] = &[&rustls::version::TLS12];
        static BOTH: &[&SupportedProtocolVersion] =
            &[&rustls::version::TLS13, &rustls::version::TLS12];
        match self {
            ServerKey::Rsa(bits) if bits < 2048 => TLS12,
            _ => BOTH,
        }
    }
}

impl ServerKey {
    /// The schemes we offer a plugin with this key, in our order of
    /// preference (a Go server takes the first it can sign with): the ones
    /// its key can make and we can check (RSA-PSS not with a key under
    /// 2048 bits).
    fn schemes(self) -> Vec<SignatureScheme> {
        SCHEMES
            .iter()
            .copied()
            .filter(|scheme| match self {
                ServerKey::Ecdsa(_) => matches!(
                    scheme,
                    SignatureScheme::ECDSA_NISTP256_SHA256
                        | SignatureScheme::ECDSA_NISTP384_SHA384
                        | SignatureScheme::ECDSA_NISTP521_SHA512
                ),
                ServerKey::Ed25519 => *scheme == SignatureScheme::ED25519,
                ServerKey::Rsa(bits) => match scheme {
                    SignatureScheme::RSA_PSS_SHA256
                    | SignatureScheme::RSA_PSS_SHA384
                    | SignatureScheme::RSA_PSS_SHA512 => bits >= 2048,
                    SignatureScheme::RSA_PKCS1_SHA256 | SignatureScheme::RSA_PKCS1_SHA512 => true,
                    SignatureScheme::RSA_PKCS1_SHA384 => bits >= 2048,
                    _ => false,
                },
                ServerKey::Other => true,
            })
            .collect()
    }
}

/// Why the last TLS handshake with a plugin was refused, in one line (set
/// by the verifier; read after a failed connection).
#[derive(Debug, Clone, Default)]
pub struct Rejection(Arc<Mutex<Option<String>>>);

impl Rejection {
    fn set(&self, reason: String) {
        *lock(&self.0) = Some(reason);
    }

    /// The reason, if the verifier refused the plugin.
    pub fn reason(&self) -> Option<String> {
        lock(&self.0).clone()
    }
}

/// Our side of AutoMTLS: a self-signed certificate and its private key.
pub struct ClientCertificate {
    pem: String,
    der: CertificateDer<'static>,
    key: PrivatePkcs8KeyDer<'static>,
}

impl std::fmt::Debug for ClientCertificate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientCertificate").finish_non_exhaustive()
    }
}

impl ClientCertificate {
    /// A fresh ECDSA P-256 certificate for `localhost`, usable as a client
    /// certificate and as its own CA (go-plugin servers put it in their
    /// client CA pool).
    pub fn generate() -> Result<ClientCertificate, TlsError> {
        let fail = |e: rcgen::Error| TlsError::Certificate(e.to_string());
        let key = KeyPair::generate().map_err(fail)?;
        let mut params = CertificateParams::new(vec!["localhost".to_owned()]).map_err(fail)?;
        params
            .distinguished_name
            .push(DnType::CommonName, "localhost");
        params
            .distinguished_name
            .push(DnType::OrganizationName, "Converge");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
            KeyUsagePurpose::KeyCertSign,
        ];
        params.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ClientAuth,
            ExtendedKeyUsagePurpose::ServerAuth,
        ];
        let cert = params.self_signed(&key).map_err(fail)?;
        Ok(ClientCertificate {
            pem: cert.pem(),
            der: cert.der().clone(),
            key: PrivatePkcs8KeyDer::from(key.serialize_der()),
        })
    }

    /// The certificate in PEM, for `PLUGIN_CLIENT_CERT`.
    pub fn pem(&self) -> &str {
        &self.pem
    }

    /// A client configuration that presents this certificate and trusts
    /// only `server_certificate` (DER, as the handshake line carried it),
    /// with the TLS versions its key allows; and where the verifier says
    /// why it refused the plugin.
    pub fn client_config(
        &self,
        server_certificate: &[u8],
    ) -> Result<(ClientConfig, Rejection), TlsError> {
        let key = ServerKey::of(server_certificate)?;
        let rejection = Rejection::default();
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let mut config = ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(key.versions())
            .map_err(|e| TlsError::Config(e.to_string()))?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(PinnedServer {
                certificate: server_certificate.to_vec(),
                key,
                rejection: rejection.clone(),
            }))
            .with_client_auth_cert(
                vec![self.der.clone()],
                PrivateKeyDer::Pkcs8(self.key.clone_key()),
            )
            .map_err(|e| TlsError::Config(e.to_string()))?;
        config.alpn_protocols = vec![b"h2".to_vec()];
        Ok((config, rejection))
    }
}

/// Trusts exactly one certificate: the one the plugin printed.
#[derive(Debug)]
struct PinnedServer {
    certificate: Vec<u8>,
    key: ServerKey,
    rejection: Rejection,
}

impl PinnedServer {
    /// Checks a handshake signature: in TLS 1.2 any algorithm listed for
    /// `scheme` whose key kind matches, in TLS 1.3 only the first.
    fn verify(
        &self,
        tls13: bool,
        message: &[u8],
        cert: &CertificateDer<'_>,
        scheme: SignatureScheme,
        signature: &[u8],
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let version = if tls13 { "TLS 1.3" } else { "TLS 1.2" };
        let refuse = |why: &str| {
            self.rejection.set(format!(
                "it signed the {version} handshake with {scheme:?} over its {}, {why}",
                self.key
            ));
            rustls::Error::InvalidCertificate(CertificateError::BadSignature)
        };
        let Some(algorithms) = algorithms(scheme) else {
            return Err(refuse("a signature scheme Converge does not accept"));
        };
        let algorithms = if tls13 {
            if !allowed_in_tls13(scheme) {
                return Err(refuse("a scheme TLS 1.3 does not allow"));
            }
            &algorithms[..1]
        } else {
            algorithms
        };
        let cert = webpki::EndEntityCert::try_from(cert)
            .map_err(|e| refuse(&format!("and its certificate is unreadable: {e}")))?;
        let mut last = None;
        for alg in algorithms {
            match cert.verify_signature(*alg, message, signature) {
                Ok(()) => return Ok(HandshakeSignatureValid::assertion()),
                Err(e) => last = Some(e),
            }
        }
        Err(match last {
            Some(webpki::Error::UnsupportedSignatureAlgorithmForPublicKeyContext(_)) | None => {
                refuse("a combination Converge does not accept")
            }
            Some(e) => refuse(&format!("and the signature does not verify ({e:?})")),
        })
    }
}

impl ServerCertVerifier for PinnedServer {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if end_entity.as_ref() == self.certificate.as_slice() {
            Ok(ServerCertVerified::assertion())
        } else {
            self.rejection.set(
                "the certificate it presented is not the one its handshake line carried".to_owned(),
            );
            Err(rustls::Error::InvalidCertificate(
                CertificateError::ApplicationVerificationFailure,
            ))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.verify(false, message, cert, dss.scheme, dss.signature())
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.verify(true, message, cert, dss.scheme, dss.signature())
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.key.schemes()
    }
}

/// The schemes we offer, in our order of preference (a Go server takes the
/// first it can sign with).
const SCHEMES: &[SignatureScheme] = &[
    SignatureScheme::ECDSA_NISTP256_SHA256,
    SignatureScheme::ECDSA_NISTP384_SHA384,
    SignatureScheme::ECDSA_NISTP521_SHA512,
    SignatureScheme::ED25519,
    SignatureScheme::RSA_PSS_SHA256,
    SignatureScheme::RSA_PSS_SHA384,
    SignatureScheme::RSA_PSS_SHA512,
    SignatureScheme::RSA_PKCS1_SHA256,
    SignatureScheme::RSA_PKCS1_SHA384,
    SignatureScheme::RSA_PKCS1_SHA512,
];

/// The algorithms that verify `scheme`; the first is the one TLS 1.3 ties
/// to it.
fn algorithms(
    scheme: SignatureScheme,
) -> Option<&'static [&'static dyn SignatureVerificationAlgorithm]> {
    MAPPING
        .iter()
        .find(|(s, _)| *s == scheme)
        .map(|(_, algorithms)| *algorithms)
}

/// TLS 1.3 signs with ECDSA tied to its curve, EdDSA or RSA-PSS only.
fn allowed_in_tls13(scheme: SignatureScheme) -> bool {
    matches!(
        scheme,
        SignatureScheme::ECDSA_NISTP256_SHA256
            | SignatureScheme::ECDSA_NISTP384_SHA384
            | SignatureScheme::ECDSA_NISTP521_SHA512
            | SignatureScheme::ED25519
            | SignatureScheme::RSA_PSS_SHA256
            | SignatureScheme::RSA_PSS_SHA384
            | SignatureScheme::RSA_PSS_SHA512
    )
}

type Algorithms = &'static [&'static dyn SignatureVerificationAlgorithm];

static MAPPING: &[(SignatureScheme, Algorithms)] = &[
    (
        SignatureScheme::ECDSA_NISTP256_SHA256,
        &[
            webpki::aws_lc_rs::ECDSA_P256_SHA256,
            webpki::aws_lc_rs::ECDSA_P384_SHA256,
            webpki::aws_lc_rs::ECDSA_P521_SHA256,
        ],
    ),
    (
        SignatureScheme::ECDSA_NISTP384_SHA384,
        &[
            webpki::aws_lc_rs::ECDSA_P384_SHA384,
            webpki::aws_lc_rs::ECDSA_P256_SHA384,
            webpki::aws_lc_rs::ECDSA_P521_SHA384,
        ],
    ),
    (
        SignatureScheme::ECDSA_NISTP521_SHA512,
        &[
            webpki::aws_lc_rs::ECDSA_P521_SHA512,
            webpki::aws_lc_rs::ECDSA_P256_SHA512,
            webpki::aws_lc_rs::ECDSA_P384_SHA512,
        ],
    ),
    (SignatureScheme::ED25519, &[webpki::aws_lc_rs::ED25519]),
    (
        SignatureScheme::RSA_PSS_SHA256,
        &[webpki::aws_lc_rs::RSA_PSS_2048_8192_SHA256_LEGACY_KEY],
    ),
    (
        SignatureScheme::RSA_PSS_SHA384,
        &[webpki::aws_lc_rs::RSA_PSS_2048_8192_SHA384_LEGACY_KEY],
    ),
    (
        SignatureScheme::RSA_PSS_SHA512,
        &[webpki::aws_lc_rs::RSA_PSS_2048_8192_SHA512_LEGACY_KEY],
    ),
    (SignatureScheme::RSA_PKCS1_SHA256, &[&RSA_SHA256]),
    (
        SignatureScheme::RSA_PKCS1_SHA384,
        &[webpki::aws_lc_rs::RSA_PKCS1_2048_8192_SHA384],
    ),
    (SignatureScheme::RSA_PKCS1_SHA512, &[&RSA_SHA512]),
];

/// RSA PKCS#1 v1.5 accepting keys from 1024 bits (PyPI's `tf`).
#[derive(Debug)]
struct RsaPkcs1 {
    verification: &'static aws_lc_rs::signature::RsaParameters,
    signature_alg_id: AlgorithmIdentifier,
}

impl SignatureVerificationAlgorithm for RsaPkcs1 {
    fn verify_signature(
        &self,
        public_key: &[u8],
        message: &[u8],
        signature: &[u8],
    ) -> Result<(), InvalidSignature> {
        aws_lc_rs::signature::UnparsedPublicKey::new(self.verification, public_key)
            .verify(message, signature)
            .map_err(|_| InvalidSignature)
    }

    fn public_key_alg_id(&self) -> AlgorithmIdentifier {
        alg_id::RSA_ENCRYPTION
    }

    fn signature_alg_id(&self) -> AlgorithmIdentifier {
        self.signature_alg_id
    }
}

static RSA_SHA256: RsaPkcs1 = RsaPkcs1 {
    verification: &aws_lc_rs::signature::RSA_PKCS1_1024_8192_SHA256_FOR_LEGACY_USE_ONLY,
    signature_alg_id: alg_id::RSA_PKCS1_SHA256,
};
static RSA_SHA512: RsaPkcs1 = RsaPkcs1 {
    verification: &aws_lc_rs::signature::RSA_PKCS1_1024_8192_SHA512_FOR_LEGACY_USE_ONLY,
    signature_alg_id: alg_id::RSA_PKCS1_SHA512,
};

#[cfg(test)]
mod tests;
