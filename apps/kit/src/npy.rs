//! `.npy` arrays (NumPy's format, versions 1-3), read with every declared size checked.
//!
//! The header's shape is only a claim: the reader computes the data's size in checked
//! arithmetic, requires the file to hold exactly that many bytes after the header, and checks
//! the budget before it allocates. (ndarray-npy allocates from the shape first, so a
//! 128-byte file declaring 2^38 floats aborted the process; hence this reader.) Values must be
//! finite and, for float32 results, within f32's range.

use std::io::{Read, Write};
use std::path::Path;

use crate::error::{KitError, Result};

const MAGIC: &[u8] = b"\x93NUMPY";
/// Headers are a short Python dict; NumPy itself writes them under 4 KiB.
const MAX_HEADER: usize = 1 << 16;
const MAX_DIMS: usize = 16;

/// The element type a `.npy` file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NpyDtype {
    F32,
    F64,
    U8,
    U16,
}

impl NpyDtype {
    /// Bytes per element.
    pub fn size(self) -> u64 {
        match self {
            NpyDtype::U8 => 1,
            NpyDtype::U16 => 2,
            NpyDtype::F32 => 4,
            NpyDtype::F64 => 8,
        }
    }

    /// The value of one element's bytes (`size()` of them), without loss.
    pub fn decode(self, element: &[u8], big_endian: bool) -> f64 {
        let mut b = [0u8; 8];
        let size = self.size() as usize;
        b[..size].copy_from_slice(&element[..size]);
        if big_endian {
            b[..size].reverse();
        }
        match self {
            NpyDtype::U8 => b[0] as f64,
            NpyDtype::U16 => u16::from_le_bytes([b[0], b[1]]) as f64,
            NpyDtype::F32 => f32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64,
            NpyDtype::F64 => f64::from_le_bytes(b),
        }
    }
}

/// What a `.npy` header declares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NpyHeader {
    pub dtype: NpyDtype,
    pub big_endian: bool,
    pub shape: Vec<usize>,
    /// Where the data starts.
    pub offset: u64,
}

/// A `.npy` array read as f32 in C order. uint8 and uint16 are returned as stored (0..255,
/// 0..65535); the caller decides how to scale them.
#[derive(Clone, Debug)]
pub struct NpyArray {
    pub shape: Vec<usize>,
    pub data: Vec<f32>,
    pub dtype: NpyDtype,
}

fn bad(path: &Path, message: impl std::fmt::Display) -> KitError {
    KitError::file(path, format!("not a valid .npy file: {message}"))
}

/// The value of `key` in the header dict, as the text up to its end (`,` or `}` outside
/// brackets).
fn dict_value<'a>(dict: &'a str, key: &str) -> Option<&'a str> {
    let at = dict.find(&format!("'{key}'")).or_else(|| dict.find(&format!("\"{key}\"")))?;
    let rest = dict[at + key.len() + 2..].trim_start().strip_prefix(':')?.trim_start();
    let mut depth = 0i32;
    for (i, c) in rest.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(&rest[..=i]);
                }
            }
            ',' | '}' if depth == 0 => return Some(rest[..i].trim()),
            _ => {}
        }
    }
    None
}

/// Parses the header of the `.npy` bytes at the start of `head`.
fn parse_header(path: &Path, head: &[u8]) -> Result<NpyHeader> {
    if head.len() < 6 || &head[..6] != MAGIC {
        return Err(bad(path, "no \\x93NUMPY magic"));
    }
    if head.len() < 10 {
        return Err(bad(path, format!("cut short: {} bytes, where the header alone takes 10 or more", head.len())));
    }
    let (len, start) = match head[6] {
        1 => (u16::from_le_bytes([head[8], head[9]]) as usize, 10),
        2 | 3 if head.len() >= 12 => (u32::from_le_bytes([head[8], head[9], head[10], head[11]]) as usize, 12),
        v => return Err(bad(path, format!("version {v} is not 1, 2 or 3"))),
    };
    if len > MAX_HEADER {
        return Err(bad(path, format!("a header of {len} bytes (at most {MAX_HEADER})")));
    }
    let dict = head.get(start..start + len).ok_or_else(|| bad(path, "the header is cut short"))?;
    let dict = std::str::from_utf8(dict).map_err(|_| bad(path, "the header is not text"))?;
    let descr = dict_value(dict, "descr").ok_or_else(|| bad(path, "no 'descr' in the header"))?;
    let descr = descr.trim_matches(|c| c == '\'' || c == '"');
    let (big_endian, dtype) = match descr {
        "<f4" | "=f4" => (false, NpyDtype::F32),
        ">f4" => (true, NpyDtype::F32),
        "<f8" | "=f8" => (false, NpyDtype::F64),
        ">f8" => (true, NpyDtype::F64),
        "|u1" | "<u1" | "=u1" | ">u1" | "u1" => (false, NpyDtype::U8),
        "<u2" | "=u2" => (false, NpyDtype::U16),
        ">u2" => (true, NpyDtype::U16),
        other => return Err(bad(path, format!("element type {other:?}; float32, float64, uint8 or uint16 is read"))),
    };
    match dict_value(dict, "fortran_order") {
        Some("False") => {}
        Some("True") => {
            return Err(KitError::file(
                path,
                "holds a Fortran-order array; save it in C order (numpy.ascontiguousarray) first",
            ))
        }
        _ => return Err(bad(path, "no valid 'fortran_order' in the header")),
    }
    let shape_text = dict_value(dict, "shape").ok_or_else(|| bad(path, "no 'shape' in the header"))?;
    let inner = shape_text
        .strip_prefix('(')
        .and_then(|s| s.strip_suffix(')'))
        .ok_or_else(|| bad(path, format!("shape {shape_text:?} is not a tuple")))?;
    let shape = inner
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<usize>().map_err(|_| bad(path, format!("shape entry {s:?} is not a size"))))
        .collect::<Result<Vec<_>>>()?;
    if shape.len() > MAX_DIMS {
        return Err(bad(path, format!("{} dimensions (at most {MAX_DIMS})", shape.len())));
    }
    Ok(NpyHeader { dtype, big_endian, shape, offset: (start + len) as u64 })
}

/// Reads and checks the header of `path`, and that the file holds exactly the data it
/// declares. Returns the header and the open file, positioned at the data.
fn open(path: &Path, out_elem: u64) -> Result<(NpyHeader, std::io::BufReader<std::fs::File>)> {
    let (file, file_len) = crate::input::open_regular(path)?;
    let mut reader = std::io::BufReader::new(file);
    let mut head = vec![0u8; (MAX_HEADER + 12).min(file_len as usize)];
    reader.read_exact(&mut head).map_err(|e| KitError::file(path, e))?;
    let header = parse_header(path, &head)?;
    let dims: Vec<u64> = header.shape.iter().map(|&d| d as u64).collect();
    let what = format!("the array {:?} in {}", header.shape, path.display());
    let count = crate::budget::elements(&dims, header.dtype.size() + out_elem, &what)?;
    let data_bytes = count * header.dtype.size();
    let present = file_len - header.offset.min(file_len);
    if present != data_bytes {
        return Err(bad(
            path,
            format!("the header declares {:?} ({data_bytes} bytes of data) but the file holds {present}", header.shape),
        ));
    }
    use std::io::Seek;
    reader.seek(std::io::SeekFrom::Start(header.offset)).map_err(|e| KitError::file(path, e))?;
    Ok((header, reader))
}

/// The header of a `.npy` file, checked against the file's length (the data is not read).
pub fn header(path: &Path) -> Result<NpyHeader> {
    Ok(open(path, 0)?.0)
}

/// Reads the elements as f64, in C order.
fn read_values(path: &Path, out_elem: u64) -> Result<(NpyHeader, Vec<f64>)> {
    let (header, mut reader) = open(path, out_elem)?;
    let size = header.dtype.size() as usize;
    let count: usize = header.shape.iter().product();
    let mut values = Vec::with_capacity(count);
    let mut chunk = vec![0u8; size * 65536];
    let mut left = count;
    while left > 0 {
        let n = left.min(65536);
        let bytes = &mut chunk[..n * size];
        reader.read_exact(bytes).map_err(|e| KitError::file(path, e))?;
        values.extend(bytes.chunks_exact(size).map(|e| header.dtype.decode(e, header.big_endian)));
        left -= n;
    }
    if let Some(i) = values.iter().position(|v| !v.is_finite()) {
        let at = entry(&header.shape, i);
        return Err(KitError::file(path, format!("{at} is {} (every value must be finite)", values[i])));
    }
    Ok((header, values))
}

/// The element at C-order position `i` of an array of `shape`, as an error names it: its
/// index, `entry (row, col)` in a matrix, `element i` in a vector.
fn entry(shape: &[usize], i: usize) -> String {
    if shape.len() < 2 {
        return format!("element {i}");
    }
    let mut index = vec![0; shape.len()];
    let mut rest = i;
    for (k, &side) in shape.iter().enumerate().rev() {
        index[k] = rest % side.max(1);
        rest /= side.max(1);
    }
    let index: Vec<String> = index.iter().map(ToString::to_string).collect();
    format!("entry ({})", index.join(", "))
}

/// Reads a `.npy` of float32, float64, uint8 or uint16 (C order) as f32. Non-finite values
/// and float64 values beyond f32's range are errors.
pub fn read(path: &Path) -> Result<NpyArray> {
    let (header, values) = read_values(path, 4)?;
    if let Some(i) = values.iter().position(|v| v.abs() > f32::MAX as f64) {
        let at = entry(&header.shape, i);
        return Err(KitError::file(path, format!("{at} is {:e}, beyond float32's range", values[i])));
    }
    Ok(NpyArray { shape: header.shape, data: values.into_iter().map(|v| v as f32).collect(), dtype: header.dtype })
}

/// Reads a `.npy` as f64 without loss (for inputs whose precision matters, such as
/// distance matrices).
pub fn read_f64(path: &Path) -> Result<(Vec<usize>, Vec<f64>)> {
    let (header, values) = read_values(path, 8)?;
    Ok((header.shape, values))
}

/// The header of a little-endian C-order array of `descr` elements (`<f4`, `<u2`), padded so
/// the data starts on a 64-byte boundary (format version 1): for writers of other element
/// types, and tests that write arrays [`write_f32`] does not.
pub fn header_bytes(descr: &str, shape: &[usize]) -> Vec<u8> {
    let dims = match shape {
        [one] => format!("({one},)"),
        _ => format!("({})", shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")),
    };
    let mut dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {dims}, }}");
    let unpadded = MAGIC.len() + 4 + dict.len() + 1;
    dict.push_str(&" ".repeat((64 - unpadded % 64) % 64));
    dict.push('\n');
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out
}

/// Writes a float32 `.npy` of the given shape (C order), atomically.
pub fn write_f32(path: &Path, shape: &[usize], data: &[f32]) -> Result<()> {
    let mut staged = crate::output::Staged::new();
    stage_f32(&mut staged, path, shape, data)?;
    staged.commit()
}

/// Like [`write_f32`], into `staged` (all or none with the command's other outputs).
pub fn stage_f32(staged: &mut crate::output::Staged, path: &Path, shape: &[usize], data: &[f32]) -> Result<()> {
    if shape.iter().product::<usize>() != data.len() {
        return Err(KitError::file(path, format!("{} values for the shape {shape:?}", data.len())));
    }
    staged.write(path, |w| {
        w.write_all(&header_bytes("<f4", shape))?;
        for chunk in data.chunks(65536) {
            let bytes: Vec<u8> = chunk.iter().flat_map(|v| v.to_le_bytes()).collect();
            w.write_all(&bytes)?;
        }
        Ok::<(), std::io::Error>(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_sizes_checked() {
        let (_dir, p) = crate::testing::temp_path("a.npy");
        let data: Vec<f32> = (0..24).map(|i| i as f32 * 0.5 - 3.0).collect();
        write_f32(&p, &[2, 3, 4], &data).unwrap();
        let back = read(&p).unwrap();
        assert_eq!(back.shape, vec![2, 3, 4]);
        assert_eq!(back.data, data);
        let bytes = std::fs::read(&p).unwrap();
        assert_eq!(header(&p).unwrap().offset % 64, 0);
        // Cut short: an error naming the sizes, never the last fallback's message.
        std::fs::write(&p, &bytes[..bytes.len() - 3]).unwrap();
        assert!(read(&p).unwrap_err().to_string().contains("declares"));
        // A huge declared shape is refused before allocating.
        let mut huge = header_bytes("<f4", &[524288, 524288]);
        huge.extend_from_slice(&[0; 16]);
        std::fs::write(&p, &huge).unwrap();
        let err = read(&p).unwrap_err().to_string();
        assert!(err.contains("memory budget") || err.contains("declares"), "{err}");
        // NaN is refused, named by its index: (row, col) in a matrix.
        write_f32(&p, &[2], &[1.0, f32::NAN]).unwrap();
        let err = read(&p).unwrap_err().to_string();
        assert!(err.contains("element 1 is NaN") && err.contains("finite"), "{err}");
        let mut matrix = vec![0.0f32; 20];
        matrix[19] = f32::NAN;
        write_f32(&p, &[4, 5], &matrix).unwrap();
        let (err, err64) = (read(&p).unwrap_err().to_string(), read_f64(&p).unwrap_err().to_string());
        assert!(err.contains("entry (3, 4) is NaN") && err64 == err, "{err} / {err64}");
        matrix[19] = f32::INFINITY;
        write_f32(&p, &[2, 2, 5], &matrix).unwrap();
        assert!(read(&p).unwrap_err().to_string().contains("entry (1, 1, 4) is inf"));
        // uint8 is read as stored, a 1-D shape round-trips.
        let mut u8file = header_bytes("|u1", &[3]);
        u8file.extend_from_slice(&[0, 7, 255]);
        std::fs::write(&p, &u8file).unwrap();
        let a = read(&p).unwrap();
        assert_eq!((a.dtype, a.shape, a.data), (NpyDtype::U8, vec![3], vec![0.0, 7.0, 255.0]));
    }

    #[test]
    fn numpy_headers_parse() {
        let h = b"\x93NUMPY\x01\x00\x46\x00{'descr': '>f8', 'fortran_order': False, 'shape': (3, 1, 2), }          \n";
        let parsed = parse_header(Path::new("x"), h).unwrap();
        assert_eq!(parsed.shape, vec![3, 1, 2]);
        assert!(parsed.big_endian);
        assert_eq!(parsed.dtype, NpyDtype::F64);
        let scalar = b"\x93NUMPY\x01\x00\x3c\x00{'descr': '<f4', 'fortran_order': False, 'shape': (), }       \n";
        assert_eq!(parse_header(Path::new("x"), scalar).unwrap().shape, Vec::<usize>::new());
        // The magic alone is a file cut short, not a file of another kind.
        let err = parse_header(Path::new("x"), b"\x93NUMPY").unwrap_err().to_string();
        assert!(err.contains("cut short: 6 bytes"), "{err}");
        assert!(parse_header(Path::new("x"), b"PK\x03\x04 zip").unwrap_err().to_string().contains("magic"));
    }
}
