//! Temp files a killed writer leaves are swept by age (or a dead writer's
//! pid) the next time the command that owns them runs: a 410 prune's
//! `notifications.json.tmp-*` (each holds the devices' Notification Keys)
//! by the next prune. The pairing state's `enrolled/` and `pending/` temps
//! are `pair_no_ui.rs`'s (`a_ceremonys_start_sweeps_a_killed_writers_temps`).

use crate::support;

use std::path::Path;
use std::time::{Duration, SystemTime};

use heeler::hooks::registration;
use support::*;

/// The id of a process that has exited (and been reaped).
fn dead_pid() -> u32 {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_prune_sweeps_the_temp_copies_a_killed_prune_left() {
    let dir = TempDir::new("temps-registration");
    let path = dir.path.join("notifications.json");
    let gone = "gonetoken000000";
    let kept = "keptoken0000000";
    std::fs::write(
        &path,
        registration(&[entry(gone, KEY_A, ""), entry(kept, KEY_B, "")]),
    )
    .unwrap();
    // A prune killed mid-write (its pid gone), and one of a live process
    // that is older than any write (its pid reused): both leftovers. A
    // fresh temp of a live writer is in flight and stays.
    let dead = dir
        .path
        .join(format!("notifications.json.tmp-{}-0", dead_pid()));
    let old = dir
        .path
        .join(format!("notifications.json.tmp-{}-1", std::process::id()));
    let fresh = dir
        .path
        .join(format!("notifications.json.tmp-{}-2", std::process::id()));
    for temp in [&dead, &old, &fresh] {
        std::fs::write(temp, registration(&[entry(gone, KEY_A, "")])).unwrap();
    }
    let long_ago = SystemTime::now() - Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(&old)
        .unwrap()
        .set_modified(long_ago)
        .unwrap();
    assert!(
        registration::rewrite(&path, |f| registration::remove_tokens(f, &[gone.into()])).unwrap()
    );
    assert_eq!(
        names(&dir.path),
        vec![
            "notifications.json".to_owned(),
            fresh.file_name().unwrap().to_string_lossy().into_owned()
        ]
    );
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        registration(&[entry(kept, KEY_B, "")])
    );
}
