//! Limits that keep what a scenario asks for within memory and integer arithmetic. Each is far
//! beyond any sensible lab run; a value past one is a typo (or a fuzzer), rejected with a message
//! that names it.
//!
//! They sit on their own floor because both the scenario check and the fault check use them;
//! `scenario::limits` re-exports them at their old path.

/// Backends in the whole fleet.
pub const BACKENDS: u64 = 100_000;
/// Clients.
pub const CLIENTS: u32 = 100_000;
/// Clients × backends: every client keeps a connection and policy state per backend.
pub const CONNECTIONS: u64 = 10_000_000;
/// Workers of one backend.
pub const WORKERS: u32 = 100_000;
/// Closed loop: clients × concurrency, the requests in flight.
pub const IN_FLIGHT: u64 = 10_000_000;
/// Total offered requests per second.
pub const RATE: f64 = 1e9;
/// Noisy-neighbour bursts drawn in advance, over all targeted backends of one fault.
pub const NOISY_BURSTS: u64 = 10_000_000;
/// Characters in a scenario, group or policy name.
pub const NAME: usize = 100;
/// Bytes in a scenario file.
pub const FILE_BYTES: u64 = 16 << 20;
