//! What a NetCDF transfer moved: the elements of its `count` (one for `var1`, the whole
//! variable for `var`) times the size of the C type its name ends with, or for the untyped
//! functions (`nc_put_vara`) of the variable's own type. Dimensions are learnt from
//! nc_def_dim, each variable's dimensions and type from nc_def_var, or for a file opened
//! rather than created its rank and type from nc_inq_varndims and nc_inq_vartype.
use crate::fast::HashMap;

/// The most dimensions a NetCDF variable has (netcdf.h): a larger rank in a record is not
/// believed (a vector of that many would be allocated).
const NC_MAX_VAR_DIMS: usize = 1024;

#[derive(Default)]
pub struct Variables {
    /// (pid, ncid, varid) -> what is known of the variable.
    vars: HashMap<(i32, u64, u64), Var>,
    /// (pid, ncid, dimid) -> length (0: unlimited).
    dims: HashMap<(i32, u64, u64), u64>,
}

#[derive(Default)]
struct Var {
    /// Its dimension ids (None: not copied), one per dimension; None: rank unknown.
    dims: Option<Vec<Option<u64>>>,
    /// Its external type (`nc_type`).
    xtype: Option<u64>,
}

/// The C ints of an array copied as 64-bit words (x86_64 is little-endian: low half first).
pub fn ints(words: &[u64]) -> impl Iterator<Item = i32> + '_ {
    words
        .iter()
        .flat_map(|w| [*w as u32 as i32, (*w >> 32) as u32 as i32])
}

/// Size in bytes of the C type named at the end of a put/get function.
fn type_size(ty: &str) -> Option<u64> {
    Some(match ty {
        "text" | "schar" | "uchar" => 1,
        "short" | "ushort" => 2,
        "int" | "uint" | "float" => 4,
        "long" | "longlong" | "ulonglong" | "double" => 8,
        _ => return None,
    })
}

/// Size in memory of an element of an atomic `nc_type` (NC_BYTE .. NC_UINT64); strings and
/// user-defined types have none.
fn xtype_size(xtype: u64) -> Option<u64> {
    Some(match xtype {
        1 | 2 | 7 => 1,
        3 | 8 => 2,
        4 | 5 | 9 => 4,
        6 | 10 | 11 => 8,
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
        let key = |v: u64| (pid, a(0), v);
        match function {
            "nc_def_dim" => {
                self.dims.insert((pid, a(0), out?), a(2));
                return None;
            }
            "nc_def_var" => {
                // A C int: the register's upper half is not part of it.
                let rank = usize::try_from(a(3) as i32)
                    .ok()
                    .filter(|r| *r <= NC_MAX_VAR_DIMS)?;
                let ids: Vec<Option<u64>> = match arr(4) {
                    Some(w) if w.len() * 2 >= rank => {
                        ints(w).take(rank).map(|d| Some(d as u64)).collect()
                    }
                    _ => vec![None; rank],
                };
                let var = Var {
                    dims: Some(ids),
                    xtype: Some(a(2)),
                };
                self.vars.insert(key(out?), var);
                return None;
            }
            // An opened file's variable; what nc_def_var said is not overwritten.
            "nc_inq_varndims" => {
                let rank = Some(out? as u32 as usize).filter(|r| *r <= NC_MAX_VAR_DIMS)?;
                let var = self.vars.entry(key(a(1))).or_default();
                if var.dims.as_ref().is_none_or(|d| d.len() != rank) {
                    var.dims = Some(vec![None; rank]);
                }
                return None;
            }
            // The ncid (and its groups', which share its upper half) may be reused for
            // another file.
            "nc_close" => {
                let file = a(0) >> 16;
                self.vars
                    .retain(|(p, n, _), _| *p != pid || n >> 16 != file);
                self.dims
                    .retain(|(p, n, _), _| *p != pid || n >> 16 != file);
                return None;
            }
            "nc_inq_vartype" => {
                self.vars.entry(key(a(1))).or_default().xtype = Some(u64::from(out? as u32));
                return None;
            }
            _ => {}
        }
        let kind = function
            .strip_prefix("nc_put_")
            .or_else(|| function.strip_prefix("nc_get_"))?;
        let (shape, ty) = match kind.split_once('_') {
            Some((shape, ty)) => (shape, Some(ty)),
            None => (kind, None),
        };
        let var = self.vars.get(&key(a(1)));
        let size = match ty {
            Some(ty) => type_size(ty)?,
            None => xtype_size(var?.xtype?)?,
        };
        let elements: u64 = match shape {
            "var1" => 1,
            "vara" | "vars" => {
                let rank = var?.dims.as_ref()?.len();
                crate::hdf5::product(arr(3).filter(|c| c.len() >= rank)?[..rank].iter().copied())?
            }
            // The whole variable; unknown when a dimension is unlimited (its current length
            // is not followed) or was not seen defined.
            "var" => var?
                .dims
                .as_ref()?
                .iter()
                .map(|d| self.dims.get(&key((*d)?)).copied().filter(|l| *l > 0))
                .try_fold(1u64, |n, l| n.checked_mul(l?))?,
            _ => return None,
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
        // Untyped transfers move the variable's type (NC_DOUBLE: 6; NC_SHORT: 3).
        assert_eq!(
            v.observe("nc_put_vara", 1, &[65536, 3, 0, 0, 0], None, arr),
            Some(1600)
        );
        assert_eq!(
            v.observe("nc_get_var", 1, &[65536, 6, 0], None, none),
            Some(800)
        );
        assert_eq!(
            v.observe("nc_put_var1", 1, &[65536, 3, 0, 0], None, none),
            Some(8)
        );
        // A variable of an opened file: its rank and type from the inquiries, not before.
        assert_eq!(
            v.observe("nc_get_vara", 1, &[131072, 0, 0, 0, 0], None, arr),
            None
        );
        v.observe("nc_inq_varndims", 1, &[131072, 0, 0], Some(2), none);
        assert_eq!(
            v.observe("nc_get_vara_int", 1, &[131072, 0, 0, 0, 0], None, arr),
            Some(800)
        );
        assert_eq!(
            v.observe("nc_get_vara", 1, &[131072, 0, 0, 0, 0], None, arr),
            None
        );
        v.observe("nc_inq_vartype", 1, &[131072, 0, 0], Some(3), none);
        assert_eq!(
            v.observe("nc_get_vara", 1, &[131072, 0, 0, 0, 0], None, arr),
            Some(400)
        );
        // NC_STRING (12): no fixed size.
        v.observe("nc_inq_vartype", 1, &[131072, 0, 0], Some(12), none);
        assert_eq!(
            v.observe("nc_get_vara", 1, &[131072, 0, 0, 0, 0], None, arr),
            None
        );
        // Closed: its ncid may name another file next.
        v.observe("nc_close", 1, &[131072], None, none);
        assert_eq!(
            v.observe("nc_get_vara_int", 1, &[131072, 0, 0, 0, 0], None, arr),
            None
        );
        assert_eq!(
            v.observe("nc_put_vara", 1, &[65536, 3, 0, 0, 0], None, arr),
            Some(1600)
        );
        v.forget(1);
        assert_eq!(
            v.observe("nc_put_vara_double", 1, &[65536, 3, 0, 0, 0], None, arr),
            None
        );
    }

    #[test]
    fn a_rank_beyond_netcdfs_own_limit_is_not_believed() {
        let mut v = Variables::default();
        let none = |_: usize| None;
        let count = [10u64, 20];
        let arr = |i: usize| (i == 3).then_some(&count[..]);
        // A rank of 2^31 - 1 (or of -1 as an unsigned word) would have had a vector that long.
        for rank in [i32::MAX as u64, u64::MAX, u64::from(u32::MAX), 1025] {
            v.observe("nc_def_var", 1, &[65536, 0, 6, rank, 0, 0], Some(3), none);
            assert_eq!(
                v.observe("nc_put_vara", 1, &[65536, 3, 0, 0, 0], None, arr),
                None
            );
        }
        v.observe("nc_inq_varndims", 1, &[131072, 0, 0], Some(u64::MAX), none);
        v.observe("nc_inq_vartype", 1, &[131072, 0, 0], Some(6), none);
        assert_eq!(
            v.observe("nc_get_vara", 1, &[131072, 0, 0, 0, 0], None, arr),
            None
        );
        // The limit itself is a rank; the upper half of the int's register is not its.
        v.observe(
            "nc_def_var",
            1,
            &[65536, 0, 6, 1024 | (7 << 32), 0, 0],
            Some(4),
            none,
        );
        let full = [1u64; 1024];
        assert_eq!(
            v.observe("nc_put_vara", 1, &[65536, 4, 0, 0, 0], None, |i| {
                (i == 3).then_some(&full[..])
            }),
            Some(8)
        );
    }
}
