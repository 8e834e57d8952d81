//! What `heeler doctor` looks at, as plain values: the facts `probe.rs`
//! gathers and every check reads.
//!
//! This file holds types only, so that the check files and the probe can
//! both depend on it without depending on each other. Invariants: a path
//! here is never relative by accident; when the home directory (or the
//! config directory derived from it) cannot be determined, the facts that
//! live under it are absent (`Err(NoHome)`) instead of probed somewhere
//! else.

use std::path::PathBuf;

use crate::base::dirs::{NoHome, Untrusted};
use crate::pair::config::PairConfig;

/// A file as read: absent, unreadable (with the reason), or its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileRead {
    Missing,
    Unreadable(String),
    Text(String),
}

/// What sshd's StrictModes looks at for one path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathFacts {
    pub path: PathBuf,
    /// None when the path does not exist.
    pub kind: Option<PathKind>,
    pub uid: u32,
    pub mode: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathKind {
    File,
    Directory,
    Other,
}

/// pair.json as the pairing popup reads it: absent, unreadable (with the
/// reason), or what `pair::config` made of its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PairJson {
    Missing,
    Unreadable(String),
    Read(PairConfig),
}

/// The facts under the home directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HomeFacts {
    pub home: PathFacts,
    pub ssh_dir: PathFacts,
    pub(crate) authorized_keys_facts: PathFacts,
    pub authorized_keys: FileRead,
}

/// The plugin config directory and the files in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigFacts {
    pub dir: PathBuf,
    pub pair_json: PairJson,
    pub notify_json: FileRead,
    pub notifications_json: FileRead,
}

/// Everything the checks look at, gathered once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Facts {
    pub(crate) exe: PathBuf,
    pub(crate) exe_has_interpreter: Result<bool, String>,
    /// Whether a forced command may name `exe`
    /// (`base::dirs::trusted_binary`, as `heeler pair` asks it).
    pub(crate) exe_trust: Result<(), crate::base::dirs::UntrustedBinary>,
    pub ssh_port: u16,
    pub(crate) ssh_banner: Result<String, String>,
    /// How this Host starts OpenSSH, for the fix when none answers.
    pub(crate) ssh_service: SshService,
    pub host_keys: Vec<(PathBuf, FileRead)>,
    pub uid: u32,
    pub home: Result<HomeFacts, NoHome>,
    pub(crate) now_unix: u64,
    pub herdr: Option<PathBuf>,
    pub(crate) herdr_version: Result<String, String>,
    /// Every config or state directory the commands would refuse
    /// (`base::dirs::trusted`, as each owner applies it); empty when all
    /// are trusted.
    pub(crate) untrusted_dirs: Vec<Untrusted>,
    /// `plugin list --json` of each running session (or of the current one
    /// when none runs), by session name.
    pub(crate) plugin_lists: Vec<(String, Result<String, String>)>,
    pub config: Result<ConfigFacts, NoHome>,
    /// `GET <relay>/push`'s HTTP status, only with `--network`.
    pub relay: Option<Result<u16, String>>,
    /// The hook failure log and its last lines (oldest first); `None` when
    /// the plugin state dir is unknown.
    pub hook_failures: Option<(PathBuf, Vec<crate::hooks::failure_log::Logged>)>,
    /// The plugin state dir and the pairing ids with a pending record
    /// there, to tell a live Bootstrap Key line from one whose ceremony is
    /// gone; `None` when the state dir is unknown.
    pub(crate) pairings: Option<PairingFacts>,
}

/// The open ceremonies of the plugin state dir.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PairingFacts {
    pub state_dir: PathBuf,
    pub pending: Vec<String>,
}

/// How this Host installs and starts OpenSSH: its init system, and the
/// distribution family's package and service names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SshService {
    /// macOS: Remote Login, in System Settings.
    MacRemoteLogin,
    /// systemd: the install command (when the family is known) and the
    /// unit (`ssh` on Debian and Ubuntu, `sshd` on Fedora, RHEL, Arch,
    /// openSUSE and the rest).
    Systemd {
        install: Option<&'static str>,
        unit: &'static str,
    },
    /// OpenRC (Alpine, Gentoo): the install command, when known.
    OpenRc { install: Option<&'static str> },
    /// Neither recognised: the fix names every family's command.
    Unknown,
}
