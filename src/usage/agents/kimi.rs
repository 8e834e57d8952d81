//! Kimi CLI on the agent contract (MoonshotAI/kimi-cli at 4a550eff): the
//! share directory (`get_share_dir` in `src/kimi_cli/share.py`:
//! `KIMI_SHARE_DIR`, else `~/.kimi`), its `sessions/<work-dir md5>/
//! <session id>/wire.jsonl` (`WorkDirMeta.sessions_dir` in `metadata.py`,
//! `Session.create` in `session.py`) and each subagent's
//! `subagents/<agent id>/wire.jsonl` below a session's directory
//! (`SubagentStore.wire_path` in `subagents/store.py`), and
//! `parse::kimi`. Sessions imported for `kimi vis`
//! (`imported_sessions/`) are copies of sessions read where they were
//! made, and are not read.
//!
//! A file's session is the name of its session's directory ([`Kimi::begin`]).
//! `/fork` and `/undo` (`fork_session` in `session_fork.py`) copy a
//! session's wire lines, unchanged, into a new session, then save its
//! `state.json` with the title `Fork: …` or `Undo: …` and `wire_mtime`, the
//! copied file's time: a session with such a title keeps its lines
//! stamped up to that time out, as its parent counts them.

use std::ffi::OsStr;
use std::io::Read;
use std::path::{Path, PathBuf};

use super::{Env, Source};
use crate::usage::event::FileParse;
use crate::usage::parse::jsonpick::Cursor;
use crate::usage::parse::kimi as parse;

/// Kimi CLI: `sessions/<work dir>/<session>/wire.jsonl` under the share
/// directory.
pub(crate) struct Kimi;

impl Source for Kimi {
    const NAME: &'static str = "kimi";
    const TITLE: &'static str = "Kimi";
    const CODE: u8 = 8;
    const PARSER_VERSION: u32 = 1;
    const ENV: &'static [&'static str] = &["KIMI_SHARE_DIR"];
    const POINTED_BY: &'static [&'static str] = &["KIMI_SHARE_DIR"];
    const ALWAYS_SHOWN: bool = false;
    const WALKED: &'static [&'static str] = &["sessions"];
    #[cfg(test)]
    const EXAMPLE: &'static str =
        "3f2b6c1d9e8a7b6c5d4e3f2a1b0c9d8e/0f6e2c1a-5b1d-4c1e-9d35-2a7c3e1f9b10/wire.jsonl";
    #[cfg(test)]
    const UNCOUNTED: &'static str = "the model of a Kimi call (its wire file does not name it, so Kimi's calls are the unknown model and unpriced), the model calls of a compaction and of a step interrupted or failed before its response completed (their usage is not written), and history a /fork or /undo copied into a session later renamed (counted again)";

    fn searched(env: &Env) -> Vec<PathBuf> {
        vec![match env.var("KIMI_SHARE_DIR") {
            Some(dir) => PathBuf::from(dir),
            None => env.home.join(".kimi"),
        }]
    }
    fn roots(env: &Env) -> Vec<PathBuf> {
        Self::searched(env)
            .into_iter()
            .filter(|dir| dir.join("sessions").is_dir())
            .collect()
    }
    fn wants(name: &OsStr) -> bool {
        name == "wire.jsonl"
    }
    const BEGINS: bool = true;
    fn begin(parse: &mut FileParse, path: &Path, _mtime_ns: i64) {
        let Some(dir) = path.parent() else {
            return;
        };
        let name = |p: &Path| p.file_name().map(|n| n.to_string_lossy().into_owned());
        let above = dir.parent();
        if above.and_then(Path::file_name) == Some(OsStr::new("subagents")) {
            // `<session>/subagents/<agent id>/wire.jsonl`: the session's.
            parse.codex.thread_id = above
                .and_then(Path::parent)
                .and_then(name)
                .unwrap_or_default();
            parse.codex.subagent = true;
            return;
        }
        parse.codex.thread_id = name(dir).unwrap_or_default();
        if let Some((title, wire_ms)) = fork_of(&dir.join("state.json")) {
            parse.codex.forked_from = title;
            parse.codex.meta_ts = wire_ms;
        }
    }
    #[inline]
    fn parse_line(parse: &mut FileParse, line: &[u8]) {
        parse::parse_line(parse, line);
    }
}

/// What a session's `state.json` (`SessionState` in `session_state.py`)
/// tells of a fork: the prefix of its title (`Fork` or `Undo`) and its
/// `wire_mtime` in Unix milliseconds; `None` for any other session or a
/// file that cannot be read (at most 1 MiB of it).
fn fork_of(path: &Path) -> Option<(String, i64)> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .ok()?
        .take(1 << 20)
        .read_to_end(&mut bytes)
        .ok()?;
    let (mut title, mut wire_ms) = (None, None);
    let mut c = Cursor::new(&bytes);
    c.object(|key, c| {
        match key {
            b"custom_title" => title = c.text()?,
            b"wire_mtime" => wire_ms = parse::unix_ms(c.raw()?),
            _ => c.skip()?,
        }
        Some(())
    })?;
    let title = title?;
    let prefix = ["Fork", "Undo"].into_iter().find(|p| {
        title
            .strip_prefix(p.as_bytes())
            .is_some_and(|r| r.starts_with(b": "))
    })?;
    Some((prefix.to_string(), wire_ms?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::scratch::ScratchDir;

    #[test]
    fn the_root_is_the_share_directory() {
        let var = |k: &str| (k == "KIMI_SHARE_DIR").then(|| "/s/kimi".to_string());
        let none = |_: &str| None;
        let home = Path::new("/home/u");
        let env = |var| Env { home, var };
        assert_eq!(
            Kimi::searched(&env(&none)),
            [PathBuf::from("/home/u/.kimi")]
        );
        assert_eq!(Kimi::searched(&env(&var)), [PathBuf::from("/s/kimi")]);
        assert!(Kimi::wants(OsStr::new("wire.jsonl")));
        assert!(!Kimi::wants(OsStr::new("context.jsonl")));
    }

    #[test]
    fn a_file_s_session_is_its_directory_and_a_fork_s_time_is_its_state_s() {
        let scratch = ScratchDir::new("kimi-begin");
        let session = scratch.path().join("sessions/abc/s-1");
        std::fs::create_dir_all(session.join("subagents/a-9")).unwrap();
        let mut fp = FileParse::default();
        Kimi::begin(&mut fp, &session.join("wire.jsonl"), 0);
        assert_eq!(fp.codex.thread_id, "s-1");
        assert!(fp.codex.forked_from.is_empty());
        let mut sub = FileParse::default();
        Kimi::begin(&mut sub, &session.join("subagents/a-9/wire.jsonl"), 0);
        assert_eq!(sub.codex.thread_id, "s-1");
        assert!(sub.codex.subagent);
        // `save_session_state` writes the model with `indent=2`.
        std::fs::write(
            session.join("state.json"),
            "{\n  \"version\": 1,\n  \"approval\": {\"yolo\": false},\n  \"custom_title\": \"Undo: fix the build\",\n  \"wire_mtime\": 1764842420.5\n}",
        )
        .unwrap();
        let mut fork = FileParse::default();
        Kimi::begin(&mut fork, &session.join("wire.jsonl"), 0);
        assert_eq!(fork.codex.forked_from, "Undo");
        assert_eq!(fork.codex.meta_ts, 1_764_842_420_500);
        // A title of a person's own: no fork.
        std::fs::write(
            session.join("state.json"),
            r#"{"custom_title": "Forking the parser", "wire_mtime": 1764842420.5}"#,
        )
        .unwrap();
        let mut own = FileParse::default();
        Kimi::begin(&mut own, &session.join("wire.jsonl"), 0);
        assert!(own.codex.forked_from.is_empty());
    }
}
