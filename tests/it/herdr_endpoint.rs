//! The v2 launcher against a stand-in herdr: written under a staging name,
//! tested from a minimal environment, moved into place only when it passes.

use crate::scratch;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use heeler::pair::endpoint::{Launcher, prepare, test_launcher};

fn scratch(name: &str) -> scratch::TempDir {
    scratch::TempDir::new(&format!("heeler-endpoint-{name}"))
}

/// A stand-in herdr whose `plugin config-dir` prints `answer` (and `extra`
/// shell code runs first).
fn fake_herdr(dir: &Path, answer: &Path, extra: &str) -> PathBuf {
    let path = dir.join("herdr");
    let script = format!(
        "#!/bin/sh\n{extra}\nif [ \"$1 $2 $3\" = \"plugin config-dir heeler\" ] && [ -n \"$HERDR_SOCKET_PATH\" ]; then printf '%s\\n' '{}'; exit 0; fi\necho \"unexpected: $*\" >&2\nexit 3\n",
        answer.display()
    );
    crate::support::write_executable(&path, script).unwrap();
    path
}

fn config_dir(root: &Path) -> PathBuf {
    let dir = root.join("config/herdr/plugins/config/heeler");
    fs::create_dir_all(&dir).unwrap();
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).unwrap();
    dir
}

const SOCK: &str = "/srv/app/config/herdr/herdr.sock";

#[test]
fn generated_launcher_is_tested_then_moved_into_place() {
    let root = scratch("ok");
    let config = config_dir(&root);
    let herdr = fake_herdr(&root, &config, "");
    let launcher = Launcher::Generated {
        path: config.join("launcher"),
        herdr_bin: herdr.to_string_lossy().into_owned(),
    };
    let endpoint = prepare(SOCK, &config, &launcher, "heeler", &root).unwrap();
    assert_eq!(endpoint.sock, SOCK);
    assert_eq!(endpoint.herdr, config.join("launcher").to_string_lossy());
    let meta = fs::metadata(config.join("launcher")).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o700);
    let script = fs::read_to_string(config.join("launcher")).unwrap();
    assert!(script.contains("export PATH="), "{script}");
    assert!(!script.contains("HERDR_SOCKET_PATH"), "{script}");
    let leftovers: Vec<_> = fs::read_dir(&config)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "launcher")
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    fs::remove_dir_all(&root).unwrap();
}

#[test]
fn failing_launcher_keeps_the_previous_one() {
    let root = scratch("fail");
    let config = config_dir(&root);
    fs::write(config.join("launcher"), "previous").unwrap();
    let herdr = fake_herdr(&root, Path::new("/somewhere/else"), "");
    let launcher = Launcher::Generated {
        path: config.join("launcher"),
        herdr_bin: herdr.to_string_lossy().into_owned(),
    };
    let why = prepare(SOCK, &config, &launcher, "heeler", &root).unwrap_err();
    assert!(why.contains("failed its test run"), "{why}");
    assert!(why.contains("/somewhere/else"), "{why}");
    assert!(why.ends_with("No Pairing Code offered."), "{why}");
    assert_eq!(
        fs::read_to_string(config.join("launcher")).unwrap(),
        "previous"
    );
    assert_eq!(fs::read_dir(&config).unwrap().count(), 1);
    fs::remove_dir_all(&root).unwrap();
}

#[test]
fn stderr_output_or_a_bad_exit_fails_the_test() {
    let root = scratch("stderr");
    let config = config_dir(&root);
    let noisy = fake_herdr(&root, &config, "echo hello >&2");
    let why = test_launcher(&noisy, SOCK, "heeler", &config, &root).unwrap_err();
    assert!(why.contains("stderr (hello)"), "{why}");
    let missing = root.join("nope");
    let why = test_launcher(&missing, SOCK, "heeler", &config, &root).unwrap_err();
    assert!(why.contains("exit status 127"), "{why}");
    fs::remove_dir_all(&root).unwrap();
}

#[test]
fn configured_launcher_is_tested_not_written() {
    let root = scratch("configured");
    let config = config_dir(&root);
    let herdr = fake_herdr(&root, &config, "");
    let path = herdr.to_string_lossy().into_owned();
    let endpoint = prepare(
        SOCK,
        &config,
        &Launcher::Configured(path.clone()),
        "heeler",
        &root,
    )
    .unwrap();
    assert_eq!(endpoint.herdr, path);
    assert!(!config.join("launcher").exists());
    fs::remove_dir_all(&root).unwrap();
}

#[test]
fn config_dir_writable_by_others_is_refused() {
    let root = scratch("shared");
    let config = config_dir(&root);
    fs::set_permissions(&config, fs::Permissions::from_mode(0o777)).unwrap();
    let herdr = fake_herdr(&root, &config, "");
    let launcher = Launcher::Generated {
        path: config.join("launcher"),
        herdr_bin: herdr.to_string_lossy().into_owned(),
    };
    let why = prepare(SOCK, &config, &launcher, "heeler", &root).unwrap_err();
    assert!(why.contains("writable by other users"), "{why}");
    assert!(!config.join("launcher").exists());
    fs::remove_dir_all(&root).unwrap();
}
