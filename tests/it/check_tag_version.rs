//! The release workflow's tag/version gate (.github/scripts/check-tag-version.sh),
//! run under dash on the real files and on copies with one version changed.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const VERSION: &str = env!("CARGO_PKG_VERSION");
const FILES: &[&str] = &[
    ".github/scripts/check-tag-version.sh",
    "Cargo.toml",
    "herdr-plugin.toml",
    "test-vectors/plugin-version-v1.json",
];

fn shell() -> &'static str {
    if Path::new("/usr/bin/dash").exists() || Path::new("/bin/dash").exists() {
        "dash"
    } else {
        "sh"
    }
}

fn run_in(root: &Path, tag: Option<&str>) -> Output {
    let output = Command::new(shell())
        .arg(root.join(".github/scripts/check-tag-version.sh"))
        .args(tag)
        .output()
        .unwrap();
    println!(
        "tag {tag:?}: status {:?} {}{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// A copy of the files the script reads, removed with everything in it when
/// dropped (also when the test panics).
struct Copy(PathBuf);

impl Drop for Copy {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A copy of the files the script reads, with `edit` applied to one of them.
fn copy_with(name: &str, file: &str, edit: impl Fn(String) -> String) -> Copy {
    let root = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("check-tag-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let copy = Copy(root.clone());
    for rel in FILES {
        let from = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
        let to = root.join(rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        let text = std::fs::read_to_string(from).unwrap();
        let text = if *rel == file { edit(text) } else { text };
        std::fs::write(to, text).unwrap();
    }
    copy
}

#[test]
fn the_checkout_agrees_with_its_own_tag() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    assert!(run_in(root, Some(&format!("v{VERSION}"))).status.success());
    assert!(run_in(root, None).status.success());
}

#[test]
fn a_different_tag_is_refused() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for tag in [
        VERSION.to_owned(),
        "v0.0.1".to_owned(),
        format!("v{VERSION}-rc1"),
    ] {
        let output = run_in(root, Some(&tag));
        assert!(!output.status.success(), "{tag} accepted");
        assert!(String::from_utf8_lossy(&output.stderr).contains(&format!("tag \"{tag}\"")));
    }
}

#[test]
fn any_file_with_another_version_is_refused() {
    let bumped = |text: String| text.replacen(VERSION, "9.9.9", 1);
    for file in [
        "Cargo.toml",
        "herdr-plugin.toml",
        "test-vectors/plugin-version-v1.json",
    ] {
        let copy = copy_with(&file.replace('/', "-"), file, bumped);
        let output = run_in(&copy.0, Some(&format!("v{VERSION}")));
        assert!(!output.status.success(), "{file} bump not noticed");
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(stderr.contains("9.9.9"), "{stderr}");
    }
}
