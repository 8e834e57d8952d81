//! `cargo xtask bench-accept`: what one `heeler accept` run costs.
//!
//! sshd starts a fresh `heeler accept` for every enrollment attempt, so its
//! whole-process cost is the figure that matters (the Node version measured
//! 75 ms CPU and 45 MiB). Builds the release binary, then runs it N times
//! on a fresh ceremony each (the full success path: read pending, read the
//! Device Key, lock, write authorized_keys and the enrolled record), and N
//! times on the cheapest refusal (unknown pairing). CPU time (user + sys)
//! and peak RSS come from `wait4`'s rusage of each child. Budget: < 3 ms
//! CPU and < 4 MiB peak RSS. Prints the figures; never a pass/fail test.
//! `HEELER_BENCH_BIN=<path>` skips the build and measures that binary;
//! `--static` (x86_64 Linux) builds with `+crt-static` first, which is closer
//! to the shipped static musl binary: a dynamically linked build spends
//! about 0.8 ms more per process in the dynamic loader.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use heeler::pair::bootstrap_key::BootstrapKey;
use heeler::pair::ceremony::{self, CeremonyConfig};
use xshell::{Shell, cmd};

const RUNS: usize = 50;
const CPU_BUDGET_MS: f64 = 3.0;
const RSS_BUDGET_KIB: i64 = 4 * 1024;

type Error = Box<dyn std::error::Error>;

struct Usage {
    cpu_ms: f64,
    user_ms: f64,
    max_rss_kib: i64,
    stdout: String,
}

/// Waits for `pid` with `wait4` and returns its own rusage (`bench-usage`
/// measures its runs with it too).
#[allow(unsafe_code)]
pub(crate) fn wait_with_rusage(pid: u32) -> Result<(i32, libc::rusage), Error> {
    let mut status = 0;
    // SAFETY: a zeroed rusage is a valid value; wait4 fills it in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = libc::pid_t::try_from(pid)?;
    // SAFETY: `status` and `usage` are live locals; `pid` is our child,
    // which has not been reaped by anyone else (we never call Child::wait).
    let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    if reaped != pid {
        return Err(std::io::Error::last_os_error().into());
    }
    Ok((status, usage))
}

fn run_accept(
    heeler: &Path,
    home: &Path,
    state: &Path,
    id: &str,
    input: &str,
) -> Result<Usage, Error> {
    let mut command = Command::new(heeler);
    command
        .args(["accept", "--state-dir"])
        .arg(state)
        .args(["--pairing-id", id]);
    run_measured(command, home, input)
}

fn run_measured(mut command: Command, home: &Path, input: &str) -> Result<Usage, Error> {
    let mut child = command
        .env_clear()
        .env("HOME", home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    stdin.write_all(input.as_bytes())?;
    drop(stdin);
    let mut stdout = child.stdout.take().ok_or("no stdout")?;
    let mut out = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut out)?;
    let (_, usage) = wait_with_rusage(child.id())?;
    let seconds = |t: libc::timeval| t.tv_sec as f64 * 1e3 + t.tv_usec as f64 / 1e3;
    Ok(Usage {
        cpu_ms: seconds(usage.ru_utime) + seconds(usage.ru_stime),
        user_ms: seconds(usage.ru_utime),
        max_rss_kib: max_rss_kib(&usage),
        stdout: out,
    })
}

/// A child's peak RSS in KiB (Linux reports `ru_maxrss` in KiB, macOS in
/// bytes).
pub(crate) fn max_rss_kib(usage: &libc::rusage) -> i64 {
    if cfg!(target_os = "macos") {
        usage.ru_maxrss / 1024
    } else {
        usage.ru_maxrss
    }
}

fn summary(name: &str, runs: &[Usage]) {
    let mut cpu: Vec<f64> = runs.iter().map(|u| u.cpu_ms).collect();
    cpu.sort_by(f64::total_cmp);
    let mut user: Vec<f64> = runs.iter().map(|u| u.user_ms).collect();
    user.sort_by(f64::total_cmp);
    let user = user[user.len() / 2];
    let rss = runs.iter().map(|u| u.max_rss_kib).max().unwrap_or(0);
    let median = cpu[cpu.len() / 2];
    let max = cpu[cpu.len() - 1];
    let verdict = if median < CPU_BUDGET_MS && rss < RSS_BUDGET_KIB {
        "within budget"
    } else {
        "OVER BUDGET"
    };
    println!(
        "{name:<16} runs {:>3}  CPU median {median:.3} ms (user {user:.3}, sys {:.3})  max {max:.3} ms  peak RSS {rss} KiB ({:.2} MiB)  {verdict}",
        runs.len(),
        median - user,
        rss as f64 / 1024.0
    );
}

pub fn run() -> Result<(), Error> {
    let sh = Shell::new()?;
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    sh.change_dir(&root);
    // HEELER_BENCH_BIN measures another build (e.g. the static musl one).
    let statically = std::env::args().any(|a| a == "--static");
    let heeler = match std::env::var_os("HEELER_BENCH_BIN") {
        Some(path) => PathBuf::from(path).canonicalize()?,
        None if statically => {
            // A static glibc build: no dynamic loader at start-up, like the
            // static musl binary that ships.
            let target = "x86_64-unknown-linux-gnu";
            let _flags = sh.push_env("RUSTFLAGS", "-C target-feature=+crt-static");
            let _dir = sh.push_env("CARGO_TARGET_DIR", root.join("target/static"));
            cmd!(sh, "cargo build --release --bin heeler --target {target}").run()?;
            root.join("target/static")
                .join(target)
                .join("release/heeler")
                .canonicalize()?
        }
        None => {
            cmd!(sh, "cargo build --release --bin heeler").run()?;
            root.join("target/release/heeler").canonicalize()?
        }
    };

    let work = std::env::temp_dir().join(format!("heeler-bench-accept-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    let home = work.join("home");
    let state = work.join("state");
    std::fs::create_dir_all(&home)?;
    // A realistic authorized_keys: a few dozen existing keys.
    std::fs::create_dir_all(home.join(".ssh"))?;
    let mut existing = String::new();
    for i in 0..40u8 {
        existing.push_str(&BootstrapKey::from_seed([i; 32])?.public_line());
        existing.push_str(&format!(" user{i}@host\n"));
    }
    std::fs::write(home.join(".ssh/authorized_keys"), existing)?;
    let config = CeremonyConfig::new(&home, &state, &heeler);

    let mut enrolled = Vec::new();
    for i in 0..RUNS {
        let ceremony = ceremony::begin(&config)?;
        let seed = [200u8.wrapping_add(i as u8); 32];
        let line = format!(
            "{} phone{i}\n",
            BootstrapKey::from_seed(seed)?.public_line()
        );
        let usage = run_accept(&heeler, &home, &state, ceremony.pairing_id(), &line)?;
        if !usage.stdout.starts_with("HERDR-ENROLL:OK:") {
            return Err(format!("unexpected answer {:?}", usage.stdout).into());
        }
        ceremony.end()?;
        enrolled.push(usage);
    }
    let mut refused = Vec::new();
    for _ in 0..RUNS {
        let usage = run_accept(&heeler, &home, &state, "000000000000", "")?;
        if usage.stdout != "HERDR-ENROLL:ERR:unknown_pairing\n" {
            return Err(format!("unexpected answer {:?}", usage.stdout).into());
        }
        refused.push(usage);
    }
    let mut baseline = Vec::new();
    for _ in 0..RUNS {
        let mut command = Command::new(&heeler);
        command.arg("--version");
        baseline.push(run_measured(command, &home, "")?);
    }
    println!(
        "heeler accept ({}), budget < {CPU_BUDGET_MS} ms CPU and < 4 MiB peak RSS:",
        heeler.display()
    );
    summary("enroll (OK)", &enrolled);
    summary("unknown_pairing", &refused);
    summary("heeler --version", &baseline);
    std::fs::remove_dir_all(&work)?;
    Ok(())
}
