//! The snapshot refresh against a real file system: source resolution,
//! caching (reuse without parsing or writing, re-parse of diagnosed
//! snapshots, rewrite only on change), rebuilds, read errors, file modes,
//! and the `heeler sidebar-hook` command.

use crate::common;

use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, SystemTime};

use heeler::base::json::{self, Value};
use heeler::sidebar::snapshot::{self, Action, SourceEnv};

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("heeler-sidebar-{}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn explicit(path: &Path) -> SourceEnv {
    SourceEnv {
        herdr_config_path: Some(path.into()),
        ..SourceEnv::default()
    }
}

/// Writes the source and pins its mtime, so "changed" never depends on the
/// clock's resolution.
fn write_source(path: &Path, text: &str, mtime_secs: u64) {
    fs::write(path, text).unwrap();
    set_mtime(path, mtime_secs);
}

fn set_mtime(path: &Path, mtime_secs: u64) {
    let file = fs::File::options().write(true).open(path).unwrap();
    file.set_modified(SystemTime::UNIX_EPOCH + Duration::from_millis(mtime_secs * 1000 + 250))
        .unwrap();
}

fn on_disk(config_dir: &Path) -> Value {
    let text = fs::read_to_string(config_dir.join("sidebar.json")).unwrap();
    assert!(text.ends_with("}\n"), "content is JSON + newline");
    json::parse(&text).unwrap()
}

/// The identity of the snapshot file: a rewrite (temp + rename) changes
/// the inode, and its content and mtime.
fn identity(config_dir: &Path) -> (u64, i64, i64, Vec<u8>) {
    let path = config_dir.join("sidebar.json");
    let meta = fs::metadata(&path).unwrap();
    (
        meta.ino(),
        meta.mtime(),
        meta.mtime_nsec(),
        fs::read(&path).unwrap(),
    )
}

fn diagnostics(snapshot: &Value) -> Vec<String> {
    snapshot
        .get("diagnostics")
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_str().unwrap().to_owned())
        .collect()
}

fn sort(snapshot: &Value) -> &str {
    snapshot.get("agent_panel_sort").unwrap().as_str().unwrap()
}

fn no_temp_files(config_dir: &Path) {
    let names: Vec<String> = fs::read_dir(config_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.iter().all(|n| !n.contains(".tmp")),
        "temp files left: {names:?}"
    );
}

#[test]
fn source_path_precedence() {
    let env = SourceEnv {
        herdr_config_path: Some("/x/explicit.toml".into()),
        xdg_config_home: Some("/xdg".into()),
        home: Some("/home/u".into()),
        tmpdir: "/tmp".into(),
    };
    assert_eq!(snapshot::source_path(&env), Path::new("/x/explicit.toml"));
    let empty_explicit = SourceEnv {
        herdr_config_path: Some(OsString::new()),
        ..env.clone()
    };
    assert_eq!(snapshot::source_path(&empty_explicit), Path::new(""));
    let xdg = SourceEnv {
        herdr_config_path: None,
        ..env.clone()
    };
    assert_eq!(
        snapshot::source_path(&xdg),
        Path::new("/xdg/herdr/config.toml")
    );
    let home = SourceEnv {
        xdg_config_home: None,
        ..xdg.clone()
    };
    assert_eq!(
        snapshot::source_path(&home),
        Path::new("/home/u/.config/herdr/config.toml")
    );
    let nothing = SourceEnv {
        home: None,
        ..home.clone()
    };
    assert_eq!(
        snapshot::source_path(&nothing),
        Path::new("/tmp/herdr/config.toml")
    );
    // Node's path.join normalizes the joined forms.
    let messy = SourceEnv {
        xdg_config_home: Some("/a//b/./c/../".into()),
        ..xdg.clone()
    };
    assert_eq!(
        snapshot::source_path(&messy),
        Path::new("/a/b/herdr/config.toml")
    );
    let empty_xdg = SourceEnv {
        xdg_config_home: Some(OsString::new()),
        ..xdg
    };
    assert_eq!(
        snapshot::source_path(&empty_xdg),
        Path::new("herdr/config.toml")
    );
}

#[test]
fn node_tmpdir_rules() {
    let env = |pairs: &'static [(&'static str, &'static str)]| {
        move |name: &str| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| OsString::from(v))
        }
    };
    assert_eq!(snapshot::node_tmpdir(env(&[])), Path::new("/tmp"));
    assert_eq!(
        snapshot::node_tmpdir(env(&[("TMPDIR", ""), ("TMP", "/t/")])),
        Path::new("/t")
    );
    assert_eq!(
        snapshot::node_tmpdir(env(&[("TEMP", "/e"), ("TMPDIR", "/d")])),
        Path::new("/d")
    );
    assert_eq!(
        snapshot::node_tmpdir(env(&[("TMPDIR", "/")])),
        Path::new("/")
    );
}

#[test]
fn missing_source_gives_defaults_and_is_reused() {
    let root = TempDir::new();
    let config_dir = root.path().join("config");
    let env = explicit(&root.path().join("absent.toml"));
    let first = snapshot::refresh(&config_dir, &env, 100).unwrap();
    assert_eq!(first.action, Action::Written);
    let snapshot = on_disk(&config_dir);
    let source = snapshot.get("source").unwrap();
    assert_eq!(source.get("found"), Some(&Value::Bool(false)));
    assert_eq!(source.get("mtime_ms"), Some(&Value::Null));
    assert!(diagnostics(&snapshot).is_empty());
    assert_eq!(snapshot.get("generated_at").unwrap().as_i64(), Some(100));
    let before = identity(&config_dir);
    let second = snapshot::refresh(&config_dir, &env, 200).unwrap();
    assert_eq!(second.action, Action::Reused);
    assert_eq!(identity(&config_dir), before, "no write when unchanged");
    assert_eq!(
        second.snapshot.get("generated_at").unwrap().as_i64(),
        Some(100)
    );
}

#[test]
fn clean_snapshot_reused_until_mtime_changes() {
    let root = TempDir::new();
    let config_dir = root.path().join("config");
    let source = root.path().join("config.toml");
    write_source(
        &source,
        "[ui]\nagent_panel_sort = \"priority\"\n",
        1_700_000_000,
    );
    let env = explicit(&source);
    assert_eq!(
        snapshot::refresh(&config_dir, &env, 10).unwrap().action,
        Action::Written
    );
    let snapshot = on_disk(&config_dir);
    assert_eq!(sort(&snapshot), "priority");
    assert_eq!(
        snapshot
            .get("source")
            .unwrap()
            .get("mtime_ms")
            .unwrap()
            .to_json(),
        "1700000000250"
    );
    let before = identity(&config_dir);
    for now in [11, 12, 13] {
        let again = snapshot::refresh(&config_dir, &env, now).unwrap();
        assert_eq!(again.action, Action::Reused);
        assert_eq!(again.snapshot, snapshot);
    }
    assert_eq!(identity(&config_dir), before);

    // A content change that keeps the mtime is not seen (spec: only path,
    // existence and mtime are compared).
    write_source(
        &source,
        "[ui]\nagent_panel_sort = \"spaces\"\n",
        1_700_000_000,
    );
    assert_eq!(
        snapshot::refresh(&config_dir, &env, 14).unwrap().action,
        Action::Reused
    );
    assert_eq!(identity(&config_dir), before);

    // A new mtime is a new source: parsed and rewritten.
    set_mtime(&source, 1_700_000_001);
    let changed = snapshot::refresh(&config_dir, &env, 15).unwrap();
    assert_eq!(changed.action, Action::Written);
    let snapshot = on_disk(&config_dir);
    assert_eq!(sort(&snapshot), "spaces");
    assert_eq!(snapshot.get("generated_at").unwrap().as_i64(), Some(15));
    assert_ne!(identity(&config_dir).0, before.0, "replaced by rename");
    no_temp_files(&config_dir);
}

#[test]
fn fractional_mtime_round_trips_through_the_snapshot() {
    let root = TempDir::new();
    let config_dir = root.path().join("config");
    let source = root.path().join("config.toml");
    fs::write(&source, "").unwrap();
    let file = fs::File::options().write(true).open(&source).unwrap();
    file.set_modified(SystemTime::UNIX_EPOCH + Duration::new(1_757_039_000, 123_456_789))
        .unwrap();
    drop(file);
    let env = explicit(&source);
    snapshot::refresh(&config_dir, &env, 1).unwrap();
    let meta = fs::metadata(&source).unwrap();
    let expected = meta.mtime() as f64 * 1000.0 + meta.mtime_nsec() as f64 / 1e6;
    let recorded = on_disk(&config_dir)
        .get("source")
        .unwrap()
        .get("mtime_ms")
        .unwrap()
        .clone();
    assert_eq!(recorded.as_f64(), Some(expected));
    if meta.mtime_nsec() != 0 {
        assert!(recorded.to_json().contains('.'), "fractional milliseconds");
    } else {
        common::skip_part_for_machine("fractional part (file system keeps whole-second mtimes)");
    }
    assert_eq!(
        snapshot::refresh(&config_dir, &env, 2).unwrap().action,
        Action::Reused
    );
}

/// Seventeen-digit mtimes must survive the JSON round trip exactly, or a
/// clean snapshot would be rewritten at every refresh.
#[test]
fn many_fractional_mtimes_are_reused() {
    let root = TempDir::new();
    let config_dir = root.path().join("config");
    let source = root.path().join("config.toml");
    fs::write(&source, "[ui]\nagent_panel_sort = \"priority\"\n").unwrap();
    let env = explicit(&source);
    let diagnosed_dir = root.path().join("config-diagnosed");
    let broken = root.path().join("broken.toml");
    fs::write(&broken, "[ui\n").unwrap();
    let broken_env = explicit(&broken);
    let mut state: u64 = 0x1234_5678_9ABC_DEF1;
    let mut checked = 0;
    for _ in 0..60 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let secs = 1_600_000_000 + state % 200_000_000;
        let nanos = (state >> 20) as u32 % 1_000_000_000;
        let file = fs::File::options().write(true).open(&source).unwrap();
        file.set_modified(SystemTime::UNIX_EPOCH + Duration::new(secs, nanos))
            .unwrap();
        drop(file);
        snapshot::refresh(&config_dir, &env, 1).unwrap();
        let again = snapshot::refresh(&config_dir, &env, 2).unwrap();
        assert_eq!(again.action, Action::Reused, "mtime {secs}.{nanos:09}");
        // A diagnosed snapshot with the same mtime is re-parsed and kept.
        let file = fs::File::options().write(true).open(&broken).unwrap();
        file.set_modified(SystemTime::UNIX_EPOCH + Duration::new(secs, nanos))
            .unwrap();
        drop(file);
        snapshot::refresh(&diagnosed_dir, &broken_env, 1).unwrap();
        let again = snapshot::refresh(&diagnosed_dir, &broken_env, 2).unwrap();
        assert_eq!(again.action, Action::Unchanged, "mtime {secs}.{nanos:09}");
        checked += 1;
    }
    println!("fractional mtimes reused: {checked}");
}

#[test]
fn diagnosed_snapshot_is_reparsed_and_rewritten_only_on_change() {
    let root = TempDir::new();
    let config_dir = root.path().join("config");
    let source = root.path().join("config.toml");
    write_source(&source, "[ui\n", 1_700_000_000);
    let env = explicit(&source);
    assert_eq!(
        snapshot::refresh(&config_dir, &env, 10).unwrap().action,
        Action::Written
    );
    assert_eq!(diagnostics(&on_disk(&config_dir)), ["parse_error"]);
    let before = identity(&config_dir);
    let again = snapshot::refresh(&config_dir, &env, 20).unwrap();
    assert_eq!(again.action, Action::Unchanged, "re-parsed, same result");
    assert_eq!(identity(&config_dir), before, "not rewritten");
    assert_eq!(
        again.snapshot.get("generated_at").unwrap().as_i64(),
        Some(10)
    );

    // An older plugin rejected a layout this one accepts (letta, machine,
    // rules): the next refresh replaces it without a config edit.
    write_source(
        &source,
        "[ui.sidebar.agents]\nrows = [[\"machine\"]]\n[ui.sidebar.agents.rows_by_agent]\nletta = [[\"agent\"]]\n",
        1_700_000_000,
    );
    let mut older = on_disk(&config_dir);
    older.as_object_mut().unwrap().insert(
        "diagnostics",
        Value::Array(vec![Value::from("invalid_token")]),
    );
    fs::write(config_dir.join("sidebar.json"), older.to_json() + "\n").unwrap();
    let replaced = snapshot::refresh(&config_dir, &env, 30).unwrap();
    assert_eq!(replaced.action, Action::Written);
    let snapshot = on_disk(&config_dir);
    assert!(diagnostics(&snapshot).is_empty());
    assert_eq!(
        snapshot.get("sidebar").unwrap().to_json(),
        r#"{"agents":{"row_gap":0,"rows":[[{"token":"machine"}]],"rows_by_agent":{"letta":[[{"token":"agent"}]]}}}"#
    );
    assert_eq!(
        snapshot::refresh(&config_dir, &env, 40).unwrap().action,
        Action::Reused
    );
}

#[test]
fn missing_corrupt_or_unsupported_snapshots_are_rebuilt() {
    let root = TempDir::new();
    let config_dir = root.path().join("config");
    let source = root.path().join("config.toml");
    write_source(
        &source,
        "[ui]\nagent_panel_sort = \"priority\"\n",
        1_700_000_000,
    );
    let env = explicit(&source);
    snapshot::refresh(&config_dir, &env, 1).unwrap();
    let good = on_disk(&config_dir);
    let destination = config_dir.join("sidebar.json");
    let mut unsupported = good.clone();
    unsupported
        .as_object_mut()
        .unwrap()
        .insert("v", Value::from(2u64));
    let mut rowless = good.clone();
    rowless
        .as_object_mut()
        .unwrap()
        .insert("sidebar", Value::from(json::Object::new()));
    let mut other_path = good.clone();
    other_path
        .as_object_mut()
        .unwrap()
        .get_mut("source")
        .unwrap()
        .as_object_mut()
        .unwrap()
        .insert("path", Value::from("/elsewhere/config.toml"));
    for broken in [
        None,
        Some("".to_owned()),
        Some("{not json".to_owned()),
        Some("[]".to_owned()),
        Some(unsupported.to_json()),
        Some(rowless.to_json()),
        Some(other_path.to_json()),
    ] {
        match &broken {
            None => fs::remove_file(&destination).unwrap(),
            Some(text) => fs::write(&destination, text).unwrap(),
        }
        let refreshed = snapshot::refresh(&config_dir, &env, 2).unwrap();
        assert_eq!(refreshed.action, Action::Written, "{broken:?}");
        assert_eq!(sort(&on_disk(&config_dir)), "priority");
    }
}

#[test]
fn creation_deletion_and_path_changes_invalidate() {
    let root = TempDir::new();
    let config_dir = root.path().join("config");
    let source = root.path().join("config.toml");
    let env = explicit(&source);
    snapshot::refresh(&config_dir, &env, 1).unwrap();
    assert_eq!(sort(&on_disk(&config_dir)), "spaces");
    write_source(
        &source,
        "[ui]\nagent_panel_sort = \"priority\"\n",
        1_700_000_000,
    );
    assert_eq!(
        snapshot::refresh(&config_dir, &env, 2).unwrap().action,
        Action::Written
    );
    assert_eq!(sort(&on_disk(&config_dir)), "priority");
    let other = root.path().join("other.toml");
    write_source(
        &other,
        "[ui]\nagent_panel_sort = \"spaces\"\n",
        1_700_000_000,
    );
    assert_eq!(
        snapshot::refresh(&config_dir, &explicit(&other), 3)
            .unwrap()
            .action,
        Action::Written
    );
    assert_eq!(sort(&on_disk(&config_dir)), "spaces");
    snapshot::refresh(&config_dir, &env, 4).unwrap();
    assert_eq!(sort(&on_disk(&config_dir)), "priority");
    fs::remove_file(&source).unwrap();
    assert_eq!(
        snapshot::refresh(&config_dir, &env, 5).unwrap().action,
        Action::Written
    );
    let snapshot = on_disk(&config_dir);
    assert_eq!(sort(&snapshot), "spaces");
    assert_eq!(
        snapshot.get("source").unwrap().get("found"),
        Some(&Value::Bool(false))
    );
}

#[test]
fn read_errors_are_diagnosed_and_retried() {
    let root = TempDir::new();
    let config_dir = root.path().join("config");
    // Stats fine, cannot be read as a file: found, mtime kept, read_error.
    let source = root.path().join("config.toml");
    fs::create_dir(&source).unwrap();
    let env = explicit(&source);
    snapshot::refresh(&config_dir, &env, 1).unwrap();
    let snapshot = on_disk(&config_dir);
    assert_eq!(diagnostics(&snapshot), ["read_error"]);
    let recorded = snapshot.get("source").unwrap();
    assert_eq!(recorded.get("found"), Some(&Value::Bool(true)));
    assert!(recorded.get("mtime_ms").unwrap().as_f64().is_some());
    // Retried at the next refresh: once readable, the layout is exported.
    fs::remove_dir(&source).unwrap();
    write_source(
        &source,
        "[ui]\nagent_panel_sort = \"priority\"\n",
        1_700_000_000,
    );
    snapshot::refresh(&config_dir, &env, 2).unwrap();
    let snapshot = on_disk(&config_dir);
    assert!(diagnostics(&snapshot).is_empty());
    assert_eq!(sort(&snapshot), "priority");

    // A FIFO would block a read forever: read_error without reading.
    let fifo = root.path().join("fifo.toml");
    let made = Command::new("mkfifo").arg(&fifo).status();
    if made.is_ok_and(|status| status.success()) {
        snapshot::refresh(&config_dir, &explicit(&fifo), 3).unwrap();
        let snapshot = on_disk(&config_dir);
        assert_eq!(diagnostics(&snapshot), ["read_error"]);
        assert_eq!(
            snapshot.get("source").unwrap().get("found"),
            Some(&Value::Bool(true))
        );
    } else {
        common::skip("FIFO source (mkfifo is not available)");
    }
    // Only a regular file is read: a device may never end (/dev/zero) or
    // block (a terminal), so it is a read_error without reading, even one
    // that happens to be empty.
    for device in ["/dev/zero", "/dev/null"] {
        let started = std::time::Instant::now();
        snapshot::refresh(&config_dir, &explicit(Path::new(device)), 3).unwrap();
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        let snapshot = on_disk(&config_dir);
        assert_eq!(diagnostics(&snapshot), ["read_error"], "{device}");
        assert_eq!(
            snapshot.get("source").unwrap().get("found"),
            Some(&Value::Bool(true))
        );
    }
    // A regular file too large to be a herdr config is not read whole.
    let huge = root.path().join("huge.toml");
    let mut text = "#".repeat(snapshot::MAX_SOURCE_BYTES as usize);
    write_source(&huge, &text, 1_700_000_000);
    snapshot::refresh(&config_dir, &explicit(&huge), 3).unwrap();
    assert!(diagnostics(&on_disk(&config_dir)).is_empty(), "at the cap");
    text.push('#');
    write_source(&huge, &text, 1_700_000_001);
    snapshot::refresh(&config_dir, &explicit(&huge), 3).unwrap();
    assert_eq!(diagnostics(&on_disk(&config_dir)), ["read_error"]);

    // A stat failure other than ENOENT: not found, no mtime, read_error.
    let blocked = root.path().join("file-not-dir");
    fs::write(&blocked, "").unwrap();
    let env = explicit(&blocked.join("config.toml"));
    snapshot::refresh(&config_dir, &env, 3).unwrap();
    let snapshot = on_disk(&config_dir);
    assert_eq!(diagnostics(&snapshot), ["read_error"]);
    let recorded = snapshot.get("source").unwrap();
    assert_eq!(recorded.get("found"), Some(&Value::Bool(false)));
    assert_eq!(recorded.get("mtime_ms"), Some(&Value::Null));
    // Nothing changed: retried, same result, not rewritten.
    let before = identity(&config_dir);
    assert_eq!(
        snapshot::refresh(&config_dir, &env, 4).unwrap().action,
        Action::Unchanged
    );
    assert_eq!(identity(&config_dir), before);
}

#[test]
fn file_and_directory_modes() {
    let root = TempDir::new();
    let config_dir = root.path().join("new/plugin-config");
    let env = explicit(&root.path().join("absent.toml"));
    snapshot::refresh(&config_dir, &env, 1).unwrap();
    let dir_mode = fs::metadata(&config_dir).unwrap().permissions().mode() & 0o777;
    let parent_mode = fs::metadata(root.path().join("new"))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    let destination = config_dir.join("sidebar.json");
    let file_mode = fs::metadata(&destination).unwrap().permissions().mode() & 0o777;
    assert_eq!(dir_mode, 0o700);
    assert_eq!(parent_mode, 0o700);
    assert_eq!(file_mode, 0o600);
    // A wider existing snapshot is replaced by a 0600 one.
    fs::write(&destination, "corrupt").unwrap();
    fs::set_permissions(&destination, fs::Permissions::from_mode(0o644)).unwrap();
    snapshot::refresh(&config_dir, &env, 2).unwrap();
    let file_mode = fs::metadata(&destination).unwrap().permissions().mode() & 0o777;
    assert_eq!(file_mode, 0o600);
    // An existing config dir keeps its mode.
    fs::set_permissions(&config_dir, fs::Permissions::from_mode(0o750)).unwrap();
    fs::remove_file(&destination).unwrap();
    snapshot::refresh(&config_dir, &env, 3).unwrap();
    let dir_mode = fs::metadata(&config_dir).unwrap().permissions().mode() & 0o777;
    assert_eq!(dir_mode, 0o750);
    no_temp_files(&config_dir);
}

#[test]
fn write_failure_is_an_error_with_an_errno_code() {
    let root = TempDir::new();
    let not_a_dir = root.path().join("plain-file");
    fs::write(&not_a_dir, "x").unwrap();
    let error =
        snapshot::refresh(&not_a_dir, &explicit(&root.path().join("a.toml")), 1).unwrap_err();
    assert!(
        ["EEXIST", "ENOTDIR"].contains(&error.code()),
        "{}",
        error.code()
    );
    assert_eq!(fs::read(&not_a_dir).unwrap(), b"x");
}

fn heeler(envs: &[(&str, &OsString)]) -> std::process::Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_heeler"));
    command.arg("sidebar-hook").env_clear();
    for (key, value) in envs {
        command.env(key, value);
    }
    command.output().unwrap()
}

#[test]
fn sidebar_hook_command() {
    let root = TempDir::new();
    let output = heeler(&[]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "sidebar-hook: HERDR_PLUGIN_CONFIG_DIR is not set\n"
    );
    assert!(output.stdout.is_empty());

    // Startup needs nothing else: no event JSON, state dir or herdr binary.
    let home = root.path().join("home");
    fs::create_dir_all(home.join(".config/herdr")).unwrap();
    fs::write(
        home.join(".config/herdr/config.toml"),
        "[ui.sidebar.agents]\nrows = [[\"machine\", \"agent\"]]\n",
    )
    .unwrap();
    let config_dir = root.path().join("plugin-config");
    let output = heeler(&[
        (
            "HERDR_PLUGIN_CONFIG_DIR",
            &config_dir.clone().into_os_string(),
        ),
        ("HOME", &home.clone().into_os_string()),
    ]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert!(output.stderr.is_empty());
    let snapshot = on_disk(&config_dir);
    assert_eq!(
        snapshot
            .get("source")
            .unwrap()
            .get("path")
            .unwrap()
            .as_str(),
        Some(home.join(".config/herdr/config.toml").to_str().unwrap())
    );
    assert_eq!(
        snapshot
            .get("sidebar")
            .unwrap()
            .get("agents")
            .unwrap()
            .get("rows")
            .unwrap()
            .to_json(),
        r#"[[{"token":"machine"},{"token":"agent"}]]"#
    );

    // A snapshot that cannot be written: one line, exit 1.
    let blocker = root.path().join("blocker");
    fs::write(&blocker, "").unwrap();
    let output = heeler(&[(
        "HERDR_PLUGIN_CONFIG_DIR",
        &blocker.join("sub").into_os_string(),
    )]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr, "sidebar-hook: ENOTDIR\n");
}
