//! opencode and Kilo's CLI on the agent contract: a database each, read
//! whole ([`Form::Database`]) over `parse::opencode`.
//!
//! opencode's data directory is `Global.Path.data`
//! (`packages/opencode/src/global/index.ts`, anomalyco/opencode): the
//! `xdg-basedir` data directory (`XDG_DATA_HOME`, else `~/.local/share`)
//! joined with `opencode`. Its database is `opencode.db` there, or
//! `opencode-<channel>.db` for a build of another channel than `latest` or
//! `beta` (`Database.Path`, `storage/db.ts`). Kilo's CLI
//! (Kilo-Org/kilocode, `packages/opencode`) names its app `kilo`
//! (`const app = "kilo"`), so its directory is `kilo` in the same place,
//! its database `kilo.db` or `kilo-<channel>.db`, and a channel build falls
//! back to an `opencode-<channel>.db` already there. Only the data
//! directory's own files are looked at: below it are the JSON storage of
//! older versions, logs and snapshots (git repositories).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::{Env, Form, Source};
use crate::base::sqlite;
use crate::usage::event::FileParse;
use crate::usage::parse::opencode as parse;

/// The data directory of the app `app` (`xdg-basedir` in opencode; a
/// relative `XDG_DATA_HOME`, which names no place heeler can know, is
/// ignored).
fn data_dir(env: &Env, app: &str) -> PathBuf {
    env.xdg_data_home().join(app)
}

/// `dir` when it exists.
fn existing(dir: PathBuf) -> Vec<PathBuf> {
    if dir.is_dir() { vec![dir] } else { Vec::new() }
}

/// Whether `name` is `<stem>.db` or `<stem>-<channel>.db`.
fn names_db(name: &[u8], stem: &[u8]) -> bool {
    let Some(rest) = name.strip_prefix(stem) else {
        return false;
    };
    rest == b".db" || (rest.starts_with(b"-") && rest.len() > 4 && rest.ends_with(b".db"))
}

/// opencode: `~/.local/share/opencode/opencode.db`.
pub(crate) struct Opencode;

impl Source for Opencode {
    const NAME: &'static str = "opencode";
    const TITLE: &'static str = "opencode";
    const CODE: u8 = 3;
    const PARSER_VERSION: u32 = 1;
    const ENV: &'static [&'static str] = &["XDG_DATA_HOME"];
    const POINTED_BY: &'static [&'static str] = &["XDG_DATA_HOME"];
    const ALWAYS_SHOWN: bool = false;
    const WALKED: &'static [&'static str] = &[""];
    const DEPTH: usize = 0;
    #[cfg(test)]
    const EXAMPLE: &'static str = "opencode.db";
    #[cfg(test)]
    const UNCOUNTED: &'static str = "the title opencode has a small model write for a session (its usage is not kept), messages and sessions opencode deleted (a revert's undone messages, a deleted session), a database `OPENCODE_DB` puts elsewhere, and sessions of versions before the database (JSON files under `storage/`) that opencode has not yet moved into it";

    fn searched(env: &Env) -> Vec<PathBuf> {
        vec![data_dir(env, "opencode")]
    }
    fn roots(env: &Env) -> Vec<PathBuf> {
        existing(data_dir(env, "opencode"))
    }
    fn wants(name: &OsStr) -> bool {
        names_db(name.as_bytes(), b"opencode")
    }
    const FORM: Form = Form::Database;
    fn read_whole(parse: &mut FileParse, path: &Path) -> Result<u64, sqlite::Error> {
        parse::read_db(parse, path)
    }
}

/// Kilo's CLI: `~/.local/share/kilo/kilo.db`.
pub(crate) struct Kilo;

impl Source for Kilo {
    const NAME: &'static str = "kilo";
    const TITLE: &'static str = "Kilo";
    const CODE: u8 = 10;
    const PARSER_VERSION: u32 = 1;
    const ENV: &'static [&'static str] = &["XDG_DATA_HOME"];
    const POINTED_BY: &'static [&'static str] = &["XDG_DATA_HOME"];
    const ALWAYS_SHOWN: bool = false;
    const WALKED: &'static [&'static str] = &[""];
    const DEPTH: usize = 0;
    #[cfg(test)]
    const EXAMPLE: &'static str = "kilo.db";
    #[cfg(test)]
    const UNCOUNTED: &'static str = "the title Kilo has a small model write for a session (its usage is not kept), messages and sessions Kilo deleted, a database `KILO_DB` puts elsewhere, and sessions of versions before the database that Kilo has not yet moved into it";

    fn searched(env: &Env) -> Vec<PathBuf> {
        vec![data_dir(env, "kilo")]
    }
    fn roots(env: &Env) -> Vec<PathBuf> {
        existing(data_dir(env, "kilo"))
    }
    fn wants(name: &OsStr) -> bool {
        let name = name.as_bytes();
        names_db(name, b"kilo") || (names_db(name, b"opencode") && name != b"opencode.db")
    }
    const FORM: Form = Form::Database;
    fn read_whole(parse: &mut FileParse, path: &Path) -> Result<u64, sqlite::Error> {
        parse::read_db(parse, path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k: &str| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
    }

    #[test]
    fn the_data_dirs_are_xdg_data_home_s_else_local_share() {
        let home = Path::new("/home/u");
        let none = env_of(&[]);
        let env = Env { home, var: &none };
        assert_eq!(
            Opencode::searched(&env),
            [PathBuf::from("/home/u/.local/share/opencode")]
        );
        assert_eq!(
            Kilo::searched(&env),
            [PathBuf::from("/home/u/.local/share/kilo")]
        );
        let xdg = env_of(&[("XDG_DATA_HOME", "/d")]);
        let env = Env { home, var: &xdg };
        assert_eq!(Opencode::searched(&env), [PathBuf::from("/d/opencode")]);
        assert_eq!(Kilo::searched(&env), [PathBuf::from("/d/kilo")]);
    }

    #[test]
    fn each_reads_its_channel_databases_and_not_their_wal_or_other_files() {
        let yes = |f: fn(&OsStr) -> bool, n: &str| f(OsStr::new(n));
        for n in ["opencode.db", "opencode-dev.db", "opencode-local.db"] {
            assert!(yes(Opencode::wants, n), "{n}");
        }
        for n in [
            "opencode.db-wal",
            "opencode.db-shm",
            "opencode-.db",
            "opencode.json",
            "kilo.db",
            "session-export.db",
        ] {
            assert!(!yes(Opencode::wants, n), "{n}");
        }
        // Kilo's channel build falls back to an `opencode-<channel>.db`.
        for n in ["kilo.db", "kilo-dev.db", "opencode-dev.db"] {
            assert!(yes(Kilo::wants, n), "{n}");
        }
        for n in ["opencode.db", "kilo.db-wal", "session-export.db"] {
            assert!(!yes(Kilo::wants, n), "{n}");
        }
    }
}
