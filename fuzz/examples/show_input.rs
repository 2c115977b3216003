//! Debug aid: print the parameters a roundtrip/getitem input decodes to and what `compress`
//! makes of them. `cargo run --example show_input -- <file>` (getitem files: drop byte 0).

fn main() {
    let path = std::env::args().nth(1).expect("usage: show_input <roundtrip input file>");
    let data = std::fs::read(path).expect("read input");
    let (raw, rest) = oxblosc_fuzz::split_input(&data);
    let cp = raw.cparams();
    let src = raw.data(rest, &cp);
    println!("{cp:?}\ninput of {} bytes", src.len());
    match oxblosc_chunk::compress(&src, &cp) {
        Ok(c) => println!("chunk of {} bytes: {:?}", c.len(), oxblosc_chunk::ChunkHeader::parse(&c)),
        Err(e) => println!("compress error: {e}"),
    }
}
