//! Patch shapes and the patch grid of a light field: which samples a patch covers, how
//! patches are gathered (padding past the edges by repeating the last row, column or view)
//! and scattered back (cropping the padding away).
//!
//! A patch is a 5D tensor stored in the light field's own axis order, slowest first:
//! view row (mu), view column (mv), pixel row (my), pixel column (mx), colour (3). Patch
//! mode `n` is that axis; [`PatchShape::modes`] lists their sizes.

use rayon::prelude::*;

use crate::error::{LfError, Result};
use crate::lightfield::{LightField, COLOURS};

/// Number of patch modes.
pub const MODES: usize = 5;
/// Largest size of one patch mode the GPU kernels accept (fibers are held in registers).
pub const MAX_MODE: usize = 16;

/// The size of a patch: `my x mx` pixels times `mu x mv` views, all three colours.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PatchShape {
    pub my: usize,
    pub mx: usize,
    pub mu: usize,
    pub mv: usize,
}

impl PatchShape {
    /// The paper's patch: 5 x 5 pixels, 8 x 8 views.
    pub const PAPER: PatchShape = PatchShape { my: 5, mx: 5, mu: 8, mv: 8 };

    /// Parses `HxWxUxV` (pixels then views) or `HxWx3xUxV` (with the colour count).
    pub fn parse(text: &str) -> Result<PatchShape> {
        let parts: Vec<usize> = text
            .split('x')
            .map(|p| p.trim().parse::<usize>())
            .collect::<Result<_, _>>()
            .map_err(|_| LfError::PatchSyntax { text: text.into() })?;
        let shape = match parts.as_slice() {
            [my, mx, mu, mv] => PatchShape { my: *my, mx: *mx, mu: *mu, mv: *mv },
            [my, mx, c, mu, mv] if *c == COLOURS => PatchShape { my: *my, mx: *mx, mu: *mu, mv: *mv },
            _ => return Err(LfError::PatchSyntax { text: text.into() }),
        };
        shape.check()?;
        Ok(shape)
    }

    /// Checks that every mode has a size in 1..=MAX_MODE.
    pub fn check(&self) -> Result<()> {
        if self.modes().iter().any(|&m| m == 0 || m > MAX_MODE) {
            return Err(LfError::PatchSize { shape: self.to_string(), max: MAX_MODE });
        }
        Ok(())
    }

    /// Mode sizes in storage order: view row, view column, pixel row, pixel column, colour.
    pub fn modes(&self) -> [usize; MODES] {
        [self.mu, self.mv, self.my, self.mx, COLOURS]
    }

    /// Samples in one patch.
    pub fn len(&self) -> usize {
        self.modes().iter().product()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Distance in the patch's linear storage between neighbours along each mode.
    pub fn strides(&self) -> [usize; MODES] {
        let m = self.modes();
        let mut s = [1; MODES];
        for n in (0..MODES - 1).rev() {
            s[n] = s[n + 1] * m[n + 1];
        }
        s
    }
}

impl std::fmt::Display for PatchShape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}x{}x{}x{}x{}", self.my, self.mx, COLOURS, self.mu, self.mv)
    }
}

/// Where patches are gathered from: rows of views, held in one array ([`LightField`]) or
/// still arriving ([`crate::npy_bands::Bands`]).
pub trait PatchSource: Sync {
    /// (U, V, H, W).
    fn size(&self) -> [usize; 4];
    /// Row `y` of view (u, v): W x 3 samples. Only for rows of patches made [`ready`].
    ///
    /// [`ready`]: PatchSource::ready
    fn row(&self, u: usize, v: usize, y: usize) -> &[f32];
    /// Blocks until patches `..end` can be gathered (a source still being read waits).
    fn ready(&self, _end: usize) -> Result<()> {
        Ok(())
    }
}

impl PatchSource for LightField {
    fn size(&self) -> [usize; 4] {
        [self.u, self.v, self.h, self.w]
    }

    fn row(&self, u: usize, v: usize, y: usize) -> &[f32] {
        let i = self.index(u, v, y, 0);
        &self.data[i..i + self.w * COLOURS]
    }
}

/// How a light field of size (u, v, h, w) is tiled by patches of one shape (the last
/// patch along each axis may reach past the edge).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PatchGrid {
    pub shape: PatchShape,
    /// Light-field size: views (u, v), pixels (h, w).
    pub size: [usize; 4],
    /// Patches along u, v, y, x.
    pub count: [usize; 4],
}

impl PatchGrid {
    pub fn new(shape: PatchShape, u: usize, v: usize, h: usize, w: usize) -> PatchGrid {
        let count = [u.div_ceil(shape.mu), v.div_ceil(shape.mv), h.div_ceil(shape.my), w.div_ceil(shape.mx)];
        PatchGrid { shape, size: [u, v, h, w], count }
    }

    /// Samples the patches cover, padding included, over the light field's samples.
    pub fn coded_over_real(&self) -> f64 {
        let coded = self.len() * self.shape.len();
        coded as f64 / (self.size.iter().product::<usize>() * COLOURS) as f64
    }

    /// A warning when the patch's views do not tile the view grid and the padding makes the
    /// patches cover at least a quarter more samples than the light field holds (a 9 x 9
    /// grid in 8 x 8-view patches codes 16 x 16 views): every padded view costs bits, and
    /// a border patch is quantised more finely (its step scales with its real samples).
    pub fn padding_warning(&self) -> Option<String> {
        let [u, v, _, _] = self.size;
        let ratio = self.coded_over_real();
        if ratio < 1.25 || (u.is_multiple_of(self.shape.mu) && v.is_multiple_of(self.shape.mv)) {
            return None;
        }
        let fit = |n: usize, m: usize| if n.is_multiple_of(m) || n > MAX_MODE { m } else { n };
        let better = PatchShape { mu: fit(u, self.shape.mu), mv: fit(v, self.shape.mv), ..self.shape };
        Some(format!(
            "{}x{}-view patches do not tile the {u}x{v} views: the patches cover {ratio:.2}x the light field's \
             samples (padding, which costs bits); a patch whose views divide the grid, e.g. --patch {}x{}x{}x{}, \
             covers {:.2}x",
            self.shape.mu,
            self.shape.mv,
            better.my,
            better.mx,
            better.mu,
            better.mv,
            PatchGrid::new(better, u, v, self.size[2], self.size[3]).coded_over_real()
        ))
    }

    /// Number of patches.
    pub fn len(&self) -> usize {
        self.count.iter().product()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The first light-field coordinate (u, v, y, x) patch `p` covers.
    pub fn origin(&self, p: usize) -> [usize; 4] {
        let [_, cv, cy, cx] = self.count;
        let bx = p % cx;
        let by = (p / cx) % cy;
        let bv = (p / (cx * cy)) % cv;
        let bu = p / (cx * cy * cv);
        [bu * self.shape.mu, bv * self.shape.mv, by * self.shape.my, bx * self.shape.mx]
    }

    /// Extent of patch `p` inside the light field along (u, v, y, x).
    pub fn valid_extent(&self, p: usize) -> [usize; 4] {
        let o = self.origin(p);
        let m = [self.shape.mu, self.shape.mv, self.shape.my, self.shape.mx];
        std::array::from_fn(|a| m[a].min(self.size[a] - o[a]))
    }

    /// Samples of patch `p` that lie inside the light field (the others are padding).
    pub fn valid_samples(&self, p: usize) -> usize {
        self.valid_extent(p).iter().product::<usize>() * COLOURS
    }

    /// Patches `range` in patch-major order, `shape.len()` samples each; samples past the
    /// edge repeat the nearest one inside (padding that costs few coefficients).
    pub fn gather(&self, lf: &LightField, range: std::ops::Range<usize>) -> Vec<f32> {
        let mut out = vec![0f32; range.len() * self.shape.len()];
        self.gather_into(lf, range, &mut out);
        out
    }

    /// [`PatchGrid::gather`] into `out` (exactly `range.len() * shape.len()` samples).
    pub fn gather_into(&self, lf: &LightField, range: std::ops::Range<usize>, out: &mut [f32]) {
        let plen = self.shape.len();
        out.par_chunks_mut(plen).zip(range).for_each(|(dst, p)| self.gather_patch(lf, p, dst));
    }

    /// Patch `p` into `dst` (`shape.len()` samples), padded as in [`PatchGrid::gather`].
    pub fn gather_patch<S: PatchSource + ?Sized>(&self, src: &S, p: usize, dst: &mut [f32]) {
        let o = self.origin(p);
        let s = self.shape;
        let [nu, nv, h, w] = self.size;
        let mut i = 0;
        for du in 0..s.mu {
            let u = (o[0] + du).min(nu - 1);
            for dv in 0..s.mv {
                let v = (o[1] + dv).min(nv - 1);
                for dy in 0..s.my {
                    let row = src.row(u, v, (o[2] + dy).min(h - 1));
                    // The columns inside in one copy, then the last one repeated.
                    let inside = s.mx.min(w - o[3]);
                    dst[i..i + inside * COLOURS].copy_from_slice(&row[o[3] * COLOURS..(o[3] + inside) * COLOURS]);
                    i += inside * COLOURS;
                    for _ in inside..s.mx {
                        dst.copy_within(i - COLOURS..i, i);
                        i += COLOURS;
                    }
                }
            }
        }
    }

    /// Writes patches `range` (patch-major, as from [`PatchGrid::gather`]) into `lf`,
    /// dropping the samples that fall outside it. Parallel over views: each view is a
    /// contiguous slab of `lf` that only its own thread writes, and the patches covering it
    /// (one view block of the grid) are a contiguous run of patch indices.
    pub fn scatter(&self, patches: &[f32], range: std::ops::Range<usize>, lf: &mut LightField) {
        let plen = self.shape.len();
        let s = self.shape;
        let (nv, h, w) = (lf.v, lf.h, lf.w);
        let [_, cv, cy, cx] = self.count;
        let block = cy * cx;
        lf.data.par_chunks_mut(h * w * COLOURS).enumerate().for_each(|(view, out)| {
            let (u, v) = (view / nv, view % nv);
            let first = ((u / s.mu) * cv + v / s.mv) * block;
            let (du, dv) = (u % s.mu, v % s.mv);
            for p in first.max(range.start)..(first + block).min(range.end) {
                let src = &patches[(p - range.start) * plen..(p - range.start + 1) * plen];
                let o = self.origin(p);
                let e = self.valid_extent(p);
                for dy in 0..e[2] {
                    let row = ((du * s.mv + dv) * s.my + dy) * s.mx * COLOURS;
                    let dst = ((o[2] + dy) * w + o[3]) * COLOURS;
                    let n = e[3] * COLOURS;
                    out[dst..dst + n].copy_from_slice(&src[row..row + n]);
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn view_padding_is_measured_and_warned_about_with_a_patch_that_tiles() {
        // 9 x 9 views of 128 x 128 in 8 x 8-view patches of 5 x 5 pixels: 16 x 16 views of
        // 130 x 130 coded.
        let grid = PatchGrid::new(PatchShape::PAPER, 9, 9, 128, 128);
        let expected = (16.0 * 16.0 * 130.0 * 130.0) / (81.0 * 128.0 * 128.0);
        assert!((grid.coded_over_real() - expected).abs() < 1e-12);
        let w = grid.padding_warning().expect("3.3x the samples");
        assert!(w.contains("9x9 views") && w.contains("--patch 5x5x9x9"), "{w}");
        // Views that tile: no warning, whatever the pixel padding.
        assert_eq!(
            PatchGrid::new(PatchShape { mu: 9, mv: 9, ..PatchShape::PAPER }, 9, 9, 128, 128).padding_warning(),
            None
        );
        assert_eq!(PatchGrid::new(PatchShape::PAPER, 8, 16, 100, 100).padding_warning(), None);
        // 33 views in 16-view patches code 48: a warning, though no patch mode can hold 33.
        let big = PatchShape { mu: 16, mv: 1, ..PatchShape::PAPER };
        let w = PatchGrid::new(big, 33, 1, 10, 10).padding_warning().expect("48 of 33 views");
        assert!(w.contains("--patch 5x5x16x1"), "{w}");
    }

    #[test]
    fn parses_shapes_and_strides() {
        let s = PatchShape::parse("5x5x8x8").unwrap();
        assert_eq!(s, PatchShape::PAPER);
        assert_eq!(PatchShape::parse("5x4x3x2x3").unwrap(), PatchShape { my: 5, mx: 4, mu: 2, mv: 3 });
        assert_eq!(s.len(), 4800);
        assert_eq!(s.strides(), [600, 75, 15, 3, 1]);
        assert!(PatchShape::parse("5x5x8").is_err());
        assert!(PatchShape::parse("5x5x4x8x8").is_err());
        assert!(PatchShape::parse("0x5x8x8").is_err());
        assert!(PatchShape::parse("axbxcxd").is_err());
    }

    #[test]
    fn gather_pads_and_scatter_crops() {
        let (u, v, h, w) = (3, 2, 7, 4);
        let data: Vec<f32> = (0..u * v * h * w * 3).map(|i| i as f32).collect();
        let lf = LightField::new(u, v, h, w, data).unwrap();
        let grid = PatchGrid::new(PatchShape { my: 3, mx: 3, mu: 2, mv: 2 }, u, v, h, w);
        assert_eq!(grid.count, [2, 1, 3, 2]);
        let patches = grid.gather(&lf, 0..grid.len());
        // The last patch along x repeats column 3 in its padded columns.
        let p = grid.len() - 1;
        assert_eq!(grid.valid_extent(p), [1, 2, 1, 1]);
        assert_eq!(grid.valid_samples(p), 6);
        let patch = &patches[p * 108..(p + 1) * 108];
        assert_eq!(patch[0..3], patch[3..6]);
        let mut back = LightField::new(u, v, h, w, vec![0.0; lf.data.len()]).unwrap();
        grid.scatter(&patches, 0..grid.len(), &mut back);
        assert_eq!(back.data, lf.data);
    }
}
