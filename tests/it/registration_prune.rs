//! Concurrent 410 prunes of notifications.json never lose each other's
//! removals (or anything else), a prune that changes nothing leaves the
//! file untouched, and a prune of a linked file edits the link's target.

use crate::support;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use heeler::hooks::registration;
use support::*;

#[test]
fn concurrent_prunes_all_land_and_keep_unknown_fields() {
    let dir = TempDir::new("prune-race");
    let path = dir.path.join("notifications.json");
    let tokens: Vec<String> = (0..8).map(|i| format!("tok{i:013}")).collect();
    let mut entries: Vec<String> = tokens
        .iter()
        .map(|t| entry(t, KEY_A, r#""extra":{"b":1,"a":2}"#))
        .collect();
    entries.push(entry("survivor0000000", KEY_B, r#""session":"w""#));
    std::fs::write(&path, registration(&entries)).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();

    let handles: Vec<_> = tokens
        .iter()
        .cloned()
        .map(|token| {
            let path = path.clone();
            std::thread::spawn(move || {
                registration::rewrite(&path, |f| registration::remove_tokens(f, &[token])).unwrap()
            })
        })
        .collect();
    for handle in handles {
        assert!(handle.join().unwrap(), "each prune rewrote the file");
    }
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        registration(&[entry("survivor0000000", KEY_B, r#""session":"w""#)])
    );
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o640, "mode kept");
    assert_eq!(
        std::fs::read_dir(&dir.path).unwrap().count(),
        1,
        "no temp or lock files left"
    );

    let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert!(
        !registration::rewrite(&path, |f| registration::remove_tokens(
            f,
            &["absent".into()]
        ))
        .unwrap()
    );
    assert_eq!(
        std::fs::metadata(&path).unwrap().modified().unwrap(),
        modified
    );
}

#[test]
fn a_prune_of_a_linked_file_edits_its_target_and_keeps_the_link() {
    let dir = TempDir::new("prune-link");
    let managed = dir.path.join("dotfiles");
    std::fs::create_dir_all(&managed).unwrap();
    let target = managed.join("notifications.json");
    let path = dir.path.join("notifications.json");
    std::os::unix::fs::symlink("dotfiles/notifications.json", &path).unwrap();
    let kept = entry("survivor0000000", KEY_B, r#""session":"w""#);
    std::fs::write(
        &target,
        registration(&[entry("gone00000000000", KEY_A, ""), kept.clone()]),
    )
    .unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o640)).unwrap();

    let pruned = registration::rewrite(&path, |f| {
        registration::remove_tokens(f, &["gone00000000000".into()])
    })
    .unwrap();

    assert!(pruned, "the gone token was pruned");
    assert!(
        std::fs::symlink_metadata(&path)
            .unwrap()
            .file_type()
            .is_symlink(),
        "notifications.json is still a link"
    );
    assert_eq!(
        std::fs::read_link(&path).unwrap(),
        Path::new("dotfiles/notifications.json")
    );
    // The link's target holds the pruned file, mode kept; no temp file is
    // left beside either.
    assert_eq!(
        std::fs::read_to_string(&target).unwrap(),
        registration(&[kept])
    );
    let mode = std::fs::metadata(&target).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o640);
    assert_eq!(std::fs::read_dir(&managed).unwrap().count(), 1);
    assert_eq!(std::fs::read_dir(&dir.path).unwrap().count(), 2);
}
