//! README.md stays a short user's guide whose commands and links work.
//!
//! README is what a new user reads first, so it has a hard size limit (the
//! reference lives in docs/), every `heeler …` command its code blocks show
//! must name a subcommand the built binary has (a renamed or removed
//! command fails here, not in a user's shell), and every link into the
//! repository must point at a file that exists and, with a `#fragment`, at a
//! heading that exists. The documentation files next to it (CONTRIBUTING,
//! CHANGELOG, docs/) have their links checked the same way.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The README's size limit in bytes: about five minutes of reading.
const README_LIMIT_BYTES: usize = 20_000;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(relative: &str) -> String {
    let path = root().join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The lines inside the fenced code blocks of a Markdown text.
fn code_block_lines(markdown: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut inside = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            inside = !inside;
        } else if inside {
            lines.push(line);
        }
    }
    lines
}

/// The subcommand path of every `heeler` invocation on a line: the words
/// after a `heeler` word that look like subcommand names (lowercase letters
/// and dashes), up to the first option, placeholder or other argument. A
/// `heeler` that is an argument (`herdr plugin enable heeler`) or part of a
/// longer name (`heeler.pair`, `heeler-<target>`) yields nothing, and a path
/// like `./bin/heeler` counts as `heeler`. A shell comment (` # …`) is
/// prose, not a command.
fn heeler_invocations(line: &str) -> Vec<Vec<String>> {
    let command = line.split(" # ").next().unwrap_or(line);
    let words: Vec<&str> = command.split_whitespace().collect();
    let mut found = Vec::new();
    for (index, word) in words.iter().enumerate() {
        let program = word.rsplit(['"', '\'', '(', '=']).next().unwrap_or(word);
        let is_heeler = program == "heeler" || program.ends_with("/bin/heeler");
        if !is_heeler {
            continue;
        }
        let mut path = Vec::new();
        for next in &words[index + 1..] {
            let bare = next.trim_end_matches(['"', '\'', ')', '}', ',', ';']);
            let is_name = !bare.is_empty()
                && bare.starts_with(|c: char| c.is_ascii_lowercase())
                && bare.chars().all(|c| c.is_ascii_lowercase() || c == '-');
            if !is_name {
                break;
            }
            path.push(bare.to_string());
            if bare.len() != next.len() {
                break;
            }
        }
        if !path.is_empty() {
            found.push(path);
        }
    }
    found
}

/// GitHub's anchor for a heading: lowercase, punctuation but `-` and `_`
/// dropped, spaces as dashes.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(markdown: &str) -> Vec<String> {
    let mut inside = false;
    let mut list = Vec::new();
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            inside = !inside;
        } else if !inside && line.starts_with('#') {
            list.push(anchor(line.trim_start_matches('#')));
        }
    }
    list
}

/// Every `](target)` link of a Markdown text outside code blocks.
fn links(markdown: &str) -> Vec<String> {
    let mut inside = false;
    let mut list = Vec::new();
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            inside = !inside;
            continue;
        }
        if inside {
            continue;
        }
        let mut rest = line;
        while let Some(start) = rest.find("](") {
            let after = &rest[start + 2..];
            let Some(end) = after.find(')') else { break };
            list.push(after[..end].to_string());
            rest = &after[end..];
        }
    }
    list
}

/// The problems of a document's links into the repository: a missing file,
/// or a fragment naming no heading of the file it points at.
fn broken_links(document: &str) -> Vec<String> {
    let text = read(document);
    let base = Path::new(document).parent().unwrap_or(Path::new(""));
    let mut broken = Vec::new();
    for link in links(&text) {
        if link.contains("://") || link.starts_with("mailto:") {
            continue;
        }
        let (file, fragment) = match link.split_once('#') {
            Some((file, fragment)) => (file, Some(fragment)),
            None => (link.as_str(), None),
        };
        let target = if file.is_empty() {
            PathBuf::from(document)
        } else {
            base.join(file)
        };
        let on_disk = root().join(&target);
        if !on_disk.exists() {
            broken.push(format!("{document}: {link} (no {})", target.display()));
            continue;
        }
        if let Some(fragment) = fragment
            && on_disk.extension().is_some_and(|e| e == "md")
        {
            let headings = anchors(&std::fs::read_to_string(&on_disk).unwrap());
            if !headings.iter().any(|h| h == fragment) {
                broken.push(format!("{document}: {link} (no such heading)"));
            }
        }
    }
    broken
}

#[test]
fn the_readme_is_at_most_twenty_kilobytes() {
    let size = read("README.md").len();
    assert!(
        size <= README_LIMIT_BYTES,
        "README.md is {size} bytes, over its {README_LIMIT_BYTES}: move reference material to docs/"
    );
}

#[test]
fn every_heeler_command_in_the_readme_names_a_subcommand_that_exists() {
    let readme = read("README.md");
    let mut commands: Vec<Vec<String>> = code_block_lines(&readme)
        .into_iter()
        .flat_map(heeler_invocations)
        .collect();
    commands.sort();
    commands.dedup();
    let firsts: Vec<&str> = commands.iter().map(|c| c[0].as_str()).collect();
    for expected in ["pair", "usage", "doctor"] {
        assert!(
            firsts.contains(&expected),
            "README's code blocks show no `heeler {expected}` (found {commands:?})"
        );
    }
    let mut missing = Vec::new();
    for path in &commands {
        let status = Command::new(env!("CARGO_BIN_EXE_heeler"))
            .args(path)
            .arg("--help")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        if !status.success() {
            missing.push(format!("heeler {} --help: {status}", path.join(" ")));
        }
    }
    assert!(
        missing.is_empty(),
        "README shows commands heeler does not have: {missing:?}"
    );
}

#[test]
fn the_command_finder_reads_prompts_paths_and_arguments() {
    assert_eq!(
        heeler_invocations("$ heeler usage daily --since 2026-11-29"),
        [["usage", "daily"]]
    );
    assert_eq!(
        heeler_invocations("cd <root> && ./bin/heeler doctor"),
        [["doctor"]]
    );
    assert_eq!(
        heeler_invocations(r#"{"command": "heeler usage statusline"}"#),
        [["usage", "statusline"]]
    );
    assert_eq!(
        heeler_invocations("x '#(heeler usage statusline)'"),
        [["usage", "statusline"]]
    );
    assert_eq!(
        heeler_invocations(r#"--token u="$(heeler usage statusline)""#),
        [["usage", "statusline"]]
    );
    assert!(heeler_invocations("herdr plugin enable heeler").is_empty());
    assert!(heeler_invocations("make  # installs ./bin/heeler in this checkout").is_empty());
    assert!(heeler_invocations("herdr plugin action invoke heeler.pair").is_empty());
    assert!(heeler_invocations("ln -s <root>/bin/heeler ~/.local/bin/heeler").is_empty());
}

#[test]
fn a_subcommand_that_does_not_exist_fails_its_help() {
    let status = Command::new(env!("CARGO_BIN_EXE_heeler"))
        .args(["usage", "dayly", "--help"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(
        !status.success(),
        "the check above would pass a misspelt view"
    );
}

#[test]
fn every_link_of_the_readme_and_the_docs_points_at_a_file_and_heading_that_exist() {
    let mut documents = vec![
        "README.md".to_string(),
        "CONTRIBUTING.md".to_string(),
        "CHANGELOG.md".to_string(),
    ];
    for entry in std::fs::read_dir(root().join("docs")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name.ends_with(".md") {
            documents.push(format!("docs/{name}"));
        }
    }
    let readme_links = links(&read("README.md"));
    assert!(
        readme_links.iter().any(|l| l.starts_with("docs/")),
        "README links into docs/"
    );
    let broken: Vec<String> = documents.iter().flat_map(|d| broken_links(d)).collect();
    assert!(broken.is_empty(), "broken links: {broken:#?}");
}

#[test]
fn anchors_are_the_ones_github_makes() {
    assert_eq!(
        anchor(" Put `heeler` on your PATH"),
        "put-heeler-on-your-path"
    );
    assert_eq!(
        anchor(" `heeler wire`: the interop tool"),
        "heeler-wire-the-interop-tool"
    );
    assert_eq!(
        anchor(" Enrollment, hooks, sidebar, popup"),
        "enrollment-hooks-sidebar-popup"
    );
}
