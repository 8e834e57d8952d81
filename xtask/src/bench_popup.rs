//! `cargo xtask bench-popup [--debug] [--runs N]`: time from starting
//! `heeler pair` to the first painted checklist (budget 20 ms).
//!
//! The popup opens on every pair action, so its first paint is what a user
//! waits for. Runs it on a pseudo-terminal (`script`) in a scratch HOME,
//! measures until the checklist title arrives, quits with `q`, and measures
//! the same harness around `printf` to subtract its own cost. Prints the
//! figures; never a pass/fail test.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use xshell::{Shell, cmd};

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// Budget for the first paint: the README promises the checklist within 20 ms.
const FIRST_PAINT_BUDGET_MS: f64 = 20.0;
const MARKER: &str = "Pair a Heeler device";

/// Starts `heeler pair` on a pseudo-terminal (`script`) in a scratch HOME and
/// measures until the checklist's title reaches the terminal, then quits it
/// with `q`. The same measurement of `printf` gives the harness's own cost.
pub fn run(args: &[String]) -> Result<()> {
    let debug = args.iter().any(|a| a == "--debug");
    let runs: usize = args
        .iter()
        .position(|a| a == "--runs")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(30);
    let root = workspace_root();
    let sh = Shell::new()?;
    sh.change_dir(&root);
    let profile = if debug { "debug" } else { "release" };
    if debug {
        cmd!(sh, "cargo build --bin heeler").run()?;
    } else {
        cmd!(sh, "cargo build --release --bin heeler").run()?;
    }
    let heeler = root.join("target").join(profile).join("heeler");

    let scratch = std::env::temp_dir().join(format!("heeler-bench-popup-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    let home = scratch.join("home");
    let ssh = scratch.join("ssh");
    let config = home.join(".config/herdr/plugins/config/heeler");
    std::fs::create_dir_all(&ssh)?;
    std::fs::create_dir_all(&config)?;
    std::fs::write(
        ssh.join("ssh_host_ed25519_key.pub"),
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAICoqKioqKioqKioqKioqKioqKioqKioqKioqKioqKioq bench\n",
    )?;
    std::fs::write(
        config.join("pair.json"),
        r#"{"ssh_port":2222,"addresses":["192.168.1.10"]}"#,
    )?;

    let popup_command = format!("'{}' pair", heeler.display());
    let baseline_command = format!("printf '{MARKER}'; cat >/dev/null");
    let env = [
        ("HOME", home.display().to_string()),
        ("HEELER_TEST_HOST_KEY_DIR", ssh.display().to_string()),
        ("TERM", "xterm-256color".to_owned()),
        ("PATH", "/usr/bin:/bin".to_owned()),
    ];
    // Warm the page cache once.
    let _ = time_to_marker(&popup_command, &env, MARKER)?;
    let mut popup = Vec::with_capacity(runs);
    let mut baseline = Vec::with_capacity(runs);
    for _ in 0..runs {
        popup.push(time_to_marker(&popup_command, &env, MARKER)?);
        baseline.push(time_to_marker(&baseline_command, &env, MARKER)?);
    }
    let _ = std::fs::remove_dir_all(&scratch);

    let (p50, p90, min) = stats(&mut popup);
    let (b50, _, _) = stats(&mut baseline);
    println!("heeler pair ({profile}), {runs} runs, start to first painted checklist:");
    println!("  through script(1):  median {p50:.2} ms, p90 {p90:.2} ms, min {min:.2} ms");
    println!("  harness alone:      median {b50:.2} ms (script + sh + printf)");
    let net = p50 - b50;
    println!(
        "  heeler's own share: median {net:.2} ms (budget {FIRST_PAINT_BUDGET_MS} ms: {})",
        if net < FIRST_PAINT_BUDGET_MS {
            "within"
        } else {
            "OVER"
        }
    );
    Ok(())
}

pub(crate) fn stats(samples: &mut [f64]) -> (f64, f64, f64) {
    samples.sort_by(f64::total_cmp);
    let at = |q: f64| samples[((samples.len() as f64 - 1.0) * q).round() as usize];
    (at(0.5), at(0.9), samples[0])
}

/// Milliseconds from spawning `command` on a pty until `marker` is printed.
pub(crate) fn time_to_marker(command: &str, env: &[(&str, String)], marker: &str) -> Result<f64> {
    let start = Instant::now();
    let mut child = Command::new("script")
        .args(["-qfec", command, "/dev/null"])
        .env_clear()
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let mut stdout = child.stdout.take().ok_or("no stdout")?;
    let wanted = marker.to_string();
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let mut seen = Vec::new();
        let mut buffer = [0u8; 4096];
        let mut sent = false;
        while let Ok(n) = stdout.read(&mut buffer) {
            if n == 0 {
                break;
            }
            seen.extend_from_slice(&buffer[..n]);
            if !sent && String::from_utf8_lossy(&seen).contains(&wanted) {
                let _ = sender.send(start.elapsed());
                sent = true;
            }
        }
    });
    let elapsed = receiver.recv_timeout(Duration::from_secs(10));
    if let Some(stdin) = child.stdin.as_mut() {
        let _ = stdin.write_all(b"q");
    }
    drop(child.stdin.take());
    let deadline = Instant::now() + Duration::from_secs(5);
    while child.try_wait()?.is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let _ = child.wait();
    Ok(elapsed
        .map_err(|_| format!("`{command}` never painted {marker:?}"))?
        .as_secs_f64()
        * 1000.0)
}
