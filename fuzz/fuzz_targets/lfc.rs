#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    tessera_fuzz::check("a.lfc", data, |p| {
        let c = lightfield::bitstream::Compressed::read(p)?;
        lightfield::codec::decode_lightfield(&c, lightfield::codec::CodecPath::Cpu).map(|_| ())
    })
});
