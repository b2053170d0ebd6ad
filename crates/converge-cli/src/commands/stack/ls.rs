//! `converge stack ls`: the stacks of the project (or, with `--all` or
//! outside a project, of the backend), when each was last updated —
//! relative, as Pulumi shows it, or "in progress" while an update runs —
//! and how many resources each has; a stack whose state cannot be read is
//! listed, with a warning on stderr naming it and the error.

use std::sync::Arc;

use anyhow::Result;
use converge_backend::{Backend, ListStacksOptions};
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

pub(super) async fn run(ctx: &Context, all: bool, json: bool) -> Result<()> {
    let project = Project::find(&ctx.cwd)?;
    // Outside a project every stack is listed, as Pulumi does.
    let all = all || project.is_none();
    let backend: Arc<dyn Backend> = Arc::from(ctx.backend(project.as_ref())?);
    let filter = if all {
        None
    } else {
        project.as_ref().map(|p| p.name.clone())
    };
    let selected = match &project {
        Some(p) => ctx.home.selected_stack(&p.name, &p.dir)?,
        None => None,
    };
    let mut rows = Vec::new();
    let options = ListStacksOptions { project: filter };
    for summary in backend.list_stacks(&options).await? {
        let sr = &summary.stack_ref;
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
            name: if all {
                format!("{}/{}", sr.project, sr.stack)
            } else {
                sr.stack.clone()
            },
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
