#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| tessera_fuzz::check("a.lfd", data, lightfield::dictionary::Ensemble::read));
