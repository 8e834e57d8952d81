//! install.sh, run under dash the way herdr's [[build]] step runs it: in a
//! copy of the checkout, with a fake `uname` (and `sysctl`, `cargo`, `curl`)
//! first on a PATH that holds only the tools the script may use, against a
//! loopback HTTP release server or a `file://` release directory.
//!
//! Every failure case checks that the previous bin/heeler is byte-for-byte
//! untouched, no staging file is left behind, and every line the script wrote
//! on stderr starts with `heeler install:`.
//!
//! The matrix at the end serves a release laid out exactly as `cargo xtask
//! dist` writes it (`xtask/src/dist_layout.rs`, with small stub binaries),
//! as a `file://` directory and from a loopback HTTPS server with a test CA,
//! for each of the four assets (Rosetta included): success, checksum
//! mismatch, missing asset and interrupted download.

use crate::common;
use crate::dist_layout;
use crate::scratch;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

const VERSION: &str = env!("CARGO_PKG_VERSION");
const PREVIOUS: &str = "#!/bin/sh\necho 'heeler 0.7.9'\n";
/// The tools install.sh may call; the test PATH holds links to exactly these.
const TOOLS: &[&str] = &[
    "sed",
    "head",
    "grep",
    "git",
    "cp",
    "mkdir",
    "mktemp",
    "chmod",
    "mv",
    "rm",
    "cat",
    "awk",
    "cut",
    "tr",
    "sha256sum",
    "shasum",
    "dirname",
    "curl",
    "wget",
    "ln",
    "ls",
    "id",
];

fn stub_binary(version: &str) -> String {
    format!("#!/bin/sh\necho 'heeler {version}'\n")
}

fn sha256_hex(bytes: &[u8]) -> String {
    ring::digest::digest(&ring::digest::SHA256, bytes)
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn write_executable(path: &Path, text: &str) {
    crate::support::write_executable(path, text).unwrap();
}

fn find_tool(name: &str) -> Option<PathBuf> {
    ["/opt/homebrew/bin", "/usr/local/bin", "/usr/bin", "/bin"]
        .iter()
        .map(|dir| Path::new(dir).join(name))
        .find(|path| path.exists())
}

/// dash when installed (the shell herdr's users on Debian/Ubuntu have as sh),
/// else /bin/sh, said out loud.
fn shell() -> PathBuf {
    match find_tool("dash") {
        Some(dash) => dash,
        None => {
            println!("NOTE: dash not found; running install.sh under /bin/sh");
            PathBuf::from("/bin/sh")
        }
    }
}

/// A throwaway copy of the plugin checkout plus its fake tools and release.
struct Fixture {
    root: PathBuf,
    checkout: PathBuf,
    fake_bin: PathBuf,
    release: PathBuf,
    env: Vec<(String, String)>,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

static COUNTER: AtomicUsize = AtomicUsize::new(0);

impl Fixture {
    fn new(name: &str) -> Fixture {
        let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
            "install-sh-{name}-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&root);
        let checkout = root.join("checkout");
        let fake_bin = root.join("fake-bin");
        let release = root.join("release");
        for dir in [
            &checkout,
            &fake_bin,
            &release,
            &root.join("home"),
            &root.join("tmp"),
        ] {
            std::fs::create_dir_all(dir).unwrap();
        }
        let source = Path::new(env!("CARGO_MANIFEST_DIR"));
        for file in ["install.sh", "herdr-plugin.toml"] {
            std::fs::copy(source.join(file), checkout.join(file)).unwrap();
        }
        for tool in TOOLS {
            if let Some(real) = find_tool(tool) {
                std::os::unix::fs::symlink(real, fake_bin.join(tool)).unwrap();
            }
        }
        let fixture = Fixture {
            env: vec![
                ("PATH".into(), fake_bin.display().to_string()),
                ("HOME".into(), root.join("home").display().to_string()),
                ("TMPDIR".into(), root.join("tmp").display().to_string()),
                // Keep git from finding the repository this test runs in.
                ("GIT_CEILING_DIRECTORIES".into(), root.display().to_string()),
            ],
            root,
            checkout,
            fake_bin,
            release,
        };
        fixture.platform("Linux", "x86_64");
        fixture
    }

    fn platform(&self, system: &str, machine: &str) {
        write_executable(
            &self.fake_bin.join("uname"),
            &format!(
                "#!/bin/sh\ncase \"$1\" in -s) echo '{system}' ;; -m) echo '{machine}' ;; *) exit 1 ;; esac\n"
            ),
        );
    }

    /// Takes a tool off the test PATH (it may not be installed at all).
    fn remove_tool(&self, tool: &str) {
        let _ = std::fs::remove_file(self.fake_bin.join(tool));
        assert!(!self.fake_bin.join(tool).exists());
    }

    /// A `cargo` that records its arguments and "builds" a stub heeler.
    fn fake_cargo(&self, version: &str) {
        write_executable(
            &self.fake_bin.join("cargo"),
            &format!(
                "#!/bin/sh\necho \"$*\" > '{log}'\nmkdir -p target/release\nprintf '%s\\n' '#!/bin/sh' \"echo 'heeler {version}'\" > target/release/heeler\nchmod 755 target/release/heeler\n",
                log = self.root.join("cargo-args").display()
            ),
        );
    }

    fn cargo_args(&self) -> Option<String> {
        std::fs::read_to_string(self.root.join("cargo-args")).ok()
    }

    /// Publish `heeler-<target>` with these contents and a SHA256SUMS line for
    /// it (whose hash may be forced).
    fn publish(&self, target: &str, contents: &str, forced_hash: Option<&str>) {
        let asset = format!("heeler-{target}");
        write_executable(&self.release.join(&asset), contents);
        let hash = forced_hash.map_or_else(|| sha256_hex(contents.as_bytes()), str::to_owned);
        let mut sums = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.release.join("SHA256SUMS"))
            .unwrap();
        writeln!(sums, "{hash}  {asset}").unwrap();
        writeln!(sums, "{hash}  {asset}.tar.gz").unwrap();
    }

    fn set(&mut self, key: &str, value: &str) {
        self.env.push((key.into(), value.into()));
    }

    fn previous_binary(&self) {
        std::fs::create_dir_all(self.checkout.join("bin")).unwrap();
        write_executable(&self.checkout.join("bin/heeler"), PREVIOUS);
    }

    fn installed(&self) -> Option<String> {
        std::fs::read_to_string(self.checkout.join("bin/heeler")).ok()
    }

    fn run(&self, args: &[&str]) -> Output {
        self.run_with(&shell(), args)
    }

    /// [`Fixture::run`] under `umask 000`, set by /bin/sh before it runs
    /// the shell on install.sh.
    fn run_under_umask_000(&self) -> Output {
        let output = Command::new("/bin/sh")
            .arg("-c")
            .arg("umask 000; exec \"$0\" install.sh")
            .arg(shell())
            .current_dir(&self.checkout)
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .output()
            .unwrap();
        println!(
            "status {:?}\nstdout:\n{}stderr:\n{}",
            output.status.code(),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        output
    }

    fn run_with(&self, shell: &Path, args: &[&str]) -> Output {
        let output = Command::new(shell)
            .arg("install.sh")
            .args(args)
            .current_dir(&self.checkout)
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .output()
            .unwrap();
        println!(
            "status {:?}\nstdout:\n{}stderr:\n{}",
            output.status.code(),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        output
    }

    /// A failed run: non-zero, prefixed messages, previous binary untouched,
    /// nothing staged left over. Returns stderr.
    fn assert_failed_cleanly(&self, output: &Output) -> String {
        assert!(!output.status.success(), "install.sh should have failed");
        let stderr = String::from_utf8(output.stderr.clone()).unwrap();
        assert!(!stderr.is_empty());
        for line in stderr.lines() {
            assert!(line.starts_with("heeler install: "), "unprefixed: {line:?}");
        }
        assert_eq!(
            self.installed().as_deref(),
            Some(PREVIOUS),
            "previous binary changed"
        );
        let leftovers: Vec<_> = std::fs::read_dir(self.checkout.join("bin"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name != "heeler")
            .collect();
        assert!(leftovers.is_empty(), "staging leftovers: {leftovers:?}");
        let temp_left = std::fs::read_dir(self.root.join("tmp")).unwrap().count();
        assert_eq!(temp_left, 0, "temporary directory not cleaned up");
        stderr
    }

    fn assert_installed(&self, output: &Output, contents: &str) -> String {
        assert!(output.status.success(), "install.sh failed");
        assert_eq!(self.installed().as_deref(), Some(contents));
        let mode = std::fs::metadata(self.checkout.join("bin/heeler"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o755);
        let names: Vec<_> = std::fs::read_dir(self.checkout.join("bin"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["heeler"], "only bin/heeler remains");
        String::from_utf8(output.stdout.clone()).unwrap()
    }
}

/// A loopback HTTP/1.1 server for a release directory; records request paths.
struct ReleaseServer {
    url: String,
    requests: Arc<Mutex<Vec<String>>>,
}

impl ReleaseServer {
    fn start(dir: &Path, prefix: &str) -> ReleaseServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}{prefix}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&requests);
        let dir = dir.to_path_buf();
        let prefix = prefix.to_owned();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut request_line = String::new();
                if reader.read_line(&mut request_line).is_err() {
                    continue;
                }
                loop {
                    let mut header = String::new();
                    match reader.read_line(&mut header) {
                        Ok(0) | Err(_) => break,
                        Ok(_) if header == "\r\n" || header == "\n" => break,
                        Ok(_) => {}
                    }
                }
                let path = request_line
                    .split_whitespace()
                    .nth(1)
                    .unwrap_or("")
                    .to_owned();
                seen.lock().unwrap().push(path.clone());
                let file = path
                    .strip_prefix(prefix.as_str())
                    .map(|rest| rest.trim_start_matches('/'))
                    .filter(|name| !name.is_empty() && !name.contains(".."))
                    .map(|name| dir.join(name));
                let response = match file.and_then(|f| std::fs::read(f).ok()) {
                    Some(body) => {
                        let mut r = format!(
                            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                            body.len()
                        )
                        .into_bytes();
                        r.extend_from_slice(&body);
                        r
                    }
                    None => b"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\nConnection: close\r\n\r\nnot found"
                        .to_vec(),
                };
                let _ = stream.write_all(&response);
            }
        });
        ReleaseServer { url, requests }
    }

    fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }
}

const LINUX_X86: &str = "x86_64-unknown-linux-musl";

#[test]
fn installs_a_verified_release_over_http_replacing_the_previous_binary() {
    let mut fx = Fixture::new("http-success");
    fx.previous_binary();
    let contents = stub_binary(VERSION);
    fx.publish(LINUX_X86, &contents, None);
    let server = ReleaseServer::start(&fx.release, &format!("/v{VERSION}"));
    fx.set("HEELER_RELEASE_URL", &server.url);
    let output = fx.run(&[]);
    let stdout = fx.assert_installed(&output, &contents);
    assert!(stdout.contains(&format!("installed heeler {VERSION} ({LINUX_X86} release)")));
    assert_eq!(
        server.requests(),
        [
            format!("/v{VERSION}/heeler-{LINUX_X86}"),
            format!("/v{VERSION}/SHA256SUMS")
        ]
    );
}

#[test]
fn bash_runs_it_the_same_way() {
    let Some(bash) = find_tool("bash") else {
        common::skip("bash is not installed");
        return;
    };
    let mut fx = Fixture::new("bash");
    fx.previous_binary();
    let contents = stub_binary(VERSION);
    fx.publish(LINUX_X86, &contents, None);
    fx.set(
        "HEELER_RELEASE_URL",
        &format!("file://{}", fx.release.display()),
    );
    let output = fx.run_with(&bash, &[]);
    fx.assert_installed(&output, &contents);

    let mut fx = Fixture::new("bash-mismatch");
    fx.previous_binary();
    fx.publish(LINUX_X86, &contents, Some(&"f".repeat(64)));
    fx.set(
        "HEELER_RELEASE_URL",
        &format!("file://{}", fx.release.display()),
    );
    let stderr = fx.assert_failed_cleanly(&fx.run_with(&bash, &[]));
    assert!(stderr.contains("checksum mismatch"));
}

#[test]
fn maps_each_supported_platform_to_its_release_asset() {
    let cases = [
        ("Linux", "x86_64", None, "x86_64-unknown-linux-musl"),
        ("Linux", "amd64", None, "x86_64-unknown-linux-musl"),
        ("Linux", "aarch64", None, "aarch64-unknown-linux-musl"),
        ("Linux", "arm64", None, "aarch64-unknown-linux-musl"),
        ("Darwin", "arm64", None, "aarch64-apple-darwin"),
        ("Darwin", "x86_64", Some("0"), "x86_64-apple-darwin"),
        ("Darwin", "x86_64", None, "x86_64-apple-darwin"),
        // A shell under Rosetta 2 on Apple silicon: install the native binary.
        ("Darwin", "x86_64", Some("1"), "aarch64-apple-darwin"),
    ];
    for (system, machine, arm64_sysctl, target) in cases {
        let mut fx = Fixture::new("platforms");
        fx.platform(system, machine);
        if let Some(value) = arm64_sysctl {
            write_executable(
                &fx.fake_bin.join("sysctl"),
                &format!("#!/bin/sh\n[ \"$1 $2\" = '-n hw.optional.arm64' ] && echo {value}\n"),
            );
        }
        let contents = stub_binary(VERSION);
        fx.publish(target, &contents, None);
        fx.set(
            "HEELER_RELEASE_URL",
            &format!("file://{}", fx.release.display()),
        );
        println!("case {system} {machine} sysctl={arm64_sysctl:?} -> {target}");
        let output = fx.run(&[]);
        let stdout = fx.assert_installed(&output, &contents);
        assert!(stdout.contains(&format!("({target} release)")), "{stdout}");
    }
}

#[test]
fn checksum_mismatch_fails_closed_without_falling_back() {
    let mut fx = Fixture::new("mismatch");
    fx.previous_binary();
    fx.fake_cargo(VERSION);
    fx.publish(LINUX_X86, &stub_binary(VERSION), Some(&"0".repeat(64)));
    let server = ReleaseServer::start(&fx.release, "");
    fx.set("HEELER_RELEASE_URL", &server.url);
    let stderr = fx.assert_failed_cleanly(&fx.run(&[]));
    assert!(stderr.contains("checksum mismatch for heeler-x86_64-unknown-linux-musl"));
    assert!(stderr.contains("--from-source"), "says what to do");
    assert_eq!(fx.cargo_args(), None, "a mismatch must not silently build");
}

#[test]
fn sha256sums_without_a_line_for_the_asset_fails_closed() {
    let mut fx = Fixture::new("no-sum-line");
    fx.previous_binary();
    fx.publish("aarch64-unknown-linux-musl", &stub_binary(VERSION), None);
    write_executable(
        &fx.release.join(format!("heeler-{LINUX_X86}")),
        &stub_binary(VERSION),
    );
    fx.set(
        "HEELER_RELEASE_URL",
        &format!("file://{}", fx.release.display()),
    );
    let stderr = fx.assert_failed_cleanly(&fx.run(&[]));
    assert!(stderr.contains("cannot be verified"), "{stderr}");
}

#[test]
fn missing_asset_without_cargo_fails_and_says_what_to_do() {
    let mut fx = Fixture::new("missing-asset");
    fx.previous_binary();
    let server = ReleaseServer::start(&fx.release, "");
    fx.set("HEELER_RELEASE_URL", &server.url);
    let stderr = fx.assert_failed_cleanly(&fx.run(&[]));
    assert!(stderr.contains("could not download"), "{stderr}");
    assert!(stderr.contains("404"), "names the HTTP status: {stderr}");
    assert!(stderr.contains("HEELER_BINARY=") && stderr.contains("--from-source"));
}

/// Makes the checkout a clone of a GitHub repository whose download fails
/// (a `curl` that answers like a 404), so the GitHub route is taken.
fn github_origin_that_fails(fx: &Fixture) {
    let status = Command::new("git")
        .args(["init", "--quiet"])
        .current_dir(&fx.checkout)
        .env("HOME", fx.root.join("home"))
        .status()
        .unwrap();
    assert!(status.success());
    let status = Command::new("git")
        .args([
            "remote",
            "add",
            "origin",
            "https://github.com/example/heeler",
        ])
        .current_dir(&fx.checkout)
        .env("HOME", fx.root.join("home"))
        .status()
        .unwrap();
    assert!(status.success());
    fx.remove_tool("curl");
    write_executable(
        &fx.fake_bin.join("curl"),
        "#!/bin/sh\necho 'curl: (22) The requested URL returned error: 404' >&2\nexit 22\n",
    );
}

#[test]
fn a_failed_github_download_falls_back_to_a_source_build_when_cargo_exists() {
    let fx = Fixture::new("fallback");
    fx.previous_binary();
    fx.fake_cargo(VERSION);
    github_origin_that_fails(&fx);
    let output = fx.run(&[]);
    let stdout = fx.assert_installed(&output, &stub_binary(VERSION));
    assert!(stdout.contains("building from source instead"), "{stdout}");
    // It says that it builds and how long that usually takes.
    assert!(
        stdout.contains(
            "from source with cargo build --release --locked; this usually takes 3 to 10 minutes"
        ),
        "{stdout}"
    );
    assert_eq!(
        fx.cargo_args().as_deref(),
        Some("build --release --locked\n")
    );
}

#[test]
fn an_explicit_release_url_or_binary_that_fails_is_an_error_not_a_build() {
    let mut fx = Fixture::new("explicit-url");
    fx.previous_binary();
    fx.fake_cargo(VERSION);
    let server = ReleaseServer::start(&fx.release, "");
    fx.set("HEELER_RELEASE_URL", &server.url);
    let stderr = fx.assert_failed_cleanly(&fx.run(&[]));
    assert!(stderr.contains("404"), "{stderr}");
    assert!(
        stderr.contains("from HEELER_RELEASE_URL=")
            && stderr.contains("nothing was built or installed"),
        "{stderr}"
    );
    assert_eq!(fx.cargo_args(), None, "cargo was not run");

    let mut fx = Fixture::new("explicit-binary");
    fx.previous_binary();
    fx.fake_cargo(VERSION);
    fx.set(
        "HEELER_BINARY",
        &fx.root.join("no-such-heeler").display().to_string(),
    );
    let stderr = fx.assert_failed_cleanly(&fx.run(&[]));
    assert!(stderr.contains("is not a regular file"), "{stderr}");
    assert_eq!(fx.cargo_args(), None, "cargo was not run");
}

#[test]
fn the_last_line_says_how_to_run_heeler_or_links_it_when_asked() {
    let given_binary = |fx: &mut Fixture| {
        let given = fx.root.join("heeler-given");
        write_executable(&given, &stub_binary(VERSION));
        fx.set("HEELER_BINARY", &given.display().to_string());
    };
    let last_line = |output: &Output| {
        String::from_utf8(output.stdout.clone())
            .unwrap()
            .lines()
            .last()
            .unwrap_or("")
            .to_owned()
    };
    let installed = fx_path_of_bin;

    let mut fx = Fixture::new("last-line");
    given_binary(&mut fx);
    let output = fx.run(&[]);
    fx.assert_installed(&output, &stub_binary(VERSION));
    let bin = installed(&fx);
    assert_eq!(
        last_line(&output),
        format!(
            "heeler install: run it from a shell as {bin}; to type just heeler: {bin} link (or reinstall with HEELER_LINK=1)"
        )
    );
    assert!(!fx.root.join("home/.local/bin/heeler").exists());

    // HEELER_LINK=1: a link in ~/.local/bin, which is not on the test's PATH.
    let mut fx = Fixture::new("link");
    given_binary(&mut fx);
    fx.set("HEELER_LINK", "1");
    let output = fx.run(&[]);
    fx.assert_installed(&output, &stub_binary(VERSION));
    let bin = installed(&fx);
    let link = fx.root.join("home/.local/bin/heeler");
    assert_eq!(std::fs::read_link(&link).unwrap(), Path::new(&bin));
    assert!(
        last_line(&output).contains("is not on PATH"),
        "{}",
        last_line(&output)
    );
    // Run through the link, as a shell would.
    let ran = Command::new(&link).output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&ran.stdout),
        format!("heeler {VERSION}\n")
    );
    // Again, with ~/.local/bin on PATH: the link is replaced, and it says so.
    let path = format!(
        "{}:{}",
        fx.root.join("home/.local/bin").display(),
        fx.fake_bin.display()
    );
    fx.env.retain(|(k, _)| k != "PATH");
    fx.set("PATH", &path);
    let output = fx.run(&[]);
    assert!(output.status.success());
    assert_eq!(
        last_line(&output),
        format!(
            "heeler install: linked {} to {bin}: run heeler from a shell",
            link.display()
        )
    );

    // A file of the person's own at the link's place is left alone.
    let mut fx = Fixture::new("link-taken");
    given_binary(&mut fx);
    fx.set("HEELER_LINK", "1");
    let own = fx.root.join("home/.local/bin/heeler");
    std::fs::create_dir_all(own.parent().unwrap()).unwrap();
    std::fs::write(&own, "mine").unwrap();
    let output = fx.run(&[]);
    assert!(!output.status.success());
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.contains("exists and is not a link"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&own).unwrap(), "mine");
}

fn mode_of(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .unwrap()
        .permissions()
        .mode()
        & 0o7777
}

/// A fixture installing a given binary with HEELER_LINK=1.
fn linking_fixture(name: &str) -> Fixture {
    let mut fx = Fixture::new(name);
    let given = fx.root.join("heeler-given");
    write_executable(&given, &stub_binary(VERSION));
    fx.set("HEELER_BINARY", &given.display().to_string());
    fx.set("HEELER_LINK", "1");
    fx
}

/// Under umask 000 (issue 46: bin/ was 0777, which pair refuses, and
/// ~/.local/bin 0777, where another user could swap the link) every
/// directory install.sh creates is 0755 and the binary 0755.
#[test]
fn under_umask_000_what_it_creates_is_0755() {
    let fx = linking_fixture("umask-000");
    let output = fx.run_under_umask_000();
    fx.assert_installed(&output, &stub_binary(VERSION));
    let home = fx.root.join("home");
    for dir in [
        fx.checkout.join("bin"),
        home.join(".local"),
        home.join(".local/bin"),
    ] {
        assert_eq!(mode_of(&dir), 0o755, "{}", dir.display());
    }
    assert_eq!(
        std::fs::read_link(home.join(".local/bin/heeler")).unwrap(),
        Path::new(&fx_path_of_bin(&fx))
    );
    // A bin/ left 0777 by an earlier run is made 0755 again.
    std::fs::set_permissions(
        fx.checkout.join("bin"),
        std::fs::Permissions::from_mode(0o777),
    )
    .unwrap();
    let output = fx.run_under_umask_000();
    assert!(output.status.success());
    assert_eq!(mode_of(&fx.checkout.join("bin")), 0o755);
}

/// No link into a directory another user can write (group or others), nor
/// into one of another owner: the install says so and fails, and nothing
/// is linked.
#[test]
fn refuses_to_link_into_a_directory_another_user_can_write() {
    for (dir, mode) in [
        (".local/bin", 0o777),
        (".local/bin", 0o775),
        (".local", 0o757),
    ] {
        let fx = linking_fixture("link-shared");
        let home = fx.root.join("home");
        std::fs::create_dir_all(home.join(".local/bin")).unwrap();
        std::fs::set_permissions(home.join(dir), std::fs::Permissions::from_mode(mode)).unwrap();
        let output = fx.run(&[]);
        assert!(!output.status.success(), "{dir} {mode:o}");
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert!(
            stderr.contains(&format!("{} is not yours alone", home.join(dir).display())),
            "{stderr}"
        );
        assert!(!home.join(".local/bin/heeler").exists());
        assert!(std::fs::symlink_metadata(home.join(".local/bin/heeler")).is_err());
    }
}

/// `ln -sfn`: a link at ~/.local/bin/heeler that points to a directory is
/// replaced itself (`ln -sf` without `-n` wrote a new link inside that
/// directory and left the old one).
#[test]
fn an_old_link_to_a_directory_is_replaced_not_written_through() {
    let fx = linking_fixture("link-to-dir");
    let home = fx.root.join("home");
    let elsewhere = fx.root.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::create_dir_all(home.join(".local/bin")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, home.join(".local/bin/heeler")).unwrap();
    let output = fx.run(&[]);
    fx.assert_installed(&output, &stub_binary(VERSION));
    assert_eq!(
        std::fs::read_link(home.join(".local/bin/heeler")).unwrap(),
        Path::new(&fx_path_of_bin(&fx))
    );
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
}

/// Under `herdr plugin install` the build runs in a temporary clone
/// (`<config>/plugins/.tmp-install-<pid>-<ms>/checkout`) that herdr then
/// renames to `<config>/plugins/github/<id>-<12 hex of SHA-256(id)>`
/// (shared/reference/herdr.md §2): the link names bin/heeler there, and
/// works once the clone has moved.
#[test]
fn under_herdr_install_the_link_names_the_final_plugin_directory() {
    let mut fx = linking_fixture("link-herdr");
    let plugins = fx.root.join("config/herdr/plugins");
    let clone = plugins.join(".tmp-install-4242-1764000000000/checkout");
    std::fs::create_dir_all(&clone).unwrap();
    for file in ["install.sh", "herdr-plugin.toml"] {
        std::fs::rename(fx.checkout.join(file), clone.join(file)).unwrap();
    }
    fx.checkout = clone.clone();
    let output = fx.run(&[]);
    fx.assert_installed(&output, &stub_binary(VERSION));
    let hex: String = sha256_hex(b"heeler")[..12].to_string();
    let plugins = plugins.canonicalize().unwrap();
    let fin = plugins.join(format!("github/heeler-{hex}"));
    let link = fx.root.join("home/.local/bin/heeler");
    assert_eq!(std::fs::read_link(&link).unwrap(), fin.join("bin/heeler"));
    // herdr renames the clone into place: the link then runs the binary.
    std::fs::create_dir_all(fin.parent().unwrap()).unwrap();
    std::fs::rename(&clone, &fin).unwrap();
    let ran = Command::new(&link).output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&ran.stdout),
        format!("heeler {VERSION}\n")
    );
}

/// The path install.sh installs to, as it prints it (the checkout's
/// physical path).
fn fx_path_of_bin(fx: &Fixture) -> String {
    fx.checkout
        .canonicalize()
        .unwrap()
        .join("bin/heeler")
        .display()
        .to_string()
}

#[test]
fn from_source_builds_with_cargo_and_fails_clearly_without_it() {
    let fx = Fixture::new("from-source");
    fx.fake_cargo(VERSION);
    let output = fx.run(&["--from-source"]);
    fx.assert_installed(&output, &stub_binary(VERSION));
    assert_eq!(
        fx.cargo_args().as_deref(),
        Some("build --release --locked\n")
    );

    let fx = Fixture::new("from-source-no-cargo");
    fx.previous_binary();
    let stderr = fx.assert_failed_cleanly(&fx.run(&["--from-source"]));
    assert!(stderr.contains("cargo is not installed"), "{stderr}");
    assert!(stderr.contains("https://rustup.rs"));
}

#[test]
fn a_source_build_of_the_wrong_version_is_not_installed() {
    let fx = Fixture::new("from-source-wrong");
    fx.previous_binary();
    fx.fake_cargo("0.0.1");
    let stderr = fx.assert_failed_cleanly(&fx.run(&["--from-source"]));
    assert!(
        stderr.contains(&format!("expected \"heeler {VERSION}\"")),
        "{stderr}"
    );
}

#[test]
fn heeler_binary_installs_offline_and_refuses_a_wrong_version() {
    let mut fx = Fixture::new("offline");
    fx.previous_binary();
    let given = fx.root.join("heeler-given");
    write_executable(&given, &stub_binary(VERSION));
    fx.set("HEELER_BINARY", &given.display().to_string());
    // No network tools at all: the override must not need them.
    fx.remove_tool("curl");
    fx.remove_tool("wget");
    let output = fx.run(&[]);
    fx.assert_installed(&output, &stub_binary(VERSION));
    assert!(given.exists(), "the given file is copied, not moved");

    let mut fx = Fixture::new("offline-wrong");
    fx.previous_binary();
    let given = fx.root.join("heeler-old");
    write_executable(&given, &stub_binary("0.7.0"));
    fx.set("HEELER_BINARY", &given.display().to_string());
    let stderr = fx.assert_failed_cleanly(&fx.run(&[]));
    assert!(stderr.contains("printed \"heeler 0.7.0\""), "{stderr}");
}

#[test]
fn a_release_binary_that_does_not_run_is_not_installed() {
    let mut fx = Fixture::new("broken-asset");
    fx.previous_binary();
    fx.publish(LINUX_X86, "#!/bin/sh\nexit 3\n", None);
    fx.set(
        "HEELER_RELEASE_URL",
        &format!("file://{}", fx.release.display()),
    );
    let stderr = fx.assert_failed_cleanly(&fx.run(&[]));
    assert!(stderr.contains("is broken"), "{stderr}");
}

#[test]
fn unsupported_platforms_fail_before_any_download() {
    for (system, machine) in [
        ("FreeBSD", "amd64"),
        ("Linux", "riscv64"),
        ("Darwin", "ppc"),
    ] {
        let mut fx = Fixture::new("unsupported");
        fx.previous_binary();
        fx.platform(system, machine);
        let server = ReleaseServer::start(&fx.release, "");
        fx.set("HEELER_RELEASE_URL", &server.url);
        let stderr = fx.assert_failed_cleanly(&fx.run(&[]));
        assert!(stderr.contains("unsupported"), "{stderr}");
        assert!(
            stderr.contains("Linux x86_64, Linux aarch64 (arm64), macOS x86_64 (Intel), macOS arm64 (Apple silicon)"),
            "lists the supported platforms: {stderr}"
        );
        assert!(server.requests().is_empty(), "downloaded before failing");
    }
}

#[test]
fn an_invalid_manifest_version_is_refused() {
    for version in ["latest", "v0.8.0", "0.8", ""] {
        let fx = Fixture::new("bad-version");
        fx.previous_binary();
        let manifest = fx.checkout.join("herdr-plugin.toml");
        let text = std::fs::read_to_string(&manifest).unwrap().replace(
            &format!("version = \"{VERSION}\""),
            &format!("version = \"{version}\""),
        );
        std::fs::write(&manifest, text).unwrap();
        let stderr = fx.assert_failed_cleanly(&fx.run(&[]));
        assert!(stderr.contains("herdr-plugin.toml"), "{stderr}");
    }
}

#[test]
fn downloads_from_the_github_release_of_the_checkouts_origin_with_https_only() {
    for origin in [
        "https://github.com/example/heeler-fork.git",
        "git@github.com:example/heeler-fork.git",
        "https://github.com/example/heeler-fork",
    ] {
        let mut fx = Fixture::new("origin");
        // herdr passes the user's proxy settings through; so must install.sh.
        fx.set("https_proxy", "http://proxy.example:3128");
        fx.previous_binary();
        let git = |args: &[&str]| {
            let status = Command::new("git")
                .args(args)
                .current_dir(&fx.checkout)
                .env("HOME", fx.root.join("home"))
                .status()
                .unwrap();
            assert!(status.success());
        };
        git(&["init", "--quiet"]);
        git(&["remote", "add", "origin", origin]);
        // A curl that records how it was asked and fails like a 404.
        fx.remove_tool("curl");
        write_executable(
            &fx.fake_bin.join("curl"),
            &format!(
                "#!/bin/sh\nprintf '%s\\n' \"$@\" > '{}'\necho \"$https_proxy\" > '{}'\necho 'curl: (22) The requested URL returned error: 404' >&2\nexit 22\n",
                fx.root.join("curl-args").display(),
                fx.root.join("curl-proxy").display()
            ),
        );
        let stderr = fx.assert_failed_cleanly(&fx.run(&[]));
        assert!(stderr.contains("404"));
        let proxy = std::fs::read_to_string(fx.root.join("curl-proxy")).unwrap();
        assert_eq!(
            proxy, "http://proxy.example:3128\n",
            "the proxy reached curl"
        );
        let args = std::fs::read_to_string(fx.root.join("curl-args")).unwrap();
        let args: Vec<&str> = args.lines().collect();
        println!("origin {origin}: curl {args:?}");
        assert_eq!(
            args.last().copied(),
            Some(
                format!(
                    "https://github.com/example/heeler-fork/releases/download/v{VERSION}/heeler-{LINUX_X86}"
                )
                .as_str()
            )
        );
        for flag in [["--proto", "=https"], ["--proto-redir", "=https"]] {
            assert!(args.windows(2).any(|w| w == flag), "{flag:?} in {args:?}");
        }
        for flag in [
            "--tlsv1.2",
            "--fail",
            "--retry",
            "--connect-timeout",
            "--max-time",
        ] {
            assert!(args.contains(&flag), "{flag} in {args:?}");
        }
    }
}

#[test]
fn a_checkout_without_a_github_origin_says_to_set_the_release_url() {
    let fx = Fixture::new("no-origin");
    fx.previous_binary();
    let stderr = fx.assert_failed_cleanly(&fx.run(&[]));
    assert!(stderr.contains("no git remote \"origin\""), "{stderr}");
}

#[test]
fn falls_back_to_wget_when_curl_is_missing() {
    let Some(_) = find_tool("wget") else {
        common::skip("wget is not installed");
        return;
    };
    let mut fx = Fixture::new("wget");
    fx.previous_binary();
    fx.remove_tool("curl");
    let contents = stub_binary(VERSION);
    fx.publish(LINUX_X86, &contents, None);
    let server = ReleaseServer::start(&fx.release, "/r");
    fx.set("HEELER_RELEASE_URL", &server.url);
    let output = fx.run(&[]);
    fx.assert_installed(&output, &contents);
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn plain_http_is_refused_except_on_loopback() {
    let mut fx = Fixture::new("plain-http");
    fx.previous_binary();
    fx.set("HEELER_RELEASE_URL", "http://example.com/release");
    let stderr = fx.assert_failed_cleanly(&fx.run(&[]));
    assert!(stderr.contains("refusing to download http://example.com/release/"));
}

#[test]
fn help_and_unknown_options() {
    let fx = Fixture::new("help");
    let output = fx.run(&["--help"]);
    assert!(output.status.success());
    let help = String::from_utf8(output.stdout).unwrap();
    for word in [
        "--from-source",
        "HEELER_RELEASE_URL",
        "HEELER_BINARY",
        "Supported platforms",
    ] {
        assert!(help.contains(word), "{word}");
    }
    fx.previous_binary();
    let stderr = fx.assert_failed_cleanly(&fx.run(&["--frobnicate"]));
    assert!(stderr.contains("unknown option \"--frobnicate\""));
}

#[test]
fn install_sh_is_clean_under_shellcheck_for_dash() {
    let Some(shellcheck) = find_tool("shellcheck") else {
        common::skip("shellcheck is not installed (.ci/run installs it)");
        return;
    };
    let output = Command::new(shellcheck)
        .args(["-s", "dash", "install.sh"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    println!("{}", String::from_utf8_lossy(&output.stdout));
    assert!(
        output.status.success(),
        "shellcheck -s dash install.sh found problems"
    );
}

// ------------------------------------------------ the release matrix

/// Each OS/CPU pair `uname` (and, on macOS, `sysctl hw.optional.arm64`)
/// can report, and the release asset install.sh must pick for it.
const MATRIX: [(&str, &str, Option<&str>, &str); 5] = [
    ("Linux", "x86_64", None, "x86_64-unknown-linux-musl"),
    ("Linux", "aarch64", None, "aarch64-unknown-linux-musl"),
    ("Darwin", "x86_64", Some("0"), "x86_64-apple-darwin"),
    ("Darwin", "arm64", None, "aarch64-apple-darwin"),
    // A shell under Rosetta 2 on Apple silicon: the native binary.
    ("Darwin", "x86_64", Some("1"), "aarch64-apple-darwin"),
];

/// A stub release binary that says which target it is for.
fn target_stub(target: &str) -> String {
    format!("#!/bin/sh\n# heeler for {target}\necho 'heeler {VERSION}'\n")
}

/// How a matrix case fails, if it does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    None,
    /// The asset's bytes differ from its SHA256SUMS line.
    Mismatch,
    /// The release has no `heeler-<target>`.
    Missing,
    /// The transfer of the asset stops halfway.
    Interrupted,
}

impl Fixture {
    fn matrix_platform(&self, system: &str, machine: &str, arm64_sysctl: Option<&str>) {
        self.platform(system, machine);
        if let Some(value) = arm64_sysctl {
            write_executable(
                &self.fake_bin.join("sysctl"),
                &format!("#!/bin/sh\n[ \"$1 $2\" = '-n hw.optional.arm64' ] && echo {value}\n"),
            );
        }
    }

    /// The release directory as `cargo xtask dist` lays it out: every
    /// target's bare binary and archive, then SHA256SUMS over them; then the
    /// fault for `target` applied.
    fn dist_release(&self, target: &str, fault: Fault) {
        for t in dist_layout::TARGETS {
            write_executable(
                &self.release.join(dist_layout::binary_asset(t)),
                &target_stub(t),
            );
            std::fs::write(
                self.release.join(dist_layout::archive_asset(t)),
                format!("not a real archive of {t}"),
            )
            .unwrap();
        }
        dist_layout::write_sums(&self.release).unwrap();
        let asset = self.release.join(dist_layout::binary_asset(target));
        match fault {
            Fault::None | Fault::Interrupted => {}
            // Still a runnable stub of the right version: only the checksum
            // can stop it.
            Fault::Mismatch => {
                write_executable(&asset, &format!("{}# tampered\n", target_stub(target)))
            }
            Fault::Missing => std::fs::remove_file(&asset).unwrap(),
        }
    }

    /// A `cp` that copies only the first half of a file from the release
    /// directory and fails, as a copy cut off by an I/O error would.
    fn interrupting_cp(&self) {
        let real = find_tool("cp").unwrap();
        self.remove_tool("cp");
        write_executable(
            &self.fake_bin.join("cp"),
            &format!(
                "#!/bin/sh\ncase \"$1\" in\n'{release}'/*) size=$(wc -c < \"$1\"); head -c $((size / 2)) \"$1\" > \"$2\"; echo 'cp: error reading: Input/output error' >&2; exit 1 ;;\nesac\nexec '{real}' \"$@\"\n",
                release = self.release.display(),
                real = real.display()
            ),
        );
        for tool in ["wc", "head"] {
            if !self.fake_bin.join(tool).exists() {
                std::os::unix::fs::symlink(find_tool(tool).unwrap(), self.fake_bin.join(tool))
                    .unwrap();
            }
        }
    }
}

/// Checks one matrix case's outcome: the target's stub installed, or a
/// clean failure that left the previous binary and says why.
fn assert_outcome(fx: &Fixture, output: &Output, target: &str, fault: Fault) {
    let asset = dist_layout::binary_asset(target);
    match fault {
        Fault::None => {
            let stdout = fx.assert_installed(output, &target_stub(target));
            assert!(stdout.contains(&format!("({target} release)")), "{stdout}");
        }
        Fault::Mismatch => {
            let stderr = fx.assert_failed_cleanly(output);
            assert!(
                stderr.contains(&format!("checksum mismatch for {asset}")),
                "{stderr}"
            );
        }
        Fault::Missing | Fault::Interrupted => {
            let stderr = fx.assert_failed_cleanly(output);
            assert!(
                stderr.contains("could not download ") && stderr.contains(&asset),
                "{stderr}"
            );
        }
    }
}

#[test]
fn each_release_asset_from_a_file_url_release() {
    for fault in [
        Fault::None,
        Fault::Mismatch,
        Fault::Missing,
        Fault::Interrupted,
    ] {
        for (system, machine, sysctl, target) in MATRIX {
            println!("case file:// {system} {machine} sysctl={sysctl:?} -> {target}, {fault:?}");
            let mut fx = Fixture::new("matrix-file");
            fx.previous_binary();
            fx.matrix_platform(system, machine, sysctl);
            fx.dist_release(target, fault);
            if fault == Fault::Interrupted {
                fx.interrupting_cp();
            }
            fx.set(
                "HEELER_RELEASE_URL",
                &format!("file://{}", fx.release.display()),
            );
            let output = fx.run(&[]);
            assert_outcome(&fx, &output, target, fault);
        }
    }
}

/// A loopback HTTPS release server (Python `ssl`) with a certificate for
/// 127.0.0.1 from a test CA made at start; writes `ca.pem` into its state
/// directory. Serves `/<case>/<version>/<asset>` from `<releases>/<case>/`,
/// so that one server serves every case of a test; a `<case>/<asset>`
/// listed in the state directory's `truncate` file is cut off halfway
/// through its body.
const HTTPS_SERVER: &str = r#"
import datetime, http.server, ipaddress, os, ssl, sys
from cryptography import x509
from cryptography.x509.oid import NameOID, ExtendedKeyUsageOID
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

release, state = sys.argv[1], sys.argv[2]
now = datetime.datetime.now(datetime.timezone.utc)
def name(cn): return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
def valid(b): return b.not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
ca_key = ec.generate_private_key(ec.SECP256R1())
ca = (valid(x509.CertificateBuilder()).subject_name(name("heeler install test CA")).issuer_name(name("heeler install test CA"))
      .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
      .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
      .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
          data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
          encipher_only=False, decipher_only=False), critical=True)
      .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
      .sign(ca_key, hashes.SHA256()))
key = ec.generate_private_key(ec.SECP256R1())
cert = (valid(x509.CertificateBuilder()).subject_name(name("127.0.0.1")).issuer_name(ca.subject)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256()))
open(os.path.join(state, "ca.pem"), "wb").write(ca.public_bytes(serialization.Encoding.PEM))
open(os.path.join(state, "server.pem"), "wb").write(cert.public_bytes(serialization.Encoding.PEM))
open(os.path.join(state, "server.key"), "wb").write(key.private_bytes(serialization.Encoding.PEM,
    serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))

class Release(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *args): pass
    def do_GET(self):
        open(os.path.join(state, "requests"), "a").write(self.path + "\n")
        case = self.path.split("/")[1]
        file = os.path.join(release, case, os.path.basename(self.path))
        if not os.path.isfile(file):
            self.send_response(404); self.send_header("Content-Length", "9"); self.end_headers()
            self.wfile.write(b"not found"); return
        body = open(file, "rb").read()
        try: cut = case + "/" + os.path.basename(self.path) in open(os.path.join(state, "truncate")).read().split()
        except FileNotFoundError: cut = False
        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
        self.wfile.write(body[: len(body) // 2] if cut else body)
        self.wfile.flush()
        if cut: self.close_connection = True

context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(os.path.join(state, "server.pem"), os.path.join(state, "server.key"))
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Release)
server.socket = context.wrap_socket(server.socket, server_side=True)
print(server.server_address[1], flush=True)
server.serve_forever()
"#;

struct HttpsRelease {
    child: std::process::Child,
    /// `https://127.0.0.1:<port>`.
    origin: String,
    releases: PathBuf,
    ca: PathBuf,
    state: PathBuf,
}

impl Drop for HttpsRelease {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl HttpsRelease {
    /// Starts the server for the cases under `releases`, or says why it
    /// cannot run here.
    fn start(releases: &Path, state: &Path) -> Result<HttpsRelease, String> {
        let probe = Command::new("python3")
            .args(["-c", "import cryptography.x509"])
            .output();
        if !probe.is_ok_and(|o| o.status.success()) {
            return Err("python3 with cryptography is not installed (.ci/run installs it)".into());
        }
        std::fs::create_dir_all(state).unwrap();
        std::fs::create_dir_all(releases).unwrap();
        let mut child = Command::new("python3")
            .args(["-c", HTTPS_SERVER])
            .arg(releases)
            .arg(state)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut port = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut port)
            .unwrap();
        Ok(HttpsRelease {
            child,
            origin: format!("https://127.0.0.1:{}", port.trim()),
            releases: releases.to_path_buf(),
            ca: state.join("ca.pem"),
            state: state.to_path_buf(),
        })
    }

    /// Serves `release` as case `case`; returns the release URL.
    fn serve(&self, case: usize, release: &Path) -> String {
        std::os::unix::fs::symlink(release, self.releases.join(case.to_string())).unwrap();
        format!("{}/{case}/v{VERSION}", self.origin)
    }

    /// The paths case `case` asked for, in order.
    fn requests(&self, case: usize) -> Vec<String> {
        let prefix = format!("/{case}/");
        std::fs::read_to_string(self.state.join("requests"))
            .unwrap_or_default()
            .lines()
            .filter_map(|line| line.strip_prefix(&prefix))
            .map(|rest| format!("/{rest}"))
            .collect()
    }
}

#[test]
fn each_release_asset_from_a_loopback_https_release_with_a_test_ca() {
    if find_tool("curl").is_none() {
        common::skip("curl is not installed");
        return;
    }
    // One server (and test CA) serves every case.
    let root = scratch::TempDir::new("install-sh-https");
    let server = match HttpsRelease::start(&root.join("releases"), &root.join("state")) {
        Ok(server) => server,
        Err(why) => {
            common::skip(&why);
            return;
        }
    };
    let mut case = 0;
    for fault in [
        Fault::None,
        Fault::Mismatch,
        Fault::Missing,
        Fault::Interrupted,
    ] {
        for (system, machine, sysctl, target) in MATRIX {
            println!("case https {system} {machine} sysctl={sysctl:?} -> {target}, {fault:?}");
            case += 1;
            let mut fx = Fixture::new("matrix-https");
            fx.previous_binary();
            fx.matrix_platform(system, machine, sysctl);
            fx.dist_release(target, fault);
            if fault == Fault::Interrupted {
                std::fs::write(
                    server.state.join("truncate"),
                    format!("{case}/{}", dist_layout::binary_asset(target)),
                )
                .unwrap();
            }
            let url = server.serve(case, &fx.release);
            fx.set("HEELER_RELEASE_URL", &url);
            // curl trusts the test CA through its bundle variable (and
            // OpenSSL's, for builds that read only that).
            fx.set("CURL_CA_BUNDLE", &server.ca.display().to_string());
            fx.set("SSL_CERT_FILE", &server.ca.display().to_string());
            let output = fx.run(&[]);
            assert_outcome(&fx, &output, target, fault);
            let asset_path = format!("/v{VERSION}/{}", dist_layout::binary_asset(target));
            assert!(
                server.requests(case).first() == Some(&asset_path),
                "asked for {asset_path} first: {:?}",
                server.requests(case)
            );
        }
    }
}
