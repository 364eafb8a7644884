//! Outputs: checked before any work starts, their format taken from the extension, and
//! written so that nothing is ever left half-written.
//!
//! - [`check_file`] and [`check_folder`] run before the work: the extension must name an
//!   accepted format, the path must not be one of the command's inputs, parent folders are
//!   created, and the folder must be writable (a probe file is made and removed), so an
//!   unwritable place fails in milliseconds instead of after a long fit.
//! - [`write_atomic`] writes a temporary file beside the target and renames it into place.
//!   A new file gets the mode the umask gives (0644 under umask 022); an existing file keeps
//!   its mode.
//! - [`Staged`] does the same for several files at once: all are renamed into place only
//!   once every one of them was written, so a command that writes several files writes all
//!   or none.

use std::fs::{File, Permissions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::error::{KitError, Result};

/// The image formats every image output accepts, by extension.
pub const IMAGE_EXTENSIONS: &[&str] = &["png", "jpg", "jpeg", "tif", "tiff", "bmp", "webp"];

/// The folder a file is written into (`.` for a bare file name).
fn parent_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// The lower-case extension of `path` if it is one of `accepted`, else an error that names
/// the accepted ones.
pub fn format_of(path: &Path, accepted: &[&str]) -> Result<String> {
    let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
    match ext {
        Some(e) if accepted.contains(&e.as_str()) => Ok(e),
        Some(e) => Err(KitError::file(
            path,
            format!("unknown output format .{e}; the extension must be one of .{}", accepted.join(", .")),
        )),
        None => Err(KitError::file(
            path,
            format!("no extension; the output format follows it: one of .{}", accepted.join(", .")),
        )),
    }
}

/// Whether `a` and `b` name the same file (by canonical path where both exist).
fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}

/// Refuses `output` if it is the same file as any of `inputs`.
pub fn check_not_input(output: &Path, inputs: &[&Path]) -> Result<()> {
    if inputs.iter().any(|input| same_file(output, input)) {
        return Err(KitError::file(output, "is one of the command's inputs; refusing to overwrite it"));
    }
    Ok(())
}

/// The operating system's reason in an error of `tempfile`, without the temporary file's
/// name that `tempfile` appends ("... at path \"/out/.tessera-probe-x1Yz\""): that name is
/// ours, never the user's, and the message already names the user's path.
fn os_reason(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at path ") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

/// Creates `dir` (and its parents) and proves it writable by making and removing a file.
fn ensure_writable_folder(dir: &Path) -> Result<()> {
    if dir.exists() && !dir.is_dir() {
        return Err(KitError::file(dir, "is a file where a folder must be"));
    }
    std::fs::create_dir_all(dir).map_err(|e| KitError::file(dir, format!("cannot create the folder: {e}")))?;
    tempfile::Builder::new()
        .prefix(".tessera-probe-")
        .tempfile_in(dir)
        .map_err(|e| KitError::file(dir, format!("cannot write in this folder: {}", os_reason(&e))))?;
    Ok(())
}

/// Checks an output file before any work: format from the extension (returned, lower
/// case), not one of `inputs`, not a folder, its folder created and writable.
pub fn check_file(path: &Path, accepted: &[&str], inputs: &[&Path]) -> Result<String> {
    let format = format_of(path, accepted)?;
    if path.is_dir() {
        return Err(KitError::file(path, "is a folder; an output file is needed here"));
    }
    check_not_input(path, inputs)?;
    ensure_writable_folder(&parent_of(path))?;
    Ok(format)
}

/// Checks an output folder before any work: created if missing, writable, not a file, and
/// holding none of `inputs`' paths as itself.
pub fn check_folder(path: &Path, inputs: &[&Path]) -> Result<()> {
    check_not_input(path, inputs)?;
    ensure_writable_folder(path)
}

/// Checks the files a command writes under fixed `names` into the folder `dir` (already
/// checked with [`check_folder`]) before any work: none may be a folder, which the final
/// rename could not replace, so that a demo fails at once instead of after its work.
pub fn check_files_in(dir: &Path, names: &[&str]) -> Result<()> {
    for name in names {
        let path = dir.join(name);
        if path.is_dir() {
            return Err(KitError::file(path, "is a folder; an output file is needed here"));
        }
    }
    Ok(())
}

/// Several output files written all or none: each is written to a temporary file beside
/// its target; [`Staged::commit`] renames them all into place. Dropping a `Staged` that
/// was not committed removes its temporary files.
#[derive(Default)]
pub struct Staged {
    pending: Vec<(tempfile::TempPath, PathBuf)>,
}

impl Staged {
    pub fn new() -> Self {
        Staged::default()
    }

    /// Writes `path`'s future content through `write` into a temporary file beside it.
    pub fn write<E: std::fmt::Display>(
        &mut self,
        path: &Path,
        write: impl FnOnce(&mut BufWriter<File>) -> std::result::Result<(), E>,
    ) -> Result<()> {
        let dir = parent_of(path);
        if !dir.is_dir() {
            return Err(KitError::file(path, format!("the folder {} does not exist", dir.display())));
        }
        // Mode 0666 through open(2): the kernel applies the umask, as for any new file.
        #[cfg(unix)]
        let mode = <Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o666);
        let mut builder = tempfile::Builder::new();
        builder.prefix(".tessera-").suffix(".tmp");
        #[cfg(unix)]
        builder.permissions(mode);
        let tmp = builder.tempfile_in(&dir).map_err(|e| KitError::file(path, os_reason(&e)))?;
        let (file, tmp_path) = tmp.into_parts();
        let mut writer = BufWriter::new(file);
        write(&mut writer).map_err(|e| KitError::file(path, e))?;
        let file = writer.into_inner().map_err(|e| KitError::file(path, e.error()))?;
        file.sync_all().map_err(|e| KitError::file(path, e))?;
        if let Ok(meta) = std::fs::metadata(path) {
            // Overwriting keeps the file's mode, as `cp` and editors do.
            std::fs::set_permissions(&tmp_path, meta.permissions()).map_err(|e| KitError::file(path, e))?;
        }
        self.pending.push((tmp_path, path.to_path_buf()));
        Ok(())
    }

    /// Renames every written file into place, all or none: a target that is a folder fails
    /// before anything is renamed, and where a rename still fails part way, the files
    /// already placed are taken back and the ones they replaced restored.
    pub fn commit(self) -> Result<()> {
        if let Some((_, path)) = self.pending.iter().find(|(_, path)| path.is_dir()) {
            return Err(KitError::file(path, "is a folder; refusing to replace it with a file"));
        }
        // Each placed target, with the file it replaced (moved aside until the end).
        let mut placed: Vec<(PathBuf, Option<tempfile::TempPath>)> = Vec::new();
        for (tmp, path) in self.pending {
            let placing = set_aside(&path).and_then(|old| match tmp.persist(&path) {
                Ok(()) => Ok(old),
                Err(e) => {
                    put_back(&path, old);
                    Err(KitError::file(&path, e.error))
                }
            });
            match placing {
                Ok(old) => placed.push((path, old)),
                Err(e) => {
                    for (path, old) in placed.into_iter().rev() {
                        let _ = std::fs::remove_file(&path);
                        put_back(&path, old);
                    }
                    return Err(e);
                }
            }
        }
        // Dropping the set-aside files deletes them.
        Ok(())
    }
}

/// Moves an existing `path` aside to a temporary name beside it (`None` where there is none).
fn set_aside(path: &Path) -> Result<Option<tempfile::TempPath>> {
    if std::fs::symlink_metadata(path).is_err() {
        return Ok(None);
    }
    let aside = tempfile::Builder::new()
        .prefix(".tessera-old-")
        .tempfile_in(parent_of(path))
        .map_err(|e| KitError::file(path, os_reason(&e)))?
        .into_temp_path();
    std::fs::rename(path, &aside).map_err(|e| KitError::file(path, e))?;
    Ok(Some(aside))
}

/// Restores what [`set_aside`] moved (best effort: this runs on a failure path already).
fn put_back(path: &Path, old: Option<tempfile::TempPath>) {
    if let Some(old) = old {
        let _ = old.persist(path);
    }
}

/// Writes one file atomically (see [`Staged`]).
pub fn write_atomic<E: std::fmt::Display>(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<File>) -> std::result::Result<(), E>,
) -> Result<()> {
    let mut staged = Staged::new();
    staged.write(path, write)?;
    staged.commit()
}

/// Writes `bytes` to `path` atomically.
pub fn write_bytes(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic(path, |w| w.write_all(bytes))
}

/// Writes a value as pretty JSON (with a final newline) atomically.
pub fn write_json(path: &Path, value: &impl serde::Serialize) -> Result<()> {
    let mut staged = Staged::new();
    staged.write_json(path, value)?;
    staged.commit()
}

impl Staged {
    /// Stages a value as pretty JSON (with a final newline).
    pub fn write_json(&mut self, path: &Path, value: &impl serde::Serialize) -> Result<()> {
        let text = serde_json::to_string_pretty(value).map_err(|e| KitError::file(path, e))?;
        self.write(path, |w| writeln!(w, "{text}"))
    }

    /// Stages raw bytes.
    pub fn write_bytes(&mut self, path: &Path, bytes: &[u8]) -> Result<()> {
        self.write(path, |w| w.write_all(bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    /// A commit that cannot place every file places none and leaves the old ones as they
    /// were: a folder in the way is found before any rename; a rename failing part way is
    /// rolled back.
    #[test]
    fn a_failed_commit_leaves_the_folder_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, c) = (dir.path().join("a.txt"), dir.path().join("b.txt"), dir.path().join("c.txt"));
        std::fs::write(&a, "old a").unwrap();
        std::fs::create_dir(&c).unwrap();
        let listing = || {
            let mut names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
            names.sort();
            names
        };
        let before = listing();
        let mut staged = Staged::new();
        for path in [&a, &b, &c] {
            staged.write_bytes(path, b"new").unwrap();
        }
        assert!(staged.commit().unwrap_err().to_string().contains("is a folder"));
        assert_eq!((std::fs::read_to_string(&a).unwrap(), listing()), ("old a".into(), before.clone()));
        // The second file's temporary copy vanishes before the commit: its rename fails
        // after the first file was placed, which is then taken back.
        let mut staged = Staged::new();
        staged.write_bytes(&a, b"new a").unwrap();
        staged.write_bytes(&b, b"new b").unwrap();
        std::fs::remove_file(&staged.pending[1].0).unwrap();
        assert!(staged.commit().is_err());
        assert_eq!((std::fs::read_to_string(&a).unwrap(), listing()), ("old a".into(), before));
        // And a commit that can place everything does, old files replaced.
        let mut staged = Staged::new();
        staged.write_bytes(&a, b"new a").unwrap();
        staged.write_bytes(&b, b"new b").unwrap();
        staged.commit().unwrap();
        assert_eq!(std::fs::read_to_string(&a).unwrap() + &std::fs::read_to_string(&b).unwrap(), "new anew b");
        assert_eq!(listing().len(), 3, "{:?}", listing());
    }

    #[test]
    fn new_files_follow_the_umask_and_old_ones_keep_their_mode() {
        let dir = tempfile::tempdir().unwrap();
        let umask = unsafe {
            let old = libc::umask(0o022);
            libc::umask(old);
            old
        };
        let p = dir.path().join("a.json");
        write_bytes(&p, b"{}").unwrap();
        assert_eq!(mode(&p), 0o666 & !(umask as u32));
        std::fs::set_permissions(&p, Permissions::from_mode(0o640)).unwrap();
        write_bytes(&p, b"{ }").unwrap();
        assert_eq!(mode(&p), 0o640);
        assert_eq!(std::fs::read(&p).unwrap(), b"{ }");
    }

    #[test]
    fn checks_fail_before_work() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, b"x").unwrap();
        let under_file = file.join("m.json");
        assert!(check_file(&under_file, &["json"], &[]).unwrap_err().to_string().contains("is a file where a folder"));
        let nested = dir.path().join("a/b/m.JSON");
        assert_eq!(check_file(&nested, &["json"], &[]).unwrap(), "json");
        assert!(nested.parent().unwrap().is_dir());
        let wrong = check_file(&dir.path().join("m.png"), &["json", "smoe"], &[]).unwrap_err().to_string();
        assert!(wrong.contains(".json, .smoe"), "{wrong}");
        assert!(check_file(&file, &["json"], &[]).is_err());
        let input = dir.path().join("in.json");
        std::fs::write(&input, b"{}").unwrap();
        assert!(check_file(&input, &["json"], &[&input]).unwrap_err().to_string().contains("inputs"));
        assert!(check_file(dir.path(), &["json"], &[]).is_err());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 3, "no probe files left behind");
    }

    #[test]
    fn fixed_names_in_a_folder_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("b.json")).unwrap();
        assert!(check_files_in(dir.path(), &["a.png"]).is_ok());
        let err = check_files_in(dir.path(), &["a.png", "b.json"]).unwrap_err().to_string();
        assert!(err.ends_with("b.json: is a folder; an output file is needed here"), "{err}");
    }

    /// A folder nobody may write in (even root: /proc) is named with the system's reason,
    /// not with the name of the probe file that found it out.
    #[cfg(target_os = "linux")]
    #[test]
    fn an_unwritable_folder_is_named_without_the_probe() {
        let err = check_file(Path::new("/proc/out.png"), &["png"], &[]).unwrap_err().to_string();
        assert!(err.starts_with("/proc: cannot write in this folder: "), "{err}");
        assert!(!err.contains(".tessera") && !err.contains("at path"), "{err}");
        let mut staged = Staged::new();
        let err = staged.write(Path::new("/proc/out.png"), |w| w.write_all(b"x")).unwrap_err().to_string();
        assert!(err.starts_with("/proc/out.png: ") && !err.contains(".tessera"), "{err}");
    }

    #[test]
    fn several_files_all_or_none() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.txt"), dir.path().join("b.txt"));
        let mut staged = Staged::new();
        staged.write(&a, |w| w.write_all(b"a")).unwrap();
        assert!(staged.write(&b, |_| Err("boom")).is_err());
        drop(staged);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        let mut staged = Staged::new();
        staged.write(&a, |w| w.write_all(b"a")).unwrap();
        staged.write(&b, |w| w.write_all(b"b")).unwrap();
        staged.commit().unwrap();
        assert_eq!(std::fs::read(&b).unwrap(), b"b");
    }
}
