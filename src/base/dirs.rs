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
//! - The binary a forced command names is held to `StrictModes`' rule for
//!   `authorized_keys` ([`binary_verdict`], pure; [`trusted_binary`]): the
//!   file and every directory above it up to `/` owned by root or the user,
//!   none writable by others, nor by a group unless it is the user's
//!   private group (the rule above). Another user able to replace any of
//!   them would have the phone's SSH connection run their program as the
//!   pairing user. One exception to `StrictModes`: a sticky directory
//!   such as `/tmp` may be writable by others, because the sticky bit
//!   stops them from renaming or removing an entry they do not own, and
//!   the entry below it is itself held to the rule (owned by root or the
//!   user). sshd refuses such paths for `authorized_keys` without
//!   distinguishing; for the binary the distinction is exact, and a
//!   checkout or build under `/tmp` (as CI's may be) stays usable.
//! - Both rules also read the extended ACL of each path they judge
//!   ([`acl_verdict`], pure; the mode bits alone do not show it): an ACL
//!   entry that lets anyone but the user (or root) write is refused like a
//!   mode that does, with `setfacl -b` (Linux) or `chmod -N` / `chmod -a`
//!   (macOS) as the fix. On Linux the `system.posix_acl_access` attribute
//!   is parsed ([`parse_posix_acl`]); a named user entry grants write
//!   unless it names the user or root, a named group entry (and the owning
//!   group's entry) unless it names the user's private group. The ACL's
//!   mask is deliberately ignored: it is the mode's group bits, so one
//!   `chmod g+w` (or umask 002's 0775) by the owner revives every entry it
//!   masked, and a grant one chmod away from working is refused now.
//!   Default ACLs (what new files inherit) are not read: heeler gives every
//!   file it creates an explicit mode, and judges what exists. On macOS the
//!   ACL API is asked whether any entry *allows* a write permission, to
//!   anyone (conservative: the grantee is not resolved), so deny entries
//!   such as Finder's `everyone deny delete` stay fine.

use std::ffi::OsString;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use crate::base::sys;

/// The plugin id herdr files our config and state under.
pub(crate) const PLUGIN_ID: &str = "heeler";

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
    pub(crate) passwd_home: &'a dyn Fn() -> Option<PathBuf>,
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
    pub(crate) fn xdg_state_home(&self) -> Result<PathBuf, NoHome> {
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
    pub(crate) fn plugin_config_dir(&self) -> Result<PathBuf, NoHome> {
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
pub(crate) fn passwd_home() -> io::Result<PathBuf> {
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
    /// Owned by neither root nor the user running heeler (a path where
    /// root's ownership is as good as the user's: the binary's).
    NeitherRootNorOwner { owner: u32, euid: u32 },
    /// Its extended ACL lets `grantee` write to it.
    Acl { grantee: Grantee },
}

/// Whom an extended ACL entry lets write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grantee {
    User(u32),
    Group(u32),
    /// An entry whose grantee is not resolved (macOS: any allow entry).
    Anyone,
}

impl fmt::Display for Grantee {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Grantee::User(uid) => write!(f, "uid {uid}"),
            Grantee::Group(gid) => write!(f, "gid {gid}"),
            Grantee::Anyone => f.write_str("whoever its entries name"),
        }
    }
}

/// The Linux `system.posix_acl_access` format and whom it lets write:
/// pure, unit-tested on every platform, read by the trust rule on Linux
/// only (so elsewhere it is dead code, allowed here).
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
mod posix_acl {
    use super::Grantee;

    /// One entry of a Linux POSIX ACL as the kernel stores it in the
    /// `system.posix_acl_access` attribute.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub(crate) struct AclEntry {
        pub tag: u16,
        pub perm: u16,
        pub id: u32,
    }

    /// `ACL_USER_OBJ`, `ACL_USER`, `ACL_GROUP_OBJ`, `ACL_GROUP`, `ACL_MASK`,
    /// `ACL_OTHER` (`<linux/posix_acl.h>`), and the write permission bit.
    const ACL_USER_OBJ: u16 = 0x01;
    const ACL_USER: u16 = 0x02;
    const ACL_GROUP_OBJ: u16 = 0x04;
    const ACL_GROUP: u16 = 0x08;
    const ACL_MASK: u16 = 0x10;
    const ACL_OTHER: u16 = 0x20;
    const ACL_WRITE: u16 = 0x02;
    /// The format version the attribute's 4-byte header holds.
    const POSIX_ACL_XATTR_VERSION: u32 = 2;

    /// Parses a `system.posix_acl_access` value (pure): a little-endian u32
    /// version 2, then entries of tag u16, perm u16, id u32, little-endian.
    /// `None` for another version, a length that is not the header plus whole
    /// entries, or a tag the format does not define.
    pub(crate) fn parse_posix_acl(bytes: &[u8]) -> Option<Vec<AclEntry>> {
        let (header, body) = bytes.split_first_chunk::<4>()?;
        if u32::from_le_bytes(*header) != POSIX_ACL_XATTR_VERSION || body.len() % 8 != 0 {
            return None;
        }
        body.chunks_exact(8)
            .map(|entry| {
                let tag = u16::from_le_bytes([entry[0], entry[1]]);
                let known = [
                    ACL_USER_OBJ,
                    ACL_USER,
                    ACL_GROUP_OBJ,
                    ACL_GROUP,
                    ACL_MASK,
                    ACL_OTHER,
                ];
                known.contains(&tag).then(|| AclEntry {
                    tag,
                    perm: u16::from_le_bytes([entry[2], entry[3]]),
                    id: u32::from_le_bytes([entry[4], entry[5], entry[6], entry[7]]),
                })
            })
            .collect()
    }

    /// Whom the entries of an ACL on a file of group `gid` let write beside
    /// its owner and others (pure; see the module doc): named users, named
    /// groups and, when the ACL has a mask (then the mode's group bits show the
    /// mask, not the owning group), the owning group; the mask is ignored.
    pub(crate) fn acl_writers(entries: &[AclEntry], gid: u32) -> Vec<Grantee> {
        let masked = entries.iter().any(|e| e.tag == ACL_MASK);
        entries
            .iter()
            .filter(|e| e.perm & ACL_WRITE != 0)
            .filter_map(|e| match e.tag {
                ACL_USER => Some(Grantee::User(e.id)),
                ACL_GROUP => Some(Grantee::Group(e.id)),
                ACL_GROUP_OBJ if masked => Some(Grantee::Group(gid)),
                _ => None,
            })
            .collect()
    }
}
#[cfg(test)]
use posix_acl::AclEntry;
#[cfg_attr(not(target_os = "linux"), allow(unused_imports))]
use posix_acl::{acl_writers, parse_posix_acl};

/// The trust decision on an ACL's writers (pure): the user running heeler
/// and root may write, the user's private group may, nobody else.
pub fn acl_verdict(
    writers: &[Grantee],
    euid: u32,
    private_group: Option<u32>,
) -> Result<(), Problem> {
    match writers.iter().find(|grantee| match grantee {
        Grantee::User(uid) => *uid != euid && *uid != 0,
        Grantee::Group(gid) => private_group != Some(*gid),
        Grantee::Anyone => true,
    }) {
        Some(grantee) => Err(Problem::Acl { grantee: *grantee }),
        None => Ok(()),
    }
}

/// Whom the extended ACL of `path` (following links) lets write; empty
/// when it has none, or on a system whose ACLs heeler does not read.
fn acl_writers_of(path: &Path, gid: u32) -> Result<Vec<Grantee>, Problem> {
    #[cfg(target_os = "linux")]
    {
        match sys::posix_acl_access(path) {
            Ok(None) => Ok(Vec::new()),
            Ok(Some(bytes)) => parse_posix_acl(&bytes)
                .map(|entries| acl_writers(&entries, gid))
                .ok_or_else(|| Problem::Unreadable("its ACL is in an unknown format".into())),
            Err(e) => Err(Problem::Unreadable(format!("its ACL cannot be read: {e}"))),
        }
    }
    #[cfg(target_os = "macos")]
    {
        let _ = gid;
        match sys::extended_acl_allows_write(path) {
            Ok(false) => Ok(Vec::new()),
            Ok(true) => Ok(vec![Grantee::Anyone]),
            Err(e) => Err(Problem::Unreadable(format!("its ACL cannot be read: {e}"))),
        }
    }
    #[cfg(not(any(target_os = "linux", target_os = "macos")))]
    {
        let _ = (path, gid);
        Ok(Vec::new())
    }
}

/// [`acl_verdict`] on the ACL of `path`, for this process's effective uid.
fn acl_trusted(path: &Path, gid: u32) -> Result<(), Problem> {
    let writers = acl_writers_of(path, gid)?;
    if writers.is_empty() {
        return Ok(());
    }
    // The group database is read only when an ACL grants a group.
    let private_group = if writers.iter().any(|w| matches!(w, Grantee::Group(_))) {
        my_private_group()
    } else {
        None
    };
    acl_verdict(&writers, sys::effective_uid(), private_group)
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
            Problem::NeitherRootNorOwner { owner, euid } => {
                format!(
                    "{path} is owned by uid {owner}, neither root nor uid {euid} running heeler"
                )
            }
            Problem::Acl { grantee } => {
                format!("{path} has an extended ACL that lets {grantee} write to it")
            }
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
            Problem::NeitherRootNorOwner { euid, .. } => {
                format!(
                    "install heeler where only you or root can write (or run `chown {euid} {path}`)"
                )
            }
            Problem::Acl { .. } if cfg!(target_os = "macos") => format!(
                "run `chmod -N {path}` (or remove the entry with `chmod -a`; `ls -le` lists them)"
            ),
            Problem::Acl { .. } => format!("run `setfacl -b {path}`"),
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
    my_private_group() == Some(gid)
}

/// The private group of the user running heeler (see
/// [`is_my_private_group`]), `None` when it has none.
fn my_private_group() -> Option<u32> {
    let me = sys::passwd_entry(sys::effective_uid()).ok()??;
    match sys::group_members(me.gid) {
        Ok(Some(members)) if members.iter().all(|name| name == me.name.as_bytes()) => Some(me.gid),
        _ => None,
    }
}

/// What `stat` says of one component of a path, for [`binary_verdict`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PathStat {
    pub path: PathBuf,
    pub uid: u32,
    pub gid: u32,
    /// The permission bits (the file type bits are ignored).
    pub mode: u32,
    /// Whom its extended ACL lets write ([`acl_writers`]).
    pub acl_writers: Vec<Grantee>,
}

/// The binary a forced command names cannot be trusted: another user could
/// replace it or a directory above it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UntrustedBinary {
    pub binary: PathBuf,
    pub untrusted: Untrusted,
}

impl UntrustedBinary {
    /// What is wrong, naming the binary and the path at fault.
    pub fn summary(&self) -> String {
        format!(
            "another user could replace {}, which the phone's SSH login runs: {}",
            self.binary.display(),
            self.untrusted.summary()
        )
    }
}

impl fmt::Display for UntrustedBinary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}; {}", self.summary(), self.untrusted.fix())
    }
}

impl std::error::Error for UntrustedBinary {}

/// The trust decision for a binary (pure): `components` are the binary
/// and then every directory above it up to `/`, as `stat` sees them. Each
/// must be owned by root or `euid`, not writable by others, and writable
/// by its group only when that group is `private_group` (the user's
/// private group, if any): OpenSSH's `StrictModes` rule for
/// `authorized_keys` and the directories above it, except that a sticky
/// directory may be writable (others cannot rename or remove the entry
/// below it, which is itself held to the rule). The first component that
/// fails is named.
pub(crate) fn binary_verdict(
    components: &[PathStat],
    euid: u32,
    private_group: Option<u32>,
) -> Result<(), Untrusted> {
    for (i, component) in components.iter().enumerate() {
        let untrusted = |problem| Untrusted {
            path: component.path.clone(),
            problem,
        };
        if component.uid != 0 && component.uid != euid {
            return Err(untrusted(Problem::NeitherRootNorOwner {
                owner: component.uid,
                euid,
            }));
        }
        // A directory above the binary with the sticky bit: others may add
        // entries but not rename or remove the one below, judged next.
        if i > 0 && component.mode & 0o1000 != 0 {
            continue;
        }
        let group_is_private = private_group == Some(component.gid);
        verdict(euid, component.mode, euid, group_is_private).map_err(untrusted)?;
        acl_verdict(&component.acl_writers, euid, private_group).map_err(untrusted)?;
    }
    Ok(())
}

/// Whether the forced command may name the binary at `binary`: its
/// canonical path (no link left to swap) and every directory above it up
/// to `/` pass [`binary_verdict`] for this process's effective uid.
pub(crate) fn trusted_binary(binary: &Path) -> Result<(), UntrustedBinary> {
    use std::os::unix::fs::MetadataExt;
    let untrusted = |path: &Path, e: io::Error| UntrustedBinary {
        binary: binary.to_path_buf(),
        untrusted: Untrusted {
            path: path.to_path_buf(),
            problem: Problem::Unreadable(e.to_string()),
        },
    };
    let canonical = std::fs::canonicalize(binary).map_err(|e| untrusted(binary, e))?;
    let mut components = Vec::new();
    for path in canonical.ancestors() {
        let meta = std::fs::metadata(path).map_err(|e| untrusted(path, e))?;
        let acl_writers = acl_writers_of(path, meta.gid()).map_err(|problem| UntrustedBinary {
            binary: canonical.clone(),
            untrusted: Untrusted {
                path: path.to_path_buf(),
                problem,
            },
        })?;
        components.push(PathStat {
            path: path.to_path_buf(),
            uid: meta.uid(),
            gid: meta.gid(),
            mode: meta.mode() & 0o7777,
            acl_writers,
        });
    }
    // The group database is read only when a group may write somewhere.
    let private_group = if components.iter().any(|c| {
        c.mode & 0o020 != 0 || c.acl_writers.iter().any(|w| matches!(w, Grantee::Group(_)))
    }) {
        my_private_group()
    } else {
        None
    };
    binary_verdict(&components, sys::effective_uid(), private_group).map_err(|untrusted| {
        UntrustedBinary {
            binary: canonical.clone(),
            untrusted,
        }
    })
}

/// [`verdict`] for this process's effective uid, given a path's owner, group
/// and mode.
pub(crate) fn verdict_for_me(owner: u32, gid: u32, mode: u32) -> Result<(), Problem> {
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
        Ok(meta) => verdict_for_me(meta.uid(), meta.gid(), meta.mode())
            .and_then(|()| acl_trusted(path, meta.gid()))
            .map_err(untrusted),
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
pub(crate) fn trusted_tree(root: &Path, subdirs: &[&str]) -> Result<(), Untrusted> {
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

    fn stat(path: &str, uid: u32, gid: u32, mode: u32) -> PathStat {
        PathStat {
            path: path.into(),
            uid,
            gid,
            mode,
            acl_writers: Vec::new(),
        }
    }

    #[test]
    fn a_binary_is_trusted_when_root_or_the_user_alone_can_replace_it() {
        let installed = [
            stat("/home/me/.local/bin/heeler", 1000, 1000, 0o755),
            stat("/home/me/.local/bin", 1000, 1000, 0o755),
            stat("/home/me/.local", 1000, 1000, 0o700),
            stat("/home/me", 1000, 1000, 0o750),
            stat("/home", 0, 0, 0o755),
            stat("/", 0, 0, 0o755),
        ];
        assert_eq!(binary_verdict(&installed, 1000, None), Ok(()));
        // Root may own any of it; root pairing trusts only root.
        let system = [
            stat("/usr/local/bin/heeler", 0, 0, 0o755),
            stat("/usr/local/bin", 0, 0, 0o755),
            stat("/", 0, 0, 0o755),
        ];
        assert_eq!(binary_verdict(&system, 1000, None), Ok(()));
        assert_eq!(binary_verdict(&system, 0, Some(0)), Ok(()));
        assert_eq!(
            binary_verdict(&installed, 0, None),
            Err(Untrusted {
                path: "/home/me/.local/bin/heeler".into(),
                problem: Problem::NeitherRootNorOwner {
                    owner: 1000,
                    euid: 0
                },
            })
        );
        // Another user's directory anywhere above is refused, and named.
        let mut shared = installed.clone();
        shared[4] = stat("/home", 1001, 1001, 0o755);
        assert_eq!(
            binary_verdict(&shared, 1000, None).unwrap_err().path,
            Path::new("/home")
        );
    }

    #[test]
    fn a_binary_below_a_dir_others_may_write_is_refused_unless_it_is_sticky() {
        let under = |mode: u32, gid: u32| {
            [
                stat("/opt/x/heeler", 1000, 1000, 0o755),
                stat("/opt/x", 0, gid, mode),
                stat("/", 0, 0, 0o755),
            ]
        };
        let refused = |mode: u32, gid: u32, private: Option<u32>| {
            binary_verdict(&under(mode, gid), 1000, private)
        };
        let writable = |mode: u32| {
            Err(Untrusted {
                path: "/opt/x".into(),
                problem: Problem::Writable { mode },
            })
        };
        assert_eq!(refused(0o777, 0, None), writable(0o777));
        // Sticky like /tmp: others cannot rename or remove the entry below
        // it, which is the user's here; one of another user's is refused.
        assert_eq!(refused(0o1777, 0, Some(1000)), Ok(()));
        let mut theirs = under(0o1777, 0);
        theirs[0].uid = 1001;
        assert_eq!(
            binary_verdict(&theirs, 1000, None).unwrap_err().problem,
            Problem::NeitherRootNorOwner {
                owner: 1001,
                euid: 1000
            }
        );
        // The binary itself gets no such exception (a sticky file).
        let mut sticky_file = under(0o755, 0);
        sticky_file[0].mode = 0o1777;
        assert!(binary_verdict(&sticky_file, 1000, None).is_err());
        // A shared group (staff, admin) may not write; the user's private
        // group may (Debian's umask 002), as for the state dir.
        assert_eq!(refused(0o775, 50, Some(1000)), writable(0o775));
        assert_eq!(refused(0o2775, 50, None), writable(0o2775));
        assert_eq!(refused(0o775, 1000, Some(1000)), Ok(()));
        // The binary itself, by the same rule.
        let mut file = under(0o755, 0);
        file[0].mode = 0o757;
        assert_eq!(
            binary_verdict(&file, 1000, None).unwrap_err().problem,
            Problem::Writable { mode: 0o757 }
        );
    }

    #[test]
    fn an_untrusted_binary_says_what_and_how_to_fix_it_in_one_line() {
        let binary = UntrustedBinary {
            binary: "/opt/x/heeler".into(),
            untrusted: Untrusted {
                path: "/opt/x".into(),
                problem: Problem::Writable { mode: 0o777 },
            },
        };
        assert_eq!(
            binary.to_string(),
            "another user could replace /opt/x/heeler, which the phone's SSH login runs: /opt/x is writable by group or others (mode 0777); run `chmod go-w /opt/x`"
        );
        let owner = UntrustedBinary {
            binary: "/opt/x/heeler".into(),
            untrusted: Untrusted {
                path: "/opt".into(),
                problem: Problem::NeitherRootNorOwner {
                    owner: 1001,
                    euid: 1000,
                },
            },
        };
        assert_eq!(
            owner.to_string(),
            "another user could replace /opt/x/heeler, which the phone's SSH login runs: /opt is owned by uid 1001, neither root nor uid 1000 running heeler; install heeler where only you or root can write (or run `chown 1000 /opt`)"
        );
    }

    #[test]
    fn trusted_binary_judges_the_real_path_from_the_file_up() {
        use std::os::unix::fs::PermissionsExt;
        let scratch = crate::base::scratch::ScratchDir::new("dirs-binary");
        let dir = scratch.path().join("bin");
        std::fs::create_dir_all(&dir).unwrap();
        let binary = dir.join("heeler");
        std::fs::write(&binary, b"#!/bin/sh\n").unwrap();
        let chmod = |path: &Path, mode| {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap()
        };
        chmod(&binary, 0o755);
        let link = scratch.path().join("link");
        std::os::unix::fs::symlink(&binary, &link).unwrap();
        let first = |path: &Path| trusted_binary(path).err().map(|e| e.untrusted.path);
        let real_dir = std::fs::canonicalize(&dir).unwrap();
        // The components are judged from the file up, so the dir is named
        // before anything above it (the scratch dir's sticky temp dir).
        chmod(&dir, 0o777);
        assert_eq!(first(&binary), Some(real_dir.clone()));
        // A link is judged by the file it names, not where it sits.
        assert_eq!(first(&link), Some(real_dir.clone()));
        chmod(&dir, 0o755);
        let real_scratch = std::fs::canonicalize(scratch.path()).unwrap();
        assert!(
            first(&binary).is_none_or(|path| !path.starts_with(&real_scratch)),
            "nothing this test made is refused"
        );
        assert!(trusted_binary(&scratch.path().join("missing")).is_err());
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

    /// An ACL value in the kernel's format, built from the format's
    /// definition: version 2, then (tag, perm, id) little-endian.
    fn acl_bytes(entries: &[(u16, u16, u32)]) -> Vec<u8> {
        let mut bytes = 2u32.to_le_bytes().to_vec();
        for (tag, perm, id) in entries {
            bytes.extend_from_slice(&tag.to_le_bytes());
            bytes.extend_from_slice(&perm.to_le_bytes());
            bytes.extend_from_slice(&id.to_le_bytes());
        }
        bytes
    }

    const ANY: u32 = u32::MAX;

    #[test]
    fn the_acl_format_parses_exactly() {
        // `user::rwx user:65534:rwx group::r-x mask::rwx other::r-x`.
        let bytes = acl_bytes(&[
            (0x01, 7, ANY),
            (0x02, 7, 65534),
            (0x04, 5, ANY),
            (0x10, 7, ANY),
            (0x20, 5, ANY),
        ]);
        let entries = parse_posix_acl(&bytes).unwrap();
        assert_eq!(entries.len(), 5);
        assert_eq!(
            entries[1],
            AclEntry {
                tag: 0x02,
                perm: 7,
                id: 65534
            }
        );
        assert_eq!(parse_posix_acl(&acl_bytes(&[])), Some(vec![]));
        // Another version, a torn entry, an unknown tag: not understood.
        let mut v3 = bytes.clone();
        v3[0] = 3;
        assert_eq!(parse_posix_acl(&v3), None);
        assert_eq!(parse_posix_acl(&bytes[..bytes.len() - 1]), None);
        assert_eq!(parse_posix_acl(&bytes[..3]), None);
        assert_eq!(parse_posix_acl(&acl_bytes(&[(0x40, 7, 0)])), None);
    }

    #[test]
    fn an_acl_may_let_only_the_user_root_or_the_private_group_write() {
        let writers = |entries: &[(u16, u16, u32)]| {
            acl_writers(&parse_posix_acl(&acl_bytes(entries)).unwrap(), 1000)
        };
        let base = [(0x01, 7, ANY), (0x04, 5, ANY), (0x20, 5, ANY)];
        assert_eq!(writers(&base), vec![]);
        // Named entries that only read are no writers.
        let read_only = [base[0], (0x02, 5, 1001), (0x08, 4, 50), (0x10, 5, ANY)];
        assert_eq!(writers(&read_only), vec![]);
        // Write bits count whatever the mask says (it is one chmod away).
        let masked = [base[0], (0x02, 2, 1001), (0x08, 6, 50), (0x10, 4, ANY)];
        assert_eq!(
            writers(&masked),
            vec![Grantee::User(1001), Grantee::Group(50)]
        );
        // With a mask the owning group's own entry is the one that counts.
        let group_obj = [base[0], (0x04, 7, ANY), (0x10, 5, ANY), (0x20, 5, ANY)];
        assert_eq!(writers(&group_obj), vec![Grantee::Group(1000)]);
        assert_eq!(writers(&[base[0], (0x04, 7, ANY), (0x20, 5, ANY)]), vec![]);

        let judge = |w: &[Grantee], private| acl_verdict(w, 1000, private);
        assert_eq!(judge(&[], None), Ok(()));
        assert_eq!(
            judge(&[Grantee::User(1000), Grantee::User(0)], None),
            Ok(())
        );
        assert_eq!(
            judge(&[Grantee::User(0), Grantee::User(1001)], None),
            Err(Problem::Acl {
                grantee: Grantee::User(1001)
            })
        );
        assert_eq!(judge(&[Grantee::Group(1000)], Some(1000)), Ok(()));
        assert_eq!(
            judge(&[Grantee::Group(50)], Some(1000)),
            Err(Problem::Acl {
                grantee: Grantee::Group(50)
            })
        );
        assert!(judge(&[Grantee::Anyone], Some(1000)).is_err());
        // The binary's rule applies the same ACL verdict to each component.
        let mut dir = stat("/opt/x", 0, 0, 0o755);
        dir.acl_writers = vec![Grantee::User(1001)];
        let components = [
            stat("/opt/x/heeler", 1000, 1000, 0o755),
            dir,
            stat("/", 0, 0, 0o755),
        ];
        let refused = binary_verdict(&components, 1000, None).unwrap_err();
        assert_eq!(refused.path, Path::new("/opt/x"));
        assert_eq!(
            refused.to_string(),
            "/opt/x has an extended ACL that lets uid 1001 write to it; run `setfacl -b /opt/x`"
        );
    }

    /// Runs `setfacl` with `args`; `false` (and a visible skip) when the
    /// tool or the file system refuses.
    #[cfg(target_os = "linux")]
    fn setfacl(args: &[&str], path: &Path) -> bool {
        let out = std::process::Command::new("setfacl")
            .args(args)
            .arg(path)
            .output();
        match out {
            Ok(out) if out.status.success() => true,
            other => {
                assert!(
                    std::env::var_os("HEELER_REQUIRE_ALL").is_none_or(|v| v != "1"),
                    "HEELER_REQUIRE_ALL=1, so this test may not be skipped: setfacl failed: {other:?}"
                );
                println!("SKIPPED: setfacl cannot set an ACL here: {other:?}");
                false
            }
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_kernels_acl_reads_as_getfacl_lists_it() {
        let scratch = crate::base::scratch::ScratchDir::new("dirs-acl-read");
        let dir = scratch.path().join("d");
        std::fs::create_dir(&dir).unwrap();
        if !setfacl(&["-m", "u:65534:rwx,g:65533:r-x,m::r-x"], &dir) {
            return;
        }
        let bytes = sys::posix_acl_access(&dir).unwrap().unwrap();
        let parsed = parse_posix_acl(&bytes).unwrap();
        // The oracle: getfacl's numeric listing of the same ACL.
        let listing = std::process::Command::new("getfacl")
            .args(["-n", "-c", "-E"])
            .arg(&dir)
            .output()
            .unwrap();
        let mut expected: Vec<(u16, u16, u32)> = Vec::new();
        for line in String::from_utf8(listing.stdout).unwrap().lines() {
            let fields: Vec<&str> = line.split(':').collect();
            if fields.len() != 3 {
                continue;
            }
            let perm = fields[2]
                .chars()
                .zip([4, 2, 1])
                .filter(|(c, _)| *c != '-')
                .map(|(_, b)| b)
                .sum();
            let (tag, id) = match (fields[0], fields[1]) {
                ("user", "") => (0x01, ANY),
                ("user", id) => (0x02, id.parse().unwrap()),
                ("group", "") => (0x04, ANY),
                ("group", id) => (0x08, id.parse().unwrap()),
                ("mask", _) => (0x10, ANY),
                ("other", _) => (0x20, ANY),
                _ => continue,
            };
            expected.push((tag, perm, id));
        }
        let got: Vec<(u16, u16, u32)> = parsed.iter().map(|e| (e.tag, e.perm, e.id)).collect();
        assert_eq!(got, expected);
        assert_eq!(expected.len(), 6);
        // A file without extended entries has no attribute at all.
        let plain = scratch.path().join("plain");
        std::fs::write(&plain, b"").unwrap();
        assert_eq!(sys::posix_acl_access(&plain).unwrap(), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn trusted_refuses_a_dir_whose_acl_lets_another_user_write() {
        use std::os::unix::fs::PermissionsExt;
        let scratch = crate::base::scratch::ScratchDir::new("dirs-acl");
        let root = scratch.path().join("state");
        std::fs::create_dir_all(root.join("pending")).unwrap();
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o700)).unwrap();
        if !setfacl(&["-m", "u:65534:r-x"], &root) {
            return;
        }
        assert_eq!(trusted(&root), Ok(()), "reading is no threat");
        // Masked to read-only, the grant still counts (one chmod away).
        assert!(setfacl(&["-m", "u:65534:rwx,m::r-x"], &root));
        let refused = trusted(&root).unwrap_err();
        assert_eq!(
            refused.problem,
            Problem::Acl {
                grantee: Grantee::User(65534)
            }
        );
        assert_eq!(
            refused.fix(),
            format!("run `setfacl -b {}`", root.display())
        );
        // The named fix works.
        assert!(setfacl(&["-b"], &root));
        assert_eq!(trusted(&root), Ok(()));
        // A subdirectory, and a group that is not the user's private one.
        assert!(setfacl(&["-m", "g:65533:rwx"], &root.join("pending")));
        assert_eq!(
            trusted_tree(&root, &["pending"]).unwrap_err().problem,
            Problem::Acl {
                grantee: Grantee::Group(65533)
            }
        );
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
