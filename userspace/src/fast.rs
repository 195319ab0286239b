//! Hash maps of the per-event path (calls, handles, processes, files): foldhash instead of
//! SipHash, which took an eighth of the pipeline's instructions. foldhash is seeded per map,
//! so paths chosen by a traced user cannot force collisions cheaply.
pub type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
