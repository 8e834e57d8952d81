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

use std::ffi::OsString;
use std::fmt;
use std::io;
use std::path::PathBuf;

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

#[cfg(test)]
mod tests {
    use super::*;

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
