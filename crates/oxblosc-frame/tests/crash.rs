//! Crash safety of frame files, contiguous and sparse: a child process appends, inserts,
//! updates and deletes chunks in a loop, alone or several in one batch, and is SIGKILLed at
//! random moments; after every kill
//! the file must reopen as the last state the child committed or the one it was writing, never
//! unreadable and never with lost chunks. The sparse run keeps few, tiny chunks so that chunk
//! file ids outgrow the frame's `cbytes` and the writer renumbers them (hard links, new index,
//! old names removed) many times, with kills landing inside that too.
//!
//! Now and then the child replaces the whole frame by a new one built under a temporary name
//! and renamed over it (`SChunk::create_staged` + `publish`).
//!
//! The child is this test binary re-executed with `OXBLOSC_CRASH_CHILD` set. Before each
//! operation it logs `I <nchunks> <hash>` (the state it is about to write), after the
//! operation returns `C <nchunks> <hash>`. Chunk `k` holds 1024 u32 derived from a seed, and
//! the hash is over the seeds in order, so a reopened file is checked chunk by chunk.
//!
//! With `OXBLOSC_INTEROP_PY` pointing to a python with blosc2, some crashed files (before our
//! writer reopens and trims them) are also read with python-blosc2.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use oxblosc_frame::{open, CParams, DParams, Mode, SChunk};

/// The layouts under test: (contiguous, u32 items per chunk, at most this many chunks).
const LAYOUTS: [(bool, usize, u64); 2] = [(true, 1024, 400), (false, 2, 4)];

fn chunk_data(seed: u32) -> Vec<u8> {
    chunk_data_n(seed, 1024)
}

/// `items` u32: every fourth a hash of the seed and position, the rest the seed itself.
fn chunk_data_n(seed: u32, items: usize) -> Vec<u8> {
    (0..items as u32)
        .flat_map(|k| {
            let v = if k % 4 == 0 { seed.wrapping_mul(2_654_435_761).wrapping_add(k) } else { seed };
            v.to_le_bytes()
        })
        .collect()
}

fn hash(seeds: &[u32]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for s in seeds {
        for b in s.to_le_bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
    }
    h
}

/// Read every chunk back; the seeds in order, or an error description.
fn read_seeds(s: &SChunk) -> Result<Vec<u32>, String> {
    let mut seeds = Vec::with_capacity(s.nchunks());
    for i in 0..s.nchunks() {
        let d = s.decompress_chunk(i).map_err(|e| format!("chunk {i}: {e}"))?;
        if d.len() < 8 {
            return Err(format!("chunk {i} has only {} bytes", d.len()));
        }
        let seed = u32::from_le_bytes(d[4..8].try_into().unwrap());
        if d != chunk_data_n(seed, d.len() / 4) {
            return Err(format!("chunk {i} does not hold seed {seed}'s data"));
        }
        seeds.push(seed);
    }
    Ok(seeds)
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn cparams() -> CParams {
    CParams { typesize: 4, clevel: 1, ..CParams::default() }
}

/// The writing child: runs until killed.
fn child(path: &Path, log: &Path, seed: u64, (contiguous, items, max_chunks): (bool, usize, u64)) {
    let mut s = if path.exists() {
        open(path, Mode::Append).expect("child reopens the frame")
    } else {
        SChunk::create(path, contiguous, cparams(), DParams::default()).expect("create")
    };
    let mut seeds = read_seeds(&s).expect("child reads the frame");
    let mut log = std::fs::File::create(log).unwrap();
    log.write_all(format!("C {} {}\n", seeds.len(), hash(&seeds)).as_bytes()).unwrap();
    let mut rng = Rng(seed | 1);
    loop {
        if rng.below(100) < 3 {
            // Close (which may compact: temp file + rename) and reopen: the state is unchanged.
            drop(s);
            s = open(path, Mode::Append).expect("child reopens the frame");
        }
        let n = seeds.len() as u64;
        let op = rng.below(100);
        let new_seed = rng.next() as u32 | 1;
        let mut next = seeds.clone();
        let chunk_data = move |seed| chunk_data_n(seed, items);
        let act: Box<dyn FnOnce(&mut SChunk)> = if rng.below(100) < 4 {
            // The whole frame replaced by a new one built beside it under a temporary name
            // and renamed over it (`create_staged` + `publish`, as `mode="w"` constructors
            // do): the old frame or the new one, never neither nor a part.
            next.push(new_seed);
            let all = next.clone();
            let path = path.to_path_buf();
            Box::new(move |s| {
                let mut t = SChunk::create_staged(&path, contiguous, cparams(), DParams::default()).unwrap();
                for &seed in &all {
                    t.append_data(&chunk_data(seed)).unwrap();
                }
                t.publish(&path).unwrap();
                *s = t; // (the old handle, its frame replaced, closes without touching it)
            })
        } else if n >= 4 && rng.below(100) < 20 {
            // A batch of edits (mostly chunks replaced, some twice) committed at once: replaced
            // and appended chunks are staged to unreferenced space as they come.
            let steps = batch_steps(&mut rng, &mut next, max_chunks as usize);
            Box::new(move |s| {
                s.batch(|s| {
                    for st in &steps {
                        let data = chunk_data(st.seed);
                        match st.kind {
                            Step::Update => s.update_data(st.i, &data).map(drop)?,
                            Step::Append => s.append_data(&data).map(drop)?,
                            Step::Delete => s.delete_chunk(st.i).map(drop)?,
                            Step::Insert => s.insert_data(st.i, &data).map(drop)?,
                        }
                    }
                    Ok(())
                })
                .unwrap();
            })
        } else if n < 4 || (op < 60 && n < max_chunks) {
            next.push(new_seed);
            Box::new(move |s| {
                s.append_data(&chunk_data(new_seed)).unwrap();
            })
        } else if op < 80 {
            let i = rng.below(n) as usize;
            next[i] = new_seed;
            Box::new(move |s| {
                s.update_data(i, &chunk_data(new_seed)).unwrap();
            })
        } else if op < 93 {
            let i = rng.below(n) as usize;
            next.remove(i);
            Box::new(move |s| {
                s.delete_chunk(i).unwrap();
            })
        } else {
            let i = rng.below(n) as usize;
            next.insert(i, new_seed);
            Box::new(move |s| {
                s.insert_data(i, &chunk_data(new_seed)).unwrap();
            })
        };
        log.write_all(format!("I {} {}\n", next.len(), hash(&next)).as_bytes()).unwrap();
        act(&mut s);
        seeds = next;
        log.write_all(format!("C {} {}\n", seeds.len(), hash(&seeds)).as_bytes()).unwrap();
    }
}

#[derive(Clone, Copy)]
enum Step {
    Update,
    Append,
    Delete,
    Insert,
}

struct BatchStep {
    kind: Step,
    i: usize,
    seed: u32,
}

/// 2-7 random edits for one batch, applied to `seeds` as the batch will apply them; updates
/// dominate and often hit a chunk the batch replaced already.
fn batch_steps(rng: &mut Rng, seeds: &mut Vec<u32>, max_chunks: usize) -> Vec<BatchStep> {
    let mut steps = Vec::new();
    let mut last = None;
    for _ in 0..2 + rng.below(6) {
        let n = seeds.len() as u64;
        let seed = rng.next() as u32 | 1;
        let r = rng.below(100);
        let step = if r < 60 || n < 2 {
            let i = match last {
                Some(i) if rng.below(3) == 0 && i < seeds.len() => i,
                _ => rng.below(n) as usize,
            };
            seeds[i] = seed;
            BatchStep { kind: Step::Update, i, seed }
        } else if r < 75 && seeds.len() < max_chunks {
            seeds.push(seed);
            BatchStep { kind: Step::Append, i: seeds.len() - 1, seed }
        } else if r < 88 {
            let i = rng.below(n) as usize;
            seeds.remove(i);
            BatchStep { kind: Step::Delete, i, seed }
        } else {
            let i = rng.below(n) as usize;
            seeds.insert(i, seed);
            BatchStep { kind: Step::Insert, i, seed }
        };
        last = Some(step.i);
        steps.push(step);
    }
    steps
}

/// Accepted states after a kill: the last committed one and, if logged after it, the one
/// being written.
fn accepted(log: &Path) -> Vec<(usize, u64)> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let mut last_c = None;
    let mut last_i = None;
    // Each line is written with one write call; a line without its newline is torn.
    for line in text.split_inclusive('\n').filter(|l| l.ends_with('\n')).map(str::trim_end) {
        let f: Vec<&str> = line.split(' ').collect();
        if f.len() != 3 {
            continue; // torn last line
        }
        let st = (f[1].parse().unwrap(), f[2].parse().unwrap());
        if f[0] == "C" {
            last_c = Some(st);
            last_i = None;
        } else {
            last_i = Some(st);
        }
    }
    last_c.into_iter().chain(last_i).collect()
}

const PY_CHECK: &str = r#"
import sys, blosc2, numpy as np
s = blosc2.open(sys.argv[1], mode="r")
h = 0xcbf29ce484222325
for i in range(s.nchunks):
    d = np.frombuffer(s.decompress_chunk(i), dtype=np.uint32)
    seed = int(d[1])
    k = np.arange(len(d), dtype=np.uint32)
    exp = np.where(k % 4 == 0, (np.uint32(seed) * np.uint32(2654435761) + k).astype(np.uint32), np.uint32(seed))
    assert (d == exp).all(), f"chunk {i}"
    for b in seed.to_bytes(4, "little"):
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
print(s.nchunks, h)
"#;

#[test]
fn crash_child_entry() {
    // Only does something when re-executed by `sigkill_during_writes`.
    if let (Ok(path), Ok(log), Ok(seed), Ok(layout)) = (
        std::env::var("OXBLOSC_CRASH_CHILD"),
        std::env::var("OXBLOSC_CRASH_LOG"),
        std::env::var("OXBLOSC_CRASH_SEED"),
        std::env::var("OXBLOSC_CRASH_LAYOUT"),
    ) {
        child(Path::new(&path), Path::new(&log), seed.parse().unwrap(), LAYOUTS[layout.parse::<usize>().unwrap()]);
    }
}

#[test]
fn sigkill_during_writes_contiguous() {
    sigkill_during_writes(0);
}

#[test]
fn sigkill_during_writes_sparse() {
    sigkill_during_writes(1);
}

/// The highest chunk file id in a sparse frame directory (referenced or a leftover).
fn max_chunk_file_id(dir: &Path) -> Option<u64> {
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            u64::from_str_radix(name.strip_suffix(".chunk")?, 16).ok()
        })
        .max()
}

fn sigkill_during_writes(layout: usize) {
    let (contiguous, _, _) = LAYOUTS[layout];
    let dir = std::env::temp_dir().join(format!("oxblosc-crash-{}-{layout}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(if contiguous { "crash.b2frame" } else { "crash.b2sparse" });
    let log = dir.join("log.txt");
    let py: Option<PathBuf> = std::env::var_os("OXBLOSC_INTEROP_PY").map(PathBuf::from);
    let kills: usize = std::env::var("OXBLOSC_CRASH_KILLS").ok().and_then(|v| v.parse().ok()).unwrap_or(60);
    // Every how many kills python-blosc2 also opens the crashed file (campaigns: 1).
    let py_every: usize = std::env::var("OXBLOSC_CRASH_PY_EVERY").ok().and_then(|v| v.parse().ok()).unwrap_or(6).max(1);
    let exe = std::env::current_exe().unwrap();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ u64::from(std::process::id()));
    let t0 = Instant::now();
    let (mut killed_mid_op, mut max_chunks, mut py_checked) = (0, 0, 0);
    let mut top_id = 0; // sparse: the highest chunk file id seen (leftovers of kills included)
    let mut seen = std::collections::BTreeMap::<&str, usize>::new();
    for round in 0..kills {
        let _ = std::fs::remove_file(&log);
        let mut ch = Command::new(&exe)
            .args(["crash_child_entry", "--exact", "--nocapture", "--test-threads=1"])
            .env("OXBLOSC_CRASH_CHILD", &path)
            .env("OXBLOSC_CRASH_LOG", &log)
            .env("OXBLOSC_CRASH_SEED", rng.next().to_string())
            .env("OXBLOSC_CRASH_LAYOUT", layout.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Let it start (reopen, read back, log its first committed state: a loaded machine can
        // take longer than the random delay for that), then kill at a random moment.
        let started = Instant::now();
        while accepted(&log).is_empty() && started.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(Duration::from_millis(rng.below(120)));
        ch.kill().unwrap(); // SIGKILL on Unix
        let status = ch.wait().unwrap();
        assert!(!status.success(), "round {round}: the child exited by itself: {status:?}");
        let ok = accepted(&log);
        assert!(!ok.is_empty(), "round {round}: the child committed nothing (too slow to start?)");
        if ok.len() == 2 {
            killed_mid_op += 1;
        }
        if let Some(py) = py.as_ref().filter(|_| round % py_every == 0) {
            let out = Command::new(py).arg("-c").arg(PY_CHECK).arg(&path).output().unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            let f: Vec<&str> = text.split_whitespace().collect();
            assert!(out.status.success(), "round {round}: python-blosc2: {}", String::from_utf8_lossy(&out.stderr));
            let st = (f[0].parse::<usize>().unwrap(), f[1].parse::<u64>().unwrap());
            assert!(ok.contains(&st), "round {round}: python-blosc2 reads {st:?}, accepted {ok:?}");
            py_checked += 1;
        }
        let s = open(&path, Mode::Read).unwrap_or_else(|e| panic!("round {round}: unreadable after kill: {e}"));
        let seeds = read_seeds(&s).unwrap_or_else(|e| panic!("round {round}: {e}"));
        let st = (seeds.len(), hash(&seeds));
        let which = ok.iter().position(|x| *x == st);
        assert!(which.is_some(), "round {round}: file holds {st:?}, accepted {ok:?}");
        *seen.entry(if which == Some(0) { "old state" } else { "new state" }).or_default() += 1;
        max_chunks = max_chunks.max(seeds.len());
        if !contiguous {
            top_id = top_id.max(max_chunk_file_id(&path).unwrap_or(0));
        }
    }
    let len = if contiguous {
        std::fs::metadata(&path).unwrap().len()
    } else {
        std::fs::read_dir(&path).unwrap().filter_map(|e| e.ok()?.metadata().ok()).map(|m| m.len()).sum()
    };
    eprintln!(
        "crash test ({}): {kills} kills in {:.1} s, {killed_mid_op} during an operation, outcomes {seen:?}, \
         up to {max_chunks} chunks, final file {len} bytes, {py_checked} crashed files read by python-blosc2, \
         {}",
        if contiguous { "contiguous" } else { "sparse" },
        t0.elapsed().as_secs_f64(),
        if contiguous {
            String::new()
        } else {
            format!("chunk file ids up to {top_id} (renumbered when past cbytes - 32)")
        }
    );
    if std::env::var_os("OXBLOSC_CRASH_KEEP").is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// A cleanly closed file has the usual compact tail: frame_len = file length, so it also loads
/// as an in-memory frame, and python-blosc2 reads it.
#[test]
fn closed_file_is_compact_and_appendable() {
    let dir = std::env::temp_dir().join(format!("oxblosc-close-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("closed.b2frame");
    let mut seeds: Vec<u32> = Vec::new();
    for session in 0..3u32 {
        let mut s = if session == 0 {
            SChunk::create(&path, true, cparams(), DParams::default()).unwrap()
        } else {
            open(&path, Mode::Append).unwrap()
        };
        for k in 0..3000u32 {
            let seed = session * 10_000 + k + 1;
            s.append_data(&chunk_data(seed)).unwrap();
            seeds.push(seed);
            if k % 97 == 0 {
                let i = (k as usize * 31) % seeds.len();
                s.update_data(i, &chunk_data(seed + 5000)).unwrap();
                seeds[i] = seed + 5000;
            }
        }
        s.set_vlmeta("session", &[session as u8]).unwrap();
        drop(s);
        let bytes = std::fs::read(&path).unwrap();
        let frame_len = u64::from_be_bytes(bytes[16..24].try_into().unwrap());
        assert_eq!(frame_len, bytes.len() as u64, "session {session}: closed file is not compact");
        let m = SChunk::from_cframe(&bytes).unwrap();
        assert_eq!(read_seeds(&m).unwrap(), seeds);
        assert_eq!(m.vlmeta("session"), Some(&[session as u8][..]));
    }
    if let Some(py) = std::env::var_os("OXBLOSC_INTEROP_PY") {
        let out = Command::new(py).arg("-c").arg(PY_CHECK).arg(&path).output().unwrap();
        assert!(out.status.success(), "python-blosc2: {}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8_lossy(&out.stdout);
        let f: Vec<&str> = text.split_whitespace().collect();
        assert_eq!((f[0].parse::<usize>().unwrap(), f[1].parse::<u64>().unwrap()), (seeds.len(), hash(&seeds)));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A writable handle left open while another handle (here in the same process; a killed
/// child in the table crash test) appends must not bring its old state back: neither when it
/// is dropped (it used to move its old index over the newer chunks and cut the file) nor when
/// it writes again (refused as stale, the file unchanged). The same for sparse directories,
/// where a stale writer used to reuse the other handle's chunk file ids and write its old
/// index over the new one.
#[test]
fn idle_writer_keeps_out_of_a_newer_state() {
    let dir = std::env::temp_dir().join(format!("oxblosc-idle-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for contiguous in [true, false] {
        let path = dir.join(if contiguous { "f.b2frame" } else { "d.b2frame" });
        let mut s = SChunk::create(&path, contiguous, cparams(), DParams::default()).unwrap();
        s.append_data(&chunk_data(1)).unwrap();
        drop(s);
        for (close_other, write_again) in [(false, false), (true, false), (false, true), (true, true)] {
            let mut a = open(&path, Mode::Append).unwrap();
            a.append_data(&chunk_data(2)).unwrap(); // `a` committed: it has an index slot in use
            let mut want = read_seeds(&a).unwrap();
            let mut b = Some(open(&path, Mode::Append).unwrap());
            for seed in 3..40 {
                b.as_mut().unwrap().append_data(&chunk_data(seed)).unwrap();
                want.push(seed);
            }
            if close_other {
                b = None; // closed: compact tail, file cut after it
            }
            if write_again {
                let e = a.append_data(&chunk_data(99)).unwrap_err();
                assert!(e.is_stale(), "{e}");
                assert!(e.to_string().contains(path.file_name().unwrap().to_str().unwrap()), "{e}");
            }
            drop(a);
            assert_eq!(read_seeds(&open(&path, Mode::Read).unwrap()).unwrap(), want);
            drop(b);
            assert_eq!(read_seeds(&open(&path, Mode::Read).unwrap()).unwrap(), want);
        }
        // A commit that changes no size (a chunk replaced by one of the same length) still
        // makes the other writer stale.
        let mut a = open(&path, Mode::Append).unwrap();
        let mut b = open(&path, Mode::Append).unwrap();
        let mut want = read_seeds(&b).unwrap();
        let n = b.nchunks();
        b.update_data(n - 1, &chunk_data(want[n - 1])).unwrap();
        b.update_data(0, &chunk_data(500)).unwrap();
        want[0] = 500;
        assert!(a.append_data(&chunk_data(98)).unwrap_err().is_stale());
        assert!(a.update_data(1, &chunk_data(97)).unwrap_err().is_stale());
        drop((a, b));
        assert_eq!(read_seeds(&open(&path, Mode::Read).unwrap()).unwrap(), want);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A crash after a sparse frame's ids were renumbered (new index in place) but before the old
/// chunk file names were removed leaves those names as hard links to chunks that are now
/// referenced under their new, lower ids. The writer later reaches those ids for new chunks:
/// it must create a new file, not write through the old name into the referenced chunk.
#[test]
fn leftover_name_of_a_renumbered_chunk_is_not_written_through() {
    let dir = std::env::temp_dir().join(format!("oxblosc-leftover-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("d.b2sparse");
    let mut s = SChunk::create(&path, false, cparams(), DParams::default()).unwrap();
    for seed in 1..=3 {
        s.append_data(&chunk_data(seed)).unwrap();
    }
    drop(s);
    // The state such a crash leaves: chunk 0 referenced as id 0, its old name id 5 still there.
    std::fs::hard_link(path.join(oxblosc_frame::chunk_file_name(0)), path.join(oxblosc_frame::chunk_file_name(5)))
        .unwrap();
    let mut s = open(&path, Mode::Append).unwrap();
    let mut want = vec![1, 2, 3];
    for seed in 10..16 {
        s.append_data(&chunk_data(seed)).unwrap(); // ids 3, 4, 5 (the leftover name), ...
        want.push(seed);
        assert_eq!(read_seeds(&s).unwrap(), want, "after appending seed {seed}");
    }
    drop(s);
    assert_eq!(read_seeds(&open(&path, Mode::Read).unwrap()).unwrap(), want);
    let _ = std::fs::remove_dir_all(&dir);
}
