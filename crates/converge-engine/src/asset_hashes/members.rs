//! The files of an archive, named and ordered as Pulumi reads them before
//! it writes the tar stream it hashes.

use std::collections::HashSet;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use converge_model::{Archive, ArchiveMember, Asset};

use super::go_tar::GoTarHasher;
use super::{asset_bytes, local_path, AssetHashError};

/// Archive files by extension, as Pulumi recognises them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Format {
    Tar,
    TarGzip,
    Zip,
}

pub(super) fn archive_format(path: &Path) -> Option<Format> {
    let name = path.to_string_lossy();
    if name.ends_with(".tar") {
        Some(Format::Tar)
    } else if name.ends_with(".tgz") || name.ends_with(".tar.gz") {
        Some(Format::TarGzip)
    } else if name.ends_with(".zip") || name.ends_with(".jar") {
        Some(Format::Zip)
    } else {
        None
    }
}

/// One file of the stream.
pub(super) struct Entry {
    name: String,
    source: Source,
}

enum Source {
    Bytes(Vec<u8>),
    File { shown: String, path: PathBuf },
}

impl Entry {
    pub(super) fn write_to(self, tar: &mut GoTarHasher) -> Result<(), AssetHashError> {
        match self.source {
            Source::Bytes(bytes) => tar
                .add(&self.name, bytes.len() as u64, &mut bytes.as_slice())
                .map_err(|e| unreadable(&self.name, Path::new(&self.name), e)),
            Source::File { shown, path } => {
                let mut read = || -> io::Result<()> {
                    let mut file = File::open(&path)?;
                    let size = file.metadata()?.len();
                    tar.add(&self.name, size, &mut file)
                };
                read().map_err(|e| unreadable(&shown, &path, e))
            }
        }
    }
}

fn unreadable(shown: &str, path: &Path, e: impl ToString) -> AssetHashError {
    AssetHashError::Archive {
        path: shown.to_owned(),
        resolved: path.to_owned(),
        reason: e.to_string(),
    }
}

/// The files collected so far; a name seen twice keeps its first file.
pub(super) struct Entries<'a> {
    working_dir: &'a Path,
    seen: HashSet<String>,
    files: Vec<Entry>,
}

impl<'a> Entries<'a> {
    pub(super) fn new(working_dir: &'a Path) -> Self {
        Entries {
            working_dir,
            seen: HashSet::new(),
            files: Vec::new(),
        }
    }

    pub(super) fn into_files(self) -> Vec<Entry> {
        self.files
    }

    fn push(&mut self, name: String, source: Source) {
        if self.seen.insert(name.clone()) {
            self.files.push(Entry { name, source });
        }
    }

    /// Adds `archive`'s files under `root`; `false` when part of it is
    /// remote (then it has no hash).
    pub(super) fn add_archive(
        &mut self,
        root: &str,
        archive: &Archive,
    ) -> Result<bool, AssetHashError> {
        if let Some(members) = &archive.assets {
            // A BTreeMap: names in byte order, as Pulumi sorts them.
            for (key, member) in members {
                let name = join(root, key);
                let complete = match member {
                    ArchiveMember::Asset(asset) => self.add_asset(name, asset)?,
                    ArchiveMember::Archive(inner) => self.add_archive(&name, inner)?,
                };
                if !complete {
                    return Ok(false);
                }
            }
            return Ok(true);
        }
        let Some((shown, resolved)) = local_path(
            archive.path.as_deref(),
            archive.uri.as_deref(),
            self.working_dir,
        ) else {
            return Ok(archive.path.is_none() && archive.uri.is_none());
        };
        match archive_format(&resolved) {
            Some(format) => self.add_archive_file(root, &shown, &resolved, format)?,
            None => self.add_directory(root, &shown, &resolved)?,
        }
        Ok(true)
    }

    fn add_asset(&mut self, name: String, asset: &Asset) -> Result<bool, AssetHashError> {
        if asset.text.is_none() {
            if let Some((shown, path)) = local_path(
                asset.path.as_deref(),
                asset.uri.as_deref(),
                self.working_dir,
            ) {
                // Read when the stream is written, not held in memory.
                if let Err(source) = std::fs::metadata(&path) {
                    return Err(AssetHashError::Asset {
                        path: shown,
                        resolved: path,
                        source,
                    });
                }
                self.push(name, Source::File { shown, path });
                return Ok(true);
            }
        }
        match asset_bytes(asset, self.working_dir)? {
            Some(bytes) => {
                self.push(name, Source::Bytes(bytes));
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// A directory's files, walked as Go's `filepath.Walk` walks: each
    /// directory's entries in byte order, depth first, `.pulumi` skipped,
    /// a symbolic link to a file read through, one to a directory left out.
    fn add_directory(&mut self, root: &str, shown: &str, dir: &Path) -> Result<(), AssetHashError> {
        match std::fs::metadata(dir) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                return Err(AssetHashError::NotAnArchive {
                    path: shown.to_owned(),
                    resolved: dir.to_owned(),
                })
            }
            Err(e) => return Err(unreadable(shown, dir, e)),
        }
        let walk = walkdir::WalkDir::new(dir)
            .follow_links(false)
            .sort_by(|a, b| a.file_name().cmp(b.file_name()))
            .into_iter()
            .filter_entry(|e| e.file_name() != ".pulumi");
        for entry in walk {
            let entry = entry.map_err(|e| unreadable(shown, dir, e))?;
            let path = entry.path();
            let is_dir = if entry.path_is_symlink() {
                std::fs::metadata(path)
                    .map_err(|e| unreadable(shown, path, e))?
                    .is_dir()
            } else {
                entry.file_type().is_dir()
            };
            if is_dir {
                continue;
            }
            let relative = path.strip_prefix(dir).unwrap_or(path);
            let name = join(root, &relative.to_string_lossy());
            self.push(
                name,
                Source::File {
                    shown: shown.to_owned(),
                    path: path.to_owned(),
                },
            );
        }
        Ok(())
    }

    /// The regular files of a tar, gzipped tar or zip file, in its order.
    fn add_archive_file(
        &mut self,
        root: &str,
        shown: &str,
        path: &Path,
        format: Format,
    ) -> Result<(), AssetHashError> {
        let bad = |e: &dyn ToString| unreadable(shown, path, e.to_string());
        let file = File::open(path).map_err(|e| bad(&e))?;
        match format {
            Format::Zip => {
                let mut zip = zip::ZipArchive::new(file).map_err(|e| bad(&e))?;
                for i in 0..zip.len() {
                    let mut member = zip.by_index(i).map_err(|e| bad(&e))?;
                    if member.is_dir() {
                        continue;
                    }
                    let name = join(root, &clean(member.name()));
                    let mut bytes = Vec::new();
                    member.read_to_end(&mut bytes).map_err(|e| bad(&e))?;
                    self.push(name, Source::Bytes(bytes));
                }
            }
            Format::Tar => self.add_tar_members(root, shown, path, file)?,
            Format::TarGzip => {
                self.add_tar_members(root, shown, path, flate2::read::GzDecoder::new(file))?
            }
        }
        Ok(())
    }

    fn add_tar_members(
        &mut self,
        root: &str,
        shown: &str,
        path: &Path,
        reader: impl Read,
    ) -> Result<(), AssetHashError> {
        let bad = |e: &dyn ToString| unreadable(shown, path, e.to_string());
        let mut tar = tar::Archive::new(reader);
        for entry in tar.entries().map_err(|e| bad(&e))? {
            let mut entry = entry.map_err(|e| bad(&e))?;
            let kind = entry.header().entry_type();
            if kind.is_dir() {
                continue;
            }
            let member = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
            if !kind.is_file() {
                return Err(bad(&format!(
                    "'{member}' is neither a file nor a directory (Pulumi reads only these)"
                )));
            }
            let mut bytes = Vec::new();
            entry.read_to_end(&mut bytes).map_err(|e| bad(&e))?;
            self.push(join(root, &clean(&member)), Source::Bytes(bytes));
        }
        Ok(())
    }
}

/// `name` under `root` (a member of a nested archive), as Go's
/// `filepath.Join` puts it; at the top, the name as it is.
fn join(root: &str, name: &str) -> String {
    if root.is_empty() {
        name.to_owned()
    } else {
        clean(&format!("{root}/{name}"))
    }
}

/// A slash path made lexically clean as Go's `filepath.Clean` makes it:
/// no empty or `.` parts, `..` taking back the part before it.
fn clean(path: &str) -> String {
    let rooted = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|p| *p != "..") {
                    parts.pop();
                } else if !rooted {
                    parts.push("..");
                }
            }
            p => parts.push(p),
        }
    }
    let joined = parts.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".to_owned(),
        (false, false) => joined,
    }
}

#[cfg(test)]
mod tests {
    use super::clean;

    #[test]
    fn clean_matches_go() {
        for (input, want) in [
            ("a/b", "a/b"),
            ("a//b/./c/", "a/b/c"),
            ("a/../b", "b"),
            ("../a", "../a"),
            ("/../a", "/a"),
            ("", "."),
            ("./", "."),
        ] {
            assert_eq!(clean(input), want, "{input}");
        }
    }
}
