//! Qwen Code on the agent contract: the runtime directory it writes
//! sessions under (`Storage.getRuntimeBaseDir` in
//! `packages/core/src/config/storage.ts`, QwenLM/qwen-code: the
//! `QWEN_RUNTIME_DIR` variable with `~` expanded, else `QWEN_HOME`, else
//! `~/.qwen`), its `projects/<sanitized cwd>/chats/<sessionId>.jsonl`
//! (`getProjectDir`), and `parse::qwen`.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use super::{Env, Source};
use crate::usage::event::FileParse;
use crate::usage::parse::qwen as parse;

/// Qwen Code: `projects/<cwd>/chats/<sessionId>.jsonl` under its runtime
/// directory.
pub(crate) struct Qwen;

impl Source for Qwen {
    const NAME: &'static str = "qwen";
    const TITLE: &'static str = "Qwen Code";
    const CODE: u8 = 5;
    const PARSER_VERSION: u32 = 1;
    const ENV: &'static [&'static str] = &["QWEN_RUNTIME_DIR", "QWEN_HOME"];
    const POINTED_BY: &'static [&'static str] = &["QWEN_RUNTIME_DIR", "QWEN_HOME"];
    const ALWAYS_SHOWN: bool = false;
    const WALKED: &'static [&'static str] = &["projects"];
    #[cfg(test)]
    const EXAMPLE: &'static str = "-home-u-proj/chats/0f6e2c1a-5b1d-4c1e-9d35-2a7c3e1f9b10.jsonl";
    #[cfg(test)]
    const UNCOUNTED: &'static str = "the model calls Qwen Code makes besides a chat's recorded turns (session titles, compression, side queries: their usage is not written), a call whose provider reported only a total, sessions under a runtime directory set in settings rather than the environment, and a `/branch` copy's history when its parent session file is gone";

    /// The runtime directory the writer resolves, then `~/.qwen` (where a
    /// run without the variables wrote).
    fn searched(env: &Env) -> Vec<PathBuf> {
        let default = env.home.join(".qwen");
        let resolved = match (env.var("QWEN_RUNTIME_DIR"), env.var("QWEN_HOME")) {
            (Some(dir), _) if dir == "~" => env.home.to_path_buf(),
            (Some(dir), _) => match dir.strip_prefix("~/") {
                Some(rest) => env.home.join(rest),
                None => PathBuf::from(dir),
            },
            (None, Some(dir)) => PathBuf::from(dir),
            (None, None) => default.clone(),
        };
        let mut dirs = vec![resolved];
        if dirs[0] != default {
            dirs.push(default);
        }
        dirs
    }
    fn roots(env: &Env) -> Vec<PathBuf> {
        Self::searched(env)
            .into_iter()
            .filter(|dir| dir.join("projects").is_dir())
            .collect()
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
    use std::path::Path;

    #[test]
    fn the_roots_are_the_runtime_directory_then_the_default() {
        let searched = |vars: &[(&str, &str)]| {
            let var = |k: &str| {
                vars.iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            };
            Qwen::searched(&Env {
                home: Path::new("/home/u"),
                var: &var,
            })
        };
        let p = PathBuf::from;
        assert_eq!(searched(&[]), [p("/home/u/.qwen")]);
        assert_eq!(
            searched(&[("QWEN_RUNTIME_DIR", "~/rt"), ("QWEN_HOME", "/q")]),
            [p("/home/u/rt"), p("/home/u/.qwen")]
        );
        assert_eq!(
            searched(&[("QWEN_HOME", "/q")]),
            [p("/q"), p("/home/u/.qwen")]
        );
        assert_eq!(searched(&[("QWEN_RUNTIME_DIR", "~")])[0], p("/home/u"));
    }
}
