//! Hash maps of the per-event path (calls, handles, processes, files): foldhash instead of
//! SipHash, which took an eighth of the pipeline's instructions. foldhash is seeded per map,
//! so paths chosen by a traced user cannot force collisions cheaply.
pub type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// The last `N` keys looked up and what they found, checked before a map: the per-event
/// path's lookups come in runs on one key, or take turns among a few (a process reading one
/// file and writing another, ranks' calls interleaved). The oldest entry makes room.
#[derive(Debug)]
pub struct Recent<K, V, const N: usize> {
    slots: [Option<(K, V)>; N],
    /// The slot put last, looked at first: most lookups are of the key of the one before.
    last: usize,
}

impl<K: Copy + PartialEq, V: Copy, const N: usize> Recent<K, V, N> {
    /// What `key` found when it was last put, if it is still here.
    #[inline(always)]
    pub fn get(&self, key: K) -> Option<V> {
        self.slots
            .iter()
            .flatten()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| *v)
    }

    /// Remembers what `key` found, in place of the oldest entry.
    #[inline]
    pub fn put(&mut self, key: K, value: V) {
        self.last = (self.last + 1) % N;
        self.slots[self.last] = Some((key, value));
    }

    /// Forgets everything (what the entries found may have changed).
    pub fn clear(&mut self) {
        self.slots = [None; N];
    }
}

impl<K: Copy, V: Copy, const N: usize> Default for Recent<K, V, N> {
    fn default() -> Self {
        Self {
            slots: [None; N],
            last: 0,
        }
    }
}
