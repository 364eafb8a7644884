#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| tessera_fuzz::check("d.npy", data, mosaic::DistanceMatrix::load_npy));
