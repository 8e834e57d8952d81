//! Droid on the agent contract: Factory's `~/.factory/sessions` (the
//! public readers' root: tokscale, ccusage), the `<id>.settings.json`
//! documents below it (a session's running token totals), and
//! `parse::droid`.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::{Env, Form, Source};
use crate::usage::event::FileParse;
use crate::usage::parse::droid as parse;

/// Droid: `sessions/**/<id>.settings.json` under `~/.factory`.
pub(crate) struct Droid;

impl Source for Droid {
    const NAME: &'static str = "droid";
    const TITLE: &'static str = "Droid";
    const CODE: u8 = 7;
    const PARSER_VERSION: u32 = 1;
    const ENV: &'static [&'static str] = &[];
    const POINTED_BY: &'static [&'static str] = &[];
    const ALWAYS_SHOWN: bool = false;
    const WALKED: &'static [&'static str] = &["sessions"];
    #[cfg(test)]
    const EXAMPLE: &'static str = "-home-u-proj/0f6e2c1a-5b1d-4c1e-9d35-2a7c3e1f9b10.settings.json";
    #[cfg(test)]
    const UNCOUNTED: &'static str = "when within a session each call was made (Droid keeps only a session's running totals, dated at its provider lock, else at the settings file's last write), and sessions whose settings file was deleted";

    fn searched(env: &Env) -> Vec<PathBuf> {
        vec![env.home.join(".factory")]
    }
    fn roots(env: &Env) -> Vec<PathBuf> {
        Self::searched(env)
            .into_iter()
            .filter(|dir| dir.join("sessions").is_dir())
            .collect()
    }
    fn wants(name: &OsStr) -> bool {
        name.as_bytes().ends_with(parse::SETTINGS.as_bytes())
    }
    const FORM: Form = Form::Document;
    const BEGINS: bool = true;
    fn begin(parse: &mut FileParse, path: &Path, mtime_ns: i64) {
        parse::begin(parse, path, mtime_ns);
    }
    fn parse_document(parse: &mut FileParse, bytes: &[u8]) {
        parse::parse_document(parse, bytes);
    }
}
