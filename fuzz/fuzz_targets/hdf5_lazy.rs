#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| oxblosc_fuzz::fuzz_hdf5_lazy(data));
