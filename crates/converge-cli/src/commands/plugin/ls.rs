//! `converge plugin ls [--json]`.
//!
//! The table is Pulumi's (NAME KIND VERSION SIZE INSTALLED LAST USED, then
//! the cache's total size), for the plugin directory's plugins. After it,
//! in the human output only, the providers Converge has without any
//! plugin: those built into the binary and the Terraform providers found
//! in OpenTofu's local layouts — marked as such, since they are not in
//! the plugin directory. `--json` is Pulumi's shape exactly (an array of
//! `{name, kind, version, size, installTime, lastUsedTime}`) and so lists
//! only the plugin directory's plugins: tools reading it take every entry
//! for an installed plugin they could remove or reuse.

use std::time::SystemTime;

use anyhow::{Context as _, Result};
use converge_plugin::builtin;
use converge_plugin::host::catalog;
use converge_plugin::terraform::discovery::{all_installed, DiscoveryOptions};

use super::plugins_dir;
use crate::table::Table;

struct Listed {
    entry: catalog::CatalogEntry,
    meta: Option<catalog::CatalogMetadata>,
}

pub fn run(json: bool) -> Result<()> {
    let dir = plugins_dir()?;
    let plugins: Vec<Listed> = catalog::list(&dir)
        .with_context(|| format!("cannot read the plugin directory {}", dir.display()))?
        .into_iter()
        .map(|entry| Listed {
            meta: entry.metadata().ok(),
            entry,
        })
        .collect();
    if json {
        let list: Vec<serde_json::Value> = plugins.iter().map(json_entry).collect();
        println!("{}", serde_json::to_string_pretty(&list)?);
        return Ok(());
    }
    let now = SystemTime::now();
    let mut table = Table::new(["NAME", "KIND", "VERSION", "SIZE", "INSTALLED", "LAST USED"]);
    let mut total = 0;
    for p in &plugins {
        let size = p.meta.as_ref().map_or(0, |m| m.size);
        total += size;
        let ago = |t: Option<SystemTime>, none: &str| {
            t.map_or_else(|| none.to_owned(), |t| time_ago(t, now))
        };
        table.row([
            p.entry.name.clone(),
            p.entry.kind.clone(),
            p.entry.version.to_string(),
            if size == 0 {
                "n/a".to_owned()
            } else {
                human_bytes(size)
            },
            ago(p.meta.as_ref().and_then(|m| m.installed), "n/a"),
            ago(p.meta.as_ref().and_then(|m| m.last_used), "never"),
        ]);
    }
    print!("{table}");
    println!();
    println!("TOTAL plugin cache size: {}", human_bytes(total));

    println!();
    println!("Built into converge (used when no plugin or Terraform provider serves the package):");
    let mut builtins = Table::new(["NAME", "KIND", "VERSION"]);
    let mut packages = builtin::PACKAGES.to_vec();
    packages.sort_unstable();
    for package in packages {
        let version = builtin::version(package).map_or_else(String::new, |v| v.to_string());
        builtins.row([package.to_owned(), "resource".to_owned(), version]);
    }
    print!("{builtins}");

    let mut discovery = DiscoveryOptions::from_environment();
    // Where `converge plugin install terraform` puts providers.
    if let Ok(config) = converge_terraform::install::CliConfig::from_environment() {
        if let Some(cache) = config.plugin_cache_dir {
            if !discovery.dirs.contains(&cache) {
                discovery.dirs.insert(0, cache);
            }
        }
    }
    let terraform = all_installed(&discovery);
    if !terraform.is_empty() {
        println!();
        println!("Terraform providers (used for a package no plugin serves):");
        let mut t = Table::new(["NAME", "VERSION", "SOURCE", "PATH"]);
        for p in terraform {
            t.row([
                p.type_name.clone(),
                p.version.to_string(),
                format!("{}/{}/{}", p.host, p.namespace, p.type_name),
                p.executable.display().to_string(),
            ]);
        }
        print!("{t}");
    }
    Ok(())
}

fn json_entry(p: &Listed) -> serde_json::Value {
    let mut o = serde_json::json!({
        "name": p.entry.name,
        "kind": p.entry.kind,
        "version": p.entry.version.to_string(),
        "size": p.meta.as_ref().map_or(0, |m| m.size),
    });
    let times = [
        ("installTime", p.meta.as_ref().and_then(|m| m.installed)),
        ("lastUsedTime", p.meta.as_ref().and_then(|m| m.last_used)),
    ];
    for (key, t) in times {
        if let Some(t) = t.and_then(rfc5424) {
            o[key] = serde_json::Value::String(t);
        }
    }
    o
}

/// Pulumi's JSON time: RFC 5424 in UTC with milliseconds,
/// `2024-05-01T12:00:00.000Z`.
pub fn rfc5424(t: SystemTime) -> Option<String> {
    let t = time::OffsetDateTime::from(t);
    let format = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    t.to_offset(time::UtcOffset::UTC).format(&format).ok()
}

fn time_ago(t: SystemTime, now: SystemTime) -> String {
    let ago = now.duration_since(t).unwrap_or_default();
    timeago::Formatter::new().convert(ago)
}

/// Bytes in SI units as Pulumi prints them: `9 B`, `1.5 kB`, `83 MB`.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 7] = ["B", "kB", "MB", "GB", "TB", "PB", "EB"];
    if n < 10 {
        return format!("{n} B");
    }
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1000.0 && unit < UNITS.len() - 1 {
        value /= 1000.0;
        unit += 1;
    }
    let value = (value * 10.0 + 0.5).floor() / 10.0;
    if value < 10.0 {
        format!("{value:.1} {}", UNITS[unit])
    } else {
        format!("{value:.0} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_times_as_pulumi_prints_them() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(9), "9 B");
        assert_eq!(human_bytes(999), "999 B");
        assert_eq!(human_bytes(1500), "1.5 kB");
        assert_eq!(human_bytes(82_854_982), "83 MB");
        let t = SystemTime::UNIX_EPOCH + std::time::Duration::from_millis(1_700_000_000_123);
        assert_eq!(rfc5424(t).unwrap(), "2023-11-14T22:13:20.123Z");
    }
}
