//! Every committed `compare.csv` and peak-EWMA grid (`sweep/sweep.csv`) reads into its typed row
//! ([`CompareRow`], [`GridRow`]) and writes back byte for byte: the schemas `lblab compare` and
//! `lblab sweep` write are the ones the committed evidence holds.

use lblab_record::CompareRow;
use lblab_sim::sweep::GridRow;

/// Reads `results/<scenario>/<file>` of every scenario into rows of `T` and checks that `write`
/// gives the same bytes back; returns how many files it checked.
fn round_trip<T: serde::de::DeserializeOwned>(
    file: &str,
    write: impl Fn(&[T]) -> Result<Vec<u8>, csv::Error>,
) -> usize {
    let results = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../results");
    let mut checked = 0;
    for entry in std::fs::read_dir(&results).expect("results/") {
        let path = entry.expect("entry").path().join(file);
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let rows: Vec<T> = csv::Reader::from_reader(text.as_bytes())
            .deserialize()
            .collect::<Result<_, _>>()
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let back = write(&rows).expect("written");
        assert_eq!(String::from_utf8(back).unwrap(), text, "{}", path.display());
        checked += 1;
    }
    checked
}

#[test]
fn committed_compare_files_round_trip_through_the_schema() {
    let n = round_trip("compare/compare.csv", CompareRow::to_csv);
    assert!(n >= 10, "only {n} compare.csv files found");
}

#[test]
fn committed_grids_round_trip_through_the_schema() {
    let n = round_trip("sweep/sweep.csv", GridRow::to_csv);
    assert!(n >= 1, "no committed grid found");
}
