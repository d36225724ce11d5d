//! The program's heap while recording or replaying: a deterministic
//! size-class allocator over a fixed address range.
//!
//! Why not glibc's malloc: replay must hand out the recorded addresses.
//! Every allocator call is an ordered event, but glibc's malloc also has
//! state that no event orders: per-thread caches that a thread frees inside
//! libc when it exits, at a moment that differs from run to run. This
//! allocator's state depends only on the sequence of calls: LIFO free lists
//! per size class, a bump pointer for new blocks, no per-thread state. Given
//! the recorded order of calls, the recorded addresses come back.
//!
//! Blocks carry a 16-byte header before the pointer: the size class (or the
//! page count of a large block) and a tag, the block's address mixed with
//! [`LIVE_TAG`] and its size class (see [`live_tag`]) while it is handed
//! out and with [`FREED_TAG`] once freed;
//! an over-aligned pointer has a header of its own inside its block: a mark
//! and the offset back to the block. Pointers outside the range (allocated
//! by glibc before the runtime started) are handed back to glibc.
//!
//! A pointer into the range that is not a live block's (one inside a block,
//! one freed already) ends the program as glibc's checks do, `free():
//! invalid pointer` and abort, in record and replay alike: trusting its
//! header read whatever the program had stored before it as a size class
//! (Phoenix's histogram-pthread frees an array inside a struct: an index
//! out of bounds, a panic in the runtime) or put it on a free list, where
//! the next allocation of that class handed it out again.

use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::real;

/// Start of the heap range: below the executable (0x5555... without ASLR)
/// and the runtime's own region (see alloc.rs), above anything the kernel
/// hands out for brk or small mappings.
const BASE: usize = 0x5000_0000_0000;
/// Reserved (not committed) size.
const SPAN: usize = 1 << 40;
/// (The trace's [`rr_lite_trace::HEAP_BLOCK_HEADER`]: the split's race
/// finder knows where a free's header bytes are.)
const HEADER: usize = rr_lite_trace::HEAP_BLOCK_HEADER as usize;
const ALIGNED_MARK: usize = usize::MAX;
/// Mixed with a block's address in its header's second word while the
/// block is handed out, and once it is freed.
const LIVE_TAG: usize = 0x6c69_7665_b10c_4b1d;
const FREED_TAG: usize = 0x6672_6565_b10c_4b1d;
/// Where a live tag carries the block's size class ([`live_tag`]): above
/// every address of the range.
const TAG_CLASS_SHIFT: u32 = 48;
const _: () = assert!(BASE + SPAN <= 1 << TAG_CLASS_SHIFT);
/// The class a live tag gives a large block: its page count is in the
/// header's first word.
const LARGE_CLASS: usize = CLASSES;
const LARGE_FLAG: usize = 1 << 62;
const PAGE: usize = 4096;
const SMALL_CLASSES: usize = 64;
/// Geometric classes above 1 KiB: four per doubling, up to 1 MiB.
const GEOMETRIC_CLASSES: usize = 40;
const CLASSES: usize = SMALL_CLASSES + GEOMETRIC_CLASSES;
const LARGE_FREE_SLOTS: usize = 64;

const fn class_sizes() -> [usize; CLASSES] {
    let mut sizes = [0; CLASSES];
    let mut i = 0;
    while i < SMALL_CLASSES {
        sizes[i] = 16 * (i + 1);
        i += 1;
    }
    let mut k = 0;
    while k < GEOMETRIC_CLASSES {
        let octave = 1024usize << (k / 4 + 1);
        let step = (octave / 2) / 4;
        sizes[SMALL_CLASSES + k] = octave / 2 + step * (k % 4 + 1);
        k += 1;
    }
    sizes
}

const CLASS_SIZE: [usize; CLASSES] = class_sizes();
const LARGEST_CLASS: usize = CLASS_SIZE[CLASSES - 1];

struct Heap {
    lock: AtomicBool,
    mapped: AtomicBool,
    /// Next unused byte of the range.
    bump: AtomicUsize,
    /// Head of each class's free list (0 = empty); the next pointer is
    /// stored in the freed block's first word.
    free: [AtomicUsize; CLASSES],
    /// Freed large blocks (header address), first fit.
    large_free: [AtomicUsize; LARGE_FREE_SLOTS],
}

static HEAP: Heap = Heap {
    lock: AtomicBool::new(false),
    mapped: AtomicBool::new(false),
    bump: AtomicUsize::new(BASE),
    free: [const { AtomicUsize::new(0) }; CLASSES],
    large_free: [const { AtomicUsize::new(0) }; LARGE_FREE_SLOTS],
};

/// Reserves the range; called once at start-up in record and replay mode.
pub(crate) fn reserve() -> bool {
    let ok = crate::alloc::reserve_fixed(BASE, SPAN);
    HEAP.mapped.store(ok, Ordering::Release);
    ok
}

/// Set in the child of a fork (which runs inert): the heap keeps serving
/// it, since its blocks allocated before the fork are the heap's.
static FORKED: AtomicBool = AtomicBool::new(false);

/// The heap serves allocations (record or replay mode, or a child forked
/// from one; range reserved).
pub(crate) fn active() -> bool {
    HEAP.mapped.load(Ordering::Acquire) && (crate::mode::active() || FORKED.load(Ordering::Relaxed))
}

/// In the child of a fork (only the forking thread lives): keep serving,
/// and release the lock if another thread of the parent held it.
pub(crate) fn serve_forked_child() {
    FORKED.store(true, Ordering::Relaxed);
    HEAP.lock.store(false, Ordering::Release);
}

/// Whether `p` points into this heap's range (else it is glibc's).
pub(crate) fn owns(p: usize) -> bool {
    (BASE..BASE + SPAN).contains(&p)
}

/// Runs `f` under the heap lock, with the thread marked busy so that the
/// memset/memcpy the allocator makes are not program events.
fn locked<R>(f: impl FnOnce() -> R) -> R {
    crate::thread::THREAD.with(|t| t.enter());
    let backoff = crossbeam_utils::Backoff::new();
    while HEAP
        .lock
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        backoff.spin();
    }
    let r = f();
    HEAP.lock.store(false, Ordering::Release);
    crate::thread::THREAD.with(|t| t.leave());
    r
}

fn class_of(size: usize) -> Option<usize> {
    if size > LARGEST_CLASS {
        return None;
    }
    if size <= 1024 {
        return Some(size.max(1).div_ceil(16) - 1);
    }
    CLASS_SIZE[SMALL_CLASSES..]
        .iter()
        .position(|&c| c >= size)
        .map(|k| SMALL_CLASSES + k)
}

fn read_word(addr: usize) -> usize {
    // SAFETY: callers pass addresses of headers or freed blocks inside the
    // mapped range.
    unsafe { (addr as *const usize).read() }
}

fn write_word(addr: usize, value: usize) {
    // SAFETY: as for `read_word`.
    unsafe { (addr as *mut usize).write(value) }
}

/// Whether `bytes` (header included, 16-aligned) carved off the bump
/// pointer at `at` stay inside the range.
fn fits(at: usize, bytes: usize) -> bool {
    at.checked_add(bytes).is_some_and(|end| end <= BASE + SPAN)
}

/// Where the block for an allocation of `size` bytes comes from: what
/// [`allocate`] decides before it writes anything, so that the event of an
/// allocation can hold the block's header first ([`next_block`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    /// The head of size class `class`'s free list.
    FreeList { class: usize, head: usize },
    /// A new block of `class` carved off the bump pointer at `at`.
    Carved { class: usize, at: usize },
    /// The large block in `HEAP.large_free[slot]`, its header at `header`.
    LargeFree { slot: usize, header: usize },
    /// `pages` new pages off the bump pointer, the header at `header` (the
    /// pointer page-aligned).
    LargeCarved { header: usize, pages: usize },
}

impl Source {
    /// The pointer the allocation hands out.
    fn pointer(self) -> usize {
        match self {
            Source::FreeList { head, .. } => head,
            Source::Carved { at, .. } => at + HEADER,
            Source::LargeFree { header, .. } | Source::LargeCarved { header, .. } => {
                header + HEADER
            }
        }
    }
}

/// Where a block of at least `size` bytes would come from (reads only);
/// None if the range is used up.
fn choose(size: usize) -> Option<Source> {
    if let Some(class) = class_of(size) {
        let head = HEAP.free[class].load(Ordering::Relaxed);
        if head != 0 {
            return Some(Source::FreeList { class, head });
        }
        let at = HEAP.bump.load(Ordering::Relaxed);
        return fits(at, HEADER + CLASS_SIZE[class]).then_some(Source::Carved { class, at });
    }
    let pages = (size + HEADER).div_ceil(PAGE);
    for (slot, kept) in HEAP.large_free.iter().enumerate() {
        let header = kept.load(Ordering::Relaxed);
        if header != 0 {
            let have = read_word(header) & !LARGE_FLAG;
            if have >= pages && have <= pages * 2 {
                return Some(Source::LargeFree { slot, header });
            }
        }
    }
    // Large blocks start on a page boundary minus the header, so the
    // pointer is page-aligned (useful for valloc and big alignments).
    let at = HEAP.bump.load(Ordering::Relaxed);
    let header = (at + HEADER).next_multiple_of(PAGE) - HEADER;
    fits(at, header - at + pages * PAGE).then_some(Source::LargeCarved { header, pages })
}

/// Allocates a block of at least `size` bytes; returns (pointer, fresh).
/// Fresh blocks come from untouched memory and are zero.
fn allocate(size: usize) -> Option<(usize, bool)> {
    let source = choose(size)?;
    let p = source.pointer();
    match source {
        Source::FreeList { class, head } => {
            HEAP.free[class].store(read_word(head), Ordering::Relaxed);
            Some((hand_out(p, class), false))
        }
        Source::Carved { class, at } => {
            HEAP.bump
                .store(at + HEADER + CLASS_SIZE[class], Ordering::Relaxed);
            write_word(at, class);
            Some((hand_out(p, class), true))
        }
        Source::LargeFree { slot, .. } => {
            HEAP.large_free[slot].store(0, Ordering::Relaxed);
            Some((hand_out(p, LARGE_CLASS), false))
        }
        Source::LargeCarved { header, pages } => {
            HEAP.bump.store(header + pages * PAGE, Ordering::Relaxed);
            write_word(header, pages | LARGE_FLAG);
            Some((hand_out(p, LARGE_CLASS), true))
        }
    }
}

/// The pointer the next allocation of `size` bytes will hand out
/// (`malloc`, `calloc`), if this heap serves it: the events of allocations
/// hold its header before they allocate (`events::log_alloc`). Exact while
/// no other allocation runs, which holding the heap's stripe ensures (so
/// without the heap's lock: it only reads, atomics and mapped headers, and
/// the allocation's event holds the heap's stripe longer with it).
pub(crate) fn next_block(size: usize) -> Option<usize> {
    active()
        .then(|| choose(size).map(Source::pointer))
        .flatten()
}

/// Tags block `p`, of size class `class` ([`LARGE_CLASS`] for a large
/// block), as handed out; returns it.
fn hand_out(p: usize, class: usize) -> usize {
    write_word(p - 8, live_tag(p, class));
    p
}

/// The tag of live block `p` of size class `class`. The class is in the
/// tag, not read from the header's first word when the block is freed: a
/// program that writes just before a block (an underflow by one word, or a
/// struct's field "before" its array) overwrites that word, which glibc
/// keeps nothing in that it checks (its chunk's previous size), and
/// `free` took the program's number for a class (a panic in the runtime:
/// SCTBench's ctrace.foobar.comb, index 137438953540).
fn live_tag(p: usize, class: usize) -> usize {
    p ^ LIVE_TAG ^ (class << TAG_CLASS_SHIFT)
}

/// The size class live block `p`'s tag gives (a valid class, or
/// [`LARGE_CLASS`]), if the tag is a live block's.
fn class_of_live(p: usize) -> Option<usize> {
    let info = read_word(p - 8) ^ p ^ LIVE_TAG;
    let class = info >> TAG_CLASS_SHIFT;
    (info & ((1 << TAG_CLASS_SHIFT) - 1) == 0 && class <= LARGE_CLASS).then_some(class)
}

/// The page count in large block `p`'s header, if it holds a sane one.
fn large_pages(p: usize) -> Option<usize> {
    let word = read_word(p - HEADER);
    let pages = word & !LARGE_FLAG;
    (word & LARGE_FLAG != 0 && pages > 0 && pages <= SPAN / PAGE).then_some(pages)
}

/// Whether `p` could be a block's pointer: aligned as every one is, with
/// its header inside the range (which is mapped whole: readable, zero
/// where never written).
fn block_shaped(p: usize) -> bool {
    p.is_multiple_of(HEADER) && (BASE + HEADER..BASE + SPAN).contains(&p)
}

/// The block (not over-aligned) of `p`, a pointer into the range, if this
/// heap handed it out and has not taken it back; reads only inside the
/// range.
fn live_block(p: usize) -> Option<usize> {
    if !block_shaped(p) {
        return None;
    }
    let block = if read_word(p - HEADER) == ALIGNED_MARK {
        p.checked_sub(read_word(p - 8))?
    } else {
        p
    };
    let inside = block_shaped(block) && block <= p;
    // A large block's page count is in its header: one the program wrote
    // over makes the block unknown, as glibc's size check does.
    let live = inside
        && match class_of_live(block) {
            Some(LARGE_CLASS) => large_pages(block).is_some(),
            Some(_) => true,
            None => false,
        };
    live.then_some(block)
}

/// What glibc does with a pointer it never handed out, or took back:
/// reports `call` and aborts (the program's crash, recorded and replayed
/// as any other).
#[cold]
fn invalid_pointer(call: &[u8], p: usize) -> ! {
    let freed = block_shaped(p) && read_word(p - 8) == p ^ FREED_TAG;
    let what: &[u8] = if freed {
        b"(): double free detected\n"
    } else {
        b"(): invalid pointer\n"
    };
    crate::sys::write_all(2, call);
    crate::sys::write_all(2, what);
    // SAFETY: abort has no preconditions and does not return.
    unsafe { libc::abort() }
}

/// Usable bytes of live block `p` (not over-aligned: [`live_block`]).
fn block_size(p: usize) -> usize {
    match class_of_live(p) {
        Some(class) if class < CLASSES => CLASS_SIZE[class],
        _ => large_pages(p).map_or(0, |pages| pages * PAGE - HEADER),
    }
}

/// Frees live block `p` ([`live_block`]).
fn release(p: usize) {
    let class = class_of_live(p);
    write_word(p - 8, p ^ FREED_TAG);
    let Some(class) = class.filter(|&c| c < CLASSES) else {
        let header = p - HEADER;
        // A full large free list drops the block (never reused): the range
        // is 1 TiB, and the outcome is deterministic either way.
        if let Some(slot) = HEAP
            .large_free
            .iter()
            .find(|s| s.load(Ordering::Relaxed) == 0)
        {
            slot.store(header, Ordering::Relaxed);
        }
        return;
    };
    write_word(p, HEAP.free[class].load(Ordering::Relaxed));
    HEAP.free[class].store(p, Ordering::Relaxed);
}

/// The block `p`, a pointer into the range, belongs to; aborts the program
/// as glibc would unless it is a live block's pointer (`call`: the C
/// function it was given to).
fn block_of(p: usize, call: &[u8]) -> usize {
    live_block(p).unwrap_or_else(|| invalid_pointer(call, p))
}

pub(crate) fn malloc(size: usize) -> *mut u8 {
    locked(|| allocate(size).map_or(0, |(p, _)| p)) as *mut u8
}

pub(crate) fn calloc(n: usize, size: usize) -> *mut u8 {
    let Some(total) = n.checked_mul(size) else {
        return core::ptr::null_mut();
    };
    locked(|| match allocate(total) {
        Some((p, true)) => p,
        Some((p, false)) => {
            // SAFETY: a reused block of at least `total` bytes.
            unsafe { core::ptr::write_bytes(p as *mut u8, 0, total) };
            p
        }
        None => 0,
    }) as *mut u8
}

/// Frees `p`; returns false if it is not from this heap (glibc's).
pub(crate) fn free(p: *mut u8) -> bool {
    let p = p as usize;
    if !owns(p) {
        return false;
    }
    // (Looked at under the lock, against another thread freeing it too;
    // reported after, holding nothing.)
    if !locked(|| live_block(p).map(release).is_some()) {
        invalid_pointer(b"free", p);
    }
    true
}

/// Usable size of `p`, or None if it is not from this heap.
pub(crate) fn usable_size(p: *mut u8) -> Option<usize> {
    let p = p as usize;
    owns(p).then(|| {
        // (glibc's answer for a pointer it never handed out is undefined.)
        live_block(p).map_or(0, |block| block_size(block) - (p - block))
    })
}

/// [`next_block`] for [`realloc`] of `p` (0: none): `p` itself if the
/// block keeps it, else the block a new allocation takes; None if `p` is
/// no live block of this heap's (the call aborts).
pub(crate) fn next_realloc(p: usize, size: usize) -> Option<usize> {
    if owns(p) {
        match active().then(|| live_block(p)).flatten() {
            Some(block) if stays_in_place(p, block, size) => return Some(p),
            Some(_) => {}
            None => return None,
        }
    }
    next_block(size)
}

/// Whether [`realloc`] of `p`, in live block `block`, to `size` bytes
/// keeps the block (else it moves to a new one).
fn stays_in_place(p: usize, block: usize, size: usize) -> bool {
    block == p && block_size(block) >= size
}

pub(crate) fn realloc(p: *mut u8, size: usize) -> *mut u8 {
    if p.is_null() {
        return malloc(size);
    }
    let at = p as usize;
    let old = if owns(at) {
        let block = block_of(at, b"realloc");
        if stays_in_place(at, block, size) {
            return p;
        }
        block_size(block) - (at - block)
    } else {
        // SAFETY: a block glibc allocated before the runtime started.
        unsafe { real::malloc_usable_size(p.cast()) }
    };
    let new = malloc(size);
    if !new.is_null() {
        crate::thread::THREAD.with(|t| t.enter());
        // SAFETY: both blocks hold at least min(old, size) bytes.
        unsafe { core::ptr::copy_nonoverlapping(p, new, old.min(size)) };
        crate::thread::THREAD.with(|t| t.leave());
        if !free(p) {
            // SAFETY: glibc's block, freed by glibc.
            unsafe { real::__libc_free(p.cast()) };
        }
    }
    new
}

/// Allocates `size` bytes aligned to `align` (a power of two).
pub(crate) fn aligned(align: usize, size: usize) -> *mut u8 {
    if align <= 16 {
        return malloc(size);
    }
    let Some(padded) = size.checked_add(align + HEADER) else {
        return core::ptr::null_mut();
    };
    locked(|| {
        let Some((block, _)) = allocate(padded) else {
            return 0;
        };
        let p = aligned_in(block, align);
        if p != block {
            write_word(p - HEADER, ALIGNED_MARK);
            write_word(p - HEADER + 8, p - block);
        }
        p
    }) as *mut u8
}

/// The pointer [`aligned`] hands out in `block`: the block's own if it is
/// aligned, else the first aligned one past a header of its own.
fn aligned_in(block: usize, align: usize) -> usize {
    if block.is_multiple_of(align) {
        block
    } else {
        (block + HEADER).next_multiple_of(align)
    }
}

/// [`next_block`] for [`aligned`].
pub(crate) fn next_aligned(align: usize, size: usize) -> Option<usize> {
    if align <= 16 {
        return next_block(size);
    }
    let padded = size.checked_add(align + HEADER)?;
    active()
        .then(|| choose(padded).map(|s| aligned_in(s.pointer(), align)))
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_grow_and_cover_sizes() {
        assert!(CLASS_SIZE.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(class_of(1), Some(0));
        assert_eq!(class_of(16), Some(0));
        assert_eq!(class_of(17), Some(1));
        assert_eq!(class_of(1024), Some(63));
        assert_eq!(CLASS_SIZE[class_of(1025).unwrap()], 1280);
        const { assert!(LARGEST_CLASS >= 1 << 20) };
        assert_eq!(class_of(LARGEST_CLASS + 1), None);
        assert!(CLASS_SIZE.iter().all(|c| c % 16 == 0));
    }
}
