//! Builds the eBPF programs with the nightly toolchain and bpf-linker (see `cargo xtask setup`)
//! and leaves the object in OUT_DIR for `include_bytes_aligned!`. `AYA_BUILD_SKIP=1` skips it
//! for `cargo check`/clippy on machines without the eBPF toolchain.
use anyhow::{Context as _, anyhow};
use aya_build::{Package, Toolchain};

fn main() -> anyhow::Result<()> {
    let manifest_dir = std::env::var("CARGO_MANIFEST_DIR")?;
    let root = std::path::Path::new(&manifest_dir)
        .parent()
        .ok_or_else(|| anyhow!("userspace crate has no parent directory"))?
        .join("ebpf/strata-ebpf");
    let root = root
        .to_str()
        .context("non-UTF-8 path to ebpf/strata-ebpf")?;
    println!("cargo:rerun-if-changed={root}/../strata-common/src");
    // `strata report` links DuckDB's official shared library; the binary finds it where the
    // setup put it (see DUCKDB_LIB_DIR in .cargo/config.toml).
    println!("cargo:rerun-if-env-changed=DUCKDB_LIB_DIR");
    let duckdb = std::env::var("DUCKDB_LIB_DIR")
        .context("DUCKDB_LIB_DIR is not set (it comes from .cargo/config.toml)")?;
    if !std::path::Path::new(&duckdb).join("libduckdb.so").exists() {
        return Err(anyhow!(
            "{duckdb}/libduckdb.so is missing; run `cargo xtask setup` to fetch it"
        ));
    }
    println!("cargo:rustc-link-arg=-Wl,-rpath,{duckdb}");
    // The workspace's release profile links userspace with LTO; the kernel programs keep the
    // code bpf-linker makes without it (the verifier judges the code, not the source).
    // SAFETY: a build script runs one thread; the eBPF build below inherits the variable.
    unsafe { std::env::set_var("CARGO_PROFILE_RELEASE_LTO", "false") };
    aya_build::build_ebpf(
        [Package {
            name: "strata-ebpf",
            root_dir: root,
            ..Default::default()
        }],
        Toolchain::default(),
    )
    .context("building the eBPF programs failed; run `cargo xtask setup` to install the nightly rust-src component and bpf-linker")
}
