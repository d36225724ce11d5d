//! The replay fast path of the access hooks, in assembly, on the program's
//! stack.
//!
//! Why: every entry into the runtime moves to the thread's own stack
//! (`crate::own_stack`), so that what the runtime leaves below the
//! program's frames is the same in every mode. For the plain accesses of a
//! replay, which are most events, that switch was a third of the hook's
//! instructions (callgrind: a later replay +36 %). The fast path of
//! [`crate::replay::count_access`] needs no stack at all: it compares the thread's
//! index with its next stop and folds the access into the hash. Written in
//! assembly it provably writes nothing to memory but those two fields of the
//! thread's state (no spill, no push a compiler might add later), so it can
//! run where the hook was called. Anything else (record, an inert or
//! untracked thread, a point, a pending publication) falls through to the
//! switching entry and the Rust implementation, which does all of it again.
//!
//! What it must match, instruction for instruction in effect:
//! `events::at_access` (mode, thread slot, `is_tracked`) followed by
//! `count_access`'s fast branch (`index < access_stop`: hash folded with
//! [`rr_lite_trace::fold_access_hash`], index advanced). The hash is an xor
//! of per-access terms ([`rr_lite_trace::access_term`]), so an access waits
//! for the one before only through that xor, not through a multiply (as
//! the index's increment: later replays of loops over arrays were 10-20 %
//! slower with the multiply in that chain). It does not read
//! the mode: `access_stop` is 0 except where replay set it (see
//! `ReplayThread::access_stop`), so a recording thread's `index <
//! access_stop` fails and takes the slow path. Every end-to-end
//! replay test checks the result: a different hash or count is a divergence
//! at the thread's end. The inert runtime (an instrumented program run by
//! hand) returns at once here too, as `at_access` does first. It uses
//! `rax`, `r10` and `r11` before it commits, so the arguments reach the
//! slow path unchanged, and returns 0 in `rax` as the implementations do
//! (`events::LEFT_IN_RAX`).

use crate::replay::fast_path_offsets as replay;
use crate::thread::offsets as thread;

/// Offsets from the `ThreadState` of the fields the fast path reads.
pub(crate) const INDEX: usize = thread::REPLAY + replay::INDEX;
pub(crate) const ACCESS_STOP: usize = thread::REPLAY + replay::ACCESS_STOP;
pub(crate) const HASH: usize = thread::REPLAY + replay::HASH;
const _: () = assert!(crate::events::LEFT_IN_RAX == 0);
// The inert runtime's test compares the mode with 0.
const _: () = assert!(crate::mode::Mode::Inert as u8 == 0);

/// Exports `$name`, an access hook of event kind `$kind` whose replay fast
/// path runs here (see the module doc) and whose other paths run `$imp` on
/// the own stack after `$site` (the site's load, as in
/// `crate::site::with_site!`, or "" for the `_pc` forms).
macro_rules! counting_entry {
    ($name:ident => $imp:path, $kind:expr, $site:expr) => {
        #[unsafe(naked)]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name() {
            core::arch::naked_asm!(
                crate::own_stack::switch_and_call!(
                    concat!(
                        "mov r11, qword ptr [rip + rr_lite_thread_slot@GOTTPOFF]\n",
                        "mov r10, qword ptr fs:[r11]\n",
                        "test r10, r10\n",
                        "jz 4f\n",
                        "cmp dword ptr [r10 + {untracked}], 0\n",
                        "jne 3f\n",
                        "mov rax, qword ptr [r10 + {index}]\n",
                        "cmp rax, qword ptr [r10 + {stop}]\n",
                        "jae 3f\n",
                        // Committed: the index, and the access's term
                        // xored into the hash (`access_term`: computed
                        // from the index, not from the hash before).
                        "mov r11, rdi\n",
                        "rol r11, 7\n",
                        "xor r11, {kind}\n",
                        "add r11, rax\n",
                        "inc rax\n",
                        "mov qword ptr [r10 + {index}], rax\n",
                        "movabs rax, {multiplier}\n",
                        "imul r11, rax\n",
                        "xor qword ptr [r10 + {hash}], r11\n",
                        "5:\n",
                        "xor eax, eax\n",
                        "ret\n",
                        // No registered thread: in the inert runtime (a
                        // program run by hand), nothing to do.
                        "4:\n",
                        "cmp byte ptr [rip + {mode}], 0\n",
                        "je 5b\n",
                        "3:\n",
                        $site,
                    ),
                    "call {imp}",
                    "jmp {imp}"
                ),
                imp = sym $imp,
                mode = sym crate::mode::MODE,
                untracked = const crate::thread::offsets::UNTRACKED,
                index = const crate::hooks::fast_count::INDEX,
                stop = const crate::hooks::fast_count::ACCESS_STOP,
                hash = const crate::hooks::fast_count::HASH,
                kind = const $kind as u8,
                multiplier = const rr_lite_trace::ACCESS_HASH_MULTIPLIER,
            )
        }
    };
}
pub(crate) use counting_entry;
