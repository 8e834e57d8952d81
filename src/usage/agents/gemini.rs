//! Gemini CLI on the agent contract: the root it resolves (`homedir()` in
//! `packages/core/src/utils/paths.ts`: `GEMINI_CLI_HOME` as given, else the
//! user's home; `Storage.getGlobalGeminiDir` adds `.gemini`), its
//! `tmp/<project>/chats/` session files (`Storage.getProjectTempDir`,
//! `ChatRecordingService.initialize`; google-gemini/gemini-cli, commit
//! 5411f113c), read as documents by `parse::gemini`. Since its project
//! registry (`config/projectRegistry.ts`), a project's directory below
//! `tmp/` is a short name holding `.project_root`, the project's resolved
//! path (written once, when the name is claimed): the directory of every
//! call in that project's files; before it, a hash of the path, which
//! tells none.

use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::{Env, Form, Source};
use crate::usage::event::FileParse;
use crate::usage::parse::gemini as parse;

/// Gemini CLI: `tmp/<project>/chats/session-*.json(l)` under `.gemini`.
pub(crate) struct Gemini;

impl Source for Gemini {
    const NAME: &'static str = "gemini";
    const TITLE: &'static str = "Gemini CLI";
    const CODE: u8 = 4;
    const PARSER_VERSION: u32 = 1;
    const ENV: &'static [&'static str] = &["GEMINI_CLI_HOME"];
    const POINTED_BY: &'static [&'static str] = &["GEMINI_CLI_HOME"];
    const ALWAYS_SHOWN: bool = false;
    const WALKED: &'static [&'static str] = &["tmp"];
    #[cfg(test)]
    const EXAMPLE: &'static str = "3f9a1c2b/chats/session-2026-12-04T10-00-0f6e2c1a.jsonl";
    #[cfg(test)]
    const UNCOUNTED: &'static str = "the model calls Gemini CLI makes besides the conversation's (routing, next-speaker and loop checks, compression, session summaries) and a failed attempt before a retry (their usage is not written), a legacy `.json` session's history copied into its `.jsonl` by a resume once the `.json` is gone, and the directory of a call in a project Gemini CLI named by a hash (before its project registry)";
    const FORM: Form = Form::Document;

    fn searched(env: &Env) -> Vec<PathBuf> {
        let home = match env.var("GEMINI_CLI_HOME") {
            Some(dir) => PathBuf::from(dir),
            None => env.home.to_path_buf(),
        };
        vec![home.join(".gemini")]
    }
    fn roots(env: &Env) -> Vec<PathBuf> {
        Self::searched(env)
            .into_iter()
            .filter(|dir| dir.join("tmp").is_dir())
            .collect()
    }
    fn wants(name: &OsStr) -> bool {
        wants(name.as_bytes())
    }
    fn parse_document(parse: &mut FileParse, bytes: &[u8]) {
        parse::parse_document(parse, bytes);
    }
    /// The project's directory, from its `.project_root` (the file's
    /// calls' directory).
    fn begin(parse: &mut FileParse, path: &Path, _mtime_ns: i64) {
        if let Some(root) = project_root(path) {
            parse.codex.cwd = parse.intern(&root);
        }
    }
    const BEGINS: bool = true;
}

/// The longest `.project_root` read (a path; more is not one).
const MAX_PROJECT_ROOT: u64 = 4096;

/// The path in `tmp/<project>/.project_root` for a session file below
/// `tmp/<project>/chats/`: absolute, one line, UTF-8; `None` otherwise.
fn project_root(session: &Path) -> Option<String> {
    let chats = session
        .ancestors()
        .find(|dir| dir.file_name() == Some(OsStr::new("chats")))?;
    let marker = chats.parent()?.join(".project_root");
    // A regular file only: opening a FIFO would wait for a writer.
    if !std::fs::metadata(&marker).is_ok_and(|m| m.is_file()) {
        return None;
    }
    let file = std::fs::File::open(marker).ok()?;
    let mut bytes = Vec::new();
    file.take(MAX_PROJECT_ROOT + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    if bytes.len() as u64 > MAX_PROJECT_ROOT {
        return None;
    }
    let root = String::from_utf8(bytes).ok()?;
    let root = root.trim();
    (root.starts_with('/') && !root.contains(['\n', '\r', '\0'])).then(|| root.to_string())
}

/// A main session's `session-<YYYY-MM-DDTHH-MM>-<id8>.json(l)`; a
/// subagent's `<session id>.jsonl`; a log the writer could not read and
/// kept aside (`<name>.jsonl.unreadable-<ms>`, its rewrite skipping what
/// it holds). The activity log's `session-<uuid>.jsonl` (in `logs/`) is
/// not a session: its name has no time.
fn wants(name: &[u8]) -> bool {
    let log =
        name.ends_with(b".jsonl") || memchr::memmem::find(name, b".jsonl.unreadable-").is_some();
    match name.strip_prefix(b"session-") {
        Some(rest) => {
            let timed =
                rest.len() > 5 && rest[..4].iter().all(u8::is_ascii_digit) && rest[4] == b'-';
            timed && (log || name.ends_with(b".json"))
        }
        None => log,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn the_root_is_gemini_cli_home_s_or_the_home_s_dot_gemini() {
        let searched = |vars: &[(&str, &str)]| {
            let var = |k: &str| {
                vars.iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            };
            Gemini::searched(&Env {
                home: Path::new("/home/u"),
                var: &var,
            })
        };
        assert_eq!(searched(&[]), [PathBuf::from("/home/u/.gemini")]);
        assert_eq!(
            searched(&[("GEMINI_CLI_HOME", "/g")]),
            [PathBuf::from("/g/.gemini")]
        );
    }

    #[test]
    fn the_project_s_directory_is_its_project_root_marker() {
        let scratch = crate::base::scratch::ScratchDir::new("gemini-root");
        let slug = scratch.path().join("tmp/heeler");
        let session = slug.join("chats/session-2026-12-04T10-00-0f6e2c1a.jsonl");
        let subagent = slug.join("chats/0f6e2c1a/sub-1.jsonl");
        assert_eq!(project_root(&session), None);
        std::fs::create_dir_all(subagent.parent().unwrap()).unwrap();
        std::fs::write(slug.join(".project_root"), "/home/u/heeler").unwrap();
        assert_eq!(project_root(&session).as_deref(), Some("/home/u/heeler"));
        assert_eq!(project_root(&subagent).as_deref(), Some("/home/u/heeler"));
        let mut fp = FileParse::default();
        Gemini::begin(&mut fp, &subagent, 0);
        assert_eq!(fp.string(fp.codex.cwd), "/home/u/heeler");
        for bad in ["relative/dir", "/a\n/b", ""] {
            std::fs::write(slug.join(".project_root"), bad).unwrap();
            assert_eq!(project_root(&session), None, "{bad:?}");
        }
        std::fs::write(slug.join(".project_root"), "/".repeat(5000)).unwrap();
        assert_eq!(project_root(&session), None);
    }

    #[test]
    fn session_files_are_wanted_and_the_activity_log_is_not() {
        for name in [
            "session-2026-12-04T10-00-0f6e2c1a.json",
            "session-2026-12-04T10-00-0f6e2c1a.jsonl",
            "session-2026-12-04T10-00-0f6e2c1a.jsonl.unreadable-1764842400000",
            "0f6e2c1a-5b1d-4c1e-9d35-2a7c3e1f9b10.jsonl",
        ] {
            assert!(wants(name.as_bytes()), "{name}");
        }
        for name in [
            "session-0f6e2c1a-5b1d-4c1e-9d35-2a7c3e1f9b10.jsonl",
            "checkpoint-save.json",
            "logs.json",
            "session-2026-12-04T10-00-0f6e2c1a.jsonl.tmp-4242",
        ] {
            assert!(!wants(name.as_bytes()), "{name}");
        }
    }
}
