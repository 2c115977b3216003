//! `NdArray::encode_chunk` + `commit_encoded`: a locked writer compresses a whole chunk while
//! another handle holds the frame's exclusive lock (the compression needs no lock), and only
//! its commit waits; a commit after another handle changed the geometry writes nothing.

use std::path::PathBuf;
use std::sync::mpsc::channel;
use std::time::Duration;

use oxblosc_chunk::{CParams, DParams};
use oxblosc_frame::{open_with, Mode, OpenConfig, SChunk};
use oxblosc_nd::{DimSlice, Geometry, NdArray};

fn temp(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("oxblosc-nd-enc-{}-{name}", std::process::id()));
    let _ = std::fs::remove_file(&p);
    let _ = std::fs::remove_dir_all(&p);
    p
}

fn locked(p: &PathBuf) -> NdArray {
    let cfg = OpenConfig { mode: Mode::Append, offset: 0, locking: true, mmap: false };
    NdArray::from_schunk(open_with(p, cfg).unwrap()).unwrap()
}

fn data(n: usize, seed: u64) -> Vec<u8> {
    (0..n as u64).flat_map(|i| ((i ^ seed) / 3).to_le_bytes()).collect()
}

#[test]
fn whole_chunks_compress_while_another_handle_holds_the_lock() {
    for contiguous in [true, false] {
        let p = temp(&format!("hold-{contiguous}.b2nd"));
        let cp = CParams { typesize: 8, nthreads: 1, clevel: 5, ..CParams::default() };
        let s = SChunk::create(&p, contiguous, cp, DParams { nthreads: 1 }).unwrap();
        // 3 x 2 chunks, the last row and column are edge chunks.
        let geom = Geometry::new(&[25, 30], &[10, 16], &[5, 8], 8).unwrap();
        drop(NdArray::from_buffer_appending(s, geom, Some("<i8"), &vec![0; 25 * 30 * 8]).unwrap());
        let mut holder = locked(&p);
        let writer = locked(&p);
        holder.hold_lock().unwrap();
        // The edge chunk (2, 1): rows 20..25, columns 16..30.
        let sel = [DimSlice::new(20, 25, 1), DimSlice::new(16, 30, 1)];
        let d = data(5 * 14, 7);
        let (tx, rx) = channel();
        let t = std::thread::spawn(move || {
            let enc = writer.encode_chunk(&sel, &d).unwrap().expect("one whole chunk");
            tx.send(enc.nchunk()).unwrap();
            let mut writer = writer;
            // Waits for the holder's release.
            assert!(writer.commit_encoded(enc).unwrap());
            writer
        });
        let n = rx.recv_timeout(Duration::from_secs(60)).expect("encoding waited for the frame lock");
        assert_eq!(n, 5);
        holder.schunk_mut().release_lock();
        let writer = t.join().unwrap();
        let sel = [DimSlice::new(20, 25, 1), DimSlice::new(16, 30, 1)];
        assert_eq!(writer.get_slice(&sel).unwrap(), data(5 * 14, 7));
        holder.refresh().unwrap();
        assert_eq!(holder.get_slice(&sel).unwrap(), data(5 * 14, 7));
        let all = holder.to_vec().unwrap();
        assert_eq!(all.iter().filter(|&&b| b != 0).count(), data(5 * 14, 7).iter().filter(|&&b| b != 0).count());
    }
}

#[test]
fn only_single_whole_chunks_are_encoded_ahead() {
    let p = temp("kinds.b2nd");
    let cp = CParams { typesize: 4, nthreads: 1, clevel: 5, ..CParams::default() };
    let s = SChunk::create(&p, true, cp, DParams { nthreads: 1 }).unwrap();
    let geom = Geometry::new(&[20, 20], &[10, 10], &[5, 5], 4).unwrap();
    let a = NdArray::from_buffer_appending(s, geom, Some("<u4"), &vec![0; 20 * 20 * 4]).unwrap();
    let enc = |sel: [DimSlice; 2]| {
        let n = sel.iter().map(|s| s.len() as usize).product::<usize>() * 4;
        a.encode_chunk(&sel, &vec![1; n]).unwrap().is_some()
    };
    assert!(enc([DimSlice::new(10, 20, 1), DimSlice::new(0, 10, 1)]));
    assert!(!enc([DimSlice::new(0, 9, 1), DimSlice::new(0, 10, 1)]), "part of a chunk");
    assert!(!enc([DimSlice::new(0, 20, 1), DimSlice::new(0, 10, 1)]), "two chunks");
    assert!(!enc([DimSlice::new(0, 10, 2), DimSlice::new(0, 10, 1)]), "a step");
    // Wrong data length: not encoded (the usual path reports it).
    assert!(a.encode_chunk(&[DimSlice::new(0, 10, 1), DimSlice::new(0, 10, 1)], &[0; 8]).unwrap().is_none());
}

#[test]
fn a_commit_after_another_handle_resized_writes_nothing() {
    let p = temp("resized.b2nd");
    let cp = CParams { typesize: 4, nthreads: 1, clevel: 5, ..CParams::default() };
    let s = SChunk::create(&p, true, cp, DParams { nthreads: 1 }).unwrap();
    let geom = Geometry::new(&[20, 20], &[10, 10], &[5, 5], 4).unwrap();
    drop(NdArray::from_buffer_appending(s, geom, Some("<u4"), &vec![0; 20 * 20 * 4]).unwrap());
    let mut writer = locked(&p);
    let mut other = locked(&p);
    let sel = [DimSlice::new(10, 20, 1), DimSlice::new(10, 20, 1)];
    let enc = writer.encode_chunk(&sel, &[9; 400]).unwrap().unwrap();
    other.resize(&[20, 30]).unwrap();
    assert!(!writer.commit_encoded(enc).unwrap());
    // The handle caught up with the resize; nothing of the chunk was written.
    assert_eq!(writer.shape(), &[20, 30]);
    assert!(writer.to_vec().unwrap().iter().all(|&b| b == 0));
    // Encoded again for the new geometry, it commits.
    let enc = writer.encode_chunk(&sel, &[9; 400]).unwrap().unwrap();
    assert!(writer.commit_encoded(enc).unwrap());
    other.refresh().unwrap();
    assert_eq!(other.get_slice(&sel).unwrap(), vec![9; 400]);
}
