//! User codecs and filters registered at run time, in every pipeline slot, with one and
//! several threads; callbacks that fail; chunks naming ids nobody registered.

use oxblosc_chunk::registry::{CodecParams, FilterParams};
use oxblosc_chunk::{
    compress, decompress, getitem, register_codec, register_filter, registered_codecs, registered_filters, CParams,
    Codec, DParams, Error, Filter, Origin,
};

/// Adds `meta + 1` to every byte (reversible).
struct AddFilter;
impl Filter for AddFilter {
    fn name(&self) -> &str {
        "test_add"
    }
    fn forward(&self, p: &FilterParams, src: &[u8], dst: &mut [u8]) -> Result<(), String> {
        dst.iter_mut().zip(src).for_each(|(d, s)| *d = s.wrapping_add(p.meta.wrapping_add(1)));
        Ok(())
    }
    fn backward(&self, p: &FilterParams, src: &[u8], dst: &mut [u8]) -> Result<(), String> {
        dst.iter_mut().zip(src).for_each(|(d, s)| *d = s.wrapping_sub(p.meta.wrapping_add(1)));
        Ok(())
    }
}

/// Run-length codec: (count, byte) pairs; the meta byte is stored first and checked.
struct RleCodec;
impl Codec for RleCodec {
    fn name(&self) -> &str {
        "test_rle"
    }
    fn version(&self) -> u8 {
        3
    }
    fn encode(&self, p: &CodecParams, src: &[u8], dst: &mut [u8]) -> Result<usize, String> {
        let mut out = vec![p.meta];
        let mut i = 0;
        while i < src.len() {
            let b = src[i];
            let mut n = 1;
            while i + n < src.len() && src[i + n] == b && n < 255 {
                n += 1;
            }
            out.extend([n as u8, b]);
            i += n;
        }
        if out.len() > dst.len() {
            return Ok(0);
        }
        dst[..out.len()].copy_from_slice(&out);
        Ok(out.len())
    }
    fn decode(&self, p: &CodecParams, src: &[u8], dst: &mut [u8]) -> Result<(), String> {
        if src.first() != Some(&p.meta) {
            return Err("meta byte mismatch".into());
        }
        let mut o = 0;
        for pair in src[1..].chunks(2) {
            let [n, b] = pair else { return Err("odd payload".into()) };
            let end = o + usize::from(*n);
            dst.get_mut(o..end).ok_or("payload longer than the stream")?.fill(*b);
            o = end;
        }
        if o == dst.len() {
            Ok(())
        } else {
            Err(format!("decoded {o} bytes, expected {}", dst.len()))
        }
    }
}

/// Fails in both directions on blocks other than block 0.
struct FailingFilter;
impl Filter for FailingFilter {
    fn name(&self) -> &str {
        "test_failing"
    }
    fn forward(&self, p: &FilterParams, src: &[u8], dst: &mut [u8]) -> Result<(), String> {
        dst.copy_from_slice(src);
        if p.meta == 1 && p.block > 0 {
            return Err("refused forward".into());
        }
        Ok(())
    }
    fn backward(&self, p: &FilterParams, src: &[u8], dst: &mut [u8]) -> Result<(), String> {
        dst.copy_from_slice(src);
        if p.block > 0 {
            return Err("refused backward".into());
        }
        Ok(())
    }
}

fn setup() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        register_filter(210, Box::new(AddFilter), Origin::User).unwrap();
        register_codec(211, Box::new(RleCodec), Origin::User).unwrap();
        register_filter(212, Box::new(FailingFilter), Origin::User).unwrap();
    });
}

fn data() -> Vec<u8> {
    (0..100_000u32).flat_map(|i| ((i / 100) as u16).to_le_bytes()).collect()
}

#[test]
fn user_filter_in_every_slot_and_user_codec_round_trip() {
    setup();
    let src = data();
    for slot in 0..6 {
        for codec in [5u8, 211] {
            for nthreads in [1, 3] {
                let mut filters = [0u8; 6];
                let mut metas = [0u8; 6];
                filters[slot] = 210;
                metas[slot] = 4;
                // A built-in filter in another slot, so order matters.
                filters[(slot + 1) % 6] = 1;
                let cp = CParams {
                    codec,
                    codec_meta: 7,
                    typesize: 2,
                    filters,
                    filters_meta: metas,
                    blocksize: 16_384,
                    nthreads,
                    ..CParams::default()
                };
                let c = compress(&src, &cp).unwrap();
                assert!(c.len() < src.len() / 4, "slot {slot} codec {codec}: {} bytes", c.len());
                if codec == 211 {
                    // Plugin codec: format code 6, real id and meta in the extended header.
                    assert_eq!((c[2] >> 5, c[22], c[23], c[1]), (6, 211, 7, 3));
                }
                assert_eq!(&c[16..22], &filters);
                assert_eq!(decompress(&c, &DParams { nthreads }).unwrap(), src, "slot {slot} codec {codec}");
                let mut part = vec![0u8; 200];
                getitem(&c, 30_000, 100, &mut part).unwrap();
                assert_eq!(part, src[60_000..60_200]);
            }
        }
    }
    let codecs = registered_codecs();
    let rle = codecs.iter().find(|r| r.id == 211).unwrap();
    assert_eq!((rle.name, rle.version, &rle.origin), ("test_rle", 3, &Origin::User));
    assert!(registered_filters().iter().any(|r| r.id == 210 && r.name == "test_add"));
}

#[test]
fn failing_callbacks_are_errors_naming_the_filter_and_block() {
    setup();
    let src = data();
    for nthreads in [1, 4] {
        let cp = CParams {
            filters: [212, 0, 0, 0, 0, 0],
            filters_meta: [1, 0, 0, 0, 0, 0],
            blocksize: 8192,
            nthreads,
            typesize: 2,
            ..CParams::default()
        };
        let e = compress(&src, &cp).unwrap_err().to_string();
        assert!(e.contains("test_failing") && e.contains("refused forward") && e.contains("block"), "{e}");
        let cp = CParams { filters_meta: [0; 6], ..cp };
        let c = compress(&src, &cp).unwrap();
        let e = decompress(&c, &DParams { nthreads }).unwrap_err();
        assert!(matches!(e, Error::Filter { name: "test_failing", .. }), "{e:?}");
        assert!(e.to_string().contains("refused backward"), "{e}");
    }
}

#[test]
fn chunks_naming_unavailable_ids_say_which_and_who_provides_them() {
    setup();
    let src = data();
    let cp = CParams { codec: 211, filters: [1, 210, 0, 0, 0, 0], nthreads: 1, typesize: 2, ..CParams::default() };
    let c = compress(&src, &cp).unwrap();
    assert_eq!(c[22], 211);
    let with = |at: usize, v: u8| {
        let mut c = c.clone();
        c[at] = v;
        match decompress(&c, &DParams { nthreads: 1 }) {
            Ok(_) => panic!("byte {at} = {v} decoded"),
            Err(e) => e,
        }
    };
    let e = with(22, 36);
    assert!(matches!(e, Error::UnknownCodec { id: 36 }), "{e:?}");
    let msg = e.to_string();
    assert!(msg.contains("codec 36 (openhtj2k)") && msg.contains("blosc2-openhtj2k package"), "{msg}");
    let msg = with(22, 37).to_string();
    assert!(msg.contains("grok") && msg.contains("blosc2-grok package"), "{msg}");
    let msg = with(22, 250).to_string();
    assert!(msg.contains("codec 250") && msg.contains("user-defined") && msg.contains("register_codec"), "{msg}");
    let msg = with(17, 40).to_string();
    assert!(
        msg.contains("filter 40") && msg.contains("no plugin with that id is known") && msg.contains("slot 1"),
        "{msg}"
    );
    let msg = with(17, 200).to_string();
    assert!(msg.contains("filter 200") && msg.contains("register_filter"), "{msg}");
}

#[test]
fn registering_over_a_builtin_or_outside_the_user_range_is_refused() {
    let e = register_codec(5, Box::new(RleCodec), Origin::User).unwrap_err().to_string();
    assert!(e.contains("0-31 is reserved"), "{e}");
    let e = register_codec(100, Box::new(RleCodec), Origin::User).unwrap_err().to_string();
    assert!(e.contains("32-159 is reserved") && e.contains("160-255"), "{e}");
    setup();
    let e = register_codec(211, Box::new(RleCodec), Origin::User).unwrap_err().to_string();
    assert!(e.contains("already taken by 'test_rle' (user)"), "{e}");
}
