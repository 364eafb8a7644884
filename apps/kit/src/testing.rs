//! A binary of the workspace run by its integration tests, with the command-line contract's
//! checks (docs/cli.md): a command that must succeed prints no Vulkan validation message,
//! one that must fail fails cleanly, without a panic; and [`temp_path`] and [`write_file`],
//! the scratch files tests write.

use std::ffi::OsStr;
use std::fmt::Debug;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The binary under test: `Bin(env!("CARGO_BIN_EXE_smoe"))`.
pub struct Bin(pub &'static str);

impl Bin {
    /// Its file name, for messages.
    fn name(&self) -> &str {
        Path::new(self.0).file_name().and_then(OsStr::to_str).unwrap_or(self.0)
    }

    /// Runs it with `args`.
    pub fn run(&self, args: &[impl AsRef<OsStr> + Debug]) -> Output {
        Command::new(self.0).args(args).output().unwrap_or_else(|e| panic!("run {}: {e}", self.0))
    }

    /// Runs a command that must succeed without validation messages; returns its stdout.
    pub fn ok(&self, args: &[impl AsRef<OsStr> + Debug]) -> String {
        let out = self.run(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{} {args:?} failed:\n{stderr}", self.name());
        assert!(!stderr.contains("vulkan validation"), "{} {args:?}: validation messages:\n{stderr}", self.name());
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Runs a command that must fail cleanly (a failure status, no panic); returns its stderr.
    pub fn fails(&self, args: &[impl AsRef<OsStr> + Debug]) -> String {
        let out = self.run(args);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(!out.status.success(), "{} {args:?} should fail", self.name());
        assert!(!stderr.contains("panicked"), "{} {args:?} panicked:\n{stderr}", self.name());
        stderr
    }
}

/// A path named `name` in a fresh temporary folder, which is removed when the returned guard
/// drops (keep it alive as long as the path is used).
pub fn temp_path(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temporary folder");
    let path = dir.path().join(name);
    (dir, path)
}

/// Writes `bytes` to the file `name` in `dir` (a test's temporary folder); returns its path.
pub fn write_file(dir: &Path, name: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    path
}
