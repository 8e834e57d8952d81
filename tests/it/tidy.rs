//! The shape of `src/`, checked: the layering between folders that
//! ARCHITECTURE.md documents, no import cycle between files, no file name
//! that is a folder in disguise, a code map that names every file, and no
//! function longer than a screen.
//!
//! The edges are the `crate::…` paths in the code (not in comments), each
//! resolved to the deepest module file it names.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// What each top-level area may import, besides itself. `cli` (argh
/// definitions) and `exit` (a command's failure) are leaves every command
/// may use. This is ARCHITECTURE.md's "Layers" list.
const LAYERS: &[(&str, &[&str])] = &[
    ("base", &[]),
    ("cli", &[]),
    ("exit", &[]),
    ("herdr", &["base"]),
    ("wire", &["base", "herdr", "cli", "exit"]),
    ("sidebar", &["base"]),
    ("usage", &["base", "herdr", "cli", "exit"]),
    ("link", &["base", "cli", "exit"]),
    ("pair", &["base", "herdr", "wire", "cli", "exit"]),
    (
        "hooks",
        &["base", "herdr", "wire", "sidebar", "usage", "cli", "exit"],
    ),
    (
        "doctor",
        &[
            "base", "herdr", "wire", "sidebar", "usage", "pair", "hooks", "cli", "exit",
        ],
    ),
];

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `src/`, as (path relative to `src/`, module path).
fn modules() -> Vec<(String, String)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("read src dir") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(&src_dir(), &mut files);
    let mut out: Vec<(String, String)> = files
        .iter()
        .map(|path| {
            let rel = path
                .strip_prefix(src_dir())
                .expect("under src")
                .to_string_lossy()
                .into_owned();
            let module = rel
                .trim_end_matches(".rs")
                .trim_end_matches("/mod")
                .replace('/', "::");
            (rel, module)
        })
        .collect();
    out.sort();
    out
}

/// The code of a file without its comments (line comments and doc lines).
fn code_of(text: &str) -> String {
    text.lines()
        .map(|line| match line.find("//") {
            // A `//` inside a string literal is rare in this crate and never
            // next to a `crate::` path; cutting there is good enough.
            Some(at) => &line[..at],
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The module paths a file's code names: `crate::a::b::Item` and the items
/// of `crate::a::{b, c::d}` groups.
fn referenced_paths(code: &str) -> Vec<String> {
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(found) = code[at..].find("crate::") {
        let start = at + found;
        at = start + "crate::".len();
        if start > 0 && (bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_') {
            continue; // `heeler_crate::`, not ours
        }
        let mut end = at;
        while end < bytes.len()
            && (bytes[end].is_ascii_alphanumeric() || bytes[end] == b'_' || bytes[end] == b':')
        {
            end += 1;
        }
        let path = code[at..end].trim_end_matches(':').to_owned();
        if end < bytes.len() && bytes[end] == b'{' {
            let close = code[end..].find('}').map_or(code.len(), |c| end + c);
            for item in code[end + 1..close].split(',') {
                let item = item.split_whitespace().next().unwrap_or("");
                if item.is_empty() || item == "self" {
                    out.push(path.clone());
                } else {
                    out.push(format!("{path}::{item}"));
                }
            }
        } else {
            out.push(path);
        }
    }
    out
}

/// The deepest known module a path names.
fn resolve(path: &str, known: &BTreeSet<String>) -> Option<String> {
    let parts: Vec<&str> = path.split("::").collect();
    (1..=parts.len())
        .rev()
        .map(|n| parts[..n].join("::"))
        .find(|candidate| known.contains(candidate))
}

/// Whether `child` is a direct submodule of `parent`.
fn is_child(parent: &str, child: &str) -> bool {
    let prefix = if parent == "lib" {
        String::new()
    } else {
        format!("{parent}::")
    };
    child
        .strip_prefix(prefix.as_str())
        .is_some_and(|rest| !rest.is_empty() && !rest.contains("::"))
        && parent != "main"
}

/// Whether code uses `name::` as the start of a path (not `x::name::`).
fn names_bare(code: &str, name: &str) -> bool {
    let needle = format!("{name}::");
    let bytes = code.as_bytes();
    code.match_indices(&needle).any(|(at, _)| {
        at == 0
            || !(bytes[at - 1].is_ascii_alphanumeric()
                || bytes[at - 1] == b'_'
                || bytes[at - 1] == b':')
    })
}

fn edges() -> BTreeMap<String, BTreeSet<String>> {
    let modules = modules();
    let known: BTreeSet<String> = modules.iter().map(|(_, m)| m.clone()).collect();
    let mut graph = BTreeMap::new();
    for (rel, module) in &modules {
        let text = std::fs::read_to_string(src_dir().join(rel)).expect("read module");
        let code = code_of(&text);
        let mut targets: BTreeSet<String> = referenced_paths(&code)
            .iter()
            .filter_map(|path| resolve(path, &known))
            .filter(|target| target != module)
            .collect();
        // A parent names its children without `crate::` (`probe::Facts`
        // after `mod probe;`).
        for child in known.iter().filter(|k| is_child(module, k)) {
            let name = child.rsplit("::").next().unwrap_or(child);
            if names_bare(&code, name) {
                targets.insert(child.clone());
            }
        }
        graph.insert(module.clone(), targets);
    }
    graph
}

fn area(module: &str) -> &str {
    module.split("::").next().unwrap_or(module)
}

#[test]
fn folders_import_only_the_layers_below_them() {
    let layers: BTreeMap<&str, &[&str]> = LAYERS.iter().copied().collect();
    let mut bad = Vec::new();
    let graph = edges();
    for (from, targets) in &graph {
        let from_area = area(from);
        if from_area == "lib" || from_area == "main" {
            continue;
        }
        let allowed = layers
            .get(from_area)
            .unwrap_or_else(|| panic!("src/{from_area} is not in LAYERS (tests/it/tidy.rs)"));
        for to in targets {
            let to_area = area(to);
            if to_area != from_area && !allowed.contains(&to_area) {
                bad.push(format!("{from} -> {to}"));
            }
        }
    }
    println!(
        "tidy: {} modules, {} edges checked against the layers",
        graph.len(),
        graph.values().map(BTreeSet::len).sum::<usize>()
    );
    assert!(
        bad.is_empty(),
        "imports against the layering:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_module_graph_has_no_cycle() {
    let graph = edges();
    // Depth-first search with colours; report the first cycle found.
    #[derive(Clone, Copy, PartialEq)]
    enum Colour {
        White,
        Grey,
        Black,
    }
    let mut colour: BTreeMap<&str, Colour> =
        graph.keys().map(|k| (k.as_str(), Colour::White)).collect();
    fn visit<'a>(
        node: &'a str,
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        colour: &mut BTreeMap<&'a str, Colour>,
        stack: &mut Vec<&'a str>,
    ) -> Option<Vec<String>> {
        colour.insert(node, Colour::Grey);
        stack.push(node);
        for next in graph.get(node).into_iter().flatten() {
            match colour.get(next.as_str()).copied() {
                Some(Colour::Grey) => {
                    let from = stack.iter().position(|n| *n == next).unwrap_or(0);
                    let mut cycle: Vec<String> =
                        stack[from..].iter().map(|s| (*s).to_owned()).collect();
                    cycle.push(next.clone());
                    return Some(cycle);
                }
                Some(Colour::White) => {
                    if let Some(cycle) = visit(next, graph, colour, stack) {
                        return Some(cycle);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        colour.insert(node, Colour::Black);
        None
    }
    let nodes: Vec<&str> = graph.keys().map(String::as_str).collect();
    for node in nodes {
        if colour.get(node) == Some(&Colour::White) {
            let mut stack = Vec::new();
            if let Some(cycle) = visit(node, &graph, &mut colour, &mut stack) {
                panic!("import cycle: {}", cycle.join(" -> "));
            }
        }
    }
}

#[test]
fn no_file_name_is_a_folder_in_disguise() {
    // Within one folder, no two entries share a first `_`-separated word
    // (`usage_cache.rs` beside `usage_query.rs`), and no `x_y.rs` sits beside
    // an `x.rs` or an `x/`: such names belong in a folder of their own.
    let mut by_folder: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (rel, _) in modules() {
        let path = Path::new(&rel);
        let folder = path
            .parent()
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        if name != "mod" {
            by_folder.entry(folder.clone()).or_default().push(name);
        }
        // A folder is an entry of its parent too.
        if let Some(parent) = Path::new(&folder).parent() {
            let folder_name = Path::new(&folder)
                .file_name()
                .map(|s| s.to_string_lossy().into_owned());
            if let Some(folder_name) = folder_name {
                let list = by_folder
                    .entry(parent.to_string_lossy().into_owned())
                    .or_default();
                if !list.contains(&folder_name) {
                    list.push(folder_name);
                }
            }
        }
    }
    let mut bad = Vec::new();
    for (folder, names) in &by_folder {
        let mut first_words: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for name in names {
            let first = name.split('_').next().unwrap_or(name);
            first_words.entry(first).or_default().push(name);
        }
        for (first, group) in first_words {
            let has_prefix_use = group.iter().any(|n| n.contains('_'));
            if group.len() > 1 && has_prefix_use {
                bad.push(format!(
                    "src/{folder}: {} share the prefix `{first}_`",
                    group.join(", ")
                ));
            }
        }
    }
    assert!(bad.is_empty(), "folders in disguise:\n{}", bad.join("\n"));
}

/// The names of the error types a file's code declares: every `enum` or
/// `struct` whose name ends in `Error`.
fn error_types(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in code.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        for pair in words.windows(2) {
            if pair[0] == "enum" || pair[0] == "struct" {
                let name: String = pair[1]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if name.ends_with("Error") {
                    out.push(name);
                }
            }
        }
    }
    out
}

#[test]
fn every_error_type_implements_std_error() {
    // A caller can put any of them behind `dyn Error` (and `?` them into
    // one): each declares `impl std::error::Error for <Name>` in its file.
    let mut missing = Vec::new();
    let mut seen = 0;
    for (rel, _) in modules() {
        let code = code_of(&std::fs::read_to_string(src_dir().join(&rel)).expect("read source"));
        for name in error_types(&code) {
            seen += 1;
            if !code.contains(&format!("impl std::error::Error for {name} ")) {
                missing.push(format!("src/{rel}: {name}"));
            }
        }
    }
    assert!(
        seen > 20,
        "found only {seen} error types; the scan is broken"
    );
    assert!(
        missing.is_empty(),
        "error types without `impl std::error::Error`:\n{}",
        missing.join("\n")
    );
}

/// A file's code before its test module (`#[cfg(test)] mod …`), without
/// comments.
fn non_test_code(rel: &str) -> String {
    let text = std::fs::read_to_string(src_dir().join(rel)).expect("read source");
    let code = code_of(&text);
    let marker = "#[cfg(test)]";
    let test_module = code.match_indices(marker).map(|(at, _)| at).find(|&at| {
        let after = code[at + marker.len()..].trim_start();
        after.starts_with("mod ") || after.starts_with("pub(crate) mod ")
    });
    match test_module {
        Some(at) => code[..at].to_owned(),
        None => code,
    }
}

/// The string literals of `code` (no escapes inside them are needed here).
fn string_literals(code: &str) -> Vec<&str> {
    code.split('"').skip(1).step_by(2).collect()
}

#[test]
fn usage_cache_file_names_are_written_only_in_usage_paths() {
    // Every name `usage/paths.rs` gives a file of Usage state (up to a
    // `{}` it fills in) is a literal nowhere else in `src/usage`'s code.
    let owner = "usage/paths.rs";
    let names: Vec<String> = string_literals(&non_test_code(owner))
        .into_iter()
        .map(|literal| literal.split('{').next().unwrap_or(literal).to_owned())
        .filter(|name| name.len() >= 6 && (name.contains('.') || name.contains('-')))
        .collect();
    assert!(
        names.iter().any(|n| n == "index-v1.bin") && names.iter().any(|n| n == "owners-v1."),
        "the names were not found in {owner}: {names:?}"
    );
    let mut repeated = Vec::new();
    for (rel, _) in modules() {
        if !rel.starts_with("usage/") || rel == owner {
            continue;
        }
        let code = non_test_code(&rel);
        for literal in string_literals(&code) {
            if let Some(name) = names.iter().find(|n| literal.starts_with(n.as_str())) {
                repeated.push(format!(
                    "src/{rel}: \"{literal}\" (src/{owner} names {name})"
                ));
            }
        }
    }
    assert!(
        repeated.is_empty(),
        "usage file names written outside their owner:\n{}",
        repeated.join("\n")
    );
}

/// Grammars and mechanisms with one owner: a piece of code that states
/// one, the file that alone may contain it (in its non-test code; none
/// for code that is retired), and what it is.
const OWNED: &[(&str, &str, &str)] = &[
    (
        "fn is_custom_token(",
        "sidebar/config.rs",
        "the `$custom` token grammar",
    ),
    (
        "fn is_color(",
        "sidebar/config.rs",
        "the `#RGB` colour grammar",
    ),
    (
        "strip_prefix('#')",
        "sidebar/config.rs",
        "the `#RGB` colour grammar",
    ),
    (
        "fn offset_at(",
        "base/tz.rs",
        "local time: a zone's UTC offset",
    ),
    (
        "localtime_r",
        "",
        "local time from libc (base/tz.rs is the one)",
    ),
];

#[test]
fn each_owned_grammar_is_written_only_in_its_owner() {
    let mut elsewhere = Vec::new();
    let mut found = BTreeSet::new();
    for (rel, _) in modules() {
        let code = non_test_code(&rel);
        for (needle, owner, what) in OWNED {
            if code.contains(needle) {
                if rel == *owner {
                    found.insert(*needle);
                } else {
                    elsewhere.push(format!("src/{rel}: `{needle}` ({what}; owner src/{owner})"));
                }
            }
        }
    }
    let lost: Vec<&str> = OWNED
        .iter()
        .filter(|(_, owner, _)| !owner.is_empty())
        .map(|(needle, _, _)| *needle)
        .filter(|needle| !found.contains(needle))
        .collect();
    assert!(lost.is_empty(), "not found in their owner: {lost:?}");
    assert!(
        elsewhere.is_empty(),
        "owned code written again:\n{}",
        elsewhere.join("\n")
    );
}

#[test]
fn herdr_answer_fields_are_named_only_in_src_herdr() {
    // herdr's agents, tabs, panes and workspaces are parsed once, in
    // `herdr/answer.rs`; everyone else reads the types. The fields checked
    // are those no format of heeler's own shares. `hooks/env.rs` parses
    // herdr's hook event (not an answer), whose data names two of them.
    const FIELDS: &[&str] = &[
        "\"pane_id\"",
        "\"tab_id\"",
        "\"agent_status\"",
        "\"display_agent\"",
    ];
    const EVENT: (&str, &[&str]) = ("hooks/env.rs", &["\"pane_id\"", "\"agent_status\""]);
    let mut named = Vec::new();
    for (rel, _) in modules() {
        if rel.starts_with("herdr/") {
            continue;
        }
        let code = non_test_code(&rel);
        for field in FIELDS {
            let allowed = rel == EVENT.0 && EVENT.1.contains(field);
            if code.contains(field) && !allowed {
                named.push(format!("src/{rel}: {field}"));
            }
        }
    }
    assert!(
        named.is_empty(),
        "herdr answer fields read outside src/herdr:\n{}",
        named.join("\n")
    );
}

/// ARCHITECTURE.md's sections by the folder their heading names
/// (`### \`src/usage/store/\``): folder (relative to `src/`, "" for the
/// root) to the section's text.
fn architecture_sections(map: &str) -> BTreeMap<String, String> {
    let mut sections: BTreeMap<String, String> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in map.lines() {
        if line.starts_with('#') {
            current = line
                .split('`')
                .nth(1)
                .filter(|name| name.starts_with("src/") && name.ends_with('/'))
                .map(|name| {
                    name.trim_start_matches("src/")
                        .trim_end_matches('/')
                        .to_owned()
                });
            continue;
        }
        if let Some(folder) = &current {
            let text = sections.entry(folder.clone()).or_default();
            text.push_str(line);
            text.push('\n');
        }
    }
    sections
}

#[test]
fn architecture_md_names_every_source_file() {
    let map =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("ARCHITECTURE.md"))
            .expect("read ARCHITECTURE.md");
    let sections = architecture_sections(&map);
    let mut missing = Vec::new();
    let mut folders = BTreeSet::new();
    for (rel, _) in modules() {
        let path = Path::new(&rel);
        let name = path
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let folder = path
            .parent()
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        // Each file is named, in backticks, in the section of its folder.
        let named = sections
            .get(&folder)
            .is_some_and(|text| text.contains(&format!("`{name}`")));
        if !named {
            missing.push(format!("src/{rel} (in the section headed `src/{folder}/`)"));
        }
        folders.insert(folder);
    }
    // Each folder's section states its invariants and what it may import.
    for folder in folders.iter().filter(|f| !f.is_empty()) {
        let text = sections.get(folder).map(String::as_str).unwrap_or("");
        if !text.contains("Invariant") {
            missing.push(format!("the invariants of src/{folder}/"));
        }
        if folder.split('/').count() == 1 && !text.contains("Imports") {
            missing.push(format!("what src/{folder}/ imports"));
        }
    }
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md does not name:\n{}",
        missing.join("\n")
    );
}

#[test]
fn the_edge_finder_reads_groups_and_skips_comments() {
    let code = code_of(
        "use crate::a::{b, c::d};\n// crate::never\nlet x = crate::e::f(1); /// crate::doc\n",
    );
    assert_eq!(referenced_paths(&code), vec!["a::b", "a::c::d", "e::f"]);
}

/// The longest a function may be, in lines from its `fn` line to its
/// closing brace: one screen, readable without scrolling.
const MAX_FUNCTION_LINES: usize = 80;

/// The non-test functions allowed over `MAX_FUNCTION_LINES`, as (file
/// relative to the workspace, function name): none now. Were one ever
/// listed, the check also fails when it is no longer over, or gone, so
/// the list only shrinks.
const LONG_FUNCTIONS: &[(&str, &str)] = &[];

/// Rust source with its comments, string literals and char literals
/// blanked to spaces (newlines kept, so byte offsets and line numbers stay
/// those of the file), leaving only the code's own braces and words.
fn blank_non_code(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |out: &mut String, c: char| out.push(if c == '\n' { '\n' } else { ' ' });
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let prev_ident = i > 0 && ident(chars[i - 1]);
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                blank(&mut out, chars[i]);
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, chars[i]);
                    i += 1;
                }
            }
        } else if !prev_ident && (c == 'r' || (c == 'b' && next == Some('r'))) && {
            let at = if c == 'b' { i + 2 } else { i + 1 };
            let hashes = chars[at.min(chars.len())..]
                .iter()
                .take_while(|&&h| h == '#')
                .count();
            chars.get(at + hashes) == Some(&'"')
        } {
            // A raw string: `r#"…"#` ends at a quote followed by as many hashes.
            let at = if c == 'b' { i + 2 } else { i + 1 };
            let hashes = chars[at..].iter().take_while(|&&h| h == '#').count();
            let closing: String = std::iter::once('"')
                .chain(std::iter::repeat_n('#', hashes))
                .collect();
            let closing: Vec<char> = closing.chars().collect();
            let body = at + hashes + 1;
            let end = (body..chars.len())
                .find(|&j| chars[j..].starts_with(&closing))
                .map_or(chars.len(), |j| j + closing.len());
            for &b in &chars[i..end] {
                blank(&mut out, b);
            }
            i = end;
        } else if c == '"' {
            blank(&mut out, c);
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                let step = if chars[i] == '\\' { 2 } else { 1 };
                for &b in &chars[i..(i + step).min(chars.len())] {
                    blank(&mut out, b);
                }
                i += step;
            }
            if i < chars.len() {
                blank(&mut out, chars[i]);
                i += 1;
            }
        } else if c == '\'' && (next == Some('\\') || chars.get(i + 2) == Some(&'\'')) {
            // A char literal (`'{'`, `'\n'`, `'\u{7f}'`); a lifetime or
            // label (`'a`) has no closing quote right after one char.
            let close = (i + 2..chars.len())
                .find(|&j| chars[j] == '\'' && (chars[j - 1] != '\\' || chars[j - 2] == '\\'))
                .map_or(chars.len(), |j| j + 1);
            for &b in &chars[i..close] {
                blank(&mut out, b);
            }
            i = close;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// The offset of the brace that closes the one at `open`.
fn closing_brace(code: &[u8], open: usize) -> usize {
    let mut depth = 0usize;
    for (at, &b) in code.iter().enumerate().skip(open) {
        match b {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return at;
                }
            }
            _ => {}
        }
    }
    code.len()
}

/// Where the item starting at `from` ends its head: the offset of its
/// body's `{` or its closing `;`, outside parentheses and brackets (the
/// `;` of `[u8; 4]` is not an end).
fn item_head_end(code: &[u8], from: usize) -> Option<(usize, u8)> {
    let mut depth = 0i32;
    for (at, &b) in code.iter().enumerate().skip(from) {
        match b {
            b'(' | b'[' => depth += 1,
            b')' | b']' => depth -= 1,
            b'{' | b';' if depth == 0 => return Some((at, b)),
            _ => {}
        }
    }
    None
}

fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// A file's test-only parts: the byte ranges of its `#[cfg(test)]` items,
/// and the names of the modules it declares under `#[cfg(test)]` in files
/// of their own (`#[cfg(test)] mod differential;`).
fn test_only_parts(code: &str) -> (Vec<(usize, usize)>, Vec<String>) {
    let bytes = code.as_bytes();
    let mut ranges = Vec::new();
    let mut modules = Vec::new();
    for (at, _) in code.match_indices("#[cfg(test)]") {
        let from = at + "#[cfg(test)]".len();
        let Some((end, kind)) = item_head_end(bytes, from) else {
            continue;
        };
        if kind == b'{' {
            ranges.push((at, closing_brace(bytes, end)));
        } else {
            let words: Vec<&str> = code[from..end].split_whitespace().collect();
            if let [.., "mod", name] = words.as_slice() {
                modules.push((*name).to_owned());
            }
            ranges.push((at, end));
        }
    }
    (ranges, modules)
}

/// The functions with a body in `code` (blanked by `blank_non_code`) that
/// lie outside `excluded`, as (name, lines from the `fn` line to the
/// closing brace).
fn function_lengths(code: &str, excluded: &[(usize, usize)]) -> Vec<(String, usize)> {
    let bytes = code.as_bytes();
    let line_of = |at: usize| bytes[..at].iter().filter(|&&b| b == b'\n').count();
    let mut out = Vec::new();
    for (at, _) in code.match_indices("fn") {
        let before_ok = at == 0 || !is_ident_byte(bytes[at - 1]);
        let after = &code[at + 2..];
        let name: String = after
            .trim_start()
            .chars()
            .take_while(|&c| c.is_alphanumeric() || c == '_')
            .collect();
        // `fn(u8) -> u8` is a type and `fnord` a word; `fn name` is an item.
        let spaced = after.starts_with(char::is_whitespace);
        if !before_ok || !spaced || name.is_empty() {
            continue;
        }
        if excluded.iter().any(|&(from, to)| (from..=to).contains(&at)) {
            continue;
        }
        let Some((open, b'{')) = item_head_end(bytes, at) else {
            continue; // a declaration without a body (a trait's)
        };
        let close = closing_brace(bytes, open);
        out.push((name, line_of(close) - line_of(at) + 1));
    }
    out
}

/// Every non-test function of the crate and of `xtask` with its length, as
/// (file relative to the workspace, name, lines). A file that a parent
/// declares under `#[cfg(test)]` (and every file below it) is test code.
fn function_lengths_of_the_workspace() -> Vec<(String, String, usize)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("read source dir") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    walk(&root.join("src"), &mut files);
    walk(&root.join("xtask/src"), &mut files);
    files.sort();
    let mut parsed = Vec::new();
    let mut test_paths: Vec<PathBuf> = Vec::new();
    for path in &files {
        let code = blank_non_code(&std::fs::read_to_string(path).expect("read source"));
        let (ranges, test_modules) = test_only_parts(&code);
        // `a/mod.rs` and `lib.rs` declare modules beside them; `a/b.rs` in `a/b/`.
        let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned());
        let dir = path.parent().expect("in a folder");
        let children = match stem.as_deref() {
            Some("mod" | "lib" | "main") => dir.to_path_buf(),
            Some(stem) => dir.join(stem),
            None => dir.to_path_buf(),
        };
        for name in test_modules {
            test_paths.push(children.join(format!("{name}.rs")));
            test_paths.push(children.join(name));
        }
        parsed.push((path.clone(), code, ranges));
    }
    let mut out = Vec::new();
    for (path, code, ranges) in parsed {
        if test_paths.iter().any(|test| path.starts_with(test)) {
            continue;
        }
        let rel = path
            .strip_prefix(root)
            .expect("under the workspace")
            .to_string_lossy()
            .into_owned();
        for (name, lines) in function_lengths(&code, &ranges) {
            out.push((rel.clone(), name, lines));
        }
    }
    out
}

#[test]
fn no_function_is_longer_than_a_screen() {
    let lengths = function_lengths_of_the_workspace();
    assert!(
        lengths.len() > 1000,
        "found only {} functions; the scan is broken",
        lengths.len()
    );
    let over: Vec<&(String, String, usize)> = lengths
        .iter()
        .filter(|(_, _, lines)| *lines > MAX_FUNCTION_LINES)
        .collect();
    let listed = |file: &str, name: &str| LONG_FUNCTIONS.contains(&(file, name));
    let mut bad: Vec<String> = over
        .iter()
        .filter(|(file, name, _)| !listed(file, name))
        .map(|(file, name, lines)| format!("{file}: fn {name} has {lines} lines"))
        .collect();
    for (file, name) in LONG_FUNCTIONS {
        if !over.iter().any(|(f, n, _)| f == file && n == name) {
            bad.push(format!(
                "{file}: fn {name} is listed in LONG_FUNCTIONS but is not over \
                 {MAX_FUNCTION_LINES} lines (or is gone): remove it from the list"
            ));
        }
    }
    println!(
        "tidy: {} functions, {} over {MAX_FUNCTION_LINES} lines, {} listed",
        lengths.len(),
        over.len(),
        LONG_FUNCTIONS.len()
    );
    assert!(
        bad.is_empty(),
        "functions over {MAX_FUNCTION_LINES} lines (split them):\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_function_measure_counts_from_fn_to_its_closing_brace() {
    let text = "fn a() {\n    let s = \"}\";\n    let c = '{';\n    // }\n}\n\
                fn b<'x>(v: [u8; 2]) -> &'x str where {\n    r#\"}\"#\n}\n\
                trait T { fn c(&self); }\n\
                #[cfg(test)]\nmod tests {\n    fn d() {\n    }\n}\n\
                #[cfg(test)]\nmod other;\n\
                fn e(f: fn(u8)) { /* } */ }\n";
    let code = blank_non_code(text);
    assert_eq!(code.len(), text.len());
    let (ranges, modules) = test_only_parts(&code);
    assert_eq!(modules, vec!["other"]);
    let found = function_lengths(&code, &ranges);
    let expected: Vec<(String, usize)> = [("a", 5), ("b", 3), ("e", 1)]
        .iter()
        .map(|(n, l)| ((*n).to_owned(), *l))
        .collect();
    assert_eq!(found, expected);
}
