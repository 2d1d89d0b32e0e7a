//! The canonical scenarios (`scenarios/*.toml`) built into the binary, so that a bare name
//! (`lblab sim one-slow`) works wherever lblab runs, not only inside the checkout
//! ([`crate::scenario::scenario_path`]). A test checks that this table holds every file of
//! `scenarios/` as it is; adding a scenario there means adding its line here.

use std::path::{Path, PathBuf};

/// Every canonical scenario: its name (the file stem) and its text, sorted by name.
pub const SCENARIOS: &[(&str, &str)] = &[
    (
        "cold-start",
        include_str!("../../scenarios/cold-start.toml"),
    ),
    (
        "cpu-throttle",
        include_str!("../../scenarios/cpu-throttle.toml"),
    ),
    (
        "crash-restart",
        include_str!("../../scenarios/crash-restart.toml"),
    ),
    ("fail-fast", include_str!("../../scenarios/fail-fast.toml")),
    ("gc-pauses", include_str!("../../scenarios/gc-pauses.toml")),
    (
        "gc-pauses-busy",
        include_str!("../../scenarios/gc-pauses-busy.toml"),
    ),
    ("healthy", include_str!("../../scenarios/healthy.toml")),
    (
        "heterogeneous",
        include_str!("../../scenarios/heterogeneous.toml"),
    ),
    (
        "heterogeneous-busy",
        include_str!("../../scenarios/heterogeneous-busy.toml"),
    ),
    (
        "long-streams",
        include_str!("../../scenarios/long-streams.toml"),
    ),
    (
        "many-clients",
        include_str!("../../scenarios/many-clients.toml"),
    ),
    (
        "noisy-neighbour",
        include_str!("../../scenarios/noisy-neighbour.toml"),
    ),
    ("one-slow", include_str!("../../scenarios/one-slow.toml")),
    (
        "one-slow-busy",
        include_str!("../../scenarios/one-slow-busy.toml"),
    ),
    ("slow-path", include_str!("../../scenarios/slow-path.toml")),
    (
        "streaming-mix",
        include_str!("../../scenarios/streaming-mix.toml"),
    ),
    ("sub-ms", include_str!("../../scenarios/sub-ms.toml")),
    ("zones", include_str!("../../scenarios/zones.toml")),
];

/// The text of the built-in scenario `name`, if there is one.
pub fn text(name: &str) -> Option<&'static str> {
    SCENARIOS.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// The built-in scenarios' names, sorted.
pub fn names() -> Vec<String> {
    SCENARIOS.iter().map(|(n, _)| n.to_string()).collect()
}

/// The folder the built-in scenarios are written into to be run: `lblab/scenarios-<version>-<hash
/// of their texts>` in the user's cache folder (`$XDG_CACHE_HOME`, else `$HOME/.cache`, else the
/// temporary folder), so that every command reads a real file (the run folder is named after it,
/// `deploy` copies it) and two builds with different scenarios never share one.
pub fn cache_dir() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| Path::new(&h).join(".cache"))
        })
        .unwrap_or_else(std::env::temp_dir);
    // FNV-1a over every name and text: the same table, the same folder.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for (name, text) in SCENARIOS {
        for b in name.bytes().chain([0]).chain(text.bytes()).chain([0]) {
            hash ^= u64::from(b);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    base.join("lblab").join(format!(
        "scenarios-{}-{hash:016x}",
        env!("CARGO_PKG_VERSION")
    ))
}

/// Writes the built-in scenario `name` into [`cache_dir`] (unless the file there already holds
/// its text) and returns the file's path; `None` if there is no such scenario.
pub fn materialize(name: &str) -> Option<std::io::Result<PathBuf>> {
    let text = text(name)?;
    let path = cache_dir().join(format!("{name}.toml"));
    Some(write_if_changed(&path, text).map(|()| path))
}

/// Writes `text` to `path` (through a temporary file and a rename, so that two runs starting at
/// once never read a half-written file) unless it already holds exactly that.
fn write_if_changed(path: &Path, text: &str) -> std::io::Result<()> {
    if std::fs::read(path).is_ok_and(|old| old == text.as_bytes()) {
        return Ok(());
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    lblab_record::write_atomic(path, text.as_bytes()).map_err(std::io::Error::other)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_holds_every_canonical_scenario_as_it_is() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
        let on_disk = lblab_model::find::scenario_names(&dir);
        assert_eq!(
            names(),
            on_disk,
            "scenarios/ and the built-in table differ: a scenario added to or removed from \
             scenarios/ needs its line in SCENARIOS (lab/src/builtin.rs)"
        );
        for (name, text) in SCENARIOS {
            let file = std::fs::read_to_string(dir.join(format!("{name}.toml"))).unwrap();
            assert_eq!(*text, file, "{name}.toml changed");
            lblab_model::Scenario::parse(text).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }
}
