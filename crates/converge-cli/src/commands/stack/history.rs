//! `converge stack history`: the stack's recorded updates, newest first, in
//! Pulumi's two forms — one block per update, or `--json`'s array of
//! `{version, kind, startTime, message, environment, config, result,
//! endTime, resourceChanges}` — and the update record every operation
//! adds (Pulumi's `UpdateInfo`).

use std::collections::BTreeMap;

use anyhow::{bail, Context as _, Result};
use converge_backend::{ListHistoryOptions, UpdateKind};
use converge_engine::stack_state::UpdateRecord;
use converge_state::secrets::Crypter;
use serde::Serialize;

use crate::args::HistoryArgs;
use crate::commands::config::list::ValueJson;
use crate::config_value::to_record_json;
use crate::context::Context;
use crate::stack_settings::StackSettings;

/// What Pulumi prints for a config value it cannot decrypt.
const UNDECRYPTABLE: &str = "ERROR_UNABLE_TO_DECRYPT";

/// The history record of an operation of `kind` starting now, with the
/// stack's configuration as stored (secrets stay ciphertext).
pub fn update_record(
    kind: UpdateKind,
    message: Option<&str>,
    settings: &StackSettings,
) -> Result<UpdateRecord> {
    let mut config = serde_json::Map::new();
    for (k, v) in settings.config() {
        let key = k
            .as_str()
            .context("a configuration key is not a string")?
            .to_owned();
        config.insert(key, to_record_json(&v)?);
    }
    Ok(UpdateRecord {
        kind,
        start_time: time::OffsetDateTime::now_utc().unix_timestamp(),
        message: message.unwrap_or_default().to_owned(),
        environment: BTreeMap::new(),
        config,
    })
}

/// One update as recorded, read leniently: Pulumi's DIY records and
/// Converge's own (older ones wrote RFC 3339 times).
#[derive(Debug, Clone, PartialEq)]
struct Update {
    version: i64,
    kind: String,
    start: Option<time::OffsetDateTime>,
    end: Option<time::OffsetDateTime>,
    message: String,
    environment: BTreeMap<String, String>,
    config: serde_json::Map<String, serde_json::Value>,
    result: String,
    /// The user cancelled the update (Converge's mark beside `result`).
    cancelled: bool,
    resource_changes: BTreeMap<String, i64>,
}

impl Update {
    fn parse(record: &[u8]) -> Result<Update> {
        let v: serde_json::Value =
            serde_json::from_slice(record).context("an update record is not JSON")?;
        let text = |k: &str| {
            v.get(k)
                .and_then(|x| x.as_str())
                .unwrap_or_default()
                .to_owned()
        };
        let strings = |k: &str| -> BTreeMap<String, String> {
            v.get(k)
                .and_then(|m| m.as_object())
                .map(|m| {
                    m.iter()
                        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                        .collect()
                })
                .unwrap_or_default()
        };
        Ok(Update {
            version: v.get("version").and_then(|x| x.as_i64()).unwrap_or(0),
            kind: text("kind"),
            start: v.get("startTime").and_then(time_of),
            end: v.get("endTime").and_then(time_of),
            message: text("message"),
            environment: strings("environment"),
            config: v
                .get("config")
                .and_then(|c| c.as_object())
                .cloned()
                .unwrap_or_default(),
            result: text("result"),
            cancelled: converge_backend::is_cancelled(&v),
            resource_changes: v
                .get("resourceChanges")
                .and_then(|m| m.as_object())
                .map(|m| {
                    m.iter()
                        .filter_map(|(k, v)| Some((k.clone(), v.as_i64()?)))
                        .collect()
                })
                .unwrap_or_default(),
        })
    }

    fn in_progress(&self) -> bool {
        self.result == "in-progress"
    }
}

/// A record's time: Unix seconds (Pulumi's), or RFC 3339 text.
fn time_of(v: &serde_json::Value) -> Option<time::OffsetDateTime> {
    match v {
        serde_json::Value::Number(n) => time::OffsetDateTime::from_unix_timestamp(n.as_i64()?).ok(),
        serde_json::Value::String(s) => {
            time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).ok()
        }
        _ => None,
    }
}

pub(super) async fn run(ctx: &Context, args: HistoryArgs) -> Result<()> {
    if args.page_size == 0 || args.page == 0 {
        bail!("--page-size and --page count from 1");
    }
    let project = ctx.project()?;
    let backend = ctx.backend(Some(&project))?;
    let stack = ctx.resolve_stack(&project, args.stack.stack.as_deref())?;
    ctx.require_stack(backend.as_ref(), &stack).await?;
    let limit = args
        .page
        .checked_mul(args.page_size)
        .context("--page times --page-size is too large")?;
    let entries = backend
        .list_history(&stack, &ListHistoryOptions { limit: Some(limit) })
        .await?;
    let updates = entries
        .iter()
        .skip((args.page - 1) * args.page_size)
        .map(|e| Update::parse(&e.record))
        .collect::<Result<Vec<_>>>()
        .with_context(|| format!("cannot read the history of stack {stack}"))?;
    let crypter = if args.show_secrets && updates.iter().any(has_secrets) {
        let mut settings = StackSettings::load(&project.stack_config_file(&stack.stack))?;
        let secrets = crate::secrets::stack::stack_secrets(
            &mut settings,
            None,
            ctx.passphrase_options(),
            false,
        )
        .await?;
        Some(secrets.crypter)
    } else {
        None
    };
    let crypter = crypter.as_deref();
    if args.json {
        let json = updates
            .iter()
            .map(|u| update_json(u, crypter))
            .collect::<Result<Vec<_>>>()?;
        println!("{}", serde_json::to_string_pretty(&json)?);
        return Ok(());
    }
    let now = time::OffsetDateTime::now_utc();
    print!("{}", console(&updates, args.page, args.full_dates, now));
    Ok(())
}

fn has_secrets(u: &Update) -> bool {
    u.config
        .values()
        .any(|v| serde_norway::to_value(v).is_ok_and(|v| crate::config_value::contains_secure(&v)))
}

/// `--json`'s object for one update: Pulumi's `updateInfoJSON`.
#[derive(Serialize)]
struct UpdateJson {
    version: i64,
    kind: String,
    #[serde(rename = "startTime")]
    start_time: String,
    message: String,
    environment: BTreeMap<String, String>,
    config: BTreeMap<String, ValueJson>,
    #[serde(skip_serializing_if = "String::is_empty")]
    result: String,
    #[serde(rename = "endTime", skip_serializing_if = "Option::is_none")]
    end_time: Option<String>,
    #[serde(rename = "resourceChanges", skip_serializing_if = "Option::is_none")]
    resource_changes: Option<BTreeMap<String, i64>>,
    /// Converge's mark of an update the user cancelled (absent otherwise;
    /// Pulumi's readers ignore it).
    #[serde(
        rename = "convergeCancelled",
        skip_serializing_if = "std::ops::Not::not"
    )]
    cancelled: bool,
}

fn update_json(u: &Update, crypter: Option<&dyn Crypter>) -> Result<UpdateJson> {
    let mut config = BTreeMap::new();
    for (k, v) in &u.config {
        let value = serde_norway::to_value(v)?;
        let shown = match ValueJson::of(&value, crypter) {
            Ok(shown) => shown,
            Err(_) => ValueJson::undecryptable(UNDECRYPTABLE),
        };
        config.insert(k.clone(), shown);
    }
    let finished = !u.in_progress();
    Ok(UpdateJson {
        version: u.version,
        kind: u.kind.clone(),
        start_time: u.start.map(rfc5424).unwrap_or_default(),
        message: u.message.clone(),
        environment: u.environment.clone(),
        config,
        result: u.result.clone(),
        end_time: finished.then(|| u.end.map(rfc5424).unwrap_or_default()),
        resource_changes: finished.then(|| u.resource_changes.clone()),
        cancelled: u.cancelled,
    })
}

/// Pulumi's time format for history: RFC 5424, millisecond precision, UTC.
pub(crate) fn rfc5424(t: time::OffsetDateTime) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.millisecond()
    )
}

/// `--full-dates`: the time as Go prints one, in UTC
/// (`2026-11-24 18:47:28 +0000 UTC`).
fn full_date(t: time::OffsetDateTime) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02} +0000 UTC",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

/// The console form: one block per update.
fn console(updates: &[Update], page: usize, full_dates: bool, now: time::OffsetDateTime) -> String {
    if updates.is_empty() {
        return if page > 1 {
            format!("No stack updates found on page '{page}'\n")
        } else {
            "Stack has never been updated\n".to_owned()
        };
    }
    let mut out = String::new();
    for u in updates {
        let count = |k: &str| u.resource_changes.get(k).copied().unwrap_or(0);
        out.push_str(&format!("Version: {}\n", u.version));
        out.push_str(&format!("UpdateKind: {}\n", u.kind));
        if u.cancelled {
            out.push_str(&format!("Status: {} (cancelled)\n", u.result));
        } else {
            out.push_str(&format!("Status: {}\n", u.result));
        }
        out.push_str(&format!("Message: {}\n", u.message));
        let when = match u.start {
            Some(t) if full_dates => full_date(t),
            Some(t) => {
                let ago = std::time::Duration::try_from((now - t).max(time::Duration::ZERO))
                    .unwrap_or_default();
                timeago::Formatter::new().convert(ago)
            }
            None => "at an unknown time".to_owned(),
        };
        let took = match (u.start, u.end) {
            (Some(s), Some(e)) => crate::commands::deploy::go_duration(
                std::time::Duration::try_from((e - s).max(time::Duration::ZERO))
                    .unwrap_or_default(),
            ),
            _ => "0s".to_owned(),
        };
        out.push_str(&format!(
            "+{}-{}~{} {} Updated {when} took {took}\n",
            count("create"),
            count("delete"),
            count("update"),
            count("same"),
        ));
        for (k, v) in &u.environment {
            if !v.trim().is_empty() {
                out.push_str(&format!("    {k}: {v}\n"));
            }
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> time::OffsetDateTime {
        time::OffsetDateTime::from_unix_timestamp(secs).unwrap()
    }

    #[test]
    fn reads_pulumis_records_and_converges_older_ones() {
        let pulumi = br#"{"kind":"update","startTime":1700000000,"message":"m","environment":{"git.head":"abc"},"config":{"p:a":"1","p:s":{"secure":"v1:x"}},"result":"succeeded","endTime":1700000065,"version":0,"resourceChanges":{"create":2,"same":1}}"#;
        let u = Update::parse(pulumi).unwrap();
        assert_eq!(u.start, Some(at(1_700_000_000)));
        assert_eq!(u.resource_changes["create"], 2);
        assert_eq!(u.environment["git.head"], "abc");
        let older = br#"{"kind":"refresh","startTime":"2023-11-14T22:13:20Z","endTime":"2023-11-14T22:13:21Z","message":"","result":"failed","resourceChanges":{}}"#;
        let o = Update::parse(older).unwrap();
        assert_eq!(o.start, Some(at(1_700_000_000)));
        assert_eq!(o.version, 0);
        assert!(Update::parse(b"nope").is_err());
    }

    #[test]
    fn the_console_form_is_pulumis() {
        let u = Update::parse(br#"{"kind":"update","startTime":1700000000,"message":"first","environment":{"exec.kind":"cli","blank":" "},"config":{},"result":"succeeded","endTime":1700000065,"version":3,"resourceChanges":{"create":2,"update":1,"same":4}}"#).unwrap();
        let text = console(std::slice::from_ref(&u), 1, false, at(1_700_000_000 + 7200));
        assert_eq!(
            text,
            "Version: 3\nUpdateKind: update\nStatus: succeeded\nMessage: first\n\
             +2-0~1 4 Updated 2 hours ago took 1m5s\n    exec.kind: cli\n\n"
        );
        let full = console(&[u], 1, true, at(1_700_000_000 + 7200));
        assert!(
            full.contains(" 4 Updated 2023-11-14 22:13:20 +0000 UTC took 1m5s\n"),
            "{full}"
        );
        assert_eq!(
            console(&[], 1, false, at(0)),
            "Stack has never been updated\n"
        );
        assert_eq!(
            console(&[], 3, false, at(0)),
            "No stack updates found on page '3'\n"
        );
    }

    #[test]
    fn json_keeps_secrets_blind_and_pulumis_field_names() {
        let u = Update::parse(br#"{"kind":"update","startTime":1700000000,"message":"","environment":{},"config":{"p:plain":"x","p:obj":{"a":[1,2]},"p:s":{"secure":"v1:x"}},"result":"succeeded","endTime":1700000001,"version":1,"resourceChanges":{"create":1}}"#).unwrap();
        let j = serde_json::to_value(update_json(&u, None).unwrap()).unwrap();
        assert_eq!(j["startTime"], "2023-11-14T22:13:20.000Z");
        assert_eq!(j["endTime"], "2023-11-14T22:13:21.000Z");
        assert_eq!(
            j["config"]["p:plain"],
            serde_json::json!({"value": "x", "secret": false})
        );
        assert_eq!(
            j["config"]["p:obj"],
            serde_json::json!({"value": "{\"a\":[1,2]}", "objectValue": {"a": [1, 2]}, "secret": false})
        );
        assert_eq!(j["config"]["p:s"], serde_json::json!({"secret": true}));
        assert_eq!(j["resourceChanges"]["create"], 1);
        assert_eq!(j["version"], 1);
    }
}
