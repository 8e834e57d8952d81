//! A state or config dir another user can write to is not trusted: no
//! command takes a program search path, a pending record or a hook's state
//! from it, and a FIFO planted at a state path never hangs a command.
//!
//! The tests plant as the attacker would (a world-writable or foreign-owned
//! dir), run the real binary as the victim, and check that nothing planted
//! ran and that each command refuses or reports as documented.

use crate::common;
use crate::support;

use std::fs;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use heeler::base::json::{self, Value};
use support::TempDir;

fn heeler_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_heeler"))
}

fn chmod(path: &Path, mode: u32) {
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

/// Waits for `child` up to `limit`, killing it past that (a test failure).
fn wait_within(mut child: Child, limit: Duration) -> Output {
    let deadline = Instant::now() + limit;
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("heeler did not answer within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A `codex` and a `claude` that leave `marker` behind when run.
fn plant_agents(bin: &Path, marker: &Path) {
    fs::create_dir_all(bin).unwrap();
    for name in ["codex", "claude"] {
        let path = bin.join(name);
        crate::support::write_executable(
            &path,
            format!("#!/bin/sh\necho {name} >> '{}'\n", marker.display()),
        )
        .unwrap();
    }
}

/// A runtime record as the hooks write it, with `path` as herdr's PATH.
fn plant_runtime(state: &Path, path: &Path, home: &Path) {
    let runtime = heeler::usage::runtime::record_value(
        Some(&heeler_bin()),
        &|k| match k {
            "PATH" => Some(path.display().to_string()),
            "HOME" => Some(home.display().to_string()),
            _ => None,
        },
        1_795_953_600,
    );
    fs::create_dir_all(state.join("usage")).unwrap();
    fs::write(state.join("usage/runtime-v1.json"), runtime.to_json()).unwrap();
}

fn query(home: &Path, state: &Path, args: &[&str]) -> Value {
    let out = Command::new(heeler_bin())
        .args(["usage", "query"])
        .args(args)
        .env_clear()
        .env("HOME", home)
        .env("HERDR_PLUGIN_STATE_DIR", state)
        .env("PATH", "/nonexistent")
        .env("TZ", "UTC")
        .output()
        .unwrap();
    assert!(out.status.success());
    json::parse(String::from_utf8(out.stdout).unwrap().trim()).unwrap()
}

fn refresh_state(answer: &Value) -> String {
    answer
        .get("refresh")
        .and_then(|r| r.get("state"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn error_codes(answer: &Value) -> Vec<String> {
    answer
        .get("errors")
        .and_then(Value::as_array)
        .map(|errors| {
            errors
                .iter()
                .filter_map(|e| e.get("code").and_then(Value::as_str).map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Runs a query that starts the worker and waits for the refresh to end.
fn query_until_idle(home: &Path, state: &Path) -> Value {
    let first = query(
        home,
        state,
        &["--refresh", "force", "--claude-limits", "on"],
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    // A started worker has ended once it recorded a success or an error:
    // "not running" alone is also what a query sees before the worker it
    // started has taken its lock, on a loaded machine.
    let ended = |answer: &Value| {
        let refresh = answer.get("refresh");
        let set = |key: &str| {
            refresh
                .and_then(|r| r.get(key))
                .is_some_and(|v| *v != Value::Null)
        };
        refresh_state(answer) != "running" && (set("last_success_at") || set("last_error"))
    };
    loop {
        let answer = query(home, state, &["--refresh", "never"]);
        if refresh_state(&first) != "running" || ended(&answer) {
            return answer;
        }
        assert!(Instant::now() < deadline, "the worker did not finish");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn a_recorded_path_is_used_only_from_a_trusted_state_dir() {
    // The control: in the victim's own 0700 state dir the recorded PATH is
    // how a bare SSH session finds `codex`, so the planted one runs.
    let trusted = TempDir::new("trust-usage-ok");
    let state = trusted.path.join("state");
    let marker = trusted.path.join("ran");
    plant_agents(&trusted.path.join("bin"), &marker);
    plant_runtime(&state, &trusted.path.join("bin"), &trusted.path);
    chmod(&state, 0o700);
    let answer = query_until_idle(&trusted.path, &state);
    assert!(
        !error_codes(&answer).contains(&"untrusted_state_dir".to_owned()),
        "{:?}",
        error_codes(&answer)
    );
    assert!(marker.exists(), "the control ran the recorded codex");

    // Another user planted the record in a world-writable state dir.
    let attacked = TempDir::new("trust-usage-attacked");
    let state = attacked.path.join("state");
    let marker = attacked.path.join("ran");
    plant_agents(&attacked.path.join("evil"), &marker);
    plant_runtime(&state, &attacked.path.join("evil"), &attacked.path);
    chmod(&state, 0o777);
    let answer = query(&attacked.path, &state, &["--refresh", "never"]);
    assert!(
        error_codes(&answer).contains(&"untrusted_state_dir".to_owned()),
        "{:?}",
        error_codes(&answer)
    );
    assert_eq!(
        answer
            .get("runtime")
            .unwrap()
            .get("state")
            .unwrap()
            .as_str(),
        Some("missing"),
        "no runtime record is used from an untrusted dir"
    );
    let forced = query_until_idle(&attacked.path, &state);
    assert_eq!(refresh_state(&forced), "stale", "no worker starts");
    // A worker started anyway (by hand, or by an older query) ignores the
    // record too.
    worker(&attacked.path, &state);
    assert!(!marker.exists(), "the planted codex/claude ran");

    // The same from a world-writable usage/ below a trusted state dir.
    chmod(&state, 0o700);
    chmod(&state.join("usage"), 0o777);
    let answer = query_until_idle(&attacked.path, &state);
    assert!(
        error_codes(&answer).contains(&"untrusted_state_dir".to_owned()),
        "{:?}",
        error_codes(&answer)
    );
    worker(&attacked.path, &state);
    assert!(!marker.exists(), "the planted codex/claude ran");
}

/// Runs `heeler usage worker` in the victim's bare environment.
fn worker(home: &Path, state: &Path) {
    let child = Command::new(heeler_bin())
        .args(["usage", "worker"])
        .env_clear()
        .env("HOME", home)
        .env("HERDR_PLUGIN_STATE_DIR", state)
        .env("PATH", "/nonexistent")
        .env("TZ", "UTC")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_within(child, Duration::from_secs(60));
}

fn accept(state: &Path, home: &Path, id: &str) -> Output {
    let child = Command::new(heeler_bin())
        .args(["accept", "--state-dir"])
        .arg(state)
        .args(["--pairing-id", id])
        .env_clear()
        .env("HOME", home)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_within(child, Duration::from_secs(20))
}

fn mkfifo(path: &Path) -> bool {
    Command::new("mkfifo")
        .arg(path)
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

#[test]
fn a_fifo_at_the_pending_record_does_not_hang_accept() {
    let dir = TempDir::new("trust-accept-fifo");
    let state = dir.path.join("state");
    fs::create_dir_all(state.join("pending")).unwrap();
    chmod(&state, 0o700);
    if !mkfifo(&state.join("pending/abc-1.json")) {
        common::skip("mkfifo is not available");
        return;
    }
    let out = accept(&state, &dir.path, "abc-1");
    assert_eq!(out.stdout, b"HERDR-ENROLL:ERR:unknown_pairing\n");
    assert_eq!(out.status.code(), Some(1));
}

fn write_pending(state: &Path, id: &str) {
    fs::create_dir_all(state.join("pending")).unwrap();
    let pending = format!(
        "{{\"pairingId\":\"{id}\",\"expiresAt\":{},\"publicLine\":\"ssh-ed25519 AAAA\"}}\n",
        i64::from(u32::MAX)
    );
    fs::write(state.join(format!("pending/{id}.json")), pending).unwrap();
}

/// `accept`'s internal failure: no protocol line, one stderr line, exit 1.
fn assert_refused(out: &Output, dir: &Path, fix: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.stdout, b"", "no protocol line");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains(&dir.display().to_string()), "{stderr}");
    assert!(stderr.contains(fix), "{stderr}");
}

#[test]
fn accept_refuses_an_untrusted_state_dir() {
    let dir = TempDir::new("trust-accept");
    let state = dir.path.join("state");
    write_pending(&state, "abc-2");
    chmod(&state, 0o777);
    let out = accept(&state, &dir.path, "abc-2");
    assert_refused(&out, &state, "chmod go-w");
    assert!(state.join("pending/abc-2.json").exists(), "nothing removed");

    chmod(&state, 0o700);
    chmod(&state.join("pending"), 0o777);
    let out = accept(&state, &dir.path, "abc-2");
    assert_refused(&out, &state.join("pending"), "chmod go-w");

    if is_root() {
        chmod(&state.join("pending"), 0o700);
        std::os::unix::fs::chown(&state, Some(65534), None).unwrap();
        let out = accept(&state, &dir.path, "abc-2");
        assert_refused(&out, &state, "not by uid 0");
    }
}

#[test]
fn hooks_deliver_nothing_from_an_untrusted_dir() {
    let key = support::KEY_A;
    for (hook, untrusted) in [
        ("notify-hook", "state"),
        ("notify-hook", "config"),
        ("activity-hook", "state"),
    ] {
        let fixture = support::Fixture::new("trust-hook");
        fixture.write_registration(&support::registration(&[support::entry("tok-a", key, "")]));
        fixture.herdr.set_agents(
            r#"[{"pane_id":"p1","agent_status":"blocked","agent":"claude","workspace_id":"w1"}]"#,
        );
        let dir = if untrusted == "state" {
            &fixture.state
        } else {
            &fixture.config
        };
        chmod(dir, 0o777);
        let out = fixture.run(hook, &support::event("p1", "blocked"));
        let stderr = support::stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{hook} {untrusted}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(&dir.display().to_string()), "{stderr}");
        assert!(stderr.contains("chmod go-w"), "{stderr}");
        assert!(fixture.relay.requests().is_empty(), "{hook}: delivered");
        assert!(
            !fixture.state.join("usage/runtime-v1.json").exists(),
            "{hook}: runtime recorded"
        );
    }
}

#[test]
fn pair_no_ui_refuses_an_untrusted_state_dir() {
    let dir = TempDir::new("trust-pair");
    let state = dir.path.join("state");
    let config = dir.path.join("config");
    fs::create_dir_all(&state).unwrap();
    fs::create_dir_all(&config).unwrap();
    chmod(&state, 0o777);
    let mut child = Command::new(heeler_bin())
        // No sshd here: the SSH preflight would refuse before the trust check.
        .args(["pair", "--no-ui", "--no-ssh-check"])
        .env_clear()
        .env("HOME", &dir.path)
        .env("HERDR_PLUGIN_STATE_DIR", &state)
        .env("HERDR_PLUGIN_CONFIG_DIR", &config)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("pair --no-ui started a ceremony in an untrusted dir");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert_ne!(child.wait().unwrap().code(), Some(0));
    assert!(stderr.contains(&state.display().to_string()), "{stderr}");
    assert!(stderr.contains("chmod go-w"), "{stderr}");
    assert!(
        !dir.path.join(".ssh/authorized_keys").exists(),
        "no Bootstrap Key"
    );
}

#[test]
fn doctor_fails_an_untrusted_state_dir() {
    let dir = TempDir::new("trust-doctor");
    let state = dir.path.join("state");
    let config = dir.path.join("config");
    fs::create_dir_all(state.join("pending")).unwrap();
    fs::create_dir_all(&config).unwrap();
    chmod(&state.join("pending"), 0o777);
    let out = Command::new(heeler_bin())
        .args(["doctor", "--json"])
        .env_clear()
        .env("HOME", &dir.path)
        .env("HERDR_PLUGIN_STATE_DIR", &state)
        .env("HERDR_PLUGIN_CONFIG_DIR", &config)
        .env("PATH", "/nonexistent")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let report = json::parse(String::from_utf8(out.stdout).unwrap().trim()).unwrap();
    let check = report
        .get("checks")
        .and_then(Value::as_array)
        .unwrap()
        .iter()
        .find(|c| c.get("id").and_then(Value::as_str) == Some("dir_trust"))
        .cloned()
        .expect("a dir_trust check");
    assert_eq!(check.get("status").and_then(Value::as_str), Some("fail"));
    let pending = state.join("pending").display().to_string();
    assert!(
        check
            .get("summary")
            .and_then(Value::as_str)
            .unwrap()
            .contains(&pending)
    );
    assert_eq!(
        check.get("fix").and_then(Value::as_str),
        Some(format!("run `chmod go-w {pending}`").as_str())
    );
}

/// A second local user, removed on drop (`useradd`, root only).
struct OtherUser {
    name: String,
    uid: u32,
}

impl OtherUser {
    fn create(tag: &str) -> Option<OtherUser> {
        if !is_root() {
            common::skip("not running as root (needed to create a second user)");
            return None;
        }
        if !Path::new("/usr/sbin/useradd").exists() {
            common::skip("/usr/sbin/useradd is missing");
            return None;
        }
        let name = format!("hlrt{tag}{}", std::process::id() % 100_000);
        let _guard = common::ACCOUNTS.lock().unwrap_or_else(|e| e.into_inner());
        let _ = Command::new("userdel").arg(&name).output();
        let added = Command::new("useradd")
            .args(["-M", "-s", "/bin/sh", &name])
            .output()
            .unwrap();
        assert!(added.status.success(), "useradd: {added:?}");
        let id = Command::new("id").args(["-u", &name]).output().unwrap();
        let uid = String::from_utf8_lossy(&id.stdout).trim().parse().unwrap();
        Some(OtherUser { name, uid })
    }
}

impl Drop for OtherUser {
    fn drop(&mut self) {
        let _guard = common::ACCOUNTS.lock().unwrap_or_else(|e| e.into_inner());
        let _ = Command::new("userdel").arg(&self.name).output();
    }
}

#[test]
fn pair_and_doctor_refuse_a_binary_another_user_can_replace() {
    // The forced command names the binary that ran `heeler pair`; with it in
    // a directory another user owns (or anyone may write), that user could
    // swap it and the phone's login would run their program as the pairing
    // user. `pair` must refuse before minting a key, and doctor must say so.
    let Some(other) = OtherUser::create("bin") else {
        return;
    };
    let dir = TempDir::new("trust-binary");
    let bin = dir.path.join("bin");
    let (home, state, config, host_keys) = (
        dir.path.join("home"),
        dir.path.join("state"),
        dir.path.join("config"),
        dir.path.join("hostkeys"),
    );
    for d in [&bin, &home, &state, &config, &host_keys] {
        fs::create_dir_all(d).unwrap();
    }
    fs::write(
        host_keys.join("ssh_host_ecdsa_key.pub"),
        "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBLcfUSSSNIBQAj/hJRedw91OfYBl8cH3TmBZbnAqRk3IF+DE3Qat5MuqssEA1NUWbqSSbGIRRcp0ckbz/p0pI18= root@host\n",
    )
    .unwrap();
    let heeler = bin.join("heeler");
    crate::support::copy_executable(heeler_bin(), &heeler).unwrap();
    let bin = fs::canonicalize(&bin).unwrap();
    let shown = bin.join("heeler").display().to_string();
    let run = |args: &[&str]| {
        Command::new(&heeler)
            .args(args)
            .env_clear()
            .env("HOME", &home)
            .env("HERDR_PLUGIN_STATE_DIR", &state)
            .env("HERDR_PLUGIN_CONFIG_DIR", &config)
            .env("HEELER_TEST_HOST_KEY_DIR", &host_keys)
            .env("PATH", "/nonexistent")
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let cases = [
        (
            "owned by the other user",
            other.uid,
            0o755,
            format!(
                "{} is owned by uid {}, neither root nor uid 0 running heeler",
                bin.display(),
                other.uid
            ),
            format!(
                "install heeler where only you or root can write (or run `chown 0 {}`)",
                bin.display()
            ),
            None,
        ),
        (
            "writable by anyone",
            0,
            0o777,
            format!(
                "{} is writable by group or others (mode 0777)",
                bin.display()
            ),
            format!("run `chmod go-w {}`", bin.display()),
            None,
        ),
        (
            "writable by the other user through an ACL",
            0,
            0o755,
            format!(
                "{} has an extended ACL that lets uid {} write to it",
                bin.display(),
                other.uid
            ),
            format!("run `setfacl -b {}`", bin.display()),
            Some(format!("u:{}:rwx", other.uid)),
        ),
    ];
    for (case, owner, mode, problem, fix, acl) in cases {
        std::os::unix::fs::chown(&bin, Some(owner), Some(0)).unwrap();
        chmod(&bin, mode);
        if let Some(acl) = acl
            && !setfacl(&["-m", &acl], &bin)
        {
            continue;
        }
        let out = run(&["pair", "--no-ui", "--address", "192.0.2.7"]);
        assert_eq!(out.status.code(), Some(1), "{case}: {out:?}");
        assert!(out.stdout.is_empty(), "{case}: no Pairing Code");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            format!(
                "heeler pair: another user could replace {shown}, which the phone's SSH login runs: {problem}; {fix}\n"
            ),
            "{case}"
        );
        assert!(
            !home.join(".ssh/authorized_keys").exists(),
            "{case}: no Bootstrap Key"
        );

        let out = run(&["doctor", "--json"]);
        assert_eq!(out.status.code(), Some(1), "{case}");
        let report = json::parse(String::from_utf8(out.stdout).unwrap().trim()).unwrap();
        let check = report
            .get("checks")
            .and_then(Value::as_array)
            .unwrap()
            .iter()
            .find(|c| c.get("id").and_then(Value::as_str) == Some("binary_trust"))
            .cloned()
            .expect("a binary_trust check");
        assert_eq!(check.get("status").and_then(Value::as_str), Some("fail"));
        assert_eq!(
            check.get("summary").and_then(Value::as_str),
            Some(
                format!(
                    "another user could replace {shown}, which the phone's SSH login runs: {problem}; heeler pair refuses to start"
                )
                .as_str()
            ),
            "{case}"
        );
        assert_eq!(
            check.get("fix").and_then(Value::as_str),
            Some(fix.as_str()),
            "{case}"
        );
    }
}

/// Runs `setfacl` with `args` on `path`; `false` after a visible skip (a
/// failure under `HEELER_REQUIRE_ALL=1`) when the tool is missing or the
/// file system refuses ACLs.
fn setfacl(args: &[&str], path: &Path) -> bool {
    match Command::new("setfacl").args(args).arg(path).output() {
        Ok(out) if out.status.success() => true,
        Ok(out) => {
            common::skip(&format!(
                "setfacl cannot set an ACL on {}: {}",
                path.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
            false
        }
        Err(e) => {
            common::skip(&format!("setfacl is missing (apt-get install acl): {e}"));
            false
        }
    }
}

#[test]
fn an_acl_letting_another_user_write_makes_a_state_dir_untrusted() {
    // Mode 0700 looks private; the ACL says uid 65534 may write anyway (a
    // numeric id needs no account). Every owner of the rule must refuse.
    let dir = TempDir::new("trust-acl");
    let state = dir.path.join("state");
    let config = dir.path.join("config");
    write_pending(&state, "abc-3");
    fs::create_dir_all(&config).unwrap();
    chmod(&state, 0o700);
    if !setfacl(&["-m", "u:65534:rwx"], &state) {
        return;
    }
    let fix = format!("setfacl -b {}", state.display());
    let out = accept(&state, &dir.path, "abc-3");
    assert_refused(&out, &state, &fix);
    assert!(state.join("pending/abc-3.json").exists(), "nothing removed");

    let out = Command::new(heeler_bin())
        .args(["doctor", "--json"])
        .env_clear()
        .env("HOME", &dir.path)
        .env("HERDR_PLUGIN_STATE_DIR", &state)
        .env("HERDR_PLUGIN_CONFIG_DIR", &config)
        .env("PATH", "/nonexistent")
        .output()
        .unwrap();
    let report = json::parse(String::from_utf8(out.stdout).unwrap().trim()).unwrap();
    let check = report
        .get("checks")
        .and_then(Value::as_array)
        .unwrap()
        .iter()
        .find(|c| c.get("id").and_then(Value::as_str) == Some("dir_trust"))
        .cloned()
        .expect("a dir_trust check");
    assert_eq!(check.get("status").and_then(Value::as_str), Some("fail"));
    assert_eq!(
        check.get("fix").and_then(Value::as_str),
        Some(format!("run `{fix}`").as_str())
    );

    let out = Command::new(heeler_bin())
        .args(["pair", "--no-ui", "--no-ssh-check"])
        .env_clear()
        .env("HOME", &dir.path)
        .env("HERDR_PLUGIN_STATE_DIR", &state)
        .env("HERDR_PLUGIN_CONFIG_DIR", &config)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(out.stdout.is_empty(), "no Pairing Code");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&fix),
        "{out:?}"
    );
    assert!(
        !dir.path.join(".ssh/authorized_keys").exists(),
        "no Bootstrap Key"
    );

    // A grant to read only is no threat: accept reads the record again.
    assert!(setfacl(&["-b"], &state));
    assert!(setfacl(&["-m", "u:65534:r-x"], &state));
    let out = accept(&state, &dir.path, "abc-3");
    assert_eq!(out.stdout, b"HERDR-ENROLL:ERR:no_input\n", "{out:?}");
}

#[test]
fn hooks_deliver_nothing_from_a_dir_whose_acl_lets_another_user_write() {
    for hook in ["notify-hook", "activity-hook"] {
        let fixture = support::Fixture::new("trust-hook-acl");
        fixture.write_registration(&support::registration(&[support::entry(
            "tok-a",
            support::KEY_A,
            "",
        )]));
        fixture.herdr.set_agents(
            r#"[{"pane_id":"p1","agent_status":"blocked","agent":"claude","workspace_id":"w1"}]"#,
        );
        chmod(&fixture.state, 0o700);
        if !setfacl(&["-m", "u:65534:rwx"], &fixture.state) {
            return;
        }
        let out = fixture.run(hook, &support::event("p1", "blocked"));
        let stderr = support::stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{hook}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.contains(&format!("setfacl -b {}", fixture.state.display())),
            "{stderr}"
        );
        assert!(fixture.relay.requests().is_empty(), "{hook}: delivered");
    }
}
