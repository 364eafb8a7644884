//! Little-endian reading with bounds checks, the FNV-1a checksum and the files' magic
//! numbers: what the `.lfc` and `.lfd` readers share (and the `.npy` reader, which names
//! a `.lfc` or `.lfd` given in its place).

use crate::error::{LfError, Result};

/// The first bytes of a `.lfc` file.
pub const LFC_MAGIC: &[u8; 4] = b"TLFC";
/// The first bytes of a `.lfd` file.
pub const LFD_MAGIC: &[u8; 4] = b"TLFD";

/// FNV-1a, 64 bit: the `.lfd` checksum.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}

/// Reads little-endian values and varints with bounds checks; every failure names the file
/// kind and the byte offset.
pub struct ByteReader<'a> {
    bytes: &'a [u8],
    pos: usize,
    what: &'static str,
    /// Offset of `bytes` in the whole input, for error messages.
    base: usize,
}

impl<'a> ByteReader<'a> {
    pub fn new(bytes: &'a [u8], what: &'static str) -> Self {
        ByteReader { bytes, pos: 0, what, base: 0 }
    }

    pub fn error(&self, message: impl std::fmt::Display) -> LfError {
        LfError::corrupt(self.what, format!("at byte {}: {message}", self.base + self.pos))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.bytes.len() - self.pos < n {
            return Err(self.error(format!("truncated (needs {n} more bytes, {} left)", self.bytes.len() - self.pos)));
        }
        let s = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    pub fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }

    pub fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }

    pub fn f32(&mut self) -> Result<f32> {
        Ok(f32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }

    pub fn f32s(&mut self, n: usize) -> Result<Vec<f32>> {
        let bytes = self.take(n.checked_mul(4).ok_or_else(|| self.error("size overflow"))?)?;
        Ok(bytes.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect())
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    /// Fails unless every byte was read.
    pub fn finish(&self) -> Result<()> {
        if self.pos != self.bytes.len() {
            return Err(self.error(format!("{} unexpected trailing bytes", self.bytes.len() - self.pos)));
        }
        Ok(())
    }
}
