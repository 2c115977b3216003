//! Write the generated seed inputs into `<dir>/<target>/` (default `fuzz/corpus`).
//! Run through `fuzz/seed.sh`, which also copies the small C-Blosc2 vectors.

use std::path::PathBuf;

fn main() {
    let dir = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| "corpus".into()));
    let mut n = 0;
    for (target, name, bytes) in oxblosc_fuzz::seeds() {
        let d = dir.join(target);
        std::fs::create_dir_all(&d).expect("create corpus dir");
        std::fs::write(d.join(&name), bytes).expect("write seed");
        n += 1;
    }
    println!("wrote {n} generated seeds under {}", dir.display());
}
