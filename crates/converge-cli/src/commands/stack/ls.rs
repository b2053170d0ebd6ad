//! `converge stack ls`: the stacks of the project (or, with `--all` or
//! outside a project, of the backend), when each was last updated —
//! relative, as Pulumi shows it, or "in progress" while an update runs —
//! and how many resources each has; a stack whose state cannot be read is
//! listed, with a warning on stderr naming it and the error.

use std::sync::Arc;

use anyhow::Result;
use converge_backend::{Backend, ListStacksOptions, StackSummary};
use converge_engine::stack_state::JournalStatus;

use super::current_state;
use crate::context::Context;
use crate::project::Project;

struct Row {
    name: String,
    current: bool,
    /// RFC 3339, as recorded in the checkpoint.
    updated: Option<String>,
    in_progress: bool,
    count: Option<usize>,
}

/// What `stack ls` was asked for.
#[derive(Debug, Default)]
pub(super) struct LsOptions {
    pub all: bool,
    pub json: bool,
    /// `--organization`: that organization's stacks.
    pub organization: Option<String>,
    /// `--project`: that project's stacks.
    pub project: Option<String>,
    /// `--tag NAME[=VALUE]`.
    pub tag: Option<String>,
}

pub(super) async fn run(ctx: &Context, opts: LsOptions) -> Result<()> {
    let json = opts.json;
    let project = Project::find(&ctx.cwd)?;
    // Outside a project every stack is listed, as Pulumi does.
    let all = opts.all || (project.is_none() && opts.project.is_none());
    let backend: Arc<dyn Backend> = Arc::from(ctx.backend(project.as_ref())?);
    let filter = match &opts.project {
        Some(name) => Some(name.clone()),
        None if all => None,
        None => project.as_ref().map(|p| p.name.clone()),
    };
    // As Pulumi names them: a stack of the current project by its name,
    // any other as `org/project/stack` (two parts would read as
    // `org/stack`); with -Q, every one in full.
    let current_project = project.as_ref().map(|p| p.name.as_str());
    let name_of = |sr: &converge_backend::StackRef| {
        if ctx.fully_qualify_stack_names || current_project != Some(sr.project.as_str()) {
            format!("{}/{}/{}", sr.organization, sr.project, sr.stack)
        } else {
            sr.stack.clone()
        }
    };
    let tag = opts.tag.as_deref().map(TagFilter::parse).transpose()?;
    let selected = match &project {
        Some(p) => ctx.home.selected_stack(&p.name, &p.dir)?,
        None => None,
    };
    let mut rows = Vec::new();
    let options = ListStacksOptions { project: filter };
    for summary in tagged(backend.as_ref(), backend.list_stacks(&options).await?, tag).await? {
        let sr = &summary.stack_ref;
        if opts
            .organization
            .as_ref()
            .is_some_and(|o| *o != sr.organization)
        {
            continue;
        }
        // A stack whose state cannot be read is still listed (its time and
        // count `n/a`), and the user is told why.
        let state = match current_state(ctx, &backend, sr).await {
            Ok(state) => Some(state),
            Err(e) => {
                let text = crate::error_text(&e);
                if text.contains(&format!("{}/{}", sr.project, sr.stack)) {
                    eprintln!("warning: {text}");
                } else {
                    eprintln!("warning: stack {}/{}: {text}", sr.project, sr.stack);
                }
                None
            }
        };
        let in_progress = state
            .as_ref()
            .is_some_and(|s| matches!(s.journal, JournalStatus::Live { .. }));
        let latest = state.and_then(|s| s.checkpoint.latest);
        rows.push(Row {
            name: name_of(sr),
            current: project.as_ref().is_some_and(|p| p.name == sr.project)
                && selected.as_deref() == Some(sr.stack.as_str()),
            updated: latest.as_ref().map(|s| s.manifest.time.clone()),
            in_progress,
            count: latest.as_ref().map(|s| s.resources.len()),
        });
    }
    rows.sort_by(|a, b| a.name.cmp(&b.name));
    if json {
        let list: Vec<serde_json::Value> = rows
            .iter()
            .map(|r| {
                // As Pulumi writes it: no `lastUpdate` for a stack never
                // deployed or being updated, no `resourceCount` without a
                // snapshot (the keys are left out, not null).
                let mut entry = serde_json::json!({
                    "name": r.name,
                    "current": r.current,
                });
                if let Some(updated) = r.updated.as_ref().filter(|_| !r.in_progress) {
                    // Pulumi's format, milliseconds in UTC (the SDKs
                    // parse it with `%Y-%m-%dT%H:%M:%S.%fZ`).
                    let shown = time::OffsetDateTime::parse(
                        updated,
                        &time::format_description::well_known::Rfc3339,
                    )
                    .map(super::history::rfc5424)
                    .unwrap_or_else(|_| updated.clone());
                    entry["lastUpdate"] = shown.into();
                }
                entry["updateInProgress"] = r.in_progress.into();
                if let Some(count) = r.count {
                    entry["resourceCount"] = count.into();
                }
                entry
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&list)?);
        return Ok(());
    }
    let now = time::OffsetDateTime::now_utc();
    let shown: Vec<[String; 3]> = rows
        .into_iter()
        .map(|r| {
            let when = if r.in_progress {
                "in progress".to_owned()
            } else {
                r.updated
                    .as_deref()
                    .map_or_else(|| "n/a".to_owned(), |t| relative(t, now))
            };
            [
                if r.current {
                    format!("{}*", r.name)
                } else {
                    r.name
                },
                when,
                r.count.map_or_else(|| "n/a".to_owned(), |c| c.to_string()),
            ]
        })
        .collect();
    print!("{}", table(&shown));
    Ok(())
}

/// `stack ls --tag NAME[=VALUE]`.
#[derive(Debug, PartialEq)]
struct TagFilter {
    name: String,
    value: Option<String>,
}

impl TagFilter {
    fn parse(text: &str) -> Result<TagFilter> {
        let (name, value) = match text.split_once('=') {
            Some((name, value)) => (name, Some(value.to_owned())),
            None => (text, None),
        };
        if name.is_empty() {
            anyhow::bail!("--tag {text:?}: expected NAME or NAME=VALUE");
        }
        Ok(TagFilter {
            name: name.to_owned(),
            value,
        })
    }

    fn matches(&self, tags: &converge_backend::StackTags) -> bool {
        match (tags.get(&self.name), &self.value) {
            (Some(_), None) => true,
            (Some(v), Some(want)) => v == want,
            (None, _) => false,
        }
    }
}

/// The stacks whose tags match `filter` (all of them without one).
async fn tagged(
    backend: &dyn Backend,
    stacks: Vec<StackSummary>,
    filter: Option<TagFilter>,
) -> Result<Vec<StackSummary>> {
    let Some(filter) = filter else {
        return Ok(stacks);
    };
    let mut kept = Vec::new();
    for summary in stacks {
        if filter.matches(&backend.load_tags(&summary.stack_ref).await?) {
            kept.push(summary);
        }
    }
    Ok(kept)
}

/// `2 minutes ago` for an RFC 3339 time; the time itself if it does not
/// parse.
pub(super) fn relative(rfc3339: &str, now: time::OffsetDateTime) -> String {
    let format = time::format_description::well_known::Rfc3339;
    match time::OffsetDateTime::parse(rfc3339, &format) {
        Ok(t) => {
            let ago = (now - t).max(time::Duration::ZERO);
            let ago = std::time::Duration::try_from(ago).unwrap_or_default();
            timeago::Formatter::new().convert(ago)
        }
        Err(_) => rfc3339.to_owned(),
    }
}

fn table(rows: &[[String; 3]]) -> String {
    let w0 = rows.iter().map(|r| r[0].len()).max().unwrap_or(0).max(4);
    let w1 = rows.iter().map(|r| r[1].len()).max().unwrap_or(0).max(11);
    let mut out = format!("{:<w0$}  {:<w1$}  RESOURCE COUNT\n", "NAME", "LAST UPDATE");
    for [a, b, c] in rows {
        out.push_str(&format!("{a:<w0$}  {b:<w1$}  {c}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tag_filters_match_a_name_or_a_value() {
        let tags: converge_backend::StackTags = [("team".to_owned(), "web".to_owned())]
            .into_iter()
            .collect();
        assert!(TagFilter::parse("team").unwrap().matches(&tags));
        assert!(TagFilter::parse("team=web").unwrap().matches(&tags));
        assert!(!TagFilter::parse("team=db").unwrap().matches(&tags));
        assert!(!TagFilter::parse("owner").unwrap().matches(&tags));
        assert!(TagFilter::parse("team=").unwrap().value == Some(String::new()));
        assert!(TagFilter::parse("=x").is_err());
    }

    #[test]
    fn last_updates_read_as_pulumi_shows_them() {
        let now = time::macros::datetime!(2026-11-24 08:00:00 UTC);
        let rows = [
            [
                "dev*".to_owned(),
                relative("2026-11-24T07:58:00.123Z", now),
                "5".to_owned(),
            ],
            [
                "prod".to_owned(),
                relative("2026-11-21T08:00:00Z", now),
                "12".to_owned(),
            ],
            [
                "staging".to_owned(),
                "in progress".to_owned(),
                "3".to_owned(),
            ],
            ["new".to_owned(), "n/a".to_owned(), "n/a".to_owned()],
            ["odd".to_owned(), relative("yesterday", now), "1".to_owned()],
        ];
        insta::assert_snapshot!(table(&rows), @r"
            NAME     LAST UPDATE   RESOURCE COUNT
            dev*     1 minute ago  5
            prod     3 days ago    12
            staging  in progress   3
            new      n/a           n/a
            odd      yesterday     1
            ");
    }
}
