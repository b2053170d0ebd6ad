//! The hashes of the assets and archives a program registers.
//!
//! Pulumi's engine computes the SHA-256 of every asset and archive the
//! program sends without one, when the resource is registered; the hash is
//! what a diff compares, so a file whose contents changed shows as a
//! change. [`ensure_hashes`] does the same, relative to the program's
//! working directory:
//!
//! - an asset: its text, or the bytes of its file (a path, or a `file://`
//!   URI);
//! - an archive file (`.tar`, `.tgz`, `.tar.gz`, `.zip`, `.jar`): its bytes;
//! - a directory or a map of assets and archives: the tar stream Pulumi
//!   builds of its files (`go_tar.rs`), members in name order, a directory
//!   walked in Go's order, `.pulumi` left out, archives inside a map
//!   expanded under their key (`members.rs`).
//!
//! A file that cannot be read fails the registration, naming it. What lives
//! behind an `http(s)` URI is not fetched: such an asset, and an archive
//! holding one, keep an empty hash.

mod go_tar;
mod members;

use std::io;
use std::path::{Path, PathBuf};

use converge_model::{sha256_hex, Archive, ArchiveMember, Asset, PropertyValue};

use self::go_tar::GoTarHasher;
use self::members::{archive_format, Entries};

/// Why an asset or archive could not be hashed.
#[derive(Debug, thiserror::Error)]
pub enum AssetHashError {
    #[error("cannot read the asset '{path}' ({resolved}): {source}")]
    Asset {
        path: String,
        resolved: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot read the archive '{path}' ({resolved}): {reason}")]
    Archive {
        path: String,
        resolved: PathBuf,
        reason: String,
    },
    #[error(
        "the archive '{path}' ({resolved}) is neither a directory nor an archive file \
         (.tar, .tgz, .tar.gz, .zip, .jar)"
    )]
    NotAnArchive { path: String, resolved: PathBuf },
}

/// Whether `value` holds an asset or archive without a hash: hashing it
/// reads files, so callers move it off the async runtime.
pub fn needs_hashing(value: &PropertyValue) -> bool {
    match value {
        PropertyValue::Asset(a) => a.hash.is_empty(),
        PropertyValue::Archive(a) => a.hash.is_empty(),
        PropertyValue::Array(items) => items.iter().any(needs_hashing),
        PropertyValue::Object(map) => map.values().any(needs_hashing),
        PropertyValue::Secret(inner) => needs_hashing(inner),
        _ => false,
    }
}

/// Fills in the hash of every asset and archive in `value` that has none,
/// reading relative paths under `working_dir`.
pub fn ensure_hashes(value: &mut PropertyValue, working_dir: &Path) -> Result<(), AssetHashError> {
    match value {
        PropertyValue::Asset(asset) => ensure_asset_hash(asset, working_dir),
        PropertyValue::Archive(archive) => ensure_archive_hash(archive, working_dir),
        PropertyValue::Array(items) => items
            .iter_mut()
            .try_for_each(|v| ensure_hashes(v, working_dir)),
        PropertyValue::Object(map) => map
            .values_mut()
            .try_for_each(|v| ensure_hashes(v, working_dir)),
        PropertyValue::Secret(inner) => ensure_hashes(inner, working_dir),
        _ => Ok(()),
    }
}

/// Computes an asset's hash if it has none.
pub fn ensure_asset_hash(asset: &mut Asset, working_dir: &Path) -> Result<(), AssetHashError> {
    if asset.hash.is_empty() {
        if let Some(bytes) = asset_bytes(asset, working_dir)? {
            asset.hash = sha256_hex(&bytes);
        }
    }
    Ok(())
}

/// Computes an archive's hash if it has none.
pub fn ensure_archive_hash(
    archive: &mut Archive,
    working_dir: &Path,
) -> Result<(), AssetHashError> {
    if !archive.hash.is_empty() {
        return Ok(());
    }
    for member in archive.assets.iter_mut().flat_map(|m| m.values_mut()) {
        if let ArchiveMember::Asset(asset) = member {
            if asset.text.is_some() {
                ensure_asset_hash(asset, working_dir)?;
            }
        }
    }
    if let Some(hash) = archive_hash(archive, working_dir)? {
        archive.hash = hash;
    }
    Ok(())
}

/// Where a path or `file://` URI points; `None` for a remote URI.
fn local_path(
    path: Option<&str>,
    uri: Option<&str>,
    working_dir: &Path,
) -> Option<(String, PathBuf)> {
    let (shown, path) = match (path, uri) {
        (Some(p), _) => (p, p),
        (None, Some(u)) => (u, u.strip_prefix("file://")?),
        (None, None) => return None,
    };
    Some((shown.to_owned(), working_dir.join(path)))
}

/// An asset's contents; `None` when they are remote.
fn asset_bytes(asset: &Asset, working_dir: &Path) -> Result<Option<Vec<u8>>, AssetHashError> {
    if let Some(text) = &asset.text {
        return Ok(Some(text.as_bytes().to_vec()));
    }
    let Some((shown, resolved)) =
        local_path(asset.path.as_deref(), asset.uri.as_deref(), working_dir)
    else {
        return Ok(None);
    };
    match std::fs::read(&resolved) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(source) => Err(AssetHashError::Asset {
            path: shown,
            resolved,
            source,
        }),
    }
}

/// An archive's hash; `None` when part of it is remote.
fn archive_hash(archive: &Archive, working_dir: &Path) -> Result<Option<String>, AssetHashError> {
    if archive.assets.is_none() {
        let Some((shown, resolved)) =
            local_path(archive.path.as_deref(), archive.uri.as_deref(), working_dir)
        else {
            // A remote archive, or one with no contents at all (an empty
            // map, as Pulumi reads it).
            if archive.path.is_none() && archive.uri.is_none() {
                return Ok(Some(GoTarHasher::new().finish()));
            }
            return Ok(None);
        };
        if archive_format(&resolved).is_some() {
            return match std::fs::read(&resolved) {
                Ok(bytes) => Ok(Some(sha256_hex(&bytes))),
                Err(e) => Err(AssetHashError::Archive {
                    path: shown,
                    resolved,
                    reason: e.to_string(),
                }),
            };
        }
    }
    let mut tar = GoTarHasher::new();
    let mut entries = Entries::new(working_dir);
    match entries.add_archive("", archive) {
        Ok(true) => {}
        Ok(false) => return Ok(None),
        Err(e) => return Err(e),
    }
    for entry in entries.into_files() {
        entry.write_to(&mut tar)?;
    }
    Ok(Some(tar.finish()))
}

#[cfg(test)]
mod tests;
