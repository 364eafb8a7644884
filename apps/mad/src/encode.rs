//! The bytes of the map files, written into any writer so that `--maps` can stage all six
//! files with [`kit::output::Staged`] and rename them into place together. kit's
//! `npy::write_f32` and `image::save` write straight to a path; these two are candidates
//! for kit (a writer-level `npy::encode_f32` and `image::encode`).

use std::io::Write;

/// NumPy format 1.0 magic.
const NPY_MAGIC: &[u8] = b"\x93NUMPY";

/// Writes a little-endian float32 C-order `.npy` of `shape` (version 1.0, the data starting
/// on a 64-byte boundary), as kit's reader expects it.
pub fn npy_f32(w: &mut impl Write, shape: &[usize], data: &[f32]) -> std::io::Result<()> {
    if shape.iter().product::<usize>() != data.len() {
        return Err(std::io::Error::other(format!("{} values for the shape {shape:?}", data.len())));
    }
    let dims = match shape {
        [one] => format!("({one},)"),
        _ => format!("({})", shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")),
    };
    let mut dict = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {dims}, }}");
    let unpadded = NPY_MAGIC.len() + 4 + dict.len() + 1;
    dict.push_str(&" ".repeat((64 - unpadded % 64) % 64));
    dict.push('\n');
    w.write_all(NPY_MAGIC)?;
    w.write_all(&[1, 0])?;
    w.write_all(&(dict.len() as u16).to_le_bytes())?;
    w.write_all(dict.as_bytes())?;
    for chunk in data.chunks(1 << 16) {
        let bytes: Vec<u8> = chunk.iter().flat_map(|v| v.to_le_bytes()).collect();
        w.write_all(&bytes)?;
    }
    Ok(())
}

/// Writes 8-bit RGB (row 0 at the top) as a PNG of a size taken from an image.
pub fn png_rgb8(w: &mut impl Write, width: usize, height: usize, rgb: &[u8]) -> image::ImageResult<()> {
    use image::ImageEncoder;
    // Map sizes are image sizes, which came from u32 headers.
    let (width, height) = (width as u32, height as u32);
    image::codecs::png::PngEncoder::new(w).write_image(rgb, width, height, image::ExtendedColorType::Rgb8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kit_reads_what_is_written() {
        let dir = std::env::temp_dir().join(format!("mad-encode-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (npy, png) = (dir.join("m.npy"), dir.join("m.png"));
        let data: Vec<f32> = (0..15).map(|i| i as f32 * 0.25).collect();
        let mut staged = kit::output::Staged::new();
        staged.write(&npy, |w| npy_f32(w, &[3, 5], &data)).unwrap();
        staged.write(&png, |w| png_rgb8(w, 5, 3, &[9; 45])).unwrap();
        staged.commit().unwrap();
        let back = kit::npy::read(&npy).unwrap();
        assert_eq!((back.shape, back.data), (vec![3, 5], data));
        let img = kit::image::load(&png).unwrap();
        assert_eq!((img.width, img.height, img.channels), (5, 3, 3));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
