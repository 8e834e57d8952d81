//! `cargo xtask dist [--target T]… [--native] [--out DIR]`: build every
//! release target, check each binary, and write the release assets
//! (`dist_layout.rs`) into one directory, `target/dist/` by default.
//!
//! One recipe for CI here and for the release workflow, so what is tested is
//! what ships. Two ways to build, the checks and the packaging shared:
//!
//! - The default, on the Debian build machine where rustup cannot download
//!   the cross targets: Debian's `rustc-web` 1.96 with `rust-web-src` builds
//!   std from source (`RUSTC_BOOTSTRAP=1 -Zbuild-std`), and zig from PyPI
//!   (`ziglang` + `cargo-zigbuild`) supplies musl libc, the crt objects,
//!   libunwind, the macOS SDK stubs and a C compiler for ring. rustup's
//!   `~/.cargo/bin` proxies stay off `PATH` and the environment is cleared,
//!   so Debian's cargo and rustc are the ones used. With `strip = true`,
//!   rustc strips a Mach-O on a non-mac host with `rust-objcopy`, which
//!   Debian's rustc does not ship: a shim directory on `PATH` names
//!   `llvm-objcopy` so (`HEELER_OBJCOPY` overrides which one). For musl,
//!   `RUSTFLAGS="-C link-self-contained=no"`: Debian ships no self-contained
//!   musl crt objects; zig provides them. `.ci/static-check` installs it all.
//! - `--native`, on the release workflow's native runners: the cargo on
//!   `PATH` with rustup's target and `rust-src` (and, for musl, `musl-tools`).
//!
//! Both build std from source the same way ([`STD_BUILD`], [`rustflags`]):
//! without the backtrace symboliser a stripped binary cannot use, and on
//! Linux without unwind tables, which `panic = "abort"` never reads; with
//! rustup's prebuilt std the `--native` musl binary is over the size
//! budget (figures: docs/benchmarks.md, "Release binaries").
//!
//! Each binary is checked before it is packaged: `file` names the right
//! format and CPU; a musl binary has no `PT_INTERP` (doctor's reader, the
//! one owner of that rule); a Mach-O links no dynamic library beyond
//! libSystem, libiconv and libcharset (its load commands, read here); every
//! binary is under 4.5 MiB; and where this machine can run it (natively, or an
//! aarch64 Linux binary through `qemu-aarch64-static`) `env -i heeler
//! --version` prints `heeler <version>`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use xshell::{Shell, cmd};

use crate::dist_layout;

/// The size budget of every release binary: 4.5 MiB, the project's stated
/// limit for the static binary (3.5 MiB until SQLite came in, for opencode's
/// and Kilo's databases).
pub const MAX_SIZE_BYTES: u64 = 9 * 512 * 1024;
const DEBIAN_STD_SOURCE: &str = "/usr/lib/rustlib/src/rust/library";
/// The build directory of the default recipe: Debian's rustc must not
/// thrash rustup's caches in `target/`.
const CROSS_TARGET_DIR: &str = "target/dist-build";
const DEFAULT_OUT: &str = "target/dist";
/// Dynamic libraries a macOS binary may link: the system library, and the
/// two std pulls in for its locale-independent string conversions.
const DARWIN_ALLOWED_DYLIBS: [&str; 3] = [
    "/usr/lib/libSystem.B.dylib",
    "/usr/lib/libiconv.2.dylib",
    "/usr/lib/libcharset.1.dylib",
];
/// Variables passed through to the default recipe's build; everything else
/// is cleared so the rustup proxies' `RUSTUP_TOOLCHAIN`, `CARGO`, `RUSTC`
/// etc. cannot leak in.
const PASSED_THROUGH: &[&str] = &[
    "HOME",
    "CARGO_HOME",
    "CARGO_BUILD_JOBS",
    "TMPDIR",
    "SOURCE_DATE_EPOCH",
    "http_proxy",
    "https_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "no_proxy",
];

#[derive(Debug, PartialEq, Eq)]
struct Options {
    targets: Vec<String>,
    native: bool,
    out: Option<PathBuf>,
    /// Only rewrite `SHA256SUMS` of this directory (the release job, after
    /// merging the per-target assets).
    checksums_only: Option<PathBuf>,
}

fn parse_args(args: &[String]) -> Result<Options, String> {
    let usage =
        "usage: cargo xtask dist [--target <target>]… [--native] [--out DIR] | --checksums DIR";
    let mut options = Options {
        targets: Vec::new(),
        native: false,
        out: None,
        checksums_only: None,
    };
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--target" => {
                let target = rest.next().ok_or(usage)?;
                if !dist_layout::TARGETS.contains(&target.as_str()) {
                    return Err(format!(
                        "{target} is not a release target ({}); {usage}",
                        dist_layout::TARGETS.join(", ")
                    ));
                }
                if !options.targets.contains(target) {
                    options.targets.push(target.clone());
                }
            }
            "--native" => options.native = true,
            "--out" => options.out = Some(PathBuf::from(rest.next().ok_or(usage)?)),
            "--checksums" => {
                options.checksums_only = Some(PathBuf::from(rest.next().ok_or(usage)?));
            }
            _ => return Err(usage.to_owned()),
        }
    }
    if options.targets.is_empty() {
        options.targets = dist_layout::TARGETS
            .iter()
            .map(|t| (*t).to_owned())
            .collect();
    }
    Ok(options)
}

/// What one built target came to, for the summary.
struct Built {
    target: String,
    seconds: f64,
    size: u64,
    ran: String,
}

pub fn run(args: &[String]) -> Result<(), String> {
    let options = parse_args(args)?;
    let root = crate::project_root();
    if let Some(dir) = &options.checksums_only {
        let text = dist_layout::write_sums(dir)?;
        print!("{text}");
        return Ok(());
    }
    let out = options
        .out
        .clone()
        .unwrap_or_else(|| root.join(DEFAULT_OUT));
    let sh = Shell::new().map_err(|e| e.to_string())?;
    sh.change_dir(&root);
    let version = heeler_version(&root)?;
    let mut built = Vec::new();
    for target in &options.targets {
        let started = Instant::now();
        let binary = if options.native {
            build_native(&sh, &root, target)?
        } else {
            build_cross(&sh, &root, target)?
        };
        let seconds = started.elapsed().as_secs_f64();
        let size = check(&sh, target, &binary)?;
        let ran = run_version(&sh, target, &binary, &version)?;
        package(&sh, &root, &out, target, &binary)?;
        built.push(Built {
            target: target.clone(),
            seconds,
            size,
            ran,
        });
    }
    let sums = dist_layout::write_sums(&out)?;
    println!("xtask dist: {} in {}:", dist_layout::SUMS, out.display());
    print!("{sums}");
    for b in &built {
        println!(
            "xtask dist: {}: {} bytes ({:.2} MiB), built in {:.0} s, {}",
            b.target,
            b.size,
            b.size as f64 / 1048576.0,
            b.seconds,
            b.ran
        );
    }
    Ok(())
}

/// The release workflow's build: rustup's target on a native runner, std
/// built from rustup's `rust-src` as the other recipe builds it.
fn build_native(sh: &Shell, root: &Path, target: &str) -> Result<PathBuf, String> {
    println!("xtask dist: building {target} with the cargo on PATH");
    let std_build = STD_BUILD;
    cmd!(
        sh,
        "cargo build --locked --release -p heeler --bin heeler --target {target} {std_build...}"
    )
    .env("RUSTC_BOOTSTRAP", "1")
    .env("RUSTFLAGS", rustflags(target, Recipe::Native))
    .run()
    .map_err(|e| format!("build of {target} failed: {e} (std is built from source: rustup component add rust-src)"))?;
    let target_dir =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    Ok(target_dir.join(target).join("release/heeler"))
}

/// This machine kind's build: Debian rustc + build-std + cargo-zigbuild.
fn build_cross(sh: &Shell, root: &Path, target: &str) -> Result<PathBuf, String> {
    let venv = zig_venv();
    check_prerequisites(&venv)?;
    let target_dir = root.join(CROSS_TARGET_DIR);
    let tools = objcopy_shim(&target_dir)?;
    let zigbuild = venv.join("bin/cargo-zigbuild");
    let path = format!(
        "{}:{}:/usr/bin:/bin",
        tools.display(),
        venv.join("bin").display()
    );
    let std_build = STD_BUILD;
    let mut build = cmd!(
        sh,
        "{zigbuild} zigbuild --locked --release -p heeler --bin heeler --target {target} {std_build...}"
    )
    .env_clear()
    .env("PATH", &path)
    .env("RUSTC", "/usr/bin/rustc")
    .env("RUSTDOC", "/usr/bin/rustdoc")
    .env("CARGO", "/usr/bin/cargo")
    .env("RUSTC_BOOTSTRAP", "1")
    .env("RUSTFLAGS", rustflags(target, Recipe::Cross))
    .env("CARGO_TARGET_DIR", &target_dir);
    for name in PASSED_THROUGH {
        if let Some(value) = std::env::var_os(name) {
            build = build.env(name, value);
        }
    }
    println!("xtask dist: building {target} with Debian rustc + build-std + cargo-zigbuild");
    build
        .run()
        .map_err(|e| format!("build of {target} failed: {e}"))?;
    Ok(target_dir.join(target).join("release/heeler"))
}

/// How both recipes build std: from source (`RUSTC_BOOTSTRAP=1`) with the
/// release profile, aborting on panic, and without std's `backtrace`
/// feature. A release binary is stripped, so the symboliser that feature
/// links (gimli, addr2line, rustc-demangle and their sorts, about 155 KB of
/// x86_64 code) could name no frame; a panic still prints its message and
/// its location.
const STD_BUILD: [&str; 2] = [
    "-Zbuild-std=std,panic_abort",
    "-Zbuild-std-features=panic-unwind",
];

/// The two ways `dist` builds a binary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Recipe {
    /// rustup's target on a runner of the target's kind (`--native`).
    Native,
    /// This machine kind's Debian rustc, zig and cargo-zigbuild.
    Cross,
}

/// The `RUSTFLAGS` of a build of `target` by `recipe`.
///
/// - Linux binaries carry no unwind tables: with `panic = "abort"` nothing
///   unwinds, and with std built without `backtrace` nothing walks the
///   stack (265 KB of `.eh_frame` on x86_64 musl). The Apple targets keep
///   theirs, which the platform's crash reports read.
/// - Cross musl builds link zig's crt objects: Debian ships no
///   self-contained ones, and the option is refused for any other target
///   ("not supported on this target").
fn rustflags(target: &str, recipe: Recipe) -> String {
    let mut flags = Vec::new();
    if target.ends_with("-linux-musl") {
        flags.push("-C force-unwind-tables=no");
        if recipe == Recipe::Cross {
            flags.push("-C link-self-contained=no");
        }
    }
    flags.join(" ")
}

/// A directory holding `rust-objcopy`, a link to LLVM's objcopy.
fn objcopy_shim(target_dir: &Path) -> Result<PathBuf, String> {
    let objcopy = match std::env::var_os("HEELER_OBJCOPY") {
        Some(path) => PathBuf::from(path),
        None => ["/usr/bin/llvm-objcopy", "/usr/local/bin/llvm-objcopy"]
            .iter()
            .map(PathBuf::from)
            .find(|p| p.exists())
            .ok_or(
                "no llvm-objcopy (rustc strips Mach-O binaries with it); apt-get install llvm, or set HEELER_OBJCOPY",
            )?,
    };
    let tools = target_dir.join("tools");
    std::fs::create_dir_all(&tools)
        .map_err(|e| format!("cannot create {}: {e}", tools.display()))?;
    let link = tools.join("rust-objcopy");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&objcopy, &link)
        .map_err(|e| format!("cannot link {}: {e}", link.display()))?;
    Ok(tools)
}

/// The virtualenv holding PyPI's `ziglang` and `cargo-zigbuild`.
fn zig_venv() -> PathBuf {
    if let Some(dir) = std::env::var_os("HEELER_ZIG_VENV") {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME").unwrap_or_default();
    PathBuf::from(home).join(".cache/heeler/zig-venv")
}

fn check_prerequisites(venv: &Path) -> Result<(), String> {
    let fix = "run .ci/static-check, which installs them (apt rustc-web cargo-web rust-web-src; pip ziglang cargo-zigbuild), or pass --native on a runner with rustup's target";
    for tool in ["/usr/bin/cargo", "/usr/bin/rustc"] {
        if !Path::new(tool).exists() {
            return Err(format!(
                "{tool} (Debian rustc-web/cargo-web) is missing; {fix}"
            ));
        }
    }
    if !Path::new(DEBIAN_STD_SOURCE).is_dir() {
        return Err(format!(
            "{DEBIAN_STD_SOURCE} (rust-web-src) is missing; {fix}"
        ));
    }
    if !venv.join("bin/cargo-zigbuild").exists() {
        return Err(format!(
            "{} has no cargo-zigbuild (set HEELER_ZIG_VENV); {fix}",
            venv.display()
        ));
    }
    Ok(())
}

// ------------------------------------------------------------------ checks

/// The binary's format a target must have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    /// A static ELF executable; `file`'s name for the machine.
    StaticElf(&'static str),
    /// A 64-bit Mach-O executable; `file`'s name for the CPU and its
    /// `cputype` (CPU_TYPE_X86_64, CPU_TYPE_ARM64).
    MachO(&'static str, u32),
}

fn format_of(target: &str) -> Result<Format, String> {
    match target {
        "x86_64-unknown-linux-musl" => Ok(Format::StaticElf("x86-64")),
        "aarch64-unknown-linux-musl" => Ok(Format::StaticElf("ARM aarch64")),
        "x86_64-apple-darwin" => Ok(Format::MachO("x86_64", 0x0100_0007)),
        "aarch64-apple-darwin" => Ok(Format::MachO("arm64", 0x0100_000c)),
        _ => Err(format!("{target} is not a release target")),
    }
}

/// Checks the binary and returns its size.
fn check(sh: &Shell, target: &str, binary: &Path) -> Result<u64, String> {
    let bytes =
        std::fs::read(binary).map_err(|e| format!("no binary at {}: {e}", binary.display()))?;
    let described = cmd!(sh, "file -b {binary}")
        .read()
        .map_err(|e| format!("`file` failed: {e}"))?;
    println!("xtask dist: {target}: file: {described}");
    let notes = check_bytes(target, &bytes, &described)?;
    for note in notes {
        println!("xtask dist: {target}: {note}");
    }
    Ok(bytes.len() as u64)
}

/// The pure check of one binary: its bytes and what `file` said of it.
/// Returns what was found, for the log, or what is wrong.
fn check_bytes(target: &str, bytes: &[u8], described: &str) -> Result<Vec<String>, String> {
    let size = bytes.len() as u64;
    if size >= MAX_SIZE_BYTES {
        return Err(format!(
            "{target}: the binary is {size} bytes, over the {MAX_SIZE_BYTES}-byte budget"
        ));
    }
    let mut notes = vec![format!(
        "{size} bytes, under the {MAX_SIZE_BYTES}-byte budget"
    )];
    match format_of(target)? {
        Format::StaticElf(machine) => {
            // rustup's musl targets link a static PIE, which newer `file`
            // calls "static-pie linked"; zig's link is "statically linked".
            let is_static =
                described.contains("statically linked") || described.contains("static-pie linked");
            if !described.starts_with("ELF 64-bit") || !described.contains(machine) || !is_static {
                return Err(format!(
                    "{target}: `file` does not report a static 64-bit {machine} ELF executable: {described}"
                ));
            }
            match heeler::doctor::binary::has_interpreter(bytes) {
                Ok(false) => notes.push("no PT_INTERP program header".to_owned()),
                Ok(true) => {
                    return Err(format!(
                        "{target}: the binary has a PT_INTERP program header (needs a dynamic loader)"
                    ));
                }
                Err(why) => return Err(format!("{target}: {why}")),
            }
        }
        Format::MachO(cpu, cputype) => {
            if !described.starts_with("Mach-O 64-bit") || !described.contains(cpu) {
                return Err(format!(
                    "{target}: `file` does not report a 64-bit {cpu} Mach-O executable: {described}"
                ));
            }
            let header = macho_dylibs(bytes).map_err(|why| format!("{target}: {why}"))?;
            if header.cputype != cputype {
                return Err(format!(
                    "{target}: the Mach-O cputype is {:#x}, expected {cputype:#x}",
                    header.cputype
                ));
            }
            if let Some(extra) = header
                .dylibs
                .iter()
                .find(|lib| !DARWIN_ALLOWED_DYLIBS.contains(&lib.as_str()))
            {
                return Err(format!(
                    "{target}: links {extra}; only {} are allowed",
                    DARWIN_ALLOWED_DYLIBS.join(", ")
                ));
            }
            notes.push(format!("links {}", header.dylibs.join(", ")));
        }
    }
    Ok(notes)
}

/// A thin 64-bit Mach-O executable's CPU and the dynamic libraries it loads.
#[derive(Debug, PartialEq, Eq)]
struct MachO {
    cputype: u32,
    dylibs: Vec<String>,
}

/// Reads the header and load commands of a little-endian 64-bit Mach-O
/// executable (`<mach-o/loader.h>`): every `LC_LOAD_DYLIB`,
/// `LC_LOAD_WEAK_DYLIB`, `LC_REEXPORT_DYLIB`, `LC_LAZY_LOAD_DYLIB` and
/// `LC_LOAD_UPWARD_DYLIB` names a library the loader opens.
fn macho_dylibs(bytes: &[u8]) -> Result<MachO, String> {
    const MH_MAGIC_64: u32 = 0xfeed_facf;
    const MH_EXECUTE: u32 = 2;
    const HEADER_SIZE: usize = 32;
    const DYLIB_COMMANDS: [u32; 5] = [0xc, 0x8000_0018, 0x8000_001f, 0x20, 0x8000_0023];
    let u32_at = |offset: usize| -> Result<u32, String> {
        offset
            .checked_add(4)
            .and_then(|end| bytes.get(offset..end))
            .and_then(|b| b.try_into().ok())
            .map(u32::from_le_bytes)
            .ok_or_else(|| "truncated Mach-O load commands".to_owned())
    };
    if u32_at(0)? != MH_MAGIC_64 {
        return Err("not a thin little-endian 64-bit Mach-O file".to_owned());
    }
    let cputype = u32_at(4)?;
    if u32_at(12)? != MH_EXECUTE {
        return Err("the Mach-O file is not an executable".to_owned());
    }
    let count = u32_at(16)?;
    let mut at = HEADER_SIZE;
    let mut dylibs = Vec::new();
    for _ in 0..count {
        let command = u32_at(at)?;
        let size = u32_at(at + 4)? as usize;
        if size < 8 {
            return Err("a Mach-O load command is shorter than its header".to_owned());
        }
        let end = at
            .checked_add(size)
            .filter(|end| *end <= bytes.len())
            .ok_or("truncated Mach-O load commands")?;
        if DYLIB_COMMANDS.contains(&command) {
            let name_offset = u32_at(at + 8)? as usize;
            let name = bytes
                .get(at + name_offset..end)
                .ok_or("a dylib name lies outside its load command")?;
            let name = name.split(|b| *b == 0).next().unwrap_or_default();
            dylibs.push(String::from_utf8_lossy(name).into_owned());
        }
        at = end;
    }
    Ok(MachO { cputype, dylibs })
}

/// `env -i heeler --version` where this machine can run the binary, natively
/// or through qemu-user; returns how it ran, or why it did not.
fn run_version(sh: &Shell, target: &str, binary: &Path, version: &str) -> Result<String, String> {
    let runner = match runner_for(target, std::env::consts::OS, std::env::consts::ARCH) {
        Runner::Native => None,
        Runner::Qemu(qemu) => match find_on_path(qemu) {
            Some(path) => Some(path),
            None => return Ok(format!("not run here ({qemu} is not installed)")),
        },
        Runner::None => return Ok("not run here (another OS or CPU)".to_owned()),
    };
    let printed = match &runner {
        None => cmd!(sh, "env -i {binary} --version").read(),
        Some(qemu) => cmd!(sh, "env -i {qemu} {binary} --version").read(),
    }
    .map_err(|e| format!("{target}: `env -i heeler --version` failed: {e}"))?;
    let expected = format!("heeler {version}");
    if printed.lines().next() != Some(expected.as_str()) {
        return Err(format!(
            "{target}: --version printed {printed:?}, expected {expected:?}"
        ));
    }
    Ok(match runner {
        None => format!("`env -i heeler --version` printed {expected}"),
        Some(qemu) => format!(
            "`env -i {} heeler --version` printed {expected}",
            qemu.display()
        ),
    })
}

#[derive(Debug, PartialEq, Eq)]
enum Runner {
    Native,
    Qemu(&'static str),
    None,
}

/// How a machine of `os`/`arch` (std's names) runs a target's binary.
fn runner_for(target: &str, os: &str, arch: &str) -> Runner {
    let (target_arch, target_os) = match target.split_once('-') {
        Some((arch, rest)) if rest.ends_with("linux-musl") => (arch, "linux"),
        Some((arch, rest)) if rest.ends_with("apple-darwin") => (arch, "macos"),
        _ => return Runner::None,
    };
    if target_os != os {
        return Runner::None;
    }
    if target_arch == arch {
        return Runner::Native;
    }
    if os == "linux" && target_arch == "aarch64" {
        return Runner::Qemu("qemu-aarch64-static");
    }
    Runner::None
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

// --------------------------------------------------------------- packaging

/// Writes `heeler-<target>` and `heeler-<target>.tar.gz` into `out`.
fn package(sh: &Shell, root: &Path, out: &Path, target: &str, binary: &Path) -> Result<(), String> {
    std::fs::create_dir_all(out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    let bytes =
        std::fs::read(binary).map_err(|e| format!("cannot read {}: {e}", binary.display()))?;
    let bare = out.join(dist_layout::binary_asset(target));
    write_file(&bare, &bytes, 0o755)?;
    let mtime = source_date(sh);
    let mut members = Vec::new();
    for name in dist_layout::ARCHIVE_MEMBERS {
        let (contents, mode) = if name == "heeler" {
            (bytes.clone(), 0o755)
        } else {
            let path = root.join(name);
            let contents =
                std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            (contents, 0o644)
        };
        members.push(TarMember {
            name,
            mode,
            contents,
        });
    }
    let tar = tar_bytes(&members, mtime)?;
    let gzipped = cmd!(sh, "gzip -9 -n -c")
        .stdin(tar)
        .output()
        .map_err(|e| format!("gzip failed: {e}"))?
        .stdout;
    write_file(
        &out.join(dist_layout::archive_asset(target)),
        &gzipped,
        0o644,
    )?;
    Ok(())
}

fn write_file(path: &Path, bytes: &[u8], mode: u32) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, bytes).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| format!("cannot chmod {}: {e}", path.display()))
}

/// The archive members' modification time: `SOURCE_DATE_EPOCH`, else the
/// commit's time, else 0, so the same commit gives the same archive.
fn source_date(sh: &Shell) -> u64 {
    if let Some(seconds) = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.trim().parse().ok())
    {
        return seconds;
    }
    cmd!(sh, "git log -1 --format=%ct")
        .quiet()
        .ignore_stderr()
        .read()
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

struct TarMember {
    name: &'static str,
    mode: u32,
    contents: Vec<u8>,
}

/// A POSIX ustar archive of regular files owned by 0:0: one 512-byte header
/// per member, its contents padded to 512 bytes, two zero blocks at the end.
fn tar_bytes(members: &[TarMember], mtime: u64) -> Result<Vec<u8>, String> {
    const BLOCK: usize = 512;
    let mut out = Vec::new();
    for member in members {
        if member.name.len() > 100 {
            return Err(format!("{} is too long a tar member name", member.name));
        }
        let mut header = [0u8; BLOCK];
        let mut put = |offset: usize, field: &[u8]| {
            header[offset..offset + field.len()].copy_from_slice(field);
        };
        put(0, member.name.as_bytes());
        put(100, format!("{:07o}\0", member.mode).as_bytes());
        put(108, b"0000000\0");
        put(116, b"0000000\0");
        put(124, format!("{:011o}\0", member.contents.len()).as_bytes());
        put(136, format!("{:011o}\0", mtime).as_bytes());
        put(148, b"        ");
        put(156, b"0");
        put(257, b"ustar\0");
        put(263, b"00");
        put(265, b"root");
        put(297, b"root");
        let checksum: u32 = header.iter().map(|b| u32::from(*b)).sum();
        header[148..156].copy_from_slice(format!("{checksum:06o}\0 ").as_bytes());
        out.extend_from_slice(&header);
        out.extend_from_slice(&member.contents);
        let padding = (BLOCK - member.contents.len() % BLOCK) % BLOCK;
        out.resize(out.len() + padding, 0);
    }
    out.resize(out.len() + 2 * BLOCK, 0);
    Ok(out)
}

/// The `version` of the root `Cargo.toml`'s `[package]`.
fn heeler_version(root: &Path) -> Result<String, String> {
    let manifest = std::fs::read_to_string(root.join("Cargo.toml"))
        .map_err(|e| format!("cannot read Cargo.toml: {e}"))?;
    manifest
        .lines()
        .find_map(|line| {
            let value = line
                .strip_prefix("version")?
                .trim_start()
                .strip_prefix('=')?;
            Some(value.trim().trim_matches('"').to_owned())
        })
        .ok_or_else(|| "Cargo.toml has no version line".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn every_target_by_default_and_only_release_targets() {
        let all = parse_args(&[]).unwrap();
        assert_eq!(all.targets, dist_layout::TARGETS);
        assert!(!all.native);
        let one = parse_args(&args(&["--target", "aarch64-apple-darwin", "--native"])).unwrap();
        assert_eq!(one.targets, ["aarch64-apple-darwin"]);
        assert!(one.native);
        assert!(parse_args(&args(&["--target", "x86_64-unknown-linux-gnu"])).is_err());
        assert!(parse_args(&args(&["--target"])).is_err());
        assert!(parse_args(&args(&["static"])).is_err());
    }

    #[test]
    fn linux_builds_drop_unwind_tables_and_only_cross_musl_links_zigs_crt() {
        for target in ["x86_64-unknown-linux-musl", "aarch64-unknown-linux-musl"] {
            assert_eq!(
                rustflags(target, Recipe::Cross),
                "-C force-unwind-tables=no -C link-self-contained=no"
            );
            assert_eq!(
                rustflags(target, Recipe::Native),
                "-C force-unwind-tables=no"
            );
        }
        for recipe in [Recipe::Cross, Recipe::Native] {
            assert_eq!(rustflags("aarch64-apple-darwin", recipe), "");
            assert_eq!(rustflags("x86_64-apple-darwin", recipe), "");
        }
    }

    #[test]
    fn runs_natively_through_qemu_or_not_at_all() {
        let linux = |t| runner_for(t, "linux", "x86_64");
        assert_eq!(linux("x86_64-unknown-linux-musl"), Runner::Native);
        assert_eq!(
            linux("aarch64-unknown-linux-musl"),
            Runner::Qemu("qemu-aarch64-static")
        );
        assert_eq!(linux("aarch64-apple-darwin"), Runner::None);
        assert_eq!(
            runner_for("aarch64-apple-darwin", "macos", "aarch64"),
            Runner::Native
        );
        assert_eq!(
            runner_for("x86_64-apple-darwin", "macos", "aarch64"),
            Runner::None
        );
    }

    /// A Mach-O executable header and the given load commands.
    fn macho(cputype: u32, commands: &[(u32, &str)]) -> Vec<u8> {
        let mut body = Vec::new();
        for (command, name) in commands {
            // dylib_command: cmd, cmdsize, name offset 24, timestamp,
            // current and compatibility versions, then the name, padded.
            let mut name = name.as_bytes().to_vec();
            name.push(0);
            name.resize(name.len().div_ceil(8) * 8, 0);
            body.extend_from_slice(&command.to_le_bytes());
            body.extend_from_slice(&(24 + name.len() as u32).to_le_bytes());
            for field in [24u32, 2, 0x1_0000, 0x1_0000] {
                body.extend_from_slice(&field.to_le_bytes());
            }
            body.extend_from_slice(&name);
        }
        let mut out = Vec::new();
        for field in [
            0xfeed_facf,
            cputype,
            0,
            2,
            commands.len() as u32,
            body.len() as u32,
            0,
            0,
        ] {
            out.extend_from_slice(&field.to_le_bytes());
        }
        out.extend_from_slice(&body);
        out
    }

    #[test]
    fn reads_the_dylibs_a_macho_loads() {
        let bytes = macho(
            0x0100_000c,
            &[
                (0xc, "/usr/lib/libSystem.B.dylib"),
                (0x8000_0018, "/usr/lib/libiconv.2.dylib"),
                // LC_RPATH is not a library.
                (0x8000_001c, "@loader_path"),
            ],
        );
        let found = macho_dylibs(&bytes).unwrap();
        assert_eq!(found.cputype, 0x0100_000c);
        assert_eq!(
            found.dylibs,
            ["/usr/lib/libSystem.B.dylib", "/usr/lib/libiconv.2.dylib"]
        );
        assert!(macho_dylibs(&bytes[..bytes.len() - 4]).is_err());
        assert!(macho_dylibs(b"\x7fELF\x02\x01\x01\0").is_err());
    }

    #[test]
    fn a_macho_is_checked_for_its_cpu_and_libraries() {
        let arm = "Mach-O 64-bit arm64 executable, flags:<NOUNDEFS|DYLDLINK|TWOLEVEL|PIE>";
        let good = macho(0x0100_000c, &[(0xc, "/usr/lib/libSystem.B.dylib")]);
        assert!(check_bytes("aarch64-apple-darwin", &good, arm).is_ok());
        let intel = "Mach-O 64-bit x86_64 executable";
        assert!(check_bytes("x86_64-apple-darwin", &good, intel).is_err());
        assert!(check_bytes("aarch64-apple-darwin", &good, intel).is_err());
        let framework = macho(
            0x0100_000c,
            &[
                (0xc, "/usr/lib/libSystem.B.dylib"),
                (
                    0xc,
                    "/System/Library/Frameworks/Security.framework/Versions/A/Security",
                ),
            ],
        );
        let error = check_bytes("aarch64-apple-darwin", &framework, arm).unwrap_err();
        assert!(error.contains("Security.framework"), "{error}");
    }

    /// An ELF64 little-endian header with one program header of this type.
    fn elf(program_header: u32) -> Vec<u8> {
        let mut bytes = vec![0u8; 64 + 56];
        bytes[..6].copy_from_slice(b"\x7fELF\x02\x01");
        bytes[0x20..0x28].copy_from_slice(&64u64.to_le_bytes());
        bytes[0x36..0x38].copy_from_slice(&56u16.to_le_bytes());
        bytes[0x38..0x3a].copy_from_slice(&1u16.to_le_bytes());
        bytes[64..68].copy_from_slice(&program_header.to_le_bytes());
        bytes
    }

    #[test]
    fn a_musl_binary_must_be_static_for_the_right_machine_and_small() {
        let x86 =
            "ELF 64-bit LSB executable, x86-64, version 1 (SYSV), statically linked, stripped";
        let load = elf(1);
        assert!(check_bytes("x86_64-unknown-linux-musl", &load, x86).is_ok());
        assert!(check_bytes("aarch64-unknown-linux-musl", &load, x86).is_err());
        let interp = elf(3);
        assert!(check_bytes("x86_64-unknown-linux-musl", &interp, x86).is_err());
        let pie =
            "ELF 64-bit LSB pie executable, x86-64, version 1 (SYSV), static-pie linked, stripped";
        assert!(check_bytes("x86_64-unknown-linux-musl", &load, pie).is_ok());
        let dynamic = "ELF 64-bit LSB pie executable, x86-64, dynamically linked";
        assert!(check_bytes("x86_64-unknown-linux-musl", &load, dynamic).is_err());
        let mut big = load.clone();
        big.resize(MAX_SIZE_BYTES as usize, 0);
        let error = check_bytes("x86_64-unknown-linux-musl", &big, x86).unwrap_err();
        assert!(error.contains("budget"), "{error}");
    }

    #[test]
    fn tar_headers_follow_ustar() {
        let tar = tar_bytes(
            &[TarMember {
                name: "heeler",
                mode: 0o755,
                contents: b"hello".to_vec(),
            }],
            1_700_000_000,
        )
        .unwrap();
        // One header, one padded data block, two end blocks.
        assert_eq!(tar.len(), 4 * 512);
        assert_eq!(&tar[..7], b"heeler\0");
        assert_eq!(&tar[257..263], b"ustar\0");
        assert_eq!(&tar[124..136], b"00000000005\0");
        // The checksum is the byte sum of the header with its own field as
        // spaces (POSIX pax, ustar header block).
        let mut header = tar[..512].to_vec();
        header[148..156].copy_from_slice(b"        ");
        let sum: u32 = header.iter().map(|b| u32::from(*b)).sum();
        assert_eq!(&tar[148..156], format!("{sum:06o}\0 ").as_bytes());
        assert_eq!(&tar[512..517], b"hello");
        assert!(tar[517..].iter().all(|b| *b == 0));
    }
}
