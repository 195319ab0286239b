//! The configuration file, `/etc/strata/strata.toml` (or `--config FILE`): site defaults for
//! `strata record` and `strata daemon`. Every key is also a flag; a flag wins over the file,
//! the file over the built-in default. docs/admin.md lists the keys.
use std::{
    path::{Path, PathBuf},
    time::Duration,
};

use serde::Deserialize;

pub const DEFAULT_PATH: &str = "/etc/strata/strata.toml";

#[derive(Debug, Default, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Probe list instead of the built-in one.
    pub probes: Option<PathBuf>,
    /// Layers to trace (as `--layers`).
    pub layers: Option<Vec<String>>,
    /// Layers left out (as `--skip-layers`).
    pub skip_layers: Option<Vec<String>>,
    /// Ring buffer size in MiB.
    pub ring_buffer_mib: Option<u32>,
    /// The most memory copied-out records may take, in MiB (default: 8 ring buffers).
    pub backlog_mib: Option<u32>,
    /// How often rows are written out ("1s", "500ms").
    pub flush_interval: Option<String>,
    /// `btf`, `raw` or `per-syscall`.
    pub syscall_mode: Option<String>,
    /// The node name in `host=` partitions (default: the hostname).
    pub host: Option<String>,
    /// Permissions of the Parquet files written, in octal ("0640"); directories get the
    /// matching search bits.
    pub file_mode: Option<String>,
    /// Only processes of these users (names or numeric uids) are traced.
    pub users: Option<Vec<String>>,
    /// Only rows about files under these directories are written.
    pub paths: Option<Vec<String>>,
    /// Expedited RCU grace periods while probes attach during a run and detach at its end.
    pub expedite_grace_periods: Option<bool>,
    /// A run's files are merged while it records each time it has written this many more
    /// (0: never).
    pub compact_every: Option<u32>,
    #[serde(default)]
    pub daemon: DaemonConfig,
}

#[derive(Debug, Default, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DaemonConfig {
    /// Where job datasets go: `<output_root>/<job>/<table>/host=<node>/`.
    pub output_root: Option<PathBuf>,
    /// The control socket.
    pub socket: Option<PathBuf>,
    /// Whether a job's files on this node are merged (`strata compact`) once its dataset is
    /// closed.
    pub compact: Option<bool>,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read the configuration file {0}: {1}")]
    Read(PathBuf, std::io::Error),
    #[error("configuration file {0}: {1}")]
    Parse(PathBuf, String),
}

/// Reads the configuration: `explicit` must exist; the default file may be absent.
pub fn load(explicit: Option<&Path>) -> Result<Config, ConfigError> {
    let (path, required) = match explicit {
        Some(p) => (p.to_path_buf(), true),
        None => (PathBuf::from(DEFAULT_PATH), false),
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if !required && e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Config::default());
        }
        Err(e) => return Err(ConfigError::Read(path, e)),
    };
    let cfg = parse(&text).map_err(|e| ConfigError::Parse(path.clone(), e))?;
    Ok(cfg)
}

pub fn parse(text: &str) -> Result<Config, String> {
    let cfg: Config = toml::from_str(text).map_err(|e| e.to_string())?;
    // Check the values that are not plain strings now, with the key's name.
    if let Some(m) = &cfg.file_mode {
        file_mode(m).map_err(|e| format!("file_mode: {e}"))?;
    }
    if let Some(d) = &cfg.flush_interval {
        parse_duration(d).map_err(|e| format!("flush_interval: {e}"))?;
    }
    if let Some(m) = &cfg.syscall_mode {
        <crate::attach::SyscallMode as clap::ValueEnum>::from_str(m, false).map_err(|_| {
            format!("syscall_mode: {m:?} is not one of \"btf\", \"raw\", \"per-syscall\"")
        })?;
    }
    if let Some(layers) = &cfg.layers {
        crate::probes::Layer::parse_list(layers).map_err(|e| format!("layers: {e}"))?;
    }
    if let Some(layers) = &cfg.skip_layers {
        crate::probes::Layer::parse_list(layers).map_err(|e| format!("skip_layers: {e}"))?;
    }
    if let Some(paths) = &cfg.paths {
        if let Some(p) = paths.iter().find(|p| !p.starts_with('/')) {
            return Err(format!("paths: {p:?} is not an absolute directory"));
        }
    }
    if cfg.ring_buffer_mib == Some(0) {
        return Err("ring_buffer_mib must be at least 1".into());
    }
    if cfg.backlog_mib == Some(0) {
        return Err("backlog_mib must be at least 1".into());
    }
    Ok(cfg)
}

/// An octal permission string: owner-writable files no one else may write.
pub fn file_mode(s: &str) -> Result<u32, String> {
    let mode = u32::from_str_radix(s.trim_start_matches("0o"), 8)
        .map_err(|_| format!("{s:?} is not an octal mode like \"0640\""))?;
    if mode & !0o666 != 0 || mode & 0o600 != 0o600 || mode & 0o022 != 0 {
        return Err(format!(
            "{s:?}: the owner must read and write, others must not write, nothing is executable (e.g. 0600, 0640, 0644)"
        ));
    }
    Ok(mode)
}

/// "30s", "5m", "250ms", "2h"; a bare number is seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let (num, unit) = s
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .map_or((s, "s"), |i| s.split_at(i));
    let v: f64 = num
        .parse()
        .map_err(|_| format!("bad duration {s:?} (try 30s, 5m, 2h)"))?;
    let secs = match unit {
        "ms" => v / 1000.0,
        "s" | "" => v,
        "m" => v * 60.0,
        "h" => v * 3600.0,
        _ => return Err(format!("bad duration unit in {s:?} (ms, s, m or h)")),
    };
    if !secs.is_finite() || secs <= 0.0 {
        return Err(format!("duration {s:?} must be positive"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Numeric uids of user names or numbers.
pub fn uids(users: &[String]) -> anyhow::Result<Vec<u32>> {
    users
        .iter()
        .map(|u| match u.parse::<u32>() {
            Ok(n) => Ok(n),
            Err(_) => nix::unistd::User::from_name(u)
                .ok()
                .flatten()
                .map(|x| x.uid.as_raw())
                .ok_or_else(|| anyhow::anyhow!("users: no user {u:?} on this node")),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_file_parses() {
        let cfg = parse(
            r#"
            probes = "/etc/strata/probes.toml"
            layers = ["posix", "mpiio"]
            skip_layers = ["stdio"]
            ring_buffer_mib = 64
            backlog_mib = 256
            flush_interval = "2s"
            syscall_mode = "per-syscall"
            host = "n01"
            file_mode = "0600"
            users = ["root", "1001"]
            paths = ["/lustre", "/scratch"]
            expedite_grace_periods = false
            compact_every = 100
            [daemon]
            output_root = "/lustre/strata"
            socket = "/run/strata/s.sock"
            compact = false
            "#,
        )
        .unwrap();
        assert_eq!(cfg.ring_buffer_mib, Some(64));
        assert_eq!(cfg.skip_layers, Some(vec!["stdio".to_string()]));
        assert_eq!(cfg.backlog_mib, Some(256));
        assert_eq!(cfg.expedite_grace_periods, Some(false));
        assert_eq!(cfg.daemon.compact, Some(false));
        assert_eq!(cfg.compact_every, Some(100));
        assert_eq!(
            cfg.daemon.output_root.as_deref(),
            Some(Path::new("/lustre/strata"))
        );
        assert_eq!(uids(cfg.users.as_ref().unwrap()).unwrap(), vec![0, 1001]);
        assert_eq!(parse("").unwrap(), Config::default());
    }

    #[test]
    fn the_shipped_example_parses() {
        let cfg = parse(include_str!("../../dist/strata.toml")).unwrap();
        assert_eq!(cfg.file_mode.as_deref(), Some("0640"));
        assert!(cfg.daemon.output_root.is_some() && cfg.daemon.socket.is_some());
    }

    #[test]
    fn mistakes_are_named() {
        let e = parse("ring_bufer_mib = 4").unwrap_err();
        assert!(e.contains("unknown field `ring_bufer_mib`"), "{e}");
        let e = parse("file_mode = \"0666\"").unwrap_err();
        assert!(
            e.contains("file_mode") && e.contains("others must not write"),
            "{e}"
        );
        let e = parse("file_mode = \"rw\"").unwrap_err();
        assert!(e.contains("octal"), "{e}");
        let e = parse("skip_layers = [\"stdoi\"]").unwrap_err();
        assert!(e.contains("skip_layers") && e.contains("\"stdoi\""), "{e}");
        let e = parse("flush_interval = \"3 weeks\"").unwrap_err();
        assert!(e.contains("flush_interval"), "{e}");
        let e = parse("layers = [\"posix\", \"gpu\"]").unwrap_err();
        assert!(e.contains("layers") && e.contains("gpu"), "{e}");
        let e = parse("[daemon]\nroot = \"/x\"").unwrap_err();
        assert!(e.contains("unknown field `root`"), "{e}");
        let e = parse("paths = [\"lustre\"]").unwrap_err();
        assert!(e.contains("paths") && e.contains("absolute"), "{e}");
        let e = parse("syscall_mode = \"fast\"").unwrap_err();
        assert!(e.contains("syscall_mode"), "{e}");
        let e = parse("backlog_mib = 0").unwrap_err();
        assert!(e.contains("backlog_mib must be at least 1"), "{e}");
        assert!(uids(&["no-such-user-strata".into()]).is_err());
        let e = load(Some(Path::new("/nonexistent/strata.toml")))
            .unwrap_err()
            .to_string();
        assert!(e.contains("/nonexistent/strata.toml"), "{e}");
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("5m").unwrap(), Duration::from_secs(300));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("2").unwrap(), Duration::from_secs(2));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("3 weeks").is_err());
    }
}
