//! `heeler pair --no-ui` as a process: the code it prints, expiry, and the
//! signals that must remove the bootstrap line before it exits. Runs as any
//! user: HOME, the state and config dirs and the host key dir are temp dirs.
//! The tests without HOME (which falls back to the passwd home) run, as
//! root, as a throwaway user whose passwd home is a temp dir, so nothing
//! touches root's own home; without root they print `SKIPPED` and return (a failure under
//! `HEELER_REQUIRE_ALL=1`).

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use heeler::wire::pairing_code;

struct Dirs {
    root: PathBuf,
}

impl Drop for Dirs {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

impl Dirs {
    fn new(tag: &str) -> Dirs {
        let root = std::env::temp_dir().join(format!("heeler-pair-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for dir in ["home", "state", "config", "hostkeys"] {
            std::fs::create_dir_all(root.join(dir)).unwrap();
        }
        // An ECDSA key only: the ed25519 file is absent, so ecdsa wins.
        std::fs::write(
            root.join("hostkeys/ssh_host_ecdsa_key.pub"),
            "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBLcfUSSSNIBQAj/hJRedw91OfYBl8cH3TmBZbnAqRk3IF+DE3Qat5MuqssEA1NUWbqSSbGIRRcp0ckbz/p0pI18= root@host\n",
        )
        .unwrap();
        Dirs { root }
    }

    fn home(&self) -> PathBuf {
        self.root.join("home")
    }

    fn authorized_keys(&self) -> String {
        std::fs::read_to_string(self.home().join(".ssh/authorized_keys")).unwrap_or_default()
    }

    /// heeler with `args`; a `pair` skips the SSH preflight (no sshd serves
    /// these tests; the preflight has its own, through [`Dirs::checked`]).
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = self.checked(args);
        if args.first() == Some(&"pair") {
            cmd.arg("--no-ssh-check");
        }
        cmd
    }

    /// heeler with `args` exactly.
    fn checked(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_heeler"));
        cmd.args(args)
            .env_clear()
            .env("HOME", self.home())
            .env("HERDR_PLUGIN_STATE_DIR", self.root.join("state"))
            .env("HERDR_PLUGIN_CONFIG_DIR", self.root.join("config"))
            .env("HEELER_TEST_HOST_KEY_DIR", self.root.join("hostkeys"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }

    /// Starts a ceremony; returns the child, its stdout and the decoded code.
    fn start(
        &self,
        ttl: Option<&str>,
    ) -> (
        Child,
        BufReader<std::process::ChildStdout>,
        pairing_code::Payload,
    ) {
        self.start_paused(ttl, None)
    }

    /// [`Dirs::start`], the process stopping once at `pause` (a
    /// `HEELER_TEST_PAUSE` value).
    fn start_paused(
        &self,
        ttl: Option<&str>,
        pause: Option<String>,
    ) -> (
        Child,
        BufReader<std::process::ChildStdout>,
        pairing_code::Payload,
    ) {
        let mut cmd = self.command(&["pair", "--no-ui", "--address", "192.0.2.7"]);
        if let Some(ttl) = ttl {
            cmd.env("HEELER_TEST_PAIRING_TTL_SECONDS", ttl);
        }
        if let Some(pause) = pause {
            cmd.env("HEELER_TEST_PAUSE", pause);
        }
        let mut child = cmd.spawn().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut code = String::new();
        stdout.read_line(&mut code).unwrap();
        let payload = pairing_code::decode(code.trim())
            .unwrap_or_else(|e| panic!("{e:?} / {code:?} / {}", stderr_of(&mut child)));
        (child, stdout, payload)
    }
}

/// What `ssh-keygen -lf` printed for the ECDSA key above.
const HOST_FINGERPRINT: &str = "SHA256:Empegmy1tODZIDkKKsD5Fs1MM7sa8DmIRjkP7DeY4DI";

fn stderr_of(child: &mut Child) -> String {
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    err
}

#[test]
fn config_only_code_has_no_bootstrap_key_and_honours_pair_json() {
    let dirs = Dirs::new("config");
    std::fs::write(dirs.root.join("config/pair.json"), "{\"ssh_port\":2222}").unwrap();
    let output = dirs
        .command(&[
            "pair",
            "--no-ui",
            "--config-only",
            "--address",
            "10.1.2.3",
            "--address",
            "host.example",
        ])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert_eq!(stdout.lines().count(), 1);
    let payload = pairing_code::decode(stdout.trim()).unwrap();
    assert_eq!(payload.addrs, ["10.1.2.3", "host.example"]);
    assert_eq!(payload.port, 2222);
    assert_eq!(payload.fp, HOST_FINGERPRINT);
    assert!(payload.bootstrap.is_none());
    assert_eq!(dirs.authorized_keys(), "", "no key is minted");
}

/// A loopback port nothing listens on: bound, then released.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[test]
fn the_ssh_preflight_refuses_a_port_nothing_listens_on() {
    let dirs = Dirs::new("preflight");
    let port = free_port();
    std::fs::write(
        dirs.root.join("config/pair.json"),
        format!("{{\"ssh_port\":{port}}}"),
    )
    .unwrap();
    for extra in [&["--config-only"][..], &[]] {
        let mut args = vec!["pair", "--no-ui", "--address", "127.0.0.1"];
        args.extend_from_slice(extra);
        let output = dirs.checked(&args).output().unwrap();
        assert_eq!(output.status.code(), Some(1), "{args:?}: {output:?}");
        assert!(output.stdout.is_empty(), "no code is printed: {output:?}");
        let stderr = String::from_utf8(output.stderr).unwrap();
        // One line: doctor's `ssh_server` summary and fix, and the way out.
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.starts_with(&format!(
                "heeler pair: no SSH server answers on 127.0.0.1:{port} (connection refused); fix: start OpenSSH on port {port}"
            )),
            "{stderr}"
        );
        assert!(
            stderr.ends_with("(or pass --no-ssh-check to print the code anyway)\n"),
            "{stderr}"
        );
    }
    assert_eq!(dirs.authorized_keys(), "", "no key is minted");
    assert!(
        !dirs.root.join("state/pending").exists()
            || file_names(&dirs.root.join("state/pending")).is_empty()
    );
    // --no-ssh-check prints the code anyway.
    let output = dirs
        .checked(&[
            "pair",
            "--no-ui",
            "--config-only",
            "--no-ssh-check",
            "--address",
            "127.0.0.1",
        ])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let payload = pairing_code::decode(String::from_utf8(output.stdout).unwrap().trim()).unwrap();
    assert_eq!(payload.port, port);
}

#[test]
fn a_bad_pair_json_falls_back_to_22_and_says_so() {
    let dirs = Dirs::new("badjson");
    std::fs::write(dirs.root.join("config/pair.json"), "{\"ssh_port\":0}").unwrap();
    let output = dirs
        .command(&["pair", "--no-ui", "--config-only", "--address", "10.0.0.1"])
        .output()
        .unwrap();
    assert!(output.status.success());
    let payload = pairing_code::decode(String::from_utf8_lossy(&output.stdout).trim()).unwrap();
    assert_eq!(payload.port, 22);
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "pair.json ssh_port 0 is not an integer 1..65535. Advertising 22.\n"
    );
}

#[test]
fn config_only_without_no_ui_prints_a_code_and_mints_no_key() {
    // `--config-only` prints a code and exits, so it needs no popup; the
    // popup used to ignore it and mint a Bootstrap Key.
    let dirs = Dirs::new("configpopup");
    let output = dirs
        .command(&["pair", "--config-only", "--address", "10.1.2.3"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    let payload = pairing_code::decode(stdout.trim()).unwrap();
    assert_eq!(payload.addrs, ["10.1.2.3"]);
    assert!(payload.bootstrap.is_none());
    assert_eq!(dirs.authorized_keys(), "", "no key is minted");
}

#[test]
fn a_bad_address_is_named_not_reported_as_a_bad_code() {
    let dirs = Dirs::new("badaddr");
    for (address, shown) in [("", "\"\""), ("a b", "\"a b\"")] {
        for extra in [&["--config-only"][..], &[]] {
            let mut args = vec!["pair", "--no-ui", "--address", address];
            args.extend_from_slice(extra);
            let output = dirs.command(&args).output().unwrap();
            assert_eq!(output.status.code(), Some(1), "{args:?}");
            assert!(output.stdout.is_empty(), "{args:?}");
            assert_eq!(
                String::from_utf8_lossy(&output.stderr),
                format!("heeler pair: --address {shown} is not an address without whitespace.\n"),
                "{args:?}"
            );
        }
    }
    assert_eq!(dirs.authorized_keys(), "", "no key is minted");
}

#[test]
fn without_no_ui_or_a_terminal_it_points_at_no_ui() {
    // `heeler pair` without --no-ui is the popup; with no terminal it exits 1.
    let dirs = Dirs::new("noui");
    let output = dirs.command(&["pair"]).output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--no-ui"));
}

#[test]
fn expiry_removes_the_line_and_exits_1() {
    let dirs = Dirs::new("expiry");
    let (mut child, mut stdout, payload) = dirs.start(Some("1"));
    assert!(payload.bootstrap.is_some());
    assert!(dirs.authorized_keys().contains("herdr-pairing:"));
    let status = child.wait().unwrap();
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    assert_eq!(status.code(), Some(1));
    assert_eq!(rest, "", "nothing more on stdout");
    assert!(stderr_of(&mut child).contains("Pairing Code expired"));
    assert_eq!(dirs.authorized_keys(), "");
    assert_eq!(
        std::fs::read_dir(dirs.root.join("state/pending"))
            .unwrap()
            .count(),
        0
    );
}

/// Sends a signal with the shell's `kill` builtin (no procps needed).
fn kill(signal: &str, child: &Child) -> std::process::ExitStatus {
    Command::new("sh")
        .args(["-c", &format!("kill -s {signal} {}", child.id())])
        .status()
        .unwrap()
}

fn signal_removes_line(signal: &str, number: i32) {
    let dirs = Dirs::new(signal);
    std::fs::create_dir_all(dirs.home().join(".ssh")).unwrap();
    std::fs::write(
        dirs.home().join(".ssh/authorized_keys"),
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOwn mine\n",
    )
    .unwrap();
    let (mut child, _stdout, payload) = dirs.start(None);
    let exp = payload.bootstrap.unwrap().expires_at;
    assert!(dirs.authorized_keys().contains(&format!(":exp:{exp}")));
    let status = kill(signal, &child);
    assert!(status.success());
    let exit = child.wait().unwrap();
    assert_eq!(exit.code(), Some(128 + number), "{signal}");
    assert!(stderr_of(&mut child).contains("the Bootstrap Key was removed"));
    assert_eq!(
        dirs.authorized_keys(),
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOwn mine\n",
        "{signal} removed exactly the bootstrap line"
    );
    assert!(!Path::new(&dirs.home().join(".ssh/authorized_keys.herdr-pairing.lock")).exists());
}

/// The soft "Max core file size" of a running process, from /proc.
#[cfg(target_os = "linux")]
fn soft_core_limit(pid: u32) -> String {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max core file size"))
        .unwrap();
    line["Max core file size".len()..]
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned()
}

#[cfg(target_os = "linux")]
#[test]
fn a_ceremony_holding_a_seed_cannot_dump_core() {
    // Started with core dumps allowed, the process turns them off itself:
    // with `panic = "abort"` a core would hold the Bootstrap Key's seed.
    let dirs = Dirs::new("core");
    let cmd = dirs.command(&[]);
    let mut sh = Command::new("/bin/sh");
    sh.args([
        "-c",
        "ulimit -S -c unlimited && exec \"$0\" \"$@\"",
        env!("CARGO_BIN_EXE_heeler"),
        "pair",
        "--no-ui",
        "--no-ssh-check",
        "--address",
        "192.0.2.7",
    ])
    .env_clear()
    .envs(cmd.get_envs().filter_map(|(k, v)| Some((k, v?))))
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let probe = Command::new("/bin/sh")
        .args(["-c", "ulimit -S -c unlimited && ulimit -S -c"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&probe.stdout), "unlimited\n");
    let mut child = sh.spawn().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut code = String::new();
    stdout.read_line(&mut code).unwrap();
    let limit = soft_core_limit(child.id());
    assert!(kill("TERM", &child).success());
    child.wait().unwrap();
    assert!(code.starts_with("HERDR-PAIR:1:"), "{code}");
    assert_eq!(limit, "0");
}

#[test]
fn sigterm_removes_the_line() {
    signal_removes_line("TERM", 15);
}

#[test]
fn sigint_removes_the_line() {
    signal_removes_line("INT", 2);
}

#[test]
fn sighup_removes_the_line() {
    signal_removes_line("HUP", 1);
}

#[test]
fn start_up_sweep_removes_a_killed_ceremony_line() {
    let dirs = Dirs::new("sweep");
    let (mut killed, _out, _) = dirs.start(Some("1"));
    killed.kill().unwrap();
    killed.wait().unwrap();
    let stale = dirs.authorized_keys();
    assert!(stale.contains("herdr-pairing:"));
    // The sweep removes a line once its expiry is now or past.
    let exp: i64 = stale
        .trim_end()
        .rsplit(":exp:")
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no expiry in {stale:?}"));
    while heeler::base::clock::unix_seconds() < exp {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let (mut child, _stdout, payload) = dirs.start(None);
    let now_text = dirs.authorized_keys();
    assert!(
        !now_text.contains(stale.trim()),
        "the expired line was swept"
    );
    assert_eq!(now_text.lines().count(), 1);
    assert!(now_text.contains(&format!(":exp:{}", payload.bootstrap.unwrap().expires_at)));
    kill("TERM", &child);
    child.wait().unwrap();
}

/// The pairing id in the bootstrap line of `authorized_keys`
/// (`… herdr-pairing:<id>:exp:<unix>`).
fn pairing_id_of(authorized_keys: &str) -> String {
    let marker = authorized_keys
        .split_whitespace()
        .find_map(|word| word.strip_prefix("herdr-pairing:"))
        .expect("a bootstrap line");
    marker.split(':').next().unwrap().to_owned()
}

fn file_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn config_only_without_home_reads_pair_json_from_xdg_config_home() {
    // `--config-only` writes nothing, so the passwd home (as root: /root)
    // is resolved but never touched.
    let dirs = Dirs::new("nohome-config");
    let xdg_config = dirs.root.join("xdg-config");
    let config_dir = xdg_config.join("herdr/plugins/config/heeler");
    std::fs::create_dir_all(&config_dir).unwrap();
    std::fs::write(config_dir.join("pair.json"), "{\"ssh_port\":2222}").unwrap();
    for home in [Some(""), None] {
        let mut cmd = dirs.command(&["pair", "--no-ui", "--config-only", "--address", "10.0.0.1"]);
        cmd.env_remove("HERDR_PLUGIN_CONFIG_DIR")
            .env_remove("HERDR_PLUGIN_STATE_DIR")
            .env("XDG_CONFIG_HOME", &xdg_config);
        match home {
            Some(value) => cmd.env("HOME", value),
            None => cmd.env_remove("HOME"),
        };
        let output = cmd.output().unwrap();
        assert!(output.status.success(), "HOME={home:?}: {output:?}");
        let payload = pairing_code::decode(String::from_utf8_lossy(&output.stdout).trim()).unwrap();
        assert_eq!(payload.port, 2222, "HOME={home:?}");
        assert_eq!(String::from_utf8_lossy(&output.stderr), "", "HOME={home:?}");
    }
}

use crate::common::ACCOUNTS;

/// A fresh unprivileged user whose passwd home is a temp dir, so a
/// ceremony without `HOME` writes there and never into root's home; with
/// a copy of heeler it can run and a host key dir it can read. Removed
/// (with its files) on drop.
struct PasswdUser {
    name: String,
    uid: u32,
    gid: u32,
    root: PathBuf,
    heeler: common::TrustedCopy,
}

impl Drop for PasswdUser {
    fn drop(&mut self) {
        let _guard = ACCOUNTS.lock().unwrap_or_else(|e| e.into_inner());
        let _ = Command::new("userdel").arg(&self.name).output();
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn id_of(flag: &str, user: &str) -> u32 {
    let output = Command::new("id").args([flag, user]).output().unwrap();
    String::from_utf8_lossy(&output.stdout)
        .trim()
        .parse()
        .unwrap()
}

impl PasswdUser {
    /// `None` (and the reason printed) unless running as root with useradd.
    fn create(tag: &str) -> Option<PasswdUser> {
        use std::os::unix::fs::PermissionsExt;
        let uid = Command::new("id").arg("-u").output().unwrap();
        if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
            common::skip("not running as root (needed to create a user)");
            return None;
        }
        if !Path::new("/usr/sbin/useradd").exists() {
            common::skip("/usr/sbin/useradd is missing");
            return None;
        }
        let root = std::env::temp_dir().join(format!("heeler-pair-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).unwrap();
        let name = format!("hlrp{tag}{}", std::process::id() % 100_000);
        let home = root.join("home");
        {
            let _guard = ACCOUNTS.lock().unwrap_or_else(|e| e.into_inner());
            let _ = Command::new("userdel").arg(&name).output();
            let added = Command::new("useradd")
                .args(["-M", "-d", home.to_str().unwrap(), "-s", "/bin/sh", &name])
                .output()
                .unwrap();
            assert!(added.status.success(), "useradd: {added:?}");
        }
        // The binary under target/ may sit below directories the user
        // cannot traverse, and the temp dir is one others may write to
        // (which heeler refuses for a forced command's binary); a copy in a
        // directory only root writes is neither.
        let heeler = common::TrustedCopy::new(&name, Path::new(env!("CARGO_BIN_EXE_heeler")));
        let user = PasswdUser {
            uid: id_of("-u", &name),
            gid: id_of("-g", &name),
            name,
            root,
            heeler,
        };
        std::fs::create_dir_all(&home).unwrap();
        user.own(&home);
        std::fs::write(
            user.dir("hostkeys").join("ssh_host_ecdsa_key.pub"),
            "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBLcfUSSSNIBQAj/hJRedw91OfYBl8cH3TmBZbnAqRk3IF+DE3Qat5MuqssEA1NUWbqSSbGIRRcp0ckbz/p0pI18= root@host\n",
        )
        .unwrap();
        Some(user)
    }

    fn home(&self) -> PathBuf {
        self.root.join("home")
    }

    fn heeler(&self) -> PathBuf {
        self.heeler.path()
    }

    fn authorized_keys(&self) -> String {
        std::fs::read_to_string(self.home().join(".ssh/authorized_keys")).unwrap_or_default()
    }

    fn own(&self, path: &Path) {
        std::os::unix::fs::chown(path, Some(self.uid), Some(self.gid)).unwrap();
    }

    /// A directory the user owns.
    fn dir(&self, name: &str) -> PathBuf {
        let dir = self.root.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        self.own(&dir);
        dir
    }

    /// heeler as this user, from `/`, with only the test host key dir and
    /// `vars` in its environment.
    fn command(&self, args: &[&str], vars: &[(&str, &Path)]) -> Command {
        use std::os::unix::process::CommandExt;
        let mut cmd = Command::new(self.heeler());
        cmd.args(args);
        if args.first() == Some(&"pair") {
            // No sshd serves these tests (see `Dirs::command`).
            cmd.arg("--no-ssh-check");
        }
        cmd.env_clear()
            .env("HEELER_TEST_HOST_KEY_DIR", self.root.join("hostkeys"))
            .envs(vars.iter().copied())
            .uid(self.uid)
            .gid(self.gid)
            .current_dir("/")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }

    /// Starts `heeler pair --no-ui`; returns the child, its stdout and the
    /// decoded code.
    fn start_pairing(
        &self,
        vars: &[(&str, &Path)],
    ) -> (
        Child,
        BufReader<std::process::ChildStdout>,
        pairing_code::Payload,
    ) {
        let mut child = self
            .command(&["pair", "--no-ui", "--address", "192.0.2.7"], vars)
            .spawn()
            .unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut code = String::new();
        stdout.read_line(&mut code).unwrap();
        let payload = pairing_code::decode(code.trim())
            .unwrap_or_else(|e| panic!("{e:?} / {}", stderr_of(&mut child)));
        (child, stdout, payload)
    }
}

#[test]
fn a_ceremony_without_home_uses_the_passwd_home_and_the_xdg_dirs() {
    let Some(user) = PasswdUser::create("xdg") else {
        return;
    };
    let xdg_state = user.dir("xdg-state");
    let xdg_config = user.dir("xdg-config");
    let config_dir = xdg_config.join("herdr/plugins/config/heeler");
    std::fs::create_dir_all(&config_dir).unwrap();
    std::fs::write(config_dir.join("pair.json"), "{\"ssh_port\":2222}").unwrap();
    let empty = Path::new("");

    // With XDG_STATE_HOME the state lands under it; without, under the
    // passwd home's ~/.local/state. Either way pair.json comes from
    // XDG_CONFIG_HOME and the bootstrap line goes to the passwd home.
    let cases = [
        (
            "HOME empty",
            vec![
                ("HOME", empty),
                ("XDG_STATE_HOME", xdg_state.as_path()),
                ("XDG_CONFIG_HOME", xdg_config.as_path()),
            ],
            xdg_state.join("herdr/plugins/heeler"),
        ),
        (
            "HOME unset",
            vec![("XDG_CONFIG_HOME", xdg_config.as_path())],
            user.home().join(".local/state/herdr/plugins/heeler"),
        ),
    ];
    for (case, vars, state_dir) in cases {
        let (mut child, _stdout, payload) = user.start_pairing(&vars);
        assert_eq!(payload.port, 2222, "{case}");
        let id = pairing_id_of(&user.authorized_keys());
        assert_eq!(
            file_names(&state_dir.join("pending")),
            [format!("{id}.json")],
            "{case}"
        );
        kill("TERM", &child);
        assert_eq!(child.wait().unwrap().code(), Some(128 + 15), "{case}");
        assert_eq!(file_names(&state_dir.join("pending")), Vec::<String>::new());
        assert_eq!(user.authorized_keys(), "", "{case}");
    }
}

#[test]
fn accept_with_an_empty_home_enrolls_into_the_passwd_home() {
    let Some(user) = PasswdUser::create("acc") else {
        return;
    };
    let empty = Path::new("");
    let (mut pairing, mut stdout, _) = user.start_pairing(&[("HOME", empty)]);
    let id = pairing_id_of(&user.authorized_keys());
    let state_dir = user.home().join(".local/state/herdr/plugins/heeler");
    let device_line = format!(
        "{} empty-home",
        heeler::pair::bootstrap_key::BootstrapKey::from_seed([7; 32])
            .unwrap()
            .public_line()
    );
    // What sshd would run, but with HOME set and empty.
    // The copy was written by a child process (`support::copy_executable`),
    // so no descriptor of it can make this spawn fail with ETXTBSY.
    let mut accept = user
        .command(
            &["accept", "--state-dir", state_dir.to_str().unwrap()],
            &[("HOME", empty)],
        )
        .args(["--pairing-id", &id])
        .spawn()
        .unwrap();
    accept
        .stdin
        .take()
        .unwrap()
        .write_all(format!("{device_line}\n").as_bytes())
        .unwrap();
    let output = accept.wait_with_output().unwrap();
    let answer = String::from_utf8_lossy(&output.stdout);
    assert!(
        answer.starts_with("HERDR-ENROLL:OK:SHA256:"),
        "{answer} / {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(pairing.wait().unwrap().code(), Some(0));
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    assert!(rest.starts_with("enrolled SHA256:"), "{rest}");
    assert!(rest.ends_with(" empty-home\n"), "{rest}");
    assert_eq!(user.authorized_keys(), format!("{device_line}\n"));
}

/// A test-only pause point (`HEELER_TEST_PAUSE=<step>:<file>`, debug
/// builds): the process creates the file when it reaches the step and
/// waits there until the file is removed.
struct Pause {
    step: &'static str,
    file: PathBuf,
}

impl Pause {
    fn new(dirs: &Dirs, step: &'static str) -> Pause {
        Pause {
            step,
            file: dirs.root.join(format!("paused-{step}")),
        }
    }

    fn env(&self) -> String {
        format!("{}:{}", self.step, self.file.display())
    }

    /// Waits until the process stands at the step (a generous bound, so a
    /// process that never gets there fails the test instead of hanging).
    fn reached(&self) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !self.file.exists() {
            assert!(
                std::time::Instant::now() < deadline,
                "never paused at {}",
                self.step
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }

    fn resume(&self) {
        std::fs::remove_file(&self.file).unwrap();
    }
}

/// What the test does to `accept` at its pause.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// SIGKILL `accept` there; `pair` runs on to its (short) expiry.
    KillAccept,
    /// SIGTERM `pair` while `accept` stands there, then let `accept` go on.
    CancelPair,
}

const DEVICE_SEED: [u8; 32] = [9; 32];

fn device_line() -> String {
    format!(
        "{} phone",
        heeler::pair::bootstrap_key::BootstrapKey::from_seed(DEVICE_SEED)
            .unwrap()
            .public_line()
    )
}

/// One ceremony in which `accept` stops at `step` and the test does
/// `stop`; returns `pair`'s status, its stdout after the code, the
/// accept's stdout, and the key file.
fn ceremony_stopped_at(step: &'static str, stop: Stop) -> (Option<i32>, String, String, String) {
    let dirs = Dirs::new(&format!("stop-{step}-{stop:?}"));
    // `pair` stops after its first poll, so nothing it does races the
    // steps below; a short TTL ends it when no signal does.
    let parked = Pause::new(&dirs, "poll");
    let ttl = (stop == Stop::KillAccept).then_some("4");
    let (mut pair, mut stdout, _) = dirs.start_paused(ttl, Some(parked.env()));
    parked.reached();
    let id = pairing_id_of(&dirs.authorized_keys());
    let at = Pause::new(&dirs, step);
    let mut accept = accept_command(&dirs, &id)
        .env("HEELER_TEST_PAUSE", at.env())
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    accept
        .stdin
        .take()
        .unwrap()
        .write_all(format!("{}\n", device_line()).as_bytes())
        .unwrap();
    at.reached();
    match stop {
        Stop::KillAccept => {
            accept.kill().unwrap();
            parked.resume();
        }
        Stop::CancelPair => {
            assert!(kill("TERM", &pair).success());
            // `pair` wakes with the signal pending and ends the ceremony,
            // waiting for the lock while `accept` holds it (past `record`
            // and `key`). At `accept` no lock is held yet: `pair` ends
            // first, then `accept` goes on.
            parked.resume();
            if step == "accept" {
                pair.wait().unwrap();
            }
            at.resume();
        }
    }
    let accepted = accept.wait_with_output().unwrap();
    let status = pair.wait().unwrap();
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    let err = stderr_of(&mut pair);
    println!("{step} {stop:?}: pair {status:?} {rest:?} {err:?}");
    let state = dirs.root.join("state");
    let leftovers: Vec<String> = ["pending", "enrolled"]
        .iter()
        .flat_map(|d| std::fs::read_dir(state.join(d)).into_iter().flatten())
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(leftovers.is_empty(), "state left: {leftovers:?}");
    let keys = dirs.authorized_keys();
    assert!(
        !keys.contains("herdr-pairing:"),
        "the bootstrap line is gone: {keys}"
    );
    (
        status.code(),
        rest,
        String::from_utf8_lossy(&accepted.stdout).into_owned(),
        keys,
    )
}

fn assert_enrolled(rest: &str, keys: &str) {
    assert!(rest.starts_with("enrolled SHA256:"), "{rest:?}");
    assert!(rest.ends_with(" phone\n"), "{rest:?}");
    assert_eq!(keys, format!("{}\n", device_line()), "the key is there");
}

#[test]
fn an_accept_killed_before_its_key_line_is_no_enrollment() {
    // Killed before it takes the lock, or between its record and its key
    // line: `pair` reports nothing and expires; no key was added. The two
    // ceremonies are apart (directories of their own) and each waits for
    // its code's expiry, so they wait together.
    let runs: Vec<_> = std::thread::scope(|scope| {
        let started: Vec<_> = ["accept", "record"]
            .map(|step| {
                (
                    step,
                    scope.spawn(move || ceremony_stopped_at(step, Stop::KillAccept)),
                )
            })
            .into_iter()
            .collect();
        started
            .into_iter()
            .map(|(step, run)| (step, run.join().unwrap()))
            .collect()
    });
    for (step, (status, rest, answer, keys)) in runs {
        assert_eq!(status, Some(1), "{step}: the code expired");
        assert_eq!(rest, "", "{step}: no enrollment reported");
        assert_eq!(answer, "", "{step}: killed before answering");
        assert_eq!(keys, "", "{step}: no key");
    }
}

#[test]
fn an_accept_killed_after_its_key_line_is_reported() {
    let (status, rest, answer, keys) = ceremony_stopped_at("key", Stop::KillAccept);
    assert_eq!(status, Some(0));
    assert_eq!(answer, "", "killed before answering");
    assert_enrolled(&rest, &keys);
}

#[test]
fn a_cancel_at_any_step_of_accept_reports_what_the_key_file_holds() {
    // Cancelled while `accept` has only read the key: `pair` ends the
    // ceremony first, and `accept` then finds it over.
    let (status, rest, answer, keys) = ceremony_stopped_at("accept", Stop::CancelPair);
    assert_eq!(status, Some(143));
    assert_eq!(rest, "");
    assert_eq!(answer, "HERDR-ENROLL:ERR:unknown_pairing\n");
    assert_eq!(keys, "");
    // Cancelled while `accept` holds the lock, after its record or its
    // key line: `pair` waits for it and reports the enrollment.
    for step in ["record", "key"] {
        let (status, rest, answer, keys) = ceremony_stopped_at(step, Stop::CancelPair);
        assert_eq!(status, Some(143), "{step}");
        assert!(
            answer.starts_with("HERDR-ENROLL:OK:SHA256:"),
            "{step}: {answer}"
        );
        assert_enrolled(&rest, &keys);
    }
}

#[test]
fn a_signal_right_after_an_enrollment_reports_it() {
    // `pair` stands between two polls (the pause), `accept` enrolls, and
    // SIGTERM arrives before the next poll: the enrollment is reported,
    // the key kept, and the status is the signal's.
    let dirs = Dirs::new("signal-after-ok");
    let parked = Pause::new(&dirs, "poll");
    let (mut pair, mut stdout, _) = dirs.start_paused(None, Some(parked.env()));
    parked.reached();
    let id = pairing_id_of(&dirs.authorized_keys());
    let mut accept = accept_command(&dirs, &id)
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    accept
        .stdin
        .take()
        .unwrap()
        .write_all(format!("{}\n", device_line()).as_bytes())
        .unwrap();
    let answer = accept.wait_with_output().unwrap();
    assert!(String::from_utf8_lossy(&answer.stdout).starts_with("HERDR-ENROLL:OK:"));
    assert!(kill("TERM", &pair).success());
    parked.resume();
    let status = pair.wait().unwrap();
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    let err = stderr_of(&mut pair);
    assert_eq!(status.code(), Some(143), "{err}");
    assert_enrolled(&rest, &dirs.authorized_keys());
    assert!(err.contains("stays in authorized_keys"), "{err}");
}

#[test]
fn a_record_whose_key_is_absent_is_never_reported() {
    // What an `accept` killed between its enrolled record and its key line
    // leaves: the record names a Device Key the key file does not hold.
    // `pair` must not print "enrolled" for it; it expires instead.
    let dirs = Dirs::new("record-no-key");
    let (mut pair, mut stdout, _) = dirs.start(Some("2"));
    let id = pairing_id_of(&dirs.authorized_keys());
    let enrolled = dirs.root.join("state/enrolled");
    std::fs::create_dir_all(&enrolled).unwrap();
    std::fs::write(
        enrolled.join(format!("{id}.json")),
        format!(
            "{{\"pairingId\":\"{id}\",\"expiresAt\":9999999999,\"fingerprint\":\"SHA256:x\",\"line\":\"{}\",\"appended\":true}}\n",
            device_line()
        ),
    )
    .unwrap();
    let status = pair.wait().unwrap();
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    assert_eq!(rest, "", "no enrollment reported");
    assert_eq!(status.code(), Some(1), "{}", stderr_of(&mut pair));
    assert_eq!(dirs.authorized_keys(), "");
    assert!(
        !enrolled.join(format!("{id}.json")).exists(),
        "the stale record went"
    );
}

#[test]
fn a_signal_within_the_poll_interval_after_an_ok_reports_it() {
    // `pair` is stopped (SIGSTOP) while `accept` enrolls, then gets SIGTERM
    // and SIGCONT: the signal is seen before the next poll (or, rarely,
    // the poll runs first); either way the enrollment is reported and the
    // key stays.
    let dirs = Dirs::new("stop-then-term");
    let (mut pair, mut stdout, _) = dirs.start(None);
    let id = pairing_id_of(&dirs.authorized_keys());
    assert!(kill("STOP", &pair).success());
    let mut accept = accept_command(&dirs, &id)
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    accept
        .stdin
        .take()
        .unwrap()
        .write_all(format!("{}\n", device_line()).as_bytes())
        .unwrap();
    let answer = accept.wait_with_output().unwrap();
    assert!(String::from_utf8_lossy(&answer.stdout).starts_with("HERDR-ENROLL:OK:"));
    assert!(kill("TERM", &pair).success());
    assert!(kill("CONT", &pair).success());
    let status = pair.wait().unwrap();
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    let err = stderr_of(&mut pair);
    assert!(matches!(status.code(), Some(143 | 0)), "{status:?} {err}");
    assert_enrolled(&rest, &dirs.authorized_keys());
}

/// How long a command may take before the test calls it blocked.
const BLOCKED_AFTER: std::time::Duration = std::time::Duration::from_secs(60);

/// Puts `shape` at `path`: a link to a device, or a FIFO nobody writes.
fn plant(path: &Path, shape: &str) {
    let _ = std::fs::remove_file(path);
    if shape == "FIFO" {
        let made = Command::new("mkfifo").arg(path).status().unwrap();
        assert!(made.success(), "mkfifo");
    } else {
        std::os::unix::fs::symlink(shape, path).unwrap();
    }
}

#[test]
fn a_pair_json_that_is_a_device_or_a_fifo_is_refused_at_once() {
    // A link to /dev/zero was read whole (gigabytes) and a FIFO blocked the
    // read for good; both are now a warning and the default port.
    let dirs = Dirs::new("devjson");
    let pair_json = dirs.root.join("config/pair.json");
    for shape in ["/dev/zero", "/dev/urandom", "FIFO"] {
        plant(&pair_json, shape);
        let output = common::output_within(
            &mut dirs.command(&["pair", "--no-ui", "--config-only", "--address", "10.0.0.1"]),
            BLOCKED_AFTER,
        );
        assert!(output.status.success(), "{shape}: {output:?}");
        let payload = pairing_code::decode(String::from_utf8_lossy(&output.stdout).trim()).unwrap();
        assert_eq!(payload.port, 22, "{shape}");
        assert_eq!(
            String::from_utf8_lossy(&output.stderr),
            format!(
                "pair.json could not be read ({} is not a regular file). Advertising 22.\n",
                pair_json.display()
            ),
            "{shape}"
        );
    }
    // A ceremony reads it the same way: the code is printed, and SIGTERM
    // ends it as always.
    let (child, _stdout, payload) = dirs.start(None);
    assert_eq!(payload.port, 22);
    assert!(payload.bootstrap.is_some());
    kill("TERM", &child);
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(128 + 15));
    assert_eq!(dirs.authorized_keys(), "");
}

/// A full disk mid-append: `pair --no-ui` under `prlimit --fsize` (the
/// file may grow only 16 bytes past its size, so the Bootstrap Key line
/// is written short) must leave `authorized_keys` byte-identical and show
/// no code; the next ceremony's line lands whole, on a line of its own
/// even though the user's last line has no newline.
#[test]
fn a_short_write_leaves_authorized_keys_as_it_was() {
    if Command::new("prlimit").arg("--version").output().is_err() {
        common::skip("prlimit is missing (apt-get install util-linux)");
        return;
    }
    let dirs = Dirs::new("short");
    let ssh = dirs.home().join(".ssh");
    std::fs::create_dir_all(&ssh).unwrap();
    let file = ssh.join("authorized_keys");
    let mut before = String::new();
    for i in 0..100 {
        before.push_str(&format!(
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{i:040} user{i}\n"
        ));
    }
    before.push_str("ssh-ed25519 AAAAlast no-newline");
    std::fs::write(&file, &before).unwrap();
    let limit = before.len() + 16;
    // SIGXFSZ ignored (inherited through exec), as a full disk sends none:
    // a write past the limit then fails with EFBIG instead of killing.
    let cmd = dirs.command(&["pair", "--no-ui", "--address", "192.0.2.7"]);
    let program = cmd.get_program().to_owned();
    let args: Vec<_> = cmd.get_args().map(ToOwned::to_owned).collect();
    let mut limited = Command::new("sh");
    limited
        .args(["-c", "trap '' XFSZ; exec prlimit --fsize=\"$0\" -- \"$@\""])
        .arg(limit.to_string())
        .arg(program)
        .args(args)
        .env_clear();
    for (key, value) in cmd.get_envs() {
        if let Some(value) = value {
            limited.env(key, value);
        }
    }
    limited.env("PATH", "/usr/bin:/bin");
    let out = limited.stdin(Stdio::null()).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(out.stdout, b"", "no Pairing Code");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("could be written"),
        "{out:?}"
    );
    assert_eq!(
        std::fs::read(&file).unwrap(),
        before.as_bytes(),
        "byte-identical after the short write"
    );
    assert_eq!(
        file_names(&dirs.root.join("state/pending")),
        Vec::<String>::new()
    );

    // Space again: the next ceremony's line is whole and on its own line.
    let (mut child, _stdout, payload) = dirs.start(None);
    let during = dirs.authorized_keys();
    let added = during
        .strip_prefix(&format!("{before}\n"))
        .unwrap_or_else(|| panic!("the user's lines first, then a newline: {during:?}"));
    let exp = payload.bootstrap.unwrap().expires_at;
    assert!(added.starts_with("restrict,command=\""), "{added:?}");
    assert!(added.ends_with(&format!(":exp:{exp}\n")), "{added:?}");
    assert_eq!(added.lines().count(), 1, "{added:?}");
    kill("TERM", &child);
    child.wait().unwrap();
    assert_eq!(dirs.authorized_keys(), format!("{before}\n"));
}

/// `heeler accept` for pairing `id` in the test's state dir.
fn accept_command(dirs: &Dirs, id: &str) -> Command {
    let state = dirs.root.join("state");
    dirs.command(&[
        "accept",
        "--state-dir",
        state.to_str().unwrap(),
        "--pairing-id",
        id,
    ])
}

/// `accept` for `id` with the test's Device Key on stdin: its stdout.
fn accept_answer(dirs: &Dirs, id: &str) -> String {
    let mut accept = accept_command(dirs, id)
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    // A refusal may come before the key is read (a closed pipe then).
    let _ = accept
        .stdin
        .take()
        .unwrap()
        .write_all(format!("{}\n", device_line()).as_bytes());
    String::from_utf8(accept.wait_with_output().unwrap().stdout).unwrap()
}

/// An `accept` killed between creating the lock file and writing its pid
/// leaves an empty lock nobody holds (as planted here: the exact file such
/// a kill leaves). A cancel takes it over at once instead of giving up at
/// its 5 s deadline with the code still usable.
#[test]
fn a_cancel_takes_over_an_empty_lock_a_killed_accept_left() {
    let dirs = Dirs::new("empty-lock");
    let (mut pair, _stdout, _) = dirs.start(None);
    let id = pairing_id_of(&dirs.authorized_keys());
    let lock = dirs.home().join(".ssh/authorized_keys.herdr-pairing.lock");
    std::fs::write(&lock, b"").unwrap();
    let started = std::time::Instant::now();
    assert!(kill("TERM", &pair).success());
    let status = pair.wait().unwrap();
    println!(
        "cancel with an empty lock took {} ms",
        started.elapsed().as_millis()
    );
    let err = stderr_of(&mut pair);
    assert_eq!(status.code(), Some(143), "{err}");
    assert!(err.contains("the Bootstrap Key was removed"), "{err}");
    assert_eq!(dirs.authorized_keys(), "");
    assert!(!lock.exists());
    assert_eq!(
        file_names(&dirs.root.join("state/pending")),
        Vec::<String>::new()
    );
    assert_eq!(
        accept_answer(&dirs, &id),
        "HERDR-ENROLL:ERR:unknown_pairing\n"
    );
}

/// A cancel that cannot get the lock at all (a live process holds it past
/// the 5 s deadline) still leaves no usable code: the pending record goes
/// first, without the lock, so `accept` refuses.
#[test]
fn a_cancel_that_cannot_get_the_lock_still_leaves_no_usable_code() {
    let dirs = Dirs::new("held-lock");
    let (mut pair, _stdout, _) = dirs.start(None);
    let id = pairing_id_of(&dirs.authorized_keys());
    let mut holder = Command::new("sleep").arg("60").spawn().unwrap();
    let lock = dirs.home().join(".ssh/authorized_keys.herdr-pairing.lock");
    std::fs::write(&lock, format!("{}\n", holder.id())).unwrap();
    assert!(kill("TERM", &pair).success());
    let status = pair.wait().unwrap();
    let err = stderr_of(&mut pair);
    assert_eq!(status.code(), Some(143), "{err}");
    assert!(err.contains("cleanup failed"), "{err}");
    assert_eq!(
        file_names(&dirs.root.join("state/pending")),
        Vec::<String>::new()
    );
    assert_eq!(
        accept_answer(&dirs, &id),
        "HERDR-ENROLL:ERR:unknown_pairing\n"
    );
    holder.kill().unwrap();
    holder.wait().unwrap();
}

/// Two ceremonies in one state dir: B is cancelled (its line and pending
/// record gone), and B's Bootstrap Key, whose seed B's code printed, is
/// submitted to A as a Device Key: refused, so the printed seed never
/// logs in for good. A still enrolls a real Device Key afterwards.
#[test]
fn an_earlier_ceremonys_bootstrap_key_is_refused_as_a_device_key() {
    let dirs = Dirs::new("two-ceremonies");
    let (mut a, _a_out, _) = dirs.start(None);
    let a_id = pairing_id_of(&dirs.authorized_keys());
    let (mut b, _b_out, b_code) = dirs.start(None);
    assert!(kill("TERM", &b).success());
    assert_eq!(b.wait().unwrap().code(), Some(143));
    assert_eq!(
        dirs.authorized_keys().matches("herdr-pairing:").count(),
        1,
        "only A's line is left"
    );
    let b_seed = b_code.bootstrap.unwrap().seed;
    let b_public = heeler::pair::bootstrap_key::BootstrapKey::from_seed(b_seed)
        .unwrap()
        .public_line();
    assert!(!dirs.authorized_keys().contains(&b_public));
    let submit = |line: &str| {
        let mut accept = accept_command(&dirs, &a_id)
            .stdin(Stdio::piped())
            .spawn()
            .unwrap();
        let _ = accept
            .stdin
            .take()
            .unwrap()
            .write_all(format!("{line}\n").as_bytes());
        String::from_utf8(accept.wait_with_output().unwrap().stdout).unwrap()
    };
    assert_eq!(
        submit(&format!("{b_public} phone")),
        "HERDR-ENROLL:ERR:invalid_key\n"
    );
    assert!(!dirs.authorized_keys().contains(&b_public));
    assert!(submit(&device_line()).starts_with("HERDR-ENROLL:OK:SHA256:"));
    let status = a.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{}", stderr_of(&mut a));
}

/// An editor that read `authorized_keys` during a ceremony writes the
/// Bootstrap Key line back after the ceremony removed it: doctor names
/// the leftover by its pairing id, and the next ceremony removes it.
#[test]
fn doctor_names_a_written_back_bootstrap_line_and_the_next_ceremony_removes_it() {
    let dirs = Dirs::new("written-back");
    let (mut a, _a_out, _) = dirs.start(None);
    let during = dirs.authorized_keys();
    let a_id = pairing_id_of(&during);
    assert!(kill("TERM", &a).success());
    a.wait().unwrap();
    assert_eq!(dirs.authorized_keys(), "");
    std::fs::write(dirs.home().join(".ssh/authorized_keys"), &during).unwrap();

    let out = dirs.checked(&["doctor", "--json"]).output().unwrap();
    let report = heeler::base::json::parse(String::from_utf8(out.stdout).unwrap().trim()).unwrap();
    let check = report
        .get("checks")
        .and_then(heeler::base::json::Value::as_array)
        .unwrap()
        .iter()
        .find(|c| {
            c.get("id").and_then(heeler::base::json::Value::as_str) == Some("bootstrap_lines")
        })
        .cloned()
        .expect("a bootstrap_lines check");
    let field = |key: &str| {
        check
            .get(key)
            .and_then(heeler::base::json::Value::as_str)
            .unwrap()
            .to_owned()
    };
    assert_eq!(field("status"), "warn");
    assert_eq!(
        field("summary"),
        format!(
            "1 Bootstrap Key line(s) whose ceremony is gone left in authorized_keys (pairing {a_id})"
        )
    );

    let (mut b, _b_out, _) = dirs.start(None);
    let now = dirs.authorized_keys();
    assert!(!now.contains(&a_id), "the leftover is gone: {now}");
    assert_eq!(now.lines().count(), 1, "only B's line: {now}");
    assert!(kill("TERM", &b).success());
    b.wait().unwrap();
}

/// A killed writer's temp files in `enrolled/` and `pending/` (an
/// enrolled one holds a Device Key line) are swept when the next ceremony
/// starts; a live writer's fresh temp stays.
#[test]
fn a_ceremonys_start_sweeps_a_killed_writers_temps() {
    let dirs = Dirs::new("temps");
    let mut child = Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let state = dirs.root.join("state");
    let enrolled = state.join("enrolled");
    let pending = state.join("pending");
    std::fs::create_dir_all(&enrolled).unwrap();
    std::fs::create_dir_all(&pending).unwrap();
    let record = format!(
        "{{\"pairingId\":\"0a1b2c3d4e5f\",\"expiresAt\":{},\"fingerprint\":\"SHA256:x\",\"line\":\"{}\"",
        i64::from(u32::MAX),
        device_line()
    );
    let dead_enrolled = enrolled.join(format!("0a1b2c3d4e5f.json.tmp-{dead}-0"));
    let dead_pending = pending.join(format!("0a1b2c3d4e5f.json.tmp-{dead}-0"));
    let live = enrolled.join(format!("aaaabbbbcccc.json.tmp-{}-0", std::process::id()));
    for temp in [&dead_enrolled, &dead_pending, &live] {
        std::fs::write(temp, &record).unwrap();
    }
    let (mut pair, _stdout, _) = dirs.start(None);
    assert!(
        !dead_enrolled.exists(),
        "the dead writer's record copy is gone"
    );
    assert!(!dead_pending.exists());
    assert!(live.exists(), "a live writer's fresh temp stays");
    assert!(kill("TERM", &pair).success());
    pair.wait().unwrap();
}
