//! `__tsan_atomic*`: the compiler replaced each atomic operation by a call,
//! so the hook performs it for real (sequentially consistent, which is at
//! least as strong as any requested order and costs the same on x86-64 for
//! loads and read-modify-writes) and logs it while holding its stripe.
//! 128-bit operations have no native Rust atomic; they are serialised by a
//! small lock table (`locked_at`), which is sound because every 128-bit atomic access of
//! an instrumented program goes through these hooks.

use core::sync::atomic::Ordering::{Release, SeqCst};
use core::sync::atomic::{AtomicBool, AtomicI8, AtomicI16, AtomicI32, AtomicI64};

use rr_lite_trace::EventKind;

use crate::events;
use crate::site::with_site;

/// `memory_order_seq_cst` in the ABI's numbering (relaxed = 0 ... seq_cst = 5).
const SEQ_CST: i32 = 5;

fn store_order(mo: i32) -> core::sync::atomic::Ordering {
    if mo == SEQ_CST { SeqCst } else { Release }
}

macro_rules! atomic_width {
    ($bits:literal, $bytes:literal, $t:ty, $atomic:ident, [$($op:ident => $method:ident),*]) => { paste::paste! {
        extern "C" fn [<load $bits>](a: *mut $t, _mo: i32, site: u64) -> $t {
            // SAFETY: the compiler passes the address of a live, aligned
            // atomic object of this width.
            let cell = unsafe { $atomic::from_ptr(a) };
            events::log_keeping_stripe(EventKind::AtomicLoad, a as u64, $bits / 8, site, || cell.load(SeqCst))
        }
        with_site!([<__tsan_atomic $bits _load>] => [<load $bits>], "rdx");

        extern "C" fn [<store $bits>](a: *mut $t, v: $t, mo: i32, site: u64) {
            // SAFETY: as for load.
            let cell = unsafe { $atomic::from_ptr(a) };
            events::log_keeping_stripe(EventKind::AtomicStore, a as u64, $bits / 8, site, || cell.store(v, store_order(mo)))
        }
        with_site!([<__tsan_atomic $bits _store>] => [<store $bits>], "rcx");

        $(
            extern "C" fn [<$op $bits>](a: *mut $t, v: $t, _mo: i32, site: u64) -> $t {
                // SAFETY: as for load.
                let cell = unsafe { $atomic::from_ptr(a) };
                events::log_keeping_stripe(EventKind::Rmw, a as u64, $bits / 8, site, || cell.$method(v, SeqCst))
            }
            with_site!([<__tsan_atomic $bits _ $op>] => [<$op $bits>], "rcx");
        )*

        extern "C" fn [<cas $bits>](a: *mut $t, expected: *mut $t, v: $t, _mo: i32, _fmo: i32, site: u64) -> i32 {
            // SAFETY: as for load; `expected` points to the caller's
            // expected value, which the ABI updates on failure.
            let cell = unsafe { $atomic::from_ptr(a) };
            events::log_keeping_stripe(EventKind::Rmw, a as u64, $bits / 8, site, || {
                // SAFETY: see above. (Aligned as the program's type, which
                // may be less than the integer's: a struct of two ints.)
                let want = unsafe { expected.read_unaligned() };
                match cell.compare_exchange(want, v, SeqCst, SeqCst) {
                    Ok(_) => 1,
                    Err(now) => {
                        // SAFETY: see above.
                        unsafe { expected.write_unaligned(now) };
                        0
                    }
                }
            })
        }
        with_site!([<__tsan_atomic $bits _compare_exchange_strong>] => [<cas $bits>], "r9");
        with_site!([<__tsan_atomic $bits _compare_exchange_weak>] => [<cas $bits>], "r9");
        // libatomic's compare-and-swap (`mptr, eptr, newval, smodel,
        // fmodel`: the same five arguments, a bool for the int): gcc's
        // OpenMP atomics that are not one fetch-and-op (`x += y` on a
        // double or a float, `x *= y`, captures) expand into a
        // compare-and-swap loop the thread sanitizer leaves uninstrumented,
        // a `lock cmpxchg` nothing recorded; `rr-lite cc` compiles with
        // `-fno-inline-atomics`, which turns it into this call.
        with_site!([<__atomic_compare_exchange_ $bytes>] => [<cas $bits>], "r9");

        extern "C" fn [<cas_val $bits>](a: *mut $t, want: $t, v: $t, _mo: i32, _fmo: i32, site: u64) -> $t {
            // SAFETY: as for load.
            let cell = unsafe { $atomic::from_ptr(a) };
            events::log_keeping_stripe(EventKind::Rmw, a as u64, $bits / 8, site, || {
                match cell.compare_exchange(want, v, SeqCst, SeqCst) { Ok(old) | Err(old) => old }
            })
        }
        with_site!([<__tsan_atomic $bits _compare_exchange_val>] => [<cas_val $bits>], "r9");
    }};
}

atomic_width!(8, 1, i8, AtomicI8, [exchange => swap, fetch_add => fetch_add, fetch_sub => fetch_sub,
    fetch_and => fetch_and, fetch_or => fetch_or, fetch_xor => fetch_xor, fetch_nand => fetch_nand]);
atomic_width!(16, 2, i16, AtomicI16, [exchange => swap, fetch_add => fetch_add, fetch_sub => fetch_sub,
    fetch_and => fetch_and, fetch_or => fetch_or, fetch_xor => fetch_xor, fetch_nand => fetch_nand]);
atomic_width!(32, 4, i32, AtomicI32, [exchange => swap, fetch_add => fetch_add, fetch_sub => fetch_sub,
    fetch_and => fetch_and, fetch_or => fetch_or, fetch_xor => fetch_xor, fetch_nand => fetch_nand]);
atomic_width!(64, 8, i64, AtomicI64, [exchange => swap, fetch_add => fetch_add, fetch_sub => fetch_sub,
    fetch_and => fetch_and, fetch_or => fetch_or, fetch_xor => fetch_xor, fetch_nand => fetch_nand]);

/// Spin locks serialising the atomics without a native instruction (128-bit
/// ones, libatomic's generic calls: `super::libatomic`), by address.
static LOCKS: [AtomicBool; 64] = [const { AtomicBool::new(false) }; 64];

/// Runs `f` holding the lock of the atomic object at `addr`.
pub(super) fn locked_at<R>(addr: u64, f: impl FnOnce() -> R) -> R {
    let lock = &LOCKS[(addr as usize >> 4) % LOCKS.len()];
    let backoff = crossbeam_utils::Backoff::new();
    while lock
        .compare_exchange_weak(false, true, SeqCst, SeqCst)
        .is_err()
    {
        backoff.spin();
    }
    let r = f();
    lock.store(false, SeqCst);
    r
}

/// Reads a 128-bit atomic object under its lock ([`locked_at`]), as the
/// volatile read of two words: it may be aligned to 8 only.
///
/// # Safety
/// `a` is a live, readable 16-byte object, accessed only under its lock.
unsafe fn read_128(a: *const i128) -> i128 {
    let words = a.cast::<u64>();
    // SAFETY: the caller's; each word is 8-aligned (the object is).
    let (low, high) = unsafe { (words.read_volatile(), words.add(1).read_volatile()) };
    (i128::from(high as i64) << 64) | i128::from(low)
}

/// Writes a 128-bit atomic object under its lock (see [`read_128`]).
///
/// # Safety
/// `a` is a live, writable 16-byte object, accessed only under its lock.
unsafe fn write_128(a: *mut i128, v: i128) {
    let words = a.cast::<u64>();
    // SAFETY: the caller's; each word is 8-aligned (the object is).
    unsafe {
        words.write_volatile(v as u64);
        words.add(1).write_volatile((v >> 64) as u64);
    }
}

fn rmw_128(a: *mut i128, site: u64, f: impl FnOnce(i128) -> i128) -> i128 {
    events::log_after_call(
        EventKind::Rmw,
        a as u64,
        16,
        site,
        || {
            locked_at(a as u64, || {
                // SAFETY: a live 16-byte atomic object, accessed only under
                // its lock; aligned as the program's type, maybe to 8 only
                // (gcc's generic atomics on a plain struct), so not read as
                // an aligned i128 (`movaps`).
                let old = unsafe { read_128(a) };
                // SAFETY: as above.
                unsafe { write_128(a, f(old)) };
                old
            })
        },
        |_| 0,
    )
}

extern "C" fn load128(a: *mut i128, _mo: i32, site: u64) -> i128 {
    events::log_after_call(
        EventKind::AtomicLoad,
        a as u64,
        16,
        site,
        || {
            // SAFETY: as in `rmw_128`.
            locked_at(a as u64, || unsafe { read_128(a) })
        },
        |_| 0,
    )
}
with_site!(__tsan_atomic128_load => load128, "rdx");

extern "C" fn store128(a: *mut i128, v: i128, _mo: i32, site: u64) {
    events::log_after_call(
        EventKind::AtomicStore,
        a as u64,
        16,
        site,
        || {
            // SAFETY: as in `rmw_128`.
            locked_at(a as u64, || unsafe { write_128(a, v) })
        },
        |_| 0,
    )
}
with_site!(__tsan_atomic128_store => store128, "r8");

macro_rules! rmw_128_ops {
    ($($name:ident: $imp:ident = |$old:ident, $v:ident| $new:expr;)*) => {$(
        extern "C" fn $imp(a: *mut i128, $v: i128, _mo: i32, site: u64) -> i128 {
            rmw_128(a, site, |$old| $new)
        }
        with_site!($name => $imp, "r8");
    )*};
}

rmw_128_ops! {
    __tsan_atomic128_exchange: xchg128 = |_old, v| v;
    __tsan_atomic128_fetch_add: add128 = |old, v| old.wrapping_add(v);
    __tsan_atomic128_fetch_sub: sub128 = |old, v| old.wrapping_sub(v);
    __tsan_atomic128_fetch_and: and128 = |old, v| old & v;
    __tsan_atomic128_fetch_or: or128 = |old, v| old | v;
    __tsan_atomic128_fetch_xor: xor128 = |old, v| old ^ v;
    __tsan_atomic128_fetch_nand: nand128 = |old, v| !(old & v);
}

fn cas_128(a: *mut i128, want: i128, v: i128) -> i128 {
    let mut seen = want;
    rmw_128(a, 0, |old| {
        seen = old;
        if old == want { v } else { old }
    });
    seen
}

/// No register is left for the site (the 128-bit value takes two), so these
/// log site 0.
#[unsafe(no_mangle)]
pub extern "C" fn __tsan_atomic128_compare_exchange_strong(
    a: *mut i128,
    expected: *mut i128,
    v: i128,
    _mo: i32,
    _fmo: i32,
) -> i32 {
    // SAFETY: `expected` points to the caller's expected value: a plain
    // object of the atomic's type, aligned as that type is (a struct of an
    // int and a pointer: 8 bytes), not as an i128 (16: an aligned read made
    // `movaps` and crashed C++ Concurrency in Action's lock-free stack).
    let want = unsafe { expected.read_unaligned() };
    let old = cas_128(a, want, v);
    if old == want {
        1
    } else {
        // SAFETY: as above; the ABI returns the current value through it.
        unsafe { expected.write_unaligned(old) };
        0
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn __tsan_atomic128_compare_exchange_weak(
    a: *mut i128,
    expected: *mut i128,
    v: i128,
    mo: i32,
    fmo: i32,
) -> i32 {
    __tsan_atomic128_compare_exchange_strong(a, expected, v, mo, fmo)
}

#[unsafe(no_mangle)]
pub extern "C" fn __tsan_atomic128_compare_exchange_val(
    a: *mut i128,
    want: i128,
    v: i128,
    _mo: i32,
    _fmo: i32,
) -> i128 {
    cas_128(a, want, v)
}

#[unsafe(no_mangle)]
pub extern "C" fn __tsan_atomic_thread_fence(_mo: i32) {
    core::sync::atomic::fence(SeqCst);
}

#[unsafe(no_mangle)]
pub extern "C" fn __tsan_atomic_signal_fence(_mo: i32) {
    core::sync::atomic::compiler_fence(SeqCst);
}
