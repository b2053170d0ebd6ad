//! The passphrase crypter against an independent implementation: Python's
//! `cryptography` package (OpenSSL), in `tests/interop/passphrase.py`.
//!
//! The interpreter comes from `CONVERGE_TEST_PYTHON` (set by `scripts/test`
//! to a virtualenv with `cryptography`). Without it the tests are skipped
//! loudly, or fail when `CI` is set.

use std::io::Write as _;
use std::process::{Command, Stdio};

use converge_state::secrets::{Crypter, CryptoError, PassphraseCrypter, PassphraseError};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop/passphrase.py");

/// Plaintexts worth a round trip: empty, JSON, non-ASCII, control
/// characters, colons, long.
fn plaintexts() -> Vec<String> {
    vec![
        String::new(),
        "pulumi".to_owned(),
        r#""a plain string""#.to_owned(),
        r#"{"password":"hunter2","nested":[1,2.5,true,null]}"#.to_owned(),
        "ünïcödé ✓ 🔐 日本語".to_owned(),
        "line one\nline two\ttab\r\n\u{0}nul".to_owned(),
        "v1:looks:like:a:ciphertext".to_owned(),
        "x".repeat(10_000),
    ]
}

/// The Python interpreter, or `None` (after a loud message) to skip.
fn python() -> Option<String> {
    match std::env::var("CONVERGE_TEST_PYTHON") {
        Ok(p) if !p.is_empty() => Some(p),
        _ => {
            assert!(
                std::env::var_os("CI").is_none(),
                "CONVERGE_TEST_PYTHON is not set, and CI is: run the project test script \
                 `scripts/test`, which makes a Python virtualenv with `cryptography` for the \
                 passphrase interop tests and sets CONVERGE_TEST_PYTHON"
            );
            // Straight to the process's stderr: libtest captures `eprintln!`
            // of passing tests.
            static ONCE: std::sync::Once = std::sync::Once::new();
            ONCE.call_once(|| {
                let _ = std::io::stderr().write_all(
                    b"\n**********************************************************************\n\
                      passphrase interop tests skipped: set CONVERGE_TEST_PYTHON to a Python\n\
                      with the `cryptography` package (or run `scripts/test`)\n\
                      **********************************************************************\n\n",
                );
            });
            None
        }
    }
}

struct Output {
    code: i32,
    stdout: String,
    stderr: String,
}

fn py(python: &str, args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(python)
        .arg(SCRIPT)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run CONVERGE_TEST_PYTHON={python}: {e}"));
    {
        let mut pipe = child.stdin.take().unwrap();
        pipe.write_all(stdin.unwrap_or("").as_bytes()).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    let output = Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    };
    assert!(
        output.code == 0 || output.code == 2 || output.code == 3,
        "passphrase.py {args:?} failed unexpectedly (exit {}):\n{}",
        output.code,
        output.stderr
    );
    output
}

fn py_ok(python: &str, args: &[&str], stdin: Option<&str>) -> String {
    let out = py(python, args, stdin);
    assert_eq!(out.code, 0, "passphrase.py {args:?}:\n{}", out.stderr);
    out.stdout
}

/// Python's decryption of each ciphertext (`None` where it fails).
fn py_decrypt_many(
    python: &str,
    passphrase: &str,
    salt: &str,
    ciphertexts: &[String],
) -> Vec<Option<String>> {
    let input = serde_json::to_string(ciphertexts).unwrap();
    let out = py_ok(python, &["decrypt-many", passphrase, salt], Some(&input));
    serde_json::from_str(&out).unwrap()
}

fn py_encrypt_many(
    python: &str,
    passphrase: &str,
    salt: &str,
    plaintexts: &[String],
) -> Vec<String> {
    let input = serde_json::to_string(plaintexts).unwrap();
    let out = py_ok(python, &["encrypt-many", passphrase, salt], Some(&input));
    serde_json::from_str(&out).unwrap()
}

/// Flips one bit of the sealed part of a `v1:<nonce>:<sealed>` ciphertext.
fn tamper(ciphertext: &str) -> String {
    use base64::engine::general_purpose::STANDARD;
    use base64::Engine as _;
    let (head, sealed) = ciphertext.rsplit_once(':').unwrap();
    let mut bytes = STANDARD.decode(sealed).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x01;
    format!("{head}:{}", STANDARD.encode(bytes))
}

#[test]
fn rust_salt_and_ciphertexts_decrypt_in_python() {
    let Some(python) = python() else { return };
    let passphrase = "rust passphrase ✓";
    let (crypter, salt) = PassphraseCrypter::generate(passphrase).unwrap();

    // Python accepts the salt, and its own encryption of the check value.
    let check = py_ok(&python, &["encrypt", passphrase, &salt, "pulumi"], None);
    assert_eq!(crypter.decrypt(check.trim_end()).unwrap(), "pulumi");

    let texts = plaintexts();
    let ciphertexts: Vec<String> = texts.iter().map(|t| crypter.encrypt(t).unwrap()).collect();
    let decrypted = py_decrypt_many(&python, passphrase, &salt, &ciphertexts);
    assert_eq!(
        decrypted,
        texts.iter().cloned().map(Some).collect::<Vec<_>>()
    );

    // The single-value command too (stdout is the exact plaintext).
    let one = py_ok(
        &python,
        &["decrypt", passphrase, &salt, &ciphertexts[3]],
        None,
    );
    assert_eq!(one, texts[3]);

    // Tampered Rust ciphertexts fail authentication in Python.
    let tampered: Vec<String> = ciphertexts.iter().map(|c| tamper(c)).collect();
    let decrypted = py_decrypt_many(&python, passphrase, &salt, &tampered);
    assert!(decrypted.iter().all(Option::is_none), "{decrypted:?}");
}

#[test]
fn python_salt_and_ciphertexts_decrypt_in_rust() {
    let Some(python) = python() else { return };
    let passphrase = "python: passphrase with colons: and spaces";
    let salt = py_ok(&python, &["makesalt", passphrase], None);
    let salt = salt.trim_end();

    let crypter = PassphraseCrypter::from_encryption_salt(passphrase, salt).unwrap();
    assert_eq!(crypter.encryption_salt(), salt);
    assert_eq!(
        crypter.provider_state(),
        serde_json::json!({ "salt": salt })
    );

    let texts = plaintexts();
    let ciphertexts = py_encrypt_many(&python, passphrase, salt, &texts);
    for (text, ciphertext) in texts.iter().zip(&ciphertexts) {
        assert_eq!(&crypter.decrypt(ciphertext).unwrap(), text);
        assert_eq!(
            crypter.decrypt(&tamper(ciphertext)),
            Err(CryptoError::Decrypt)
        );
    }

    // Rust encrypts under the Python-made salt; Python decrypts.
    let ours: Vec<String> = texts.iter().map(|t| crypter.encrypt(t).unwrap()).collect();
    let decrypted = py_decrypt_many(&python, passphrase, salt, &ours);
    assert_eq!(
        decrypted,
        texts.iter().cloned().map(Some).collect::<Vec<_>>()
    );
}

#[test]
fn empty_passphrase_interoperates() {
    let Some(python) = python() else { return };
    let salt = py_ok(&python, &["makesalt", ""], None);
    let crypter = PassphraseCrypter::from_encryption_salt("", salt.trim_end()).unwrap();
    let ciphertext = crypter.encrypt("\"empty\"").unwrap();
    let out = py_ok(
        &python,
        &["decrypt", "", salt.trim_end(), &ciphertext],
        None,
    );
    assert_eq!(out, "\"empty\"");
}

#[test]
fn wrong_passphrase_fails_cleanly_on_both_sides() {
    let Some(python) = python() else { return };

    // Python-made salt, wrong passphrase in Rust.
    let py_salt = py_ok(&python, &["makesalt", "right"], None);
    let py_salt = py_salt.trim_end();
    let err = PassphraseCrypter::from_encryption_salt("wrong", py_salt).unwrap_err();
    assert_eq!(err, PassphraseError::WrongPassphrase);
    assert!(
        err.to_string().contains("PULUMI_CONFIG_PASSPHRASE"),
        "{err}"
    );

    // Rust-made salt, wrong passphrase in Python.
    let (crypter, rust_salt) = PassphraseCrypter::generate("right").unwrap();
    let ciphertext = crypter.encrypt("\"secret\"").unwrap();
    let out = py(
        &python,
        &["decrypt", "wrong", &rust_salt, &ciphertext],
        None,
    );
    assert_eq!(
        out.code, 2,
        "stdout {:?} stderr {:?}",
        out.stdout, out.stderr
    );
    assert!(out.stdout.is_empty(), "{:?}", out.stdout);
    assert!(
        out.stderr.contains("incorrect passphrase"),
        "{}",
        out.stderr
    );

    // Same passphrase, different salts: each side's ciphertexts fail
    // authentication on the other.
    let rust_on_py = PassphraseCrypter::from_encryption_salt("right", py_salt).unwrap();
    assert_eq!(rust_on_py.decrypt(&ciphertext), Err(CryptoError::Decrypt));
    let decrypted = py_decrypt_many(&python, "right", py_salt, &[ciphertext]);
    assert_eq!(decrypted, vec![None]);
}
