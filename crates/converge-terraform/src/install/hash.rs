//! The two package hashes OpenTofu's lock file records:
//!
//! - `zh:` — the SHA-256 of a provider's `.zip` archive, in lower-case hex
//!   (what registries publish in their `SHA256SUMS`).
//! - `h1:` — the hash of the package's files, whether unpacked or in the
//!   archive: for every regular file, a line `HEX  PATH\n` (the file's
//!   SHA-256 in lower-case hex, two spaces, its path relative to the
//!   package's root with `/` separators); the lines in the order of their
//!   paths; the SHA-256 of their concatenation in standard base64. This is
//!   Go's `dirhash` "Hash1", which OpenTofu uses as its package hash.

use std::io::Read;
use std::path::Path;

use base64::Engine as _;
use sha2::{Digest, Sha256};

use super::InstallError;

/// `zh:` of an archive's bytes.
pub fn zh(archive: &[u8]) -> String {
    format!("zh:{}", hex::encode(Sha256::digest(archive)))
}

/// `h1:` of `(path, contents digest)` pairs.
fn h1_of(mut files: Vec<(String, [u8; 32])>) -> String {
    files.sort_by(|a, b| a.0.cmp(&b.0));
    let mut summary = Sha256::new();
    for (path, digest) in &files {
        summary.update(format!("{}  {path}\n", hex::encode(digest)));
    }
    format!(
        "h1:{}",
        base64::engine::general_purpose::STANDARD.encode(summary.finalize())
    )
}

/// `h1:` of the files in a `.zip` archive (directory entries skipped).
pub fn h1_of_zip(archive: &[u8]) -> Result<String, InstallError> {
    let bad = |e: zip::result::ZipError| InstallError::Archive(e.to_string());
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(archive)).map_err(bad)?;
    let mut files = Vec::new();
    for i in 0..zip.len() {
        let mut entry = zip.by_index(i).map_err(bad)?;
        if entry.is_dir() {
            continue;
        }
        let name = entry.name().to_owned();
        let mut digest = Sha256::new();
        let mut buf = Vec::new();
        entry
            .read_to_end(&mut buf)
            .map_err(|e| InstallError::Archive(e.to_string()))?;
        digest.update(&buf);
        files.push((name, digest.finalize().into()));
    }
    Ok(h1_of(files))
}

/// `h1:` of an unpacked package directory.
pub fn h1_of_dir(dir: &Path) -> Result<String, InstallError> {
    let mut files = Vec::new();
    let mut pending = vec![(dir.to_path_buf(), String::new())];
    while let Some((path, prefix)) = pending.pop() {
        let entries = std::fs::read_dir(&path).map_err(|e| InstallError::io(&path, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| InstallError::io(&path, e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let relative = if prefix.is_empty() {
                name
            } else {
                format!("{prefix}/{name}")
            };
            let full = entry.path();
            let meta = std::fs::metadata(&full).map_err(|e| InstallError::io(&full, e))?;
            if meta.is_dir() {
                pending.push((full, relative));
            } else if meta.is_file() {
                let bytes = std::fs::read(&full).map_err(|e| InstallError::io(&full, e))?;
                files.push((relative, Sha256::digest(&bytes).into()));
            }
        }
    }
    Ok(h1_of(files))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn zip_of(files: &[(&str, &[u8])]) -> Vec<u8> {
        let mut out = std::io::Cursor::new(Vec::new());
        let mut zip = zip::ZipWriter::new(&mut out);
        for (name, bytes) in files {
            zip.start_file(*name, zip::write::SimpleFileOptions::default())
                .unwrap();
            zip.write_all(bytes).unwrap();
        }
        zip.finish().unwrap();
        out.into_inner()
    }

    #[test]
    fn h1_is_the_same_for_a_zip_and_its_unpacked_files() {
        let files: &[(&str, &[u8])] = &[
            ("terraform-provider-x_v1.0.0", b"binary"),
            ("LICENSE", b"text"),
        ];
        let dir = tempfile::tempdir().unwrap();
        for (name, bytes) in files {
            std::fs::write(dir.path().join(name), bytes).unwrap();
        }
        let archive = zip_of(files);
        let from_zip = h1_of_zip(&archive).unwrap();
        assert_eq!(from_zip, h1_of_dir(dir.path()).unwrap());
        assert!(from_zip.starts_with("h1:"));
        // The definition, by hand: sorted lines of "hex  path\n".
        let lines = format!(
            "{}  LICENSE\n{}  terraform-provider-x_v1.0.0\n",
            hex::encode(Sha256::digest(b"text")),
            hex::encode(Sha256::digest(b"binary"))
        );
        let expected = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(lines));
        assert_eq!(from_zip, format!("h1:{expected}"));
        assert_eq!(
            zh(&archive),
            format!("zh:{}", hex::encode(Sha256::digest(&archive)))
        );
    }

    #[test]
    fn a_changed_file_changes_h1() {
        let a = zip_of(&[("f", b"one")]);
        let b = zip_of(&[("f", b"two")]);
        assert_ne!(h1_of_zip(&a).unwrap(), h1_of_zip(&b).unwrap());
        assert!(matches!(
            h1_of_zip(b"not a zip"),
            Err(InstallError::Archive(_))
        ));
    }
}
