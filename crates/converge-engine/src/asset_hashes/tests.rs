use std::collections::BTreeMap;
use std::io::Write as _;

use converge_model::{sha256_hex, Archive, ArchiveMember, Asset, PropertyValue};

use super::go_tar::GoTarHasher;
use super::{ensure_hashes, AssetHashError};

fn tar_hash(files: &[(&str, &[u8])]) -> String {
    let mut t = GoTarHasher::new();
    for (name, body) in files {
        t.add(name, body.len() as u64, &mut &body[..]).unwrap();
    }
    t.finish()
}

fn path_archive(path: &str) -> PropertyValue {
    PropertyValue::Archive(Box::new(Archive {
        path: Some(path.to_owned()),
        ..Archive::default()
    }))
}

fn hash_of(value: &PropertyValue) -> &str {
    match value {
        PropertyValue::Asset(a) => &a.hash,
        PropertyValue::Archive(a) => &a.hash,
        other => panic!("not an asset: {other:?}"),
    }
}

#[test]
fn a_directory_is_hashed_in_go_walk_order_without_dot_pulumi() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("code");
    std::fs::create_dir_all(root.join("a")).unwrap();
    std::fs::create_dir_all(root.join(".pulumi")).unwrap();
    std::fs::write(root.join("a.txt"), "one").unwrap();
    std::fs::write(root.join("a/b.txt"), "two").unwrap();
    std::fs::write(root.join(".pulumi/state"), "skipped").unwrap();
    std::os::unix::fs::symlink(root.join("a"), root.join("z-link-to-dir")).unwrap();
    std::os::unix::fs::symlink(root.join("a.txt"), root.join("z-link-to-file")).unwrap();

    let mut value = path_archive("code");
    ensure_hashes(&mut value, dir.path()).unwrap();
    // "a/b.txt" before "a.txt": Walk lists "a" before "a.txt".
    let want = tar_hash(&[
        ("a/b.txt", b"two"),
        ("a.txt", b"one"),
        ("z-link-to-file", b"one"),
    ]);
    assert_eq!(hash_of(&value), want);

    // New contents, new hash.
    std::fs::write(root.join("a/b.txt"), "three").unwrap();
    let mut again = path_archive("code");
    ensure_hashes(&mut again, dir.path()).unwrap();
    assert_ne!(hash_of(&again), want);
}

#[test]
fn an_archive_file_is_hashed_as_its_bytes_and_a_file_asset_as_its_contents() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("code.zip"), b"PK not really").unwrap();
    std::fs::write(dir.path().join("index.html"), b"<h1>hi</h1>").unwrap();
    let mut value = PropertyValue::Array(vec![
        path_archive("code.zip"),
        PropertyValue::Asset(Box::new(Asset::from_path("index.html"))),
    ]);
    ensure_hashes(&mut value, dir.path()).unwrap();
    let PropertyValue::Array(items) = &value else {
        unreachable!()
    };
    assert_eq!(hash_of(&items[0]), sha256_hex(b"PK not really"));
    assert_eq!(hash_of(&items[1]), sha256_hex(b"<h1>hi</h1>"));
}

#[test]
fn a_map_expands_nested_archives_under_their_key() {
    let dir = tempfile::tempdir().unwrap();
    let mut zip = zip::ZipWriter::new(std::fs::File::create(dir.path().join("lib.zip")).unwrap());
    let opts = zip::write::SimpleFileOptions::default();
    zip.add_directory("pkg/", opts).unwrap();
    zip.start_file("pkg/mod.py", opts).unwrap();
    zip.write_all(b"x = 1").unwrap();
    zip.finish().unwrap();

    let mut members = BTreeMap::new();
    members.insert(
        "main.py".to_owned(),
        ArchiveMember::Asset(Asset::from_text("print(1)")),
    );
    members.insert(
        "vendor".to_owned(),
        ArchiveMember::Archive(Archive {
            path: Some("lib.zip".to_owned()),
            ..Archive::default()
        }),
    );
    let mut value = PropertyValue::Archive(Box::new(Archive {
        assets: Some(members),
        ..Archive::default()
    }));
    ensure_hashes(&mut value, dir.path()).unwrap();
    assert_eq!(
        hash_of(&value),
        tar_hash(&[("main.py", b"print(1)"), ("vendor/pkg/mod.py", b"x = 1")])
    );
}

#[test]
fn a_missing_file_fails_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut asset = PropertyValue::Asset(Box::new(Asset::from_path("missing.txt")));
    let err = ensure_hashes(&mut asset, dir.path()).unwrap_err();
    assert!(matches!(err, AssetHashError::Asset { .. }));
    assert!(err.to_string().contains("'missing.txt'"), "{err}");

    let mut archive = path_archive("missing-dir");
    let err = ensure_hashes(&mut archive, dir.path()).unwrap_err();
    assert!(err.to_string().contains("'missing-dir'"), "{err}");

    std::fs::write(dir.path().join("notes.txt"), "x").unwrap();
    let mut not_archive = path_archive("notes.txt");
    let err = ensure_hashes(&mut not_archive, dir.path()).unwrap_err();
    assert!(matches!(err, AssetHashError::NotAnArchive { .. }), "{err}");
}

#[test]
fn remote_contents_are_not_fetched_and_a_given_hash_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let mut remote = PropertyValue::Asset(Box::new(Asset::from_uri("https://example.com/x")));
    ensure_hashes(&mut remote, dir.path()).unwrap();
    assert_eq!(hash_of(&remote), "");

    let mut given = PropertyValue::Asset(Box::new(Asset {
        hash: "abc".to_owned(),
        ..Asset::from_path("missing.txt")
    }));
    ensure_hashes(&mut given, dir.path()).unwrap();
    assert_eq!(hash_of(&given), "abc");
}
