#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| tessera_fuzz::check("a.npy", data, kit::npy::read));
