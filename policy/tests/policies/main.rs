//! The policy crate's one integration-test binary: behaviour of every policy driven through the
//! public API with the harness in `harness.rs` (policy + fake endpoints + virtual clock).

mod harness;

mod config;
mod endpoint_updates;
mod envoy_peak_ewma;
mod finagle_peak_ewma;
mod least_request;
mod lists;
mod outlier_detection;
mod peak_ewma;
mod peak_ewma_variants;
mod pick_first;
mod properties;
mod queue_or_fail;
mod round_robin;
mod tower_reference;
mod vectors;
mod weighted_round_robin;
mod xds;
