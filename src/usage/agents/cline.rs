//! Cline on the agent contract: the sessions directory the Cline SDK
//! resolves (cline/cline at 21cb8d2525bcedf1f4b6890b27a74a14fe7451e4,
//! `sdk/packages/shared/src/storage/paths.ts`: `resolveSessionDataDir` is
//! `CLINE_SESSION_DATA_DIR`, else `resolveClineDataDir()/sessions`, that
//! being `CLINE_DATA_DIR`, else `resolveClineDir()/data`, that being
//! `CLINE_DIR`, else `~/.cline`; each value trimmed, none `~`-expanded),
//! its `<id>/*.messages.json` documents, rewritten whole after each turn
//! (with the `cwd` of the session's manifest beside them), and
//! `parse::cline`. The Cline CLI (3.x) and the VS Code extension both
//! write them there.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::{Env, Form, Source};
use crate::usage::event::FileParse;
use crate::usage::parse::cline as parse;

/// Cline: `<sessions>/<id>/<id>.messages.json`.
pub(crate) struct Cline;

impl Source for Cline {
    const NAME: &'static str = "cline";
    const TITLE: &'static str = "Cline";
    const CODE: u8 = 11;
    const PARSER_VERSION: u32 = 1;
    const ENV: &'static [&'static str] = &["CLINE_SESSION_DATA_DIR", "CLINE_DATA_DIR", "CLINE_DIR"];
    const POINTED_BY: &'static [&'static str] = &["CLINE_DIR"];
    const ALWAYS_SHOWN: bool = false;
    // The root is the sessions directory itself (what
    // `CLINE_SESSION_DATA_DIR` names), walked from its top.
    const WALKED: &'static [&'static str] = &[""];
    #[cfg(test)]
    const EXAMPLE: &'static str = "1784094053271_p8pzo/1784094053271_p8pzo.messages.json";
    #[cfg(test)]
    const UNCOUNTED: &'static str = "the reasoning part of Cline's output (its files keep only the total), a turn that failed before any output, the history a fork, checkpoint restore or mode switch copied into a new session (counted once, in the session it came from; a session whose id does not start with its creation time counts its copies again), and the tasks of Cline extensions before the SDK (`tasks/<id>/ui_messages.json`)";
    const FORM: Form = Form::Document;

    fn searched(env: &Env) -> Vec<PathBuf> {
        let var = |key: &str| {
            env.var(key)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let dir = match var("CLINE_SESSION_DATA_DIR") {
            Some(dir) => dir,
            None => match var("CLINE_DATA_DIR") {
                Some(data) => data.join("sessions"),
                None => var("CLINE_DIR")
                    .unwrap_or_else(|| env.home.join(".cline"))
                    .join("data")
                    .join("sessions"),
            },
        };
        vec![dir]
    }
    fn roots(env: &Env) -> Vec<PathBuf> {
        Self::searched(env)
            .into_iter()
            .filter(|dir| dir.is_dir())
            .collect()
    }
    fn wants(name: &OsStr) -> bool {
        name.as_bytes().ends_with(b".messages.json")
    }
    fn begin(parse: &mut FileParse, path: &Path, mtime_ns: i64) {
        let _ = mtime_ns;
        parse::begin(parse, path);
    }
    const BEGINS: bool = true;
    fn parse_document(parse: &mut FileParse, bytes: &[u8]) {
        parse::parse_document(parse, bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn searched(vars: &[(&str, &str)]) -> Vec<PathBuf> {
        super::super::searched_with::<Cline>(vars)
    }

    #[test]
    fn the_root_is_the_sessions_dir_the_sdk_resolves() {
        let p = PathBuf::from;
        assert_eq!(searched(&[]), [p("/home/u/.cline/data/sessions")]);
        assert_eq!(searched(&[("CLINE_DIR", "/c")]), [p("/c/data/sessions")]);
        // `CLINE_DATA_DIR` wins over `CLINE_DIR`, and
        // `CLINE_SESSION_DATA_DIR` over both; values are trimmed.
        assert_eq!(
            searched(&[("CLINE_DIR", "/c"), ("CLINE_DATA_DIR", " /d ")]),
            [p("/d/sessions")]
        );
        assert_eq!(
            searched(&[
                ("CLINE_DIR", "/c"),
                ("CLINE_DATA_DIR", "/d"),
                ("CLINE_SESSION_DATA_DIR", "/s")
            ]),
            [p("/s")]
        );
        // A blank value is unset, as `?.trim() ||` reads it.
        assert_eq!(
            searched(&[("CLINE_DATA_DIR", "  ")]),
            [p("/home/u/.cline/data/sessions")]
        );
    }

    #[test]
    fn only_messages_documents_are_transcripts() {
        assert!(Cline::wants(OsStr::new(
            "1784094053271_p8pzo.messages.json"
        )));
        assert!(Cline::wants(OsStr::new("planner__task1.messages.json")));
        assert!(!Cline::wants(OsStr::new("1784094053271_p8pzo.json")));
        assert!(!Cline::wants(OsStr::new(
            "1784094053271_p8pzo.compaction.json"
        )));
        assert!(!Cline::wants(OsStr::new("hooks.jsonl")));
    }
}
