//! strata's library: everything but the command line, so that tests and tools can use the
//! same probe parser, schema and readers as the tracer.
pub mod aio;
pub mod attach;
pub mod btf;
pub mod cgroup;
pub mod correlate;
pub mod dataset;
pub mod events;
pub mod files;
pub mod handles;
pub mod hdf5;
pub mod kernel;
pub mod lustre;
pub mod netcdf;
pub mod pipeline_bench;
pub mod probes;
pub mod procs;
pub mod record;
pub mod report;
pub mod schema;
pub mod sink;
pub mod summary;
pub mod symbols;
pub mod syscalls;
pub mod target;
pub mod tracefs;
