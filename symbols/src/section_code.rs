//! What code a critical section can run: whether everything a thread may
//! execute between a mutex lock and its unlock is instrumented, so that
//! every shared access in between is an event of the trace.
//!
//! The splitter lets a section that touched nothing of an earlier one take
//! its mutex out of the recorded order at replay (`splitter/src/sections.rs`).
//! That is only sound if the section has no state the trace cannot see:
//! `fgets(stdin)` under a mutex reads the stream's position inside libc,
//! which no hook sees, and the recorded order of the sections is what gives
//! each thread its line. So a section may float only when its lock and its
//! unlock are called from one function `F` and `F` is *closed*: every call
//! or jump out of `F` (and, transitively, out of every function it reaches)
//! goes to a function of the same module, or through the PLT or GOT to a
//! function known to touch no shared state outside the program's memory
//! ([`ALLOWED`]: the hooks, the lock calls, pure maths). Indirect calls and
//! jumps (function pointers, jump tables), system calls and code that does
//! not decode make `F` open. A module without a symbol table, or one that
//! cannot be read, has no closed function.
//!
//! The code is decoded with iced-x86 from the module's file: the trace's
//! `maps` says which file holds a site, and its lowest segment is the load
//! base the sites' offsets are taken from.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use iced_x86::{Decoder, DecoderOptions, FlowControl, Instruction, Mnemonic};

use crate::ModuleMap;

/// Functions a closed function may call by name (through the PLT or GOT).
/// Two kinds: those that touch nothing shared outside the program's
/// memory (the instrumentation's hooks, the lock calls whose events bracket
/// the section, `libm`), and those the runtime logs an event for at every
/// call ([`EVENTFUL`]): a section that called one has an event that is not
/// a plain access, so it never floats.
pub const ALLOWED: &[&str] = &[
    "pthread_mutex_lock",
    "pthread_mutex_unlock",
    "__stack_chk_fail",
    "sqrt",
    "sqrtf",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "atan2",
    "exp",
    "exp2",
    "log",
    "log2",
    "log10",
    "pow",
    "fabs",
    "floor",
    "ceil",
    "fmod",
    "hypot",
    "cbrt",
    "sinf",
    "cosf",
    "expf",
    "logf",
    "powf",
];

/// Calls that are events at every call (`runtime/src/interpose/`): memory,
/// output, synchronisation, the end of the process.
pub const EVENTFUL: &[&str] = &[
    "malloc",
    "calloc",
    "realloc",
    "free",
    "printf",
    "fprintf",
    "__printf_chk",
    "__fprintf_chk",
    "vprintf",
    "vfprintf",
    "__vprintf_chk",
    "__vfprintf_chk",
    "puts",
    "fputs",
    "putchar",
    "fputc",
    "putc",
    "fwrite",
    "perror",
    "write",
    "exit",
    "_exit",
    "abort",
    "__assert_fail",
    "pthread_mutex_trylock",
    "pthread_cond_wait",
    "pthread_cond_timedwait",
    "pthread_cond_signal",
    "pthread_cond_broadcast",
    "pthread_barrier_wait",
    "pthread_create",
    "pthread_join",
    "sem_post",
    "sem_wait",
    "pthread_mutex_init",
    "pthread_mutex_destroy",
    "pthread_cond_init",
    "pthread_cond_destroy",
    "time",
    "clock_gettime",
    "gettimeofday",
    "rand",
    "random",
    "drand48",
    "lrand48",
];

/// C++'s allocation and throwing: `operator new` and `delete` are events,
/// and a throw allocates its exception (an event) before anything else;
/// the unwinder runs only for an exception thrown since.
const CXX_EVENTFUL: &[&str] = &[
    "_Znwm",
    "_Znam",
    "_ZnwmRKSt9nothrow_t",
    "_ZnamRKSt9nothrow_t",
    "_ZnwmSt11align_val_t",
    "_ZdlPv",
    "_ZdlPvm",
    "_ZdaPv",
    "_ZdaPvm",
    "_ZdlPvSt11align_val_t",
    "_ZdlPvmSt11align_val_t",
    "__cxa_allocate_exception",
    "__cxa_throw",
    "_Unwind_Resume",
];

fn allowed(name: &str) -> bool {
    // Versioned names (`sqrt@GLIBC_2.2.5`) are looked up without the version.
    let name = name.split('@').next().unwrap_or(name);
    name.starts_with("__tsan_")
        || ALLOWED.contains(&name)
        || EVENTFUL.contains(&name)
        || CXX_EVENTFUL.contains(&name)
        // libstdc++'s `std::__throw_system_error` and the like: a throw.
        || (name.starts_with("_ZSt") && name.contains("__throw_"))
}

/// The code of one module, as far as closed functions need it.
#[derive(Debug, Default)]
struct ModuleCode {
    /// Added to an offset from the load base to get a file address.
    base: u64,
    /// Function symbols: `(start, end)` file addresses, sorted.
    functions: Vec<(u64, u64)>,
    /// Executable sections: file address and bytes.
    code: Vec<(u64, Vec<u8>)>,
    /// PLT stubs (their first address) and GOT slots: the function named.
    by_slot: HashMap<u64, String>,
    /// Answers so far, by function start.
    closed: HashMap<u64, bool>,
}

impl ModuleCode {
    fn read(path: &Path) -> Option<ModuleCode> {
        use object::{Object, ObjectSection, ObjectSegment, ObjectSymbol, SectionKind, SymbolKind};
        let bytes = std::fs::read(path).ok()?;
        let file = object::File::parse(&*bytes).ok()?;
        let base = file.segments().map(|s| s.address()).min().unwrap_or(0);
        let mut functions: Vec<(u64, u64)> = file
            .symbols()
            .filter(|s| s.kind() == SymbolKind::Text && s.size() > 0)
            .map(|s| (s.address(), s.address() + s.size()))
            .collect();
        functions.sort_unstable();
        functions.dedup();
        let code = file
            .sections()
            .filter(|s| s.kind() == SectionKind::Text)
            .filter_map(|s| Some((s.address(), s.data().ok()?.to_vec())))
            .collect();
        let mut module = ModuleCode {
            base,
            functions,
            code,
            ..ModuleCode::default()
        };
        module.name_slots(&file);
        Some(module)
    }

    /// Names every GOT slot with a dynamic relocation to a symbol, and
    /// every PLT stub by the GOT slot it jumps through.
    fn name_slots(&mut self, file: &object::File<'_>) {
        use object::{Object, ObjectSection, ObjectSymbol, ObjectSymbolTable, RelocationTarget};
        let (Some(relocations), Some(symbols)) =
            (file.dynamic_relocations(), file.dynamic_symbol_table())
        else {
            return;
        };
        for (slot, relocation) in relocations {
            let RelocationTarget::Symbol(index) = relocation.target() else {
                continue;
            };
            if let Some(name) = symbols
                .symbol_by_index(index)
                .ok()
                .and_then(|s| s.name().ok())
            {
                self.by_slot.insert(slot, name.to_string());
            }
        }
        for name in [".plt", ".plt.sec", ".plt.got"] {
            let Some(section) = file.section_by_name(name) else {
                continue;
            };
            let Ok(data) = section.data() else { continue };
            self.name_stubs(section.address(), data);
        }
    }

    /// PLT stubs are 16 bytes; each jumps through its GOT slot.
    fn name_stubs(&mut self, address: u64, data: &[u8]) {
        const STUB: usize = 16;
        for (n, stub) in data.chunks(STUB).enumerate() {
            let start = address + (n * STUB) as u64;
            let mut decoder = Decoder::with_ip(64, stub, start, DecoderOptions::NONE);
            let jump = (&mut decoder).into_iter().find(|i| {
                i.flow_control() == FlowControl::IndirectBranch && i.is_ip_rel_memory_operand()
            });
            if let Some(name) = jump.and_then(|j| self.by_slot.get(&j.ip_rel_memory_address())) {
                self.by_slot.insert(start, name.clone());
            }
        }
    }

    /// The function containing file address `addr`.
    fn function_at(&self, addr: u64) -> Option<(u64, u64)> {
        let i = self.functions.partition_point(|f| f.0 <= addr);
        let f = *self.functions.get(i.checked_sub(1)?)?;
        (addr < f.1).then_some(f)
    }

    fn bytes(&self, (start, end): (u64, u64)) -> Option<&[u8]> {
        self.code.iter().find_map(|(addr, data)| {
            let from = usize::try_from(start.checked_sub(*addr)?).ok()?;
            let to = usize::try_from(end.checked_sub(*addr)?).ok()?;
            data.get(from..to)
        })
    }

    /// Whether the function at `start` and every function it reaches is
    /// closed (module doc).
    fn is_closed(&mut self, start: u64) -> bool {
        if let Some(&known) = self.closed.get(&start) {
            return known;
        }
        let mut seen = HashSet::from([start]);
        let mut queue = vec![start];
        let mut closed = true;
        while let Some(f) = queue.pop() {
            let Some(callees) = self.callees(f) else {
                closed = false;
                break;
            };
            for callee in callees {
                if seen.insert(callee) {
                    queue.push(callee);
                }
            }
        }
        self.closed.insert(start, closed);
        closed
    }

    /// The functions of this module that the function at `start` calls or
    /// jumps to, or `None` if it leaves for anything else.
    fn callees(&self, start: u64) -> Option<Vec<u64>> {
        let function = self.function_at(start).filter(|f| f.0 == start)?;
        let bytes = self.bytes(function)?;
        let mut decoder = Decoder::with_ip(64, bytes, start, DecoderOptions::NONE);
        let mut callees = Vec::new();
        let mut instruction = Instruction::default();
        while decoder.can_decode() {
            decoder.decode_out(&mut instruction);
            if instruction.is_invalid() || instruction.mnemonic() == Mnemonic::Syscall {
                return None;
            }
            let inside = |target: u64| (function.0..function.1).contains(&target);
            match instruction.flow_control() {
                FlowControl::Call
                | FlowControl::UnconditionalBranch
                | FlowControl::ConditionalBranch => {
                    let target = instruction.near_branch_target();
                    if !inside(target) {
                        callees.extend(self.reached(target)?);
                    }
                }
                FlowControl::IndirectCall | FlowControl::IndirectBranch => {
                    let named = instruction.is_ip_rel_memory_operand()
                        && self
                            .by_slot
                            .get(&instruction.ip_rel_memory_address())
                            .is_some_and(|n| allowed(n));
                    if !named {
                        return None;
                    }
                }
                FlowControl::Interrupt | FlowControl::XbeginXabortXend => return None,
                _ => {}
            }
        }
        Some(callees)
    }

    /// A call or jump to `target` outside the function: a function of the
    /// module to follow (`Some(Some(start))`), an allowed stub
    /// (`Some(None)`), or anything else (`None`).
    fn reached(&self, target: u64) -> Option<Option<u64>> {
        if let Some(name) = self.by_slot.get(&target) {
            return allowed(name).then_some(None);
        }
        // Not only at its start: gcc's `F.cold` parts are entered and left
        // by jumps into their middle. The whole function is followed.
        let f = self.function_at(target)?;
        Some(Some(f.0))
    }
}

/// Answers, for the sites of a trace, whether a critical section between
/// them runs only instrumented code (module doc).
#[derive(Debug)]
pub struct SectionCode {
    map: ModuleMap,
    copies: HashMap<PathBuf, PathBuf>,
    modules: HashMap<PathBuf, Option<ModuleCode>>,
    /// The modules whose files are known to be the recorded ones.
    trusted: Vec<PathBuf>,
}

impl SectionCode {
    pub fn new(map: ModuleMap) -> SectionCode {
        SectionCode {
            map,
            copies: HashMap::new(),
            modules: HashMap::new(),
            trusted: Vec::new(),
        }
    }

    /// Trusts the module recorded at `recorded` (the caller checked that its
    /// file, or its copy, is the recorded build). Sections in modules not
    /// trusted never float: a file rebuilt since the recording would answer
    /// for other code.
    pub fn trust(&mut self, recorded: PathBuf) {
        self.trusted.push(recorded);
    }

    /// Reads the module recorded at `recorded` from `copy` (a packed
    /// trace's copy).
    pub fn read_module_from(&mut self, recorded: PathBuf, copy: PathBuf) {
        self.copies.insert(recorded, copy);
    }

    /// Whether a section locked by a call returning to `lock_site` and
    /// unlocked by one returning to `unlock_site` runs only code whose
    /// shared accesses are all events: both calls are made from one closed
    /// function (module doc).
    pub fn only_instrumented(&mut self, lock_site: u64, unlock_site: u64) -> bool {
        let (Some(lock), Some(unlock)) = (
            self.map.locate(lock_site.wrapping_sub(1)),
            self.map.locate(unlock_site.wrapping_sub(1)),
        ) else {
            return false;
        };
        if lock.module != unlock.module || !self.trusted.contains(&lock.module) {
            return false;
        }
        let file = self
            .copies
            .get(&lock.module)
            .unwrap_or(&lock.module)
            .clone();
        let Some(module) = self
            .modules
            .entry(lock.module)
            .or_insert_with(|| ModuleCode::read(&file))
        else {
            return false;
        };
        let (Some(a), Some(b)) = (
            module.function_at(lock.offset + module.base),
            module.function_at(unlock.offset + module.base),
        ) else {
            return false;
        };
        a == b && module.is_closed(a.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_allowed_with_or_without_their_version() {
        assert!(allowed("sqrt"));
        assert!(allowed("sqrt@GLIBC_2.2.5"));
        assert!(allowed("__tsan_read8"));
        assert!(allowed("printf"), "an event at every call");
        assert!(!allowed("fgets"), "stdio's hidden state, no event");
        assert!(!allowed("sqrtx"));
        assert!(allowed("_ZSt20__throw_system_errori"), "a throw");
        assert!(allowed("_Znwm"), "operator new");
    }

    #[test]
    fn a_module_that_cannot_be_read_has_no_closed_function() {
        let mut code = SectionCode::new(ModuleMap::default());
        assert!(!code.only_instrumented(0x1000, 0x1010));
        assert!(ModuleCode::read(Path::new("/nonexistent/rr-lite-module")).is_none());
    }
}
