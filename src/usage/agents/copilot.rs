//! GitHub Copilot CLI on the agent contract: its OpenTelemetry file
//! export, written only when a person turns it on (docs.github.com,
//! "OpenTelemetry monitoring": `COPILOT_OTEL_ENABLED=true` or an exporter
//! setting, `COPILOT_OTEL_EXPORTER_TYPE=file`, and the file
//! `COPILOT_OTEL_FILE_EXPORTER_PATH`). Read from that file, and from the
//! `otel/*.jsonl` files of Copilot's directory (`COPILOT_HOME`, else
//! `~/.copilot`: "cli config dir reference"), where exports are kept by
//! convention; and `parse::copilot`. Copilot also records each turn's
//! usage in its SQLite `session-store.db` (table `assistant_usage_events`,
//! as tokscale's `sessions/copilot_session_store.rs` reads it): heeler
//! does not read that database yet (its format is undocumented and would
//! need its own dedupe against the export), so a call made while the
//! export was off is not counted.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::{Env, Source};
use crate::usage::event::FileParse;
use crate::usage::parse::copilot as parse;

/// Copilot CLI: `otel/*.jsonl` in its directory, and the export file.
pub(crate) struct Copilot;

impl Source for Copilot {
    const NAME: &'static str = "copilot";
    const TITLE: &'static str = "Copilot CLI";
    const CODE: u8 = 9;
    const PARSER_VERSION: u32 = 1;
    const ENV: &'static [&'static str] = &["COPILOT_HOME", "COPILOT_OTEL_FILE_EXPORTER_PATH"];
    const POINTED_BY: &'static [&'static str] = &["COPILOT_OTEL_FILE_EXPORTER_PATH"];
    const ALWAYS_SHOWN: bool = false;
    // A root is the directory of exports, or the export file itself.
    const WALKED: &'static [&'static str] = &[""];
    #[cfg(test)]
    const EXAMPLE: &'static str = "copilot-otel-2026-12-04.jsonl";
    #[cfg(test)]
    const UNCOUNTED: &'static str = "Copilot CLI's calls made while its OpenTelemetry file export was off (its SQLite session-store.db records them too, and heeler does not read that database yet), and an export file written where COPILOT_OTEL_FILE_EXPORTER_PATH no longer points (outside Copilot's otel directory)";

    fn searched(env: &Env) -> Vec<PathBuf> {
        let home = match env.var("COPILOT_HOME") {
            Some(dir) => PathBuf::from(dir),
            None => env.home.join(".copilot"),
        };
        let mut searched = vec![home.join("otel")];
        // A relative path is relative to where Copilot ran: unknown here.
        if let Some(file) = env.var("COPILOT_OTEL_FILE_EXPORTER_PATH")
            && Path::new(&file).is_absolute()
        {
            searched.push(PathBuf::from(file));
        }
        searched
    }
    fn roots(env: &Env) -> Vec<PathBuf> {
        let mut roots: Vec<PathBuf> = Vec::new();
        for root in Self::searched(env) {
            if (root.is_dir() || root.is_file()) && !roots.contains(&root) {
                roots.push(root);
            }
        }
        roots
    }
    fn wants(name: &OsStr) -> bool {
        name.as_bytes().ends_with(b".jsonl")
    }
    const BEGINS: bool = true;
    fn begin(parse: &mut FileParse, path: &Path, _mtime_ns: i64) {
        // The session of a span without its conversation's id.
        let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned());
        parse.codex.thread_id = stem.unwrap_or_default();
    }
    #[inline]
    fn parse_line(parse: &mut FileParse, line: &[u8]) {
        parse::parse_line(parse, line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_roots_are_the_otel_directory_and_the_export_file() {
        let home = Path::new("/home/u");
        let none = |_: &str| None;
        assert_eq!(
            Copilot::searched(&Env { home, var: &none }),
            [PathBuf::from("/home/u/.copilot/otel")]
        );
        let set = |k: &str| match k {
            "COPILOT_HOME" => Some("/c".to_string()),
            "COPILOT_OTEL_FILE_EXPORTER_PATH" => Some("/tmp/o/cli.jsonl".to_string()),
            _ => None,
        };
        assert_eq!(
            Copilot::searched(&Env { home, var: &set }),
            [PathBuf::from("/c/otel"), PathBuf::from("/tmp/o/cli.jsonl")]
        );
        let relative = |k: &str| (k == "COPILOT_OTEL_FILE_EXPORTER_PATH").then(|| "o.jsonl".into());
        assert_eq!(
            Copilot::searched(&Env {
                home,
                var: &relative
            })
            .len(),
            1
        );
        let mut fp = FileParse::default();
        Copilot::begin(&mut fp, Path::new("/c/otel/copilot-otel-1.jsonl"), 0);
        assert_eq!(fp.codex.thread_id, "copilot-otel-1");
    }
}
