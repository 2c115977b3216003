//! Cross-process locking (`OpenConfig::locking`) and concurrent readers.
//!
//! `writer_and_readers_across_processes`: one writer process appends, updates, inserts and
//! deletes chunks of a locked frame (contiguous and sparse) while three reader processes read
//! it in passes. A pass that completes (no `Error::Stale`) must be exactly one state the writer
//! committed: the writer logs the hash of every committed state, the readers log the hash of
//! every pass, and every reader hash must be in the writer's log. Readers must also follow the
//! writer (see several states, end on the final one).
//!
//! `many_readers_no_writer`: threads sharing one handle and several processes read one frame,
//! with and without locking, and every chunk must hold its data.
//!
//! Children are this test binary re-executed with `OXBLOSC_LOCK_ROLE` set.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use oxblosc_frame::{open_with, CParams, DParams, Mode, OpenConfig, SChunk};

const ITEMS: usize = 512;

/// Chunk data derived from a seed: item 0 is the seed, the rest a function of it.
fn data(seed: u32) -> Vec<u8> {
    (0..ITEMS as u32)
        .flat_map(|k| if k == 0 { seed } else { seed ^ k.wrapping_mul(0x9e37_79b9) }.to_le_bytes())
        .collect()
}

fn state_hash(seeds: &[u32]) -> u64 {
    seeds.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, s| (h ^ u64::from(*s)).wrapping_mul(0x100_0000_01b3))
}

fn cfg(mode: Mode, locking: bool) -> OpenConfig {
    OpenConfig { mode, locking, ..OpenConfig::default() }
}

/// One pass over every chunk: the seeds, or the error that stopped it.
fn read_pass(s: &SChunk) -> Result<Vec<u32>, oxblosc_frame::Error> {
    let mut seeds = Vec::with_capacity(s.nchunks());
    for i in 0..s.nchunks() {
        let d = s.decompress_chunk(i)?;
        let seed = u32::from_le_bytes(d[..4].try_into().unwrap());
        assert!(d == data(seed), "chunk {i}: torn or foreign data (seed {seed})");
        seeds.push(seed);
    }
    Ok(seeds)
}

struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

fn writer(path: &Path, ops: usize) {
    let mut s = open_with(path, cfg(Mode::Append, true)).expect("writer opens");
    let mut seeds = read_pass(&s).expect("writer reads its frame");
    let mut log = vec![state_hash(&seeds)];
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut next = 1000u32;
    for _ in 0..ops {
        next += 1;
        let n = seeds.len() as u64;
        match rng.below(10) {
            0..=5 => {
                s.append_data(&data(next)).unwrap();
                seeds.push(next);
            }
            6 | 7 => {
                let i = rng.below(n) as usize;
                s.update_data(i, &data(next)).unwrap();
                seeds[i] = next;
            }
            8 => {
                let i = rng.below(n + 1) as usize;
                s.insert_data(i, &data(next)).unwrap();
                seeds.insert(i, next);
            }
            _ if n > 2 => {
                let i = rng.below(n) as usize;
                s.delete_chunk(i).unwrap();
                seeds.remove(i);
            }
            _ => {}
        }
        log.push(state_hash(&seeds));
    }
    drop(s); // closing (tail moved, file cut) is one more commit of the same state
    for h in log {
        println!("W {h}");
    }
    println!("FINAL {}", state_hash(&seeds));
}

fn reader(path: &Path, done: &Path) {
    let mut s = open_with(path, cfg(Mode::Read, true)).expect("reader opens");
    let (mut passes, mut stale) = (0u32, 0u32);
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let finished = done.exists();
        s.refresh().expect("refresh");
        match read_pass(&s) {
            Ok(seeds) => {
                passes += 1;
                println!("R {}", state_hash(&seeds));
                if finished {
                    break; // one complete pass after the writer exited: the final state
                }
            }
            Err(e) if e.is_stale() => stale += 1,
            Err(e) => panic!("reader failed: {e}"),
        }
        assert!(Instant::now() < deadline, "reader did not finish");
    }
    println!("STATS {passes} {stale}");
}

fn static_reader(path: &Path, locking: bool, expect: u32) {
    let s = open_with(path, cfg(Mode::Read, locking)).expect("opens");
    std::thread::scope(|sc| {
        for t in 0..4 {
            let s = &s;
            sc.spawn(move || {
                for round in 0..5 {
                    let seeds = read_pass(s).expect("read");
                    assert_eq!(seeds, (0..expect).collect::<Vec<_>>(), "thread {t} round {round}");
                }
            });
        }
    });
    println!("OK");
}

/// Re-executed children run here.
#[test]
fn lock_child() {
    let Ok(role) = std::env::var("OXBLOSC_LOCK_ROLE") else { return };
    let path = PathBuf::from(std::env::var("OXBLOSC_LOCK_PATH").unwrap());
    // libtest already printed "test lock_child ... " without a newline: end that line so
    // the first tagged line stays parseable.
    println!();
    match role.as_str() {
        "writer" => writer(&path, 250),
        "reader" => reader(&path, &PathBuf::from(std::env::var("OXBLOSC_LOCK_DONE").unwrap())),
        "static" => static_reader(&path, std::env::var("OXBLOSC_LOCK_LOCKING").is_ok(), 64),
        "appender" => {
            let base: u32 = std::env::var("OXBLOSC_LOCK_BASE").unwrap().parse().unwrap();
            let n: u32 = std::env::var("OXBLOSC_LOCK_N").unwrap().parse().unwrap();
            // Opening for writing takes the lock too: a timeout can come from either step.
            let mut s = match open_with(&path, cfg(Mode::Append, true)) {
                Ok(s) => s,
                Err(e) => {
                    println!("ERROR {e}");
                    return;
                }
            };
            for k in 0..n {
                match s.append_data(&data(base + k)) {
                    Ok(_) => {}
                    Err(e) => {
                        println!("ERROR {e}");
                        return;
                    }
                }
            }
            println!("DONE");
        }
        "holder" => {
            let mut s = open_with(&path, cfg(Mode::Append, true)).expect("holder opens");
            s.hold_lock().unwrap();
            println!("HELD");
            let release = PathBuf::from(std::env::var("OXBLOSC_LOCK_DONE").unwrap());
            while !release.exists() {
                std::thread::sleep(Duration::from_millis(10));
            }
            s.release_lock();
        }
        r => panic!("unknown role {r}"),
    }
}

fn spawn(role: &str, path: &Path, extra: &[(&str, String)]) -> Child {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args(["lock_child", "--exact", "--nocapture", "--test-threads=1"])
        .env("OXBLOSC_LOCK_ROLE", role)
        .env("OXBLOSC_LOCK_PATH", path)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    for (k, v) in extra {
        c.env(k, v);
    }
    c.spawn().expect("spawn child")
}

fn finish(c: Child, what: &str) -> String {
    let out = c.wait_with_output().expect("child output");
    assert!(out.status.success(), "{what} failed");
    String::from_utf8(out.stdout).unwrap()
}

fn tagged(out: &str, tag: &str) -> Vec<u64> {
    out.lines()
        .filter_map(|l| l.strip_prefix(tag))
        .map(|v| v.split_whitespace().next().unwrap().parse().unwrap())
        .collect()
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("oxblosc-lock-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn new_frame(path: &Path, contiguous: bool, nchunks: u32) {
    let cp = CParams { typesize: 4, clevel: 1, ..CParams::default() };
    let mut s = SChunk::create(path, contiguous, cp, DParams::default()).unwrap();
    s.enable_locking().unwrap();
    for k in 0..nchunks {
        s.append_data(&data(k)).unwrap();
    }
}

fn writer_and_readers(contiguous: bool) {
    let dir = tmpdir(if contiguous { "contig" } else { "sparse" });
    let path = dir.join("f.b2frame");
    let done = dir.join("done");
    new_frame(&path, contiguous, 8);
    let env = [("OXBLOSC_LOCK_DONE", done.display().to_string())];
    let readers: Vec<Child> = (0..3).map(|_| spawn("reader", &path, &env)).collect();
    let w = finish(spawn("writer", &path, &env), "writer");
    std::fs::write(&done, b"").unwrap();
    let committed: HashSet<u64> = tagged(&w, "W ").into_iter().collect();
    let last = tagged(&w, "FINAL ")[0];
    assert!(committed.len() > 100, "writer logged {} states", committed.len());
    for (k, r) in readers.into_iter().enumerate() {
        let out = finish(r, "reader");
        let seen = tagged(&out, "R ");
        for h in &seen {
            assert!(committed.contains(h), "reader {k} saw a state the writer never committed: {h}");
        }
        let distinct: HashSet<_> = seen.iter().collect();
        assert!(distinct.len() >= 2, "reader {k} never followed the writer ({} states)", distinct.len());
        assert_eq!(*seen.last().unwrap(), last, "reader {k} did not end on the final state");
        eprintln!("reader {k}: {} passes, {} distinct states, {}", seen.len(), distinct.len(), out.trim_end());
    }
    let s = open_with(&path, cfg(Mode::Read, false)).unwrap();
    assert_eq!(state_hash(&read_pass(&s).unwrap()), last);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn writer_and_readers_across_processes_contiguous() {
    writer_and_readers(true);
}

#[test]
fn writer_and_readers_across_processes_sparse() {
    writer_and_readers(false);
}

#[test]
fn many_readers_no_writer() {
    let dir = tmpdir("static");
    let path = dir.join("f.b2frame");
    new_frame(&path, true, 64);
    for locking in [false, true] {
        let env: Vec<(&str, String)> = if locking { vec![("OXBLOSC_LOCK_LOCKING", "1".into())] } else { vec![] };
        let kids: Vec<Child> = (0..3).map(|_| spawn("static", &path, &env)).collect();
        static_reader(&path, locking, 64);
        for k in kids {
            assert!(finish(k, "static reader").contains("OK"));
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Two locked writers take turns: a writer whose view is out of date catches up (under the
/// exclusive lock) before its change, so nothing either wrote is lost.
#[test]
fn stale_writer_catches_up_before_committing() {
    for contiguous in [true, false] {
        let dir = tmpdir("twowriters");
        let path = dir.join("f.b2frame");
        new_frame(&path, contiguous, 2);
        let mut a = open_with(&path, cfg(Mode::Append, true)).unwrap();
        let mut b = open_with(&path, cfg(Mode::Append, true)).unwrap();
        a.append_data(&data(7)).unwrap();
        assert_eq!(b.append_data(&data(8)).unwrap(), 4, "the second writer sees the first one's chunk");
        a.append_data(&data(9)).unwrap();
        assert_eq!(a.nchunks(), 5);
        drop(b);
        drop(a);
        let s = open_with(&path, cfg(Mode::Read, true)).unwrap();
        assert_eq!(read_pass(&s).unwrap(), vec![0, 1, 7, 8, 9]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// Two writer processes append to one locked frame at the same time: they take turns, and
/// the frame ends with every chunk of both, each writer's in its own order.
#[test]
fn two_writer_processes_both_finish() {
    const N: u32 = 40;
    for contiguous in [true, false] {
        let dir = tmpdir(if contiguous { "2w-contig" } else { "2w-sparse" });
        let path = dir.join("f.b2frame");
        new_frame(&path, contiguous, 1);
        let kids: Vec<Child> = [10_000u32, 20_000]
            .iter()
            .map(|b| {
                spawn("appender", &path, &[("OXBLOSC_LOCK_BASE", b.to_string()), ("OXBLOSC_LOCK_N", N.to_string())])
            })
            .collect();
        for k in kids {
            let out = finish(k, "appender");
            assert!(out.contains("DONE"), "appender: {out}");
        }
        let s = open_with(&path, cfg(Mode::Read, true)).unwrap();
        let seeds = read_pass(&s).unwrap();
        assert_eq!(seeds.len() as u32, 1 + 2 * N, "chunks lost or added: {seeds:?}");
        for base in [10_000u32, 20_000] {
            let mine: Vec<u32> = seeds.iter().copied().filter(|x| (base..base + N).contains(x)).collect();
            assert_eq!(mine, (base..base + N).collect::<Vec<_>>(), "writer {base}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// A writer that cannot get the lock gives up after the timeout with an error saying so.
#[test]
fn writer_times_out_waiting_for_the_lock() {
    let dir = tmpdir("timeout");
    let path = dir.join("f.b2frame");
    let release = dir.join("release");
    new_frame(&path, true, 1);
    let mut holder = spawn("holder", &path, &[("OXBLOSC_LOCK_DONE", release.display().to_string())]);
    let mut out = std::io::BufReader::new(holder.stdout.take().unwrap());
    let mut line = String::new();
    while !line.contains("HELD") {
        line.clear();
        assert!(std::io::BufRead::read_line(&mut out, &mut line).unwrap() > 0, "holder ended early");
    }
    let w = spawn(
        "appender",
        &path,
        &[("OXBLOSC_LOCK_BASE", "5".into()), ("OXBLOSC_LOCK_N", "1".into()), ("OXBLOSC_LOCK_TIMEOUT", "0.3".into())],
    );
    let out = w.wait_with_output().expect("appender output");
    std::fs::write(&release, b"").unwrap();
    assert!(holder.wait().unwrap().success());
    assert!(out.status.success(), "appender failed");
    let out = String::from_utf8(out.stdout).unwrap();
    assert!(out.contains("ERROR") && out.contains("timed out") && out.contains("f.b2frame"), "{out}");
    let s = open_with(&path, cfg(Mode::Read, true)).unwrap();
    assert_eq!(read_pass(&s).unwrap(), vec![0], "the timed-out append changed the frame");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn stale_reader_gets_error_then_refreshes() {
    let dir = tmpdir("stale");
    let path = dir.join("f.b2frame");
    new_frame(&path, false, 3);
    let mut r = open_with(&path, cfg(Mode::Read, true)).unwrap();
    let mut w = open_with(&path, cfg(Mode::Append, true)).unwrap();
    w.update_data(0, &data(50)).unwrap(); // sparse: chunk 0's old file is removed
    assert!(r.decompress_chunk(0).unwrap_err().is_stale());
    assert!(r.refresh().unwrap());
    assert!(!r.refresh().unwrap());
    assert_eq!(read_pass(&r).unwrap(), vec![50, 1, 2]);
    // Unlocked handles never go stale on purpose: refresh is a no-op.
    let mut u = open_with(&path, cfg(Mode::Read, false)).unwrap();
    assert!(!u.refresh().unwrap());
    drop(w);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn held_lock_makes_several_changes_atomic() {
    let dir = tmpdir("hold");
    let path = dir.join("f.b2frame");
    new_frame(&path, true, 2);
    let mut w = open_with(&path, cfg(Mode::Append, true)).unwrap();
    let mut r = open_with(&path, cfg(Mode::Read, true)).unwrap();
    w.hold_lock().unwrap();
    // The reader blocks on the shared lock until the writer releases: it can only see the
    // state before the hold (impossible here, it starts after) or after both changes.
    let reader = std::thread::spawn(move || {
        r.refresh().unwrap();
        read_pass(&r).unwrap()
    });
    std::thread::sleep(Duration::from_millis(50));
    w.append_data(&data(10)).unwrap();
    w.update_data(0, &data(11)).unwrap();
    w.release_lock();
    assert_eq!(reader.join().unwrap(), vec![11, 1, 10]);
    // Read-only handles cannot hold the lock.
    let mut ro = open_with(&path, cfg(Mode::Read, true)).unwrap();
    assert!(ro.hold_lock().is_err());
    drop(w);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A second locked writer that opens the frame (cutting the bytes past `frame_len`, where the
/// first writer keeps its spare index slot) but changes nothing must still make the first
/// writer re-read the frame; else its next index would reuse blocks that were cut.
#[test]
fn idle_second_writer_does_not_corrupt_the_first() {
    let dir = tmpdir("idle");
    let path = dir.join("f.b2frame");
    new_frame(&path, true, 0);
    let mut a = open_with(&path, cfg(Mode::Append, true)).unwrap();
    let n = 2100u32; // two index blocks, so a commit keeps one of them in its slot
    a.batch(|s| (0..n).try_for_each(|k| s.append_data(&data(k)).map(drop))).unwrap();
    for k in n..n + 2 {
        a.append_data(&data(k)).unwrap();
    }
    let mut b = open_with(&path, cfg(Mode::Append, true)).unwrap();
    assert!(b.delete_chunk(1_000_000).is_err());
    for k in n + 2..n + 6 {
        a.append_data(&data(k)).unwrap();
        // Read each state `a` commits while it is still open (the slots alternate, so half of
        // them land in the slot that was cut; closing `a` rewrites the index from memory and
        // would hide it).
        let live = open_with(&path, cfg(Mode::Read, true)).unwrap();
        assert_eq!(read_pass(&live).unwrap(), (0..=k).collect::<Vec<_>>(), "after appending {k}");
    }
    drop(b);
    drop(a);
    let s = open_with(&path, cfg(Mode::Read, true)).unwrap();
    assert_eq!(read_pass(&s).unwrap(), (0..n + 6).collect::<Vec<_>>());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Closing a locked writer compacts the file (temp file + rename, under the exclusive lock,
/// generation bumped) only when its view is current: a stale writer's close leaves the file
/// alone, and a locked reader holding the old file sees `Stale`, refreshes and reads it all.
#[test]
fn closing_compacts_only_a_current_view() {
    use std::os::unix::fs::MetadataExt;
    let dir = tmpdir("closecompact");
    let path = dir.join("f.b2frame");
    new_frame(&path, true, 3);
    let mut r = open_with(&path, cfg(Mode::Read, true)).unwrap();
    let mut a = open_with(&path, cfg(Mode::Append, true)).unwrap();
    let mut b = open_with(&path, cfg(Mode::Append, true)).unwrap();
    a.append_data(&data(7)).unwrap();
    b.append_data(&data(8)).unwrap(); // `a` is stale from here on
    let before = (std::fs::read(&path).unwrap(), std::fs::metadata(&path).unwrap().ino());
    drop(a);
    let after = (std::fs::read(&path).unwrap(), std::fs::metadata(&path).unwrap().ino());
    assert!(after == before, "a stale writer's close changed the file");
    drop(b);
    assert_ne!(std::fs::metadata(&path).unwrap().ino(), before.1, "closing did not compact");
    assert!(r.decompress_chunk(0).unwrap_err().is_stale());
    assert!(r.refresh().unwrap());
    assert_eq!(read_pass(&r).unwrap(), vec![0, 1, 2, 7, 8]);
    let chunks: u64 = (0..r.nchunks()).map(|i| r.get_chunk(i).unwrap().len() as u64).sum();
    assert_eq!(r.cbytes(), chunks);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A locked writer killed after its commit (index renamed in, or header patched) but before it
/// bumped the lock file's generation: the frame changed under an unchanged generation. Another
/// locked writer must catch up with that state and write on, not refuse every write as stale
/// (found by the three-writer kill test, python/tests/test_multiwriter_kill.py).
#[test]
fn locked_writer_catches_up_with_a_commit_whose_generation_bump_was_lost() {
    let dir = std::env::temp_dir().join(format!("oxblosc-lostbump-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for contiguous in [true, false] {
        let path = dir.join(if contiguous { "f.b2frame" } else { "d.b2frame" });
        let mut s =
            SChunk::create(&path, contiguous, CParams { typesize: 4, ..CParams::default() }, DParams::default())
                .unwrap();
        s.append_data(&data(1)).unwrap();
        s.enable_locking().unwrap();
        drop(s);
        let lock = oxblosc_frame::lock::lock_path(&path);
        let mut a = open_with(&path, cfg(Mode::Append, true)).unwrap();
        let mut b = open_with(&path, cfg(Mode::Append, true)).unwrap();
        let before = std::fs::read(&lock).unwrap();
        a.append_data(&data(2)).unwrap();
        std::fs::write(&lock, &before).unwrap(); // the bump never happened
        drop(a);
        b.append_data(&data(3)).unwrap_or_else(|e| panic!("contiguous {contiguous}: {e}"));
        assert_eq!(read_pass(&b).unwrap(), [1, 2, 3]);
        drop(b);
        assert_eq!(read_pass(&open_with(&path, cfg(Mode::Read, false)).unwrap()).unwrap(), [1, 2, 3]);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
