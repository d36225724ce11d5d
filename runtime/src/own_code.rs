//! The address range of the runtime's own code, so that the memory
//! interposers can tell the runtime's memcpy calls (Rust emits them for
//! copies) from the program's, whatever state the thread is in; the code
//! of other loaded libraries ([`code_of`]); and libomp's code, whose own
//! sleeping, waking and time-stamp reads are not events
//! ([`in_openmp_runtime`]).

use core::sync::atomic::{AtomicUsize, Ordering};

/// A module's executable segment, set once at start-up (empty until then).
struct CodeRange {
    start: AtomicUsize,
    end: AtomicUsize,
}

impl CodeRange {
    const fn new() -> CodeRange {
        CodeRange {
            start: AtomicUsize::new(0),
            end: AtomicUsize::new(0),
        }
    }

    fn set(&self, (start, end): (usize, usize)) {
        self.start.store(start, Ordering::Relaxed);
        self.end.store(end, Ordering::Release);
    }

    #[inline]
    fn contains(&self, pc: u64) -> bool {
        let pc = pc as usize;
        pc >= self.start.load(Ordering::Relaxed) && pc < self.end.load(Ordering::Acquire)
    }
}

static OWN: CodeRange = CodeRange::new();
static OPENMP: CodeRange = CodeRange::new();
static PROGRAM: CodeRange = CodeRange::new();

/// What [`visit`] looks for (the module loaded at `base`) and finds (its
/// executable segment).
#[repr(C)]
struct Search {
    base: usize,
    code: Option<(usize, usize)>,
}

extern "C" fn visit(
    info: *mut libc::dl_phdr_info,
    _size: usize,
    search: *mut libc::c_void,
) -> libc::c_int {
    // SAFETY: dl_iterate_phdr passes a valid info for each loaded object,
    // whose phdr array has dlpi_phnum entries; `search` is the caller's.
    let (info, search) = unsafe { (&*info, &mut *search.cast::<Search>()) };
    if info.dlpi_addr as usize != search.base {
        return 0;
    }
    // SAFETY: as above.
    let headers =
        unsafe { core::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum)) };
    for h in headers
        .iter()
        .filter(|h| h.p_type == libc::PT_LOAD && h.p_flags & libc::PF_X != 0)
    {
        let start = info.dlpi_addr as usize + h.p_vaddr as usize;
        search.code = Some((start, start + h.p_memsz as usize));
    }
    1
}

/// The executable segment of the loaded module that holds `addr`.
pub(crate) fn code_of(addr: usize) -> Option<(usize, usize)> {
    // SAFETY: dladdr only reads the loader's tables and fills `info`.
    let base = unsafe {
        let mut info: libc::Dl_info = core::mem::zeroed();
        if libc::dladdr(addr as *const libc::c_void, &mut info) == 0 {
            return None;
        }
        info.dli_fbase as usize
    };
    let mut search = Search { base, code: None };
    // SAFETY: the callback matches dl_iterate_phdr's signature and takes
    // `search`, which outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(visit), (&mut search as *mut Search).cast()) };
    search.code
}

/// What [`visit_named`] looks for (a module whose file name starts with
/// `prefix`) and finds (its executable segment).
#[repr(C)]
struct NamedSearch {
    prefix: &'static [u8],
    code: Option<(usize, usize)>,
}

extern "C" fn visit_named(
    info: *mut libc::dl_phdr_info,
    _size: usize,
    search: *mut libc::c_void,
) -> libc::c_int {
    // SAFETY: as in `visit`; `dlpi_name` is a NUL-terminated path or null.
    let (info, search) = unsafe { (&*info, &mut *search.cast::<NamedSearch>()) };
    if info.dlpi_name.is_null() {
        return 0;
    }
    // SAFETY: as above.
    let path = unsafe { core::ffi::CStr::from_ptr(info.dlpi_name) }.to_bytes();
    let file = path.rsplit(|&b| b == b'/').next().unwrap_or(path);
    if !file.starts_with(search.prefix) {
        return 0;
    }
    let mut by_base = Search {
        base: info.dlpi_addr as usize,
        code: None,
    };
    visit(
        core::ptr::from_ref(info).cast_mut(),
        _size,
        (&mut by_base as *mut Search).cast(),
    );
    search.code = by_base.code;
    1
}

/// The executable segment of the first loaded module whose file name starts
/// with `prefix` (no symbol lookup: a failed one allocates).
pub(crate) fn code_of_module(prefix: &'static [u8]) -> Option<(usize, usize)> {
    let mut search = NamedSearch { prefix, code: None };
    // SAFETY: the callback matches dl_iterate_phdr's signature and takes
    // `search`, which outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(visit_named), (&mut search as *mut NamedSearch).cast()) };
    search.code
}

/// Finds the runtime's executable segment, and libomp's if the program
/// has it (once, at start-up). libomp's is found by name, without a symbol
/// lookup (a failed lookup allocates): whatever OpenMP call the program
/// makes first, its own sleeping and waking are then known for what they
/// are (`__kmpc_fork_teams`, not interposed, starts threads too).
pub(crate) fn locate() {
    if let Some(code) = code_of(locate as *const () as usize) {
        OWN.set(code);
    }
    if let Some(code) = code_of_module(b"libomp.so") {
        OPENMP.set(code);
    }
    // The loader lists the executable first, by the empty name.
    if let Some(code) = code_of_module(b"") {
        PROGRAM.set(code);
    }
}

/// Whether `pc` lies in the executable's own code (not a library's).
#[inline]
pub(crate) fn in_program(pc: u64) -> bool {
    PROGRAM.contains(pc)
}

/// True when `pc` is in the runtime's code.
#[inline]
pub(crate) fn contains(pc: u64) -> bool {
    OWN.contains(pc)
}

/// Remembers libomp's code.
pub(crate) fn set_openmp_runtime(start: usize, end: usize) {
    OPENMP.set((start, end));
}

/// Whether `pc` (a call's return address, or an instruction) lies in
/// libomp's code: its time-stamp reads and its own mutexes, condition
/// variables and semaphores only pace its spinning and sleeping threads, and
/// how often they happen depends on timing, so they are not events.
#[inline]
pub(crate) fn in_openmp_runtime(pc: u64) -> bool {
    OPENMP.contains(pc)
}
