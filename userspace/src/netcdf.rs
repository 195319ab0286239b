//! What a NetCDF transfer moved: the elements of its `count` (one for `var1`, the whole
//! variable for `var`) times the size of the C type its name ends with. Dimensions are learnt
//! from nc_def_dim, each variable's dimensions from nc_def_var.
use crate::fast::HashMap;

#[derive(Default)]
pub struct Variables {
    /// (pid, ncid, varid) -> its dimension ids (None: not copied), one per dimension.
    vars: HashMap<(i32, u64, u64), Vec<Option<u64>>>,
    /// (pid, ncid, dimid) -> length (0: unlimited).
    dims: HashMap<(i32, u64, u64), u64>,
}

/// The C ints of an array copied as 64-bit words (x86_64 is little-endian: low half first).
pub fn ints(words: &[u64]) -> impl Iterator<Item = i32> + '_ {
    words
        .iter()
        .flat_map(|w| [*w as u32 as i32, (*w >> 32) as u32 as i32])
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
        match function {
            "nc_def_dim" => {
                self.dims.insert((pid, a(0), out?), a(2));
                return None;
            }
            "nc_def_var" => {
                let rank = a(3) as usize;
                let ids: Vec<Option<u64>> = match arr(4) {
                    Some(w) if w.len() * 2 >= rank => {
                        ints(w).take(rank).map(|d| Some(d as u64)).collect()
                    }
                    _ => vec![None; rank],
                };
                self.vars.insert((pid, a(0), out?), ids);
                return None;
            }
            _ => {}
        }
        let kind = function
            .strip_prefix("nc_put_")
            .or_else(|| function.strip_prefix("nc_get_"))?;
        let size = type_size(function)?;
        let elements: u64 = if kind.starts_with("var1_") {
            1
        } else if kind.starts_with("vara_") || kind.starts_with("vars_") {
            let rank = self.vars.get(&(pid, a(0), a(1)))?.len();
            arr(3).filter(|c| c.len() >= rank)?[..rank].iter().product()
        } else if kind.starts_with("var_") {
            // The whole variable; unknown when a dimension is unlimited (its current length
            // is not followed).
            let ids = self.vars.get(&(pid, a(0), a(1)))?;
            ids.iter()
                .map(|d| {
                    self.dims
                        .get(&(pid, a(0), (*d)?))
                        .copied()
                        .filter(|l| *l > 0)
                })
                .product::<Option<u64>>()?
        } else {
            return None;
        };
        i64::try_from(elements.checked_mul(size)?).ok()
    }

    pub fn forget(&mut self, pid: i32) {
        self.vars.retain(|(p, _, _), _| *p != pid);
        self.dims.retain(|(p, _, _), _| *p != pid);
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
        // Dimensions 4 (10) and 5 (unlimited); variables on (4, 4) and (5, 4).
        v.observe("nc_def_dim", 1, &[65536, 0, 10, 0], Some(4), none);
        v.observe("nc_def_dim", 1, &[65536, 0, 0, 0], Some(5), none);
        let ids = [4u64 | (4 << 32)];
        v.observe("nc_def_var", 1, &[65536, 0, 6, 2, 0, 0], Some(6), |i| {
            (i == 4).then_some(&ids[..])
        });
        let ids_unlim = [5u64 | (4 << 32)];
        v.observe("nc_def_var", 1, &[65536, 0, 6, 2, 0, 0], Some(7), |i| {
            (i == 4).then_some(&ids_unlim[..])
        });
        assert_eq!(
            v.observe("nc_put_var_int", 1, &[65536, 6, 0], None, none),
            Some(400)
        );
        assert_eq!(
            v.observe("nc_put_var_int", 1, &[65536, 7, 0], None, none),
            None
        );
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
        // Unknown variable, or whole-variable calls on one whose dimensions were not copied.
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
