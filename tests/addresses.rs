//! The guard that keeps lblab's tests and scripts on this machine: no source file (Rust, Python,
//! Node, shell, scenario) holds an IPv4 or IPv6 literal other than loopback (`127.0.0.0/8`, `::1`)
//! or an unspecified listen address (`0.0.0.0`, `::`), unless its line says why it is never
//! dialled with the marker `lblab:not-dialled` (an address that is only parsed, classified or
//! refused). Tests and scripts may send traffic to loopback, or into network namespaces they make
//! themselves, and nowhere else.
//!
//! The scan reads the working tree (not git), skipping build output (`target/`, `node_modules/`,
//! `lblab-out/`), hidden folders other than `.ci/`, and the committed evidence in `results/`,
//! which holds measured data, not code.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};

use lblab_loadgen::target::stays_on_this_host;

/// What marks a line whose address is never dialled.
const MARKER: &str = "lblab:not-dialled";

/// Source files by extension, and by name for scripts without one.
const EXTENSIONS: &[&str] = &["rs", "py", "js", "mjs", "cjs", "ts", "sh", "bash", "toml"];
const NAMES: &[&str] = &["run"];

/// Folders that hold no source of the project's own.
const SKIPPED: &[&str] = &[
    "target",
    "node_modules",
    "lblab-out",
    "results",
    "corpus",
    "artifacts",
];

/// Every address literal on `line` that may name another host, unless the line carries the
/// marker.
fn off_host_literals(line: &str) -> Vec<String> {
    if line.contains(MARKER) {
        return Vec::new();
    }
    let mut found = Vec::new();
    // Tokens of the characters an address literal is made of; a token with any other letter is
    // a word or a path (`std::fs`), not an address.
    let tokens =
        line.split(|c: char| !(c.is_ascii_alphanumeric() || c == ':' || c == '.' || c == '_'));
    for token in tokens.filter(|t| !t.is_empty()) {
        if !token
            .chars()
            .all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.')
        {
            continue;
        }
        let mut candidates: Vec<IpAddr> = Vec::new();
        if token.matches(':').count() >= 2 {
            if let Ok(v6) = token.trim_end_matches('.').parse::<Ipv6Addr>() {
                candidates.push(IpAddr::V6(v6));
            }
        }
        if candidates.is_empty() {
            // `a.b.c.d`, alone or as the host of `a.b.c.d:port`.
            for part in token.split(':') {
                if let Ok(v4) = part.trim_matches('.').parse::<Ipv4Addr>() {
                    if part.trim_matches('.').split('.').count() == 4 {
                        candidates.push(IpAddr::V4(v4));
                    }
                }
            }
        }
        for ip in candidates {
            if !(stays_on_this_host(ip) || ip.is_unspecified()) {
                found.push(ip.to_string());
            }
        }
    }
    found
}

fn source_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let path = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            let hidden = name.starts_with('.') && name != ".ci";
            if !hidden && !SKIPPED.contains(&name.as_str()) {
                source_files(&path, out);
            }
        } else {
            let ext = path.extension().and_then(|x| x.to_str()).unwrap_or("");
            if EXTENSIONS.contains(&ext) || NAMES.contains(&name.as_str()) {
                out.push(path);
            }
        }
    }
}

#[test]
fn no_test_or_script_names_an_address_off_this_host() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    source_files(root, &mut files);
    files.sort();
    assert!(
        files.iter().any(|f| f.ends_with("tests/cli.rs"))
            && files.iter().any(|f| f.ends_with(".ci/run")),
        "the scan must reach the tests and CI's script"
    );
    let mut offenders = Vec::new();
    for file in &files {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        for (n, line) in text.lines().enumerate() {
            for ip in off_host_literals(line) {
                let rel = file.strip_prefix(root).unwrap_or(file);
                offenders.push(format!(
                    "{}:{}: {ip}: {}",
                    rel.display(),
                    n + 1,
                    line.trim()
                ));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "addresses off this host in tests or scripts (dial loopback or a namespace you make; a \
         literal that is never dialled carries `{MARKER}` on its line):\n{}",
        offenders.join("\n")
    );
}

#[test]
fn the_guard_tells_local_addresses_from_others() {
    // The samples are assembled at run time, so this file holds no literal of its own to flag.
    let off = |a: &str| format!("let t = \"{a}:50051\";");
    for local in [
        "127.0.0.1",
        "127.8.9.10",
        "0.0.0.0",
        "[::1]",
        "[::]",
        "[::ffff:127.0.0.1]",
    ] {
        assert!(off_host_literals(&off(local)).is_empty(), "{local}");
    }
    for other in [
        ["192", "0", "2", "1"].join("."),
        ["10", "0", "0", "5"].join("."),
        format!("[{}]", ["2001", "db8", "", "1"].join(":")),
        format!("[{}]", ["fe80", "", "1"].join(":")),
    ] {
        let shown = other.trim_matches(|c| c == '[' || c == ']').to_string();
        assert_eq!(off_host_literals(&off(&other)), vec![shown], "{other}");
        let marked = format!("{} // {MARKER}", off(&other));
        assert!(off_host_literals(&marked).is_empty(), "{other}");
    }
    // Paths, versions and words are not addresses.
    for not in [
        "std::fs::read",
        "Self::add",
        "version = \"1.88.0\"",
        "a::b::c",
        "dead::beef_x",
    ] {
        assert!(off_host_literals(not).is_empty(), "{not}");
    }
}
