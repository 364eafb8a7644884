//! Folders of views: which file holds which view. A folder is recognised by its file names
//! (docs/formats.md, "Folders of views"):
//!
//! - HCI 4D benchmark: `input_Cam000.png` .. `input_Cam080.png`, index `i` is view
//!   (i / V, i % V) of a square grid (9 x 9) unless `--grid` says otherwise; other files
//!   (depth maps, masks) are ignored.
//! - Stanford light field archive (rectified): `out_YY_XX_<x>_<y>.png`, row YY, column XX;
//!   other files are ignored.
//! - Row/column names: every image's name ends in two numbers, row then column, with
//!   anything but digits between them (`003_005.png`, `r3_c5.png`, `lego_00_00.png`, and
//!   `view_3_5.png` as `decode --views` writes).
//!
//! Grids are counted from the smallest row and column present and must be complete. Any
//! other folder needs `--grid UxV` and is read in file-name order, row-major.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::{LfError, Result};

/// How the views of a folder were told apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Layout {
    /// `input_CamNNN` (HCI 4D light field benchmark).
    Hci,
    /// `out_YY_XX_*` (Stanford light field archive).
    Stanford,
    /// Names ending in row and column numbers.
    RowColumn,
    /// File-name order with `--grid`.
    Sorted,
}

/// The views of a folder, row-major, and their grid (rows, columns).
#[derive(Clone, Debug, PartialEq)]
pub struct FolderViews {
    pub layout: Layout,
    pub grid: (usize, usize),
    pub files: Vec<PathBuf>,
}

/// The HCI index of `stem` (`input_Cam042` -> 42).
fn hci_index(stem: &str) -> Option<usize> {
    let digits = stem.strip_prefix("input_Cam")?;
    all_digits(digits).then(|| digits.parse().ok())?
}

/// Row and column of a Stanford name (`out_03_11_-859.7_1022.8` -> (3, 11)).
fn stanford_position(stem: &str) -> Option<(usize, usize)> {
    let mut parts = stem.strip_prefix("out_")?.split('_');
    let (row, col) = (parts.next()?, parts.next()?);
    (all_digits(row) && all_digits(col)).then(|| Some((row.parse().ok()?, col.parse().ok()?)))?
}

/// Row and column of a name ending in two numbers split by non-digits (`r3_c5` -> (3, 5)).
fn row_column_position(stem: &str) -> Option<(usize, usize)> {
    let col_start = stem.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let head = &stem[..col_start];
    let sep = head.trim_end_matches(|c: char| !c.is_ascii_digit()).len();
    let row_start = head[..sep].trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let (row, col) = (&stem[row_start..sep], &stem[col_start..]);
    if row.is_empty() || col.is_empty() || sep == col_start {
        return None;
    }
    Some((row.parse().ok()?, col.parse().ok()?))
}

fn all_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

fn stem(path: &Path) -> &str {
    path.file_stem().and_then(|s| s.to_str()).unwrap_or("")
}

/// The image files of `dir` (by extension), sorted by name.
fn image_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| LfError::file(dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| kit::image::IMAGE_EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()))
        })
        .collect();
    files.sort();
    Ok(files)
}

/// Lays out views found at (row, column) positions as a complete grid counted from the
/// smallest row and column, or says what is wrong.
fn complete_grid(found: Vec<((usize, usize), PathBuf)>) -> std::result::Result<((usize, usize), Vec<PathBuf>), String> {
    let r0 = found.iter().map(|(p, _)| p.0).min().unwrap_or(0);
    let c0 = found.iter().map(|(p, _)| p.1).min().unwrap_or(0);
    let mut at = BTreeMap::new();
    for ((r, c), path) in found {
        if let Some(other) = at.insert((r - r0, c - c0), path.clone()) {
            return Err(format!("{} and {} are both view ({r}, {c})", other.display(), path.display()));
        }
    }
    let rows = at.keys().map(|p| p.0).max().map_or(0, |r| r + 1);
    let cols = at.keys().map(|p| p.1).max().map_or(0, |c| c + 1);
    if rows as u64 * cols as u64 != at.len() as u64 {
        let missing = (0..rows).flat_map(|r| (0..cols).map(move |c| (r, c))).find(|p| !at.contains_key(p));
        let (r, c) = missing.unwrap_or((0, 0));
        return Err(format!("view ({}, {}) is missing ({} views for a {rows}x{cols} grid)", r + r0, c + c0, at.len()));
    }
    Ok(((rows, cols), at.into_values().collect()))
}

fn check_grid(dir: &Path, layout: Layout, found: (usize, usize), grid: Option<(usize, usize)>) -> Result<()> {
    match grid {
        Some(g) if g != found => Err(LfError::file(
            dir,
            format!("holds a {}x{} grid of views ({layout:?} names); --grid says {}x{}", found.0, found.1, g.0, g.1),
        )),
        _ => Ok(()),
    }
}

/// The views of `dir`, row-major: by the layout its names follow, else in name order on a
/// `grid` grid (which must then be given).
pub fn find_views(dir: &Path, grid: Option<(usize, usize)>) -> Result<FolderViews> {
    let files = image_files(dir)?;
    let bad = |message: String| LfError::file(dir, message);
    if files.is_empty() {
        return Err(bad(format!(
            "holds no view images (files named .{}); a light field is a .npy file or a folder of views",
            kit::image::IMAGE_EXTENSIONS.join(", .")
        )));
    }
    let hci: Vec<(usize, PathBuf)> = files.iter().filter_map(|f| Some((hci_index(stem(f))?, f.clone()))).collect();
    if !hci.is_empty() {
        let n = hci.len();
        let (rows, cols) = match grid {
            Some(g) => g,
            None => {
                let side = (1..=n).find(|s| s * s >= n).unwrap_or(1);
                if side * side != n {
                    return Err(bad(format!("holds {n} input_Cam views, not a square grid; give --grid UxV")));
                }
                (side, side)
            }
        };
        if rows as u64 * cols as u64 != n as u64 {
            return Err(bad(format!("holds {n} input_Cam views, --grid {rows}x{cols} needs {}", rows * cols)));
        }
        let found = hci.into_iter().map(|(i, f)| ((i / cols, i % cols), f)).collect();
        let ((r, c), files) = complete_grid(found).map_err(bad)?;
        check_grid(dir, Layout::Hci, (r, c), Some((rows, cols)))?;
        return Ok(FolderViews { layout: Layout::Hci, grid: (rows, cols), files });
    }
    let stanford: Vec<_> = files.iter().filter_map(|f| Some((stanford_position(stem(f))?, f.clone()))).collect();
    if !stanford.is_empty() {
        let (found, files) = complete_grid(stanford).map_err(bad)?;
        check_grid(dir, Layout::Stanford, found, grid)?;
        return Ok(FolderViews { layout: Layout::Stanford, grid: found, files });
    }
    let row_col: Vec<_> = files.iter().filter_map(|f| Some((row_column_position(stem(f))?, f.clone()))).collect();
    if !files.is_empty() && row_col.len() == files.len() {
        match (complete_grid(row_col), grid) {
            (Ok((found, files)), _) => {
                check_grid(dir, Layout::RowColumn, found, grid)?;
                return Ok(FolderViews { layout: Layout::RowColumn, grid: found, files });
            }
            // Numbers that are no grid (dates, frame counters): name order, if --grid says so.
            (Err(_), Some(_)) => {}
            (Err(why), None) => {
                return Err(bad(format!(
                    "names end in row and column numbers, but {why}; give --grid UxV to read the views in name order"
                )));
            }
        }
    }
    let Some((u, v)) = grid else {
        return Err(bad(
            "is a folder of views whose names follow no known layout (HCI input_CamNNN, Stanford out_YY_XX_*, \
             or ROW_COL numbers): give --grid UxV"
                .into(),
        ));
    };
    let needed = u as u64 * v as u64;
    if files.len() as u64 != needed {
        return Err(bad(format!("holds {} view images, --grid {u}x{v} needs {needed}", files.len())));
    }
    Ok(FolderViews { layout: Layout::Sorted, grid: (u, v), files })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_by_layout() {
        assert_eq!(hci_index("input_Cam042"), Some(42));
        assert_eq!(hci_index("input_Cam"), None);
        assert_eq!(hci_index("gt_disp_lowres"), None);
        assert_eq!(stanford_position("out_03_11_-859.738525_1022.898743"), Some((3, 11)));
        assert_eq!(stanford_position("out_03_11"), Some((3, 11)));
        assert_eq!(stanford_position("out_3a_11_1"), None);
        assert_eq!(row_column_position("003_005"), Some((3, 5)));
        assert_eq!(row_column_position("r3_c5"), Some((3, 5)));
        assert_eq!(row_column_position("view_03_07"), Some((3, 7)));
        assert_eq!(row_column_position("lego_00_16"), Some((0, 16)));
        assert_eq!(row_column_position("img_0001"), None);
        assert_eq!(row_column_position("0001"), None);
        assert_eq!(row_column_position("a1_b2_x"), None);
    }

    fn folder(names: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for n in names {
            std::fs::write(dir.path().join(n), b"").unwrap();
        }
        dir
    }

    fn names(v: &FolderViews) -> Vec<String> {
        v.files.iter().map(|f| f.file_name().unwrap().to_string_lossy().into_owned()).collect()
    }

    #[test]
    fn a_folder_without_images_says_so() {
        for names in [&[][..], &["notes.txt", "scene.npy"][..]] {
            let d = folder(names);
            for grid in [None, Some((2, 2))] {
                let err = find_views(d.path(), grid).unwrap_err().to_string();
                assert!(err.contains("holds no view images (files named .png, .jpg"), "{err}");
                assert!(!err.contains("--grid"), "{err}");
            }
        }
    }

    #[test]
    fn folders_are_recognised_and_grids_checked() {
        let hci: Vec<String> = (0..9).map(|i| format!("input_Cam{i:03}.png")).collect();
        let mut with_extra: Vec<&str> = hci.iter().map(String::as_str).collect();
        with_extra.push("valid_mask.png");
        let d = folder(&with_extra);
        let v = find_views(d.path(), None).unwrap();
        assert_eq!((v.layout, v.grid, v.files.len()), (Layout::Hci, (3, 3), 9));
        assert_eq!(find_views(d.path(), Some((1, 9))).unwrap().grid, (1, 9));
        assert!(find_views(d.path(), Some((2, 2))).is_err());

        let d = folder(&["out_01_00_1.5_-2.png", "out_00_01_0_0.png", "out_00_00_3_3.png", "out_01_01_2_2.png"]);
        let v = find_views(d.path(), None).unwrap();
        assert_eq!((v.layout, v.grid), (Layout::Stanford, (2, 2)));
        assert_eq!(names(&v), ["out_00_00_3_3.png", "out_00_01_0_0.png", "out_01_00_1.5_-2.png", "out_01_01_2_2.png"]);

        // Numbers compare as numbers: r10 comes after r2.
        let d = folder(&["r1_c1.png", "r1_c2.png", "r2_c1.png", "r2_c2.png", "r10_c1.png", "r10_c2.png"]);
        let err = find_views(d.path(), None).unwrap_err().to_string();
        assert!(err.contains("view (3, 1) is missing"), "{err}");
        let d = folder(&["r1_c1.png", "r1_c2.png", "r2_c1.png", "r2_c2.png", "r3_c1.png", "r3_c2.png"]);
        let v = find_views(d.path(), None).unwrap();
        assert_eq!((v.layout, v.grid), (Layout::RowColumn, (3, 2)));
        assert_eq!(names(&v)[2], "r2_c1.png");
        assert!(find_views(d.path(), Some((2, 3))).unwrap_err().to_string().contains("--grid says 2x3"));

        let d = folder(&["a.png", "b.png", "c.png", "d.png"]);
        assert!(find_views(d.path(), None).unwrap_err().to_string().contains("give --grid"));
        let v = find_views(d.path(), Some((2, 2))).unwrap();
        assert_eq!((v.layout, names(&v)[1].as_str()), (Layout::Sorted, "b.png"));
        assert!(find_views(d.path(), Some((3, 2))).unwrap_err().to_string().contains("--grid 3x2 needs 6"));
        let d = folder(&["r0_c0.png", "r0_c1.png", "r1_c0.png"]);
        let err = find_views(d.path(), None).unwrap_err().to_string();
        assert!(err.contains("but view (1, 1) is missing (3 views for a 2x2 grid); give --grid"), "{err}");
        let d = folder(&["x_1_1.png", "x_1_1.jpg"]);
        assert!(find_views(d.path(), None).unwrap_err().to_string().contains("both view (1, 1)"));
    }
}
