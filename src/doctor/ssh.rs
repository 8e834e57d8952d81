//! The SSH side of pairing: does OpenSSH answer on the advertised port,
//! which host key the Pairing Code pins, would sshd's StrictModes accept
//! authorized_keys, and are expired Bootstrap Key lines left in it.
//!
//! Invariants: the rules of pairing are not restated here. What may answer
//! on the SSH port is `pair::preflight`'s (pairing runs the same check
//! before it shows a code). The host key
//! files, their order and their parsing are `pair::host_key`'s; the
//! authorized_keys line split, the Bootstrap Key marker and its expiry are
//! `pair::authorized_keys`'s. Key blobs never reach the report: lines are
//! counted, not shown.

use std::path::PathBuf;

use crate::doctor::facts::{FileRead, PairingFacts, PathFacts, PathKind, SshService};
use crate::doctor::report::Check;
use crate::pair::preflight::{self, Finding, Level};
use crate::pair::{authorized_keys, host_key};

/// How this Host installs and starts OpenSSH ([`SshService::of`] decides,
/// [`SshService::start`] words the fix).
impl SshService {
    /// Decides from the OS (`std::env::consts::OS`), `/etc/os-release`'s
    /// text, and whether systemd (`/run/systemd/system`) or OpenRC runs
    /// (pure).
    pub fn of(os: &str, os_release: Option<&str>, systemd: bool, openrc: bool) -> SshService {
        if os == "macos" {
            return SshService::MacRemoteLogin;
        }
        // ID and ID_LIKE, unquoted: the family is the first one known.
        let ids: Vec<&str> = os_release
            .unwrap_or("")
            .lines()
            .filter_map(|l| l.strip_prefix("ID=").or_else(|| l.strip_prefix("ID_LIKE=")))
            .flat_map(|v| v.trim_matches(['"', '\'']).split_whitespace())
            .collect();
        let family = ids.iter().find_map(|id| match *id {
            "debian" | "ubuntu" => Some(("sudo apt install openssh-server", "ssh")),
            "fedora" | "rhel" | "centos" => Some(("sudo dnf install openssh-server", "sshd")),
            "arch" => Some(("sudo pacman -S openssh", "sshd")),
            "suse" | "opensuse" => Some(("sudo zypper install openssh", "sshd")),
            "alpine" => Some(("sudo apk add openssh", "sshd")),
            "gentoo" => Some(("sudo emerge net-misc/openssh", "sshd")),
            _ => None,
        });
        if systemd {
            let (install, unit) = family.map_or((None, "sshd"), |(i, u)| (Some(i), u));
            SshService::Systemd { install, unit }
        } else if openrc {
            SshService::OpenRc {
                install: family.map(|f| f.0),
            }
        } else {
            SshService::Unknown
        }
    }

    /// The commands that install (when needed) and start OpenSSH.
    pub fn start(self) -> String {
        let with_install = |install: Option<&str>, start: String| match install {
            Some(install) => format!("{install} (if missing), then {start}"),
            None => start,
        };
        match self {
            SshService::MacRemoteLogin => {
                "System Settings > General > Sharing > Remote Login".to_string()
            }
            SshService::Systemd { install, unit } => {
                with_install(install, format!("sudo systemctl enable --now {unit}"))
            }
            SshService::OpenRc { install } => with_install(
                install,
                "sudo rc-update add sshd && sudo rc-service sshd start".to_string(),
            ),
            SshService::Unknown => "systemd: sudo systemctl enable --now ssh (Debian, Ubuntu) or sshd (Fedora, RHEL, Arch); OpenRC: sudo rc-service sshd start; macOS: System Settings > General > Sharing > Remote Login".to_string(),
        }
    }
}

/// What answered on 127.0.0.1:<port> (the first banner line, or why none
/// came), as pairing's preflight classifies it: the rule and its wording
/// are `pair::preflight`'s, so doctor and pairing agree; doctor's fix also
/// names how this Host starts OpenSSH (`service`).
pub(crate) fn check_ssh_server(
    port: u16,
    banner: &Result<String, String>,
    service: SshService,
) -> Check {
    const ID: &str = "ssh_server";
    let start = service.start();
    let finding = preflight::classify_with(port, banner, Some(&start));
    let Finding {
        level,
        summary,
        fix,
    } = finding;
    match (level, fix) {
        (Level::Pass, _) | (_, None) => Check::pass(ID, summary),
        (Level::Warn, Some(fix)) => Check::warn(ID, summary, fix),
        (Level::Fail, Some(fix)) => Check::fail(ID, summary, fix),
    }
}

/// The host key files the pairing popup considers, in its order.
pub(crate) fn host_key_paths() -> Vec<PathBuf> {
    host_key::FILE_NAMES
        .iter()
        .map(|name| PathBuf::from(host_key::DEFAULT_DIR).join(name))
        .collect()
}

/// The first readable host key, parsed as the pairing popup does; its
/// SHA-256 fingerprint is what the Pairing Code pins.
pub(crate) fn check_host_keys(candidates: &[(PathBuf, FileRead)]) -> Check {
    const ID: &str = "host_keys";
    for (path, read) in candidates {
        let FileRead::Text(text) = read else {
            continue;
        };
        return match host_key::parse_public_line(text) {
            Some((kind, blob)) => Check::pass(
                ID,
                format!(
                    "{} ({kind}) {}",
                    path.display(),
                    host_key::fingerprint(&blob)
                ),
            ),
            None => Check::fail(
                ID,
                format!("{} is not an OpenSSH public key", path.display()),
                "regenerate the host keys: sudo ssh-keygen -A",
            ),
        };
    }
    let unreadable: Vec<String> = candidates
        .iter()
        .filter_map(|(path, read)| match read {
            FileRead::Unreadable(why) => Some(format!("{}: {why}", path.display())),
            _ => None,
        })
        .collect();
    let summary = if unreadable.is_empty() {
        format!(
            "no ssh_host_{{ed25519,ecdsa,rsa}}_key.pub under {}",
            host_key::DEFAULT_DIR
        )
    } else {
        format!("no readable host key ({})", unreadable.join("; "))
    };
    Check::fail(ID, summary, "generate the host keys: sudo ssh-keygen -A")
}

/// sshd (StrictModes yes, the default) ignores authorized_keys when it, ~/.ssh
/// or the home directory is owned by someone other than the user or root, or
/// is writable by group or others.
pub(crate) fn check_ssh_modes(
    user_uid: u32,
    home: &PathFacts,
    ssh_dir: &PathFacts,
    authorized_keys: &PathFacts,
) -> Check {
    const ID: &str = "ssh_modes";
    let mut problems = Vec::new();
    let mut fixes = Vec::new();
    for (facts, want, chmod) in [
        (home, PathKind::Directory, "go-w"),
        (ssh_dir, PathKind::Directory, "700"),
        (authorized_keys, PathKind::File, "600"),
    ] {
        let Some(kind) = facts.kind else { continue };
        let shown = facts.path.display();
        if kind != want {
            problems.push(format!(
                "{shown} is not a {}",
                match want {
                    PathKind::Directory => "directory",
                    _ => "regular file",
                }
            ));
            fixes.push(format!("replace {shown}"));
            continue;
        }
        if facts.uid != user_uid && facts.uid != 0 {
            problems.push(format!("{shown} is owned by uid {}", facts.uid));
            fixes.push(format!("chown {user_uid} {shown}"));
        }
        if facts.mode & 0o022 != 0 {
            problems.push(format!(
                "{shown} is group/world-writable ({:04o})",
                facts.mode & 0o7777
            ));
            fixes.push(format!("chmod {chmod} {shown}"));
        }
    }
    if !problems.is_empty() {
        return Check::fail(
            ID,
            format!(
                "sshd's StrictModes would ignore authorized_keys: {}",
                problems.join("; ")
            ),
            fixes.join(" && "),
        );
    }
    match (ssh_dir.kind, authorized_keys.kind) {
        (None, _) => Check::pass(
            ID,
            format!(
                "{} does not exist yet; pairing creates it with mode 0700",
                ssh_dir.path.display()
            ),
        ),
        (Some(_), None) => Check::pass(
            ID,
            format!(
                "{} ({:04o}) is fine; authorized_keys does not exist yet",
                ssh_dir.path.display(),
                ssh_dir.mode & 0o7777
            ),
        ),
        (Some(_), Some(_)) => Check::pass(
            ID,
            format!(
                "{} ({:04o}) and authorized_keys ({:04o}) pass sshd's StrictModes",
                ssh_dir.path.display(),
                ssh_dir.mode & 0o7777,
                authorized_keys.mode & 0o7777
            ),
        ),
    }
}

/// How many Bootstrap Key lines authorized_keys holds: (expired, live), by
/// the pairing code's own marker and expiry rules.
pub(crate) fn bootstrap_line_counts(text: &str, now_unix: u64) -> (usize, usize) {
    let mut counts = (0usize, 0usize);
    for line in authorized_keys::split_lines(text.as_bytes()) {
        match authorized_keys::marker_of(&line) {
            Some(marker) if marker.has_expired(now_unix) => counts.0 += 1,
            Some(_) => counts.1 += 1,
            None => {}
        }
    }
    counts
}

/// The pairing ids of the unexpired Bootstrap Key lines whose ceremony is
/// gone ([`authorized_keys::is_orphan`], the rule the next ceremony
/// removes them by), in file order.
pub(crate) fn orphaned_pairings(text: &str, now_unix: u64, pairings: &PairingFacts) -> Vec<String> {
    use std::os::unix::ffi::OsStrExt;
    let state_dir = pairings.state_dir.as_os_str().as_bytes();
    authorized_keys::split_lines(text.as_bytes())
        .iter()
        .filter(|line| {
            authorized_keys::marker_of(line).is_some_and(|m| !m.has_expired(now_unix))
                && authorized_keys::is_orphan(line, state_dir, |id| {
                    pairings.pending.iter().any(|p| p == id)
                })
        })
        .filter_map(|line| authorized_keys::marker_of(line).map(|m| m.pairing_id))
        .collect()
}

pub(crate) fn check_bootstrap_lines(
    authorized_keys: &FileRead,
    now_unix: u64,
    pairings: Option<&PairingFacts>,
) -> Check {
    const ID: &str = "bootstrap_lines";
    let text = match authorized_keys {
        FileRead::Missing => return Check::pass(ID, "no authorized_keys, so no bootstrap lines"),
        FileRead::Unreadable(why) => {
            return Check::warn(
                ID,
                format!("authorized_keys could not be read ({why})"),
                "make ~/.ssh/authorized_keys readable by its owner",
            );
        }
        FileRead::Text(text) => text,
    };
    let orphans = pairings.map_or_else(Vec::new, |p| orphaned_pairings(text, now_unix, p));
    if !orphans.is_empty() {
        let (expired, _) = bootstrap_line_counts(text, now_unix);
        let expired = if expired > 0 {
            format!("{expired} expired and ")
        } else {
            String::new()
        };
        return Check::warn(
            ID,
            format!(
                "{expired}{} Bootstrap Key line(s) whose ceremony is gone left in authorized_keys (pairing {})",
                orphans.len(),
                orphans.join(", ")
            ),
            "start a pairing (heeler pair), which removes them, or delete the lines ending in herdr-pairing:<id>:exp:<time>",
        );
    }
    match bootstrap_line_counts(text, now_unix) {
        (0, 0) => Check::pass(ID, "no Bootstrap Key lines in authorized_keys"),
        (0, live) => Check::pass(
            ID,
            format!("{live} unexpired Bootstrap Key line(s): a pairing is in progress"),
        ),
        (expired, _) => Check::warn(
            ID,
            format!("{expired} expired Bootstrap Key line(s) left in authorized_keys"),
            "open the pairing popup once (herdr plugin action invoke heeler.pair), which sweeps them, or delete the lines ending in herdr-pairing:<id>:exp:<time>",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::report::Status;

    fn text(s: &str) -> FileRead {
        FileRead::Text(s.to_owned())
    }

    fn facts(path: &str, kind: Option<PathKind>, uid: u32, mode: u32) -> PathFacts {
        PathFacts {
            path: PathBuf::from(path),
            kind,
            uid,
            mode,
        }
    }

    #[test]
    fn ssh_banners_are_classified() {
        let openssh = check_ssh_server(
            22,
            &Ok("SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3".into()),
            SshService::Unknown,
        );
        assert_eq!(openssh.status, Status::Pass);
        assert!(openssh.summary.contains("OpenSSH_9.2p1"));

        let tailscale = check_ssh_server(22, &Ok("SSH-2.0-Tailscale".into()), SshService::Unknown);
        assert_eq!(tailscale.status, Status::Fail);
        assert!(tailscale.summary.contains("Tailscale SSH"));
        assert!(tailscale.fix.unwrap().contains("ssh_port"));

        let dropbear = check_ssh_server(
            2222,
            &Ok("SSH-2.0-dropbear_2022.83".into()),
            SshService::Unknown,
        );
        assert_eq!(dropbear.status, Status::Warn);

        let http = check_ssh_server(
            8080,
            &Ok("HTTP/1.1 400 Bad Request".into()),
            SshService::Unknown,
        );
        assert_eq!(http.status, Status::Fail);
        assert!(http.summary.contains("not with SSH"));

        let refused = check_ssh_server(22, &Err("connection refused".into()), SshService::Unknown);
        assert_eq!(refused.status, Status::Fail);
        assert!(refused.fix.unwrap().contains("Remote Login"));
    }

    #[test]
    fn the_fix_names_each_family_s_ssh_service() {
        let debian = "PRETTY_NAME=\"Debian GNU/Linux 12\"\nID=debian\n";
        let ubuntu = "ID=ubuntu\nID_LIKE=debian\n";
        let mint = "ID=linuxmint\nID_LIKE=\"ubuntu debian\"\n";
        let fedora = "ID=fedora\n";
        let rocky = "ID=\"rocky\"\nID_LIKE=\"rhel centos fedora\"\n";
        let arch = "ID=arch\n";
        let alpine = "ID=alpine\n";
        let start =
            |os, release, systemd, openrc| SshService::of(os, release, systemd, openrc).start();
        let debian_fix =
            "sudo apt install openssh-server (if missing), then sudo systemctl enable --now ssh";
        assert_eq!(start("linux", Some(debian), true, false), debian_fix);
        assert_eq!(start("linux", Some(ubuntu), true, false), debian_fix);
        assert_eq!(start("linux", Some(mint), true, false), debian_fix);
        let dnf =
            "sudo dnf install openssh-server (if missing), then sudo systemctl enable --now sshd";
        assert_eq!(start("linux", Some(fedora), true, false), dnf);
        assert_eq!(start("linux", Some(rocky), true, false), dnf);
        assert_eq!(
            start("linux", Some(arch), true, false),
            "sudo pacman -S openssh (if missing), then sudo systemctl enable --now sshd"
        );
        assert_eq!(
            start("linux", Some(alpine), false, true),
            "sudo apk add openssh (if missing), then sudo rc-update add sshd && sudo rc-service sshd start"
        );
        // systemd on a distribution not known: the upstream unit name.
        assert_eq!(
            start("linux", Some("ID=nixos\n"), true, false),
            "sudo systemctl enable --now sshd"
        );
        assert_eq!(
            start("macos", None, false, false),
            "System Settings > General > Sharing > Remote Login"
        );
        let unknown = start("linux", None, false, false);
        for name in [
            "enable --now ssh (Debian",
            "sshd (Fedora",
            "rc-service sshd",
            "Remote Login",
        ] {
            assert!(unknown.contains(name), "{unknown}");
        }
        let refused = check_ssh_server(
            22,
            &Err("connection refused".into()),
            SshService::of("linux", Some(fedora), true, false),
        );
        assert_eq!(
            refused.fix.as_deref(),
            Some(
                "start OpenSSH on port 22 (sudo dnf install openssh-server (if missing), then sudo systemctl enable --now sshd), or set ssh_port in pair.json to its port"
            )
        );
    }

    #[test]
    fn host_key_fingerprint_matches_ssh_keygen() {
        // `ssh-keygen -lf` of this key prints
        // 256 SHA256:HkyxQAhtVSGIP6RoalJXeBTOriq8IuHIOdMHkLDFRLY root@host (ED25519)
        let key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHbwd/9sGXkY0u6tt8f3EOO9Ul5pvWW6bIdVyF2bl+sU root@host\n";
        let expected = "HkyxQAhtVSGIP6RoalJXeBTOriq8IuHIOdMHkLDFRLY";
        let check = check_host_keys(&[
            (
                PathBuf::from("/etc/ssh/ssh_host_ed25519_key.pub"),
                FileRead::Missing,
            ),
            (PathBuf::from("/etc/ssh/ssh_host_ecdsa_key.pub"), text(key)),
            (
                PathBuf::from("/etc/ssh/ssh_host_rsa_key.pub"),
                text("garbage"),
            ),
        ]);
        assert_eq!(check.status, Status::Pass);
        assert!(check.summary.contains("ssh_host_ecdsa_key.pub"));
        assert!(
            check.summary.ends_with(&format!("SHA256:{expected}")),
            "{}",
            check.summary
        );
    }

    #[test]
    fn host_keys_missing_or_garbage_fail_with_ssh_keygen_a() {
        let none = check_host_keys(&[
            (
                PathBuf::from("/etc/ssh/ssh_host_ed25519_key.pub"),
                FileRead::Missing,
            ),
            (
                PathBuf::from("/etc/ssh/ssh_host_rsa_key.pub"),
                FileRead::Unreadable("Permission denied".into()),
            ),
        ]);
        assert_eq!(none.status, Status::Fail);
        assert!(none.summary.contains("Permission denied"));
        assert!(none.fix.unwrap().contains("ssh-keygen -A"));
        // The first readable file wins, even when it is garbage (as the popup does).
        let garbage = check_host_keys(&[
            (
                PathBuf::from("/etc/ssh/ssh_host_ed25519_key.pub"),
                text("not-a-key AAAA"),
            ),
            (
                PathBuf::from("/etc/ssh/ssh_host_rsa_key.pub"),
                text("ssh-rsa AAAAB3NzaC1yc2E="),
            ),
        ]);
        assert_eq!(garbage.status, Status::Fail);
    }

    #[test]
    fn strict_modes_are_checked_on_home_ssh_and_authorized_keys() {
        let home = facts("/home/u", Some(PathKind::Directory), 1000, 0o40755);
        let ssh = facts("/home/u/.ssh", Some(PathKind::Directory), 1000, 0o40700);
        let keys = facts(
            "/home/u/.ssh/authorized_keys",
            Some(PathKind::File),
            1000,
            0o100600,
        );
        assert_eq!(
            check_ssh_modes(1000, &home, &ssh, &keys).status,
            Status::Pass
        );

        let root_owned_home = facts("/home/u", Some(PathKind::Directory), 0, 0o40755);
        assert_eq!(
            check_ssh_modes(1000, &root_owned_home, &ssh, &keys).status,
            Status::Pass
        );

        let writable_ssh = facts("/home/u/.ssh", Some(PathKind::Directory), 1000, 0o40775);
        let check = check_ssh_modes(1000, &home, &writable_ssh, &keys);
        assert_eq!(check.status, Status::Fail);
        assert!(check.fix.unwrap().contains("chmod 700 /home/u/.ssh"));

        let foreign_keys = facts(
            "/home/u/.ssh/authorized_keys",
            Some(PathKind::File),
            1001,
            0o100644,
        );
        let check = check_ssh_modes(1000, &home, &ssh, &foreign_keys);
        assert_eq!(check.status, Status::Fail);
        assert!(check.summary.contains("owned by uid 1001"));

        let world_writable_home = facts("/home/u", Some(PathKind::Directory), 1000, 0o40777);
        assert_eq!(
            check_ssh_modes(1000, &world_writable_home, &ssh, &keys).status,
            Status::Fail
        );

        let keys_dir = facts(
            "/home/u/.ssh/authorized_keys",
            Some(PathKind::Directory),
            1000,
            0o40700,
        );
        assert_eq!(
            check_ssh_modes(1000, &home, &ssh, &keys_dir).status,
            Status::Fail
        );

        let missing = facts("/home/u/.ssh", None, 0, 0);
        let missing_keys = facts("/home/u/.ssh/authorized_keys", None, 0, 0);
        let check = check_ssh_modes(1000, &home, &missing, &missing_keys);
        assert_eq!(check.status, Status::Pass);
        assert!(check.summary.contains("does not exist yet"));
    }

    #[test]
    fn leftover_bootstrap_lines_are_counted_never_shown() {
        let now = 1_800_000_000;
        let file = format!(
            "ssh-ed25519 AAAAsecretblob phone\nrestrict ssh-ed25519 AAAAold herdr-pairing:aa:exp:{}\nrestrict ssh-ed25519 AAAAold2 herdr-pairing:bb:exp:{now}\n",
            now - 500
        );
        let check = check_bootstrap_lines(&text(&file), now, None);
        assert_eq!(check.status, Status::Warn);
        assert!(check.summary.starts_with("2 expired"));
        assert!(!check.summary.contains("AAAA"));
        let live = format!("x ssh-ed25519 AAAA herdr-pairing:cc:exp:{}\n", now + 60);
        let check = check_bootstrap_lines(&text(&live), now, None);
        assert_eq!(check.status, Status::Pass);
        assert!(check.summary.contains("in progress"));
        assert_eq!(
            check_bootstrap_lines(&text("ssh-ed25519 AAAA me\n"), now, None).status,
            Status::Pass
        );
        assert_eq!(
            check_bootstrap_lines(&FileRead::Missing, now, None).status,
            Status::Pass
        );
    }

    #[test]
    fn lines_whose_ceremony_is_gone_are_named_by_pairing_id() {
        let now = 1_800_000_000;
        let line = |id: &str, state: &str, exp: u64| {
            format!(
                "restrict,command=\"'/h' accept --state-dir '{state}' --pairing-id {id}\" ssh-ed25519 AAAAsecret{id} herdr-pairing:{id}:exp:{exp}\n"
            )
        };
        let file = [
            line("aa11", "/s", now + 60),
            line("bb22", "/s", now + 60),
            line("cc33", "/other", now + 60),
            line("dd44", "/s", now - 5),
        ]
        .concat();
        let pairings = PairingFacts {
            state_dir: PathBuf::from("/s"),
            pending: vec!["bb22".into()],
        };
        // aa11 is gone; bb22 is open; cc33 is another state dir's; dd44
        // expired (counted as such).
        let check = check_bootstrap_lines(&text(&file), now, Some(&pairings));
        assert_eq!(check.status, Status::Warn);
        assert_eq!(
            check.summary,
            "1 expired and 1 Bootstrap Key line(s) whose ceremony is gone left in authorized_keys (pairing aa11)"
        );
        assert!(!check.summary.contains("AAAA"));
        let all_open = PairingFacts {
            pending: vec!["aa11".into(), "bb22".into()],
            ..pairings
        };
        let live = [line("aa11", "/s", now + 60), line("bb22", "/s", now + 60)].concat();
        assert_eq!(
            check_bootstrap_lines(&text(&live), now, Some(&all_open)).status,
            Status::Pass
        );
    }

    #[test]
    fn host_keys_are_looked_up_where_and_in_the_order_pairing_does() {
        assert_eq!(
            host_key_paths(),
            [
                PathBuf::from("/etc/ssh/ssh_host_ed25519_key.pub"),
                PathBuf::from("/etc/ssh/ssh_host_ecdsa_key.pub"),
                PathBuf::from("/etc/ssh/ssh_host_rsa_key.pub"),
            ]
        );
    }

    /// Lines on which a hand-written marker parser could go either way: the
    /// vertical tab, form feed and carriage return as separators, digits
    /// past u64, and the usual non-markers.
    const MARKER_EDGE_LINES: &[&str] = &[
        "restrict,command=\"x\" ssh-ed25519 AAAA herdr-pairing:0a1b2c:exp:1700000000",
        "herdr-pairing:a-b:exp:5",
        "ssh-ed25519 AAAA\u{b}herdr-pairing:vt:exp:5",
        "ssh-ed25519 AAAA\u{c}herdr-pairing:ff:exp:5",
        "ssh-ed25519 AAAA\rherdr-pairing:cr:exp:5",
        "ssh-ed25519 AAAA herdr-pairing:big:exp:99999999999999999999999",
        "ssh-ed25519 AAAA herdr-pairing:abc:exp:17\r",
        "ssh-ed25519 AAAA herdr-pairing:abc:exp:17\u{b}",
        "ssh-ed25519 AAAA xherdr-pairing:abc:exp:17",
        "ssh-ed25519 AAAA herdr-pairing:abc:exp:17 more",
        "ssh-ed25519 AAAA herdr-pairing:a_c:exp:17",
        "ssh-ed25519 AAAA herdr-pairing::exp:17",
        "ssh-ed25519 AAAA herdr-pairing:abc:exp:",
        "ssh-ed25519 AAAA user@host",
        "",
    ];

    #[test]
    fn a_line_is_a_leftover_exactly_when_pairing_finds_its_marker() {
        let now = 1_800_000_000;
        for line in MARKER_EDGE_LINES {
            let (expired, live) = bootstrap_line_counts(line, now);
            let marker = authorized_keys::marker_of(line.as_bytes());
            assert_eq!(expired + live, usize::from(marker.is_some()), "{line:?}");
            assert_eq!(
                expired == 1,
                marker.is_some_and(|m| m.has_expired(now)),
                "{line:?}"
            );
        }
    }

    #[test]
    fn a_vertical_tab_separates_the_marker_and_long_digits_never_expire() {
        let now = 1_800_000_000;
        // sshd splits words on any blank, and the popup's sweep with it: a
        // marker after a vertical tab is a Bootstrap Key line (expired at 5).
        assert_eq!(
            bootstrap_line_counts("ssh-ed25519 AAAA\u{b}herdr-pairing:vt:exp:5\n", now),
            (1, 0)
        );
        // An expiry past u64 saturates: the line is live, never swept.
        assert_eq!(
            bootstrap_line_counts(
                "ssh-ed25519 AAAA herdr-pairing:big:exp:99999999999999999999999\n",
                now
            ),
            (0, 1)
        );
        let file = MARKER_EDGE_LINES.join("\n");
        let lines = authorized_keys::split_lines(file.as_bytes());
        let swept = authorized_keys::sweep_expired(&lines, now as i64)
            .map_or(0, |kept| lines.len() - kept.len());
        assert_eq!(bootstrap_line_counts(&file, now).0, swept);
    }
}
