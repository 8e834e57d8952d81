//! Hermes Agent (NousResearch/hermes-agent) on the agent contract: its
//! databases read whole ([`Form::Database`]) over `parse::hermes`.
//!
//! Hermes' home is `HERMES_HOME`, else `~/.hermes` (`get_hermes_home`,
//! `hermes_constants.py`), and its database `state.db` there
//! (`DEFAULT_DB_PATH`, `hermes_state.py` @00025f69). A named profile is a
//! home of its own below it, `profiles/<name>`, with its own `state.db`.
//! Only those directories' own files are looked at: the rest of the home
//! is skills, logs, caches and other programs' state.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use super::{Env, Form, Source};
use crate::base::sqlite;
use crate::usage::event::FileParse;
use crate::usage::parse::hermes as parse;

/// Profiles looked at below a home, at most.
const MAX_PROFILES: usize = 256;

/// Hermes' home.
fn home_dir(env: &Env) -> PathBuf {
    match env.var("HERMES_HOME") {
        Some(dir) => PathBuf::from(dir),
        None => env.home.join(".hermes"),
    }
}

/// Hermes Agent: `~/.hermes/state.db` and `~/.hermes/profiles/*/state.db`.
pub(crate) struct Hermes;

impl Source for Hermes {
    const NAME: &'static str = "hermes";
    const TITLE: &'static str = "Hermes Agent";
    const CODE: u8 = 13;
    const PARSER_VERSION: u32 = 1;
    const ENV: &'static [&'static str] = &["HERMES_HOME"];
    const POINTED_BY: &'static [&'static str] = &["HERMES_HOME"];
    const ALWAYS_SHOWN: bool = false;
    const WALKED: &'static [&'static str] = &[""];
    const DEPTH: usize = 0;
    #[cfg(test)]
    const EXAMPLE: &'static str = "state.db";
    #[cfg(test)]
    const UNCOUNTED: &'static str = "single model calls and their times: Hermes keeps totals, so a request here is one session's use of one model (per provider and task), counted at the session's start, and a session's model calls Hermes adds later move its total, not its time; sessions Hermes deleted; and the state of a Hermes home other than `HERMES_HOME`'s (else `~/.hermes`) and its profiles";

    fn searched(env: &Env) -> Vec<PathBuf> {
        vec![home_dir(env)]
    }
    fn roots(env: &Env) -> Vec<PathBuf> {
        let home = home_dir(env);
        if !home.is_dir() {
            return Vec::new();
        }
        let mut profiles: Vec<PathBuf> = std::fs::read_dir(home.join("profiles"))
            .into_iter()
            .flatten()
            .flatten()
            .take(MAX_PROFILES)
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        profiles.sort();
        let mut roots = vec![home];
        roots.append(&mut profiles);
        roots
    }
    fn wants(name: &OsStr) -> bool {
        name == "state.db"
    }
    const FORM: Form = Form::Database;
    fn read_whole(parse: &mut FileParse, path: &Path) -> Result<u64, sqlite::Error> {
        parse::read_db(parse, path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::scratch::ScratchDir;

    #[test]
    fn the_home_is_hermes_home_else_dot_hermes_and_each_profile_is_a_root() {
        let scratch = ScratchDir::new("hermes-roots");
        let home = scratch.path();
        let none = |_: &str| None;
        let env = Env { home, var: &none };
        assert_eq!(Hermes::searched(&env), [home.join(".hermes")]);
        assert!(Hermes::roots(&env).is_empty());
        for p in ["profiles/coder", "profiles/analytics"] {
            std::fs::create_dir_all(home.join(".hermes").join(p)).unwrap();
        }
        std::fs::write(home.join(".hermes/profiles/notes.txt"), "x").unwrap();
        assert_eq!(
            Hermes::roots(&env),
            [
                home.join(".hermes"),
                home.join(".hermes/profiles/analytics"),
                home.join(".hermes/profiles/coder"),
            ]
        );
        let set = |k: &str| (k == "HERMES_HOME").then(|| "/srv/h".to_owned());
        let env = Env { home, var: &set };
        assert_eq!(Hermes::searched(&env), [PathBuf::from("/srv/h")]);
        assert!(Hermes::wants(OsStr::new("state.db")));
        for n in [
            "state.db-wal",
            "state.db-shm",
            "sessions.db",
            "response_store.db",
        ] {
            assert!(!Hermes::wants(OsStr::new(n)), "{n}");
        }
    }
}
