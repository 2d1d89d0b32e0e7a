//! The flags of `lblab loadgen` and `lblab regress --targets`, in groups (clap's derive, flattened
//! into each command's arguments), and what each group becomes in the libraries' typed options
//! (targets, transport, call, load, plan): the libraries take those and know no flag, and the
//! errors here name the flag they are about.

mod calls;
mod load;
mod plan;
mod targets;
mod tls;

pub use calls::Calls;
pub use load::Load;
pub use plan::{dry_run_lines, none_succeeded, prepare, scenario, Given};
pub use targets::Targets;
pub use tls::Tls;

#[cfg(test)]
mod tests;
