#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| oxblosc_fuzz::fuzz_zlib(data));
