//! Compiles the protobufs with `protox` (pure Rust: no system `protoc`) and generates the tonic
//! client and server code with `tonic-prost-build`.

#![allow(clippy::disallowed_macros)] // prints its own output, not lblab's

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protos = [
        "proto/lblab/v1/echo.proto",
        "proto/xds/data/orca/v3/orca_load_report.proto",
    ];
    for p in &protos {
        println!("cargo:rerun-if-changed={p}");
    }
    let fds = protox::compile(protos, ["proto"])?;
    // The encoded set, for the backend's reflection service.
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(
        out.join("lblab_descriptor.bin"),
        prost::Message::encode_to_vec(&fds),
    )?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(fds)?;
    Ok(())
}
