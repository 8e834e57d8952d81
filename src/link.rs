//! `heeler link`: puts `heeler` on PATH in one step that survives updates.
//! It links `~/.local/bin/heeler` to the binary that runs it (the installed
//! plugin's `bin/heeler`, which every update replaces in place) and says
//! whether `~/.local/bin` is on PATH.
//!
//! The decision ([`plan`]) is pure: what is at the link's place, whether
//! the directories are the user's alone (`base::dirs::trusted`, the one
//! rule of "another user can write here"), and PATH, in; what to do or why
//! not, out. [`run`] reads those facts and performs the plan: it creates
//! `~/.local` and `~/.local/bin` 0755 when missing, and replaces an
//! existing link atomically (a new link renamed over it, as `ln -sfn`
//! would, so nothing is written through a link to a directory).
//!
//! Invariants: a file of the user's own at the link's place is never
//! replaced; no link is made into a directory another user can write, nor
//! to a binary in herdr's temporary install clone (it is moved after the
//! build, so the link would dangle).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use crate::base::dirs;
use crate::exit::Failure;

/// Where the link goes, under the home directory.
pub const LINK_DIR: &str = ".local/bin";
/// A directory of herdr's temporary install clone has this in its path.
const HERDR_TEMP_CLONE: &str = "/.tmp-install-";

/// What is at the link's place now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Existing {
    Nothing,
    /// A symbolic link, to this target.
    Link(PathBuf),
    /// Anything else (a file, a directory): the user's own.
    Other,
}

/// What [`plan`] decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// Make (or replace) the link to `target`; `on_path`: whether its
    /// directory is on PATH.
    Link { target: PathBuf, on_path: bool },
    /// The link is already there.
    AlreadyLinked { target: PathBuf, on_path: bool },
}

/// Why there is no link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    TempClone(PathBuf),
    Occupied(PathBuf),
    /// A directory another user can write (its summary and fix).
    Untrusted {
        summary: String,
        fix: String,
    },
}

/// The plan for linking `link` (in `link_dir`) to `exe` (pure).
pub fn plan(
    exe: &Path,
    (link_dir, link): (&Path, &Path),
    existing: &Existing,
    untrusted: Option<&dirs::Untrusted>,
    path_var: Option<&OsStr>,
) -> Result<Plan, Refusal> {
    if exe.to_string_lossy().contains(HERDR_TEMP_CLONE) {
        return Err(Refusal::TempClone(exe.to_path_buf()));
    }
    if let Some(u) = untrusted {
        return Err(Refusal::Untrusted {
            summary: u.summary(),
            fix: u.fix(),
        });
    }
    let on_path =
        path_var.is_some_and(|p| std::env::split_paths(p).any(|dir| dir.as_path() == link_dir));
    let target = exe.to_path_buf();
    match existing {
        Existing::Link(to) if to == exe => Ok(Plan::AlreadyLinked { target, on_path }),
        Existing::Nothing | Existing::Link(_) => Ok(Plan::Link { target, on_path }),
        Existing::Other => Err(Refusal::Occupied(link.to_path_buf())),
    }
}

/// What `heeler link` prints after `plan` was carried out.
pub fn message(plan: &Plan, link: &Path) -> String {
    let (verb, target, on_path) = match plan {
        Plan::Link { target, on_path } => ("linked", target, *on_path),
        Plan::AlreadyLinked { target, on_path } => ("already linked", target, *on_path),
    };
    let dir = link.parent().unwrap_or(link);
    if on_path {
        format!(
            "heeler link: {verb} {} to {}: run heeler from a shell",
            link.display(),
            target.display()
        )
    } else {
        format!(
            "heeler link: {verb} {} to {}; {} is not on PATH: add it (export PATH=\"$HOME/.local/bin:$PATH\" in your shell's profile), or run {}",
            link.display(),
            target.display(),
            dir.display(),
            link.display()
        )
    }
}

fn refusal_text(refusal: &Refusal) -> String {
    match refusal {
        Refusal::TempClone(exe) => format!(
            "heeler link: {} is in herdr's temporary install clone, which herdr moves after the build; run heeler link as the installed plugin's bin/heeler",
            exe.display()
        ),
        Refusal::Occupied(link) => format!(
            "heeler link: {} exists and is not a link; it is left alone: remove it, or run heeler by its full path",
            link.display()
        ),
        Refusal::Untrusted { summary, fix } => format!(
            "heeler link: {summary}, so another user could replace the link there; nothing was linked: {fix}"
        ),
    }
}

/// The command.
pub fn run() -> Result<(), Failure> {
    let fail = |text: String| Failure::new(text, 1);
    let exe = std::env::current_exe()
        .and_then(|p| p.canonicalize())
        .map_err(|e| {
            fail(format!(
                "heeler link: cannot tell where this binary is: {e}"
            ))
        })?;
    let home = dirs::Env::process()
        .home()
        .map_err(|e| fail(format!("heeler link: {e}")))?;
    let local = home.join(".local");
    let link_dir = home.join(LINK_DIR);
    let link = link_dir.join("heeler");
    let existing = match std::fs::symlink_metadata(&link) {
        Err(_) => Existing::Nothing,
        Ok(m) if m.file_type().is_symlink() => {
            Existing::Link(std::fs::read_link(&link).unwrap_or_default())
        }
        Ok(_) => Existing::Other,
    };
    let untrusted = dirs::trusted(&local)
        .and_then(|()| dirs::trusted(&link_dir))
        .err();
    let path_var = std::env::var_os("PATH");
    let decided = plan(
        &exe,
        (&link_dir, &link),
        &existing,
        untrusted.as_ref(),
        path_var.as_deref(),
    )
    .map_err(|r| fail(refusal_text(&r)))?;
    if let Plan::Link { target, .. } = &decided {
        for dir in [&local, &link_dir] {
            create_private_dir(dir)
                .map_err(|e| fail(format!("heeler link: cannot create {}: {e}", dir.display())))?;
        }
        replace_link(target, &link)
            .map_err(|e| fail(format!("heeler link: cannot link {}: {e}", link.display())))?;
    }
    crate::exit::write_stdout(&(message(&decided, &link) + "\n"))
}

/// Creates `dir` 0755 (never writable by group or others, whatever the
/// umask) when it is missing.
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    match std::fs::DirBuilder::new().mode(0o755).create(dir) {
        Ok(()) => std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

/// Points `link` at `target`: a new link beside it renamed over it (so a
/// shell never finds no `heeler`, and a link to a directory is replaced,
/// not written through).
fn replace_link(target: &Path, link: &Path) -> std::io::Result<()> {
    let dir = link.parent().unwrap_or(Path::new("."));
    let temp = dir.join(format!(".heeler.link-{}", std::process::id()));
    let _ = std::fs::remove_file(&temp);
    std::os::unix::fs::symlink(target, &temp)?;
    std::fs::rename(&temp, link).inspect_err(|_| {
        let _ = std::fs::remove_file(&temp);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIR: &str = "/h/.local/bin";
    const LINK: &str = "/h/.local/bin/heeler";
    const EXE: &str = "/h/.config/herdr/plugins/github/heeler-dd89d5c0f92b/bin/heeler";

    fn decide(exe: &str, existing: Existing, path: &str) -> Result<Plan, Refusal> {
        plan(
            Path::new(exe),
            (Path::new(DIR), Path::new(LINK)),
            &existing,
            None,
            Some(OsStr::new(path)),
        )
    }

    #[test]
    fn links_the_running_binary_and_says_whether_the_directory_is_on_path() {
        let on = decide(EXE, Existing::Nothing, "/usr/bin:/h/.local/bin").unwrap();
        assert_eq!(
            on,
            Plan::Link {
                target: EXE.into(),
                on_path: true
            }
        );
        assert_eq!(
            message(&on, Path::new(LINK)),
            format!("heeler link: linked {LINK} to {EXE}: run heeler from a shell")
        );
        let off = decide(EXE, Existing::Link("/old/heeler".into()), "/usr/bin").unwrap();
        assert_eq!(
            off,
            Plan::Link {
                target: EXE.into(),
                on_path: false
            }
        );
        assert!(message(&off, Path::new(LINK)).contains("/h/.local/bin is not on PATH"));
        assert_eq!(
            decide(EXE, Existing::Link(EXE.into()), "/h/.local/bin").unwrap(),
            Plan::AlreadyLinked {
                target: EXE.into(),
                on_path: true
            }
        );
    }

    #[test]
    fn refuses_a_file_of_the_user_s_a_temp_clone_and_a_shared_directory() {
        assert_eq!(
            decide(EXE, Existing::Other, ""),
            Err(Refusal::Occupied(LINK.into()))
        );
        let temp = "/h/.config/herdr/plugins/.tmp-install-42-1700000000000/checkout/bin/heeler";
        assert_eq!(
            decide(temp, Existing::Nothing, ""),
            Err(Refusal::TempClone(temp.into()))
        );
        let shared = dirs::Untrusted {
            path: DIR.into(),
            problem: dirs::Problem::Writable { mode: 0o777 },
        };
        let refused = plan(
            Path::new(EXE),
            (Path::new(DIR), Path::new(LINK)),
            &Existing::Nothing,
            Some(&shared),
            None,
        );
        assert!(
            matches!(&refused, Err(Refusal::Untrusted { summary, .. }) if summary.contains("writable by group or others")),
            "{refused:?}"
        );
    }
}
