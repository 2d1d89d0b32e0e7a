//! Every committed `compare.csv` reads into the model's [`CompareRow`] and writes back byte for
//! byte: the one schema `lblab compare` writes is the one the committed evidence holds.

use lblab_model::results::CompareRow;

#[test]
fn committed_compare_files_round_trip_through_the_schema() {
    let results = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../results");
    let mut checked = 0;
    for entry in std::fs::read_dir(&results).expect("results/") {
        let path = entry.expect("entry").path().join("compare/compare.csv");
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let rows: Vec<CompareRow> = csv::Reader::from_reader(text.as_bytes())
            .deserialize()
            .collect::<Result<_, _>>()
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let back = CompareRow::to_csv(&rows).expect("written");
        assert_eq!(String::from_utf8(back).unwrap(), text, "{}", path.display());
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} compare.csv files found");
}
