//! `## Reproduce`: the commands behind the document.

use std::fmt::Write as _;

pub(super) fn reproduce(out: &mut String) {
    w!(out, "## Reproduce\n");
    w!(
        out,
        "```sh\n\
         scripts/evidence.sh            # every scenario: simulated over seeds, then real vs simulated; then this report\n\
         SKIP_REAL=1 scripts/evidence.sh  # the simulator only (minutes)\n\
         scripts/sweeps.sh              # the sweeps in sweeps/\n\
         scripts/real-repeat.sh         # the repeated real runs of one-slow\n\
         cargo run --release -- report  # only this document and the pages, from the files as they are\n\
         ```\n"
    );
    w!(
        out,
        "A test (`evidence/tests/regenerate.rs`) regenerates every document from the committed \
         files and fails if the text differs, so no number here can drift from its file.\n"
    );
}
