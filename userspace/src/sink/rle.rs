//! Parquet's RLE / bit-packing hybrid, as its own encoder makes it (a column's definition
//! levels, a dictionary column's indices): the same runs, so the same bytes.
//!
//! Values are taken in groups of 8, counted from the page's start or the end of the last
//! run. A group of 8 equal values starts a run (stored as a count and the value once) that
//! lasts while the value does; other groups are bit-packed, up to 63 groups behind one
//! header byte. At the end, values left over are a run if they are all equal and nothing is
//! being packed, else a last group padded with zeros.
use super::chunk::uleb128;

const GROUP: usize = 8;
/// Groups behind one bit-packed run's header byte, at most.
const MAX_GROUPS: usize = 63;

pub(super) struct Rle {
    width: u8,
    out: Vec<u8>,
    group: [u64; GROUP],
    in_group: usize,
    /// The last value and how many times in a row it came (counted from the current group's
    /// start, or on through a run).
    value: u64,
    repeats: usize,
    /// Values in the bit-packed run being written, and where its header byte goes.
    packed: usize,
    header_at: Option<usize>,
}

impl Rle {
    pub(super) fn new(width: u8) -> Self {
        Self {
            width,
            out: Vec::new(),
            group: [0; GROUP],
            in_group: 0,
            value: 0,
            repeats: 0,
            packed: 0,
            header_at: None,
        }
    }

    /// `n` values `v` in a row.
    #[inline]
    pub(super) fn put_n(&mut self, v: u64, mut n: usize) {
        while n > 0 {
            if self.repeats >= GROUP && self.value == v {
                // In a run: the rest only counts.
                self.repeats += n;
                return;
            }
            self.put(v);
            n -= 1;
        }
    }

    /// The values of `values`, each taken as `u64`: a group of 8 at once where one starts,
    /// the rest of a run at once when in one.
    pub(super) fn put_all<T: Copy + Into<u64>>(&mut self, values: &[T]) {
        let mut rest = values;
        while let Some(&v) = rest.first() {
            let v: u64 = v.into();
            if self.in_group == 0 && self.repeats == 0 && rest.len() >= GROUP {
                let group: [u64; GROUP] = std::array::from_fn(|i| rest[i].into());
                // As `put` would leave it when the group fills: the last value kept, and
                // 8 repeats (a run starts) if all are equal, else none so far.
                let repeats = if group.iter().all(|&x| x == v) {
                    GROUP
                } else {
                    0
                };
                (self.group, self.value, self.repeats) = (group, group[GROUP - 1], repeats);
                self.group_full();
                rest = &rest[GROUP..];
            } else if self.repeats >= GROUP && self.value == v {
                let n = rest.iter().take_while(|x| (**x).into() == v).count();
                self.repeats += n;
                rest = &rest[n..];
            } else {
                self.put(v);
                rest = &rest[1..];
            }
        }
    }

    #[inline]
    fn put(&mut self, v: u64) {
        if v == self.value {
            self.repeats += 1;
            if self.repeats > GROUP {
                return;
            }
        } else {
            if self.repeats >= GROUP {
                self.end_run();
            }
            self.repeats = 1;
            self.value = v;
        }
        self.group[self.in_group] = v;
        self.in_group += 1;
        if self.in_group == GROUP {
            self.group_full();
        }
    }

    fn group_full(&mut self) {
        self.in_group = 0;
        if self.repeats >= GROUP {
            // The group starts a run: the values packed before it end there.
            if self.packed > 0 {
                self.end_packed();
            }
            return;
        }
        self.pack_group();
        if self.packed / GROUP >= MAX_GROUPS {
            self.end_packed();
        }
        self.repeats = 0;
    }

    fn pack_group(&mut self) {
        if self.header_at.is_none() {
            self.header_at = Some(self.out.len());
            self.out.push(0);
        }
        self.packed += GROUP;
        let width = u32::from(self.width);
        if width <= 8 {
            // 8 values of up to 8 bits fit a word: `width` bytes of it.
            let word = (self.group.iter().enumerate())
                .fold(0u64, |w, (i, &v)| w | v << (width * i as u32));
            // All 8 bytes, then cut: a copy of a constant size is two stores, one of
            // `width` bytes a call of memcpy.
            let end = self.out.len() + width as usize;
            self.out.extend_from_slice(&word.to_le_bytes());
            self.out.truncate(end);
        } else {
            pack(self.group, width, &mut self.out);
        }
    }

    fn end_packed(&mut self) {
        let at = self
            .header_at
            .take()
            .expect("a packed run has its header byte");
        self.out[at] = ((self.packed / GROUP) << 1 | 1) as u8;
        self.packed = 0;
    }

    fn end_run(&mut self) {
        uleb128((self.repeats as u64) << 1, &mut self.out);
        let bytes = usize::from(self.width).div_ceil(8);
        self.out
            .extend_from_slice(&self.value.to_le_bytes()[..bytes]);
        self.in_group = 0;
        self.repeats = 0;
    }

    /// The encoded values; leaves this empty for the next page.
    pub(super) fn finish(&mut self) -> Vec<u8> {
        if self.packed > 0 || self.repeats > 0 || self.in_group > 0 {
            let all_repeat =
                self.packed == 0 && (self.repeats == self.in_group || self.in_group == 0);
            if self.repeats > 0 && all_repeat {
                self.end_run();
            } else {
                if self.in_group > 0 {
                    self.group[self.in_group..].fill(0);
                    self.pack_group();
                }
                if self.header_at.is_some() {
                    self.end_packed();
                }
            }
        }
        let out = std::mem::take(&mut self.out);
        *self = Self::new(self.width);
        out
    }
}

/// `values` of `width` bits each, lowest bits first, as Parquet bit-packs them; a whole
/// number of bytes when `values.len() * width` is a multiple of 8 (a group's are).
#[inline]
fn pack(values: impl IntoIterator<Item = u64>, width: u32, out: &mut Vec<u8>) {
    let (mut acc, mut n) = (0u128, 0u32);
    for v in values {
        acc |= u128::from(v) << n;
        n += width;
        if n >= 64 {
            out.extend_from_slice(&(acc as u64).to_le_bytes());
            acc >>= 64;
            n -= 64;
        }
    }
    out.extend_from_slice(&acc.to_le_bytes()[..n.div_ceil(8) as usize]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(values: &[u64], width: u8) -> Vec<u8> {
        let mut rle = Rle::new(width);
        rle.put_all(values);
        rle.finish()
    }

    /// Runs of 8 and more equal values are stored as a count: a long run costs a few bytes.
    #[test]
    fn long_runs_are_counted_not_packed() {
        // A header of 100,000 << 1 in LEB128 (3 bytes) and the value in a byte.
        assert_eq!(encode(&[3; 100_000], 2), [0xc0, 0x9a, 0x0c, 3]);
        // Three values and five of the zeros fill a packed group; the 8 zeros after it
        // are a run.
        let mut v = vec![1, 2, 1];
        v.extend([0; 13]);
        assert_eq!(encode(&v, 2), [0b11, 0b01_10_01, 0, 8 << 1, 0]);
    }

    /// Groups are counted from the end of the last run, so a run can start anywhere; values
    /// left at the end are a run when all equal and nothing is being packed, else a group
    /// padded with zeros; a packed run holds at most 63 groups.
    #[test]
    fn groups_follow_runs_and_packed_runs_stop_at_63_groups() {
        // A run of 9 ones, then 3 zeros left over: a run of 3.
        let mut v = vec![1; 9];
        v.extend([0; 3]);
        assert_eq!(encode(&v, 1), [9 << 1, 1, 3 << 1, 0]);
        // A run of 8 ones, then 0 1 0 left over: a group padded with zeros.
        let mut v = vec![1; 8];
        v.extend([0, 1, 0]);
        assert_eq!(encode(&v, 1), [8 << 1, 1, 1 << 1 | 1, 0b010]);
        // 64 groups of alternating bits: 63 behind one header, 1 behind another.
        let v: Vec<u64> = (0..64 * 8).map(|i| i % 2).collect();
        let mut want = vec![63 << 1 | 1];
        want.extend([0b1010_1010; 63]);
        want.extend([1 << 1 | 1, 0b1010_1010]);
        assert_eq!(encode(&v, 1), want);
        // Wider values: 8 distinct 9-bit values take 9 bytes; a run's value takes 2.
        let v: Vec<u64> = (0..8).map(|i| 300 + i).chain([511; 8]).collect();
        let got = encode(&v, 9);
        assert_eq!(got.len(), 1 + 9 + 1 + 2);
        assert_eq!(&got[10..], [8 << 1, 0xff, 0x01]);
        // The encoder starts anew after finishing.
        let mut rle = Rle::new(1);
        rle.put_n(1, 20);
        assert_eq!(rle.finish(), [20 << 1, 1]);
        rle.put_n(0, 2);
        assert_eq!(rle.finish(), [2 << 1, 0]);
    }
}
