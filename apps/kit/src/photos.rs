//! The sample photos of the demos (`assets/photos/`: public domain or CC0, sources and
//! licences in `assets/photos/LICENSES.md`), embedded in the binaries that use them so that
//! `<binary> demo` runs from any folder and on a machine that has only the binary.

use image::imageops::FilterType;
use image::{DynamicImage, GenericImageView};

use crate::error::{KitError, Result};
use crate::image::ImageF32;

/// One embedded photo: its name (the file's stem) and encoded bytes.
#[derive(Clone, Copy, Debug)]
pub struct Photo {
    pub name: &'static str,
    bytes: &'static [u8],
}

macro_rules! photo {
    ($name:literal, $file:literal) => {
        Photo { name: $name, bytes: include_bytes!(concat!("../../../assets/photos/", $file)) }
    };
}

pub const ASTRONAUT: Photo = photo!("astronaut", "astronaut.jpg");
pub const CHELSEA: Photo = photo!("chelsea", "chelsea.jpg");
pub const COFFEE: Photo = photo!("coffee", "coffee.jpg");
pub const ROCKET: Photo = photo!("rocket", "rocket.jpg");
pub const HUBBLE: Photo = photo!("hubble", "hubble.jpg");
pub const RETINA: Photo = photo!("retina", "retina.jpg");
/// The one gray photo.
pub const CAMERA: Photo = photo!("camera", "camera.png");

/// Every photo, the colour photos first.
pub const ALL: [Photo; 7] = [ASTRONAUT, CHELSEA, COFFEE, ROCKET, HUBBLE, RETINA, CAMERA];

impl Photo {
    fn decode(&self) -> Result<DynamicImage> {
        image::load_from_memory(self.bytes)
            .map_err(|e| KitError::Invalid(format!("the embedded photo {} does not decode: {e}", self.name)))
    }

    /// (width, height) of the photo as stored.
    pub fn size(&self) -> Result<(usize, usize)> {
        let (w, h) = self.decode()?.dimensions();
        Ok((w as usize, h as usize))
    }

    /// The photo at `width` x `height`: the largest centred crop of that aspect ratio,
    /// resampled (Lanczos 3). `channels` 3 gives RGB, 1 gray (Rec. 709 luma of the RGB).
    pub fn resized(&self, width: usize, height: usize, channels: usize) -> Result<ImageF32> {
        self.crop_resized([0.5, 0.5], 1.0, width, height, channels)
    }

    /// A crop of the photo resampled to `width` x `height`: the window of the output's aspect
    /// ratio whose size is `scale` (0 < scale <= 1) of the largest such window, centred at
    /// `centre` (fractions of the width and height; moved inside the photo where needed).
    pub fn crop_resized(
        &self,
        centre: [f64; 2],
        scale: f64,
        width: usize,
        height: usize,
        channels: usize,
    ) -> Result<ImageF32> {
        if width == 0 || height == 0 || !(channels == 1 || channels == 3) {
            return Err(KitError::Invalid(format!("a crop of {width}x{height} pixels with {channels} channels")));
        }
        let img = self.decode()?;
        let (pw, ph) = (img.width() as f64, img.height() as f64);
        let aspect = width as f64 / height as f64;
        let (mut cw, mut ch) = if pw / ph > aspect { (ph * aspect, ph) } else { (pw, pw / aspect) };
        let s = scale.clamp(1e-3, 1.0);
        cw = (cw * s).max(1.0);
        ch = (ch * s).max(1.0);
        let x0 = (centre[0] * pw - cw / 2.0).clamp(0.0, pw - cw);
        let y0 = (centre[1] * ph - ch / 2.0).clamp(0.0, ph - ch);
        let window = img.crop_imm(x0.round() as u32, y0.round() as u32, cw.round() as u32, ch.round() as u32);
        let out = window.resize_exact(width as u32, height as u32, FilterType::Lanczos3);
        let data = if channels == 3 {
            out.into_rgb32f().into_raw()
        } else {
            out.into_rgb32f()
                .into_raw()
                .chunks_exact(3)
                .map(|p| (0.2126 * p[0] + 0.7152 * p[1] + 0.0722 * p[2]).clamp(0.0, 1.0))
                .collect()
        };
        Ok(ImageF32 { width, height, channels, data, source_bits: 8 })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_photo_decodes_at_its_stored_size() {
        let sizes = [(512, 512), (451, 300), (600, 400), (480, 320), (500, 436), (400, 400), (384, 384)];
        for (photo, size) in ALL.iter().zip(sizes) {
            assert_eq!(photo.size().unwrap(), size, "{}", photo.name);
        }
    }

    #[test]
    fn crops_have_the_asked_size_and_stay_in_range() {
        let p = CHELSEA;
        for (centre, scale, w, h, c) in
            [([0.5, 0.5], 1.0, 37, 23, 3), ([0.0, 1.0], 0.2, 16, 16, 1), ([1.0, 0.0], 0.5, 9, 40, 3)]
        {
            let img = p.crop_resized(centre, scale, w, h, c).unwrap();
            assert_eq!((img.width, img.height, img.channels, img.data.len()), (w, h, c, w * h * c));
            assert!(img.data.iter().all(|v| (0.0..=1.0).contains(v)));
        }
        // A photo is not flat: the centre crop of the cat has contrast.
        let img = p.resized(64, 48, 1).unwrap();
        assert!(p.resized(0, 4, 3).is_err() && p.resized(4, 4, 2).is_err());
        let (lo, hi) = img.data.iter().fold((1f32, 0f32), |(lo, hi), &v| (lo.min(v), hi.max(v)));
        assert!(hi - lo > 0.5, "range {lo}..{hi}");
    }
}
