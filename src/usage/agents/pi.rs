//! pi (and Oh My Pi) on the agent contract: the roots pi resolves
//! (`getAgentDir` in pi-mono's `packages/coding-agent/src/config.ts`:
//! `PI_CODING_AGENT_DIR`, else `~/.pi/agent`; Oh My Pi's `~/.omp/agent`),
//! their `sessions/**/*.jsonl`, and `parse::pi`.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::{Env, Source};
use crate::usage::event::FileParse;
use crate::usage::parse::pi as parse;

/// pi: `sessions/--<cwd>--/<time>_<id>.jsonl` under each agent directory.
pub(crate) struct Pi;

impl Source for Pi {
    const NAME: &'static str = "pi";
    const TITLE: &'static str = "pi";
    const CODE: u8 = 2;
    const PARSER_VERSION: u32 = 1;
    const ENV: &'static [&'static str] = &["PI_CODING_AGENT_DIR"];
    const POINTED_BY: &'static [&'static str] = &["PI_CODING_AGENT_DIR"];
    const ALWAYS_SHOWN: bool = false;
    const WALKED: &'static [&'static str] = &["sessions"];
    #[cfg(test)]
    const EXAMPLE: &'static str =
        "--home-u-proj--/2026-12-04T10-00-00-000Z_0f6e2c1a-5b1d-4c1e-9d35-2a7c3e1f9b10.jsonl";
    #[cfg(test)]
    const UNCOUNTED: &'static str = "the model calls pi makes for a compaction or a branch summary (their usage is not written), and a fork's copied history when its parent session file is gone";

    fn searched(env: &Env) -> Vec<PathBuf> {
        let mut dirs = Vec::new();
        match env.var("PI_CODING_AGENT_DIR") {
            Some(dir) if dir == "~" => dirs.push(env.home.to_path_buf()),
            Some(dir) => match dir.strip_prefix("~/") {
                Some(rest) => dirs.push(env.home.join(rest)),
                None => dirs.push(PathBuf::from(dir)),
            },
            None => dirs.push(env.home.join(".pi").join("agent")),
        }
        dirs.push(env.home.join(".omp").join("agent"));
        dirs
    }
    fn roots(env: &Env) -> Vec<PathBuf> {
        let mut roots: Vec<PathBuf> = Vec::new();
        for dir in Self::searched(env) {
            if dir.join("sessions").is_dir() && !roots.contains(&dir) {
                roots.push(dir);
            }
        }
        roots
    }
    fn wants(name: &OsStr) -> bool {
        name.as_bytes().ends_with(b".jsonl")
    }
    fn compressed(_: &Path) -> bool {
        false
    }
    #[inline]
    fn parse_line(parse: &mut FileParse, line: &[u8]) {
        parse::parse_line(parse, line);
    }
}
