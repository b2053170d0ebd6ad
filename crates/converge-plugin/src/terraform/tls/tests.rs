use super::*;

/// A self-signed certificate on a key of `alg`, and the key (PKCS#8).
fn certificate(key: KeyPair) -> (Vec<u8>, Vec<u8>) {
    let params = CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
    let cert = params.self_signed(&key).unwrap();
    (cert.der().to_vec(), key.serialize_der())
}

fn ecdsa(alg: &'static rcgen::SignatureAlgorithm) -> (Vec<u8>, Vec<u8>) {
    certificate(KeyPair::generate_for(alg).unwrap())
}

fn pinned(cert: &[u8]) -> PinnedServer {
    PinnedServer {
        certificate: cert.to_vec(),
        key: ServerKey::of(cert).unwrap(),
        rejection: Rejection::default(),
    }
}

/// `message` signed with the PKCS#8 ECDSA key by `alg`.
fn sign(alg: &'static aws_lc_rs::signature::EcdsaSigningAlgorithm, pkcs8: &[u8]) -> Vec<u8> {
    let key = aws_lc_rs::signature::EcdsaKeyPair::from_pkcs8(alg, pkcs8).unwrap();
    let rng = aws_lc_rs::rand::SystemRandom::new();
    key.sign(&rng, MESSAGE).unwrap().as_ref().to_vec()
}

const MESSAGE: &[u8] = b"the handshake transcript";

#[test]
fn a_fresh_certificate_each_time_and_a_config_that_pins_the_server() {
    let a = ClientCertificate::generate().unwrap();
    let b = ClientCertificate::generate().unwrap();
    assert!(a.pem().starts_with("-----BEGIN CERTIFICATE-----"));
    assert_ne!(a.pem(), b.pem());
    let (config, _) = a.client_config(b.der.as_ref()).unwrap();
    assert_eq!(config.alpn_protocols, vec![b"h2".to_vec()]);
    let server = pinned(b.der.as_ref());
    let name = ServerName::try_from("localhost").unwrap();
    assert!(server
        .verify_server_cert(&b.der, &[], &name, &[], UnixTime::now())
        .is_ok());
    assert!(server.rejection.reason().is_none());
    assert!(server
        .verify_server_cert(&a.der, &[], &name, &[], UnixTime::now())
        .is_err());
    assert_eq!(
        server.rejection.reason().unwrap(),
        "the certificate it presented is not the one its handshake line carried"
    );
}

#[test]
fn keys_are_read_from_the_certificate() {
    use rcgen::{PKCS_ECDSA_P256_SHA256, PKCS_ECDSA_P384_SHA384, PKCS_ECDSA_P521_SHA512};
    assert_eq!(
        ServerKey::of(&ecdsa(&PKCS_ECDSA_P256_SHA256).0).unwrap(),
        ServerKey::Ecdsa(256)
    );
    assert_eq!(
        ServerKey::of(&ecdsa(&PKCS_ECDSA_P384_SHA384).0).unwrap(),
        ServerKey::Ecdsa(384)
    );
    assert_eq!(
        ServerKey::of(&ecdsa(&PKCS_ECDSA_P521_SHA512).0).unwrap(),
        ServerKey::Ecdsa(521)
    );
    let rsa = KeyPair::generate_rsa_for(&rcgen::PKCS_RSA_SHA256, rcgen::RsaKeySize::_2048).unwrap();
    assert_eq!(
        ServerKey::of(&certificate(rsa).0).unwrap(),
        ServerKey::Rsa(2048)
    );
    assert!(matches!(
        ServerKey::of(b"not a certificate"),
        Err(TlsError::ServerCertificate(_))
    ));
}

#[test]
fn tls_13_is_offered_except_to_small_rsa_keys() {
    assert_eq!(ServerKey::Rsa(1024).versions().len(), 1);
    assert_eq!(
        ServerKey::Rsa(1024).versions()[0].version,
        rustls::ProtocolVersion::TLSv1_2
    );
    for key in [
        ServerKey::Rsa(2048),
        ServerKey::Ecdsa(256),
        ServerKey::Ecdsa(521),
        ServerKey::Ed25519,
    ] {
        assert_eq!(key.versions().len(), 2, "{key}");
    }
}

/// go-plugin's P-521 key signs TLS 1.2 handshakes with the scheme the
/// client lists first, `ecdsa_secp256r1_sha256`: SHA-256 over P-521.
#[test]
fn a_p521_key_signing_sha256_in_tls_12_is_accepted() {
    use aws_lc_rs::signature::{
        ECDSA_P384_SHA384_ASN1_SIGNING, ECDSA_P521_SHA256_ASN1_SIGNING,
        ECDSA_P521_SHA384_ASN1_SIGNING, ECDSA_P521_SHA512_ASN1_SIGNING,
    };
    let (cert, key) = ecdsa(&rcgen::PKCS_ECDSA_P521_SHA512);
    let server = pinned(&cert);
    let der = CertificateDer::from(cert.clone());
    for (scheme, alg) in [
        (
            SignatureScheme::ECDSA_NISTP256_SHA256,
            &ECDSA_P521_SHA256_ASN1_SIGNING,
        ),
        (
            SignatureScheme::ECDSA_NISTP384_SHA384,
            &ECDSA_P521_SHA384_ASN1_SIGNING,
        ),
        (
            SignatureScheme::ECDSA_NISTP521_SHA512,
            &ECDSA_P521_SHA512_ASN1_SIGNING,
        ),
    ] {
        let signature = sign(alg, &key);
        assert!(
            server
                .verify(false, MESSAGE, &der, scheme, &signature)
                .is_ok(),
            "{scheme:?}"
        );
    }
    // TLS 1.3 ties the scheme to the curve: P-521 signs its own.
    let own = sign(&ECDSA_P521_SHA512_ASN1_SIGNING, &key);
    assert!(server
        .verify(
            true,
            MESSAGE,
            &der,
            SignatureScheme::ECDSA_NISTP521_SHA512,
            &own
        )
        .is_ok());
    let other = sign(&ECDSA_P521_SHA256_ASN1_SIGNING, &key);
    assert!(server
        .verify(
            true,
            MESSAGE,
            &der,
            SignatureScheme::ECDSA_NISTP256_SHA256,
            &other
        )
        .is_err());
    assert_eq!(
        server.rejection.reason().unwrap(),
        "it signed the TLS 1.3 handshake with ECDSA_NISTP256_SHA256 over its ECDSA P-521 key, \
         a combination Converge does not accept"
    );

    // A P-384 key with its own scheme, in either version.
    let (cert, key) = ecdsa(&rcgen::PKCS_ECDSA_P384_SHA384);
    let server = pinned(&cert);
    let der = CertificateDer::from(cert);
    let signature = sign(&ECDSA_P384_SHA384_ASN1_SIGNING, &key);
    for tls13 in [false, true] {
        assert!(server
            .verify(
                tls13,
                MESSAGE,
                &der,
                SignatureScheme::ECDSA_NISTP384_SHA384,
                &signature
            )
            .is_ok());
    }
}

#[test]
fn a_bad_signature_is_named_with_its_scheme_and_key() {
    let (cert, key) = ecdsa(&rcgen::PKCS_ECDSA_P521_SHA512);
    let server = pinned(&cert);
    let mut signature = sign(&aws_lc_rs::signature::ECDSA_P521_SHA256_ASN1_SIGNING, &key);
    let last = signature.len() - 1;
    signature[last] ^= 1;
    let der = CertificateDer::from(cert);
    assert!(server
        .verify(
            false,
            MESSAGE,
            &der,
            SignatureScheme::ECDSA_NISTP256_SHA256,
            &signature
        )
        .is_err());
    let reason = server.rejection.reason().unwrap();
    assert!(
        reason.starts_with(
            "it signed the TLS 1.2 handshake with ECDSA_NISTP256_SHA256 over its ECDSA P-521 key, \
             and the signature does not verify"
        ),
        "{reason}"
    );
    assert!(server
        .verify(
            false,
            MESSAGE,
            &der,
            SignatureScheme::RSA_PKCS1_SHA1,
            &signature
        )
        .is_err());
    assert_eq!(
        server.rejection.reason().unwrap(),
        "it signed the TLS 1.2 handshake with RSA_PKCS1_SHA1 over its ECDSA P-521 key, \
         a signature scheme Converge does not accept"
    );
}

#[test]
fn each_key_is_offered_the_schemes_it_can_sign() {
    use SignatureScheme as S;
    assert_eq!(
        ServerKey::Ecdsa(521).schemes(),
        [
            S::ECDSA_NISTP256_SHA256,
            S::ECDSA_NISTP384_SHA384,
            S::ECDSA_NISTP521_SHA512
        ]
    );
    assert_eq!(
        ServerKey::Rsa(1024).schemes(),
        [S::RSA_PKCS1_SHA256, S::RSA_PKCS1_SHA512]
    );
    assert_eq!(ServerKey::Rsa(2048).schemes()[0], S::RSA_PSS_SHA256);
    assert_eq!(ServerKey::Ed25519.schemes(), [S::ED25519]);
}
