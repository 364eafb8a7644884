//! The tile library: every image under a folder (recursively), centre-cropped to the patch
//! aspect, reduced to u x v mean-RGB features and a thumbnail; cached in an index file in
//! the user's cache folder ([`default_cache_dir`], never inside the photo folder) so a second
//! run over unchanged files decodes nothing.
//!
//! The cache is keyed per file by (relative path, size, modification time); files whose key
//! changed are decoded again, vanished files are dropped. Unreadable files are skipped with
//! a warning (and remembered, so they are not decoded again until they change). The file
//! layout is in docs/formats.md ("mosaic tile index").

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use indicatif::ProgressBar;
use rayon::prelude::*;

use crate::error::{MosaicError, Result};
use crate::features::{self, region_features, Features};
use crate::image_ops::{centre_crop, thumbnail, Rgba8};

const MAGIC: &[u8; 4] = b"TSMI";
const VERSION: u32 = 1;
const EXTENSIONS: [&str; 7] = ["jpg", "jpeg", "png", "webp", "bmp", "tif", "tiff"];

/// What the index computes for each tile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndexParams {
    /// Feature cells (u, v).
    pub cells: (usize, usize),
    /// Thumbnail size (width, height); its ratio is the crop aspect.
    pub thumb: (usize, usize),
}

impl IndexParams {
    /// The cache file of the tile folder `dir` for these parameters, in the cache folder
    /// `cache_dir`: named by a hash (FNV-1a, 64 bits) of the folder's canonical path, so
    /// every tile folder has its own.
    pub fn cache_path(&self, cache_dir: &Path, dir: &Path) -> PathBuf {
        let folder = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
        let hash = folder
            .as_os_str()
            .as_encoded_bytes()
            .iter()
            .fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3));
        let (c, t) = (self.cells, self.thumb);
        cache_dir.join(format!("mosaic-index-{hash:016x}-{}x{}-{}x{}", c.0, c.1, t.0, t.1))
    }
}

/// The folder of tile index caches: `$XDG_CACHE_HOME/tessera`, else `~/.cache/tessera`;
/// `None` when neither variable is set (then nothing is cached).
pub fn default_cache_dir() -> Option<PathBuf> {
    let absolute = |var: &str| std::env::var_os(var).map(PathBuf::from).filter(|p| p.is_absolute());
    match absolute("XDG_CACHE_HOME") {
        Some(dir) => Some(dir.join("tessera")),
        None => absolute("HOME").map(|home| home.join(".cache").join("tessera")),
    }
}

/// One file's cache key.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Key {
    path: String,
    size: u64,
    mtime_ns: u64,
}

/// One file's cached result.
#[derive(Clone, Debug)]
enum Entry {
    Tile { features: Vec<f32>, thumb: Vec<u8> },
    Unreadable(String),
}

/// The usable tiles of a folder, in sorted path order.
#[derive(Clone, Debug)]
pub struct TileIndex {
    pub params: IndexParams,
    pub paths: Vec<String>,
    pub features: Features,
    /// RGB8 thumbnails, `thumb.0 * thumb.1 * 3` bytes each, in tile order.
    pub thumbs: Vec<u8>,
}

impl TileIndex {
    pub fn len(&self) -> usize {
        self.paths.len()
    }

    pub fn is_empty(&self) -> bool {
        self.paths.is_empty()
    }

    pub fn thumb(&self, k: usize) -> &[u8] {
        let size = self.params.thumb.0 * self.params.thumb.1 * 3;
        &self.thumbs[k * size..(k + 1) * size]
    }
}

/// What an indexing run did.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct IndexStats {
    pub files: usize,
    pub from_cache: usize,
    pub decoded: usize,
    pub skipped: usize,
    /// Symbolic links under the folder, which are not followed (tiles are regular files).
    pub links: usize,
    /// Worker threads that decoded files (files decode in parallel, one at a time per
    /// thread, so decoding holds at most this many full-size images).
    pub threads: usize,
    /// The cache file, up to date with the folder after this run: `None` without a cache
    /// folder or when the cache could not be written (`mosaic index` reports it as written).
    #[serde(skip)]
    pub cache: Option<PathBuf>,
}

fn is_image(path: &Path) -> bool {
    path.extension().and_then(|e| e.to_str()).is_some_and(|e| EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()))
}

/// The image files [`scan`] found, and the ones it left out because their paths are not
/// valid UTF-8.
struct Scan {
    /// Each file with its key, sorted by path.
    found: Vec<(PathBuf, Key)>,
    /// Files whose path under the folder is not valid UTF-8: a tile is named by that path in
    /// the cache, in `--assignment` and in `--json`, and a lossy name (U+FFFD for each bad
    /// byte) would name no file there and could make two tiles one in the cache.
    not_utf8: Vec<PathBuf>,
    /// Symbolic links found (outside hidden entries), not followed.
    links: usize,
}

/// A path under the tile folder as the cache and the outputs name it: its components joined
/// with `/` (a `\` in a Unix file name stays part of the name); `None` when a component is
/// not valid UTF-8.
fn relative_name(rel: &Path) -> Option<String> {
    let parts: Option<Vec<&str>> = rel.components().map(|c| c.as_os_str().to_str()).collect();
    parts.map(|p| p.join("/"))
}

/// Image files under `dir` (recursively, not following symbolic links, skipping hidden
/// entries) with their keys, sorted by path.
fn scan(dir: &Path) -> Result<Scan> {
    let mut found = Vec::new();
    let mut not_utf8 = Vec::new();
    let mut links = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        let entries = std::fs::read_dir(&folder).map_err(|e| MosaicError::file(&folder, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| MosaicError::file(&folder, e))?;
            let path = entry.path();
            if entry.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            // The entry itself, not what a link points to.
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_symlink() {
                links += 1;
            } else if meta.is_dir() {
                stack.push(path);
            } else if meta.is_file() && is_image(&path) {
                let Some(rel) = relative_name(path.strip_prefix(dir).unwrap_or(&path)) else {
                    not_utf8.push(path);
                    continue;
                };
                let mtime_ns = meta
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                    .map(|d| d.as_nanos() as u64)
                    .unwrap_or(0);
                found.push((path, Key { path: rel, size: meta.len(), mtime_ns }));
            }
        }
    }
    found.sort_by(|a, b| a.1.path.cmp(&b.1.path));
    not_utf8.sort();
    Ok(Scan { found, not_utf8, links })
}

/// Decodes one tile (EXIF orientation applied, size checked against the memory budget) into
/// its features and thumbnail; an unreadable file or one whose features are out of range
/// becomes an `Unreadable` entry.
fn decode(path: &Path, params: &IndexParams) -> Entry {
    // RGBA8: 4 bytes a pixel while decoding, so large photos decode side by side.
    let (width, height, rgba) = match kit::image::load_rgba8(path) {
        Ok(img) => img,
        // Without the path: the warning names the tile, and the cache outlives this run's
        // working folder.
        Err(e) => return Entry::Unreadable(without_path(&e.to_string(), path).to_string()),
    };
    let pixels = Rgba8(&rgba);
    let rect = centre_crop(width, height, params.thumb.0 as f64 / params.thumb.1 as f64);
    let mut features = Vec::new();
    region_features(&pixels, width, rect, params.cells, &mut features);
    if let Err(e) = features::check(&features) {
        return Entry::Unreadable(e);
    }
    let thumb = thumbnail(&pixels, width, rect, params.thumb.0, params.thumb.1);
    Entry::Tile { features, thumb }
}

/// `message` without a leading "PATH: " naming `path`.
fn without_path<'a>(message: &'a str, path: &Path) -> &'a str {
    let prefix = format!("{}: ", path.display());
    message.strip_prefix(prefix.as_str()).unwrap_or(message)
}

/// Whether `path` is one of the tiles of `dir` (an existing image file under it, outside
/// hidden folders), so an output there would overwrite a tile.
pub fn is_tile(dir: &Path, path: &Path) -> bool {
    let (Ok(dir), Ok(file)) = (dir.canonicalize(), path.canonicalize()) else { return false };
    match file.strip_prefix(&dir) {
        Ok(rel) => {
            file.is_file()
                && is_image(&file)
                && !rel.components().any(|c| c.as_os_str().to_string_lossy().starts_with('.'))
        }
        Err(_) => false,
    }
}

/// Indexes `dir`, reusing and refreshing its cache file in the folder `cache_dir` (`None`:
/// no cache; a file where that folder goes: no cache, with a warning); `warn` gets one
/// message per skipped file, per invalid cache entry and per cache problem, and one for the
/// symbolic links, which are not followed. A folder without a readable tile is an error
/// naming it, and writes no cache. A progress bar counts the files.
pub fn index(
    dir: &Path,
    params: &IndexParams,
    cache_dir: Option<&Path>,
    warn: impl FnMut(&str),
) -> Result<(TileIndex, IndexStats)> {
    let bar = kit::progress::bar(0, "indexing");
    let result = index_with_progress(dir, params, cache_dir, &bar, warn);
    bar.finish_and_clear();
    result
}

/// [`index`] reporting to `progress`: its length is set to the number of image files found,
/// and it advances by one as each file is decoded or taken from the cache.
pub fn index_with_progress(
    dir: &Path,
    params: &IndexParams,
    cache_dir: Option<&Path>,
    progress: &ProgressBar,
    mut warn: impl FnMut(&str),
) -> Result<(TileIndex, IndexStats)> {
    if !dir.is_dir() {
        return Err(MosaicError::file(dir, "tile folder does not exist or is not a folder"));
    }
    if params.cells.0 == 0 || params.cells.1 == 0 || params.thumb.0 == 0 || params.thumb.1 == 0 {
        return Err(MosaicError::InvalidInput(format!("bad index parameters {params:?}")));
    }
    let cache_dir = cache_dir.filter(|folder| match blocked(folder) {
        Some(file) => {
            warn(&format!(
                "the tile index cache folder {} cannot be used: {} is a file, not a folder; going on without a \
                 cache (give --cache a folder, or --no-cache)",
                folder.display(),
                file.display()
            ));
            false
        }
        None => true,
    });
    let Scan { found: files, not_utf8, links } = scan(dir)?;
    if let Some(first) = not_utf8.first() {
        warn(&format!(
            "skipping {} tile(s) whose names are not valid UTF-8 (first: {first:?}): a tile is named by its \
             path in the cache, --assignment and --json; rename them to use them (e.g. convmv -f latin1 -t utf8)",
            not_utf8.len()
        ));
    }
    let cache_path = cache_dir.map(|c| params.cache_path(c, dir));
    let mut cached = HashMap::new();
    let mut invalid_entries = 0;
    if let Some(cache_path) = cache_path.as_ref().filter(|p| p.exists()) {
        match read_cache(cache_path, params) {
            Ok(cache) => {
                for (path, reason) in &cache.invalid {
                    warn(&format!("tile index cache entry {path} is invalid ({reason}); recomputing it"));
                }
                invalid_entries = cache.invalid.len();
                cached = cache.entries;
            }
            Err(e) => warn(&format!("ignoring tile index cache {}: {e}", cache_path.display())),
        }
    }
    let mut stats =
        IndexStats { files: files.len() + not_utf8.len(), skipped: not_utf8.len(), links, ..Default::default() };
    progress.set_length(files.len() as u64);
    // Each result remembers the worker thread that decoded it (None: from the cache).
    let results: Vec<(Key, Entry, Option<usize>)> = files
        .into_par_iter()
        .map(|(path, key)| {
            let result = match cached.get(&key.path) {
                Some((k, entry)) if *k == key => (key, entry.clone(), None),
                _ => {
                    let entry = decode(&path, params);
                    (key, entry, Some(rayon::current_thread_index().unwrap_or(0)))
                }
            };
            progress.inc(1);
            result
        })
        .collect();
    let decoders: HashSet<usize> = results.iter().filter_map(|r| r.2).collect();
    stats.threads = decoders.len();
    let mut tiles =
        TileIndex { params: *params, paths: Vec::new(), features: Features::new(params.cells), thumbs: Vec::new() };
    for (key, entry, decoder) in &results {
        if decoder.is_none() {
            stats.from_cache += 1;
        } else {
            stats.decoded += 1;
        }
        match entry {
            Entry::Tile { features, thumb } => {
                tiles.paths.push(key.path.clone());
                tiles.features.data.extend_from_slice(features);
                tiles.thumbs.extend_from_slice(thumb);
            }
            Entry::Unreadable(message) => {
                stats.skipped += 1;
                let tile = dir.join(&key.path);
                warn(&format!("skipping unreadable tile {}: {}", tile.display(), without_path(message, &tile)));
            }
        }
    }
    let not_followed = match links {
        0 => String::new(),
        1 => "1 symbolic link was not followed".to_string(),
        n => format!("{n} symbolic links were not followed"),
    };
    if tiles.is_empty() {
        // Nothing to index: an error, and no cache written.
        let links = if links > 0 {
            format!("; {not_followed} (tiles must be regular files: copy them in)")
        } else {
            String::new()
        };
        return Err(MosaicError::file(
            dir,
            format!(
                "holds no readable tile images ({} image file(s) found, {} skipped{links}; tiles are .jpg, .jpeg, \
                 .png, .webp, .bmp, .tif or .tiff files, searched recursively)",
                stats.files, stats.skipped
            ),
        ));
    }
    if links > 0 {
        warn(&format!(
            "{not_followed} under {}: tiles are read from regular files only (copy the files in, e.g. with cp -L)",
            dir.display()
        ));
    }
    if let Some(cache_path) = cache_path {
        let stale = stats.decoded > 0 || invalid_entries > 0 || !cache_path.is_file();
        let written = if stale { write_cache(&cache_path, params, &results) } else { Ok(()) };
        match written {
            Ok(()) => stats.cache = Some(cache_path),
            Err(e) => warn(&format!("cannot write tile index cache {}: {e}", cache_path.display())),
        }
    }
    Ok((tiles, stats))
}

/// The file that stops `folder` from being a folder (`folder` itself or the first of its
/// ancestors that exists, when that is not a folder); `None` when it is one or can be made.
fn blocked(folder: &Path) -> Option<&Path> {
    let existing = folder.ancestors().find(|p| !p.as_os_str().is_empty() && p.exists())?;
    (!existing.is_dir()).then_some(existing)
}

/// The longest path or message the cache holds, in bytes.
const MAX_TEXT: usize = 1 << 16;
/// The fewest bytes an entry takes: path length, size, time, status, message length.
const MIN_ENTRY: u64 = 4 + 8 + 8 + 1 + 4;

/// `text` cut to at most MAX_TEXT bytes on a character boundary.
fn clip(text: &str) -> &str {
    let mut end = text.len().min(MAX_TEXT);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Writes the cache; only what [`read_cache`] accepts (a path too long to hold is left out
/// and decoded again next time, a long message is cut).
fn write_cache(path: &Path, params: &IndexParams, entries: &[(Key, Entry, Option<usize>)]) -> Result<()> {
    if let Some(folder) = path.parent() {
        std::fs::create_dir_all(folder).map_err(|e| MosaicError::file(folder, e))?;
    }
    let kept: Vec<&(Key, Entry, Option<usize>)> =
        entries.iter().filter(|(key, _, _)| key.path.len() <= MAX_TEXT).collect();
    kit::output::write_atomic(path, |w| {
        let mut header = Vec::new();
        header.extend_from_slice(MAGIC);
        for v in [VERSION, params.cells.0 as u32, params.cells.1 as u32, params.thumb.0 as u32, params.thumb.1 as u32] {
            header.extend_from_slice(&v.to_le_bytes());
        }
        header.extend_from_slice(&(kept.len() as u32).to_le_bytes());
        w.write_all(&header)?;
        for (key, entry, _) in &kept {
            let mut rec = Vec::new();
            rec.extend_from_slice(&(key.path.len() as u32).to_le_bytes());
            rec.extend_from_slice(key.path.as_bytes());
            rec.extend_from_slice(&key.size.to_le_bytes());
            rec.extend_from_slice(&key.mtime_ns.to_le_bytes());
            match entry {
                Entry::Tile { features, thumb } => {
                    rec.push(1);
                    rec.extend_from_slice(bytemuck::cast_slice(features));
                    rec.extend_from_slice(thumb);
                }
                Entry::Unreadable(message) => {
                    let message = clip(message);
                    rec.push(0);
                    rec.extend_from_slice(&(message.len() as u32).to_le_bytes());
                    rec.extend_from_slice(message.as_bytes());
                }
            }
            w.write_all(&rec)?;
        }
        Ok::<(), std::io::Error>(())
    })?;
    Ok(())
}

/// A bounds-checked little-endian reader over the cache bytes.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn take(&mut self, n: usize) -> std::result::Result<&[u8], String> {
        if n > self.0.len() {
            return Err(format!("truncated: {n} bytes needed, {} left", self.0.len()));
        }
        let (head, tail) = self.0.split_at(n);
        self.0 = tail;
        Ok(head)
    }
    fn u32(&mut self) -> std::result::Result<u32, String> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self) -> std::result::Result<u64, String> {
        let lo = self.u32()? as u64;
        Ok(lo | (self.u32()? as u64) << 32)
    }
    fn string(&mut self) -> std::result::Result<String, String> {
        let n = self.u32()? as usize;
        if n > MAX_TEXT {
            return Err(format!("a text of {n} bytes (at most {MAX_TEXT})"));
        }
        String::from_utf8(self.take(n)?.to_vec()).map_err(|_| "bad UTF-8".to_string())
    }
}

/// A tile cache file as read: the entries that passed every check, and the ones that did
/// not (path, reason), which are recomputed from their images.
pub struct Cache {
    entries: HashMap<String, (Key, Entry)>,
    pub invalid: Vec<(String, String)>,
}

impl Cache {
    /// Entries accepted.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// Reads a cache file like any input: a regular file, read within the memory budget; magic,
/// version and parameters must match; the entry count must fit the bytes present; every
/// length is bounded; no trailing bytes. A structural fault refuses the whole file; an entry
/// whose features are not finite or not in 0..255 is listed in [`Cache::invalid`] and never
/// trusted.
pub fn read_cache(path: &Path, params: &IndexParams) -> Result<Cache> {
    let raw = kit::input::read_bounded(path, kit::budget::get())?;
    parse_cache(&raw, params).map_err(|e| MosaicError::file(path, format!("not a valid tile index: {e}")))
}

fn parse_cache(raw: &[u8], params: &IndexParams) -> std::result::Result<Cache, String> {
    let mut b = Bytes(raw);
    if b.take(4)? != MAGIC {
        return Err("bad magic".into());
    }
    let version = b.u32()?;
    if version != VERSION {
        return Err(format!("version {version}, expected {VERSION}"));
    }
    let stored = (b.u32()? as usize, b.u32()? as usize, b.u32()? as usize, b.u32()? as usize);
    if stored != (params.cells.0, params.cells.1, params.thumb.0, params.thumb.1) {
        return Err("built with other parameters".into());
    }
    let count = b.u32()?;
    if count as u64 * MIN_ENTRY > b.0.len() as u64 {
        return Err(format!("{count} entries declared in {} bytes", b.0.len()));
    }
    let feature_bytes = 12 * params.cells.0 * params.cells.1;
    let thumb_bytes = 3 * params.thumb.0 * params.thumb.1;
    let mut cache = Cache { entries: HashMap::new(), invalid: Vec::new() };
    for _ in 0..count {
        let path = b.string()?;
        let key = Key { path: path.clone(), size: b.u64()?, mtime_ns: b.u64()? };
        let entry = match b.take(1)?[0] {
            1 => {
                let features: Vec<f32> = b
                    .take(feature_bytes)?
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect();
                let thumb = b.take(thumb_bytes)?.to_vec();
                if let Err(reason) = features::check(&features) {
                    cache.invalid.push((path, reason));
                    continue;
                }
                Entry::Tile { features, thumb }
            }
            0 => Entry::Unreadable(b.string()?),
            s => return Err(format!("bad entry status {s}")),
        };
        cache.entries.insert(path, (key, entry));
    }
    if !b.0.is_empty() {
        return Err(format!("{} trailing bytes", b.0.len()));
    }
    Ok(cache)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(path: &Path, w: usize, h: usize, colour: [u8; 3]) {
        let rgb: Vec<u8> = (0..w * h).flat_map(|_| colour).collect();
        kit::image::save_rgb8(path, w, h, &rgb).unwrap();
    }

    #[test]
    fn indexes_recursively_skips_unreadable_files_and_caches() {
        let dir = tempfile::tempdir().unwrap();
        let caches = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("sub/deeper")).unwrap();
        png(&root.join("a.png"), 8, 6, [255, 0, 0]);
        png(&root.join("sub/b.PNG"), 5, 9, [0, 255, 0]);
        png(&root.join("sub/deeper/c.png"), 4, 4, [0, 0, 255]);
        std::fs::write(root.join("sub/broken.jpg"), b"not a jpeg").unwrap();
        std::fs::write(root.join("notes.txt"), b"ignored").unwrap();
        let params = IndexParams { cells: (2, 2), thumb: (4, 2) };

        let mut warnings = Vec::new();
        let (tiles, stats) = index(root, &params, Some(caches.path()), |w| warnings.push(w.to_string())).unwrap();
        assert_eq!(tiles.paths, ["a.png", "sub/b.PNG", "sub/deeper/c.png"]);
        assert_eq!((stats.files, stats.decoded, stats.from_cache, stats.skipped), (4, 4, 0, 1));
        assert!(warnings.len() == 1 && warnings[0].contains("broken.jpg"), "{warnings:?}");
        assert_eq!(tiles.features.len(), 3);
        assert!((tiles.features.get(0)[0] - 255.0).abs() < 1e-3 && tiles.features.get(0)[1].abs() < 1e-3);
        assert_eq!(&tiles.thumb(1)[..3], &[0, 255, 0]);

        // Unchanged: nothing is decoded, the result is identical.
        let (again, stats) = index(root, &params, Some(caches.path()), |_| {}).unwrap();
        assert_eq!((stats.decoded, stats.from_cache, stats.skipped), (0, 4, 1));
        assert_eq!(again.features.data, tiles.features.data);
        assert_eq!(again.thumbs, tiles.thumbs);

        // A changed file is decoded again; a removed one disappears.
        png(&root.join("a.png"), 10, 6, [0, 0, 0]);
        std::fs::remove_file(root.join("sub/deeper/c.png")).unwrap();
        let (changed, stats) = index(root, &params, Some(caches.path()), |_| {}).unwrap();
        assert_eq!((stats.decoded, stats.from_cache), (1, 2));
        assert_eq!(changed.len(), 2);
        assert!(changed.features.get(0)[0].abs() < 1e-3);

        // A NaN feature in an entry is never trusted: that tile is decoded again, with a
        // warning, and the rewritten cache holds its real features.
        let cache = params.cache_path(caches.path(), root);
        let mut bytes = std::fs::read(&cache).unwrap();
        let first_features = 28 + 4 + "a.png".len() + 8 + 8 + 1;
        bytes[first_features..first_features + 4].copy_from_slice(&f32::NAN.to_le_bytes());
        std::fs::write(&cache, &bytes).unwrap();
        let mut warnings = Vec::new();
        let (fixed, stats) = index(root, &params, Some(caches.path()), |w| warnings.push(w.to_string())).unwrap();
        assert_eq!((stats.decoded, stats.from_cache), (1, 2), "{warnings:?}");
        assert!(warnings.iter().any(|w| w.contains("a.png is invalid") && w.contains("NaN")), "{warnings:?}");
        assert_eq!(fixed.features.data, changed.features.data);
        assert_eq!(read_cache(&cache, &params).unwrap().invalid.len(), 0);

        // A corrupt cache is ignored with a warning and rebuilt.
        std::fs::write(params.cache_path(caches.path(), root), b"TSMI garbage").unwrap();
        let mut warnings = Vec::new();
        let (_, stats) = index(root, &params, Some(caches.path()), |w| warnings.push(w.to_string())).unwrap();
        assert_eq!(stats.decoded, 3);
        assert!(warnings.iter().any(|w| w.contains("ignoring tile index cache")));

        // The cache never lands in the photo folder; without one, everything is decoded.
        assert!(std::fs::read_dir(root).unwrap().all(|e| !e.unwrap().file_name().to_string_lossy().starts_with('.')));
        let (_, stats) = index(root, &params, None, |_| {}).unwrap();
        assert_eq!((stats.decoded, stats.from_cache), (3, 0));
    }
}

#[cfg(all(test, unix))]
mod names {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;

    use super::*;

    fn png(path: &Path, colour: [u8; 3]) {
        let rgb: Vec<u8> = (0..16).flat_map(|_| colour).collect();
        kit::image::save_rgb8(path, 4, 4, &rgb).unwrap();
    }

    #[test]
    fn names_that_are_not_utf8_are_skipped_and_backslashes_kept() {
        let dir = tempfile::tempdir().unwrap();
        let caches = tempfile::tempdir().unwrap();
        let root = dir.path();
        // Two Latin-1 names a lossy conversion makes one ("caf\u{fffd}.png"), and a folder
        // whose name is not UTF-8.
        png(&root.join(OsStr::from_bytes(b"caf\xe9.png")), [255, 0, 0]);
        png(&root.join(OsStr::from_bytes(b"caf\xe8.png")), [0, 255, 0]);
        std::fs::create_dir(root.join(OsStr::from_bytes(b"\xff"))).unwrap();
        png(&root.join(OsStr::from_bytes(b"\xff/x.png")), [0, 0, 255]);
        png(&root.join("a\\b.png"), [9, 9, 9]);
        png(&root.join("ok.png"), [1, 2, 3]);
        let params = IndexParams { cells: (1, 1), thumb: (2, 2) };
        for run in 0..2 {
            let mut warnings = Vec::new();
            let (tiles, stats) = index(root, &params, Some(caches.path()), |w| warnings.push(w.to_string())).unwrap();
            assert_eq!(tiles.paths, ["a\\b.png", "ok.png"], "run {run}");
            assert_eq!((stats.files, stats.skipped), (5, 3), "run {run}");
            assert_eq!(warnings.len(), 1, "run {run}: {warnings:?}");
            assert!(warnings[0].contains("3 tile(s)") && warnings[0].contains("not valid UTF-8"), "{warnings:?}");
            assert!(warnings[0].contains(r"\x"), "the name is shown escaped: {warnings:?}");
        }
    }

    #[test]
    fn an_unreadable_tile_is_named_once_in_its_warning() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("bad.png"), b"not a png").unwrap();
        png(&dir.path().join("ok.png"), [1, 2, 3]);
        let params = IndexParams { cells: (1, 1), thumb: (2, 2) };
        let mut warnings = Vec::new();
        index(dir.path(), &params, None, |w| warnings.push(w.to_string())).unwrap();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert_eq!(warnings[0].matches("bad.png").count(), 1, "{warnings:?}");
    }
}
