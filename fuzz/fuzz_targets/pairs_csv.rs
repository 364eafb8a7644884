#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| tessera_fuzz::check("pairs.csv", data, mad::pairs::read));
