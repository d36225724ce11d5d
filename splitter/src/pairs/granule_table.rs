//! Where the indexed finder keeps each granule's state: a table that is a
//! hash map for granules touched here and there, and an array for the
//! stretches of memory a program walks.
//!
//! # Why
//! A split's time goes into looking up the state of the granule each access
//! touches, and for any trace bigger than the cache every lookup in a hash
//! map is a cache miss: a hash spreads neighbouring granules over the whole
//! table, so a program walking an array makes the split jump around
//! memory. Most of what real programs touch are such stretches (arrays,
//! stacks, heap blocks).
//!
//! # How
//! Granules are grouped in chunks of [`CHUNK_GRANULES`] neighbours (512
//! bytes of the program's memory at the default granule). A chunk starts
//! *sparse*: its granules live in one hash map with every other sparse
//! granule, and the chunk only counts them. When a chunk has
//! [`PROMOTE_AT`] distinct granules it becomes *dense*: all its granules
//! move to a block of their own, indexed by the granule's place in the
//! chunk, where the neighbours of a granule are its neighbours in memory
//! too. Two direct-mapped caches in front of the chunk map remember the
//! dense blocks used last, so a walk pays one hash lookup per chunk, not
//! per access: a first of [`CACHE_ENTRIES`] (fixed, so its lookup is a
//! mask and a compare), and behind it a second that grows with the dense
//! blocks up to [`MAX_SECOND_ENTRIES`], so that a small trace keeps a
//! small table. A radix sort scatters to a thousand places at once (4
//! threads, 256 buckets each): with the first cache alone its split spent
//! 7.5 % of its time in the chunk map (`rr-lite split` of `radix 6000000
//! 4`: 3.9 s instead of 4.3; `fft 19 4 2`: 2.2 instead of 2.55). One
//! growing cache alone cost a walk (stencil: 3.15 s against 2.9) its
//! bounds check and the load of its mask at every access.
//!
//! A range (a `memcpy`, a `memset`: millions of granules) covers whole
//! chunks whose granules all end in one state: such a chunk is *uniform*,
//! one state standing for all of them ([`Self::whole_chunk`],
//! [`Self::settle_uniform`]), so a copy of a gigabyte costs a state per
//! chunk, not per granule. An access to one of its granules gives that
//! granule a copy of the state in the sparse map, as a sparse chunk's
//! granule; at [`PROMOTE_AT`] such granules the chunk becomes dense, each
//! granule keeping its state or taking a copy ([`Self::state`]). The
//! caller's [`Copier`] makes the copies: a state may own something outside
//! the table (the finder's read groups), which each copy needs its own of.
//!
//! # Invariants
//! - A granule's state is in exactly one place: the sparse map if its chunk
//!   is sparse, its chunk's block if dense, its chunk's uniform state if
//!   uniform (a sparse chunk never goes back to sparse; dense and uniform
//!   may change into each other, every granule keeping its state).
//! - A uniform state stands for every granule of its chunk that has no
//!   state of its own in the sparse map (fewer than [`PROMOTE_AT`] do);
//!   each of them was looked up (counted) already.
//! - A sparse chunk's count is the number of its granules in the sparse
//!   map, below [`PROMOTE_AT`].
//! - Memory: a dense block holds at least [`PROMOTE_AT`] touched granules,
//!   so it costs at most `CHUNK_GRANULES / PROMOTE_AT` states per touched
//!   granule (4 here: 96 bytes), within the SPEC's 200 bytes per granule.
//! - A cache entry names a dense chunk and its block; blocks never move. A
//!   block freed when its chunk turns uniform leaves both caches first.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::hash::BuildHasherDefault;
use std::mem::size_of;

use super::indexed::GranuleHasher;

/// Granules of one chunk, as a shift (64 granules: 512 bytes at 8 per granule).
const CHUNK_SHIFT: u32 = 6;
pub(crate) const CHUNK_GRANULES: usize = 1 << CHUNK_SHIFT;
const PLACE_MASK: u64 = CHUNK_GRANULES as u64 - 1;
/// Distinct granules that make a chunk dense.
pub(crate) const PROMOTE_AT: u32 = 16;
/// Entries of the first direct-mapped cache of dense chunks (a power of
/// two).
const CACHE_ENTRIES: usize = 64;
/// Most entries of the second cache (a power of two).
const MAX_SECOND_ENTRIES: usize = 4096;
/// Dense blocks per entry of the second cache at which it grows (4x, from
/// [`CACHE_ENTRIES`] entries at [`CACHE_ENTRIES`] times this many blocks):
/// its 16 bytes an entry then cost under one byte per touched granule.
const BLOCKS_PER_CACHE_ENTRY: usize = 2;
/// A cache key no chunk has (chunk numbers are granules >> 6).
const NO_CHUNK: u64 = u64::MAX;

type Map<V> = HashMap<u64, V, BuildHasherDefault<GranuleHasher>>;

/// What the chunk map knows of a chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunk {
    /// Its granules are in the sparse map; this many of them.
    Sparse(u32),
    /// Its granules are the block at this index of `blocks`.
    Dense(u32),
    /// Its granules have a state of their own in the sparse map, or else
    /// the chunk's uniform state.
    Uniform(UniformEntry),
}

/// A uniform chunk in one word: the index of its state in `uniform` (the
/// low bits) and how many of its granules have a state of their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct UniformEntry(u32);

/// Where a [`UniformEntry`]'s count starts (its index is below).
const OWN_SHIFT: u32 = 27;
/// Uniform states at most (a chunk past them is left mixed).
const MAX_UNIFORM: usize = 1 << OWN_SHIFT;
const _: () = assert!(PROMOTE_AT < 1 << (32 - OWN_SHIFT));

impl UniformEntry {
    fn at(self) -> u32 {
        self.0 & (MAX_UNIFORM as u32 - 1)
    }

    /// Granules of the chunk with a state of their own.
    fn own(self) -> u32 {
        self.0 >> OWN_SHIFT
    }

    fn with_own(self, own: u32) -> UniformEntry {
        UniformEntry(self.at() | own << OWN_SHIFT)
    }
}

/// How a uniform chunk's state becomes its granules' own ones: a copy for
/// each, after which the chunk's own is dropped (`discard`).
pub(crate) trait Copier<S> {
    fn copy(&mut self, state: &S) -> S;
    fn discard(&mut self, state: S);
}

/// The [`Copier`] of states that own nothing outside the table.
#[cfg(test)]
pub(crate) struct Cloning;

#[cfg(test)]
impl<S: Clone> Copier<S> for Cloning {
    fn copy(&mut self, state: &S) -> S {
        state.clone()
    }

    fn discard(&mut self, _: S) {}
}

/// What [`GranuleTable::whole_chunk`] finds of a chunk a range covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WholeChunk {
    /// Uniform: the index of its state ([`GranuleTable::uniform_state`]).
    Uniform(u32),
    /// Granules of their own: an access goes granule by granule.
    Mixed,
}

/// Per-granule state `S` by granule number, created as `empty` on first use.
#[derive(Debug)]
pub(crate) struct GranuleTable<S> {
    empty: S,
    chunks: Map<Chunk>,
    sparse: Map<S>,
    /// Dense blocks, `CHUNK_GRANULES` states each, one after the other.
    blocks: Blocks<S>,
    /// `(chunk, block index)` of recently used dense chunks, by chunk's low bits.
    cache: Box<[(u64, u32); CACHE_ENTRIES]>,
    /// The same behind it, more of them (a power of two, or none yet).
    second: Box<[(u64, u32)]>,
    /// States of uniform chunks, and the indices free among them.
    uniform: Vec<S>,
    free_uniform: Vec<u32>,
    /// Blocks of chunks that turned uniform, free for new dense chunks.
    free_blocks: Vec<u32>,
    /// Distinct granules looked up so far.
    granules: u64,
}

impl<S: Clone + PartialEq> GranuleTable<S> {
    /// A table whose granules start as `empty` (a state no access leaves
    /// behind: the table counts a granule when it first finds it empty).
    pub(crate) fn new(empty: S) -> GranuleTable<S> {
        GranuleTable {
            empty,
            chunks: Map::default(),
            sparse: Map::default(),
            blocks: Blocks::default(),
            cache: Box::new([(NO_CHUNK, 0); CACHE_ENTRIES]),
            second: Box::new([]),
            uniform: Vec::new(),
            free_uniform: Vec::new(),
            free_blocks: Vec::new(),
            granules: 0,
        }
    }

    /// The state of `granule`, created empty if it was never looked up.
    /// The caller must leave it non-empty (every access does). A hit in
    /// the first cache inline, the rest out of line: the analysis's loop
    /// inlines this, and it was not inlined whole.
    #[inline(always)]
    pub(crate) fn state(&mut self, granule: u64, copier: &mut impl Copier<S>) -> &mut S {
        let chunk = granule >> CHUNK_SHIFT;
        let place = (granule & PLACE_MASK) as usize;
        let slot = chunk as usize % CACHE_ENTRIES;
        let (cached, block) = self.cache[slot];
        if cached != chunk {
            return self.state_after_miss(granule, copier);
        }
        self.counted(block, place)
    }

    /// [`Self::state`] of a `granule` whose chunk the first cache does
    /// not hold.
    #[inline(never)]
    fn state_after_miss(&mut self, granule: u64, copier: &mut impl Copier<S>) -> &mut S {
        let chunk = granule >> CHUNK_SHIFT;
        let place = (granule & PLACE_MASK) as usize;
        let block = match self.second_cached(chunk) {
            Some(block) => block,
            None => match self.chunk_of(chunk, granule) {
                Chunk::Dense(block) => {
                    if let Some(entry) = self.second_slot(chunk) {
                        *entry = (chunk, block);
                    }
                    block
                }
                Chunk::Sparse(_) => return self.sparse_state(chunk, granule),
                Chunk::Uniform(entry) => {
                    return self.uniform_granule((chunk, entry), granule, copier);
                }
            },
        };
        self.cache[chunk as usize % CACHE_ENTRIES] = (chunk, block);
        self.counted(block, place)
    }

    /// The state at `place` of dense `block`, counted among the granules
    /// seen if empty (the caller fills it).
    #[inline(always)]
    fn counted(&mut self, block: u32, place: usize) -> &mut S {
        let state = self.blocks.state(block, place);
        if *state == self.empty {
            self.granules += 1;
        }
        state
    }

    /// What the chunk map says of `chunk`, once made dense if `granule` is
    /// the one that takes it to [`PROMOTE_AT`] granules.
    fn chunk_of(&mut self, chunk: u64, granule: u64) -> Chunk {
        let known = *self.chunks.entry(chunk).or_insert(Chunk::Sparse(0));
        match known {
            Chunk::Sparse(count)
                if count + 1 >= PROMOTE_AT && !self.sparse.contains_key(&granule) =>
            {
                let block = self.promote(chunk);
                self.chunks.insert(chunk, Chunk::Dense(block));
                self.grow_cache();
                Chunk::Dense(block)
            }
            known => known,
        }
    }

    /// The second cache's entry for `chunk` (none while it has no entries).
    fn second_slot(&mut self, chunk: u64) -> Option<&mut (u64, u32)> {
        let mask = self.second.len().wrapping_sub(1);
        self.second.get_mut(chunk as usize & mask)
    }

    /// The block of dense `chunk` if the second cache has it.
    fn second_cached(&mut self, chunk: u64) -> Option<u32> {
        let &mut (cached, block) = self.second_slot(chunk)?;
        (cached == chunk).then_some(block)
    }

    /// Makes the second cache 4x larger (or [`CACHE_ENTRIES`] at first),
    /// empty, once the dense blocks reach [`BLOCKS_PER_CACHE_ENTRY`] per
    /// entry it would have (up to [`MAX_SECOND_ENTRIES`]).
    fn grow_cache(&mut self) {
        let entries = (self.second.len() * 4).max(CACHE_ENTRIES);
        if entries <= MAX_SECOND_ENTRIES && self.blocks.len() >= entries * BLOCKS_PER_CACHE_ENTRY {
            self.second = vec![(NO_CHUNK, 0); entries].into_boxed_slice();
        }
    }

    /// Moves `chunk`'s sparse granules to a new block.
    fn promote(&mut self, chunk: u64) -> u32 {
        let first = chunk << CHUNK_SHIFT;
        let sparse = &mut self.sparse;
        let empty = &self.empty;
        let states = (first..first + CHUNK_GRANULES as u64)
            .map(|granule| sparse.remove(&granule).unwrap_or_else(|| empty.clone()));
        self.blocks.take(&mut self.free_blocks, states)
    }

    /// The state of `granule` of uniform `chunk` (`entry`): its own, made
    /// a copy of the chunk's if it had none; the chunk made dense at
    /// [`PROMOTE_AT`] granules of their own.
    #[cold]
    fn uniform_granule(
        &mut self,
        (chunk, entry): (u64, UniformEntry),
        granule: u64,
        copier: &mut impl Copier<S>,
    ) -> &mut S {
        if !self.sparse.contains_key(&granule) {
            if entry.own() + 1 >= PROMOTE_AT {
                let block = self.densify(chunk, entry, copier);
                self.cache[chunk as usize % CACHE_ENTRIES] = (chunk, block);
                return self.blocks.state(block, (granule & PLACE_MASK) as usize);
            }
            let state = copier.copy(&self.uniform[entry.at() as usize]);
            let own = Chunk::Uniform(entry.with_own(entry.own() + 1));
            self.chunks.insert(chunk, own);
            self.sparse.insert(granule, state);
        }
        self.sparse.get_mut(&granule).expect("a state of its own")
    }

    /// Uniform `chunk` (`entry`) made dense, each granule keeping its own
    /// state or taking a copy of the chunk's; returns its block.
    fn densify(&mut self, chunk: u64, entry: UniformEntry, copier: &mut impl Copier<S>) -> u32 {
        let at = entry.at();
        let state = std::mem::replace(&mut self.uniform[at as usize], self.empty.clone());
        self.free_uniform.push(at);
        let first = chunk << CHUNK_SHIFT;
        let sparse = &mut self.sparse;
        let states = (first..first + CHUNK_GRANULES as u64).map(|granule| {
            sparse
                .remove(&granule)
                .unwrap_or_else(|| copier.copy(&state))
        });
        let block = self.blocks.take(&mut self.free_blocks, states);
        copier.discard(state);
        self.chunks.insert(chunk, Chunk::Dense(block));
        self.grow_cache();
        if let Some(entry) = self.second_slot(chunk) {
            *entry = (chunk, block);
        }
        block
    }

    /// Chunk `chunk`, which a range covers whole: uniform with no granule
    /// of its own (made so, every granule counted, if no granule of it was
    /// looked up yet), or mixed. The caller leaves a new uniform state
    /// non-empty.
    pub(crate) fn whole_chunk(&mut self, chunk: u64) -> WholeChunk {
        match self.chunks.get(&chunk) {
            Some(&Chunk::Uniform(entry)) if entry.own() == 0 => WholeChunk::Uniform(entry.at()),
            None | Some(Chunk::Sparse(0)) => match self.new_uniform(self.empty.clone()) {
                Some(at) => {
                    self.chunks.insert(chunk, Chunk::Uniform(UniformEntry(at)));
                    self.granules += CHUNK_GRANULES as u64;
                    WholeChunk::Uniform(at)
                }
                None => WholeChunk::Mixed,
            },
            Some(_) => WholeChunk::Mixed,
        }
    }

    /// The state of a uniform chunk ([`WholeChunk::Uniform`]).
    pub(crate) fn uniform_state(&mut self, at: u32) -> &mut S {
        &mut self.uniform[at as usize]
    }

    /// After a range went over every granule of dense `chunk`: if `same`
    /// says all its states are alike, the chunk turns uniform, its block
    /// freed.
    pub(crate) fn settle_uniform(&mut self, chunk: u64, same: impl Fn(&S, &S) -> bool) {
        let Some(&Chunk::Dense(block)) = self.chunks.get(&chunk) else {
            return;
        };
        let first = self.blocks.state(block, 0).clone();
        if !(1..CHUNK_GRANULES).all(|place| same(&first, self.blocks.state(block, place))) {
            return;
        }
        let Some(at) = self.new_uniform(first) else {
            return;
        };
        for place in 0..CHUNK_GRANULES {
            *self.blocks.state(block, place) = self.empty.clone();
        }
        self.free_blocks.push(block);
        self.forget_cached(chunk);
        self.chunks.insert(chunk, Chunk::Uniform(UniformEntry(at)));
    }

    /// A slot of `uniform` holding `state`; none past [`MAX_UNIFORM`].
    fn new_uniform(&mut self, state: S) -> Option<u32> {
        match self.free_uniform.pop() {
            Some(at) => {
                self.uniform[at as usize] = state;
                Some(at)
            }
            None if self.uniform.len() < MAX_UNIFORM => {
                self.uniform.push(state);
                Some((self.uniform.len() - 1) as u32)
            }
            None => None,
        }
    }

    /// Drops `chunk` from both caches.
    fn forget_cached(&mut self, chunk: u64) {
        let slot = &mut self.cache[chunk as usize % CACHE_ENTRIES];
        if slot.0 == chunk {
            *slot = (NO_CHUNK, 0);
        }
        if let Some(entry) = self.second_slot(chunk)
            && entry.0 == chunk
        {
            *entry = (NO_CHUNK, 0);
        }
    }

    /// A granule of a sparse chunk that stays sparse: one lookup when it
    /// is known, and its chunk counts it when it is new.
    fn sparse_state(&mut self, chunk: u64, granule: u64) -> &mut S {
        match self.sparse.entry(granule) {
            Entry::Occupied(known) => known.into_mut(),
            Entry::Vacant(new) => {
                if let Some(Chunk::Sparse(count)) = self.chunks.get_mut(&chunk) {
                    *count += 1;
                }
                self.granules += 1;
                new.insert(self.empty.clone())
            }
        }
    }

    /// Calls `f` with every state held (some of them maybe still `empty`;
    /// a uniform chunk's once).
    pub(crate) fn for_each_state(&self, mut f: impl FnMut(&S)) {
        self.sparse.values().for_each(&mut f);
        self.uniform.iter().for_each(&mut f);
        self.blocks.segments.iter().flatten().for_each(f);
    }

    /// Distinct granules looked up so far.
    pub(crate) fn granules(&self) -> u64 {
        self.granules
    }

    /// Estimated bytes held: hashbrown keeps a control byte per bucket
    /// besides each `(key, value)`.
    pub(crate) fn state_bytes(&self) -> u64 {
        let chunks = self.chunks.capacity() * (size_of::<(u64, Chunk)>() + 1);
        let sparse = self.sparse.capacity() * (size_of::<(u64, S)>() + 1);
        let blocks = self.blocks.state_bytes();
        let cache = (CACHE_ENTRIES + self.second.len()) * size_of::<(u64, u32)>();
        let uniform = self.uniform.capacity() * size_of::<S>()
            + (self.free_uniform.capacity() + self.free_blocks.capacity()) * size_of::<u32>();
        (chunks + sparse + blocks + cache + uniform) as u64
    }
}

/// Blocks of states per segment (1536 KB of 24-byte states): the blocks
/// live in segments that never move, so a table of millions of granules
/// (a 64 MB memcpy is 8 M) grows without a doubling copy of all of them.
const SEGMENT_BLOCKS: usize = 1024;

/// States of one full segment.
const SEGMENT_STATES: usize = SEGMENT_BLOCKS * CHUNK_GRANULES;

/// The dense blocks, by index, in fixed segments; every segment but the
/// last is full.
#[derive(Debug)]
struct Blocks<S> {
    segments: Vec<Vec<S>>,
}

impl<S> Default for Blocks<S> {
    fn default() -> Blocks<S> {
        Blocks {
            segments: Vec::new(),
        }
    }
}

impl<S> Blocks<S> {
    /// Blocks held.
    fn len(&self) -> usize {
        self.segments.last().map_or(0, |last| {
            (self.segments.len() - 1) * SEGMENT_BLOCKS + last.len() / CHUNK_GRANULES
        })
    }

    #[inline]
    fn state(&mut self, block: u32, place: usize) -> &mut S {
        let block = block as usize;
        let segment = &mut self.segments[block / SEGMENT_BLOCKS];
        &mut segment[(block % SEGMENT_BLOCKS) * CHUNK_GRANULES + place]
    }

    /// A block of `states` (`CHUNK_GRANULES` of them), one of `free` if
    /// any; returns its index.
    fn take(&mut self, free: &mut Vec<u32>, states: impl Iterator<Item = S>) -> u32 {
        match free.pop() {
            Some(block) => {
                for (place, state) in states.enumerate() {
                    *self.state(block, place) = state;
                }
                block
            }
            None => self.push(states),
        }
    }

    /// Appends a block of `CHUNK_GRANULES` states; returns its index.
    fn push(&mut self, states: impl Iterator<Item = S>) -> u32 {
        let block = self.len();
        if self
            .segments
            .last()
            .is_none_or(|last| last.len() == SEGMENT_STATES)
        {
            // Grown by doubling like any vector, but only up to its own
            // size: a small table stays small.
            self.segments.push(Vec::new());
        }
        let segment = self.segments.last_mut().expect("a segment was just made");
        let before = segment.len();
        segment.extend(states);
        debug_assert_eq!(segment.len() - before, CHUNK_GRANULES);
        block as u32
    }

    fn state_bytes(&self) -> usize {
        self.segments.iter().map(Vec::capacity).sum::<usize>() * size_of::<S>()
            + self.segments.capacity() * size_of::<Vec<S>>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Looks `granule` up and marks it touched, as an access would.
    fn touch(table: &mut GranuleTable<u64>, granule: u64, value: u64) -> u64 {
        let state = table.state(granule, &mut Cloning);
        let before = *state;
        *state = value;
        before
    }

    #[test]
    fn a_chunk_becomes_dense_and_keeps_what_it_had() {
        let mut table = GranuleTable::new(0u64);
        let base = 5 << CHUNK_SHIFT;
        for i in 0..u64::from(PROMOTE_AT) - 1 {
            touch(&mut table, base + i * 2, 100 + i);
        }
        assert_eq!(table.blocks.len(), 0, "still sparse below the threshold");
        touch(&mut table, base + 63, 7);
        assert_eq!(table.blocks.len(), 1, "dense at the threshold");
        assert!(table.sparse.is_empty());
        for i in 0..u64::from(PROMOTE_AT) - 1 {
            assert_eq!(touch(&mut table, base + i * 2, 1), 100 + i);
        }
        assert_eq!(touch(&mut table, base + 63, 1), 7);
        assert_eq!(table.granules(), u64::from(PROMOTE_AT));
    }

    #[test]
    fn dense_chunks_past_a_segment_keep_their_states() {
        let mut table = GranuleTable::new(0u64);
        let chunks = SEGMENT_BLOCKS as u64 + 7;
        for chunk in 0..chunks {
            for place in 0..u64::from(PROMOTE_AT) {
                touch(
                    &mut table,
                    chunk * 1000 * 64 + place,
                    chunk * 100 + place + 1,
                );
            }
        }
        assert_eq!(table.blocks.len(), chunks as usize);
        assert_eq!(table.blocks.segments.len(), 2);
        for chunk in 0..chunks {
            for place in 0..u64::from(PROMOTE_AT) {
                let granule = chunk * 1000 * 64 + place;
                assert_eq!(touch(&mut table, granule, 1), chunk * 100 + place + 1);
            }
        }
        assert_eq!(table.granules(), chunks * u64::from(PROMOTE_AT));
    }

    #[test]
    fn the_cache_grows_with_the_dense_blocks_and_forgets_nothing() {
        let mut table = GranuleTable::new(0u64);
        let chunks = (MAX_SECOND_ENTRIES * BLOCKS_PER_CACHE_ENTRY + 100) as u64;
        let granule = |chunk: u64, place: u64| chunk * 7 * 64 + place;
        // Chunks made dense in an interleaving, the earlier ones touched
        // again between (cached under the small cache's slots).
        for chunk in 0..chunks {
            for place in 0..u64::from(PROMOTE_AT) {
                touch(&mut table, granule(chunk, place), chunk * 100 + place + 1);
            }
            let earlier = chunk / 2;
            let before = touch(&mut table, granule(earlier, 0), earlier * 100 + 1);
            assert_eq!(before, earlier * 100 + 1);
        }
        assert_eq!(table.second.len(), MAX_SECOND_ENTRIES);
        for chunk in 0..chunks {
            for place in 0..u64::from(PROMOTE_AT) {
                assert_eq!(
                    touch(&mut table, granule(chunk, place), 1),
                    chunk * 100 + place + 1
                );
            }
        }
        assert_eq!(table.granules(), chunks * u64::from(PROMOTE_AT));
        let cache_bytes = MAX_SECOND_ENTRIES * size_of::<(u64, u32)>();
        assert!(
            cache_bytes as u64 <= table.granules(),
            "under a byte a granule"
        );
    }

    #[test]
    fn a_small_table_keeps_a_small_cache() {
        let mut table = GranuleTable::new(0u64);
        for g in 0..1000 {
            touch(&mut table, g, 1);
        }
        assert!(table.second.is_empty());
    }

    #[test]
    fn a_granule_seen_twice_in_a_sparse_chunk_counts_once() {
        let mut table = GranuleTable::new(0u64);
        for _ in 0..100 {
            touch(&mut table, 3, 1);
        }
        assert_eq!(table.granules(), 1);
        assert_eq!(table.blocks.len(), 0);
    }

    proptest! {
        /// The table behaves as a map from granule to state, whatever the
        /// mix of sparse and dense chunks and cache collisions.
        #[test]
        fn behaves_as_a_map(ops in prop::collection::vec((0u64..4, 0u64..64, 1u64..1000), 1..2000),
                            spread in prop::sample::select(vec![1u64, 64, 1 << 20, MAX_SECOND_ENTRIES as u64 * 64])) {
            let mut table = GranuleTable::new(0u64);
            let mut model = std::collections::HashMap::new();
            for (chunk, place, value) in ops {
                let granule = (chunk * spread) * CHUNK_GRANULES as u64 + place;
                let before = touch(&mut table, granule, value);
                prop_assert_eq!(before, model.insert(granule, value).unwrap_or(0));
            }
            prop_assert_eq!(table.granules(), model.len() as u64);
        }
    }
}
