//! The pairing popup as a user sees it: `heeler pair` runs inside a real
//! tmux pane with a temporary HOME, a stand-in `/etc/ssh` and a pair.json;
//! the tests type keys and read the screen back with `capture-pane`.
//!
//! The QR on screen is turned back into modules and decoded with an
//! independent decoder (rqrr); the decoded code must be exactly the one the
//! pending ceremony minted (its seed's public key, its expiry, its id).
//! Enrollment is driven through `heeler accept`, the forced command sshd
//! would run. Skips (saying so) where tmux is missing.

use crate::common;
use crate::scratch;
use crate::tmux::{Pane, WAIT, require_tmux, sh_quote};

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use heeler::base::base64;
use heeler::base::json;
use heeler::pair::bootstrap_key::{BootstrapKey, ed25519_blob};
use heeler::pair::host_key;
use heeler::pair::popup::qr;
use heeler::wire::pairing_code::{self, Payload};

const HEELER: &str = env!("CARGO_BIN_EXE_heeler");

/// A fixed Ed25519 host key line and its fingerprint.
fn host_key_line() -> (String, String) {
    let blob = ed25519_blob(&[42u8; 32]);
    (
        format!("ssh-ed25519 {} root@test", base64::encode_standard(&blob)),
        host_key::fingerprint(&blob),
    )
}

/// One popup in one tmux server, with its own HOME and /etc/ssh stand-in.
struct Popup {
    pane: Pane,
    root: PathBuf,
    home: PathBuf,
    fingerprint: String,
}

struct Options<'a> {
    width: u16,
    height: u16,
    pair_json: Option<&'a str>,
    host_key: bool,
    env: Vec<(String, String)>,
    /// Stand-in programs put first on PATH: (name, script).
    programs: Vec<(&'a str, String)>,
    /// Extra arguments after `heeler pair`.
    args: Vec<&'a str>,
    /// Runs a copy of heeler from a directory anyone may write to.
    replaceable_binary: bool,
    /// Run the SSH preflight (off by default: no sshd serves these tests,
    /// so they pass `--no-ssh-check`).
    ssh_check: bool,
}

impl Default for Options<'_> {
    fn default() -> Self {
        Options {
            width: 100,
            height: 50,
            pair_json: Some(r#"{"ssh_port":2222,"addresses":["192.168.1.10","nas.example.com"]}"#),
            host_key: true,
            env: Vec::new(),
            programs: Vec::new(),
            args: Vec::new(),
            replaceable_binary: false,
            ssh_check: false,
        }
    }
}

impl Popup {
    fn start(name: &str, options: Options) -> Popup {
        let root = std::env::temp_dir().join(format!("hp-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let home = root.join("home");
        let ssh = root.join("ssh");
        let bin = root.join("bin");
        let config = home.join(".config/herdr/plugins/config/heeler");
        for dir in [&home, &ssh, &bin, &config] {
            fs::create_dir_all(dir).unwrap();
        }
        let (line, fingerprint) = host_key_line();
        if options.host_key {
            fs::write(ssh.join("ssh_host_ed25519_key.pub"), format!("{line}\n")).unwrap();
        }
        for (name, script) in &options.programs {
            let path = bin.join(name);
            crate::support::write_executable(&path, script).unwrap();
        }
        if let Some(text) = options.pair_json {
            fs::write(config.join("pair.json"), text).unwrap();
        }
        let mut env = vec![
            ("HOME".to_owned(), home.to_string_lossy().into_owned()),
            (
                "PATH".to_owned(),
                format!("{}:/usr/bin:/bin", bin.display()),
            ),
            ("TERM".to_owned(), "xterm-256color".to_owned()),
            (
                "HEELER_TEST_HOST_KEY_DIR".to_owned(),
                ssh.to_string_lossy().into_owned(),
            ),
        ];
        env.extend(options.env);
        let heeler = if options.replaceable_binary {
            let shared = root.join("shared");
            fs::create_dir_all(&shared).unwrap();
            fs::set_permissions(&shared, fs::Permissions::from_mode(0o777)).unwrap();
            crate::support::copy_executable(HEELER, shared.join("heeler")).unwrap();
            shared.join("heeler").to_string_lossy().into_owned()
        } else {
            HEELER.to_owned()
        };
        let assignments: Vec<String> = env
            .iter()
            .map(|(k, v)| sh_quote(&format!("{k}={v}")))
            .collect();
        let script = format!(
            "#!/bin/sh\nenv -i {vars} {heeler} pair {args}\necho $? > {exit}\nexec sleep 600\n",
            vars = assignments.join(" "),
            heeler = sh_quote(&heeler),
            args = options
                .args
                .iter()
                .copied()
                .chain((!options.ssh_check).then_some("--no-ssh-check"))
                .map(sh_quote)
                .collect::<Vec<_>>()
                .join(" "),
            exit = sh_quote(&root.join("exit").to_string_lossy()),
        );
        let pane = Pane::start(root.clone(), &script, options.width, options.height);
        Popup {
            pane,
            root,
            home,
            fingerprint,
        }
    }

    fn tmux(&self, args: &[&str]) -> String {
        self.pane.tmux(args)
    }

    fn keys(&self, keys: &[&str]) {
        self.pane.keys(keys)
    }

    fn wait_for(&self, what: &str, test: impl Fn(&str) -> bool) -> String {
        self.pane.wait_for(what, test)
    }

    fn wait_for_text(&self, text: &str) -> String {
        self.pane.wait_for_text(text)
    }

    /// Waits until `path` exists (a stand-in program's sign that it ran).
    fn wait_for_file(&self, what: &str, path: &Path) {
        let deadline = Instant::now() + WAIT;
        while !path.exists() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The popup's exit status, once it has exited.
    fn exit_status(&self) -> i32 {
        self.pane.exit_status()
    }

    fn authorized_keys(&self) -> String {
        fs::read_to_string(self.home.join(".ssh/authorized_keys")).unwrap_or_default()
    }

    fn state_dir(&self) -> PathBuf {
        self.home.join(".local/state/herdr/plugins/heeler")
    }

    fn config_dir(&self) -> PathBuf {
        self.home.join(".config/herdr/plugins/config/heeler")
    }

    /// The one pending ceremony: (id, expiresAt, publicLine).
    fn pending(&self) -> (String, i64, String) {
        let dir = self.state_dir().join("pending");
        let entries: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(entries.len(), 1, "{entries:?}");
        let value = json::parse(&fs::read_to_string(&entries[0]).unwrap()).unwrap();
        (
            value.get("pairingId").unwrap().as_str().unwrap().to_owned(),
            value.get("expiresAt").unwrap().as_i64().unwrap(),
            value
                .get("publicLine")
                .unwrap()
                .as_str()
                .unwrap()
                .to_owned(),
        )
    }

    fn pending_count(&self) -> usize {
        fs::read_dir(self.state_dir().join("pending")).map_or(0, |d| d.count())
    }
}

/// The QR's text rows: every line above the hint line.
fn qr_rows(screen: &str) -> Vec<String> {
    let lines: Vec<&str> = screen.lines().collect();
    let hint = lines
        .iter()
        .position(|l| l.starts_with("Scan with Heeler") || l.starts_with("copied"))
        .expect("a hint line");
    lines[..hint].iter().map(|l| (*l).to_owned()).collect()
}

/// Turns the half blocks back into modules and decodes them with rqrr.
fn decode_qr(screen: &str) -> String {
    let rows = qr_rows(screen);
    // The side is odd (21 + 4v plus two quiet modules), so it takes
    // (side + 1) / 2 rows; tmux drops trailing light cells.
    let side = 2 * rows.len() - 1;
    let mut modules = vec![vec![false; side]; side];
    for (row, line) in rows.iter().enumerate() {
        let mut chars: Vec<char> = line.chars().collect();
        assert!(chars.len() <= side, "row {row} is wider than the QR");
        chars.resize(side, ' ');
        for (x, c) in chars.into_iter().enumerate() {
            let (top, bottom) = qr::modules_of(c).unwrap_or_else(|| panic!("{c:?} in the QR"));
            modules[2 * row][x] = top;
            if 2 * row + 1 < side {
                modules[2 * row + 1][x] = bottom;
            } else {
                assert!(!bottom, "the half row below the QR must be light");
            }
        }
    }
    let (scale, margin) = (4usize, 4usize);
    let pixels = (side + 2 * margin) * scale;
    let mut image = rqrr::PreparedImage::prepare_from_greyscale(pixels, pixels, |x, y| {
        let (mx, my) = (x / scale, y / scale);
        let dark = mx >= margin
            && my >= margin
            && mx - margin < side
            && my - margin < side
            && modules[my - margin][mx - margin];
        if dark { 0 } else { 255 }
    });
    let grids = image.detect_grids();
    assert_eq!(grids.len(), 1, "one QR on screen");
    let (_, content) = grids[0].decode().expect("the QR decodes");
    content
}

fn expected_user() -> String {
    host_key::username().unwrap()
}

fn public_line_of(seed: [u8; 32]) -> String {
    BootstrapKey::from_seed(seed).unwrap().public_line()
}

/// A Device Key line the app would submit.
fn device_key_line(label: &str) -> (String, String) {
    let blob = ed25519_blob(&[9u8; 32]);
    (
        format!("ssh-ed25519 {} {label}", base64::encode_standard(&blob)),
        host_key::fingerprint(&blob),
    )
}

fn accept(popup: &Popup, pairing_id: &str, line: &str) -> String {
    let mut child = Command::new(HEELER)
        .args(["accept", "--state-dir"])
        .arg(popup.state_dir())
        .args(["--pairing-id", pairing_id])
        .env("HOME", &popup.home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(format!("{line}\n").as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

#[test]
fn checklist_contents_and_navigation() {
    require_tmux!();
    let popup = Popup::start("nav", Options::default());
    let screen = popup.wait_for_text("Pair a Heeler device");
    let lines: Vec<&str> = screen.lines().collect();
    assert_eq!(lines[0], "Pair a Heeler device");
    assert!(
        lines[2].starts_with("Select the addresses the phone can reach "),
        "{screen}"
    );
    assert_eq!(lines[4], " > [x] 192.168.1.10 (pair.json, IPv4)");
    assert_eq!(lines[5], "   [x] nas.example.com (pair.json, host name)");
    assert!(
        screen.contains("\nSSH port 2222 (pair.json ssh_port)\n"),
        "{screen}"
    );
    assert!(screen.contains("up/down move, space toggle, a all, enter confirm, q quit"));

    popup.keys(&["j", "Space"]);
    let screen = popup.wait_for_text(" > [ ] nas.example.com");
    assert!(screen.contains("   [x] 192.168.1.10"), "{screen}");
    popup.keys(&["Up", "Up"]);
    popup.wait_for_text(" > [x] 192.168.1.10");
    popup.keys(&["Down"]);
    popup.wait_for_text(" > [ ] nas.example.com");
    popup.keys(&["a"]);
    let screen = popup.wait_for_text(" > [x] nas.example.com");
    assert!(!screen.contains("[ ]"), "a checks every row:\n{screen}");
    popup.keys(&["a"]);
    let screen = popup.wait_for_text(" > [ ] nas.example.com");
    assert!(
        !screen.contains("[x]"),
        "a again unchecks every row:\n{screen}"
    );
    popup.keys(&["Enter"]);
    let screen = popup.wait_for_text("Select at least one address.");
    assert!(
        screen.contains("enter confirm, q quit\n\nSelect at least one address."),
        "{screen}"
    );
    assert_eq!(popup.pending_count(), 0, "no ceremony without an address");
    popup.keys(&["Escape"]);
    assert_eq!(popup.exit_status(), 0);
}

#[test]
fn port_and_pair_json_warnings() {
    require_tmux!();
    let popup = Popup::start(
        "warn",
        Options {
            pair_json: Some(
                r#"{"ssh_port":"2222","addresses":["192.168.1.10"],"launcher":"relative/launcher"}"#,
            ),
            ..Options::default()
        },
    );
    let screen = popup.wait_for_text("Pair a Heeler device");
    assert!(
        screen.contains("SSH port 22 (pair.json ssh_port)"),
        "{screen}"
    );
    assert!(
        screen
            .contains("pair.json ssh_port \"2222\" is not an integer 1..65535. Advertising 22.\n"),
        "{screen}"
    );
    assert!(
        screen.contains("pair.json launcher \"relative/launcher\" is not an absolute path"),
        "{screen}"
    );
    // pair.json is re-read on every repaint: an edit lands on the next key.
    fs::write(
        popup.config_dir().join("pair.json"),
        "{\"ssh_port\": 70000}",
    )
    .unwrap();
    popup.keys(&["j"]);
    popup.wait_for_text("pair.json ssh_port 70000 is not an integer 1..65535. Advertising 22.");
    fs::write(popup.config_dir().join("pair.json"), "{oops").unwrap();
    popup.keys(&["k"]);
    popup.wait_for_text("pair.json is not valid JSON. Advertising 22.");
    fs::write(popup.config_dir().join("pair.json"), "[2222]").unwrap();
    popup.keys(&["j"]);
    popup.wait_for_text("pair.json is not a JSON object. Advertising 22.");
    fs::write(popup.config_dir().join("pair.json"), "{\"ssh_port\": 2200}").unwrap();
    popup.keys(&["k"]);
    let screen = popup.wait_for_text("SSH port 2200 (pair.json ssh_port)");
    assert!(!screen.contains("Advertising"), "{screen}");
    // addresses were read once at open: still listed.
    assert!(
        screen.contains("[x] 192.168.1.10 (pair.json, IPv4)"),
        "{screen}"
    );
    popup.keys(&["q"]);
    assert_eq!(popup.exit_status(), 0);
}

#[test]
fn invalid_addresses_are_named() {
    require_tmux!();
    let popup = Popup::start(
        "addrs",
        Options {
            pair_json: Some(r#"{"addresses":["has space"]}"#),
            ..Options::default()
        },
    );
    let screen = popup.wait_for("the checklist or the fatal screen", |s| {
        s.contains("Pair a Heeler device") || s.contains("Pairing cannot start")
    });
    if screen.contains("Pairing cannot start") {
        // This machine has no routable interface address to fall back to.
        assert!(
            screen.contains("No routable network address found."),
            "{screen}"
        );
        common::skip_part_for_machine(
            "no interface address here; checked the fatal screen instead",
        );
        return;
    }
    assert!(
        screen.contains(
            "pair.json addresses [\"has space\"] is not a list of non-empty strings without whitespace; ignored."
        ),
        "{screen}"
    );
    assert!(!screen.contains("has space ("), "{screen}");
}

#[test]
fn qr_decodes_to_the_pending_code_and_copy_prints_it() {
    require_tmux!();
    let popup = Popup::start("qr", Options::default());
    popup.wait_for_text("Pair a Heeler device");
    popup.keys(&["Enter"]);
    let screen =
        popup.wait_for_text("Scan with Heeler -- c: copy pairing code, any other key close");
    let code = decode_qr(&screen);
    let payload: Payload = pairing_code::decode(&code).expect("a v1 code");
    let (id, expires_at, public_line) = popup.pending();
    assert_eq!(payload.addrs, vec!["192.168.1.10", "nas.example.com"]);
    assert_eq!(payload.port, 2222);
    assert_eq!(payload.user, expected_user());
    assert_eq!(payload.fp, popup.fingerprint);
    let bootstrap = payload.bootstrap.expect("a Bootstrap Key");
    assert_eq!(bootstrap.expires_at, expires_at);
    assert_eq!(public_line_of(bootstrap.seed), public_line);
    let keys = popup.authorized_keys();
    assert!(
        keys.contains(&format!(
            "{public_line} herdr-pairing:{id}:exp:{expires_at}"
        )),
        "{keys}"
    );
    let user = expected_user();
    assert!(
        screen.contains(&format!("\n{user} on port 2222\n")),
        "{screen}"
    );
    assert!(screen.contains(&format!("\nHost key {}\n", popup.fingerprint)));
    assert!(screen.contains("\nAddresses: 192.168.1.10, nas.example.com\n"));
    assert!(screen.contains(", single use"));
    assert!(!screen.contains(&code), "the code is not printed until c");

    // No pbcopy here: c prints the exact code for manual selection, and asks
    // the terminal to copy it with OSC 52 (tmux takes it into a buffer).
    popup.tmux(&["set-option", "-g", "set-clipboard", "on"]);
    popup.keys(&["c"]);
    let screen = popup.wait_for("the printed code", |s| s.contains("HERDR-PAIR:1:"));
    let printed = screen
        .lines()
        .find(|l| l.starts_with("HERDR-PAIR:1:"))
        .unwrap()
        .trim_end();
    assert_eq!(printed, code);
    assert_eq!(
        decode_qr(&screen),
        code,
        "the QR stays while the code is shown"
    );

    popup.keys(&["x"]);
    assert_eq!(popup.exit_status(), 0);
    assert!(!popup.authorized_keys().contains("herdr-pairing:"));
    assert_eq!(popup.pending_count(), 0);
}

#[test]
fn expiry_then_a_fresh_code_with_the_same_addresses() {
    require_tmux!();
    let popup = Popup::start(
        "expiry",
        Options {
            env: vec![("HEELER_TEST_PAIRING_TTL_SECONDS".into(), "4".into())],
            ..Options::default()
        },
    );
    popup.wait_for_text("Pair a Heeler device");
    popup.keys(&["j", "Space", "Enter"]);
    let first = decode_qr(&popup.wait_for_text("Scan with Heeler"));
    let screen = popup.wait_for_text("Pairing Code expired");
    assert!(screen.contains("The Bootstrap Key was removed; the old QR is now useless."));
    assert!(screen.contains("enter generate a new code, any other key close"));
    assert!(!popup.authorized_keys().contains("herdr-pairing:"));
    assert_eq!(popup.pending_count(), 0);

    popup.keys(&["Enter"]);
    let second = decode_qr(&popup.wait_for_text("Scan with Heeler"));
    assert_ne!(first, second);
    let payload = pairing_code::decode(&second).unwrap();
    assert_eq!(
        payload.addrs,
        vec!["192.168.1.10"],
        "the confirmed addresses"
    );
    assert_eq!(popup.pending_count(), 1);
    popup.keys(&["q"]);
    assert_eq!(popup.exit_status(), 0);
    assert!(!popup.authorized_keys().contains("herdr-pairing:"));
}

#[test]
fn enrollment_appears_and_r_revokes_the_device() {
    require_tmux!();
    let popup = Popup::start("enroll", Options::default());
    popup.wait_for_text("Pair a Heeler device");
    popup.keys(&["Enter"]);
    popup.wait_for_text("Scan with Heeler");
    let (id, _, _) = popup.pending();
    let (device_line, device_fp) = device_key_line("iPhone-of-Ada");
    assert_eq!(
        accept(&popup, &id, &device_line),
        format!("HERDR-ENROLL:OK:{device_fp}")
    );
    let screen = popup.wait_for_text("Device paired");
    assert!(
        screen.contains(&format!("\n  Fingerprint  {device_fp}\n")),
        "{screen}"
    );
    assert!(
        screen.contains("\n  Label        iPhone-of-Ada\n"),
        "{screen}"
    );
    assert!(screen.contains("If this was not you, revoke it now to lock that device out."));
    assert!(screen.contains("r revoke this device, any other key close"));
    assert!(popup.authorized_keys().contains(&device_line));

    popup.keys(&["r"]);
    let screen = popup.wait_for_text("Device Key revoked");
    assert!(screen.contains(&format!("\n{device_fp}\n")), "{screen}");
    assert!(
        screen.contains("was removed from authorized_keys; that device can no longer connect.")
    );
    assert!(!popup.authorized_keys().contains(&device_line));
    popup.keys(&["x"]);
    assert_eq!(popup.exit_status(), 0);
    assert_eq!(
        fs::read_dir(popup.state_dir().join("enrolled"))
            .unwrap()
            .count(),
        0
    );
}

#[test]
fn closing_the_success_screen_keeps_the_device() {
    require_tmux!();
    let popup = Popup::start("keep", Options::default());
    popup.wait_for_text("Pair a Heeler device");
    popup.keys(&["Enter"]);
    popup.wait_for_text("Scan with Heeler");
    let (id, _, _) = popup.pending();
    let (device_line, _) = device_key_line("ipad");
    assert!(accept(&popup, &id, &device_line).starts_with("HERDR-ENROLL:OK:"));
    popup.wait_for_text("Device paired");
    popup.keys(&["q"]);
    assert_eq!(popup.exit_status(), 0);
    assert!(popup.authorized_keys().contains(&device_line));
}

#[test]
fn an_already_authorized_key_says_so_and_r_revokes_nothing() {
    require_tmux!();
    let popup = Popup::start("known", Options::default());
    popup.wait_for_text("Pair a Heeler device");
    let (device_line, device_fp) = device_key_line("ipad");
    // The user's own, restricted line for the same key.
    let mine = format!("from=\"10.0.0.0/8\",no-pty {device_line}\n");
    let ssh_dir = popup.home.join(".ssh");
    fs::create_dir_all(&ssh_dir).unwrap();
    fs::write(ssh_dir.join("authorized_keys"), &mine).unwrap();
    popup.keys(&["Enter"]);
    popup.wait_for_text("Scan with Heeler");
    let (id, _, _) = popup.pending();
    assert_eq!(
        accept(&popup, &id, &device_line),
        format!("HERDR-ENROLL:OK:{device_fp}")
    );
    let screen = popup.wait_for_text("Device Key already authorized");
    assert!(
        screen.contains(&format!("\n  Fingerprint  {device_fp}\n")),
        "{screen}"
    );
    assert!(
        screen.contains("nothing was added to authorized_keys:"),
        "{screen}"
    );
    assert!(!screen.contains("revoke"), "no revoke offer: {screen}");
    assert_eq!(popup.authorized_keys(), mine);
    popup.keys(&["r"]);
    assert_eq!(popup.exit_status(), 0);
    assert_eq!(popup.authorized_keys(), mine, "byte-identical after r");
}

#[test]
fn q_and_termination_signals_remove_the_bootstrap_line() {
    require_tmux!();
    let popup = Popup::start("quit", Options::default());
    popup.wait_for_text("Pair a Heeler device");
    popup.keys(&["Enter"]);
    popup.wait_for_text("Scan with Heeler");
    assert!(popup.authorized_keys().contains("herdr-pairing:"));
    popup.keys(&["q"]);
    assert_eq!(popup.exit_status(), 0);
    assert!(!popup.authorized_keys().contains("herdr-pairing:"));
    assert_eq!(popup.pending_count(), 0);

    // Like `heeler pair --no-ui`: 128 + the signal, after the cleanup.
    for (signal, number) in [("TERM", 15), ("HUP", 1), ("INT", 2), ("QUIT", 3)] {
        let killed = Popup::start(&format!("sig{signal}"), Options::default());
        killed.wait_for_text("Pair a Heeler device");
        killed.keys(&["Enter"]);
        killed.wait_for_text("Scan with Heeler");
        assert!(killed.authorized_keys().contains("herdr-pairing:"));
        killed.pane.signal_child("heeler", signal);
        assert_eq!(killed.exit_status(), 128 + number, "SIG{signal}");
        assert!(
            !killed.authorized_keys().contains("herdr-pairing:"),
            "SIG{signal} removes the bootstrap line"
        );
        assert_eq!(killed.pending_count(), 0);
    }
}

#[test]
fn too_small_says_what_it_needs_then_redraws_on_resize() {
    require_tmux!();
    let popup = Popup::start(
        "small",
        Options {
            width: 50,
            height: 20,
            ..Options::default()
        },
    );
    popup.wait_for_text("Pair a Heeler device");
    popup.keys(&["Enter"]);
    let screen = popup.wait_for_text("Window too small for the QR: needs ");
    let text = screen.replace('\n', " ");
    assert!(
        text.contains("Enlarge the window, or press c to copy the Pairing Code."),
        "{screen}"
    );
    assert!(text.contains("Code valid until "), "{screen}");
    assert!(
        !screen.contains('▀') && !screen.contains('█'),
        "no clipped QR:\n{screen}"
    );
    let (width, height) = text
        .split("Window too small for the QR: needs ")
        .nth(1)
        .and_then(|rest| rest.split('.').next())
        .and_then(|size| size.split_once('×'))
        .map(|(w, h)| (w.parse::<u16>().unwrap(), h.parse::<u16>().unwrap()))
        .unwrap();
    assert!(width > 50 || height > 20, "{width}×{height}");

    popup.keys(&["c"]);
    let screen = popup.wait_for("the printed code", |s| s.contains("HERDR-PAIR:1:"));
    // One line that the terminal wraps (joined by capture-pane -J).
    let printed = screen
        .lines()
        .find(|l| l.starts_with("HERDR-PAIR:1:"))
        .unwrap()
        .to_owned();
    assert!(pairing_code::decode(printed.trim_end()).is_ok(), "{screen}");
    assert!(screen.contains("\nCode valid until "), "{screen}");

    popup.tmux(&["resize-window", "-x", "100", "-y", "50"]);
    let screen = popup.wait_for("the QR after the resize", |s| {
        s.contains('█') && s.contains("Scan with Heeler")
    });
    let code = decode_qr(&screen);
    assert_eq!(code, printed.trim_end());
    popup.keys(&["q"]);
    assert_eq!(popup.exit_status(), 0);
}

#[test]
fn tailscale_ssh_conflict_is_warned_after_the_first_paint() {
    require_tmux!();
    // A stand-in tailscale: serving SSH, owning 100.101.1.2.
    let tailscale = "#!/bin/sh\ncase \"$1 $2\" in\n\"status --json\") echo '{\"Self\":{\"TailscaleIPs\":[\"100.101.1.2\",\"fd7a:115c:a1e0::5\"]}}' ;;\n\"debug prefs\") echo '{\"RunSSH\":true}' ;;\n*) exit 1 ;;\nesac\n";
    let popup = Popup::start(
        "tailscale",
        Options {
            pair_json: Some(r#"{"addresses":["100.101.1.2","192.168.1.10"]}"#),
            programs: vec![("tailscale", tailscale.to_owned())],
            ..Options::default()
        },
    );
    let screen = popup.wait_for_text("Tailscale SSH answers");
    assert!(
        screen.contains(
            "Tailscale SSH answers port 22 on 100.101.1.2.\nPairing there reaches tailscaled, not OpenSSH, and cannot finish.\nSet ssh_port in pair.json to a port OpenSSH listens on.\n"
        ),
        "{screen}"
    );
    // The warning follows the selection.
    popup.keys(&["Space"]);
    let screen = popup.wait_for_text(" > [ ] 100.101.1.2");
    assert!(!screen.contains("Tailscale SSH answers"), "{screen}");
    popup.keys(&["q"]);
    assert_eq!(popup.exit_status(), 0);
}

#[test]
fn tailscale_without_ssh_warns_about_nothing() {
    require_tmux!();
    // `debug prefs` is the probe's last question; the stand-in leaves a
    // file beside itself once it has answered it.
    let tailscale = "#!/bin/sh\ncase \"$1 $2\" in\n\"status --json\") echo '{\"Self\":{\"TailscaleIPs\":[\"100.101.1.2\"]}}' ;;\n\"debug prefs\") echo '{\"RunSSH\":false}'; : > \"$(dirname \"$0\")/answered\" ;;\n*) exit 1 ;;\nesac\n";
    let popup = Popup::start(
        "tsoff",
        Options {
            pair_json: Some(r#"{"addresses":["100.101.1.2"]}"#),
            programs: vec![("tailscale", tailscale.to_owned())],
            ..Options::default()
        },
    );
    popup.wait_for_text("Pair a Heeler device");
    // Once the probe has its answer, a key repaints the checklist with it.
    popup.wait_for_file("the Tailscale probe", &popup.root.join("bin/answered"));
    popup.keys(&["j"]);
    let screen = popup.wait_for_text("SSH port 22 (pair.json ssh_port)");
    assert!(!screen.contains("Tailscale SSH answers"), "{screen}");
    popup.keys(&["q"]);
    assert_eq!(popup.exit_status(), 0);
}

#[test]
fn missing_host_key_is_fatal_and_waits_for_a_key() {
    require_tmux!();
    let popup = Popup::start(
        "fatal",
        Options {
            host_key: false,
            ..Options::default()
        },
    );
    let screen = popup.wait_for_text("Pairing cannot start");
    assert!(screen.contains("No SSH host key found under "), "{screen}");
    assert!(screen.contains("  sudo ssh-keygen -A\nThen invoke pairing again."));
    assert!(screen.contains("Press any key to close."));
    std::thread::sleep(Duration::from_millis(200));
    assert!(!popup.root.join("exit").exists(), "it waits for a key");
    popup.keys(&["x"]);
    assert_eq!(popup.exit_status(), 1);
}

/// A stand-in herdr whose `plugin config-dir heeler` prints `config`.
fn fake_herdr(path: &Path, config: &Path) {
    crate::support::write_executable(
        path,
        format!(
            "#!/bin/sh\nif [ \"$1 $2 $3\" = \"plugin config-dir heeler\" ]; then printf '%s\\n' '{}'; exit 0; fi\nexit 3\n",
            config.display()
        ),
    )
    .unwrap();
}

#[test]
fn herdr_outside_the_config_home_gets_a_v2_code() {
    require_tmux!();
    let base = scratch::TempDir::new("hv2");
    let config = base.join("c/herdr/plugins/config/heeler");
    let state = base.join("s/herdr/plugins/heeler");
    fs::create_dir_all(&config).unwrap();
    fs::set_permissions(&config, fs::Permissions::from_mode(0o700)).unwrap();
    fs::create_dir_all(&state).unwrap();
    fs::write(
        config.join("pair.json"),
        r#"{"addresses":["192.168.1.10"]}"#,
    )
    .unwrap();
    let herdr = base.join("herdr-bin");
    fake_herdr(&herdr, &config);
    let sock = base
        .join("c/herdr/herdr.sock")
        .to_string_lossy()
        .into_owned();
    let popup = Popup::start(
        "v2",
        Options {
            pair_json: None,
            env: vec![
                (
                    "HERDR_PLUGIN_CONFIG_DIR".into(),
                    config.to_string_lossy().into_owned(),
                ),
                (
                    "HERDR_PLUGIN_STATE_DIR".into(),
                    state.to_string_lossy().into_owned(),
                ),
                ("HERDR_SOCKET_PATH".into(), sock.clone()),
                (
                    "HERDR_BIN_PATH".into(),
                    herdr.to_string_lossy().into_owned(),
                ),
            ],
            ..Options::default()
        },
    );
    let launcher = config.join("launcher").to_string_lossy().into_owned();
    let line = format!("Endpoint {sock} via {launcher}");
    popup.wait_for(&line, |s| s.contains(&format!("{line}\n")));
    let mode = fs::metadata(&launcher).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
    popup.keys(&["Enter"]);
    let screen = popup.wait_for_text("Scan with Heeler");
    let code = decode_qr(&screen);
    let body = code.strip_prefix("HERDR-PAIR:2:").expect("a v2 code");
    let wire = json::parse(&String::from_utf8(base64::decode_url(body).unwrap()).unwrap()).unwrap();
    let endpoint = pairing_code::endpoint_from_wire(&wire).unwrap();
    assert_eq!(endpoint.sock, sock);
    assert_eq!(endpoint.herdr, launcher);
    let payload = pairing_code::payload_from_wire(&wire).unwrap();
    assert_eq!(payload.addrs, vec!["192.168.1.10"]);
    assert!(payload.bootstrap.is_some());
    let keys: Vec<&str> = wire.as_object().unwrap().iter().map(|(k, _)| k).collect();
    assert_eq!(
        keys,
        [
            "addrs", "port", "user", "fp", "sock", "herdr", "seed", "exp"
        ]
    );
    assert!(screen.contains(&format!("\n{line}\n")), "{screen}");
    popup.keys(&["q"]);
    assert_eq!(popup.exit_status(), 0);
    drop(popup);
    let _ = fs::remove_dir_all(&base);
}

#[test]
fn a_shared_state_home_offers_no_code() {
    require_tmux!();
    let base = scratch::TempDir::new("hv2s");
    let config = base.join("c/herdr/plugins/config/heeler");
    fs::create_dir_all(&config).unwrap();
    fs::write(
        config.join("pair.json"),
        r#"{"addresses":["192.168.1.10"]}"#,
    )
    .unwrap();
    let popup = Popup::start(
        "v2shared",
        Options {
            pair_json: None,
            env: vec![
                (
                    "HERDR_PLUGIN_CONFIG_DIR".into(),
                    config.to_string_lossy().into_owned(),
                ),
                (
                    "HERDR_SOCKET_PATH".into(),
                    base.join("c/herdr/herdr.sock")
                        .to_string_lossy()
                        .into_owned(),
                ),
                ("HERDR_BIN_PATH".into(), "/nonexistent/herdr".into()),
            ],
            ..Options::default()
        },
    );
    // HERDR_PLUGIN_STATE_DIR unset = herdr's default state home: shared.
    let screen = popup.wait_for_text("No Pairing Code offered.");
    assert!(screen.contains("XDG_STATE_HOME"), "{screen}");
    popup.keys(&["Enter"]);
    popup.wait_for_text("No Pairing Code can be offered for this herdr (see above).");
    assert_eq!(popup.pending_count(), 0);
    assert!(!popup.authorized_keys().contains("herdr-pairing:"));
    popup.keys(&["q"]);
    assert_eq!(popup.exit_status(), 0);
    drop(popup);
    let _ = fs::remove_dir_all(&base);
}

#[test]
fn a_shared_config_home_on_another_socket_is_warned_but_paired_v1() {
    require_tmux!();
    let name = "v1warn";
    // The user's own config dir under the popup's HOME, but another socket.
    let home = std::env::temp_dir().join(format!("hp-{name}-{}/home", std::process::id()));
    let config = home.join(".config/herdr/plugins/config/heeler");
    let other = "/tmp/elsewhere/herdr/herdr.sock";
    let popup = Popup::start(
        name,
        Options {
            env: vec![
                (
                    "HERDR_PLUGIN_CONFIG_DIR".into(),
                    config.to_string_lossy().into_owned(),
                ),
                ("HERDR_SOCKET_PATH".into(), other.into()),
            ],
            ..Options::default()
        },
    );
    assert_eq!(popup.home, home);
    let screen = popup.wait_for_text("Pair a Heeler device");
    assert!(
        screen.contains(&format!(
            "This herdr listens on {other} but shares ~/.config/herdr"
        )),
        "{screen}"
    );
    popup.keys(&["Enter"]);
    let code = decode_qr(&popup.wait_for_text("Scan with Heeler"));
    assert!(pairing_code::decode(&code).is_ok(), "a v1 code: {code}");
    popup.keys(&["q"]);
    assert_eq!(popup.exit_status(), 0);
}

#[test]
fn a_binary_another_user_can_replace_is_refused_before_a_key_is_minted() {
    require_tmux!();
    let popup = Popup::start(
        "replaceable",
        Options {
            width: 250,
            replaceable_binary: true,
            ..Options::default()
        },
    );
    popup.wait_for_text("Pair a Heeler device");
    popup.keys(&["Enter"]);
    let screen = popup.wait_for_text("Pairing cannot start");
    let shared = fs::canonicalize(popup.root.join("shared")).unwrap();
    let shared = shared.display();
    // The popup wraps at word boundaries: compare with the line breaks
    // folded into spaces.
    let words = |text: &str| text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words(&screen).contains(&words(&format!(
            "Could not start pairing: another user could replace {shared}/heeler, which the phone's SSH login runs: \
             {shared} is writable by group or others (mode 0777); run `chmod go-w {shared}`"
        ))),
        "{screen}"
    );
    assert_eq!(popup.authorized_keys(), "", "no Bootstrap Key");
    assert_eq!(popup.pending_count(), 0);
    popup.keys(&["Enter"]);
    assert_eq!(popup.exit_status(), 1);
}

#[test]
fn a_ceremony_that_cannot_start_is_fatal() {
    require_tmux!();
    let popup = Popup::start("nostart", Options::default());
    popup.wait_for_text("Pair a Heeler device");
    // ~/.ssh is a file: no authorized_keys can be written.
    fs::write(popup.home.join(".ssh"), "not a directory").unwrap();
    popup.keys(&["Enter"]);
    let screen = popup.wait_for_text("Pairing cannot start");
    assert!(screen.contains("\nCould not start pairing: "), "{screen}");
    assert!(screen.contains("Press any key to close."));
    assert_eq!(
        popup.pending_count(),
        0,
        "the pending file is removed again"
    );
    popup.keys(&["Enter"]);
    assert_eq!(popup.exit_status(), 1);
}

#[test]
fn command_line_addresses_are_listed_first() {
    require_tmux!();
    let popup = Popup::start(
        "cli",
        Options {
            args: vec!["--address", "10.20.30.40"],
            ..Options::default()
        },
    );
    let screen = popup.wait_for_text("Pair a Heeler device");
    let lines: Vec<&str> = screen.lines().collect();
    assert_eq!(lines[4], " > [x] 10.20.30.40 (--address, IPv4)", "{screen}");
    assert_eq!(
        lines[5], "   [x] 192.168.1.10 (pair.json, IPv4)",
        "{screen}"
    );
    popup.keys(&["q"]);
    assert_eq!(popup.exit_status(), 0);
}

/// Every word of letters on screen (QR rows aside) is a word of the
/// popup's wording, never a piece of one (such as "ha" and "s" of "has").
/// Words with digits or dots are data (addresses, times, sizes), and so
/// are the pieces of a host key fingerprint wider than the window.
fn assert_whole_words(popup: &Popup, screen: &str, size: (u16, u16)) {
    const WORDING: &str = "Pair a Heeler device Select the addresses the phone can reach on \
        SSH port pair.json ssh_port up/down move space toggle a all enter confirm q quit \
        Window too small needs Enlarge it or press to quit --address pair.json host name \
        Scan with Heeler c copy pairing code any other key close copied on port Host key \
        Addresses Code valid until single use -- up/down for the QR Enlarge the window or press c to \
        copy the Pairing Code select and it IPv IPv4 IPv6 command line x pair json";
    let known: std::collections::HashSet<&str> = WORDING.split_whitespace().collect();
    let user = expected_user();
    let host = hostname();
    for line in screen.lines() {
        if line.contains('▀') || line.contains('█') || line.contains('▄') {
            continue;
        }
        for word in line.split(|c: char| c.is_whitespace() || "(),>[]".contains(c)) {
            let word = word.strip_suffix('.').unwrap_or(word);
            let word = word.strip_suffix(':').unwrap_or(word);
            if word.is_empty()
                || word.contains(|c: char| c.is_ascii_digit() || c == '.' || c == ':')
                || word == user
                || host.split('.').any(|h| h == word)
                // A fingerprint is longer than a narrow row: split, as it must be.
                || popup.fingerprint.contains(word)
            {
                continue;
            }
            assert!(
                known.contains(word),
                "{size:?}: {word:?} is not a whole word:\n{screen}"
            );
        }
    }
}

/// The size message's `W×H`, if the screen shows it.
fn needs(screen: &str) -> Option<(u16, u16)> {
    let text = screen.replace('\n', " ");
    let rest = text.split("needs ").nth(1)?;
    let (w, h) = rest.split('.').next()?.split_once('×')?;
    Some((w.parse().ok()?, h.parse().ok()?))
}

/// `code` is the Pairing Code of the popup's pending ceremony: its seed
/// derives the pending public line, its expiry is the pending one.
fn assert_pending_code(popup: &Popup, code: &str, size: (u16, u16)) {
    let payload: Payload = pairing_code::decode(code).unwrap_or_else(|e| panic!("{size:?}: {e:?}"));
    let (_, expires_at, public_line) = popup.pending();
    let bootstrap = payload.bootstrap.expect("a Bootstrap Key");
    assert_eq!(bootstrap.expires_at, expires_at, "{size:?}");
    assert_eq!(public_line_of(bootstrap.seed), public_line, "{size:?}");
}

/// The machine's host name as the checklist names it.
fn hostname() -> String {
    fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_owned()
}

#[test]
fn every_screen_fits_the_window_or_says_what_it_needs() {
    require_tmux!();
    // Each size is a popup of its own (its own tmux server, home and
    // ceremony), and the checks wait on the screen, not the CPU: the sizes
    // run side by side.
    std::thread::scope(|scope| {
        for (width, height) in [(30, 10), (40, 12), (80, 14), (80, 24), (200, 50)] {
            scope.spawn(move || screens_fit(width, height));
        }
    });
}

/// Every screen of a popup `width` × `height` fits it or says what it
/// needs.
fn screens_fit(width: u16, height: u16) {
    let size = (width, height);
    let popup = Popup::start(
        &format!("fit{width}x{height}"),
        Options {
            width,
            height,
            // Ten rows: more than the smaller windows hold.
            args: vec![
                "--address",
                "10.9.0.1",
                "--address",
                "10.9.0.2",
                "--address",
                "10.9.0.3",
                "--address",
                "10.9.0.4",
                "--address",
                "10.9.0.5",
                "--address",
                "10.9.0.6",
                "--address",
                "10.9.0.7",
                "--address",
                "10.9.0.8",
            ],
            ..Options::default()
        },
    );
    let screen = popup.wait_for("the checklist", |s| {
        s.starts_with("Pair a Heeler device") || s.contains("Window too small")
    });
    assert!(
        screen.lines().count() <= usize::from(height),
        "{size:?}:\n{screen}"
    );
    assert_whole_words(&popup, &screen, size);
    if screen.starts_with("Pair a Heeler device") {
        // Title, cursor and keys stay, whatever scrolls.
        popup.keys(&["j"; 12]);
        popup.keys(&["k"]);
        let screen = popup.wait_for("the cursor", |s| s.contains(" > ["));
        assert!(
            screen.starts_with("Pair a Heeler device\n"),
            "{size:?}:\n{screen}"
        );
        assert!(
            screen.replace('\n', " ").contains("enter confirm, q quit"),
            "{size:?}:\n{screen}"
        );
        assert!(
            screen.lines().count() <= usize::from(height),
            "{size:?}:\n{screen}"
        );
        assert_whole_words(&popup, &screen, size);
    } else {
        let (w, h) = needs(&screen).unwrap_or_else(|| panic!("{size:?}:\n{screen}"));
        assert!(w > width || h > height, "{size:?} needs {w}×{h}");
    }

    popup.keys(&["Enter"]);
    let screen = popup.wait_for("the QR screen", |s| {
        s.contains("Code valid until") || s.contains("Window too small")
    });
    assert_whole_words(&popup, &screen, size);
    assert!(
        screen.lines().count() <= usize::from(height),
        "{size:?}:\n{screen}"
    );
    if screen.contains('█') {
        assert_pending_code(&popup, &decode_qr(&screen), size);
        assert!(
            screen.contains("\nCode valid until "),
            "{size:?}: the expiry shows with the QR:\n{screen}"
        );
    } else {
        let (w, h) = needs(&screen).unwrap_or_else(|| panic!("{size:?}:\n{screen}"));
        assert!(w > width || h > height, "{size:?} needs {w}×{h}:\n{screen}");
    }
    if width >= 40 {
        assert!(screen.contains("Code valid until "), "{size:?}:\n{screen}");
    }

    popup.keys(&["c"]);
    let screen = popup.wait_for("the printed code", |s| {
        s.contains("HERDR-PAIR:1:") || s.contains("Window too small: needs")
    });
    assert_whole_words(&popup, &screen, size);
    match screen.lines().find(|l| l.starts_with("HERDR-PAIR:1:")) {
        Some(printed) => {
            // Whole: one line (wrapped by the terminal) that decodes to
            // the pending ceremony's code.
            assert_pending_code(&popup, printed.trim_end(), size);
            assert!(
                screen.contains("\nCode valid until "),
                "{size:?}:\n{screen}"
            );
        }
        None => {
            let (w, h) = needs(&screen).unwrap();
            assert!(
                w > width && h <= height,
                "{size:?}: widen to {w}×{h}:\n{screen}"
            );
        }
    }
    if width >= 40 {
        assert!(
            screen.contains("HERDR-PAIR:1:"),
            "{size:?}: room for the code:\n{screen}"
        );
    }
    popup.keys(&["q"]);
    assert_eq!(popup.exit_status(), 0, "{size:?}");
}

/// A stand-in SSH server on loopback that sends `banner` to every
/// connection; returns its port.
fn banner_server(banner: &'static str) -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { break };
            let _ = std::io::Write::write_all(&mut stream, banner.as_bytes());
        }
    });
    port
}

#[test]
fn the_ssh_preflight_is_a_checklist_row_and_holds_back_the_code() {
    require_tmux!();
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let pair_json = format!(r#"{{"ssh_port":{port},"addresses":["192.168.1.10"]}}"#);
    let popup = Popup::start(
        "preflight",
        Options {
            pair_json: Some(&pair_json),
            ssh_check: true,
            ..Options::default()
        },
    );
    let screen = popup.wait_for_text("[FAIL] SSH server:");
    let text = screen.replace('\n', " ");
    assert!(
        text.contains(&format!(
            "[FAIL] SSH server: no SSH server answers on 127.0.0.1:{port} (connection refused)"
        )),
        "{screen}"
    );
    assert!(
        text.contains(&format!("Fix: start OpenSSH on port {port}")),
        "{screen}"
    );
    popup.keys(&["Enter"]);
    popup.wait_for_text("No Pairing Code until OpenSSH answers (see the SSH server row).");
    assert_eq!(popup.pending_count(), 0, "no ceremony without sshd");
    assert!(!popup.authorized_keys().contains("herdr-pairing:"));

    // Tailscale SSH on the port: refused too, with doctor's fix.
    let tailscale = banner_server("SSH-2.0-Tailscale\r\n");
    fs::write(
        popup.config_dir().join("pair.json"),
        format!(r#"{{"ssh_port":{tailscale},"addresses":["192.168.1.10"]}}"#),
    )
    .unwrap();
    popup.keys(&["Enter"]);
    let screen = popup.wait_for_text("Tailscale SSH answers on port");
    assert!(
        screen
            .replace('\n', " ")
            .contains("tailscale set --ssh=false"),
        "{screen}"
    );
    assert_eq!(popup.pending_count(), 0);

    // OpenSSH answering now: Enter checks again and shows the code.
    let openssh = banner_server("SSH-2.0-OpenSSH_9.6p1 Ubuntu-3ubuntu13\r\n");
    fs::write(
        popup.config_dir().join("pair.json"),
        format!(r#"{{"ssh_port":{openssh},"addresses":["192.168.1.10"]}}"#),
    )
    .unwrap();
    popup.keys(&["Enter"]);
    let screen = popup.wait_for_text("Scan with Heeler");
    let payload: Payload = pairing_code::decode(&decode_qr(&screen)).unwrap();
    assert_eq!(payload.port, openssh);
    assert_eq!(popup.pending_count(), 1);
    popup.keys(&["q"]);
    assert_eq!(popup.exit_status(), 0);
}
