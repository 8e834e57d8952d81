//! The agents whose usage heeler reads, and the one contract each meets.
//!
//! An agent is a module implementing [`Source`]: where its files are (its
//! roots, with the environment variables that move them, and the
//! directories walked below each), which file names are its transcripts,
//! how it writes them ([`Form`]: append-only lines, or documents rewritten
//! whole), how one complete line or one whole document becomes the shared
//! usage [`Event`](crate::usage::event::Event)s (an agent after pi hands
//! each model call to `FileParse::push_message`, counted by one rule in
//! `aggregate::message_count`), and what it cannot count. The
//! registry below ([`ALL`] and `with_source!`) is the one place that
//! lists them: discovery, the cache's parser choice, the store's source
//! kind and parser versions, the aggregate's per-agent sums, the views'
//! `--agent` and coverage all go through it, so adding an agent is one
//! module, one [`Agent`] variant and one registry line, plus its tests.
//!
//! - `claude.rs`: Claude Code, a thin adapter over `parse::claude`.
//! - `codex.rs`: Codex, a thin adapter over `parse::codex`.
//! - `pi.rs`: pi and Oh My Pi, over `parse::pi`.
//! - `gemini.rs`: Gemini CLI, over `parse::gemini` (documents).
//! - `qwen.rs`: Qwen Code, over `parse::qwen`.
//! - `amp.rs`: Amp's thread documents, over `parse::amp`.
//! - `droid.rs`: Droid's session settings documents, over `parse::droid`.
//! - `cline.rs`: Cline (its SDK's session documents), over `parse::cline`.
//! - `kimi.rs`: Kimi CLI's session wire files, over `parse::kimi`.
//! - `copilot.rs`: GitHub Copilot CLI's OpenTelemetry file export, over
//!   `parse::copilot`.
//! - `opencode.rs`: opencode and Kilo's CLI, their SQLite databases read
//!   whole over `parse::opencode`.
//! - `devin.rs`: Devin for Terminal, its SQLite database over
//!   `parse::devin`.
//! - `hermes.rs`: Hermes Agent, its SQLite databases (one per profile)
//!   over `parse::hermes`.
//!
//! Architecture invariants: the dispatch is static (a `match` on the agent,
//! the same branch on every line of a file, never a virtual call); an agent's code in the store ([`Source::CODE`]) never changes
//! once released, and the order of [`ALL`] is the order of the index
//! header's parser versions.

mod amp;
mod claude;
mod cline;
mod codex;
mod copilot;
mod devin;
mod droid;
mod gemini;
mod hermes;
mod kimi;
mod opencode;
mod pi;
mod qwen;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use crate::base::sqlite;
use crate::usage::event::{Agent, FileParse};

/// What the registry needs to know of one agent. Every item is an
/// associated constant or function, so a caller picks the agent's
/// implementation with `with_source!` and the compiler sees one type.
pub(crate) trait Source {
    /// The agent's name in `--agent`, the JSON views and the statusline.
    const NAME: &'static str;
    /// The product's name, as the views for people write it.
    const TITLE: &'static str;
    /// The agent's code in the store (an index entry's source kind, a
    /// slot's agent): fixed once released.
    const CODE: u8;
    /// The version of its parser: entries parsed by another version are
    /// parsed anew.
    const PARSER_VERSION: u32;
    /// The environment variables [`Source::roots`] reads (besides `HOME`);
    /// the runtime record the hooks write carries each
    /// (`runtime::RECORDED_VARS`).
    const ENV: &'static [&'static str];
    /// The variables a person sets to point at other roots (named when no
    /// transcript was found).
    const POINTED_BY: &'static [&'static str];
    /// Whether the views show the agent's row when it has no usage (the
    /// agents the app's document has always named); another agent shows
    /// when it has some.
    const ALWAYS_SHOWN: bool;
    /// The directories below a root that the walk starts from (`""`: the
    /// root itself).
    const WALKED: &'static [&'static str];
    /// How many directories below a walked one the walk descends (0: the
    /// walked directory's own files only).
    const DEPTH: usize = 12;
    /// A transcript's path below a walked directory, as the agent names
    /// one (the registry's tests find one of each agent's).
    #[cfg(test)]
    const EXAMPLE: &'static str;
    /// What the agent's files cannot tell, as docs/usage.md states it (a
    /// unit test holds the two together).
    #[cfg(test)]
    const UNCOUNTED: &'static str;

    /// Every root the agent would use, in its order, whether it exists or
    /// not (what a person is told was searched).
    fn searched(env: &Env) -> Vec<PathBuf>;
    /// The roots that exist, duplicates removed.
    fn roots(env: &Env) -> Vec<PathBuf>;
    /// Whether a file name below a walked directory is a transcript.
    fn wants(name: &OsStr) -> bool;
    /// Whether a transcript's path names a zstd-compressed file.
    fn compressed(path: &Path) -> bool {
        let _ = path;
        false
    }
    /// How the agent's files are read.
    const FORM: Form = Form::Lines;
    /// Starts a fresh parse of the file at `path`, last modified at
    /// `mtime_ns` (Unix nanoseconds), before its first line or its
    /// document: for an agent whose file's name or place tells what its
    /// contents do not (a session id, a time). Nothing by default.
    fn begin(parse: &mut FileParse, path: &Path, mtime_ns: i64) {
        let _ = (parse, path, mtime_ns);
    }
    /// Whether the agent has a [`Source::begin`] (the cache stats the
    /// file it opened for it only then).
    const BEGINS: bool = false;
    /// Parses one complete line into `parse` ([`Form::Lines`]).
    fn parse_line(parse: &mut FileParse, line: &[u8]) {
        let _ = (parse, line);
    }
    /// Parses a whole file into a fresh `parse` ([`Form::Document`]).
    fn parse_document(parse: &mut FileParse, bytes: &[u8]) {
        let _ = (parse, bytes);
    }
    /// Reads the database at `path` into a fresh `parse`
    /// ([`Form::Database`]); returns the bytes of records read.
    fn read_whole(parse: &mut FileParse, path: &Path) -> Result<u64, sqlite::Error> {
        let _ = (parse, path);
        Ok(0)
    }
}

/// How an agent writes its files, which decides how the cache reads them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Form {
    /// Append-only lines: a grown file is read from where the last read
    /// stopped, one complete line at a time ([`Source::parse_line`]).
    Lines,
    /// A document the agent rewrites whole (a JSON file): read whole, at
    /// most `scan::MAX_DOCUMENT` bytes, and parsed anew whenever it changes
    /// ([`Source::parse_document`]).
    Document,
    /// A database others write while heeler reads it (SQLite in WAL
    /// mode): read whole through `base::sqlite` ([`Source::read_whole`])
    /// whenever it or its `-wal` file changes; a read its writer holds up
    /// is tried again on the next refresh.
    Database,
}

/// The values roots are resolved from: the home, and the environment
/// variables (the runtime record's, else this process's).
pub(crate) struct Env<'a> {
    pub home: &'a Path,
    pub var: &'a dyn Fn(&str) -> Option<String>,
}

impl Env<'_> {
    /// The variable `key`, when set and not empty.
    pub(crate) fn var(&self, key: &str) -> Option<String> {
        (self.var)(key).filter(|v| !v.is_empty())
    }
    /// The XDG data directory: an absolute `XDG_DATA_HOME` (the XDG rule
    /// ignores a relative one), else `~/.local/share`; where Amp, opencode,
    /// Kilo and Devin keep their data.
    pub(crate) fn xdg_data_home(&self) -> PathBuf {
        self.var("XDG_DATA_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .unwrap_or_else(|| self.home.join(".local").join("share"))
    }
}

/// Every agent, in the store's order (see the module's invariants).
pub const ALL: [Agent; 14] = [
    Agent::Claude,
    Agent::Codex,
    Agent::Pi,
    Agent::Opencode,
    Agent::Gemini,
    Agent::Qwen,
    Agent::Amp,
    Agent::Droid,
    Agent::Kimi,
    Agent::Copilot,
    Agent::Kilo,
    Agent::Cline,
    Agent::Devin,
    Agent::Hermes,
];

/// Runs `$body` with `$S` the [`Source`] of `$agent`: the registry's one
/// `match`.
macro_rules! with_source {
    ($agent:expr, $S:ident => $body:expr) => {
        match $agent {
            Agent::Claude => {
                type $S = claude::Claude;
                $body
            }
            Agent::Codex => {
                type $S = codex::Codex;
                $body
            }
            Agent::Pi => {
                type $S = pi::Pi;
                $body
            }
            Agent::Opencode => {
                type $S = opencode::Opencode;
                $body
            }
            Agent::Gemini => {
                type $S = gemini::Gemini;
                $body
            }
            Agent::Qwen => {
                type $S = qwen::Qwen;
                $body
            }
            Agent::Amp => {
                type $S = amp::Amp;
                $body
            }
            Agent::Droid => {
                type $S = droid::Droid;
                $body
            }
            Agent::Kimi => {
                type $S = kimi::Kimi;
                $body
            }
            Agent::Copilot => {
                type $S = copilot::Copilot;
                $body
            }
            Agent::Kilo => {
                type $S = opencode::Kilo;
                $body
            }
            Agent::Cline => {
                type $S = cline::Cline;
                $body
            }
            Agent::Devin => {
                type $S = devin::Devin;
                $body
            }
            Agent::Hermes => {
                type $S = hermes::Hermes;
                $body
            }
        }
    };
}

impl Agent {
    /// The agent's place in [`ALL`] (and in per-agent arrays).
    pub(crate) fn index(self) -> usize {
        self as usize
    }
    pub fn name(self) -> &'static str {
        with_source!(self, S => S::NAME)
    }
    /// The product's name, as the views for people write it.
    pub(crate) fn title(self) -> &'static str {
        with_source!(self, S => S::TITLE)
    }
    /// The agent [`Agent::name`] names.
    pub(crate) fn from_name(name: &str) -> Option<Agent> {
        ALL.into_iter().find(|a| a.name() == name)
    }
    /// The agent's code in the store.
    pub(crate) fn code(self) -> u8 {
        with_source!(self, S => S::CODE)
    }
    /// The agent whose code in the store is `code`.
    pub(crate) fn from_code(code: u64) -> Option<Agent> {
        ALL.into_iter().find(|a| u64::from(a.code()) == code)
    }
    /// The version of the agent's parser.
    pub(crate) fn parser_version(self) -> u32 {
        with_source!(self, S => S::PARSER_VERSION)
    }
    /// The variables that move the agent's roots.
    pub(crate) fn env_vars(self) -> &'static [&'static str] {
        with_source!(self, S => S::ENV)
    }
    /// Whether the views show the agent when it has no usage.
    pub(crate) fn always_shown(self) -> bool {
        with_source!(self, S => S::ALWAYS_SHOWN)
    }
    /// The variables a person sets to point at other roots.
    pub(crate) fn pointed_by(self) -> &'static [&'static str] {
        with_source!(self, S => S::POINTED_BY)
    }
    /// A transcript's path below a walked directory ([`Source::EXAMPLE`]).
    #[cfg(test)]
    pub(crate) fn example(self) -> &'static str {
        with_source!(self, S => S::EXAMPLE)
    }
    /// What the agent's files cannot tell.
    #[cfg(test)]
    pub(crate) fn uncounted(self) -> &'static str {
        with_source!(self, S => S::UNCOUNTED)
    }
    /// Every root the agent would use ([`Source::searched`]).
    pub(crate) fn searched(self, env: &Env) -> Vec<PathBuf> {
        with_source!(self, S => S::searched(env))
    }
    /// The agent's roots that exist ([`Source::roots`]).
    pub(crate) fn roots(self, env: &Env) -> Vec<PathBuf> {
        with_source!(self, S => S::roots(env))
    }
    /// The directories below a root the walk starts from.
    pub(crate) fn walked(self) -> &'static [&'static str] {
        with_source!(self, S => S::WALKED)
    }
    /// How deep below a walked directory the walk descends.
    pub(crate) fn depth(self) -> usize {
        with_source!(self, S => S::DEPTH)
    }
    /// Whether a file name is one of the agent's transcripts.
    pub(crate) fn wants(self, name: &OsStr) -> bool {
        with_source!(self, S => S::wants(name))
    }
    /// Whether a transcript's path names a zstd-compressed file.
    pub(crate) fn compressed(self, path: &Path) -> bool {
        with_source!(self, S => S::compressed(path))
    }
    /// How the agent's files are read.
    pub(crate) fn form(self) -> Form {
        with_source!(self, S => S::FORM)
    }
    /// Starts a fresh parse of one of the agent's files ([`Source::begin`]).
    pub(crate) fn begin(self, parse: &mut FileParse, path: &Path, mtime_ns: i64) {
        with_source!(self, S => S::begin(parse, path, mtime_ns))
    }
    /// Whether the agent has a [`Source::begin`].
    pub(crate) fn begins(self) -> bool {
        with_source!(self, S => S::BEGINS)
    }
    /// Parses a whole document of the agent's into a fresh `parse`.
    pub(crate) fn parse_document(self, parse: &mut FileParse, bytes: &[u8]) {
        with_source!(self, S => S::parse_document(parse, bytes))
    }
    /// Reads a database of the agent's into a fresh `parse`.
    pub(crate) fn read_whole(
        self,
        parse: &mut FileParse,
        path: &Path,
    ) -> Result<u64, sqlite::Error> {
        with_source!(self, S => S::read_whole(parse, path))
    }
    /// Parses one complete line of the agent's into `parse`: a `match`
    /// the line loop inlines, the same branch on every line of a file.
    #[inline]
    pub(crate) fn parse_line(self, parse: &mut FileParse, line: &[u8]) {
        with_source!(self, S => S::parse_line(parse, line))
    }
}

/// The roots agent `S` searches with the home `/home/u` and only the
/// variables `vars` set: the agents' root tests.
#[cfg(test)]
pub(crate) fn searched_with<S: Source>(vars: &[(&str, &str)]) -> Vec<PathBuf> {
    let var = |k: &str| {
        vars.iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| v.to_string())
    };
    S::searched(&Env {
        home: Path::new("/home/u"),
        var: &var,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_lists_every_agent_once_in_index_order() {
        for (i, a) in ALL.into_iter().enumerate() {
            assert_eq!(a.index(), i);
            assert_eq!(Agent::from_name(a.name()), Some(a));
            assert_eq!(Agent::from_code(u64::from(a.code())), Some(a));
        }
        assert_eq!(Agent::from_name("gemini-cli"), None);
        assert_eq!(Agent::from_code(u64::from(u8::MAX)), None);
    }

    #[test]
    fn the_store_codes_of_released_agents_stay() {
        // Index entries and aggregate slots written by released versions
        // name their agent by these codes.
        assert_eq!(Agent::Claude.code(), 0);
        assert_eq!(Agent::Codex.code(), 1);
        assert_eq!(Agent::Pi.code(), 2);
        assert_eq!(Agent::Gemini.code(), 4);
        assert_eq!(Agent::Qwen.code(), 5);
        assert_eq!(Agent::Amp.code(), 6);
        assert_eq!(Agent::Droid.code(), 7);
        assert_eq!(Agent::Cline.code(), 11);
        assert_eq!(Agent::Kimi.code(), 8);
        assert_eq!(Agent::Copilot.code(), 9);
        assert_eq!(Agent::Opencode.code(), 3);
        assert_eq!(Agent::Kilo.code(), 10);
        assert_eq!(Agent::Devin.code(), 12);
        assert_eq!(Agent::Hermes.code(), 13);
    }

    #[test]
    fn docs_state_what_each_agent_cannot_count() {
        let docs = include_str!("../../../docs/usage.md");
        for a in ALL {
            assert!(
                docs.contains(a.uncounted()),
                "docs/usage.md does not state what {} cannot count: {}",
                a.name(),
                a.uncounted()
            );
        }
    }
}
