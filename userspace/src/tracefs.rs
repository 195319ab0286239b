//! The tracing file system: mounted on demand, and read for event ids and record layouts so
//! the kernel programs never hard-code offsets.
use std::{
    fs,
    path::{Path, PathBuf},
};

use anyhow::{Context as _, bail};

const CANDIDATES: &[&str] = &["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

/// Returns the tracefs root, mounting it at /sys/kernel/tracing when nothing is mounted.
pub fn root() -> anyhow::Result<PathBuf> {
    for c in CANDIDATES {
        if Path::new(c).join("events").is_dir() {
            return Ok(PathBuf::from(c));
        }
    }
    // A locked-down kernel shows a mounted tracefs as empty.
    crate::lockdown::check()?;
    nix::mount::mount(
        Some("tracefs"),
        CANDIDATES[0],
        Some("tracefs"),
        nix::mount::MsFlags::empty(),
        None::<&str>,
    )
    .with_context(|| {
        format!(
            "tracefs is not mounted and mounting it on {} failed; mount it with `mount -t tracefs tracefs {}`",
            CANDIDATES[0], CANDIDATES[0]
        )
    })?;
    Ok(PathBuf::from(CANDIDATES[0]))
}

/// One field of a tracepoint record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    pub name: String,
    pub offset: u32,
    pub size: u32,
}

/// The parsed `format` file of one event.
#[derive(Debug, Clone)]
pub struct Format {
    pub id: u32,
    pub fields: Vec<Field>,
}

impl Format {
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// Fields after the common header (those not named `common_*`).
    pub fn own_fields(&self) -> impl Iterator<Item = &Field> {
        self.fields
            .iter()
            .filter(|f| !f.name.starts_with("common_"))
    }
}

/// Parses a tracepoint `format` file. Only `field:` lines matter.
pub fn parse_format(text: &str) -> anyhow::Result<Format> {
    let mut id = None;
    let mut fields = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(v) = line.strip_prefix("ID:") {
            id = Some(v.trim().parse().context("bad ID line")?);
        }
        let Some(rest) = line.strip_prefix("field:") else {
            continue;
        };
        let mut decl = None;
        let (mut offset, mut size) = (None, None);
        for part in rest.split(';') {
            let part = part.trim();
            if let Some(v) = part.strip_prefix("offset:") {
                offset = v.parse().ok();
            } else if let Some(v) = part.strip_prefix("size:") {
                size = v.parse().ok();
            } else if decl.is_none() && !part.is_empty() {
                decl = Some(part);
            }
        }
        let (Some(decl), Some(offset), Some(size)) = (decl, offset, size) else {
            bail!("malformed field line {line:?}");
        };
        // `char comm[16]` -> comm; `const char * filename` -> filename.
        let name = decl
            .rsplit(|c: char| c.is_whitespace() || c == '*')
            .next()
            .unwrap_or(decl);
        let name = name.split('[').next().unwrap_or(name).to_string();
        fields.push(Field { name, offset, size });
    }
    let id = id.context("format has no ID line")?;
    Ok(Format { id, fields })
}

/// Reads the format of `category/name`.
pub fn format(root: &Path, category: &str, name: &str) -> anyhow::Result<Format> {
    let path = root.join("events").join(category).join(name).join("format");
    let text = fs::read_to_string(&path).with_context(|| {
        format!(
            "tracepoint {category}/{name} is not available ({})",
            path.display()
        )
    })?;
    parse_format(&text).with_context(|| format!("cannot parse {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PWRITE: &str = "name: sys_enter_pwrite64
ID: 712
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:int __syscall_nr;\toffset:8;\tsize:4;\tsigned:1;
\tfield:unsigned int fd;\toffset:16;\tsize:8;\tsigned:0;
\tfield:const char * buf;\toffset:24;\tsize:8;\tsigned:0;
\tfield:size_t count;\toffset:32;\tsize:8;\tsigned:0;
\tfield:loff_t pos;\toffset:40;\tsize:8;\tsigned:0;

print fmt: \"fd: 0x%08lx\"
";

    #[test]
    fn parses_syscall_format() {
        let f = parse_format(PWRITE).unwrap();
        assert_eq!(f.id, 712);
        let own: Vec<_> = f.own_fields().map(|f| f.name.as_str()).collect();
        assert_eq!(own, ["__syscall_nr", "fd", "buf", "count", "pos"]);
        assert_eq!(f.field("pos").unwrap().offset, 40);
    }

    #[test]
    fn parses_arrays_and_rejects_garbage() {
        let f = parse_format("ID: 3\n\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n")
            .unwrap();
        assert_eq!(f.field("comm").unwrap().size, 16);
        assert!(parse_format("field:int x;\toffset:8;\n").is_err());
        assert!(parse_format("\tfield:int x;\toffset:8;\tsize:4;\n").is_err());
    }
}
