//! `rr-lite cc` / `rr-lite c++`: run the real compiler with the same
//! arguments plus instrumentation at compile time and the rr-lite runtime at
//! link time.
//!
//! gcc's `-fsanitize=thread` links `-ltsan`; the runtime directory holds a
//! `libtsan.so` linker script naming the rr-lite runtime, and comes first on
//! the library path, so gcc links ours instead of the system libtsan. clang
//! links its runtime by full path, so it gets `-fno-sanitize-link-runtime`
//! and `-lrr_lite_rt`. Compile-only invocations (`-c`, `-S`, `-E`, `-M`)
//! get no link flags (clang warns about unused ones, and -Werror builds fail).

use std::ffi::{OsStr, OsString};
use std::process::Command;

use crate::RecordError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    C,
    Cxx,
}

impl Language {
    /// The environment variable naming the real compiler, and its default.
    fn compiler(self) -> (&'static str, &'static str) {
        match self {
            Language::C => ("RR_LITE_CC", "cc"),
            Language::Cxx => ("RR_LITE_CXX", "c++"),
        }
    }
}

/// The real compiler for a language (`$RR_LITE_CC`/`$RR_LITE_CXX`, else
/// cc/c++; not `$CC`, which may well be `rr-lite cc` itself).
pub fn real_compiler(lang: Language) -> String {
    let (var, default) = lang.compiler();
    std::env::var(var)
        .ok()
        .filter(|c| !c.trim().is_empty())
        .unwrap_or_else(|| default.to_string())
}

/// What `compiler --version` prints.
fn version(compiler: &str) -> Result<String, RecordError> {
    let out = Command::new(compiler)
        .arg("--version")
        .output()
        .map_err(|source| RecordError::Compiler {
            compiler: compiler.to_string(),
            source,
        })?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// True when the invocation does not link.
pub fn is_compile_only(args: &[OsString]) -> bool {
    args.iter().any(|a| {
        ["-c", "-S", "-E", "-M", "-MM"]
            .iter()
            .any(|flag| a == OsStr::new(flag))
    })
}

/// Options whose value is the next argument (not an input file).
const OPTIONS_WITH_VALUE: &[&str] = &[
    "-o",
    "-I",
    "-L",
    "-D",
    "-U",
    "-include",
    "-imacros",
    "-isystem",
    "-idirafter",
    "-iquote",
    "-x",
    "-MF",
    "-MT",
    "-MQ",
    "-Xlinker",
    "-Xassembler",
    "-Xpreprocessor",
    "-T",
    "-u",
    "-e",
    "-z",
    "-aux-info",
    "--param",
];

/// The invocation's input files (`-` is standard input): its arguments
/// that are neither options nor option values.
fn inputs(args: &[OsString]) -> impl Iterator<Item = &OsString> {
    let mut value_next = false;
    args.iter().filter(move |a| {
        let was_value = std::mem::replace(
            &mut value_next,
            OPTIONS_WITH_VALUE.iter().any(|o| *a == OsStr::new(o)),
        );
        !was_value && (*a == OsStr::new("-") || !a.to_string_lossy().starts_with('-'))
    })
}

/// True when the invocation links: it names an input and does not stop
/// before linking.
fn links(args: &[OsString]) -> bool {
    !is_compile_only(args) && has_input(args)
}

/// True when the invocation names an input file.
pub fn has_input(args: &[OsString]) -> bool {
    inputs(args).next().is_some()
}

/// True when the invocation compiles source code (not only links objects):
/// an input with a C or C++ source suffix, standard input, or `-x LANG`.
fn compiles_source(args: &[OsString]) -> bool {
    const SOURCE: &[&str] = &["c", "cc", "cp", "cpp", "cxx", "c++", "C", "CPP", "i", "ii"];
    args.iter()
        .any(|a| a == OsStr::new("-x") || a.to_string_lossy().starts_with("-x"))
        || inputs(args).any(|a| {
            a == OsStr::new("-")
                || std::path::Path::new(a)
                    .extension()
                    .is_some_and(|e| SOURCE.iter().any(|s| e == OsStr::new(s)))
        })
}

/// clang's thread sanitizer leaves out the read of a read followed by a
/// write of the same location in one basic block (`x++`: the write's check
/// finds the race). A recording needs that read ordered too, so this option
/// keeps its hook. (`-tsan-compound-read-before-write` would not do: its one
/// hook sits at the write, after the read.)
const CLANG_READS_BEFORE_WRITES: [&str; 2] = ["-mllvm", "-tsan-instrument-read-before-write=1"];

/// The runtime needs no hook at function entry and exit (no event is
/// logged there: a thread's stripes are given back at its next access or
/// interposed call instead), and on call-heavy code they are a tenth of the
/// instructions run (SCTBench's qsort_mt: 48.5 M to 43.3 M under callgrind).
const GCC_NO_FUNCTION_HOOKS: &str = "--param=tsan-instrument-func-entry-exit=0";
/// gcc expands an OpenMP atomic update that is not one fetch-and-op (`x +=
/// y` on a double, `x *= y`, a capture) into a compare-and-swap loop after
/// its thread sanitizer has run: an inline `lock cmpxchg` that nothing
/// records, so threads' updates replayed in another order (a floating-point
/// sum came out different, and silently). Not inlined, the
/// compare-and-swap is a call to libatomic's `__atomic_compare_exchange_N`,
/// which the runtime defines as an atomic event. (Only that expansion
/// changes: the sanitizer turns every other atomic into its own hook first.)
const GCC_NO_INLINE_ATOMICS: &str = "-fno-inline-atomics";
/// gcc warns that its thread sanitizer does not support
/// `atomic_thread_fence` (`-Wtsan`): true of TSan's race detection, not of
/// a recording, which orders every atomic access itself, so the warning
/// only told users who never asked for TSan about it (every program with a
/// fence: moodycamel's queues, the C++ Concurrency in Action listings).
const GCC_NO_TSAN_WARNING: &str = "-Wno-tsan";
const CLANG_NO_FUNCTION_HOOKS: [&str; 2] = ["-mllvm", "-tsan-instrument-func-entry-exit=false"];
/// gcc expands some calls of these functions inline after its thread
/// sanitizer has run (a `memcpy` of 24 or 48 bytes, a `memset` of a
/// struct, a `memcmp` whose result is only compared with zero, a `strcmp`
/// with a short literal): loads and stores that no hook sees, so a thread
/// copying or comparing memory another thread writes replayed with other
/// results, and silently (SQLite's WAL index header). Kept as calls, each is
/// an event of the runtime's (`interpose::mem`, `interpose::strings`).
/// clang instruments these itself (it calls `memcpy`, `bcmp`, `strlen`).
const GCC_NO_INLINE_STRING_FUNCTIONS: [&str; 17] = [
    "-fno-builtin-memcpy",
    "-fno-builtin-memmove",
    "-fno-builtin-memset",
    "-fno-builtin-memcmp",
    "-fno-builtin-bcmp",
    "-fno-builtin-memchr",
    "-fno-builtin-strlen",
    "-fno-builtin-strnlen",
    "-fno-builtin-strchr",
    "-fno-builtin-strrchr",
    "-fno-builtin-strcmp",
    "-fno-builtin-strncmp",
    "-fno-builtin-strcpy",
    "-fno-builtin-stpcpy",
    "-fno-builtin-strncpy",
    "-fno-builtin-strcat",
    "-fno-builtin-strncat",
];

/// The flags rr-lite adds to a compiler invocation. Without an input file
/// nothing is linked (`cc --version`, or a mistake the compiler reports as
/// it would without rr-lite): no link flags, which would make it link.
/// clang gets its compiler option only when it compiles (an unused option is
/// a warning, and an error in -Werror builds).
pub fn added_flags(args: &[OsString], clang: bool, runtime_dir: &std::path::Path) -> Vec<OsString> {
    let mut flags: Vec<OsString> = vec!["-fsanitize=thread".into()];
    if clang && compiles_source(args) {
        flags.extend(CLANG_READS_BEFORE_WRITES.map(OsString::from));
        flags.extend(CLANG_NO_FUNCTION_HOOKS.map(OsString::from));
    } else if compiles_source(args) {
        flags.extend(
            [
                GCC_NO_FUNCTION_HOOKS,
                GCC_NO_INLINE_ATOMICS,
                GCC_NO_TSAN_WARNING,
            ]
            .map(OsString::from),
        );
        flags.extend(GCC_NO_INLINE_STRING_FUNCTIONS.map(OsString::from));
    }
    if links(args) {
        let mut lib_dir = OsString::from("-L");
        lib_dir.push(runtime_dir);
        // DT_RPATH, not DT_RUNPATH: LD_LIBRARY_PATH (cargo's, a user's) is
        // searched before a RUNPATH, and could hand the program another
        // librr_lite_rt.so or the system's libtsan.
        let mut rpath = OsString::from("-Wl,--disable-new-dtags,-rpath,");
        rpath.push(runtime_dir);
        flags.extend([lib_dir, rpath]);
        if clang {
            flags.extend(["-fno-sanitize-link-runtime".into(), "-lrr_lite_rt".into()]);
        }
    }
    flags
}

/// The compiler command for `rr-lite cc ARGS...` (to be executed in place
/// of rr-lite, so its exit status and output are the compiler's).
pub fn compiler_command(lang: Language, args: &[OsString]) -> Result<Command, RecordError> {
    let compiler = real_compiler(lang);
    let runtime_dir = crate::runtime::install()?;
    let version = version(&compiler)?;
    let clang = version.contains("clang");
    let mut cmd = Command::new(&compiler);
    cmd.args(args).args(added_flags(args, clang, &runtime_dir));
    if lang == Language::Cxx
        && links(args)
        && crate::cxx_warm_up::wanted(args)
        && let Some(object) = crate::cxx_warm_up::object(&compiler, &version, args, &runtime_dir)
    {
        // (`-x none`: an object, whatever `-x LANG` the arguments gave.)
        cmd.args(["-x".as_ref(), "none".as_ref(), object.as_os_str()]);
    }
    Ok(cmd)
}

/// A command line from words, for the tests of the wrappers' arguments.
#[cfg(test)]
pub(crate) fn args(a: &[&str]) -> Vec<OsString> {
    a.iter().map(OsString::from).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_are_told_from_option_values() {
        assert!(has_input(&args(&["-O2", "x.c"])));
        assert!(has_input(&args(&["-o", "out", "-"])));
        assert!(!has_input(&args(&["-o", "out", "-I", "inc"])));
        assert!(!has_input(&args(&["--version"])));
        assert!(!has_input(&args(&[])));
    }

    #[test]
    fn compile_only_gets_no_link_flags() {
        let dir = std::path::Path::new("/rt");
        let f = added_flags(&args(&["-O2", "-c", "x.c"]), true, dir);
        assert_eq!(
            f,
            args(&[
                "-fsanitize=thread",
                "-mllvm",
                "-tsan-instrument-read-before-write=1",
                "-mllvm",
                "-tsan-instrument-func-entry-exit=false"
            ])
        );
        let f = added_flags(&args(&["-O2", "-c", "x.c"]), false, dir);
        let mut gcc = args(&[
            "-fsanitize=thread",
            "--param=tsan-instrument-func-entry-exit=0",
            "-fno-inline-atomics",
            "-Wno-tsan",
        ]);
        gcc.extend(args(&GCC_NO_INLINE_STRING_FUNCTIONS));
        assert_eq!(f, gcc);
        let f = added_flags(&args(&["x.o", "-o", "x"]), false, dir);
        assert_eq!(
            f,
            args(&[
                "-fsanitize=thread",
                "-L/rt",
                "-Wl,--disable-new-dtags,-rpath,/rt"
            ])
        );
        let f = added_flags(&args(&["x.c"]), true, dir);
        assert!(f.contains(&OsString::from("-lrr_lite_rt")));
    }

    /// clang's read-before-write option only where it compiles: a link of
    /// objects would warn that it is unused (an error under -Werror).
    #[test]
    fn clang_gets_reads_before_writes_only_when_compiling() {
        let dir = std::path::Path::new("/rt");
        let has = |a: &[&str]| {
            added_flags(&args(a), true, dir).contains(&OsString::from(CLANG_READS_BEFORE_WRITES[1]))
        };
        assert!(has(&["a.cpp", "-o", "a"]));
        assert!(has(&["-x", "c", "-", "-o", "a"]));
        assert!(has(&["-c", "dir.d/x.cc"]));
        assert!(!has(&["a.o", "b.a", "-o", "a"]));
        assert!(!has(&["-o", "x.c", "a.o"]));
        assert!(!has(&["--version"]));
    }
}
