//! Claude Code on the agent contract: a thin adapter over `parse::claude`,
//! whose roots and line parser it names.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use super::{Env, Source};
use crate::usage::event::FileParse;
use crate::usage::parse::claude as parse;

/// Claude Code: `projects/**/*.jsonl` under each root.
pub(crate) struct Claude;

impl Source for Claude {
    const NAME: &'static str = "claude";
    const TITLE: &'static str = "Claude Code";
    const CODE: u8 = 0;
    /// 3: a record's web searches (`server_tool_use.web_search_requests`)
    /// are its event's sixth counter, which version 2 left at 0, and its
    /// events carry their record's `sessionId` (a Claude event's bytes
    /// changed too, so its entries of version 2 are never decoded). 4: a
    /// record without a `requestId` is keyed by its `message.id` (version 3
    /// left it unkeyed).
    const PARSER_VERSION: u32 = 4;
    const ENV: &'static [&'static str] = &["CLAUDE_CONFIG_DIR", "XDG_CONFIG_HOME"];
    const POINTED_BY: &'static [&'static str] = &["CLAUDE_CONFIG_DIR"];
    const ALWAYS_SHOWN: bool = true;
    const WALKED: &'static [&'static str] = &["projects"];
    #[cfg(test)]
    const EXAMPLE: &'static str = "-home-u-p/0f6e2c1a-5b1d-4c1e-9d35-2a7c3e1f9b10.jsonl";
    #[cfg(test)]
    const UNCOUNTED: &'static str = "sessions whose transcripts Claude Code has deleted (its `cleanupPeriodDays`, 30 days by default)";

    fn searched(env: &Env) -> Vec<PathBuf> {
        parse::candidates(
            env.var("CLAUDE_CONFIG_DIR").as_deref(),
            env.home,
            env.var("XDG_CONFIG_HOME").as_deref(),
        )
    }
    fn roots(env: &Env) -> Vec<PathBuf> {
        parse::roots(
            env.var("CLAUDE_CONFIG_DIR").as_deref(),
            env.home,
            env.var("XDG_CONFIG_HOME").as_deref(),
        )
    }
    fn wants(name: &OsStr) -> bool {
        name.as_bytes().ends_with(b".jsonl")
    }
    #[inline]
    fn parse_line(parse: &mut FileParse, line: &[u8]) {
        parse::parse_line(parse, line);
    }
}
