//! Little-endian and LEB128 varint reading and writing with bounds checks, the FNV-1a
//! checksum and the files' magic numbers: what the `.lfc` and `.lfd` readers share (and the
//! `.npy` reader, which names a `.lfc` or `.lfd` given in its place).

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

    /// An unsigned LEB128 varint of at most 64 bits.
    pub fn varint(&mut self) -> Result<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.take(1)?[0];
            v |= ((b & 0x7f) as u64) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(self.error("varint longer than 64 bits"))
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

pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

pub(crate) fn zigzag(v: i32) -> u64 {
    ((v << 1) ^ (v >> 31)) as u32 as u64
}

pub(crate) fn unzigzag(v: u64) -> i32 {
    ((v >> 1) as i32) ^ -((v & 1) as i32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_and_zigzag_round_trip() {
        let mut out = Vec::new();
        let values = [0u64, 1, 127, 128, 300, u32::MAX as u64, u64::MAX];
        values.iter().for_each(|&v| put_varint(&mut out, v));
        let mut r = ByteReader::new(&out, "test");
        for &v in &values {
            assert_eq!(r.varint().unwrap(), v);
        }
        r.finish().unwrap();
        for v in [0, 1, -1, 12345, -98765, i32::MAX, i32::MIN] {
            assert_eq!(unzigzag(zigzag(v)), v);
        }
        assert!(ByteReader::new(&[0x80, 0x80], "test").varint().is_err());
    }
}
