//! Every committed peak-EWMA grid (`results/<scenario>/sweep/sweep.csv`) reads into
//! [`GridRow`] and writes back byte for byte: the schema `lblab sweep` writes is the one the
//! committed evidence holds.

use lblab_sim::sweep::GridRow;

#[test]
fn committed_grids_round_trip_through_the_schema() {
    let results = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../results");
    let mut checked = 0;
    for entry in std::fs::read_dir(&results).expect("results/") {
        let path = entry.expect("entry").path().join("sweep/sweep.csv");
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let rows: Vec<GridRow> = csv::Reader::from_reader(text.as_bytes())
            .deserialize()
            .collect::<Result<_, _>>()
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let back = GridRow::to_csv(&rows).expect("written");
        assert_eq!(String::from_utf8(back).unwrap(), text, "{}", path.display());
        checked += 1;
    }
    assert!(checked >= 1, "no committed grid found");
}
