//! pi (and Oh My Pi) on the agent contract: the roots each resolves
//! (`getAgentDir` in `packages/coding-agent/src/config.ts`: pi-mono's
//! `PI_CODING_AGENT_DIR` with `~` expanded, else `~/.pi/agent`; Oh My
//! Pi's (can1357/oh-my-pi) `OMP_CODING_AGENT_DIR` as given, else
//! `~/.omp/agent`), their `sessions/**/*.jsonl` (Oh My Pi's subagents'
//! own files included, in a directory named after their session), and
//! `parse::pi`.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

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
    const ENV: &'static [&'static str] = &["PI_CODING_AGENT_DIR", "OMP_CODING_AGENT_DIR"];
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
        match env.var("OMP_CODING_AGENT_DIR") {
            Some(dir) => dirs.push(PathBuf::from(dir)),
            None => dirs.push(env.home.join(".omp").join("agent")),
        }
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
    #[inline]
    fn parse_line(parse: &mut FileParse, line: &[u8]) {
        parse::parse_line(parse, line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn searched(vars: &[(&str, &str)]) -> Vec<PathBuf> {
        super::super::searched_with::<Pi>(vars)
    }

    #[test]
    fn the_roots_are_the_agent_dirs_pi_and_oh_my_pi_resolve() {
        let p = PathBuf::from;
        assert_eq!(
            searched(&[]),
            [p("/home/u/.pi/agent"), p("/home/u/.omp/agent")]
        );
        // pi expands `~` and `~/` (its `getAgentDir`); Oh My Pi takes its
        // variable as given.
        assert_eq!(
            searched(&[
                ("PI_CODING_AGENT_DIR", "~/pi"),
                ("OMP_CODING_AGENT_DIR", "/o")
            ]),
            [p("/home/u/pi"), p("/o")]
        );
        assert_eq!(searched(&[("PI_CODING_AGENT_DIR", "~")])[0], p("/home/u"));
        assert_eq!(
            searched(&[("PI_CODING_AGENT_DIR", "/x/agent")])[0],
            p("/x/agent")
        );
    }
}
