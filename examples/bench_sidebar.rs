//! Benchmark of the sidebar refresh every event hook runs first: its cost
//! when nothing changed (one stat of the source, one read of a clean
//! `sidebar.json`, no TOML parse, no write). Run through
//! `cargo xtask bench-sidebar` (release build). Budget: under 0.3 ms.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use heeler::sidebar::snapshot::{self, Action, SourceEnv};

const ITERATIONS: u32 = 20_000;
const BUDGET: Duration = Duration::from_micros(300);

fn main() {
    let root = std::env::temp_dir().join(format!("heeler-bench-sidebar-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    let source = root.join("config.toml");
    // A realistic layout: styled tokens, rules and per-agent overrides.
    std::fs::write(
        &source,
        "[ui]\nagent_panel_sort = \"priority\"\n[ui.sidebar.agents]\nrow_gap = 1\n\
         rows = [[\"state_icon\", { token = \"terminal_title_stripped\", fg = \"#6c7086\", dim = false }],\n\
         [\"$pin_icon\", { token = \"workspace\", dim = true, rules = [{ equals = \"scratch\", ignore_case = true, hide = true }] }, \"agent\"]]\n\
         [ui.sidebar.agents.rows_by_agent]\nclaude = [[\"terminal_title_stripped\"]]\ncodex = [[\"$task\", \"machine\"]]\n",
    )
    .unwrap();
    let config_dir: PathBuf = root.join("plugin-config");
    let env = SourceEnv {
        herdr_config_path: Some(source.clone().into()),
        ..SourceEnv::default()
    };
    let first = snapshot::refresh(&config_dir, &env, 1).unwrap();
    assert_eq!(first.action, Action::Written);

    // Warm up, then measure the unchanged path.
    for _ in 0..1_000 {
        snapshot::refresh(&config_dir, &env, 2).unwrap();
    }
    let start = Instant::now();
    for _ in 0..ITERATIONS {
        let refresh = snapshot::refresh(&config_dir, &env, 2).unwrap();
        assert_eq!(refresh.action, Action::Reused);
    }
    let unchanged = start.elapsed() / ITERATIONS;

    // For comparison: a changed source (parse + atomic write with fsync).
    let changed_iterations = 200;
    let start = Instant::now();
    for i in 0..changed_iterations {
        let file = std::fs::File::options().write(true).open(&source).unwrap();
        file.set_modified(
            std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000 + i),
        )
        .unwrap();
        drop(file);
        let refresh = snapshot::refresh(&config_dir, &env, 3).unwrap();
        assert_eq!(refresh.action, Action::Written);
    }
    let changed = start.elapsed() / changed_iterations as u32;

    println!(
        "sidebar refresh, unchanged source: {:.1} µs per refresh ({ITERATIONS} iterations; budget {} µs) {}",
        unchanged.as_secs_f64() * 1e6,
        BUDGET.as_micros(),
        if unchanged < BUDGET {
            "OK"
        } else {
            "OVER BUDGET"
        }
    );
    println!(
        "sidebar refresh, changed source (parse + write + fsync): {:.1} µs per refresh ({changed_iterations} iterations)",
        changed.as_secs_f64() * 1e6
    );
    // For context: a whole `heeler sidebar-hook` process on an unchanged
    // source (exec + start-up + refresh), when xtask passes the binary.
    if let Some(bin) = std::env::var_os("HEELER_BIN") {
        let runs = 200;
        let start = Instant::now();
        for _ in 0..runs {
            let status = std::process::Command::new(&bin)
                .arg("sidebar-hook")
                .env_clear()
                .env("HERDR_PLUGIN_CONFIG_DIR", &config_dir)
                .env("HERDR_CONFIG_PATH", &source)
                .status()
                .unwrap();
            assert!(status.success());
        }
        println!(
            "heeler sidebar-hook process, unchanged source: {:.1} µs per run ({runs} runs, spawn included)",
            (start.elapsed() / runs).as_secs_f64() * 1e6
        );
    }
    let _ = std::fs::remove_dir_all(&root);
    if unchanged >= BUDGET {
        std::process::exit(1);
    }
}
