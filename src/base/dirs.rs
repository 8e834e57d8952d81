//! Where heeler's files live: the one rule for the home directory, the XDG
//! base directories and the plugin's config and state directories.
//!
//! Every command resolves these here, so that `heeler usage`, `heeler
//! doctor`, `heeler pair` and `heeler accept` agree on one machine.
//!
//! Architecture invariants:
//! - The home is `HOME` when it is set and non-empty, else the passwd home
//!   of the effective uid; never `/` or the current directory by accident.
//!   With neither, resolving it is an error the caller reports.
//! - The plugin dirs are herdr's: `HERDR_PLUGIN_STATE_DIR` /
//!   `HERDR_PLUGIN_CONFIG_DIR` when herdr set them (non-empty), else
//!   `${XDG_STATE_HOME:-~/.local/state}/herdr/plugins/heeler` and
//!   `${XDG_CONFIG_HOME:-~/.config}/herdr/plugins/config/heeler`, as herdr
//!   itself derives them. An empty XDG variable counts as unset.
//! - Resolution is pure over an [`Env`]: tests pass their own variables
//!   and passwd home; [`Env::process`] reads the real ones.
//! - Trust: heeler reads state and config only from a directory another
//!   user cannot write to, because what those files say decides what heeler
//!   runs (a recorded `PATH`) and what it waits for (a pending record). A
//!   directory is trusted when it is owned by the effective uid, others
//!   cannot write to it, and its group can only when that group is the
//!   user's private group (umask 002 with private groups is Debian's and
//!   Ubuntu's default, and herdr creates the plugin dirs with the user's
//!   umask) ([`verdict`], pure); [`trusted`] applies it
//!   to a directory (and [`trusted_tree`] to one and the subdirectories a
//!   caller reads), a missing one being trusted because heeler creates it
//!   itself with mode 0700. Symbolic links are followed: a link's own mode
//!   means nothing, and the directory it resolves to is the one whose
//!   owner and mode decide who can plant files in it. The ancestors are not
//!   checked (a state dir may sit in a sticky `/tmp`), like OpenSSH's
//!   `StrictModes` checks the files it reads rather than every parent.

use std::ffi::OsString;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use crate::base::sys;

/// The plugin id herdr files our config and state under.
pub const PLUGIN_ID: &str = "heeler";

/// Neither `HOME` nor a passwd entry names a home directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoHome;

impl fmt::Display for NoHome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("cannot determine the home directory (HOME is unset and the passwd database has no entry)")
    }
}

impl std::error::Error for NoHome {}

/// What directories are resolved from: environment variables (`None` when
/// unset) and the passwd home of the effective uid.
pub struct Env<'a> {
    pub var: &'a dyn Fn(&str) -> Option<OsString>,
    pub passwd_home: &'a dyn Fn() -> Option<PathBuf>,
}

fn process_var(name: &str) -> Option<OsString> {
    std::env::var_os(name)
}

fn process_passwd_home() -> Option<PathBuf> {
    passwd_home().ok()
}

impl Env<'static> {
    /// This process's environment and passwd entry.
    pub fn process() -> Env<'static> {
        Env {
            var: &process_var,
            passwd_home: &process_passwd_home,
        }
    }
}

impl Env<'_> {
    /// A variable as a path, `None` when unset or empty.
    pub fn path(&self, name: &str) -> Option<PathBuf> {
        (self.var)(name)
            .filter(|value| !value.is_empty())
            .map(PathBuf::from)
    }

    /// `HOME` when set and non-empty, else the passwd home.
    pub fn home(&self) -> Result<PathBuf, NoHome> {
        self.path("HOME")
            .or_else(|| (self.passwd_home)())
            .ok_or(NoHome)
    }

    /// `$XDG_STATE_HOME`, else `~/.local/state`.
    pub fn xdg_state_home(&self) -> Result<PathBuf, NoHome> {
        match self.path("XDG_STATE_HOME") {
            Some(dir) => Ok(dir),
            None => Ok(self.home()?.join(".local/state")),
        }
    }

    /// `$XDG_CONFIG_HOME`, else `~/.config`.
    pub fn xdg_config_home(&self) -> Result<PathBuf, NoHome> {
        match self.path("XDG_CONFIG_HOME") {
            Some(dir) => Ok(dir),
            None => Ok(self.home()?.join(".config")),
        }
    }

    /// The plugin's state dir: `HERDR_PLUGIN_STATE_DIR`, else herdr's
    /// default under the XDG state home.
    pub fn plugin_state_dir(&self) -> Result<PathBuf, NoHome> {
        match self.path("HERDR_PLUGIN_STATE_DIR") {
            Some(dir) => Ok(dir),
            None => Ok(self.xdg_state_home()?.join("herdr/plugins").join(PLUGIN_ID)),
        }
    }

    /// The plugin's config dir: `HERDR_PLUGIN_CONFIG_DIR`, else herdr's
    /// default under the XDG config home.
    pub fn plugin_config_dir(&self) -> Result<PathBuf, NoHome> {
        match self.path("HERDR_PLUGIN_CONFIG_DIR") {
            Some(dir) => Ok(dir),
            None => Ok(self
                .xdg_config_home()?
                .join("herdr/plugins/config")
                .join(PLUGIN_ID)),
        }
    }
}

/// The home directory of the effective uid, from the passwd database.
pub fn passwd_home() -> io::Result<PathBuf> {
    let uid = sys::effective_uid();
    sys::passwd_entry(uid)?.map(|e| e.home).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::NotFound,
            format!("no passwd entry for uid {uid}"),
        )
    })
}

/// Why a directory (or file) is not trusted: see the module doc.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// Owned by another user than the one running heeler.
    Owner { owner: u32, euid: u32 },
    /// Writable by group or others (`mode` holds the permission bits).
    Writable { mode: u32 },
    /// Its metadata could not be read (other than "not found").
    Unreadable(String),
}

/// A directory (or file) heeler refuses to read state or config from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Untrusted {
    pub path: PathBuf,
    pub problem: Problem,
}

impl Untrusted {
    /// What is wrong, naming the path.
    pub fn summary(&self) -> String {
        let path = self.path.display();
        match &self.problem {
            Problem::Owner { owner, euid } => {
                format!("{path} is owned by uid {owner}, not by uid {euid} running heeler")
            }
            Problem::Writable { mode } => {
                format!("{path} is writable by group or others (mode {mode:04o})")
            }
            Problem::Unreadable(error) => format!("{path} cannot be checked: {error}"),
        }
    }

    /// How to fix it.
    pub fn fix(&self) -> String {
        let path = self.path.display();
        match &self.problem {
            Problem::Owner { euid, .. } => {
                format!("use a directory you own (or run `chown {euid} {path}`)")
            }
            Problem::Writable { .. } => format!("run `chmod go-w {path}`"),
            Problem::Unreadable(_) => format!("make {path} a directory you own"),
        }
    }
}

impl fmt::Display for Untrusted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}; {}", self.summary(), self.fix())
    }
}

impl std::error::Error for Untrusted {}

/// The trust decision (pure): a path owned by `owner` with permission bits
/// `mode` is trusted by `euid` when `owner == euid`, others may not write
/// to it, and the group may write only when it is the user's private group
/// (`group_is_private`: the user's primary group with no other member, as
/// Debian's OpenSSH accepts for StrictModes). herdr creates the plugin dirs
/// with the user's umask, and umask 002 with private groups is the default
/// on Debian and Ubuntu, so refusing every group-writable dir would lock
/// those users out of their own state.
pub fn verdict(owner: u32, mode: u32, euid: u32, group_is_private: bool) -> Result<(), Problem> {
    if owner != euid {
        return Err(Problem::Owner { owner, euid });
    }
    if mode & 0o002 != 0 || (mode & 0o020 != 0 && !group_is_private) {
        return Err(Problem::Writable {
            mode: mode & 0o7777,
        });
    }
    Ok(())
}

/// Whether `gid` is the private group of the user running heeler: its
/// primary group, listing no member but that user. Looked up only for a
/// group-writable path, so the common case reads no database.
fn is_my_private_group(gid: u32) -> bool {
    let Ok(Some(me)) = sys::passwd_entry(sys::effective_uid()) else {
        return false;
    };
    if me.gid != gid {
        return false;
    }
    match sys::group_members(gid) {
        Ok(Some(members)) => members.iter().all(|name| name == me.name.as_bytes()),
        _ => false,
    }
}

/// [`verdict`] for this process's effective uid, given a path's owner, group
/// and mode.
pub fn verdict_for_me(owner: u32, gid: u32, mode: u32) -> Result<(), Problem> {
    let group_is_private = mode & 0o020 != 0 && is_my_private_group(gid);
    verdict(owner, mode, sys::effective_uid(), group_is_private)
}

/// Whether heeler may read state or config from the directory `path`
/// (following symbolic links); a missing directory is trusted.
pub fn trusted(path: &Path) -> Result<(), Untrusted> {
    use std::os::unix::fs::MetadataExt;
    let untrusted = |problem| Untrusted {
        path: path.to_path_buf(),
        problem,
    };
    match std::fs::metadata(path) {
        Ok(meta) => verdict_for_me(meta.uid(), meta.gid(), meta.mode()).map_err(untrusted),
        // A path below a file names nothing either.
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
            ) =>
        {
            Ok(())
        }
        Err(e) => Err(untrusted(Problem::Unreadable(e.to_string()))),
    }
}

/// [`trusted`] for `root` and then each of its `subdirs`.
pub fn trusted_tree(root: &Path, subdirs: &[&str]) -> Result<(), Untrusted> {
    trusted(root)?;
    subdirs.iter().try_for_each(|sub| trusted(&root.join(sub)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trust_needs_the_owner_and_no_group_or_other_write() {
        assert_eq!(verdict(1000, 0o40700, 1000, false), Ok(()));
        assert_eq!(verdict(1000, 0o40755, 1000, false), Ok(()));
        assert_eq!(verdict(0, 0o40555, 0, false), Ok(()));
        assert_eq!(
            verdict(1001, 0o40700, 1000, false),
            Err(Problem::Owner {
                owner: 1001,
                euid: 1000
            })
        );
        // Root owning a user's state dir is still another owner.
        assert!(verdict(0, 0o40700, 1000, false).is_err());
        assert_eq!(
            verdict(1000, 0o40775, 1000, false),
            Err(Problem::Writable { mode: 0o775 })
        );
        assert_eq!(
            verdict(1000, 0o41777, 1000, true),
            Err(Problem::Writable { mode: 0o1777 })
        );
        assert_eq!(
            verdict(1000, 0o40702, 1000, true),
            Err(Problem::Writable { mode: 0o702 })
        );
    }

    #[test]
    fn a_private_group_may_write_but_others_never() {
        // umask 002 with a user private group (Debian, Ubuntu): 0775 is fine.
        assert_eq!(verdict(1000, 0o40775, 1000, true), Ok(()));
        assert_eq!(verdict(1000, 0o40770, 1000, true), Ok(()));
        // A shared group, or anyone at all, may not write.
        assert_eq!(
            verdict(1000, 0o40770, 1000, false),
            Err(Problem::Writable { mode: 0o770 })
        );
        assert_eq!(
            verdict(1000, 0o40777, 1000, true),
            Err(Problem::Writable { mode: 0o777 })
        );
        // A private group never makes another owner's dir trusted.
        assert!(verdict(1001, 0o40775, 1000, true).is_err());
    }

    #[test]
    fn the_private_group_rule_reads_the_real_group_database() {
        // Root's primary group (gid 0 here) lists no other member on this
        // machine kind; a gid nobody has is never private.
        let me = sys::passwd_entry(sys::effective_uid()).unwrap().unwrap();
        let members = sys::group_members(me.gid).unwrap().unwrap_or_default();
        let expected = members.iter().all(|name| name == me.name.as_bytes());
        assert_eq!(is_my_private_group(me.gid), expected);
        assert!(!is_my_private_group(me.gid.wrapping_add(54_321)));
    }

    #[test]
    fn an_untrusted_dir_names_itself_and_the_fix() {
        let writable = Untrusted {
            path: "/s".into(),
            problem: Problem::Writable { mode: 0o777 },
        };
        assert_eq!(
            writable.to_string(),
            "/s is writable by group or others (mode 0777); run `chmod go-w /s`"
        );
        let owner = Untrusted {
            path: "/s".into(),
            problem: Problem::Owner { owner: 7, euid: 8 },
        };
        assert_eq!(
            owner.to_string(),
            "/s is owned by uid 7, not by uid 8 running heeler; use a directory you own (or run `chown 8 /s`)"
        );
    }

    #[test]
    fn trusted_checks_the_dir_and_its_subdirs_and_trusts_missing_ones() {
        use std::os::unix::fs::PermissionsExt;
        let scratch = crate::base::scratch::ScratchDir::new("dirs-trust");
        let root = scratch.path().join("state");
        assert_eq!(trusted(&root), Ok(()), "missing");
        std::fs::create_dir_all(root.join("pending")).unwrap();
        let chmod = |path: &Path, mode| {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap()
        };
        chmod(&root, 0o700);
        chmod(&root.join("pending"), 0o755);
        assert_eq!(trusted_tree(&root, &["pending", "enrolled"]), Ok(()));
        chmod(&root.join("pending"), 0o777);
        let err = trusted_tree(&root, &["pending", "enrolled"]).unwrap_err();
        assert_eq!(err.path, root.join("pending"));
        assert_eq!(err.problem, Problem::Writable { mode: 0o777 });
        chmod(&root, 0o1777);
        assert_eq!(trusted(&root).unwrap_err().path, root);
        // A link is judged by the directory it resolves to.
        chmod(&root, 0o700);
        let link = scratch.path().join("link");
        std::os::unix::fs::symlink(&root, &link).unwrap();
        assert_eq!(trusted(&link), Ok(()));
        chmod(&root, 0o777);
        assert!(trusted(&link).is_err());
    }

    fn resolve<T>(vars: &[(&str, &str)], passwd: Option<&str>, pick: impl Fn(&Env) -> T) -> T {
        let var = |name: &str| {
            vars.iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| OsString::from(value))
        };
        let passwd_home = || passwd.map(PathBuf::from);
        pick(&Env {
            var: &var,
            passwd_home: &passwd_home,
        })
    }

    #[test]
    fn home_falls_back_to_passwd_when_unset_or_empty() {
        let home = |vars: &[(&str, &str)]| resolve(vars, Some("/home/pw"), |env| env.home());
        assert_eq!(home(&[("HOME", "/home/env")]), Ok("/home/env".into()));
        assert_eq!(home(&[("HOME", "")]), Ok("/home/pw".into()));
        assert_eq!(home(&[]), Ok("/home/pw".into()));
        assert_eq!(
            resolve(&[("HOME", "")], None, |env| env.home()),
            Err(NoHome)
        );
    }

    #[test]
    fn plugin_dirs_follow_herdr_then_xdg_then_home() {
        let state =
            |vars: &[(&str, &str)]| resolve(vars, Some("/pw"), |env| env.plugin_state_dir());
        let config =
            |vars: &[(&str, &str)]| resolve(vars, Some("/pw"), |env| env.plugin_config_dir());
        assert_eq!(
            state(&[("HERDR_PLUGIN_STATE_DIR", "/s"), ("XDG_STATE_HOME", "/x")]),
            Ok("/s".into())
        );
        assert_eq!(
            state(&[("HERDR_PLUGIN_STATE_DIR", ""), ("XDG_STATE_HOME", "/x")]),
            Ok("/x/herdr/plugins/heeler".into())
        );
        assert_eq!(
            state(&[("XDG_STATE_HOME", ""), ("HOME", "/h")]),
            Ok("/h/.local/state/herdr/plugins/heeler".into())
        );
        assert_eq!(
            state(&[]),
            Ok("/pw/.local/state/herdr/plugins/heeler".into())
        );
        assert_eq!(
            config(&[("XDG_CONFIG_HOME", "/c")]),
            Ok("/c/herdr/plugins/config/heeler".into())
        );
        assert_eq!(
            config(&[("HOME", "/h")]),
            Ok("/h/.config/herdr/plugins/config/heeler".into())
        );
        assert_eq!(
            config(&[("HERDR_PLUGIN_CONFIG_DIR", "/pc")]),
            Ok("/pc".into())
        );
    }

    #[test]
    fn no_home_is_an_error_only_when_a_default_needs_it() {
        let state = resolve(&[("HERDR_PLUGIN_STATE_DIR", "/s")], None, |env| {
            env.plugin_state_dir()
        });
        assert_eq!(state, Ok("/s".into()));
        let state = resolve(&[("XDG_STATE_HOME", "/x")], None, |env| {
            env.plugin_state_dir()
        });
        assert_eq!(state, Ok("/x/herdr/plugins/heeler".into()));
        assert_eq!(
            resolve(&[], None, |env| env.plugin_state_dir()),
            Err(NoHome)
        );
    }

    #[test]
    fn the_process_passwd_home_is_absolute() {
        assert!(
            passwd_home()
                .map(|home| home.is_absolute())
                .unwrap_or(false)
        );
    }
}
