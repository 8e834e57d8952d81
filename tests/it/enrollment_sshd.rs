//! Enrollment against a real OpenSSH server and a real `ssh` client.
//!
//! Each test starts its own `/usr/sbin/sshd -D -e -f <config>` on 127.0.0.1
//! and a free high port, with its own host key, for a fresh unprivileged
//! user whose home is a temp dir. `heeler pair --no-ui` runs as that user
//! (it writes the bootstrap line into the user's authorized_keys), the
//! phone is played by `ssh` with the Bootstrap Key rebuilt from the code's
//! seed (converted to an OpenSSH private key by Python `cryptography`,
//! independently of heeler's own key derivation), and sshd runs
//! `heeler accept` as the forced command with its own minimal environment.
//!
//! Needs root (to create the user and run sshd), sshd, ssh, ssh-keygen,
//! useradd and python3 with `cryptography`; otherwise each test prints
//! `SKIPPED` and returns (a failure under `HEELER_REQUIRE_ALL=1`). Two tests need no root, only
//! ssh-keygen: the Bootstrap Key's public line equals `ssh-keygen -y`, and
//! the host key fingerprint equals `ssh-keygen -lf`.

use crate::common;
use crate::scratch;

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use heeler::wire::pairing_code;

use crate::common::ACCOUNTS;

fn run(cmd: &mut Command) -> Output {
    cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"))
}

fn run_ok(cmd: &mut Command) -> String {
    let output = run(cmd);
    assert!(
        output.status.success(),
        "{cmd:?} failed: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

fn skip_reason() -> Option<String> {
    let uid = run_ok(Command::new("id").arg("-u"));
    if uid.trim() != "0" {
        return Some("not running as root (needed to create a user and run sshd)".into());
    }
    for tool in [
        "/usr/sbin/sshd",
        "/usr/bin/ssh",
        "/usr/bin/ssh-keygen",
        "/usr/sbin/useradd",
    ] {
        if !Path::new(tool).exists() {
            return Some(format!(
                "{tool} is missing (apt-get install openssh-server)"
            ));
        }
    }
    let python = Command::new("python3")
        .args(["-c", "import cryptography"])
        .output();
    if !python.is_ok_and(|o| o.status.success()) {
        return Some("python3 with the cryptography package is missing".into());
    }
    None
}

macro_rules! require_sshd {
    () => {
        if let Some(reason) = skip_reason() {
            common::skip(&reason);
            return;
        }
    };
}

/// A test user, its sshd, and the files around them; torn down on drop.
struct Rig {
    root: PathBuf,
    user: String,
    uid: u32,
    gid: u32,
    home: PathBuf,
    heeler: PathBuf,
    /// Where `heeler` lives; removed after the rest of the rig.
    _heeler_copy: common::TrustedCopy,
    state_dir: PathBuf,
    config_dir: PathBuf,
    host_key_dir: PathBuf,
    port: u16,
    sshd: Option<Child>,
}

impl Drop for Rig {
    fn drop(&mut self) {
        if let Some(mut sshd) = self.sshd.take() {
            let _ = sshd.kill();
            let _ = sshd.wait();
        }
        let _guard = ACCOUNTS.lock().unwrap_or_else(|e| e.into_inner());
        // Any process still running as the user (sshd sessions) goes first.
        let _ = Command::new("pkill")
            .args(["-KILL", "-u", &self.user])
            .status();
        let _ = Command::new("userdel").arg(&self.user).output();
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

fn chown(path: &Path, uid: u32, gid: u32) {
    std::os::unix::fs::chown(path, Some(uid), Some(gid)).unwrap();
}

impl Rig {
    fn start(tag: &str) -> Rig {
        let root = std::env::temp_dir().join(format!("heeler-sshd-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).unwrap();
        let user = format!("hlr{tag}{}", std::process::id() % 100_000);
        let home = root.join("home");
        {
            let _guard = ACCOUNTS.lock().unwrap_or_else(|e| e.into_inner());
            let _ = Command::new("userdel").arg(&user).output();
            run_ok(Command::new("useradd").args([
                "-M",
                "-d",
                home.to_str().unwrap(),
                "-s",
                "/bin/sh",
                &user,
            ]));
            // A fresh account is locked ("!"); sshd refuses locked accounts
            // even for public keys. "*" means: no password, not locked.
            run_ok(Command::new("usermod").args(["-p", "*", &user]));
        }
        let uid: u32 = run_ok(Command::new("id").args(["-u", &user]))
            .trim()
            .parse()
            .unwrap();
        let gid: u32 = run_ok(Command::new("id").args(["-g", &user]))
            .trim()
            .parse()
            .unwrap();
        std::fs::create_dir_all(&home).unwrap();
        std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o755)).unwrap();
        chown(&home, uid, gid);

        // The binary under target/ may sit below directories the user cannot
        // traverse, and the rig's temp dir is one others may write to (which
        // heeler refuses for a forced command's binary): a copy in a
        // directory only root writes is readable by everyone and trusted.
        // HEELER_TEST_BINARY (set by .ci/static-check) swaps in another
        // build, e.g. the static musl binary, as sshd's forced command.
        let under_test = std::env::var_os("HEELER_TEST_BINARY").map_or_else(
            || env!("CARGO_BIN_EXE_heeler").into(),
            std::path::PathBuf::from,
        );
        println!("forced command binary: {}", under_test.display());
        let heeler_copy = common::TrustedCopy::new(&user, &under_test);
        let heeler = heeler_copy.path();

        let state_dir = home.join(".local/state/herdr/plugins/heeler");
        let config_dir = home.join(".config/herdr/plugins/config/heeler");
        for dir in [&state_dir, &config_dir] {
            std::fs::create_dir_all(dir).unwrap();
            let mut d = dir.as_path();
            while d != home.as_path() {
                chown(d, uid, gid);
                d = d.parent().unwrap();
            }
        }

        // A release build (HEELER_TEST_BINARY, from .ci/static-check) never
        // lets HEELER_TEST_HOST_KEY_DIR re-pin a machine that has host keys
        // (pair::headless::host_key_dir_choice): there sshd serves the
        // machine's own ed25519 key, the one pairing pins. A debug build
        // pins the rig's own key.
        let system_key = Path::new("/etc/ssh/ssh_host_ed25519_key");
        let host_key_dir =
            if std::env::var_os("HEELER_TEST_BINARY").is_some() && system_key.exists() {
                PathBuf::from("/etc/ssh")
            } else {
                root.join("hostkeys")
            };
        let host_key = host_key_dir.join("ssh_host_ed25519_key");
        if !host_key.exists() {
            std::fs::create_dir_all(&host_key_dir).unwrap();
            run_ok(Command::new("ssh-keygen").args([
                "-q",
                "-t",
                "ed25519",
                "-N",
                "",
                "-f",
                host_key.to_str().unwrap(),
            ]));
        }
        std::fs::create_dir_all("/run/sshd").unwrap();

        let port = free_port();
        let config = root.join("sshd_config");
        std::fs::write(
            &config,
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {}\nPidFile {}\n\
                 AuthorizedKeysFile .ssh/authorized_keys\nPubkeyAuthentication yes\n\
                 PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n\
                 StrictModes yes\nPermitRootLogin no\nAllowUsers {user}\nLogLevel VERBOSE\n",
                host_key.display(),
                root.join("sshd.pid").display()
            ),
        )
        .unwrap();
        let sshd = Command::new("/usr/sbin/sshd")
            .args(["-D", "-e", "-f"])
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(root.join("sshd.log")).unwrap())
            .spawn()
            .unwrap();
        let rig = Rig {
            root,
            user,
            uid,
            gid,
            home,
            heeler,
            _heeler_copy: heeler_copy,
            state_dir,
            config_dir,
            host_key_dir,
            port,
            sshd: Some(sshd),
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "sshd did not listen: {}",
                rig.sshd_log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        // The client pins the host key exactly as the app does.
        let host_pub =
            std::fs::read_to_string(rig.host_key_dir.join("ssh_host_ed25519_key.pub")).unwrap();
        let mut words = host_pub.split_whitespace();
        let known = format!(
            "[127.0.0.1]:{port} {} {}\n",
            words.next().unwrap(),
            words.next().unwrap()
        );
        std::fs::write(rig.root.join("known_hosts"), known).unwrap();
        rig
    }

    fn sshd_log(&self) -> String {
        std::fs::read_to_string(self.root.join("sshd.log")).unwrap_or_default()
    }

    fn authorized_keys(&self) -> String {
        std::fs::read_to_string(self.home.join(".ssh/authorized_keys")).unwrap_or_default()
    }

    /// A command running as the test user with a clean environment.
    fn as_user(&self, program: &Path) -> Command {
        let mut cmd = Command::new(program);
        cmd.uid(self.uid)
            .gid(self.gid)
            .current_dir(&self.home)
            .env_clear()
            .env("HOME", &self.home);
        cmd
    }

    /// `heeler pair --no-ui` as the user, the way herdr would run it.
    fn pair(&self, ttl: Option<u32>) -> Pairing {
        std::fs::write(
            self.config_dir.join("pair.json"),
            format!("{{\"ssh_port\":{}}}", self.port),
        )
        .unwrap();
        let mut cmd = self.as_user(&self.heeler);
        cmd.args(["pair", "--no-ui", "--address", "127.0.0.1"])
            .env("HERDR_PLUGIN_STATE_DIR", &self.state_dir)
            .env("HERDR_PLUGIN_CONFIG_DIR", &self.config_dir)
            .env("HEELER_TEST_HOST_KEY_DIR", &self.host_key_dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(ttl) = ttl {
            cmd.env("HEELER_TEST_PAIRING_TTL_SECONDS", ttl.to_string());
        }
        let mut child = cmd.spawn().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut code = String::new();
        stdout.read_line(&mut code).unwrap();
        let code = code.trim().to_owned();
        let payload = pairing_code::decode(&code).unwrap_or_else(|e| panic!("{code:?}: {e}"));
        let bootstrap = payload
            .bootstrap
            .clone()
            .expect("a code with a Bootstrap Key");
        let key_file = self
            .root
            .join(format!("bootstrap-{}", bootstrap.expires_at));
        write_openssh_private_key(&bootstrap.seed, &key_file);
        Pairing {
            child,
            stdout,
            payload,
            key_file,
        }
    }

    /// `ssh` as the phone: `key`, the pinned host key, `input` on stdin.
    /// `extra` options go before the destination; a remote command after
    /// `--` in `extra` goes after it.
    fn ssh_command(&self, key: &Path, extra: &[&str]) -> Command {
        let split = extra.iter().position(|a| *a == "--").unwrap_or(extra.len());
        let (options, command) = extra.split_at(split);
        let mut cmd = Command::new("/usr/bin/ssh");
        cmd.args(["-F", "/dev/null", "-T", "-p", &self.port.to_string()])
            .args(["-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes"])
            .args([
                "-o",
                "IdentityAgent=none",
                "-o",
                "StrictHostKeyChecking=yes",
            ])
            .args(["-o", "ConnectTimeout=10", "-o", "LogLevel=ERROR"])
            .arg("-o")
            .arg(format!(
                "UserKnownHostsFile={}",
                self.root.join("known_hosts").display()
            ))
            .arg("-i")
            .arg(key)
            .args(options)
            .arg(format!("{}@127.0.0.1", self.user))
            .args(command.iter().skip(1));
        cmd
    }

    fn ssh(&self, key: &Path, input: &[u8], extra: &[&str]) -> Output {
        let mut child = self
            .ssh_command(key, extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(input).unwrap();
        drop(stdin);
        child.wait_with_output().unwrap()
    }

    /// A device key made by ssh-keygen: (private key path, public line).
    fn device_key(&self, name: &str, comment: &str) -> (PathBuf, String) {
        let path = self.root.join(name);
        run_ok(Command::new("ssh-keygen").args([
            "-q",
            "-t",
            "ed25519",
            "-N",
            "",
            "-C",
            comment,
            "-f",
            path.to_str().unwrap(),
        ]));
        let line = std::fs::read_to_string(path.with_extension("pub")).unwrap();
        (path, line.trim().to_owned())
    }

    /// Waits until `count` `heeler accept` processes for `pairing_id` run.
    fn wait_for_accepts(&self, pairing_id: &str, count: usize) {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let running = std::fs::read_dir("/proc")
                .unwrap()
                .flatten()
                .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
                .filter(|c| {
                    let c = String::from_utf8_lossy(c);
                    c.contains("\0accept\0") && c.contains(pairing_id)
                })
                .count();
            if running >= count {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{count} accept processes never ran; sshd log:\n{}",
                self.sshd_log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

struct Pairing {
    child: Child,
    stdout: BufReader<std::process::ChildStdout>,
    payload: pairing_code::Payload,
    key_file: PathBuf,
}

impl Pairing {
    fn pairing_id(&self, rig: &Rig) -> String {
        let text = rig.authorized_keys();
        let line = text
            .lines()
            .find(|l| l.contains("herdr-pairing:"))
            .expect("a bootstrap line");
        line.rsplit("herdr-pairing:")
            .next()
            .unwrap()
            .split(':')
            .next()
            .unwrap()
            .to_owned()
    }

    /// Waits for `heeler pair` to exit: (status, stdout rest, stderr).
    fn finish(mut self) -> (i32, String, String) {
        let status = self.child.wait().unwrap();
        let mut out = String::new();
        self.stdout.read_to_string(&mut out).unwrap();
        let mut err = String::new();
        self.child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        (status.code().unwrap_or(-1), out, err)
    }
}

/// The Bootstrap Key as an OpenSSH private key file, built from the raw seed
/// by Python `cryptography` (not by heeler).
fn write_openssh_private_key(seed: &[u8; 32], path: &Path) {
    let hex: String = seed.iter().map(|b| format!("{b:02x}")).collect();
    let script = "import sys\n\
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey\n\
        from cryptography.hazmat.primitives import serialization as s\n\
        k = Ed25519PrivateKey.from_private_bytes(bytes.fromhex(sys.argv[1]))\n\
        sys.stdout.buffer.write(k.private_bytes(s.Encoding.PEM, s.PrivateFormat.OpenSSH, s.NoEncryption()))\n";
    let pem = run_ok(Command::new("python3").args(["-c", script, &hex]));
    std::fs::write(path, pem).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

fn fingerprint_by_ssh_keygen(public_file: &Path) -> String {
    run_ok(Command::new("ssh-keygen").arg("-lf").arg(public_file))
        .split_whitespace()
        .nth(1)
        .unwrap()
        .to_owned()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn enrollment_end_to_end_with_retries_restrictions_and_replay() {
    require_sshd!();
    let rig = Rig::start("e2e");
    let pairing = rig.pair(None);

    // The code pins sshd's host key and names the user and pair.json's port.
    let host_pub = rig.host_key_dir.join("ssh_host_ed25519_key.pub");
    assert_eq!(pairing.payload.fp, fingerprint_by_ssh_keygen(&host_pub));
    assert_eq!(pairing.payload.user, rig.user);
    assert_eq!(pairing.payload.port, rig.port);
    assert_eq!(pairing.payload.addrs, vec!["127.0.0.1".to_string()]);

    // The bootstrap line's key is the seed's public key per ssh-keygen -y.
    let derived = run_ok(
        Command::new("ssh-keygen")
            .arg("-y")
            .arg("-f")
            .arg(&pairing.key_file),
    );
    let id = pairing.pairing_id(&rig);
    let boot_line = rig
        .authorized_keys()
        .lines()
        .find(|l| l.contains(&id))
        .unwrap()
        .to_owned();
    // This sshd (OpenSSH 9.2) reads a UTC expiry-time, so the line says
    // when sshd itself must stop; `date` gives the expected UTC time.
    let exp = pairing.payload.bootstrap.as_ref().unwrap().expires_at;
    let utc = run_ok(Command::new("date").args(["-u", "-d", &format!("@{exp}"), "+%Y%m%d%H%M%SZ"]));
    assert_eq!(
        boot_line,
        format!(
            "restrict,command=\"'{}' accept --state-dir '{}' --pairing-id {id}\",expiry-time=\"{}\" {} herdr-pairing:{id}:exp:{exp}",
            rig.heeler.display(),
            rig.state_dir.display(),
            utc.trim(),
            derived.trim(),
        )
    );
    let ak = rig.home.join(".ssh/authorized_keys");
    assert_eq!(
        std::fs::metadata(&ak).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(
        std::fs::metadata(rig.home.join(".ssh"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o700
    );

    // Empty and invalid submissions are refused and keep the line.
    let empty = rig.ssh(&pairing.key_file, b"", &[]);
    assert_eq!(
        text(&empty.stdout),
        "HERDR-ENROLL:ERR:no_input\n",
        "{}",
        text(&empty.stderr)
    );
    assert_eq!(empty.status.code(), Some(1));
    let invalid = rig.ssh(&pairing.key_file, b"ssh-rsa AAAAB3NzaC1yc2E phone\n", &[]);
    assert_eq!(text(&invalid.stdout), "HERDR-ENROLL:ERR:invalid_key\n");
    assert!(text(&invalid.stderr).contains("rejected Device Key line"));
    assert_eq!(invalid.status.code(), Some(1));
    // The Bootstrap Key itself, offered as the Device Key: its seed is in
    // the printed code, so it is refused, and the line stays.
    let itself = rig.ssh(
        &pairing.key_file,
        format!("{} phone\n", derived.trim()).as_bytes(),
        &[],
    );
    assert_eq!(
        text(&itself.stdout),
        "HERDR-ENROLL:ERR:invalid_key\n",
        "{}",
        text(&itself.stderr)
    );
    assert!(
        text(&itself.stderr).contains("key is a Bootstrap Key, not a Device Key"),
        "{}",
        text(&itself.stderr)
    );

    // The Bootstrap Key runs nothing but the forced command...
    let marker = rig.root.join("pwned");
    let other = rig.ssh(
        &pairing.key_file,
        b"",
        &["--", &format!("touch {}; echo pwned", marker.display())],
    );
    assert_eq!(text(&other.stdout), "HERDR-ENROLL:ERR:no_input\n");
    assert!(!marker.exists(), "the requested command must not run");
    // ...and cannot forward ports, either way.
    let local = rig.ssh(
        &pairing.key_file,
        b"",
        &["-W", &format!("127.0.0.1:{}", rig.port)],
    );
    println!(
        "ssh -W with the Bootstrap Key: {}",
        text(&local.stderr).trim()
    );
    assert_ne!(local.status.code(), Some(0));
    assert!(
        text(&local.stderr).contains("stdio forwarding failed"),
        "{}",
        text(&local.stderr)
    );
    assert!(
        !text(&local.stdout).contains("SSH-2.0"),
        "no stdio forwarding"
    );
    let remote_port = free_port();
    let remote = rig.ssh(
        &pairing.key_file,
        b"",
        &[
            "-o",
            "ExitOnForwardFailure=yes",
            "-N",
            "-R",
            &format!("127.0.0.1:{remote_port}:127.0.0.1:{}", rig.port),
        ],
    );
    println!(
        "ssh -R with the Bootstrap Key: {}",
        text(&remote.stderr).trim()
    );
    assert_ne!(remote.status.code(), Some(0));
    assert!(
        text(&remote.stderr).contains("remote port forwarding failed"),
        "{}",
        text(&remote.stderr)
    );
    assert!(
        rig.authorized_keys().contains(&boot_line),
        "refusals keep the line"
    );

    // Two sessions authenticate with the code; the first enrolls, the
    // second (a replay) is told the pairing is unknown.
    let (device, device_line) = rig.device_key("device", "test-phone");
    let spawn_session = || {
        rig.ssh_command(&pairing.key_file, &[])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut first = spawn_session();
    let mut second = spawn_session();
    rig.wait_for_accepts(&id, 2);
    let submit = |child: &mut Child| {
        let mut stdin = child.stdin.take().unwrap();
        stdin
            .write_all(format!("{device_line}\n").as_bytes())
            .unwrap();
    };
    submit(&mut first);
    let first = first.wait_with_output().unwrap();
    submit(&mut second);
    let second = second.wait_with_output().unwrap();
    let expected_fp = fingerprint_by_ssh_keygen(&device.with_extension("pub"));
    assert_eq!(
        text(&first.stdout),
        format!("HERDR-ENROLL:OK:{expected_fp}\n"),
        "{}",
        text(&first.stderr)
    );
    assert_eq!(first.status.code(), Some(0));
    assert_eq!(text(&second.stdout), "HERDR-ENROLL:ERR:unknown_pairing\n");
    assert_eq!(second.status.code(), Some(1));

    // heeler pair reports the device and exits 0; state is cleaned up.
    let boot_key = pairing.key_file.clone();
    let (status, out, err) = pairing.finish();
    assert_eq!(status, 0, "{err}");
    assert_eq!(out, format!("enrolled {expected_fp} test-phone\n"));
    assert_eq!(rig.authorized_keys(), format!("{device_line}\n"));
    for dir in ["pending", "enrolled"] {
        let left = std::fs::read_dir(rig.state_dir.join(dir)).map_or(0, |d| d.count());
        assert_eq!(left, 0, "{dir}/ is empty after the ceremony");
    }

    // The Device Key logs in; the used Bootstrap Key does not.
    let login = rig.ssh(&device, b"", &["--", "echo logged-in as $(id -un)"]);
    assert_eq!(
        text(&login.stdout),
        format!("logged-in as {}\n", rig.user),
        "{}",
        text(&login.stderr)
    );
    let replay = rig.ssh(&boot_key, format!("{device_line}\n").as_bytes(), &[]);
    assert_eq!(replay.status.code(), Some(255), "auth must fail");
    assert!(
        text(&replay.stderr).contains("Permission denied"),
        "{}",
        text(&replay.stderr)
    );
    assert!(text(&replay.stdout).is_empty());
}

/// `heeler pair --no-ui --config-only` as the user, with pair.json
/// advertising the rig's sshd port.
fn config_only_code(rig: &Rig, extra: &[&str]) -> Output {
    std::fs::write(
        rig.config_dir.join("pair.json"),
        format!("{{\"ssh_port\":{}}}", rig.port),
    )
    .unwrap();
    let mut cmd = rig.as_user(&rig.heeler);
    cmd.args(["pair", "--no-ui", "--config-only", "--address", "127.0.0.1"])
        .args(extra)
        .env("HERDR_PLUGIN_STATE_DIR", &rig.state_dir)
        .env("HERDR_PLUGIN_CONFIG_DIR", &rig.config_dir)
        .env("HEELER_TEST_HOST_KEY_DIR", &rig.host_key_dir)
        .stdin(Stdio::null());
    run(&mut cmd)
}

#[test]
fn the_ssh_preflight_passes_with_sshd_and_refuses_once_it_stops() {
    require_sshd!();
    let mut rig = Rig::start("pre");
    let output = config_only_code(&rig, &[]);
    assert!(output.status.success(), "{output:?}");
    let payload = pairing_code::decode(text(&output.stdout).trim()).unwrap();
    assert_eq!(payload.port, rig.port);
    assert_eq!(text(&output.stderr), "", "OpenSSH passes without a note");

    let mut sshd = rig.sshd.take().unwrap();
    sshd.kill().unwrap();
    sshd.wait().unwrap();
    let output = config_only_code(&rig, &[]);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    assert!(output.stdout.is_empty());
    let stderr = text(&output.stderr);
    assert!(
        stderr.starts_with(&format!(
            "heeler pair: no SSH server answers on 127.0.0.1:{} (connection refused)",
            rig.port
        )),
        "{stderr}"
    );
    let output = config_only_code(&rig, &["--no-ssh-check"]);
    assert!(output.status.success(), "{output:?}");
}

#[test]
fn expiry_through_sshd() {
    require_sshd!();
    let rig = Rig::start("exp");

    // A pair that times out removes its line and exits 1.
    let pairing = rig.pair(Some(2));
    let key = pairing.key_file.clone();
    let (status, out, err) = pairing.finish();
    assert_eq!(status, 1);
    assert!(out.is_empty());
    assert!(err.contains("expired"), "{err}");
    assert!(!rig.authorized_keys().contains("herdr-pairing:"));
    let late = rig.ssh(&key, b"", &[]);
    assert_eq!(
        late.status.code(),
        Some(255),
        "an expired code cannot log in"
    );

    // A killed pair leaves its line; a session opened in time but answered
    // late gets `expired`, and the line is gone afterwards. The session
    // must log in before the expiry, which sshd itself enforces now
    // (`expiry-time`), so the code gets time for a loaded machine.
    let mut pairing = rig.pair(Some(8));
    pairing.child.kill().unwrap();
    pairing.child.wait().unwrap();
    let id = pairing.pairing_id(&rig);
    let exp = pairing.payload.bootstrap.as_ref().unwrap().expires_at;
    let mut session = rig
        .ssh_command(&pairing.key_file, &[])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    rig.wait_for_accepts(&id, 1);
    while heeler::base::clock::unix_seconds() <= exp {
        std::thread::sleep(Duration::from_millis(100));
    }
    let (_, device_line) = rig.device_key("device", "late-phone");
    session
        .stdin
        .take()
        .unwrap()
        .write_all(format!("{device_line}\n").as_bytes())
        .unwrap();
    let answer = session.wait_with_output().unwrap();
    assert_eq!(
        text(&answer.stdout),
        "HERDR-ENROLL:ERR:expired\n",
        "{}",
        text(&answer.stderr)
    );
    assert_eq!(answer.status.code(), Some(1));
    assert!(!rig.authorized_keys().contains(&id));
    assert!(!rig.authorized_keys().contains(&device_line));
}

/// sshd itself refuses a Bootstrap Key once its `expiry-time` is past,
/// even while its line is still in authorized_keys (a `pair` killed with
/// SIGKILL removes nothing): the login fails before any `accept` runs.
#[test]
fn sshd_itself_refuses_an_expired_bootstrap_line() {
    require_sshd!();
    let rig = Rig::start("sshdexp");
    // Long enough that the line is still there when `pair` is killed,
    // even on a loaded machine (the key conversion starts Python).
    let mut pairing = rig.pair(Some(6));
    pairing.child.kill().unwrap();
    pairing.child.wait().unwrap();
    let id = pairing.pairing_id(&rig);
    let exp = pairing.payload.bootstrap.as_ref().unwrap().expires_at;
    assert!(rig.authorized_keys().contains("expiry-time=\""));
    // sshd refuses once the expiry second is past (`valid_before < now`).
    while heeler::base::clock::unix_seconds() <= exp {
        std::thread::sleep(Duration::from_millis(100));
    }
    let (_, device_line) = rig.device_key("device", "too-late");
    let late = rig.ssh(
        &pairing.key_file,
        format!("{device_line}\n").as_bytes(),
        &[],
    );
    assert_eq!(
        late.status.code(),
        Some(255),
        "sshd refused the login: {}",
        text(&late.stderr)
    );
    assert_eq!(text(&late.stdout), "", "no accept ran");
    assert!(
        rig.authorized_keys().contains(&id),
        "the line is still there, so sshd (not accept) refused"
    );
    assert!(!rig.authorized_keys().contains(&device_line));
}

#[test]
fn accept_runs_with_no_environment_at_all() {
    require_sshd!();
    let rig = Rig::start("env");
    let pairing = rig.pair(None);
    let id = pairing.pairing_id(&rig);
    let (_, device_line) = rig.device_key("device", "bare-env");
    // `env -i`: no PATH, no HOME: the home comes from the passwd entry.
    let mut accept = Command::new("/usr/bin/env");
    accept
        .uid(rig.uid)
        .gid(rig.gid)
        .current_dir("/")
        .args(["-i", rig.heeler.to_str().unwrap(), "accept", "--state-dir"])
        .arg(&rig.state_dir)
        .args(["--pairing-id", &id])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = accept.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(format!("{device_line}\n").as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        text(&output.stdout).starts_with("HERDR-ENROLL:OK:SHA256:"),
        "{} / {}",
        text(&output.stdout),
        text(&output.stderr)
    );
    let (status, out, _) = pairing.finish();
    assert_eq!(status, 0);
    assert!(out.ends_with(" bare-env\n"));
    assert_eq!(rig.authorized_keys(), format!("{device_line}\n"));
}

/// A child process (here: an `ssh` control master) killed on drop, also
/// when the test panics.
struct KilledOnDrop(Child);

impl Drop for KilledOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Sends `signal` (`STOP`, `CONT`) to `child`.
fn signal(child: &Child, signal: &str) {
    run_ok(Command::new("kill").args([&format!("-{signal}"), &child.id().to_string()]));
}

#[test]
fn a_second_session_on_the_enrolling_connection_keeps_the_report() {
    require_sshd!();
    let rig = Rig::start("mux");
    let pairing = rig.pair(None);
    let id = pairing.pairing_id(&rig);
    // One connection authenticated with the Bootstrap Key, no session yet:
    // sshd checks authorized_keys once, when the connection authenticates.
    let control = rig.root.join("control");
    let control_path = format!("ControlPath={}", control.display());
    let master = rig
        .ssh_command(
            &pairing.key_file,
            &["-o", "ControlMaster=yes", "-o", &control_path, "-N"],
        )
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _master = KilledOnDrop(master);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !control.exists() {
        assert!(
            Instant::now() < deadline,
            "no control socket: {}",
            rig.sshd_log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Freeze `heeler pair` so that its poll cannot end the ceremony before
    // the second session runs (an attacker only has to be quicker).
    signal(&pairing.child, "STOP");
    let mux = ["-o", "ControlMaster=no", "-o", control_path.as_str()];
    let (device, device_line) = rig.device_key("device", "mux-phone");
    let first = rig.ssh(
        &pairing.key_file,
        format!("{device_line}\n").as_bytes(),
        &mux,
    );
    let expected_fp = fingerprint_by_ssh_keygen(&device.with_extension("pub"));
    assert_eq!(
        text(&first.stdout),
        format!("HERDR-ENROLL:OK:{expected_fp}\n"),
        "{}",
        text(&first.stderr)
    );
    // A new connection with the Bootstrap Key is refused now...
    let fresh = rig.ssh(&pairing.key_file, b"", &[]);
    assert_eq!(fresh.status.code(), Some(255), "{}", text(&fresh.stdout));
    // ...but a second session on the same connection still runs `accept`.
    let (_, other_line) = rig.device_key("other", "second-session");
    let second = rig.ssh(
        &pairing.key_file,
        format!("{other_line}\n").as_bytes(),
        &mux,
    );
    assert_eq!(
        text(&second.stdout),
        "HERDR-ENROLL:ERR:unknown_pairing\n",
        "{}",
        text(&second.stderr)
    );
    assert_eq!(second.status.code(), Some(1));
    let record = heeler::pair::state::StateDir::new(&rig.state_dir)
        .read_enrolled(&id)
        .expect("the second session must not remove enrolled/<id>.json");
    assert!(
        text(&second.stderr).contains("already used"),
        "{}",
        text(&second.stderr)
    );
    assert_eq!(record.line, device_line);
    assert_eq!(record.appended, Some(true));
    assert_eq!(rig.authorized_keys(), format!("{device_line}\n"));

    // `heeler pair` still reports the enrollment.
    signal(&pairing.child, "CONT");
    let (status, out, err) = pairing.finish();
    assert_eq!(status, 0, "{err}");
    assert_eq!(out, format!("enrolled {expected_fp} mux-phone\n"));
    assert_eq!(rig.authorized_keys(), format!("{device_line}\n"));
}

#[test]
fn an_already_authorized_key_adds_nothing_and_offers_no_revoke() {
    require_sshd!();
    let rig = Rig::start("known");
    let (device, device_line) = rig.device_key("device", "known-phone");
    // The user's own line for the same key, restricted by options.
    let mine = format!("from=\"127.0.0.0/8\",no-agent-forwarding {device_line}");
    let ssh_dir = rig.home.join(".ssh");
    std::fs::create_dir_all(&ssh_dir).unwrap();
    std::fs::set_permissions(&ssh_dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    chown(&ssh_dir, rig.uid, rig.gid);
    let ak = ssh_dir.join("authorized_keys");
    std::fs::write(&ak, format!("{mine}\n")).unwrap();
    std::fs::set_permissions(&ak, std::fs::Permissions::from_mode(0o600)).unwrap();
    chown(&ak, rig.uid, rig.gid);

    let pairing = rig.pair(None);
    let id = pairing.pairing_id(&rig);
    signal(&pairing.child, "STOP");
    let answer = rig.ssh(
        &pairing.key_file,
        format!("{device_line}\n").as_bytes(),
        &[],
    );
    let expected_fp = fingerprint_by_ssh_keygen(&device.with_extension("pub"));
    assert_eq!(
        text(&answer.stdout),
        format!("HERDR-ENROLL:OK:{expected_fp}\n"),
        "{}",
        text(&answer.stderr)
    );
    assert_eq!(
        rig.authorized_keys(),
        format!("{mine}\n"),
        "no duplicate, no bootstrap line"
    );
    let record = heeler::pair::state::StateDir::new(&rig.state_dir)
        .read_enrolled(&id)
        .unwrap();
    assert_eq!(record.appended, Some(false));
    let enrolled = heeler::pair::ceremony::Enrolled::from(record);
    assert!(!heeler::pair::ceremony::revoke_device(&rig.home, &enrolled).unwrap());
    assert_eq!(
        rig.authorized_keys(),
        format!("{mine}\n"),
        "revoke keeps it"
    );

    signal(&pairing.child, "CONT");
    let (status, out, err) = pairing.finish();
    assert_eq!(status, 0, "{err}");
    assert_eq!(
        out,
        format!("already authorized {expected_fp} known-phone\n")
    );
    assert!(err.contains("nothing was added"), "{err}");
    assert_eq!(rig.authorized_keys(), format!("{mine}\n"));
    let login = rig.ssh(&device, b"", &["--", "echo still mine"]);
    assert_eq!(
        text(&login.stdout),
        "still mine\n",
        "{}",
        text(&login.stderr)
    );
}

/// Needs only ssh-keygen and python3 `cryptography` (no root, no sshd).
fn openssh_tools_missing() -> Option<String> {
    if !Path::new("/usr/bin/ssh-keygen").exists() {
        return Some("/usr/bin/ssh-keygen is missing (apt-get install openssh-client)".into());
    }
    let python = Command::new("python3")
        .args(["-c", "import cryptography"])
        .output();
    if !python.is_ok_and(|o| o.status.success()) {
        return Some("python3 with the cryptography package is missing".into());
    }
    None
}

#[test]
fn bootstrap_public_line_equals_ssh_keygen_y() {
    if let Some(reason) = openssh_tools_missing() {
        common::skip(&reason);
        return;
    }
    let dir = scratch::TempDir::new("heeler-keygen-y");
    for round in 0..5 {
        let key = heeler::pair::bootstrap_key::BootstrapKey::generate().unwrap();
        let file = dir.join(format!("k{round}"));
        write_openssh_private_key(key.seed(), &file);
        let derived = run_ok(Command::new("ssh-keygen").arg("-y").arg("-f").arg(&file));
        assert_eq!(
            derived
                .split_whitespace()
                .take(2)
                .collect::<Vec<_>>()
                .join(" "),
            key.public_line()
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn host_fingerprint_equals_ssh_keygen_lf() {
    if let Some(reason) = openssh_tools_missing() {
        common::skip(&reason);
        return;
    }
    let dir = scratch::TempDir::new("heeler-keygen-lf");
    for key_type in ["rsa", "ecdsa", "ed25519"] {
        let file = dir.join(format!("ssh_host_{key_type}_key"));
        run_ok(
            Command::new("ssh-keygen")
                .args(["-q", "-t", key_type, "-N", "", "-f"])
                .arg(&file),
        );
        // The newest file written wins the order ed25519 > ecdsa > rsa.
        let found = heeler::pair::host_key::find(&dir).unwrap().unwrap();
        assert_eq!(
            found.path,
            file.with_file_name(format!("ssh_host_{key_type}_key.pub"))
        );
        assert_eq!(
            found.fingerprint,
            fingerprint_by_ssh_keygen(&found.path),
            "{key_type}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
