//! Every relative link of the documents resolves: the file exists, and an
//! anchor (`page.md#heading`, `#heading`) names a heading of that page,
//! with the ids mdBook gives headings. A link of the guide stays inside
//! `docs/src`, since mdBook publishes nothing else. Links to other sites
//! are not followed (the tests have no network).

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use pulldown_cmark::{Event, Options, Parser as Markdown, Tag, TagEnd};

/// A link found in a document.
#[derive(Debug)]
struct Link {
    line: usize,
    target: String,
}

fn parse(markdown: &str) -> Markdown<'_> {
    Markdown::new_ext(
        markdown,
        Options::ENABLE_TABLES | Options::ENABLE_HEADING_ATTRIBUTES,
    )
}

fn links(markdown: &str) -> Vec<Link> {
    let mut found = Vec::new();
    for (event, range) in parse(markdown).into_offset_iter() {
        if let Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) = event {
            found.push(Link {
                line: markdown[..range.start].matches('\n').count() + 1,
                target: dest_url.to_string(),
            });
        }
    }
    found
}

/// The id mdBook gives a heading: its text lower-cased, whitespace as `-`,
/// only letters, digits, `-` and `_` kept; a repeated id gets `-1`, `-2`…
/// An explicit `{#id}` wins.
pub fn heading_ids(markdown: &str) -> BTreeSet<String> {
    let mut ids = BTreeSet::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut heading: Option<(Option<String>, String)> = None;
    for event in parse(markdown) {
        match event {
            Event::Start(Tag::Heading { id, .. }) => {
                heading = Some((id.map(|i| i.to_string()), String::new()));
            }
            Event::Text(t) | Event::Code(t) => {
                if let Some((_, text)) = heading.as_mut() {
                    text.push_str(&t);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                let Some((explicit, text)) = heading.take() else {
                    continue;
                };
                let id = explicit.unwrap_or_else(|| normalize(&text));
                let n = seen.entry(id.clone()).or_insert(0);
                let unique = if *n == 0 { id } else { format!("{id}-{n}") };
                *n += 1;
                ids.insert(unique);
            }
            _ => {}
        }
    }
    ids
}

fn normalize(text: &str) -> String {
    text.chars()
        .filter_map(|c| {
            if c.is_alphanumeric() || c == '_' || c == '-' {
                Some(c.to_ascii_lowercase())
            } else if c.is_whitespace() {
                Some('-')
            } else {
                None
            }
        })
        .collect()
}

/// What is wrong with each relative link of the document at `path`; links
/// must stay under `root` when it is given.
fn check(path: &Path, root: Option<&Path>) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    let dir = path.parent().unwrap();
    let mut problems = Vec::new();
    for link in links(&text) {
        let t = &link.target;
        if t.contains("://") || t.starts_with("mailto:") {
            continue;
        }
        let (file, anchor) = match t.split_once('#') {
            Some((f, a)) => (f, Some(a)),
            None => (t.as_str(), None),
        };
        let target: PathBuf = if file.is_empty() {
            path.to_path_buf()
        } else {
            dir.join(file)
        };
        let say = |what: String| format!("{}:{}: ({t}) {what}", super::shown(path), link.line);
        let Ok(resolved) = target.canonicalize() else {
            problems.push(say("no such file".to_string()));
            continue;
        };
        if let Some(root) = root {
            if !resolved.starts_with(root.canonicalize().unwrap()) {
                problems.push(say(format!(
                    "points outside {}, which the built guide does not hold",
                    super::shown(root)
                )));
                continue;
            }
        }
        if let Some(anchor) = anchor {
            if resolved.extension().is_none_or(|x| x != "md") {
                problems.push(say("an anchor in a file that is not Markdown".to_string()));
                continue;
            }
            let ids = heading_ids(&std::fs::read_to_string(&resolved).unwrap());
            if !ids.contains(anchor) {
                problems.push(say(format!("no heading with the id `{anchor}`")));
            }
        }
    }
    problems
}

#[test]
fn every_relative_link_and_anchor_of_the_documents_resolves() {
    let root = super::repo_root();
    let src = super::guide_src();
    let mut problems = Vec::new();
    for doc in [
        "README.md",
        "CHANGELOG.md",
        "BENCHMARKS.md",
        "ARCHITECTURE.md",
    ] {
        problems.extend(check(&root.join(doc), None));
    }
    let pages = super::markdown_files(&src);
    assert!(pages.len() > 10, "the guide has {} pages", pages.len());
    for page in pages {
        problems.extend(check(&page, Some(&src)));
    }
    assert!(
        problems.is_empty(),
        "broken links:\n{}",
        problems.join("\n")
    );
}

#[test]
fn every_page_of_the_guide_is_in_its_table_of_contents() {
    let src = super::guide_src();
    let summary = std::fs::read_to_string(src.join("SUMMARY.md")).unwrap();
    let listed: BTreeSet<PathBuf> = links(&summary)
        .into_iter()
        .map(|l| src.join(l.target).canonicalize().unwrap())
        .collect();
    let missing: Vec<String> = super::markdown_files(&src)
        .into_iter()
        .filter(|p| !p.ends_with("SUMMARY.md"))
        .filter(|p| !listed.contains(&p.canonicalize().unwrap()))
        .map(|p| super::shown(&p))
        .collect();
    assert!(
        missing.is_empty(),
        "pages missing from docs/src/SUMMARY.md (mdBook would not build them): {missing:?}"
    );
}

#[test]
fn heading_ids_are_mdbooks() {
    let ids = heading_ids(
        "# Backends\n## The state service (`converge serve`)\n## Locks & leases\n## Locks & leases\n## Custom {#mine}\n",
    );
    let want: BTreeSet<String> = [
        "backends",
        "the-state-service-converge-serve",
        "locks--leases",
        "locks--leases-1",
        "mine",
    ]
    .map(String::from)
    .into();
    assert_eq!(ids, want);
}

#[test]
fn a_broken_link_or_anchor_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.md"), "# A\n## Here\n").unwrap();
    std::fs::write(
        dir.path().join("b.md"),
        "[ok](a.md#here) [ok](#b)\n\n# B\n\n[gone](c.md) [bad](a.md#there) [web](https://example.com/x)\n",
    )
    .unwrap();
    let problems = check(&dir.path().join("b.md"), Some(dir.path()));
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(
        problems[0].contains(":5: (c.md) no such file"),
        "{problems:?}"
    );
    assert!(problems[1].contains("`there`"), "{problems:?}");
}
