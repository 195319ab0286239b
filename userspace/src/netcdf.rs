//! What a NetCDF transfer moved: the elements of its `count` (one for `var1`) times the size
//! of the C type its name ends with. The rank of each variable is learnt from nc_def_var.
use std::collections::HashMap;

#[derive(Default)]
pub struct Variables {
    /// (pid, ncid, varid) -> number of dimensions.
    ranks: HashMap<(i32, u64, u64), usize>,
}

/// Size in bytes of the C type named at the end of a put/get function.
fn type_size(function: &str) -> Option<u64> {
    let ty = function.rsplit('_').next()?;
    Some(match ty {
        "text" | "schar" | "uchar" => 1,
        "short" | "ushort" => 2,
        "int" | "uint" | "float" => 4,
        "long" | "longlong" | "ulonglong" | "double" => 8,
        _ => return None,
    })
}

impl Variables {
    /// Follows one NetCDF call; returns the bytes a put/get moves when they can be known.
    /// `out` is the value written through the call's out-pointer, `arr(i)` array argument i.
    pub fn observe<'a>(
        &mut self,
        function: &str,
        pid: i32,
        args: &[u64],
        out: Option<u64>,
        arr: impl Fn(usize) -> Option<&'a [u64]>,
    ) -> Option<i64> {
        let a = |i: usize| args.get(i).copied().unwrap_or(0);
        if function == "nc_def_var" {
            self.ranks.insert((pid, a(0), out?), a(3) as usize);
            return None;
        }
        let kind = function
            .strip_prefix("nc_put_")
            .or_else(|| function.strip_prefix("nc_get_"))?;
        let size = type_size(function)?;
        let elements: u64 = if kind.starts_with("var1_") {
            1
        } else if kind.starts_with("vara_") || kind.starts_with("vars_") {
            let rank = *self.ranks.get(&(pid, a(0), a(1)))?;
            arr(3).filter(|c| c.len() >= rank)?[..rank].iter().product()
        } else {
            return None;
        };
        i64::try_from(elements.checked_mul(size)?).ok()
    }

    pub fn forget(&mut self, pid: i32) {
        self.ranks.retain(|(p, _, _), _| *p != pid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_times_type_size() {
        let mut v = Variables::default();
        let none = |_: usize| None;
        v.observe("nc_def_var", 1, &[65536, 0, 6, 2, 0, 0], Some(3), none);
        let count = [10u64, 20, 99];
        let arr = |i: usize| (i == 3).then_some(&count[..]);
        assert_eq!(
            v.observe("nc_put_vara_double", 1, &[65536, 3, 0, 0, 0], None, arr),
            Some(1600)
        );
        assert_eq!(
            v.observe("nc_get_vara_float", 1, &[65536, 3, 0, 0, 0], None, arr),
            Some(800)
        );
        assert_eq!(
            v.observe("nc_put_var1_short", 1, &[65536, 3, 0, 0], None, none),
            Some(2)
        );
        // Unknown variable, whole-variable calls: no count.
        assert_eq!(
            v.observe("nc_put_vara_double", 1, &[65536, 4, 0, 0, 0], None, arr),
            None
        );
        assert_eq!(
            v.observe("nc_put_var_double", 1, &[65536, 3, 0], None, none),
            None
        );
        v.forget(1);
        assert_eq!(
            v.observe("nc_put_vara_double", 1, &[65536, 3, 0, 0, 0], None, arr),
            None
        );
    }
}
