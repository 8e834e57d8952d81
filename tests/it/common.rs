//! What every integration test shares about skipping and about which heeler
//! binary runs: a test whose tool is missing says `SKIPPED <test>: <why>` on
//! stderr (past libtest's capture, so `cargo test` shows it, and `cargo
//! xtask test` lists them all at the end) and passes, except under `HEELER_REQUIRE_ALL=1` (`.ci/run` sets it and
//! installs every tool these tests use), where a skip is a failure, so CI can
//! never pass a test it did not run. It also holds the tests' one seeded
//! random source ([`Xorshift`]).

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Command;

/// True when a skip must fail the test (`HEELER_REQUIRE_ALL=1`).
pub fn require_all() -> bool {
    std::env::var_os("HEELER_REQUIRE_ALL").is_some_and(|v| v == "1")
}

/// Skips the rest of a test because a tool or input CI provides is missing:
/// says `SKIPPED <test>: <why>` ([`announce`]), or fails under
/// `HEELER_REQUIRE_ALL=1`.
pub fn skip(why: &str) {
    assert!(
        !require_all(),
        "HEELER_REQUIRE_ALL=1, so this test may not be skipped: {why}"
    );
    announce(SKIPPED, why);
}

/// Skips part of a test because of a property of this machine that no
/// installed tool changes (a file system's timestamp resolution, no network
/// interface); allowed under `HEELER_REQUIRE_ALL=1` and said out loud.
pub fn skip_part_for_machine(why: &str) {
    announce(SKIPPED_PART, why);
}

/// The first word of a whole skipped test's line (`cargo xtask test`
/// collects the lines that start with it).
pub const SKIPPED: &str = "SKIPPED";
/// The first words of a skipped part's line.
pub const SKIPPED_PART: &str = "SKIPPED (part, this machine)";

/// Writes `<kind> <test>: <why>` to the process's real stderr.
/// libtest captures only what `print!` and `eprint!` write, so this line is
/// shown by every `cargo test`, passing or not; `cargo xtask test` repeats
/// them all at the end.
pub fn announce(kind: &str, why: &str) {
    use std::io::Write;
    let line = format!("{kind} {}: {why}\n", test_name());
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// `<module>::<test>`, the name `cargo test --test it` lists and filters
/// by: the thread's name, which libtest sets to the test's path in the
/// one integration binary (`it` when called off a test thread).
fn test_name() -> String {
    match std::thread::current().name() {
        Some(test) if test != "main" => test.to_owned(),
        _ => "it".to_owned(),
    }
}

/// `useradd` and `userdel` lock `/etc/passwd` and fail while another holds
/// it: every test that adds or removes a local user, in any module of the
/// one test process, takes this lock around the call.
pub static ACCOUNTS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The heeler binary under test: `HEELER_TEST_BINARY` when set (another
/// build, such as a release target's binary), else this build's.
pub fn binary_under_test() -> PathBuf {
    std::env::var_os("HEELER_TEST_BINARY")
        .map_or_else(|| env!("CARGO_BIN_EXE_heeler").into(), PathBuf::from)
}

/// A command running the binary under test with an empty environment (as
/// `env -i`), through `HEELER_TEST_RUNNER` when set (e.g.
/// `qemu-aarch64-static` for an aarch64 binary on x86_64).
pub fn heeler_command() -> Command {
    let binary = binary_under_test();
    let mut command = match std::env::var_os("HEELER_TEST_RUNNER").filter(|r| !r.is_empty()) {
        Some(runner) => {
            let mut command = Command::new(runner);
            command.arg(&binary);
            command
        }
        None => Command::new(&binary),
    };
    command.env_clear();
    command
}

/// What runs, for the test's output.
pub fn describe_under_test() -> String {
    let runner: Option<OsString> = std::env::var_os("HEELER_TEST_RUNNER");
    match runner {
        Some(runner) if !runner.is_empty() => format!(
            "{} under {}",
            binary_under_test().display(),
            runner.to_string_lossy()
        ),
        _ => binary_under_test().display().to_string(),
    }
}

/// Runs `command` to its end and returns its output, failing the test when
/// it has not exited within `limit` (it is killed first): a process blocked
/// for good, such as one opening a FIFO nobody writes, never exits, and a
/// generous limit tells that from a slow machine.
pub fn output_within(command: &mut Command, limit: std::time::Duration) -> std::process::Output {
    use std::process::Stdio;
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"));
    // The pipes are drained on threads, so a chatty child never blocks.
    let drain = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = drain(child.stdout.take().map(|p| Box::new(p) as _));
    let stderr = drain(child.stderr.take().map(|p| Box::new(p) as _));
    let started = std::time::Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() < limit => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{command:?} did not exit within {limit:?}: it blocked");
            }
        }
    };
    std::process::Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    }
}

/// A copy of a heeler binary where `heeler pair` may name it in a forced
/// command and every local user can run it: a directory only root writes,
/// below `/run`. A copy under the sticky temp dir would not do: like
/// sshd's `StrictModes`, heeler refuses a binary below a directory others
/// may write to. Root only (the tests that switch users are); removed on
/// drop.
pub struct TrustedCopy {
    dir: PathBuf,
}

impl TrustedCopy {
    pub fn new(tag: &str, source: &std::path::Path) -> TrustedCopy {
        use std::os::unix::fs::PermissionsExt;
        let dir =
            std::path::Path::new("/run").join(format!("heeler-test-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        let copy = TrustedCopy { dir };
        let mode = |mode| std::fs::Permissions::from_mode(mode);
        std::fs::set_permissions(&copy.dir, mode(0o755)).unwrap();
        crate::support::copy_executable(source, copy.path()).unwrap();
        copy
    }

    /// The copied binary.
    pub fn path(&self) -> PathBuf {
        self.dir.join("heeler")
    }
}

impl Drop for TrustedCopy {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The integration tests' one seeded random source (xorshift64, shifts 13,
/// 7, 17): a seed replays the same sequence, so a failure reproduces.
pub struct Xorshift(pub u64);

impl Xorshift {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}
