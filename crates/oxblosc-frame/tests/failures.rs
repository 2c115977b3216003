//! Failed operations leave the super-chunk and its file exactly as before (issue 14 item 2).
//!
//! The frame lives on a small tmpfs (mounted by the test; it needs root, else the test says
//! so and passes without checking). A filler file takes the free space, so every write that
//! needs new pages fails with ENOSPC. Each operation is then tried: one that fails must leave
//! the handle's view (chunks, sizes, vlmetalayers) and the committed file unchanged; one that
//! succeeds is applied to the model. Finally the space is freed, one more append succeeds, and
//! the reopened file must equal the model: no phantom chunk, nothing lost.

use std::path::{Path, PathBuf};
use std::process::Command;

use oxblosc_frame::{open, CParams, DParams, Mode, SChunk, SpecialValue};

const CHUNK: usize = 16 << 10;

fn noise(seed: u64, n: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// One test of this file at a time: run in parallel threads, a full-disk test now and then
/// found no room after deleting its filler (ENOSPC on the write that must then succeed, about
/// 1 run in 80), while the others mounted, filled and unmounted their own file systems.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// A tmpfs of `kib` KiB, unmounted when dropped; None when mounting is not permitted. Holds
/// [`one_at_a_time`] while it exists.
struct Tmpfs(PathBuf, #[allow(dead_code)] std::sync::MutexGuard<'static, ()>);

impl Tmpfs {
    fn new(tag: &str, kib: usize) -> Option<Tmpfs> {
        let serial = one_at_a_time();
        let dir = std::env::temp_dir().join(format!("oxblosc-fail-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={kib}k"), "tmpfs"])
            .arg(&dir)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            eprintln!("SKIP: cannot mount a tmpfs (needs root); failure paths not checked");
            let _ = std::fs::remove_dir(&dir);
            return None;
        }
        Some(Tmpfs(dir, serial))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        // Lazy: a test that failed half-way may still hold files there (else the mount stays).
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Take all free space with a filler file.
fn fill(dir: &Path) {
    use std::io::Write;
    let mut f = std::fs::File::create(dir.join("filler")).unwrap();
    let block = vec![0xA5u8; 4096];
    while f.write_all(&block).is_ok() {}
    let _ = f.sync_all();
}

#[derive(Debug, Clone, PartialEq)]
struct State {
    chunks: Vec<Vec<u8>>,
    nbytes: u64,
    vlmeta: Vec<(String, Vec<u8>)>,
}

fn state(s: &SChunk) -> State {
    State {
        chunks: (0..s.nchunks()).map(|i| s.decompress_chunk(i).unwrap()).collect(),
        nbytes: s.nbytes(),
        vlmeta: s.vlmeta_names().into_iter().map(|n| (n.to_string(), s.vlmeta(n).unwrap().to_vec())).collect(),
    }
}

fn on_disk(path: &Path) -> State {
    state(&open(path, Mode::Read).unwrap())
}

type Op = (&'static str, Box<dyn Fn(&mut SChunk) -> oxblosc_frame::Result<()>>);

fn ops(round: u64) -> Vec<Op> {
    let d = move |k: u64| noise(round * 100 + k, CHUNK);
    vec![
        ("append", Box::new(move |s| s.append_data(&d(1)).map(drop))),
        ("insert", Box::new(move |s| s.insert_data(1, &d(2)).map(drop))),
        ("update", Box::new(move |s| s.update_data(0, &d(3)).map(drop))),
        ("set_slice", Box::new(move |s| s.set_slice(CHUNK as u64 / 4 - 8, &d(4)[..64]))),
        (
            "fill_special",
            Box::new(|s| s.fill_special(2 * CHUNK as u64 / 4, SpecialValue::Value(vec![7; 4]), None).map(drop)),
        ),
        ("set_vlmeta", Box::new(move |s| s.set_vlmeta("big", &d(5)))),
        (
            "toggle_vlmeta",
            Box::new(|s| {
                if s.vlmeta("small").is_some() {
                    s.delete_vlmeta("small")
                } else {
                    s.set_vlmeta("small", b"\x02")
                }
            }),
        ),
        ("delete", Box::new(|s| s.delete_chunk(0).map(drop))),
        ("batch", Box::new(move |s| s.batch(|s| (0..3).try_for_each(|k| s.append_data(&d(10 + k)).map(drop))))),
    ]
}

fn failed_ops_change_nothing(contiguous: bool) {
    let Some(fs) = Tmpfs::new(if contiguous { "contig" } else { "sparse" }, 2048) else { return };
    let path = fs.0.join(if contiguous { "f.b2frame" } else { "f.b2frame.d" });
    let cp = CParams { typesize: 4, clevel: 1, ..CParams::default() };
    let mut s = SChunk::create(&path, contiguous, cp, DParams::default()).unwrap();
    for k in 0..4 {
        s.append_data(&noise(k, CHUNK)).unwrap();
    }
    s.set_vlmeta("small", b"\x01").unwrap();
    fill(&fs.0);
    let mut failed = Vec::new();
    for round in 0..3 {
        for (name, op) in ops(round) {
            let before = state(&s);
            match op(&mut s) {
                Ok(()) => {}
                Err(e) => {
                    failed.push(name);
                    assert!(e.to_string().contains("No space left"), "{name}: {e}");
                    assert_eq!(state(&s), before, "{name} failed but changed the handle");
                    assert_eq!(on_disk(&path), before, "{name} failed but changed the file");
                }
            }
        }
    }
    // Small repeated-value chunks may still fit in pages the writer already holds.
    let must_fail: &[&str] = if contiguous { &[] } else { &["fill_special"] };
    for name in ["append", "insert", "update", "set_slice", "set_vlmeta", "batch"].iter().chain(must_fail) {
        assert!(failed.contains(name), "{name} never failed on a full disk: {failed:?}");
    }
    // With room again, the next append adds exactly one chunk and the file equals the view.
    std::fs::remove_file(fs.0.join("filler")).unwrap();
    let mut expect = state(&s);
    s.append_data(&noise(999, CHUNK)).unwrap();
    expect.chunks.push(noise(999, CHUNK));
    expect.nbytes += CHUNK as u64;
    assert_eq!(state(&s), expect);
    drop(s);
    assert_eq!(on_disk(&path), expect, "reopened file differs from what was written");
}

#[test]
fn failed_ops_change_nothing_contiguous() {
    failed_ops_change_nothing(true);
}

#[test]
fn failed_ops_change_nothing_sparse() {
    failed_ops_change_nothing(false);
}

/// Saving over an existing frame on a full disk fails and keeps the frame that was there (it
/// used to be removed first, then the new copy failed half-way: both were gone). The copy is
/// written under a temporary name and renamed into place, so a process killed while saving
/// (also inside `SChunk::create`) leaves no half-written frame either.
#[test]
fn failed_save_keeps_the_frame_it_was_replacing() {
    for contiguous in [true, false] {
        let Some(fs) = Tmpfs::new(if contiguous { "save-c" } else { "save-s" }, 512) else { return };
        let path = fs.0.join(if contiguous { "f.b2frame" } else { "d.b2frame" });
        let cp = CParams { typesize: 1, clevel: 1, ..CParams::default() };
        let mut s = SChunk::create(&path, contiguous, cp.clone(), DParams::default()).unwrap();
        s.append_data(&noise(1, CHUNK)).unwrap();
        let before = state(&s);
        drop(s);
        let mut other = SChunk::new(cp, DParams::default()).unwrap();
        for k in 0..4 {
            other.append_data(&noise(10 + k, CHUNK)).unwrap();
        }
        fill(&fs.0);
        let e = other.save(&path, contiguous).unwrap_err();
        assert!(e.to_string().contains(path.file_name().unwrap().to_str().unwrap()), "{e}");
        assert_eq!(on_disk(&path), before, "contiguous {contiguous}: the frame being replaced was lost");
        let leftovers: Vec<_> =
            std::fs::read_dir(&fs.0).unwrap().filter_map(|e| e.ok()).map(|e| e.file_name()).collect();
        assert_eq!(leftovers.len(), 2, "temporary files left: {leftovers:?}"); // the frame and the filler
        std::fs::remove_file(fs.0.join("filler")).unwrap();
        other.save(&path, contiguous).unwrap();
        assert_eq!(on_disk(&path), state(&other));
    }
}

/// A frame made with `create_staged` lives under a temporary name until `publish` renames it
/// over `path` (any kind over any kind: file or sparse directory); until then, and when it
/// is discarded instead, `path` holds the old frame unchanged. A plain directory is refused.
#[test]
fn a_staged_frame_replaces_the_old_one_only_when_published() {
    let dir = std::env::temp_dir().join(format!("oxblosc-staged-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cp = CParams { typesize: 1, clevel: 1, ..CParams::default() };
    let names = |d: &Path| {
        let mut v: Vec<String> =
            std::fs::read_dir(d).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        v.sort();
        v
    };
    for (old_contiguous, contiguous) in [(true, true), (false, false), (true, false), (false, true)] {
        let path = dir.join("f.b2frame");
        let mut s = SChunk::create(&path, old_contiguous, cp.clone(), DParams::default()).unwrap();
        s.append_data(&noise(1, CHUNK)).unwrap();
        let before = state(&s);
        drop(s);
        for publish in [false, true] {
            let mut t = SChunk::create_staged(&path, contiguous, cp.clone(), DParams::default()).unwrap();
            t.append_data(&noise(2, CHUNK)).unwrap();
            t.set_vlmeta("k", b"v").unwrap();
            assert_eq!(on_disk(&path), before, "the old frame changed before publishing");
            assert_eq!(names(&dir).len(), 2, "{:?}", names(&dir));
            if !publish {
                t.discard();
                assert_eq!(names(&dir), ["f.b2frame"]);
                assert_eq!(on_disk(&path), before);
                continue;
            }
            let made = state(&t);
            t.publish(&path).unwrap();
            assert_eq!(names(&dir), ["f.b2frame"], "old frame or temporary left");
            assert_eq!(path.is_dir(), !contiguous);
            assert_eq!(on_disk(&path), made);
            // the handle goes on writing where the frame now is
            t.append_data(&noise(3, CHUNK)).unwrap();
            let after = state(&t);
            drop(t);
            assert_eq!(on_disk(&path), after);
        }
        oxblosc_frame::remove(&path).unwrap();
    }
    let plain = dir.join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    std::fs::write(plain.join("mine.txt"), b"x").unwrap();
    let mut t = SChunk::create_staged(&plain, true, cp, DParams::default()).unwrap();
    let e = t.publish(&plain).unwrap_err();
    assert!(e.to_string().contains("not a sparse frame"), "{e}");
    t.discard();
    assert_eq!(names(&plain), ["mine.txt"]);
    assert_eq!(names(&dir), ["plain"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Publishing a staged frame that is no longer there (removed by someone else, or by a sweep
/// in another namespace) fails with an error naming it and leaves the frame at `path` as it
/// was, whatever the kinds of the two frames; it used to remove the old frame first. A
/// successful publish takes the replaced frame's `.b2lock` (its generation counter) with it.
#[test]
fn publishing_a_vanished_staged_frame_keeps_the_old_one() {
    let dir = std::env::temp_dir().join(format!("oxblosc-vanished-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let cp = CParams { typesize: 1, clevel: 1, ..CParams::default() };
    for (old_contiguous, contiguous) in [(true, true), (false, false), (true, false), (false, true)] {
        let path = dir.join("f.b2frame");
        let mut s = SChunk::create(&path, old_contiguous, cp.clone(), DParams::default()).unwrap();
        s.append_data(&noise(1, CHUNK)).unwrap();
        let before = state(&s);
        drop(s);
        let lock = if old_contiguous { dir.join("f.b2frame.b2lock") } else { path.join(".b2lock") };
        std::fs::write(&lock, b"old generation").unwrap();
        let mut t = SChunk::create_staged(&path, contiguous, cp.clone(), DParams::default()).unwrap();
        t.append_data(&noise(2, CHUNK)).unwrap();
        let tmp = t.urlpath().unwrap().to_path_buf();
        if contiguous {
            std::fs::remove_file(&tmp).unwrap();
        } else {
            std::fs::remove_dir_all(&tmp).unwrap();
        }
        let e = t.publish(&path).unwrap_err().to_string();
        assert!(e.contains(".oxtmp-"), "the error does not name the vanished frame: {e}");
        assert_eq!(on_disk(&path), before, "old frame {old_contiguous} lost under {contiguous}: {e}");
        assert_eq!(path.is_dir(), !old_contiguous);
        assert!(lock.exists(), "the old frame's lock file went without it");
        drop(t);
        let mut t = SChunk::create_staged(&path, contiguous, cp.clone(), DParams::default()).unwrap();
        t.append_data(&noise(3, CHUNK)).unwrap();
        let made = state(&t);
        t.publish(&path).unwrap();
        drop(t);
        assert_eq!(on_disk(&path), made);
        assert!(!lock.exists(), "the replaced frame's lock file stayed");
        oxblosc_frame::remove(&path).unwrap();
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// What a killed process left of its staged frames (`<path>.oxtmp-<pid>-<n>`, a file or a
/// sparse directory) is removed by the next staged creation at that path, once its process is
/// gone and it has been untouched for ten minutes; a running process's temporaries, recent
/// ones and other names stay.
#[cfg(target_os = "linux")]
#[test]
fn a_staged_creation_sweeps_stale_temporaries_of_killed_processes() {
    let _serial = one_at_a_time();
    let dir = std::env::temp_dir().join(format!("oxblosc-sweep-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let cp = CParams { typesize: 1, clevel: 1, ..CParams::default() };
    let mut child = Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let alive = std::process::id();
    let path = dir.join("a.b2nd");
    let long_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    let make = |name: &str, sparse: bool, old: bool| {
        let p = dir.join(name);
        if sparse {
            std::fs::create_dir(&p).unwrap();
            std::fs::write(p.join("chunks.b2frame"), b"x").unwrap();
        } else {
            std::fs::write(&p, b"leftover").unwrap();
        }
        if old {
            std::fs::File::open(&p).unwrap().set_modified(long_ago).unwrap();
        }
    };
    make(&format!("a.b2nd.oxtmp-{dead}-0"), false, true); // stale file: removed
    make(&format!("a.b2nd.oxtmp-{dead}-1"), true, true); // stale sparse directory: removed
    make(&format!("a.b2nd.oxtmp-{dead}-2"), false, false); // recent: kept
    make(&format!("a.b2nd.oxtmp-{alive}-999999"), false, true); // a running process's (a counter value this process will not reach, as other tests here also make temporaries): kept
    make(&format!("b.b2nd.oxtmp-{dead}-0"), false, true); // another path's: kept
    make(&format!("a.b2nd.oxtmp-{dead}"), false, true); // not our name pattern: kept
    make(&format!("a.b2nd.oxtmp-{dead}-0.b2lock"), false, true); // a stale temporary's lock file: removed
    make(&format!("a.b2nd.oxtmp-{dead}-2.b2lock"), false, false); // a recent one's: kept
    make(&format!("a.b2nd.oxtmp-{dead}-2.b2lockx"), false, true); // not our name pattern: kept
    let mut s = SChunk::create_staged(&path, true, cp, DParams::default()).unwrap();
    s.append_data(&noise(3, CHUNK)).unwrap();
    s.publish(&path).unwrap();
    let mut names: Vec<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    let mut want = vec![
        "a.b2nd".to_string(),
        format!("a.b2nd.oxtmp-{dead}"),
        format!("a.b2nd.oxtmp-{dead}-2"),
        format!("a.b2nd.oxtmp-{dead}-2.b2lock"),
        format!("a.b2nd.oxtmp-{dead}-2.b2lockx"),
        format!("a.b2nd.oxtmp-{alive}-999999"),
        format!("b.b2nd.oxtmp-{dead}-0"),
    ];
    want.sort();
    assert_eq!(names, want);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Closing a contiguous writer right after a failed commit keeps the committed frame: the
/// failure made the writer forget its index encodings, and the close used to write an index
/// of no blocks behind the last chunk and point the header at it (the file was lost). Closed
/// both with the disk still full and after space came back; reopened, the file is exactly
/// the state before the failure.
#[test]
fn closing_after_a_failed_commit_keeps_the_file() {
    for free_before_close in [false, true] {
        for chunk in [CHUNK, 200_000] {
            let Some(fs) = Tmpfs::new(&format!("close-{free_before_close}-{chunk}"), 2048) else { return };
            let path = fs.0.join("f.b2frame");
            let cp = CParams { typesize: 8, clevel: 1, ..CParams::default() };
            // Ballast, removed before closing in the second case to give the close room.
            std::fs::write(fs.0.join("ballast"), vec![1u8; 512 << 10]).unwrap();
            let mut s = SChunk::create(&path, true, cp, DParams::default()).unwrap();
            let mut k = 0;
            let err = loop {
                // Appends until the disk is full (no filler: the frame itself fills it).
                match s.append_data(&noise(k, chunk)) {
                    Ok(_) => k += 1,
                    Err(e) => break e,
                }
                assert!(k < 1000, "a 2 MiB tmpfs took {k} chunks of {chunk} bytes");
            };
            assert!(err.to_string().contains("No space left"), "{err}");
            let before = state(&s);
            assert_eq!(before.chunks.len() as u64, k);
            assert_eq!(on_disk(&path), before, "the failed append changed the file");
            if free_before_close {
                // Room for the close's compact tail: the case that wrote an empty index.
                std::fs::remove_file(fs.0.join("ballast")).unwrap();
            }
            drop(s);
            assert_eq!(on_disk(&path), before, "closing after the failure lost the file (chunk {chunk})");
            if free_before_close {
                // With room, the close still leaves the usual compact tail: the whole file is
                // one frame (loads as an in-memory frame too).
                let whole = oxblosc_frame::SChunk::from_cframe(&std::fs::read(&path).unwrap()).unwrap();
                assert_eq!(state(&whole), before, "the closed file is not one compact frame");
            }
        }
    }
}
