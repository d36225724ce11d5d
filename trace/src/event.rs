//! What one log entry says: the event kinds, how each one accesses memory,
//! and the pseudo-addresses that let synchronisation and library state be
//! ordered by the same dependency analysis as plain memory accesses.

/// How an event touches its address, as far as the dependency analysis is
/// concerned. Synchronisation events are modelled as accesses to the sync
/// object's address (SPEC "Events").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Access {
    Read,
    Write,
    /// Atomic read-modify-write: conflicts like a write and reads the value.
    ReadModifyWrite,
}

impl Access {
    /// True when two accesses to one granule by different threads must be
    /// ordered (at least one of them writes).
    pub fn conflicts_with(self, other: Access) -> bool {
        self != Access::Read || other != Access::Read
    }

    pub fn writes(self) -> bool {
        self != Access::Read
    }
}

macro_rules! event_kinds {
    ($( $(#[$doc:meta])* $name:ident = $code:literal, $access:ident, $payload:literal, $label:literal; )*) => {
        /// The kind of a log entry. The discriminant is the on-disk code
        /// (6 bits, 1..=62; see docs/FORMAT.md), so it never changes once
        /// released: new kinds take new codes.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u8)]
        pub enum EventKind {
            $( $(#[$doc])* $name = $code, )*
        }

        impl EventKind {
            /// Every kind, in code order.
            pub const ALL: &'static [EventKind] = &[$(EventKind::$name,)*];

            /// Decodes an on-disk kind code.
            pub fn from_code(code: u8) -> Option<EventKind> {
                match code {
                    $( $code => Some(EventKind::$name), )*
                    _ => None,
                }
            }

            /// How the event accesses its address.
            pub fn access(self) -> Access {
                match self { $( EventKind::$name => Access::$access, )* }
            }

            /// Whether the entry carries a result value (payload).
            pub fn has_payload(self) -> bool {
                match self { $( EventKind::$name => $payload, )* }
            }

            /// Stable lower-case name used by `dump --json` and the CLI.
            pub fn name(self) -> &'static str {
                match self { $( EventKind::$name => $label, )* }
            }

            /// Parses a name produced by [`EventKind::name`].
            pub fn from_name(name: &str) -> Option<EventKind> {
                match name { $( $label => Some(EventKind::$name), )* _ => None }
            }
        }
    };
}

event_kinds! {
    /// Plain load (atomic ones are [`EventKind::AtomicLoad`] since format
    /// version 3).
    Read = 1, Read, false, "read";
    /// Plain store (atomic ones: [`EventKind::AtomicStore`]).
    Write = 2, Write, false, "write";
    /// Atomic read-modify-write or compare-exchange.
    Rmw = 3, ReadModifyWrite, false, "rmw";
    /// A range read (memcpy source, `__tsan_read_range`).
    ReadRange = 4, Read, false, "read-range";
    /// A range write (memcpy/memset destination, `__tsan_write_range`).
    WriteRange = 5, Write, false, "write-range";
    /// Mutex acquired (logged after the real lock returned).
    MutexLock = 6, ReadModifyWrite, false, "mutex-lock";
    /// Mutex about to be released.
    MutexUnlock = 7, ReadModifyWrite, false, "mutex-unlock";
    /// trylock/timedlock, or a lock that failed (EINVAL on a destroyed
    /// mutex, EDEADLK); payload: the call's return value (0 = acquired).
    MutexTryLock = 8, ReadModifyWrite, true, "mutex-trylock";
    /// Read lock acquired or tried; payload: return value.
    RwReadLock = 9, Read, true, "rwlock-rdlock";
    /// Write lock acquired or tried; payload: return value.
    RwWriteLock = 10, ReadModifyWrite, true, "rwlock-wrlock";
    /// Read lock released.
    RwReadUnlock = 11, Read, false, "rwlock-rdunlock";
    /// Write lock released.
    RwWriteUnlock = 12, ReadModifyWrite, false, "rwlock-wrunlock";
    /// pthread_cond_signal.
    CondSignal = 13, Write, false, "cond-signal";
    /// pthread_cond_broadcast.
    CondBroadcast = 14, Write, false, "cond-broadcast";
    /// A cond wait returned; payload: return value (0 or ETIMEDOUT).
    CondWake = 15, Read, true, "cond-wake";
    /// Arrival at a barrier.
    BarrierArrive = 16, ReadModifyWrite, false, "barrier-arrive";
    /// Departure from a barrier; payload: return value (serial thread or 0).
    BarrierDepart = 17, Read, true, "barrier-depart";
    /// sem_post.
    SemPost = 18, ReadModifyWrite, false, "sem-post";
    /// sem_wait/trywait/timedwait returned; payload: return value.
    SemWait = 19, ReadModifyWrite, true, "sem-wait";
    /// Spin lock acquired or tried; payload: return value.
    SpinLock = 20, ReadModifyWrite, true, "spin-lock";
    /// Spin lock released.
    SpinUnlock = 21, ReadModifyWrite, false, "spin-unlock";
    /// pthread_create in the parent; address: the child's start pseudo-address;
    /// payload: the child's logical thread id.
    ThreadCreate = 22, Write, true, "thread-create";
    /// First event of a created thread (reads its start pseudo-address).
    ThreadStart = 23, Read, false, "thread-start";
    /// Last event of a thread (writes its exit pseudo-address).
    ThreadExit = 24, Write, false, "thread-exit";
    /// pthread_join returned; address: the joined thread's exit pseudo-address;
    /// payload: the joined thread's logical id.
    ThreadJoin = 25, Read, true, "thread-join";
    /// pthread_detach; address: the detached thread's exit pseudo-address.
    ThreadDetach = 26, ReadModifyWrite, true, "thread-detach";
    /// Allocator call (malloc, calloc, realloc, aligned variants); address:
    /// the heap pseudo-address; size: bytes requested; payload: the result.
    Alloc = 27, ReadModifyWrite, true, "alloc";
    /// free(); payload: the pointer freed.
    Free = 28, ReadModifyWrite, true, "free";
    /// Output to a file descriptor (write, stdio); address: the descriptor's
    /// pseudo-address; size: bytes (0 when unknown, as for printf).
    Output = 29, ReadModifyWrite, false, "output";
    /// rand()/random() family; address: the hidden state's pseudo-address;
    /// payload: the result.
    Random = 30, ReadModifyWrite, true, "random";
    /// A value that differs from run to run (time, clock_gettime, getpid);
    /// payload: the value returned.
    Time = 31, Read, true, "time";
    /// The process is exiting through exit() or a return from main; payload:
    /// the exit status.
    ProcessExit = 32, Write, true, "process-exit";
    /// A fatal signal was delivered to this thread; address: the faulting
    /// address (si_addr); site: the faulting instruction; payload: the signal.
    FatalSignal = 33, Read, true, "fatal-signal";
    /// A call that gives out descriptors (open, socket, pipe, dup, accept,
    /// fopen...); address: the descriptor table's pseudo-address; payload:
    /// the descriptor (two, `first | second << 32`, for pipe and
    /// socketpair), or -errno as a 64-bit two's complement if it failed.
    DescriptorOpen = 34, ReadModifyWrite, true, "descriptor-open";
    /// close() or fclose(); address: the descriptor table's pseudo-address;
    /// payload: 0, or -errno if it failed.
    DescriptorClose = 35, ReadModifyWrite, true, "descriptor-close";
    /// glibc's cache of thread stacks changes or is consulted: a thread
    /// hands its stack back at its end (after its exit event), a join or a
    /// detach frees a finished thread's stack, a create may reuse one.
    /// Address: the stack cache's pseudo-address.
    ThreadStacks = 36, ReadModifyWrite, false, "thread-stacks";
    /// Input from outside the program: read/recv/recvfrom on a pipe, FIFO,
    /// socket or character device, getrandom, or a thread's CPU mask;
    /// address: the descriptor's pseudo-address (getrandom: the random
    /// state's, the CPU mask: [`pseudo::CPUS`]); payload: the byte
    /// count, or -errno; the bytes are in the thread's `input-NNNN.bin`.
    Input = 37, ReadModifyWrite, true, "input";
    /// Atomic load (`__tsan_atomic*_load`).
    AtomicLoad = 38, Read, false, "atomic-load";
    /// Atomic store (`__tsan_atomic*_store`).
    AtomicStore = 39, Write, false, "atomic-store";
    /// A sync object initialised (pthread_mutex/cond/rwlock/spin/barrier
    /// init, sem_init, mtx_init, cnd_init): writes all of it; address and
    /// size: the object; payload: the call's result (0, or the error).
    SyncInit = 40, Write, true, "sync-init";
    /// A sync object destroyed (the matching destroy calls): writes all of
    /// it (glibc marks a destroyed mutex invalid, and refuses to destroy a
    /// locked one); address and size: the object; payload: the call's
    /// result (0, or the error, such as EBUSY).
    SyncDestroy = 41, Write, true, "sync-destroy";
    /// A futex wait made through `syscall(SYS_futex, ...)` by the program
    /// (C++20's semaphores, latches and `atomic::wait` in libstdc++'s
    /// headers): reads the futex word; logged when the call returned;
    /// payload: the kernel's result (0, or -errno: EAGAIN when the word had
    /// changed, ETIMEDOUT), which replay returns without waiting.
    FutexWait = 42, Read, true, "futex-wait";
    /// A futex wake made the same way: writes the futex word (a wait that
    /// returned after it comes after it); payload: the threads woken, or
    /// -errno.
    FutexWake = 43, Write, true, "futex-wake";
}

impl EventKind {
    /// Synchronisation, atomic and library events, as opposed to plain
    /// accesses (loads, stores and ranges the program makes without
    /// synchronising: what can race).
    pub fn is_sync(self) -> bool {
        !self.is_plain_access()
    }

    /// An atomic load, store or read-modify-write.
    pub fn is_atomic(self) -> bool {
        matches!(
            self,
            EventKind::AtomicLoad | EventKind::AtomicStore | EventKind::Rmw
        )
    }

    /// A plain load, store or range.
    pub fn is_plain_access(self) -> bool {
        matches!(
            self,
            EventKind::Read | EventKind::Write | EventKind::ReadRange | EventKind::WriteRange
        )
    }
}

/// Bytes of the header before every block the runtime's heap hands out
/// while recording and replaying (its size class or page count, and a tag
/// saying live or freed). A `free` of such a block is logged as a
/// `WriteRange` over the header and the block's first word, then the
/// `Free` (docs/FORMAT.md, "Event kinds").
pub const HEAP_BLOCK_HEADER: u64 = 16;

/// The bytes the runtime's heap reads and writes at block `p` when it hands
/// it out or takes it back, as (start, length): its header and its first
/// word (a free block's free-list link). What an allocator call's
/// `WriteRange` covers.
pub fn heap_block_range(p: u64) -> (u64, u64) {
    (p.saturating_sub(HEAP_BLOCK_HEADER), HEAP_BLOCK_HEADER + 8)
}

/// Pseudo-addresses for state that is shared but has no memory address of its
/// own. They live in the non-canonical upper half of the address space, which
/// no user-space access can touch, 64 bytes apart so that every supported
/// granule (up to 64 bytes) keeps them distinct.
pub mod pseudo {
    /// Start of the pseudo-address region.
    pub const BASE: u64 = 0xffff_8000_0000_0000;
    /// Spacing between two pseudo-addresses of one family.
    pub const STRIDE: u64 = 64;
    /// The allocator (all malloc-family calls are ordered on it).
    pub const HEAP: u64 = BASE;
    /// The hidden state of rand()/random().
    pub const RANDOM: u64 = BASE + STRIDE;
    /// Values that vary between runs (read only: never a dependency).
    pub const CLOCK: u64 = BASE + 2 * STRIDE;
    /// The process as a whole (exit).
    pub const PROCESS: u64 = BASE + 3 * STRIDE;
    /// The process's descriptor table: every call that gives out or frees
    /// descriptor numbers is ordered on it, as the kernel hands out the
    /// lowest free number.
    pub const DESCRIPTORS: u64 = BASE + 4 * STRIDE;
    /// The process's memory mappings: mmap, munmap and mremap are ordered on
    /// it (allocator-style events, the address as the payload), as the
    /// kernel picks addresses from what is mapped.
    pub const MAPPINGS: u64 = BASE + 12 * STRIDE;
    /// glibc's cache of thread stacks: whether pthread_create reuses a
    /// finished thread's stack (and so whether it allocates a new thread
    /// control block, an event) depends on which threads have really
    /// ended, so thread ends, joins, detaches and creates are ordered on it.
    /// It is [`MAPPINGS`]: a stack glibc maps inside pthread_create, or
    /// unmaps when it trims its cache inside a join, takes an address the
    /// program's own mmap calls would otherwise race for.
    pub const THREAD_STACKS: u64 = MAPPINGS;
    /// The stack cache's pseudo-address in traces recorded before
    /// 2026-11-25 (its events were not ordered with the mappings then).
    pub const THREAD_STACKS_BEFORE_2026_11_25: u64 = BASE + 13 * STRIDE;
    /// The CPUs a thread may run on (`sched_getaffinity`,
    /// `pthread_getaffinity_np`): input from outside, since a replay may
    /// run the threads elsewhere (`replay --one-cpu`).
    pub const CPUS: u64 = BASE + 14 * STRIDE;
    /// The reference counts of C++ exceptions held by `std::exception_ptr`
    /// (and by a rethrown exception until its catch ends): libstdc++
    /// changes them where no hook sees it, and whichever thread drops the
    /// last reference destroys the exception, so every change is ordered
    /// on this one address.
    pub const EXCEPTIONS: u64 = BASE + 15 * STRIDE;
    /// OpenMP (libgomp): a team's start, written by the thread that starts
    /// the parallel region, read by every member as it begins.
    pub const OMP_FORK: u64 = BASE + 5 * STRIDE;
    /// OpenMP: written by every member as it ends its part of a region,
    /// read by the starting thread once the region is over.
    pub const OMP_JOIN: u64 = BASE + 6 * STRIDE;
    /// OpenMP barriers (explicit, and the ones ending worksharing).
    pub const OMP_BARRIER: u64 = BASE + 7 * STRIDE;
    /// OpenMP unnamed `critical` sections.
    pub const OMP_CRITICAL: u64 = BASE + 8 * STRIDE;
    /// OpenMP `atomic` constructs that libgomp implements with its lock.
    pub const OMP_ATOMIC: u64 = BASE + 9 * STRIDE;
    /// OpenMP worksharing state: loop chunks, sections, `single` winners,
    /// cancellation, and the locks of `ordered` regions.
    pub const OMP_WORKSHARE: u64 = BASE + 10 * STRIDE;
    /// OpenMP `ordered` regions, in traces recorded before their locks
    /// moved to [`OMP_WORKSHARE`] (which releases them).
    pub const OMP_ORDERED: u64 = BASE + 11 * STRIDE;
    const FD_BASE: u64 = BASE + 0x1000_0000;
    const THREAD_START_BASE: u64 = BASE + 0x2000_0000;
    const THREAD_EXIT_BASE: u64 = BASE + 0x3000_0000;
    const FAMILY_SPAN: u64 = 0x1000_0000;

    /// Output to file descriptor `fd`.
    pub fn fd(fd: u32) -> u64 {
        FD_BASE + u64::from(fd) * STRIDE
    }

    /// Written by the creator of thread `t`, read by `t`'s first event.
    pub fn thread_start(t: u32) -> u64 {
        THREAD_START_BASE + u64::from(t) * STRIDE
    }

    /// Written by thread `t`'s last event, read by its joiner.
    pub fn thread_exit(t: u32) -> u64 {
        THREAD_EXIT_BASE + u64::from(t) * STRIDE
    }

    /// Whether `addr` is a thread's start or exit pseudo-address.
    pub fn is_thread_start_or_exit(addr: u64) -> bool {
        (THREAD_START_BASE..THREAD_EXIT_BASE + FAMILY_SPAN).contains(&addr)
    }

    /// A human-readable name for a pseudo-address, if it is one.
    pub fn describe(addr: u64) -> Option<String> {
        let family =
            |base: u64| (addr >= base && addr < base + FAMILY_SPAN).then(|| (addr - base) / STRIDE);
        match addr {
            HEAP => Some("<heap>".into()),
            RANDOM => Some("<random>".into()),
            CLOCK => Some("<clock>".into()),
            PROCESS => Some("<process>".into()),
            DESCRIPTORS => Some("<descriptor table>".into()),
            MAPPINGS => Some("<mappings>".into()),
            THREAD_STACKS_BEFORE_2026_11_25 => Some("<thread stacks>".into()),
            CPUS => Some("<cpus>".into()),
            EXCEPTIONS => Some("<exceptions>".into()),
            OMP_FORK => Some("<omp fork>".into()),
            OMP_JOIN => Some("<omp join>".into()),
            OMP_BARRIER => Some("<omp barrier>".into()),
            OMP_CRITICAL => Some("<omp critical>".into()),
            OMP_ATOMIC => Some("<omp atomic>".into()),
            OMP_WORKSHARE => Some("<omp workshare>".into()),
            OMP_ORDERED => Some("<omp ordered>".into()),
            _ => {
                if let Some(n) = family(FD_BASE) {
                    Some(format!("<fd {n}>"))
                } else if let Some(n) = family(THREAD_START_BASE) {
                    Some(format!("<start of thread {n}>"))
                } else {
                    family(THREAD_EXIT_BASE).map(|n| format!("<exit of thread {n}>"))
                }
            }
        }
    }
}

/// How far a thread's Lamport clock moves at an event it logs, in traces
/// whose header says `private_clock_steps` (ARCHITECTURE.md, "Private
/// steps"): by exactly this at a plain access to one stripe the thread has
/// held since its previous access to it (no other thread's event on that
/// stripe lies between the two), so the global order may hand such events
/// out right after their thread's previous one.
pub const PRIVATE_CLOCK_STEP: u64 = 1;
/// How far a thread's clock moves at least at every other event (one that
/// took a stripe, read a read-shared one, or is not a plain access).
pub const SYNCED_CLOCK_STEP: u64 = 2;

/// Whether an event at `clock` is one private step past its thread's
/// previous event, at `previous` (in a log that marks its private steps,
/// its stripe was the thread's since its previous access to it).
#[inline]
pub fn is_private_step(previous: u64, clock: u64) -> bool {
    clock == previous.wrapping_add(PRIVATE_CLOCK_STEP)
}

/// One entry of one thread's log, as decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordedEvent {
    /// Logical thread id: 0 = main, then creation order.
    pub thread: u32,
    /// Position in the thread's program order (0, 1, 2, ...).
    pub index: u64,
    /// Lamport clock taken under the stripe lock; the global order sorts by
    /// `(clock, thread)` (see ARCHITECTURE.md).
    pub clock: u64,
    pub kind: EventKind,
    pub addr: u64,
    pub size: u64,
    /// Return address of the hook in the program (absolute; the trace's
    /// module map turns it into module + offset).
    pub site: u64,
    /// Result value for kinds with [`EventKind::has_payload`], else 0.
    pub payload: u64,
}

impl RecordedEvent {
    /// The first and last granule (of `1 << granule_shift` bytes) touched.
    /// A pseudo-address is one granule whatever the size (the size of an
    /// allocation or an output is not an extent in memory).
    #[inline]
    pub fn granules(&self, granule_shift: u32) -> (u64, u64) {
        let first = self.addr >> granule_shift;
        if self.addr >= pseudo::BASE {
            return (first, first);
        }
        let last = self.addr.saturating_add(self.size.max(1) - 1) >> granule_shift;
        (first, last)
    }
}

/// Seed of the per-thread access hash.
pub const ACCESS_HASH_SEED: u64 = 0xcbf2_9ce4_8422_2325;

/// The multiplier of [`fold_access_hash`] (odd, 2^64 over the golden
/// ratio; the runtime's replay fast path, written in assembly, uses it too).
pub const ACCESS_HASH_MULTIPLIER: u64 = 0x9e37_79b9_7f4a_7c15;

/// Folds event `index` (the thread's count of events before it) into the
/// thread's access hash. Replay computes the same hash over the accesses it
/// performs and compares it at thread exit to detect divergence between
/// sync points. Each event's term depends on its kind, address and index
/// only; the hash is their xor, so that consecutive events' folds depend
/// on each other by one xor. (The hash before,
/// `(h ^ rotl(addr, 7) ^ kind) * prime`, made every access of a replay
/// wait for the multiply of the one before: later replays 10-20 % slower
/// than with no hash at all.)
/// The index makes the order count: swapped events change their terms.
#[inline]
pub fn fold_access_hash(hash: u64, index: u64, kind: EventKind, addr: u64) -> u64 {
    hash ^ access_term(index, kind, addr)
}

/// Event `index`'s term of the access hash (see [`fold_access_hash`]).
#[inline]
pub fn access_term(index: u64, kind: EventKind, addr: u64) -> u64 {
    ((addr.rotate_left(7) ^ kind as u64).wrapping_add(index)).wrapping_mul(ACCESS_HASH_MULTIPLIER)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash_of(events: &[(EventKind, u64)]) -> u64 {
        (events.iter().zip(0..)).fold(ACCESS_HASH_SEED, |h, (&(k, a), i)| {
            fold_access_hash(h, i, k, a)
        })
    }

    #[test]
    fn the_access_hash_sees_changed_swapped_and_offset_events() {
        use EventKind::{Read, Write};
        let base: Vec<_> = (0..64u64)
            .map(|i| (if i % 3 == 0 { Write } else { Read }, 0x7f00_1000 + 8 * i))
            .collect();
        let h = hash_of(&base);
        let mut changed = base.clone();
        changed[17].1 += 8;
        assert_ne!(hash_of(&changed), h, "an address");
        changed = base.clone();
        changed[17].0 = Write;
        assert_ne!(hash_of(&changed), h, "a kind");
        // Two changes of one loop that cancel in a plain sum.
        changed = base.clone();
        changed[3].1 += 8;
        changed[40].1 -= 8;
        assert_ne!(hash_of(&changed), h, "offsets that cancel");
        for (i, j) in [(0, 1), (5, 6), (0, 63), (1, 33)] {
            changed = base.clone();
            changed.swap(i, j);
            assert_ne!(hash_of(&changed), h, "events {i} and {j} swapped");
        }
        assert_ne!(hash_of(&base[..63]), h, "one event fewer");
        // An event repeated: an xor of terms without the index would
        // cancel the pair, and any two repeated events hash alike.
        let (a, b) = (base[1], base[2]);
        assert_ne!(hash_of(&[a, a]), hash_of(&[b, b]), "repeated events");
    }

    #[test]
    fn codes_and_names_round_trip() {
        for &k in EventKind::ALL {
            assert_eq!(EventKind::from_code(k as u8), Some(k));
            assert_eq!(EventKind::from_name(k.name()), Some(k));
            assert!((1..=62).contains(&(k as u8)));
        }
        assert_eq!(EventKind::from_code(0), None);
        assert_eq!(EventKind::from_code(63), None);
    }

    #[test]
    fn pseudo_addresses_are_described_and_distinct() {
        assert_eq!(pseudo::describe(pseudo::fd(1)).unwrap(), "<fd 1>");
        assert_eq!(
            pseudo::describe(pseudo::thread_exit(7)).unwrap(),
            "<exit of thread 7>"
        );
        assert_ne!(pseudo::thread_start(1) >> 6, pseudo::thread_exit(1) >> 6);
        assert_eq!(pseudo::describe(0x1000), None);
    }

    #[test]
    fn granules_cover_spanning_access() {
        let e = RecordedEvent {
            thread: 0,
            index: 0,
            clock: 1,
            kind: EventKind::Read,
            addr: 6,
            size: 4,
            site: 0,
            payload: 0,
        };
        assert_eq!(e.granules(3), (0, 1));
    }
}
