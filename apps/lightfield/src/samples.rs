//! The samples of a light field: owned, or mapped from a float32 `.npy` file.
//!
//! Reading an 800 MB `.npy` into fresh memory costs a copy out of the page cache and a
//! zeroed page fault per 4 KiB of the destination; the encoder only reads the samples, so a
//! little-endian float32 file is mapped instead and its pages are shared with the page cache.
//! The map is private and copy-on-write: writing a sample changes this process's copy of its
//! page, never the user's file.
//!
//! A mapped file must not be truncated or rewritten by another program while it is mapped
//! (as with any memory-mapped reader, numpy's `mmap_mode` included): the samples are checked
//! once, when they are mapped.

use std::fmt;
use std::fs::File;
use std::ops::{Deref, DerefMut};

/// Samples in C order, f32 in [0, 1] once checked.
pub enum Samples {
    Owned(Vec<f32>),
    Mapped(memmap2::MmapMut),
}

impl Samples {
    /// Maps `count` float32 samples of `file` from byte `offset`, privately; `None` where the
    /// samples would not be 4-byte aligned in memory or the system refuses the map (the
    /// caller then reads them).
    pub fn map(file: &File, offset: u64, count: usize) -> Option<Samples> {
        if !offset.is_multiple_of(4) || count == 0 {
            return None;
        }
        let len = count.checked_mul(4)?;
        // SAFETY: the map is private (changes stay in this process) and the file was opened
        // as a regular file whose length was checked against `offset + len`; another program
        // truncating it while mapped is outside what any mapped reader can guard against
        // (the module documentation says so).
        let map = unsafe { memmap2::MmapOptions::new().offset(offset).len(len).map_copy(file) }.ok()?;
        // The map starts at a page boundary plus `offset % page`, so it is 4-byte aligned.
        bytemuck::try_cast_slice::<u8, f32>(&map).ok()?;
        Some(Samples::Mapped(map))
    }

    /// Whether the samples are a map of a file.
    pub fn is_mapped(&self) -> bool {
        matches!(self, Samples::Mapped(_))
    }
}

impl Deref for Samples {
    type Target = [f32];
    fn deref(&self) -> &[f32] {
        match self {
            Samples::Owned(v) => v,
            // Alignment and length were checked when mapped.
            Samples::Mapped(m) => bytemuck::cast_slice(m),
        }
    }
}

impl DerefMut for Samples {
    fn deref_mut(&mut self) -> &mut [f32] {
        match self {
            Samples::Owned(v) => v,
            Samples::Mapped(m) => bytemuck::cast_slice_mut(m),
        }
    }
}

impl From<Vec<f32>> for Samples {
    fn from(v: Vec<f32>) -> Samples {
        Samples::Owned(v)
    }
}

impl<'a> IntoIterator for &'a Samples {
    type Item = &'a f32;
    type IntoIter = std::slice::Iter<'a, f32>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl Clone for Samples {
    /// A clone owns its samples.
    fn clone(&self) -> Samples {
        Samples::Owned(self.to_vec())
    }
}

impl PartialEq for Samples {
    fn eq(&self, other: &Samples) -> bool {
        **self == **other
    }
}

impl PartialEq<Vec<f32>> for Samples {
    fn eq(&self, other: &Vec<f32>) -> bool {
        **self == other[..]
    }
}

impl fmt::Debug for Samples {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = if self.is_mapped() { "mapped" } else { "owned" };
        write!(f, "Samples({} {kind})", self.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A private map reads the file's floats at an offset that is not a page multiple;
    /// writing through it leaves the file as it was.
    #[test]
    fn a_private_map_reads_the_file_and_never_writes_it() {
        let (_dir, path) = kit::testing::temp_path("f.bin");
        let floats: Vec<f32> = (0..3000).map(|i| i as f32 * 0.25).collect();
        let mut bytes = vec![7u8; 128];
        bytes.extend(floats.iter().flat_map(|x| x.to_le_bytes()));
        std::fs::write(&path, &bytes).unwrap();
        let file = File::open(&path).unwrap();
        let mut s = Samples::map(&file, 128, floats.len()).expect("mappable");
        assert!(s.is_mapped());
        assert_eq!(s, floats);
        s[5] = -1.0;
        assert_eq!(s[5], -1.0);
        assert_eq!(std::fs::read(&path).unwrap(), bytes);
        assert_eq!(s.clone(), s);
        assert!(!s.clone().is_mapped());
        assert!(Samples::map(&file, 130, 10).is_none(), "unaligned");
    }
}
