//! `heeler link` as a person runs it: the real binary over a scratch HOME,
//! under umask 000, linking `~/.local/bin/heeler` to itself; refusing a
//! file of the person's own and a directory another user can write.

use crate::usage_fixture::temp_dir;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

const HEELER: &str = env!("CARGO_BIN_EXE_heeler");

/// `heeler link` with HOME=`home` and PATH=`path`, under umask 000.
fn link(home: &Path, path: &str) -> Output {
    Command::new("/bin/sh")
        .arg("-c")
        .arg("umask 000; exec \"$0\" link")
        .arg(HEELER)
        .env_clear()
        .env("HOME", home)
        .env("PATH", path)
        .output()
        .unwrap()
}

fn mode_of(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

#[test]
fn links_itself_into_a_private_local_bin_and_says_whether_it_is_on_path() {
    let scratch = temp_dir("link");
    let home = scratch.join("home");
    std::fs::create_dir(&home).unwrap();
    let exe = Path::new(HEELER).canonicalize().unwrap();
    let bin = home.join(".local/bin");
    let output = link(&home, "/usr/bin:/bin");
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        format!(
            "heeler link: linked {0}/heeler to {1}; {0} is not on PATH: add it (export PATH=\"$HOME/.local/bin:$PATH\" in your shell's profile), or run {0}/heeler\n",
            bin.display(),
            exe.display()
        )
    );
    assert_eq!(mode_of(&home.join(".local")), 0o755);
    assert_eq!(mode_of(&bin), 0o755);
    assert_eq!(std::fs::read_link(bin.join("heeler")).unwrap(), exe);
    let ran = Command::new(bin.join("heeler"))
        .arg("--version")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&ran.stdout).starts_with("heeler "));
    // Again with ~/.local/bin on PATH: nothing to do, and it says so.
    let output = link(&home, &format!("/usr/bin:{}", bin.display()));
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        format!(
            "heeler link: already linked {}/heeler to {}: run heeler from a shell\n",
            bin.display(),
            exe.display()
        )
    );
    // An old link (an earlier install elsewhere) is replaced by rename.
    std::fs::remove_file(bin.join("heeler")).unwrap();
    std::os::unix::fs::symlink(&scratch, bin.join("heeler")).unwrap();
    assert!(link(&home, "/bin").status.success());
    assert_eq!(std::fs::read_link(bin.join("heeler")).unwrap(), exe);
    let names: Vec<_> = std::fs::read_dir(&bin).unwrap().collect();
    assert_eq!(names.len(), 1, "{names:?}");
}

#[test]
fn a_file_of_the_person_s_or_a_shared_directory_is_refused() {
    let scratch = temp_dir("link-refused");
    let home = scratch.join("home");
    let bin = home.join(".local/bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(bin.join("heeler"), "mine").unwrap();
    let output = link(&home, "/bin");
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    assert!(
        String::from_utf8_lossy(&output.stderr)
            .contains("exists and is not a link; it is left alone"),
        "{output:?}"
    );
    assert_eq!(std::fs::read_to_string(bin.join("heeler")).unwrap(), "mine");

    std::fs::remove_file(bin.join("heeler")).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o777)).unwrap();
    let output = link(&home, "/bin");
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("is writable by group or others") && stderr.contains("nothing was linked"),
        "{stderr}"
    );
    assert!(std::fs::symlink_metadata(bin.join("heeler")).is_err());
}
