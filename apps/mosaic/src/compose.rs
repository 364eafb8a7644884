//! From a target image and a tile folder to a mosaic: patch features over the grid, the tile
//! index, the distance matrix (GPU or CPU), a solver, and the rendered image.

use std::path::Path;
use std::time::Instant;

use engine::Context;
use kit::Backend;

use crate::colour::Metric;
use crate::cpu::distance::distance_cpu_with;
use crate::error::{MosaicError, Result};
use crate::features::{region_features, Features};
use crate::image_ops::to_rgb;
use crate::index::{self, IndexParams, IndexStats, TileIndex};
use crate::matrix::DistanceMatrix;
use crate::quadtree::{self, Block, Sizes};
use crate::render::{self, Cells, Layout};
use crate::solve::{self, Method, SolveOptions, Solved};
use crate::tint::{self, ColourStats};

/// Thumbnail width stored in the tile index (height follows the patch aspect).
pub const THUMB_PX: usize = 64;
/// The most elongated patch (width / height or height / width): thumbnails stay at most
/// 64 x 1024.
pub const MAX_ASPECT: f64 = 16.0;

/// The largest side of a grid or cell count: products of two stay far inside 64 bits.
const MAX_DIM: usize = 65536;

/// A grid or cell count "AxB", each in 1..=65536.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dims(pub usize, pub usize);

impl std::str::FromStr for Dims {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Dims, String> {
        let (a, b) = s.split_once(['x', 'X']).ok_or_else(|| format!("{s:?} is not of the form AxB"))?;
        let parse = |v: &str| v.trim().parse::<usize>().map_err(|_| format!("{s:?}: {v:?} is not a whole number"));
        let (a, b) = (parse(a)?, parse(b)?);
        if !(1..=MAX_DIM).contains(&a) || !(1..=MAX_DIM).contains(&b) {
            return Err(format!("{s:?}: both numbers must be between 1 and {MAX_DIM}"));
        }
        Ok(Dims(a, b))
    }
}

/// A rectangle (x, y, w, h) in target pixels.
pub type Rect = (usize, usize, usize, usize);

/// How the target is cut into patches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CellLayout {
    /// A COLSxROWS grid of equal patches (`--grid`).
    Grid(Dims),
    /// Square cells of a quadtree (`--layout adaptive`), large where the target is flat.
    Adaptive(Sizes),
}

/// A target cut into patches, and the tile library indexed for that patch shape.
pub struct Problem {
    /// The grid the mosaic is drawn on: the patches' grid, or for adaptive cells the grid of
    /// the smallest cells.
    pub grid: Dims,
    /// Each patch's rectangle (x, y, w, h) in target pixels, row-major.
    pub rects: Vec<Rect>,
    /// The adaptive cells, one per patch, on `grid` (`None` for a grid layout).
    pub blocks: Option<Vec<Block>>,
    pub patches: Features,
    pub tiles: TileIndex,
    pub index_stats: IndexStats,
    /// How patches and tiles are compared.
    pub metric: Metric,
    /// Patch width / height in target pixels.
    pub aspect: f64,
    /// Each patch's colour mean and deviation (for `--tint`).
    pub patch_colours: Vec<ColourStats>,
}

/// How the mosaic is drawn.
#[derive(Clone, Copy, Debug)]
pub struct Look {
    /// Width of one cell in pixels (height follows the patch aspect).
    pub tile_px: usize,
    /// `--tint`: 0 shows tiles as they are, 1 gives each the mean and deviation of its cell.
    pub tint: f32,
}

/// Thumbnail size for a patch aspect: THUMB_PX wide.
pub fn thumb_size(aspect: f64) -> (usize, usize) {
    (THUMB_PX, ((THUMB_PX as f64 / aspect).round() as usize).max(1))
}

/// The mosaic problem's inputs: a target cut into a grid of patches, and a tile folder.
#[derive(Clone, Debug)]
pub struct ProblemSpec<'a> {
    pub target: &'a Path,
    pub tiles: &'a Path,
    pub layout: CellLayout,
    pub cells: Dims,
    /// How patches and tiles are compared (`--metric`).
    pub metric: Metric,
    /// The folder of the tile index cache (`None`: no cache).
    pub cache_dir: Option<&'a Path>,
}

/// Loads the target, computes its patch features and indexes the tiles (warnings to `warn`).
pub fn prepare(spec: &ProblemSpec, warn: impl FnMut(&str)) -> Result<Problem> {
    let ProblemSpec { target, tiles, layout, cells, metric, cache_dir } = *spec;
    let img = kit::image::load(target)?;
    let rgb = to_rgb(&img);
    let (grid, rects, blocks, aspect) = match layout {
        CellLayout::Grid(grid) => {
            let (rects, aspect) = grid_rects(target, &img, grid, cells)?;
            (grid, rects, None, aspect)
        }
        CellLayout::Adaptive(sizes) => {
            sizes.check()?;
            if img.width < sizes.min || img.height < sizes.min {
                return Err(MosaicError::TargetTooSmall { width: img.width, height: img.height, min: sizes.min });
            }
            if sizes.min < cells.0 || sizes.min < cells.1 {
                return Err(MosaicError::MinCellTooSmall { min: sizes.min, cells: (cells.0, cells.1) });
            }
            let blocks = quadtree::split(rgb.as_slice(), (img.width, img.height), sizes, (cells.0, cells.1));
            let m = sizes.min;
            let rects = blocks.iter().map(|b| (b.col * m, b.row * m, b.size * m, b.size * m)).collect();
            (Dims(img.width / m, img.height / m), rects, Some(blocks), 1.0)
        }
    };
    let mut patches = Features::new((cells.0, cells.1));
    let mut patch_colours = Vec::with_capacity(rects.len());
    for &rect in &rects {
        region_features(rgb.as_slice(), img.width, rect, (cells.0, cells.1), &mut patches.data);
        patch_colours.push(tint::of_region(&rgb, img.width, rect));
    }
    crate::features::check(&patches.data).map_err(|e| MosaicError::file(target, e))?;
    let params = IndexParams { cells: (cells.0, cells.1), thumb: thumb_size(aspect) };
    // A folder without a readable tile is an error of the index, naming it.
    let (tiles, index_stats) = index::index(tiles, &params, cache_dir, warn)?;
    Ok(Problem { grid, rects, blocks, patches, tiles, index_stats, metric, aspect, patch_colours })
}

/// The patches of a `grid` over the target `img` (row-major rectangles) and their aspect,
/// once the grid fits the image and makes patches of a usable aspect.
fn grid_rects(target: &Path, img: &kit::image::ImageF32, grid: Dims, cells: Dims) -> Result<(Vec<Rect>, f64)> {
    if img.width < grid.0 * cells.0 || img.height < grid.1 * cells.1 {
        let largest = (img.width / cells.0, img.height / cells.1);
        let hint = if largest.0 == 0 || largest.1 == 0 {
            "the target holds not even one (fewer --cells make smaller patches possible)".to_string()
        } else {
            format!("the largest grid is {}x{}", largest.0, largest.1)
        };
        return Err(MosaicError::file(
            target,
            format!(
                "{}x{} is too small for a {}x{} grid of {}x{} feature cells: each patch needs at least {}x{} pixels; \
                 {hint}",
                img.width, img.height, grid.0, grid.1, cells.0, cells.1, cells.0, cells.1
            ),
        ));
    }
    let mut rects = Vec::with_capacity(grid.0 * grid.1);
    for r in 0..grid.1 {
        let (y0, y1) = (r * img.height / grid.1, (r + 1) * img.height / grid.1);
        for c in 0..grid.0 {
            let (x0, x1) = (c * img.width / grid.0, (c + 1) * img.width / grid.0);
            rects.push((x0, y0, x1 - x0, y1 - y0));
        }
    }
    let aspect = (img.width as f64 / grid.0 as f64) / (img.height as f64 / grid.1 as f64);
    if !(1.0 / MAX_ASPECT..=MAX_ASPECT).contains(&aspect) {
        let (w, h) = (img.width as f64, img.height as f64);
        // Keep the other side of the grid and make the patches about square, where that fits.
        let square = if aspect > 1.0 {
            Dims(((grid.1 as f64 * w / h).round() as usize).clamp(1, (img.width / cells.0).max(1)), grid.1)
        } else {
            Dims(grid.0, ((grid.0 as f64 * h / w).round() as usize).clamp(1, (img.height / cells.1).max(1)))
        };
        let square_aspect = (w / square.0 as f64) / (h / square.1 as f64);
        let hint = if (1.0 / MAX_ASPECT..=MAX_ASPECT).contains(&square_aspect) {
            format!("; --grid {}x{} makes them about square", square.0, square.1)
        } else {
            String::new()
        };
        return Err(MosaicError::file(
            target,
            format!(
                "{}x{} cut into a {}x{} grid makes patches of aspect {aspect:.4} (width / height); it must be \
                 within 1/{MAX_ASPECT} .. {MAX_ASPECT}{hint}",
                img.width, img.height, grid.0, grid.1
            ),
        ));
    }
    Ok((rects, aspect))
}

impl Problem {
    /// The distance matrix by the problem's metric on the GPU (`ctx`) or the CPU, with a
    /// progress bar.
    pub fn distances(&self, backend: Backend, ctx: Option<&Context>) -> Result<DistanceMatrix> {
        let (m, n) = (self.patches.len(), self.tiles.len());
        // D in f64, and the f32 copy the GPU path downloads.
        let bytes = (m as u64).saturating_mul(n as u64).saturating_mul(12);
        kit::budget::check(bytes, format!("the {m} x {n} distance matrix"))?;
        let (patches, tiles) = (self.metric.features(&self.patches), self.metric.features(&self.tiles.features));
        let formula = self.metric.formula();
        let data = match solve::device(backend, ctx)? {
            Some(ctx) => {
                let bar = kit::progress::bar(m as u64, "distances");
                let blocks = crate::gpu::distance::BLOCK_BYTES;
                let d = crate::gpu::distance::distance_blocks(ctx, &patches, &tiles, formula, blocks, &bar)?;
                bar.finish_and_clear();
                d.into_iter().map(f64::from).collect()
            }
            None => {
                let bar = kit::progress::bar(m as u64, "distances");
                let d = distance_cpu_with(&patches, &tiles, formula, &bar);
                bar.finish_and_clear();
                d
            }
        };
        DistanceMatrix::new(m, n, data)
    }

    /// Refuses a grid the tiles cannot cover with `repeat` uses each (before any distance
    /// is computed), naming the smallest repeat that works.
    pub fn check_capacity(&self, repeat: usize) -> Result<()> {
        crate::matrix::check_capacity(self.patches.len(), self.tiles.len(), repeat)
    }

    /// The mosaic's layout for cells `tile_px` wide.
    pub fn layout(&self, tile_px: usize) -> Layout {
        Layout {
            cols: self.grid.0,
            rows: self.grid.1,
            cell: (tile_px, ((tile_px as f64 / self.aspect).round() as usize).max(1)),
            thumb: self.tiles.params.thumb,
        }
    }

    /// [`Problem::layout`] once the image fits the memory budget. Callers check it before
    /// computing distances too, so a mosaic too large fails at once, not after the solve.
    pub fn checked_layout(&self, tile_px: usize) -> Result<Layout> {
        if tile_px == 0 {
            return Err(MosaicError::InvalidInput("--tile-px must be >= 1".into()));
        }
        let layout = self.layout(tile_px);
        // The image, and as much again for the encoder's conversions.
        let bytes = (layout.width() as u64).saturating_mul(layout.height() as u64).saturating_mul(6);
        kit::budget::check(bytes, format!("the {}x{} mosaic", layout.width(), layout.height()))?;
        Ok(layout)
    }

    /// Renders the mosaic for `assignment` as `look` says, on the GPU or the CPU. Each used
    /// thumbnail is passed once, however many cells show it.
    pub fn render(
        &self,
        assignment: &[usize],
        look: &Look,
        backend: Backend,
        ctx: Option<&Context>,
    ) -> Result<(Layout, Vec<u8>)> {
        let layout = self.checked_layout(look.tile_px)?;
        let mut local = vec![u32::MAX; self.tiles.len()];
        let mut thumbs = Vec::new();
        let mut tile_colours = Vec::new();
        let tile: Vec<u32> = assignment
            .iter()
            .map(|&j| {
                if local[j] == u32::MAX {
                    local[j] = tile_colours.len() as u32;
                    thumbs.extend_from_slice(self.tiles.thumb(j));
                    tile_colours.push(tint::of_rgb8(self.tiles.thumb(j)));
                }
                local[j]
            })
            .collect();
        let tint: Vec<render::Tint> = tile
            .iter()
            .zip(&self.patch_colours)
            .map(|(&t, cell)| tint::transfer(&tile_colours[t as usize], cell, look.tint))
            .collect();
        let (thumbs, tile, tint) = match &self.blocks {
            None => (thumbs, tile, tint),
            Some(blocks) => self.split_cells(blocks, assignment, &tint)?,
        };
        let cells = Cells { thumbs: &thumbs, tile: &tile, tint: &tint };
        let rgb = match solve::device(backend, ctx)? {
            Some(ctx) => crate::gpu::render::render_gpu(ctx, &layout, &cells)?,
            None => crate::cpu::render::render_cpu(&layout, &cells)?,
        };
        Ok((layout, rgb))
    }
}

impl Problem {
    /// What each cell of the drawing grid shows when the patches are adaptive `blocks`: a
    /// cell of a one-block patch shows its tile's thumbnail, a cell of a larger patch the part
    /// of the thumbnail over it (resampled bilinearly to a thumbnail's size), so the patch
    /// shows the whole tile; every cell takes its patch's tint.
    fn split_cells(
        &self,
        blocks: &[Block],
        assignment: &[usize],
        patch_tint: &[render::Tint],
    ) -> Result<(Vec<u8>, Vec<u32>, Vec<render::Tint>)> {
        let (cols, rows) = (self.grid.0, self.grid.1);
        let thumb = self.tiles.params.thumb;
        let bytes = (cols as u64 * rows as u64).saturating_mul(thumb.0 as u64 * thumb.1 as u64 * 3);
        kit::budget::check(bytes, format!("the {cols}x{rows} cells' thumbnails"))?;
        let mut owner = vec![(0usize, 0usize, 0usize); cols * rows];
        for (k, b) in blocks.iter().enumerate() {
            for dr in 0..b.size {
                for dc in 0..b.size {
                    owner[(b.row + dr) * cols + b.col + dc] = (k, dc, dr);
                }
            }
        }
        let mut whole = vec![u32::MAX; self.tiles.len()];
        let (mut thumbs, mut tile, mut tint) = (Vec::new(), Vec::with_capacity(owner.len()), Vec::new());
        let mut count = 0u32;
        for &(k, a, b) in &owner {
            let (j, size) = (assignment[k], blocks[k].size);
            let id = if size == 1 && whole[j] != u32::MAX {
                whole[j]
            } else {
                if size == 1 {
                    whole[j] = count;
                    thumbs.extend_from_slice(self.tiles.thumb(j));
                } else {
                    thumbs.extend(part_of_thumb(self.tiles.thumb(j), thumb, size, (a, b)));
                }
                count += 1;
                count - 1
            };
            tile.push(id);
            tint.push(patch_tint[k]);
        }
        Ok((thumbs, tile, tint))
    }
}

/// Part (a, b) of a `size` x `size` split of an RGB8 thumbnail, resampled bilinearly (pixel
/// centres aligned, edges clamped) to the thumbnail's size.
fn part_of_thumb(src: &[u8], (tw, th): (usize, usize), size: usize, (a, b): (usize, usize)) -> Vec<u8> {
    let texel = |x: i64, y: i64, c: usize| {
        let (x, y) = (x.clamp(0, tw as i64 - 1) as usize, y.clamp(0, th as i64 - 1) as usize);
        src[(y * tw + x) * 3 + c] as f32
    };
    let mut out = Vec::with_capacity(tw * th * 3);
    for y in 0..th {
        let sy = ((b * th) as f32 + y as f32 + 0.5) / size as f32 - 0.5;
        let (fy, ay) = (sy.floor(), sy - sy.floor());
        for x in 0..tw {
            let sx = ((a * tw) as f32 + x as f32 + 0.5) / size as f32 - 0.5;
            let (fx, ax) = (sx.floor(), sx - sx.floor());
            let (x0, y0) = (fx as i64, fy as i64);
            for c in 0..3 {
                let top = texel(x0, y0, c) * (1.0 - ax) + texel(x0 + 1, y0, c) * ax;
                let bottom = texel(x0, y0 + 1, c) * (1.0 - ax) + texel(x0 + 1, y0 + 1, c) * ax;
                out.push((top * (1.0 - ay) + bottom * ay).round().clamp(0.0, 255.0) as u8);
            }
        }
    }
    out
}

/// A solved and rendered mosaic.
pub struct Built {
    pub solved: Solved,
    pub layout: Layout,
    pub rgb: Vec<u8>,
    /// Milliseconds spent rendering.
    pub render_ms: f64,
}

/// Solves `d` with `method` and renders the result as `look` says.
pub fn build(
    problem: &Problem,
    d: &DistanceMatrix,
    method: Method,
    options: &SolveOptions,
    look: &Look,
    ctx: Option<&Context>,
) -> Result<Built> {
    let solved = solve::run(method, d, options, ctx)?;
    let start = Instant::now();
    let (layout, rgb) = problem.render(&solved.assignment, look, options.backend, ctx)?;
    Ok(Built { solved, layout, rgb, render_ms: start.elapsed().as_secs_f64() * 1e3 })
}
