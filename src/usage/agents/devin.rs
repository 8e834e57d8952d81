//! Devin for Terminal (Cognition's Devin CLI) on the agent contract: its
//! database read whole ([`Form::Database`]) over `parse::devin`.
//!
//! The CLI is closed source. Its data directory is the platform's data
//! directory joined with `devin/cli` (on Linux `XDG_DATA_HOME`, else
//! `~/.local/share`), as the public readers of it find it
//! (junhoyeo/tokscale `sessions/devin.rs` @01a88460, getagentseal/codeburn
//! `docs/providers/devin.md` @5b18a0c3); its database is `sessions.db`
//! there. Only that directory's own files are looked at: beside the
//! database are `transcripts/<id>.json`, copies of a subset of it.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use super::{Env, Form, Source};
use crate::base::sqlite;
use crate::usage::event::FileParse;
use crate::usage::parse::devin as parse;

/// `devin/cli` in the XDG data directory.
fn data_dir(env: &Env) -> PathBuf {
    env.xdg_data_home().join("devin").join("cli")
}

/// Devin for Terminal: `~/.local/share/devin/cli/sessions.db`.
pub(crate) struct Devin;

impl Source for Devin {
    const NAME: &'static str = "devin";
    const TITLE: &'static str = "Devin";
    const CODE: u8 = 12;
    const PARSER_VERSION: u32 = 1;
    const ENV: &'static [&'static str] = &["XDG_DATA_HOME"];
    const POINTED_BY: &'static [&'static str] = &["XDG_DATA_HOME"];
    const ALWAYS_SHOWN: bool = false;
    const WALKED: &'static [&'static str] = &[""];
    const DEPTH: usize = 0;
    #[cfg(test)]
    const EXAMPLE: &'static str = "sessions.db";
    #[cfg(test)]
    const UNCOUNTED: &'static str = "reasoning tokens apart (Devin keeps none; they are in the output), an assistant message without metrics, sessions and messages Devin deleted, the calls of Devin's cloud sessions (`devin --cloud`) that the local database does not hold, and the cost of a call whose session names only a routing mode (`adaptive`) and no model (shown unpriced); Devin is closed source, so its `input_tokens` is taken as the prompt without the cached tokens, as Anthropic counts it";

    fn searched(env: &Env) -> Vec<PathBuf> {
        vec![data_dir(env)]
    }
    fn roots(env: &Env) -> Vec<PathBuf> {
        let dir = data_dir(env);
        if dir.is_dir() { vec![dir] } else { Vec::new() }
    }
    fn wants(name: &OsStr) -> bool {
        name == "sessions.db"
    }
    const FORM: Form = Form::Database;
    fn read_whole(parse: &mut FileParse, path: &Path) -> Result<u64, sqlite::Error> {
        parse::read_db(parse, path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_data_dir_is_xdg_data_home_s_else_local_share_and_only_the_db_is_read() {
        let home = Path::new("/home/u");
        let none = |_: &str| None;
        let env = Env { home, var: &none };
        assert_eq!(
            Devin::searched(&env),
            [PathBuf::from("/home/u/.local/share/devin/cli")]
        );
        let xdg = |k: &str| (k == "XDG_DATA_HOME").then(|| "/d".to_owned());
        let env = Env { home, var: &xdg };
        assert_eq!(Devin::searched(&env), [PathBuf::from("/d/devin/cli")]);
        assert!(Devin::wants(OsStr::new("sessions.db")));
        for n in [
            "sessions.db-wal",
            "sessions.db-shm",
            "zinc-order.json",
            "state.db",
        ] {
            assert!(!Devin::wants(OsStr::new(n)), "{n}");
        }
    }
}
