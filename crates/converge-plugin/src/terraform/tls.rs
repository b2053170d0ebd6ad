//! AutoMTLS as go-plugin does it: we make a fresh self-signed client
//! certificate per launch (its key never leaves the process) and hand the
//! plugin its PEM in `PLUGIN_CLIENT_CERT`; the plugin prints its own
//! self-signed server certificate in the handshake line, and we trust
//! exactly that certificate, nothing else.
//!
//! TLS 1.2 only, with ECDSA, Ed25519 and RSA PKCS#1 signatures: go-plugin
//! servers use ECDSA keys, but PyPI's `tf` signs with a 1024-bit RSA key,
//! which TLS 1.3 (RSA-PSS, 2048 bits and up in our crypto library) cannot
//! verify. The pinned certificate, not the key size, is what authenticates
//! the plugin here.

use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::{
    alg_id, AlgorithmIdentifier, CertificateDer, InvalidSignature, PrivateKeyDer,
    PrivatePkcs8KeyDer, ServerName, SignatureVerificationAlgorithm, UnixTime,
};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, SignatureScheme};

/// Why TLS could not be set up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TlsError {
    #[error("could not generate the client certificate: {0}")]
    Certificate(String),
    #[error("could not build the TLS configuration: {0}")]
    Config(String),
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
    /// only `server_certificate` (DER, as the handshake line carried it).
    pub fn client_config(&self, server_certificate: &[u8]) -> Result<ClientConfig, TlsError> {
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let mut config = ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS12])
            .map_err(|e| TlsError::Config(e.to_string()))?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(PinnedServer {
                certificate: server_certificate.to_vec(),
            }))
            .with_client_auth_cert(
                vec![self.der.clone()],
                PrivateKeyDer::Pkcs8(self.key.clone_key()),
            )
            .map_err(|e| TlsError::Config(e.to_string()))?;
        config.alpn_protocols = vec![b"h2".to_vec()];
        Ok(config)
    }
}

/// Trusts exactly one certificate: the one the plugin printed.
#[derive(Debug)]
struct PinnedServer {
    certificate: Vec<u8>,
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
        rustls::crypto::verify_tls12_signature(message, cert, dss, &SIGNATURES)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &SIGNATURES)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        SIGNATURES.supported_schemes()
    }
}

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

static SIGNATURES: WebPkiSupportedAlgorithms = WebPkiSupportedAlgorithms {
    all: &[
        webpki::aws_lc_rs::ECDSA_P256_SHA256,
        webpki::aws_lc_rs::ECDSA_P384_SHA384,
        webpki::aws_lc_rs::ECDSA_P521_SHA512,
        webpki::aws_lc_rs::ED25519,
        &RSA_SHA256,
        &RSA_SHA512,
    ],
    mapping: &[
        (
            SignatureScheme::ECDSA_NISTP256_SHA256,
            &[webpki::aws_lc_rs::ECDSA_P256_SHA256],
        ),
        (
            SignatureScheme::ECDSA_NISTP384_SHA384,
            &[webpki::aws_lc_rs::ECDSA_P384_SHA384],
        ),
        (
            SignatureScheme::ECDSA_NISTP521_SHA512,
            &[webpki::aws_lc_rs::ECDSA_P521_SHA512],
        ),
        (SignatureScheme::ED25519, &[webpki::aws_lc_rs::ED25519]),
        (SignatureScheme::RSA_PKCS1_SHA256, &[&RSA_SHA256]),
        (SignatureScheme::RSA_PKCS1_SHA512, &[&RSA_SHA512]),
    ],
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_certificate_each_time_and_a_config_that_pins_the_server() {
        let a = ClientCertificate::generate().unwrap();
        let b = ClientCertificate::generate().unwrap();
        assert!(a.pem().starts_with("-----BEGIN CERTIFICATE-----"));
        assert_ne!(a.pem(), b.pem());
        let config = a.client_config(b.der.as_ref()).unwrap();
        assert_eq!(config.alpn_protocols, vec![b"h2".to_vec()]);
        let pinned = PinnedServer {
            certificate: b.der.to_vec(),
        };
        let name = ServerName::try_from("localhost").unwrap();
        assert!(pinned
            .verify_server_cert(&b.der, &[], &name, &[], UnixTime::now())
            .is_ok());
        assert!(pinned
            .verify_server_cert(&a.der, &[], &name, &[], UnixTime::now())
            .is_err());
    }
}
