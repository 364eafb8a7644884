//! The tile library: every image under a folder (recursively), centre-cropped to the patch
//! aspect, reduced to u x v mean-RGB features and a thumbnail; cached in an index file in
//! that folder so a second run over unchanged files decodes nothing.
//!
//! The cache is keyed per file by (relative path, size, modification time); files whose key
//! changed are decoded again, vanished files are dropped. Unreadable files are skipped with
//! a warning (and remembered, so they are not decoded again until they change). The file
//! layout is in docs/formats.md ("mosaic tile index").

use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use rayon::prelude::*;

use crate::error::{MosaicError, Result};
use crate::features::{region_features, Features};
use crate::image_ops::{centre_crop, thumbnail, to_rgb};

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
    /// The cache file for these parameters inside `dir`.
    pub fn cache_path(&self, dir: &Path) -> PathBuf {
        dir.join(format!(".tessera-mosaic-index-{}x{}-{}x{}", self.cells.0, self.cells.1, self.thumb.0, self.thumb.1))
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
}

fn is_image(path: &Path) -> bool {
    path.extension().and_then(|e| e.to_str()).is_some_and(|e| EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()))
}

/// Image files under `dir` (recursively, not following symbolic links, skipping hidden
/// entries) with their keys, sorted by path.
fn scan(dir: &Path) -> Result<Vec<(PathBuf, Key)>> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        let entries = std::fs::read_dir(&folder).map_err(|e| MosaicError::file(&folder, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| MosaicError::file(&folder, e))?;
            let path = entry.path();
            if entry.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_dir() {
                stack.push(path);
            } else if meta.is_file() && is_image(&path) {
                let rel = path.strip_prefix(dir).unwrap_or(&path).to_string_lossy().replace('\\', "/");
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
    Ok(found)
}

fn decode(path: &Path, params: &IndexParams) -> Entry {
    match engine::io::load_image(path) {
        Err(e) => Entry::Unreadable(e.to_string()),
        Ok(img) => {
            let rgb = to_rgb(&img);
            let rect = centre_crop(img.width, img.height, params.thumb.0 as f64 / params.thumb.1 as f64);
            let mut features = Vec::new();
            region_features(&rgb, img.width, rect, params.cells, &mut features);
            let thumb = thumbnail(&rgb, img.width, rect, params.thumb.0, params.thumb.1);
            Entry::Tile { features, thumb }
        }
    }
}

/// Indexes `dir`, reusing and refreshing its cache file; `warn` gets one message per
/// skipped file and per cache problem.
pub fn index(dir: &Path, params: &IndexParams, mut warn: impl FnMut(&str)) -> Result<(TileIndex, IndexStats)> {
    if !dir.is_dir() {
        return Err(MosaicError::file(dir, "tile folder does not exist or is not a folder"));
    }
    if params.cells.0 == 0 || params.cells.1 == 0 || params.thumb.0 == 0 || params.thumb.1 == 0 {
        return Err(MosaicError::InvalidInput(format!("bad index parameters {params:?}")));
    }
    let files = scan(dir)?;
    let cache_path = params.cache_path(dir);
    let mut cached = match read_cache(&cache_path, params) {
        Ok(c) => c,
        Err(e) => {
            if cache_path.exists() {
                warn(&format!("ignoring tile index cache {}: {e}", cache_path.display()));
            }
            HashMap::new()
        }
    };
    let mut stats = IndexStats { files: files.len(), ..Default::default() };
    let results: Vec<(Key, Entry, bool)> = files
        .into_par_iter()
        .map(|(path, key)| match cached.get(&key.path) {
            Some((k, entry)) if *k == key => (key, entry.clone(), true),
            _ => {
                let entry = decode(&path, params);
                (key, entry, false)
            }
        })
        .collect();
    cached.clear();
    let mut tiles =
        TileIndex { params: *params, paths: Vec::new(), features: Features::new(params.cells), thumbs: Vec::new() };
    for (key, entry, hit) in &results {
        if *hit {
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
                warn(&format!("skipping unreadable tile {}: {message}", key.path));
            }
        }
    }
    if stats.decoded > 0 || !cache_path.exists() {
        if let Err(e) = write_cache(&cache_path, params, &results) {
            warn(&format!("cannot write tile index cache {}: {e}", cache_path.display()));
        }
    }
    Ok((tiles, stats))
}

fn write_cache(path: &Path, params: &IndexParams, entries: &[(Key, Entry, bool)]) -> Result<()> {
    engine::io::write_atomic(path, |w| {
        let io = |e: std::io::Error| engine::EngineError::File { path: path.into(), message: e.to_string() };
        let mut header = Vec::new();
        header.extend_from_slice(MAGIC);
        for v in [VERSION, params.cells.0 as u32, params.cells.1 as u32, params.thumb.0 as u32, params.thumb.1 as u32] {
            header.extend_from_slice(&v.to_le_bytes());
        }
        header.extend_from_slice(&(entries.len() as u32).to_le_bytes());
        w.write_all(&header).map_err(io)?;
        for (key, entry, _) in entries {
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
                    rec.push(0);
                    rec.extend_from_slice(&(message.len() as u32).to_le_bytes());
                    rec.extend_from_slice(message.as_bytes());
                }
            }
            w.write_all(&rec).map_err(io)?;
        }
        Ok(())
    })?;
    Ok(())
}

/// A bounds-checked little-endian reader over the cache bytes.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn take(&mut self, n: usize) -> std::result::Result<&[u8], String> {
        if n > self.0.len() {
            return Err("truncated".into());
        }
        let (head, tail) = self.0.split_at(n);
        self.0 = tail;
        Ok(head)
    }
    fn u32(&mut self) -> std::result::Result<u32, String> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }
    fn u64(&mut self) -> std::result::Result<u64, String> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }
    fn string(&mut self) -> std::result::Result<String, String> {
        let n = self.u32()? as usize;
        String::from_utf8(self.take(n)?.to_vec()).map_err(|_| "bad UTF-8".to_string())
    }
}

fn read_cache(path: &Path, params: &IndexParams) -> std::result::Result<HashMap<String, (Key, Entry)>, String> {
    let mut raw = Vec::new();
    std::fs::File::open(path).and_then(|mut f| f.read_to_end(&mut raw)).map_err(|e| e.to_string())?;
    let mut b = Bytes(&raw);
    if b.take(4)? != MAGIC {
        return Err("not a tile index (bad magic)".into());
    }
    let version = b.u32()?;
    if version != VERSION {
        return Err(format!("version {version}, expected {VERSION}"));
    }
    let stored = (b.u32()? as usize, b.u32()? as usize, b.u32()? as usize, b.u32()? as usize);
    if stored != (params.cells.0, params.cells.1, params.thumb.0, params.thumb.1) {
        return Err("built with other parameters".into());
    }
    let count = b.u32()? as usize;
    let feature_bytes = 12 * params.cells.0 * params.cells.1;
    let thumb_bytes = 3 * params.thumb.0 * params.thumb.1;
    let mut out = HashMap::new();
    for _ in 0..count {
        let path = b.string()?;
        let key = Key { path: path.clone(), size: b.u64()?, mtime_ns: b.u64()? };
        let entry = match b.take(1)?[0] {
            1 => {
                let features = bytemuck::pod_collect_to_vec(b.take(feature_bytes)?);
                Entry::Tile { features, thumb: b.take(thumb_bytes)?.to_vec() }
            }
            0 => Entry::Unreadable(b.string()?),
            s => return Err(format!("bad entry status {s}")),
        };
        out.insert(path, (key, entry));
    }
    if !b.0.is_empty() {
        return Err("trailing bytes".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(path: &Path, w: usize, h: usize, colour: [u8; 3]) {
        let rgb: Vec<u8> = (0..w * h).flat_map(|_| colour).collect();
        engine::io::save_png_rgb8(path, w, h, &rgb).unwrap();
    }

    #[test]
    fn indexes_recursively_skips_unreadable_files_and_caches() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("sub/deeper")).unwrap();
        png(&root.join("a.png"), 8, 6, [255, 0, 0]);
        png(&root.join("sub/b.PNG"), 5, 9, [0, 255, 0]);
        png(&root.join("sub/deeper/c.png"), 4, 4, [0, 0, 255]);
        std::fs::write(root.join("sub/broken.jpg"), b"not a jpeg").unwrap();
        std::fs::write(root.join("notes.txt"), b"ignored").unwrap();
        let params = IndexParams { cells: (2, 2), thumb: (4, 2) };

        let mut warnings = Vec::new();
        let (tiles, stats) = index(root, &params, |w| warnings.push(w.to_string())).unwrap();
        assert_eq!(tiles.paths, ["a.png", "sub/b.PNG", "sub/deeper/c.png"]);
        assert_eq!((stats.files, stats.decoded, stats.from_cache, stats.skipped), (4, 4, 0, 1));
        assert!(warnings.len() == 1 && warnings[0].contains("broken.jpg"), "{warnings:?}");
        assert_eq!(tiles.features.len(), 3);
        assert!((tiles.features.get(0)[0] - 255.0).abs() < 1e-3 && tiles.features.get(0)[1].abs() < 1e-3);
        assert_eq!(&tiles.thumb(1)[..3], &[0, 255, 0]);

        // Unchanged: nothing is decoded, the result is identical.
        let (again, stats) = index(root, &params, |_| {}).unwrap();
        assert_eq!((stats.decoded, stats.from_cache, stats.skipped), (0, 4, 1));
        assert_eq!(again.features.data, tiles.features.data);
        assert_eq!(again.thumbs, tiles.thumbs);

        // A changed file is decoded again; a removed one disappears.
        png(&root.join("a.png"), 10, 6, [0, 0, 0]);
        std::fs::remove_file(root.join("sub/deeper/c.png")).unwrap();
        let (changed, stats) = index(root, &params, |_| {}).unwrap();
        assert_eq!((stats.decoded, stats.from_cache), (1, 2));
        assert_eq!(changed.len(), 2);
        assert!(changed.features.get(0)[0].abs() < 1e-3);

        // A corrupt cache is ignored with a warning and rebuilt.
        std::fs::write(params.cache_path(root), b"TSMI garbage").unwrap();
        let mut warnings = Vec::new();
        let (_, stats) = index(root, &params, |w| warnings.push(w.to_string())).unwrap();
        assert_eq!(stats.decoded, 3);
        assert!(warnings.iter().any(|w| w.contains("ignoring tile index cache")));
    }
}
