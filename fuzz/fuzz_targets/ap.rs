#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| tessera_fuzz::check("a.ap", data, composite::ap::ApImage::read));
