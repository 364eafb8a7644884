//! Helpers of the end-to-end tests: where the built binaries are, how to run one, and the
//! small input files the cases need. The binaries are the workspace's debug builds
//! (`cargo build --workspace --bins`, which tools/test.sh runs first).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Every binary the contract covers.
pub const BINARIES: [&str; 7] = ["smoe", "lightfield", "mosaic", "composite", "mad", "sweep", "gpu-info"];

/// The folder holding the workspace's binaries: the test executable lives in
/// `target/<profile>/deps/`.
pub fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    exe.parent().and_then(Path::parent).expect("target/<profile>").to_path_buf()
}

/// The path of binary `name`, which must have been built.
pub fn bin(name: &str) -> PathBuf {
    let path = bin_dir().join(name);
    assert!(path.is_file(), "{} is missing: run `cargo build --workspace --bins` first", path.display());
    path
}

/// What a run printed and how it ended.
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub seconds: f64,
}

impl Run {
    fn from(output: Output, seconds: f64) -> Run {
        Run {
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
            seconds,
        }
    }

    /// The JSON objects printed on stdout, one per line.
    pub fn json_lines(&self) -> Vec<serde_json::Value> {
        self.stdout
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}\n{}", self.stderr)))
            .collect()
    }

    /// Fails unless the run ended with `code`, showing what it printed.
    pub fn expect_code(&self, code: i32, what: &str) -> &Self {
        assert_eq!(
            self.code,
            Some(code),
            "{what}: exit {:?}\nstdout: {}\nstderr: {}",
            self.code,
            self.stdout,
            self.stderr
        );
        assert!(!self.stderr.contains("panicked"), "{what} panicked: {}", self.stderr);
        assert!(!self.stderr.contains("stack backtrace"), "{what} printed a stack trace: {}", self.stderr);
        assert!(!self.stderr.contains("vulkan validation"), "{what}: validation messages: {}", self.stderr);
        self
    }
}

/// Runs `binary` with `args` (validation layers on, backtraces asked for: the contract says
/// a user mistake never shows one).
pub fn run(binary: &str, args: &[&str]) -> Run {
    run_in(binary, args, None)
}

/// Runs `binary` through `sh -c 'umask 022; exec ...'` when `umask` is given.
pub fn run_in(binary: &str, args: &[&str], umask: Option<&str>) -> Run {
    let start = std::time::Instant::now();
    let mut command = match umask {
        Some(mask) => {
            let mut c = Command::new("sh");
            c.arg("-c").arg(format!("umask {mask}; exec \"$0\" \"$@\"")).arg(bin(binary)).args(args);
            c
        }
        None => {
            let mut c = Command::new(bin(binary));
            c.args(args);
            c
        }
    };
    command
        .env("TESSERA_VALIDATION", "1")
        .env("RUST_BACKTRACE", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_btl", "self,vader")
        .env("OMPI_MCA_plm_rsh_agent", "")
        // mosaic's tile cache goes to the user's cache folder: keep the tests' out of it.
        .env("XDG_CACHE_HOME", std::env::temp_dir().join("tessera-contract-cache"));
    let output = command.output().unwrap_or_else(|e| panic!("cannot run {binary}: {e}"));
    Run::from(output, start.elapsed().as_secs_f64())
}

/// The subcommands `binary --help` lists (none for single-command binaries).
pub fn subcommands(binary: &str) -> Vec<String> {
    let help = run(binary, &["--help"]);
    help.expect_code(0, &format!("{binary} --help"));
    let mut in_commands = false;
    let mut out = Vec::new();
    for line in help.stdout.lines() {
        if line.starts_with("Commands:") {
            in_commands = true;
            continue;
        }
        if in_commands {
            if !line.starts_with("  ") {
                break;
            }
            let name = line.split_whitespace().next().unwrap_or_default();
            if !name.is_empty() && name != "help" {
                out.push(name.to_string());
            }
        }
    }
    out
}

/// Small input files the cases share, in one temporary folder.
pub struct Fixtures {
    pub dir: tempfile::TempDir,
}

impl Fixtures {
    pub fn new() -> Fixtures {
        let dir = tempfile::tempdir().expect("temporary folder");
        let (w, h) = (48usize, 40usize);
        let mut a = Vec::with_capacity(w * h * 3);
        let mut b = Vec::with_capacity(w * h * 3);
        for y in 0..h {
            for x in 0..w {
                for c in 0..3 {
                    let v = ((x * 7 + y * 5 + c * 40) % 256) as u8;
                    a.push(v);
                    b.push(v.saturating_add(((x * 13 + y * 3) % 23) as u8));
                }
            }
        }
        kit::image::save_rgb8(&dir.path().join("a.png"), w, h, &a).expect("a.png");
        kit::image::save_rgb8(&dir.path().join("b.png"), w, h, &b).expect("b.png");
        std::fs::write(dir.path().join("file"), b"a regular file").expect("file");
        let tiles = dir.path().join("tiles");
        std::fs::create_dir(&tiles).expect("tiles folder");
        for t in 0..8usize {
            let rgb: Vec<u8> = (0..16 * 16 * 3).map(|i| ((t * 31 + (i % 3) * 70 + i / 48) % 256) as u8).collect();
            kit::image::save_rgb8(&tiles.join(format!("t{t}.png")), 16, 16, &rgb).expect("tile");
        }
        Fixtures { dir }
    }

    /// A path in the fixture folder, as a string.
    pub fn path(&self, name: &str) -> String {
        self.dir.path().join(name).to_string_lossy().into_owned()
    }
}

impl Default for Fixtures {
    fn default() -> Self {
        Fixtures::new()
    }
}

/// Replaces `{name}` in each argument by the fixture path of `name`.
pub fn args(fixtures: &Fixtures, template: &[&str]) -> Vec<String> {
    template
        .iter()
        .map(|a| {
            let mut s = a.to_string();
            while let (Some(open), Some(close)) = (s.find('{'), s.find('}')) {
                if close < open {
                    break;
                }
                let name = s[open + 1..close].to_string();
                s.replace_range(open..=close, &fixtures.path(&name));
            }
            s
        })
        .collect()
}
