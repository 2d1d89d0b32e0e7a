//! The sim-vs-real agreement rule: the compare chart draws its band with it. The rule itself
//! lives beside `compare.csv`'s rows in the model crate, so that `lblab compare`, the chart and
//! the evidence documents judge agreement the same way.

pub use lblab_record::{agrees, AGREEMENT_ABSOLUTE_MS, AGREEMENT_RELATIVE};
