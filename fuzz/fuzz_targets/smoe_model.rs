#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    tessera_fuzz::check("m.json", data, smoe::model::Model::load);
    tessera_fuzz::check("m.smoe", data, smoe::model::Model::load);
});
