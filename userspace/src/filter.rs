//! Path filter: with `--paths` (or `paths` in the configuration) only what concerns files
//! under the given directories is written; calls without a file or path (MPI_Init, a
//! fsync of an untracked fd) are kept, since they carry no file name.
use crate::{fast::HashMap, files::Files};

#[derive(Debug, Clone, Default)]
pub struct PathFilter {
    prefixes: Vec<String>,
    /// Verdict per file id, decided once.
    verdicts: HashMap<i64, bool>,
}

impl PathFilter {
    pub fn new(prefixes: &[String]) -> Self {
        Self {
            prefixes: prefixes
                .iter()
                .map(|p| p.trim_end_matches('/').to_string())
                .collect(),
            verdicts: HashMap::default(),
        }
    }

    /// Is `path` one of the directories, or below one?
    pub fn covers(&self, path: &str) -> bool {
        self.prefixes.iter().any(|p| {
            p.is_empty()
                || path == p
                || path
                    .strip_prefix(p.as_str())
                    .is_some_and(|rest| rest.starts_with('/'))
        })
    }

    /// Keep a row about this file (by id, else by the path the call named)?
    pub fn keep(&mut self, files: &Files, file_id: Option<i64>, path: Option<&str>) -> bool {
        match (file_id, path) {
            (Some(id), _) => {
                if let Some(v) = self.verdicts.get(&id) {
                    return *v;
                }
                let v = files.path(id).is_some_and(|p| self.covers(&p));
                self.verdicts.insert(id, v);
                v
            }
            (None, Some(p)) => self.covers(p),
            (None, None) => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_match_whole_components() {
        let f = PathFilter::new(&["/lustre/".into(), "/scratch".into()]);
        assert!(f.covers("/lustre"));
        assert!(f.covers("/lustre/proj/a.h5"));
        assert!(f.covers("/scratch/x"));
        assert!(!f.covers("/lustrefs/x"));
        assert!(!f.covers("/etc/hosts"));
        assert!(!f.covers("pipe:[123]"));
        assert!(PathFilter::new(&["/".into()]).covers("/etc/hosts"));
    }
}
