//! Pairs of an IQA data set laid out as a folder of references and a folder of distorted
//! images, matched by name as the common databases name them:
//!
//! - CSIQ: `1600.AWGN.1.png` against `1600.png` (`<ref>.<type>.<level>`);
//! - TID2008/TID2013: `i01_01_1.bmp` against `I01.BMP` (`<ref>_<type>_<level>`, any case);
//! - KADID-10k: `I01_01_01.png` against `I01.png`.
//!
//! The default rule covers all three: a distorted image belongs to the reference whose file
//! stem is the longest prefix of its own stem followed by `.`, `_` or `-` (case-insensitive).
//! Other layouts give a [`Pattern`] such as `{ref}_*` or `dist_{ref}.*`, where `{ref}` stands
//! for the reference's stem and `*` for any text.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::pairs::Pair;
use crate::MadError;

/// Extensions of the image files a data set folder is searched for.
/// Every one is a format [`kit::image::load`] decodes, so no pair is collected that cannot
/// be read.
const IMAGE_EXTENSIONS: [&str; 11] = ["png", "bmp", "jpg", "jpeg", "tif", "tiff", "webp", "pgm", "ppm", "pnm", "tga"];

/// Folders deeper than this are not searched (CSIQ's distorted images are one level down).
const MAX_DEPTH: usize = 4;

/// A naming rule: `{ref}` once, `*` for any run of characters, everything else literal
/// (case-insensitive). Matched against the distorted image's file stem.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pattern {
    before: String,
    after: String,
}

impl std::str::FromStr for Pattern {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let parts: Vec<&str> = text.split("{ref}").collect();
        match parts.as_slice() {
            [before, after] => Ok(Pattern { before: before.to_lowercase(), after: after.to_lowercase() }),
            _ => Err(format!("pattern {text:?} must hold `{{ref}}` exactly once, e.g. `{{ref}}_*`")),
        }
    }
}

/// Whether `text` matches `glob` (`*` = any run of characters), both lower case.
fn glob_match(glob: &str, text: &str) -> bool {
    let (g, t): (Vec<char>, Vec<char>) = (glob.chars().collect(), text.chars().collect());
    // Classic two-pointer wildcard match with backtracking to the last `*`.
    let (mut gi, mut ti, mut star, mut mark) = (0, 0, None, 0);
    while ti < t.len() {
        if gi < g.len() && g[gi] != '*' && g[gi] == t[ti] {
            gi += 1;
            ti += 1;
        } else if gi < g.len() && g[gi] == '*' {
            star = Some(gi);
            mark = ti;
            gi += 1;
        } else if let Some(s) = star {
            gi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    g[gi..].iter().all(|&c| c == '*')
}

impl Pattern {
    /// The reference stems (among `refs`, lower case) this distorted stem matches.
    fn references<'a>(&self, stem: &str, refs: impl Iterator<Item = &'a String>) -> Vec<&'a String> {
        refs.filter(|r| {
            let whole = format!("{}{}{}", self.before, r, self.after);
            // `{ref}` is literal text here; escape nothing since stems hold no `*`.
            glob_match(&whole, stem)
        })
        .collect()
    }
}

/// The image files of a data set folder.
struct Images {
    /// (lower-case stem, path), sorted by path.
    found: Vec<(String, PathBuf)>,
    /// Images whose path under the folder is not valid UTF-8: pairs are matched by name and
    /// named by it in the results file, where a lossy name (U+FFFD for each bad byte) would
    /// name no file and could make two pairs one on resume. They are left out.
    not_utf8: Vec<PathBuf>,
}

/// Image files under `dir` (recursively, up to [`MAX_DEPTH`] levels, sorted).
fn images(dir: &Path) -> Result<Images, MadError> {
    let mut out = Images { found: Vec::new(), not_utf8: Vec::new() };
    let mut stack = vec![(dir.to_path_buf(), 0usize)];
    while let Some((folder, depth)) = stack.pop() {
        let entries = std::fs::read_dir(&folder).map_err(|e| MadError::Pairs {
            path: folder.display().to_string(),
            message: format!("cannot list the folder: {e}"),
        })?;
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else { continue };
            if kind.is_dir() && depth < MAX_DEPTH {
                stack.push((path, depth + 1));
            } else if kind.is_file() {
                let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
                if ext.is_some_and(|e| IMAGE_EXTENSIONS.contains(&e.as_str())) {
                    if path.strip_prefix(dir).unwrap_or(&path).to_str().is_none() {
                        out.not_utf8.push(path);
                        continue;
                    }
                    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_lowercase();
                    out.found.push((stem, path));
                }
            }
        }
    }
    out.found.sort_by(|a, b| a.1.cmp(&b.1));
    out.not_utf8.sort();
    Ok(out)
}

/// The error of a folder with no usable image.
fn no_images(dir: &Path, images: &Images) -> MadError {
    let message = match images.not_utf8.first() {
        None => "holds no images".to_string(),
        Some(first) => format!(
            "holds no images with UTF-8 names ({} whose names are not, first: {first:?}; rename them)",
            images.not_utf8.len()
        ),
    };
    MadError::Pairs { path: dir.display().to_string(), message }
}

/// The reference a distorted stem belongs to by the default rule: the longest reference stem
/// that is a prefix followed by `.`, `_` or `-`.
fn default_reference<'a>(stem: &str, refs: &'a BTreeMap<String, PathBuf>) -> Option<&'a String> {
    refs.keys()
        .filter(|r| {
            stem.len() > r.len()
                && stem.starts_with(r.as_str())
                && matches!(stem.as_bytes()[r.len()], b'.' | b'_' | b'-')
        })
        .max_by_key(|r| r.len())
}

/// What pairing a data set found: the pairs, and the distorted images no reference matched.
pub struct Matched {
    pub pairs: Vec<Pair>,
    pub unmatched: Vec<PathBuf>,
    /// Images of either folder left out because their names are not valid UTF-8.
    pub not_utf8: Vec<PathBuf>,
}

/// Pairs every image under `dist_dir` with its reference in `ref_dir`. Names in the pairs
/// are the paths relative to their folders.
pub fn pair_folders(ref_dir: &Path, dist_dir: &Path, pattern: Option<&Pattern>) -> Result<Matched, MadError> {
    let ref_images = images(ref_dir)?;
    if ref_images.found.is_empty() {
        return Err(no_images(ref_dir, &ref_images));
    }
    let dist_images = images(dist_dir)?;
    if dist_images.found.is_empty() {
        return Err(no_images(dist_dir, &dist_images));
    }
    let mut not_utf8 = ref_images.not_utf8;
    not_utf8.extend(dist_images.not_utf8);
    let refs: BTreeMap<String, PathBuf> = ref_images.found.into_iter().collect();
    let same_folder = ref_dir.canonicalize().ok() == dist_dir.canonicalize().ok();
    let mut pairs = Vec::new();
    let mut unmatched = Vec::new();
    for (stem, path) in dist_images.found {
        if same_folder && refs.contains_key(&stem) {
            continue; // a reference itself, when both folders are one
        }
        let found = match pattern {
            Some(p) => {
                let mut hits = p.references(&stem, refs.keys());
                hits.sort_by_key(|r| std::cmp::Reverse(r.len()));
                hits.first().copied()
            }
            None => default_reference(&stem, &refs),
        };
        match found {
            Some(r) => {
                let reference = refs[r].clone();
                let rel = |p: &Path, base: &Path| p.strip_prefix(base).unwrap_or(p).display().to_string();
                pairs.push(Pair {
                    ref_name: rel(&reference, ref_dir),
                    dist_name: rel(&path, dist_dir),
                    reference,
                    distorted: path,
                });
            }
            None => unmatched.push(path),
        }
    }
    if pairs.is_empty() {
        return Err(MadError::Pairs {
            path: dist_dir.display().to_string(),
            message: format!(
                "no image matched a reference in {} ({} unmatched); give --pattern, e.g. '{{ref}}_*'",
                ref_dir.display(),
                unmatched.len()
            ),
        });
    }
    Ok(Matched { pairs, unmatched, not_utf8 })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(dir: &Path, names: &[&str]) {
        for n in names {
            let p = dir.join(n);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, b"").unwrap();
        }
    }

    /// A temporary folder holding `ref/` with the empty files `refs` and `dst/` with `dists`;
    /// returns it (kept alive by the caller) and the two folders' paths.
    fn folders(refs: &[&str], dists: &[&str]) -> (tempfile::TempDir, PathBuf, PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let (r, x) = (d.path().join("ref"), d.path().join("dst"));
        touch(&r, refs);
        touch(&x, dists);
        (d, r, x)
    }

    #[test]
    fn csiq_tid_and_kadid_names_pair_without_a_csv() {
        let (_dir, r, x) = folders(
            &["1600.png", "16.png", "I01.BMP", "I11.bmp"],
            &["awgn/1600.AWGN.1.png", "16.jpeg.3.png", "i01_01_1.bmp", "I11_24_05.png", "readme.txt", "x.png"],
        );
        let m = pair_folders(&r, &x, None).unwrap();
        let got: Vec<(String, String)> = m.pairs.iter().map(|p| (p.ref_name.clone(), p.dist_name.clone())).collect();
        assert_eq!(
            got,
            vec![
                ("16.png".into(), "16.jpeg.3.png".into()),
                ("I11.bmp".into(), "I11_24_05.png".into()),
                ("1600.png".into(), "awgn/1600.AWGN.1.png".into()),
                ("I01.BMP".into(), "i01_01_1.bmp".into()),
            ]
        );
        assert_eq!(m.unmatched.len(), 1, "x.png matches nothing");
    }

    #[test]
    fn a_pattern_names_other_layouts() {
        let (_dir, r, x) = folders(&["parrots.png", "cat.png"], &["dist_parrots_blur.png", "dist_cat.png"]);
        let p: Pattern = "dist_{ref}*".parse().unwrap();
        let m = pair_folders(&r, &x, Some(&p)).unwrap();
        assert_eq!(m.pairs.len(), 2);
        assert!(pair_folders(&r, &x, None).is_err(), "the default rule does not match these names");
        assert!("no-ref-here".parse::<Pattern>().is_err());
        assert!(glob_match("a*b*c", "axxbyyc") && !glob_match("a*b", "ac"));
    }

    #[test]
    fn an_empty_distorted_folder_says_so() {
        let (_dir, r, x) = folders(&["I01.png"], &["readme.txt"]);
        let e = pair_folders(&r, &x, None).err().unwrap().to_string();
        assert!(e.ends_with("dst: holds no images"), "{e}");
    }

    #[cfg(unix)]
    #[test]
    fn names_that_are_not_utf8_are_left_out_not_written_lossily() {
        use std::ffi::OsStr;
        use std::os::unix::ffi::OsStrExt;
        let (_dir, r, x) = folders(&["I01.png"], &["I01_01_1.png"]);
        // Two names a lossy conversion makes one, and a reference with no UTF-8 stem.
        for name in [&b"I01_\xe9.png"[..], b"I01_\xe8.png"] {
            std::fs::write(x.join(OsStr::from_bytes(name)), b"").unwrap();
        }
        std::fs::write(r.join(OsStr::from_bytes(b"\xff.png")), b"").unwrap();
        let m = pair_folders(&r, &x, None).unwrap();
        let names: Vec<&str> = m.pairs.iter().map(|p| p.dist_name.as_str()).collect();
        assert_eq!(names, ["I01_01_1.png"]);
        assert_eq!(m.not_utf8.len(), 3);
        // A folder of such names only: no images.
        std::fs::remove_file(x.join("I01_01_1.png")).unwrap();
        let e = pair_folders(&r, &x, None).err().unwrap().to_string();
        assert!(e.contains("holds no images with UTF-8 names (2 whose names are not"), "{e}");
    }
}
