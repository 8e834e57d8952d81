//! Codex on the agent contract: a thin adapter over `parse::codex`, whose
//! homes, rollout names and line parser it names.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::{Env, Source};
use crate::usage::event::FileParse;
use crate::usage::parse::codex as parse;

/// Codex: `rollout-*.jsonl` (or `.jsonl.zst`) under each home's
/// `sessions/` and `archived_sessions/`.
pub(crate) struct Codex;

impl Source for Codex {
    const NAME: &'static str = "codex";
    const TITLE: &'static str = "Codex";
    const CODE: u8 = 1;
    const PARSER_VERSION: u32 = 2;
    const ENV: &'static [&'static str] = &["CODEX_HOME"];
    const POINTED_BY: &'static [&'static str] = &["CODEX_HOME"];
    const ALWAYS_SHOWN: bool = true;
    const WALKED: &'static [&'static str] = &["sessions", "archived_sessions"];
    #[cfg(test)]
    const EXAMPLE: &'static str =
        "2026/11/08/rollout-2026-11-08T09-15-00-0f6e2c1a-5b1d-4c1e-9d35-2a7c3e1f9b10.jsonl";
    #[cfg(test)]
    const UNCOUNTED: &'static str = "the first response of a totals-only fork whose parent rollout is gone \
         (`forks_unresolved`: its inherited history is never billed)";

    fn searched(env: &Env) -> Vec<PathBuf> {
        parse::homes(env.var("CODEX_HOME").as_deref(), env.home)
    }
    fn roots(env: &Env) -> Vec<PathBuf> {
        parse::roots(env.var("CODEX_HOME").as_deref(), env.home)
    }
    fn wants(name: &OsStr) -> bool {
        name.to_str().is_some_and(parse::is_rollout_name)
    }
    fn compressed(path: &Path) -> bool {
        path.as_os_str().as_bytes().ends_with(b".zst")
    }
    #[inline]
    fn parse_line(parse: &mut FileParse, line: &[u8]) {
        parse::parse_line(parse, line);
    }
}
