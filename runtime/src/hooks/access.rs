//! Plain memory accesses: `__tsan_{read,write}{1,2,4,8,16}` and their
//! unaligned, volatile and `_pc` forms, and the range hooks. Each returns
//! [`events::LEFT_IN_RAX`], which its caller (declaring it `void`) ignores:
//! the value `rax` holds after a hook is then the same in every mode.

use rr_lite_trace::EventKind;

use super::fast_count::counting_entry;
use crate::events;
use crate::own_stack::switching_entry;
use crate::site::with_site;

macro_rules! access_hooks {
    ($($kind:ident $size:literal: $imp:ident => $($name:ident),+;)*) => {$(
        extern "C" fn $imp(addr: u64, site: u64) -> u64 {
            events::log_sized_access::<{ EventKind::$kind as u8 }, $size>(addr, site)
        }
        $( counting_entry!($name => $imp, EventKind::$kind, "mov rsi, [rsp]"); )+
    )*};
}

access_hooks! {
    Read 1: read1 => __tsan_read1, __tsan_unaligned_read1, __tsan_volatile_read1, __tsan_unaligned_volatile_read1;
    Read 2: read2 => __tsan_read2, __tsan_unaligned_read2, __tsan_volatile_read2, __tsan_unaligned_volatile_read2;
    Read 4: read4 => __tsan_read4, __tsan_unaligned_read4, __tsan_volatile_read4, __tsan_unaligned_volatile_read4;
    Read 8: read8 => __tsan_read8, __tsan_unaligned_read8, __tsan_volatile_read8, __tsan_unaligned_volatile_read8;
    Read 16: read16 => __tsan_read16, __tsan_unaligned_read16, __tsan_volatile_read16, __tsan_unaligned_volatile_read16;
    Write 1: write1 => __tsan_write1, __tsan_unaligned_write1, __tsan_volatile_write1, __tsan_unaligned_volatile_write1;
    Write 2: write2 => __tsan_write2, __tsan_unaligned_write2, __tsan_volatile_write2, __tsan_unaligned_volatile_write2;
    Write 4: write4 => __tsan_write4, __tsan_unaligned_write4, __tsan_volatile_write4, __tsan_unaligned_volatile_write4;
    Write 8: write8 => __tsan_write8, __tsan_unaligned_write8, __tsan_volatile_write8, __tsan_unaligned_volatile_write8;
    Write 16: write16 => __tsan_write16, __tsan_unaligned_write16, __tsan_volatile_write16, __tsan_unaligned_volatile_write16;
}

/// `-mllvm -tsan-compound-read-before-write` (clang): one call for a read
/// followed by a write of the same location (`x++`): a read-modify-write.
/// clang places it at the write, after the read, so the read is not
/// ordered by it: `rr-lite cc` asks clang for both hooks instead
/// (`-tsan-instrument-read-before-write`); this serves objects built
/// otherwise.
macro_rules! compound_hooks {
    ($($size:literal: $imp:ident => $($name:ident),+;)*) => {$(
        extern "C" fn $imp(addr: u64, site: u64) -> u64 {
            events::log_sized_access::<{ EventKind::Rmw as u8 }, $size>(addr, site)
        }
        $( counting_entry!($name => $imp, EventKind::Rmw, "mov rsi, [rsp]"); )+
    )*};
}

compound_hooks! {
    1: read_write1 => __tsan_read_write1, __tsan_unaligned_read_write1;
    2: read_write2 => __tsan_read_write2, __tsan_unaligned_read_write2;
    4: read_write4 => __tsan_read_write4, __tsan_unaligned_read_write4;
    8: read_write8 => __tsan_read_write8, __tsan_unaligned_read_write8;
    16: read_write16 => __tsan_read_write16, __tsan_unaligned_read_write16;
}

/// The `_pc` forms name their site themselves: the same implementations
/// as the plain hooks, with no return address to load.
macro_rules! access_pc_hooks {
    ($($kind:ident: $imp:ident: $name:ident;)*) => {$(
        counting_entry!($name => $imp, EventKind::$kind, "");
    )*};
}

access_pc_hooks! {
    Read: read1: __tsan_read1_pc; Read: read2: __tsan_read2_pc; Read: read4: __tsan_read4_pc;
    Read: read8: __tsan_read8_pc; Read: read16: __tsan_read16_pc;
    Write: write1: __tsan_write1_pc; Write: write2: __tsan_write2_pc;
    Write: write4: __tsan_write4_pc; Write: write8: __tsan_write8_pc;
    Write: write16: __tsan_write16_pc;
}

extern "C" fn read_range(addr: u64, size: u64, site: u64) -> u64 {
    if size == 0 {
        return events::LEFT_IN_RAX;
    }
    events::log_before_access(EventKind::ReadRange, addr, size, site)
}

extern "C" fn write_range(addr: u64, size: u64, site: u64) -> u64 {
    if size == 0 {
        return events::LEFT_IN_RAX;
    }
    events::log_before_access(EventKind::WriteRange, addr, size, site)
}

with_site!(__tsan_read_range => read_range, "rdx");
with_site!(__tsan_write_range => write_range, "rdx");

switching_entry!(__tsan_read_range_pc => read_range);
switching_entry!(__tsan_write_range_pc => write_range);

extern "C" fn vptr_update(addr: u64, _new: u64, site: u64) -> u64 {
    events::log_sized_access::<{ EventKind::Write as u8 }, 8>(addr, site)
}

extern "C" fn vptr_read(addr: u64, site: u64) -> u64 {
    events::log_sized_access::<{ EventKind::Read as u8 }, 8>(addr, site)
}

counting_entry!(__tsan_vptr_update => vptr_update, EventKind::Write, "mov rdx, [rsp]");
counting_entry!(__tsan_vptr_read => vptr_read, EventKind::Read, "mov rsi, [rsp]");
