//! Amp on the agent contract: its data directory (Amp keeps threads under
//! `$XDG_DATA_HOME/amp`, else `~/.local/share/amp`, as the public readers
//! agree: tokscale, ccusage, casr's `providers/amp.rs`), the
//! `threads/T-<uuid>.json` documents there, and `parse::amp`.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::{Env, Form, Source};
use crate::usage::event::FileParse;
use crate::usage::parse::amp as parse;

/// Amp: `threads/T-<uuid>.json` under its data directory.
pub(crate) struct Amp;

impl Source for Amp {
    const NAME: &'static str = "amp";
    const TITLE: &'static str = "Amp";
    const CODE: u8 = 6;
    const PARSER_VERSION: u32 = 1;
    const ENV: &'static [&'static str] = &["XDG_DATA_HOME"];
    // `XDG_DATA_HOME` moves every program's data, not a list of Amp's.
    const POINTED_BY: &'static [&'static str] = &[];
    const ALWAYS_SHOWN: bool = false;
    const WALKED: &'static [&'static str] = &["threads"];
    #[cfg(test)]
    const EXAMPLE: &'static str = "T-0f6e2c1a-5b1d-4c1e-9d35-2a7c3e1f9b10.json";
    #[cfg(test)]
    const UNCOUNTED: &'static str = "threads Amp keeps on its servers only (its CLI since spring 2026 leaves no complete thread file on disk), and a forked thread's copied calls that carry no time of their own (they count again)";

    fn searched(env: &Env) -> Vec<PathBuf> {
        vec![env.xdg_data_home().join("amp")]
    }
    fn roots(env: &Env) -> Vec<PathBuf> {
        Self::searched(env)
            .into_iter()
            .filter(|dir| dir.join("threads").is_dir())
            .collect()
    }
    fn wants(name: &OsStr) -> bool {
        let name = name.as_bytes();
        name.starts_with(b"T-") && name.ends_with(b".json")
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

#[cfg(test)]
mod tests {
    use super::*;

    fn searched(vars: &[(&str, &str)]) -> Vec<PathBuf> {
        super::super::searched_with::<Amp>(vars)
    }

    #[test]
    fn the_root_is_amp_s_xdg_data_directory() {
        let p = PathBuf::from;
        assert_eq!(searched(&[]), [p("/home/u/.local/share/amp")]);
        assert_eq!(searched(&[("XDG_DATA_HOME", "/d")]), [p("/d/amp")]);
        assert_eq!(
            searched(&[("XDG_DATA_HOME", "rel")]),
            [p("/home/u/.local/share/amp")]
        );
        assert!(Amp::wants(OsStr::new("T-1.json")));
        assert!(!Amp::wants(OsStr::new("T-1.json.tmp")));
        assert!(!Amp::wants(OsStr::new("index.json")));
    }
}
