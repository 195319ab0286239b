//! The daemon's control interface: one JSON request per connection on a Unix socket that
//! only root can open, one JSON response back. `strata ctl` is the client; Slurm prolog and
//! epilog scripts call it.
use std::{
    io::{BufRead as _, BufReader, Write as _},
    os::unix::net::UnixStream,
    path::{Path, PathBuf},
    time::Duration,
};

use anyhow::Context as _;
use serde::{Deserialize, Serialize};

pub const DEFAULT_SOCKET: &str = "/run/strata/strata.sock";

/// How long a client waits for the daemon's answer.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "cmd", rename_all = "lowercase")]
pub enum Request {
    /// Start tracing a job into `<output root>/<job>/`. Exactly one of `cgroup` and
    /// `slurm_job`; a cgroup that does not exist yet is waited for.
    Start {
        job: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cgroup: Option<PathBuf>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        slurm_job: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        slurm_step: Option<String>,
    },
    /// Stop tracing a job and close its dataset.
    Stop { job: String },
    /// The jobs being traced.
    Status,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Response {
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default)]
    pub jobs: Vec<JobStatus>,
}

impl Response {
    pub fn error(e: impl std::fmt::Display) -> Self {
        Self {
            ok: false,
            error: Some(e.to_string()),
            jobs: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobStatus {
    pub job: String,
    /// `waiting` (for its cgroup to appear), `tracing`, or `stopped`.
    pub state: String,
    pub cgroup: Option<PathBuf>,
    /// Why a waiting job's cgroup, which exists, is not traced yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub dataset: PathBuf,
    pub events: u64,
    pub rows: u64,
    pub bytes: u64,
}

/// Sends one request to the daemon and returns its answer.
pub fn send(socket: &Path, req: &Request) -> anyhow::Result<Response> {
    let mut stream = UnixStream::connect(socket).with_context(|| {
        format!(
            "cannot reach the strata daemon at {} (is `strata daemon` running? `systemctl status strata`)",
            socket.display()
        )
    })?;
    stream.set_read_timeout(Some(CLIENT_TIMEOUT))?;
    let mut line = serde_json::to_string(req)?;
    line.push('\n');
    stream.write_all(line.as_bytes())?;
    let mut answer = String::new();
    BufReader::new(&stream)
        .read_line(&mut answer)
        .with_context(|| format!("no answer from the daemon at {}", socket.display()))?;
    serde_json::from_str(&answer)
        .with_context(|| format!("the daemon's answer is not valid: {answer:?}"))
}

/// A job name becomes a directory under the output root: keep it to one plain component.
pub fn check_job_name(job: &str) -> anyhow::Result<()> {
    let ok = !job.is_empty()
        && job.len() <= 128
        && !job.starts_with('.')
        && job
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    anyhow::ensure!(
        ok,
        "job name {job:?} must be 1-128 letters, digits, '.', '_' or '-', not starting with '.'"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_read_as_written_and_as_scripts_write_them() {
        let r = Request::Start {
            job: "4242".into(),
            cgroup: None,
            slurm_job: Some("4242".into()),
            slurm_step: None,
        };
        let s = serde_json::to_string(&r).unwrap();
        assert_eq!(s, r#"{"cmd":"start","job":"4242","slurm_job":"4242"}"#);
        assert_eq!(serde_json::from_str::<Request>(&s).unwrap(), r);
        let stop: Request = serde_json::from_str(r#"{"cmd":"stop","job":"a"}"#).unwrap();
        assert_eq!(stop, Request::Stop { job: "a".into() });
        assert!(serde_json::from_str::<Request>(r#"{"cmd":"explode"}"#).is_err());
    }

    #[test]
    fn job_names_stay_inside_the_output_root() {
        for good in ["4242", "4242.0", "train_run-3"] {
            check_job_name(good).unwrap();
        }
        for bad in ["", "..", "../etc", "a/b", ".hidden", "x y"] {
            assert!(check_job_name(bad).is_err(), "{bad:?}");
        }
    }
}
