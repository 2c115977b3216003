//! The command line as users of zstd/gzip/lz4 and of Bloscpack type it, rewritten into
//! oxblosc's subcommands before clap sees it (or refused with a hint, never guessed).
//!
//! * `oxblosc [-d|-z|-t|-l] [-c] [-k|--rm] [-f] [-q] [-o FILE] [-T N] [-1..-9] FILE...` works as
//!   in zstd: compress (the default), `-d` decompress, `-t` test (= `verify`), `-l` list
//!   (= `info`), one run per FILE.
//! * In a subcommand, `-0`..`-9` mean `--clevel N`.
//! * `-t` never means anything silently: zstd users mean "test", Bloscpack users (`blpk
//!   compress -t 4`) the typesize, older oxblosc the threads; inside a subcommand it is refused
//!   with a hint naming all three. Bloscpack's other single-letter options (`-l -n -s -z`),
//!   and its `-c CODEC` / `-k CHECKSUM`, are refused the same way.

use std::ffi::OsString;

use crate::error::CliError;

const SUBCOMMANDS: &[&str] =
    &["compress", "decompress", "append", "info", "verify", "chunk-info", "chunk-check", "help"];
const CODECS: &[&str] = &["blosclz", "lz4", "lz4hc", "zlib", "zstd", "snappy"];
const BLP_CHECKSUMS: &[&str] = &["none", "adler32", "crc32", "md5", "sha1", "sha224", "sha256", "sha384", "sha512"];
/// Subcommand options that take a value as the next argument (passed through in zstd mode).
const VALUED: &[&str] = &["--codec", "--clevel", "--filter", "--typesize", "--chunk-size", "--block-size", "--split"];

const T_HINT: &str = "-t is not an oxblosc option: for threads use -T N, for the item size --typesize N \
                      (Bloscpack's -t), to test a file `oxblosc verify FILE` or `oxblosc -t FILE` (zstd's -t)";

fn bloscpack_hint(flag: &str) -> Option<&'static str> {
    Some(match flag {
        "-l" => "-l is Bloscpack's level: use --clevel N or -N (e.g. -9)",
        "-n" => "-n is Bloscpack's thread count: use -T N (--threads)",
        "-s" => "-s is Bloscpack's no-shuffle: use --filter none",
        "-z" => "-z is Bloscpack's chunk size: use --chunk-size SIZE (e.g. 4M)",
        _ => return None,
    })
}

/// The argument lists to run in turn (one per file in zstd mode; the input itself otherwise).
pub fn rewrite(args: Vec<OsString>) -> Result<Vec<Vec<OsString>>, CliError> {
    let prog = args.first().cloned().unwrap_or_else(|| "oxblosc".into());
    let rest: Vec<String> = match args[1.min(args.len())..].iter().map(|a| a.clone().into_string()).collect() {
        Ok(v) => v,
        // Non-UTF-8 paths: leave everything to clap (no habit rewriting).
        Err(_) => return Ok(vec![args]),
    };
    let Some(first) = rest.first() else { return Ok(vec![args]) };
    if SUBCOMMANDS.contains(&first.as_str()) {
        let sub = subcommand(first, &rest[1..])?;
        let mut out = vec![prog, first.into()];
        out.extend(sub.into_iter().map(OsString::from));
        return Ok(vec![out]);
    }
    let is_option = first.starts_with('-') && first != "-";
    let top_level = matches!(first.as_str(), "-h" | "--help" | "-V" | "--version");
    if top_level || (!is_option && !std::path::Path::new(first).exists()) {
        return Ok(vec![args]); // clap's own help, version or "unrecognized subcommand"
    }
    zstd_style(prog, &rest)
}

/// Subcommand arguments with `-N` levels expanded and Bloscpack/zstd look-alikes refused.
fn subcommand(sub: &str, args: &[String]) -> Result<Vec<String>, CliError> {
    let mut out = Vec::with_capacity(args.len() + 1);
    let mut k = 0;
    while k < args.len() {
        let a = &args[k];
        if a == "--" {
            out.extend(args[k..].iter().cloned());
            break;
        }
        let next = args.get(k + 1).map(String::as_str);
        if let Some(level) = level_flag(a) {
            out.extend(["--clevel".to_string(), level.to_string()]);
        } else if a == "-t" || (a.starts_with("-t") && !a.starts_with("--")) {
            return Err(CliError::new(T_HINT));
        } else if let Some(h) = bloscpack_hint(a) {
            return Err(CliError::new(h));
        } else if a == "-c" && sub == "compress" && next.is_some_and(|n| names_one_of(n, CODECS)) {
            return Err(CliError::new(
                "-c writes to stdout (as in zstd and gzip); to choose the codec use --codec NAME (Bloscpack's -c)",
            ));
        } else if a == "-k" && next.is_some_and(|n| names_one_of(n, BLP_CHECKSUMS)) {
            return Err(CliError::new(
                "-k keeps the input (the default); oxblosc always stores xxh3 checksums per chunk, \
                 --no-checksum leaves them out (Bloscpack's -k chose the checksum)",
            ));
        } else {
            if VALUED.contains(&a.as_str()) {
                if let Some(v) = next {
                    out.extend([a.clone(), v.to_string()]);
                    k += 2;
                    continue;
                }
            }
            out.push(a.clone());
        }
        k += 1;
    }
    Ok(out)
}

/// `n` is one of `names` and not an existing file (then it is meant as a file).
fn names_one_of(n: &str, names: &[&str]) -> bool {
    names.contains(&n.to_ascii_lowercase().as_str()) && !std::path::Path::new(n).exists()
}

/// `-0`..`-9` as a level.
fn level_flag(a: &str) -> Option<u8> {
    let b = a.as_bytes();
    (b.len() == 2 && b[0] == b'-' && b[1].is_ascii_digit()).then(|| b[1] - b'0')
}

/// `oxblosc [options] FILE...` as zstd reads it.
fn zstd_style(prog: OsString, args: &[String]) -> Result<Vec<Vec<OsString>>, CliError> {
    let mut mode = "compress";
    // Option groups (a flag and its value, if any), in order.
    let mut opts: Vec<Vec<String>> = Vec::new();
    let mut output: Option<String> = None;
    let mut files: Vec<String> = Vec::new();
    let mut k = 0;
    let value = |k: usize, name: &str| -> Result<String, CliError> {
        args.get(k + 1).cloned().ok_or_else(|| CliError::new(format!("{name} needs a value (see oxblosc --help)")))
    };
    let flag = |f: &str| vec![f.to_string()];
    while k < args.len() {
        let a = args[k].as_str();
        match a {
            "--" => {
                files.extend(args[k + 1..].iter().cloned());
                break;
            }
            "-d" | "--decompress" | "--uncompress" => mode = "decompress",
            "-z" | "--compress" => mode = "compress",
            "-t" | "--test" => mode = "verify",
            "-l" | "--list" => mode = "info",
            "-c" | "--stdout" => opts.push(flag("--stdout")),
            "-k" | "--keep" => opts.push(flag("--keep")),
            "-f" | "--force" => opts.push(flag("--force")),
            "-q" | "--quiet" => opts.push(flag("--quiet")),
            "-o" | "--output" => {
                output = Some(value(k, a)?);
                k += 1;
            }
            "-T" | "--threads" => {
                opts.push(vec!["--threads".into(), value(k, a)?]);
                k += 1;
            }
            _ if VALUED.contains(&a) => {
                opts.push(vec![a.to_string(), value(k, a)?]);
                k += 1;
            }
            "-" => files.push(a.into()),
            // Other long options (--rm, --json, --sparse, ...) pass through; clap judges them.
            _ if a.starts_with("--") => opts.push(flag(a)),
            _ if a.starts_with("-T") => opts.push(vec!["--threads".into(), a[2..].to_string()]),
            _ if a.starts_with('-') => {
                // Bundled short flags: -dc, -kf9, -d -q ...
                for c in a[1..].chars() {
                    match c {
                        'd' => mode = "decompress",
                        'z' => mode = "compress",
                        't' => mode = "verify",
                        'l' => mode = "info",
                        'c' => opts.push(flag("--stdout")),
                        'k' => opts.push(flag("--keep")),
                        'f' => opts.push(flag("--force")),
                        'q' => opts.push(flag("--quiet")),
                        '0'..='9' => opts.push(vec!["--clevel".into(), c.to_string()]),
                        _ if bloscpack_hint(&format!("-{c}")).is_some() => {
                            return Err(CliError::new(bloscpack_hint(&format!("-{c}")).unwrap_or_default()))
                        }
                        _ => {
                            return Err(CliError::new(format!(
                                "unknown option -{c} in {a} (zstd-style flags: -d -z -t -l -c -k -f -q -o FILE -T N \
                                 -0..-9 --rm; see oxblosc --help)"
                            )))
                        }
                    }
                }
            }
            _ => files.push(a.into()),
        }
        k += 1;
    }
    if files.is_empty() {
        return Err(CliError::new("no input file (see oxblosc --help)"));
    }
    // `blpk -n 4 compress x` style: options before a subcommand name.
    if let Some(sub) = files.iter().find(|f| SUBCOMMANDS.contains(&f.as_str()) && !std::path::Path::new(f).exists()) {
        return Err(CliError::new(format!(
            "options go after the subcommand: oxblosc {sub} [OPTIONS] FILE (threads: -T N; Bloscpack's global -n/-v/-d are not options here)"
        )));
    }
    if output.is_some() && files.len() > 1 {
        return Err(CliError::new("-o names one output: give one input file"));
    }
    // The read-only commands keep only the options they take (zstd's -k/-c/-f mean nothing there).
    let writes_only = ["--stdout", "--keep", "--force", "--clevel", "--rm"];
    let keep = |g: &&Vec<String>| match mode {
        "verify" => !writes_only.contains(&g[0].as_str()),
        "info" => !writes_only.contains(&g[0].as_str()) && g[0] != "--threads",
        _ => true,
    };
    let groups: Vec<OsString> = opts.iter().filter(keep).flatten().map(OsString::from).collect();
    let head = |v: &mut Vec<OsString>| {
        v.extend([prog.clone(), mode.into()]);
        v.extend(groups.iter().cloned());
    };
    if mode == "verify" {
        let mut v = Vec::new();
        head(&mut v);
        v.extend(files.iter().map(OsString::from));
        return Ok(vec![v]);
    }
    let mut runs = Vec::new();
    for f in &files {
        let mut v = Vec::new();
        head(&mut v);
        v.push(f.into());
        if let Some(o) = &output {
            v.extend(["--output".into(), o.into()]);
        }
        runs.push(v);
    }
    Ok(runs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(a: &[&str]) -> Result<Vec<Vec<String>>, String> {
        let args = std::iter::once("oxblosc").chain(a.iter().copied()).map(OsString::from).collect();
        rewrite(args)
            .map(|r| r.into_iter().map(|v| v.into_iter().map(|s| s.into_string().unwrap()).collect()).collect())
            .map_err(|e| e.what)
    }

    #[test]
    fn zstd_habits_become_subcommands() {
        let f = "/etc/hostname";
        assert_eq!(run(&["-d", f]).unwrap(), [vec!["oxblosc", "decompress", f]]);
        assert_eq!(run(&["-dc", f]).unwrap(), [vec!["oxblosc", "decompress", "--stdout", f]]);
        assert_eq!(
            run(&["-9", "-T2", f]).unwrap(),
            [vec!["oxblosc", "compress", "--clevel", "9", "--threads", "2", f]]
        );
        assert_eq!(run(&["-t", f, f]).unwrap(), [vec!["oxblosc", "verify", f, f]]);
        assert_eq!(run(&[f, "-o", "x"]).unwrap(), [vec!["oxblosc", "compress", f, "--output", "x"]]);
        assert_eq!(run(&["--rm", "-k", f]).unwrap(), [vec!["oxblosc", "compress", "--rm", "--keep", f]]);
        assert!(run(&["-o", "x", f, f]).is_err());
        assert!(run(&["-x", f]).unwrap_err().contains("unknown option -x"));
        assert!(run(&["-d", "decompress", f]).unwrap_err().contains("after the subcommand"));
        assert_eq!(run(&["-lk", "--json", f]).unwrap(), [vec!["oxblosc", "info", "--json", f]]);
        assert_eq!(run(&["-tq", "-T1", "-k", f]).unwrap(), [vec!["oxblosc", "verify", "--quiet", "--threads", "1", f]]);
        assert_eq!(run(&["nonexistent-word"]).unwrap(), [vec!["oxblosc", "nonexistent-word"]]);
    }

    #[test]
    fn subcommands_take_levels_and_refuse_look_alikes() {
        assert_eq!(run(&["compress", "-7", "x"]).unwrap(), [vec!["oxblosc", "compress", "--clevel", "7", "x"]]);
        for bad in [&["compress", "-t", "4", "x"][..], &["decompress", "-t4", "x"], &["compress", "-l", "5", "x"]] {
            assert!(run(bad).is_err(), "{bad:?}");
        }
        assert!(run(&["compress", "-t", "4", "x"]).unwrap_err().contains("--typesize"));
        assert!(run(&["compress", "-c", "zstd", "x"]).unwrap_err().contains("--codec"));
        assert!(run(&["compress", "-k", "adler32", "x"]).unwrap_err().contains("keeps the input"));
        // A value that looks like a level stays a value.
        assert_eq!(
            run(&["compress", "--filter", "trunc_prec:-3", "x"]).unwrap(),
            [vec!["oxblosc", "compress", "--filter", "trunc_prec:-3", "x"]]
        );
    }
}
