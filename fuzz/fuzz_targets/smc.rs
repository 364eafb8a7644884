#![no_main]
// The `.smc` decoder past its CRC: the input's last four bytes are replaced by the CRC-32 of
// the rest, so the fuzzer explores the header checks and the range decoder, not the CRC.
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let mut bytes = data.to_vec();
    if bytes.len() >= 8 {
        let n = bytes.len() - 4;
        let crc = crc32fast::hash(&bytes[..n]);
        bytes[n..].copy_from_slice(&crc.to_le_bytes());
    }
    tessera_fuzz::check("m.smc", &bytes, smoe::model::Model::load);
});
