//! One recording: create the trace directory (marked `incomplete`), run the
//! program with the runtime in record mode and ASLR off, wait for it however
//! it ends, then read the logs back, write `header.json`, replace
//! `incomplete` by `version` and point `latest-trace` at the new trace.
//!
//! Nothing is lost on a crash: the runtime's logs are shared file mappings
//! that outlive the process, and the recorder only reads them afterwards.
//! Ctrl-C reaches the program (same process group); the recorder ignores it
//! and finalises the trace of the interrupted run (see `rr_lite_supervise`).

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

use rr_lite_supervise::{
    OutputWatch, StdinSource, Tick, disable_aslr_for_children, supervise_watching,
};
use rr_lite_trace::codec::checksum::{LogChecksum, log_checksum_of_file_prefix};
use rr_lite_trace::codec::{FORMAT_VERSION, HEADER_LEN, LOG_PROCESS_INCOMPLETE, ThreadLogHeader};
use rr_lite_trace::dir::{
    HEADER_FILE, INCOMPLETE_FILE, LATEST_LINK, PROBLEMS_FILE, STDIN_FILE, VERSION_FILE,
    default_base_dir,
};
use rr_lite_trace::header::HEADER_MAGIC;
use rr_lite_trace::plan::{SESSION_ENV, SESSION_PLACEHOLDER};
use rr_lite_trace::{ChaosSchedule, ProgramEnding, TraceDir, TraceHeader};

use crate::RecordError;
use crate::instrumented::{Instrumentation, check_instrumentation};

/// Environment the runtime reads (must match the runtime's `mode` module).
pub const MODE_ENV: &str = "RR_LITE_MODE";
pub const TRACE_ENV: &str = "RR_LITE_TRACE";
/// Granule of the runtime's striped locks (bytes).
pub const RECORD_GRANULE: u32 = 8;
/// One malloc arena: with all allocator calls replayed in order, a single
/// arena hands out the same addresses again.
const MALLOC_TUNABLE: &str = "glibc.malloc.arena_max=1";

#[derive(Debug, Clone)]
pub struct RecordOptions {
    /// Trace directory to create; default: a new one under the base dir.
    pub output: Option<PathBuf>,
    pub program: OsString,
    pub args: Vec<OsString>,
    /// Copy the regular files the program opens for reading into the trace
    /// (the runtime's `snapshot` module), so replay does not need them.
    pub snapshot_files: bool,
    /// Store every environment value as it is, secret-looking ones too.
    pub keep_env: bool,
    /// Perturb the schedule while recording (the runtime's `chaos` module).
    pub chaos: Option<ChaosSchedule>,
    /// Hooks for which a thread keeps the stripes of its accesses (the
    /// runtime's `quantum` module); 0: each goes back at the next hook.
    /// Chaos scheduling ignores it.
    pub quantum: u32,
    /// What the program reads on its standard input.
    pub stdin: RecordStdin,
    /// Stop the program with SIGINT after this long (SIGKILL 5 s later).
    pub timeout: Option<Duration>,
    /// Pass the program's output through pipes, showing each line to this.
    pub watch_output: Option<OutputWatch>,
    /// Point `latest-trace` at the new trace (`record --until-failure`
    /// points it at the failing run only).
    pub point_latest: bool,
}

impl RecordOptions {
    /// Options for recording `program ARGS` into a new trace, as `record`
    /// does by default.
    pub fn new(program: OsString, args: Vec<OsString>) -> RecordOptions {
        RecordOptions {
            output: None,
            program,
            args,
            snapshot_files: false,
            keep_env: false,
            chaos: None,
            quantum: DEFAULT_QUANTUM,
            stdin: RecordStdin::Forward,
            timeout: None,
            watch_output: None,
            point_latest: true,
        }
    }
}

/// Where a recorded program's standard input comes from (it is saved in
/// the trace either way).
#[derive(Debug, Clone)]
pub enum RecordStdin {
    /// The recorder's own standard input.
    Forward,
    /// The bytes of this file (the same input for each of several runs).
    File(PathBuf),
}

/// Environment variable carrying the chaos schedule to the runtime (kept
/// in the recorded environment; replay ignores it).
pub const CHAOS_ENV: &str = "RR_LITE_CHAOS";
/// Environment variable carrying the quantum to the runtime (kept in the
/// recorded environment; replay ignores it).
pub const QUANTUM_ENV: &str = "RR_LITE_QUANTUM";
/// `record --quantum`'s default. Four threads bumping one shared index
/// (`shared_index 3000000 4`) keep 290 k waits for replay at 512, 33 k at
/// 4096 and 8 k at 16384 (replay 0.49, 0.20 and 0.14 s), a spin lock on
/// atomics 21 k, 4 k and 0.8 k; threads updating random shared slots, a
/// ring buffer, FFT, LU, n-body, radix record and replay within the noise
/// of 512 (a stripe another thread waits for goes back once its holder
/// leaves it idle, and one whose keeping did not pay is not kept again:
/// the runtime's `quantum` module). Turns stay short (some 30 us of a
/// thread's hooks) and fall at random points of a thread's hooks, so lost
/// updates still show (the racy counter loses updates in every recording,
/// as natively).
pub const DEFAULT_QUANTUM: u32 = 4096;
/// How long a program stopped with SIGINT (`timeout`) has to end before it
/// is killed.
const KILL_AFTER_INTERRUPT: Duration = Duration::from_secs(5);

/// Comma-separated name fragments (case-insensitive) of environment
/// variables whose values the trace does not keep; replaces the default.
pub const SECRET_PATTERNS_ENV: &str = "RR_LITE_SECRET_PATTERNS";
const DEFAULT_SECRET_PATTERNS: &[&str] =
    &["KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"];

/// The environment as the trace stores it: values of variables whose names
/// look secret become `*`s of the same length (the program's initial stack
/// keeps its layout at replay), and their names.
fn masked_environment(env: &[(OsString, OsString)]) -> (Vec<(OsString, OsString)>, Vec<String>) {
    let patterns: Vec<String> = match std::env::var(SECRET_PATTERNS_ENV) {
        Ok(list) => list
            .split(',')
            .map(|p| p.trim().to_ascii_uppercase())
            .filter(|p| !p.is_empty())
            .collect(),
        Err(_) => DEFAULT_SECRET_PATTERNS
            .iter()
            .map(|p| p.to_string())
            .collect(),
    };
    let secret = |name: &OsStr| {
        let upper = name.to_string_lossy().to_ascii_uppercase();
        !upper.starts_with("RR_LITE_") && patterns.iter().any(|p| upper.contains(p.as_str()))
    };
    let mut masked = Vec::new();
    let stored = env
        .iter()
        .map(|(k, v)| {
            if secret(k) && !v.is_empty() {
                masked.push(k.to_string_lossy().into_owned());
                (k.clone(), "*".repeat(v.len()).into())
            } else {
                (k.clone(), v.clone())
            }
        })
        .collect();
    (stored, masked)
}

/// Environment variable that makes the runtime snapshot files (kept in
/// the recorded environment, which replay reuses).
pub const SNAPSHOT_ENV: &str = "RR_LITE_SNAPSHOT_FILES";

/// A finished recording.
#[derive(Debug, Clone)]
pub struct Recording {
    pub dir: PathBuf,
    pub header: TraceHeader,
}

/// Finds the program like a shell would: a path if it has a slash, else PATH.
pub fn resolve_program(program: &std::ffi::OsStr) -> Result<PathBuf, RecordError> {
    let not_found = || RecordError::ProgramNotFound {
        program: program.to_string_lossy().into_owned(),
    };
    let as_path = Path::new(program);
    let candidate = if as_path.components().count() > 1 {
        Some(as_path.to_path_buf())
    } else {
        std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join(program))
                .find(|p| p.is_file())
        })
    };
    let path = candidate.filter(|p| p.is_file()).ok_or_else(not_found)?;
    std::fs::canonicalize(&path).map_err(RecordError::io("resolve", path))
}

fn program_name(program: &Path) -> String {
    program
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "trace".into())
}

/// Creates the trace directory: the one asked for (must be new or empty),
/// else `<base>/<prog>-<n>` with the first free n.
fn create_trace_dir(output: Option<&Path>, program: &Path) -> Result<PathBuf, RecordError> {
    if let Some(dir) = output {
        rr_lite_trace::private::create_dir_all(dir).map_err(RecordError::io("create", dir))?;
        let mut entries = std::fs::read_dir(dir).map_err(RecordError::io("list", dir))?;
        if entries.next().is_some() {
            return Err(RecordError::TraceDirExists {
                path: dir.to_path_buf(),
            });
        }
        return std::fs::canonicalize(dir).map_err(RecordError::io("resolve", dir));
    }
    let base = default_base_dir();
    rr_lite_trace::private::create_dir_all(&base).map_err(RecordError::io("create", &base))?;
    let name = program_name(program);
    for n in 0.. {
        let dir = base.join(format!("{name}-{n}"));
        match rr_lite_trace::private::create_dir(&dir) {
            Ok(()) => return std::fs::canonicalize(&dir).map_err(RecordError::io("resolve", dir)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(RecordError::io("create", dir)(e)),
        }
    }
    unreachable!("u32 trace numbers exhausted")
}

/// The environment the program runs with (and that replay will reuse).
fn program_environment(
    trace: &Path,
    snapshot_files: bool,
    chaos: Option<&ChaosSchedule>,
    quantum: u32,
) -> Vec<(OsString, OsString)> {
    let ours = [
        MODE_ENV,
        TRACE_ENV,
        SESSION_ENV,
        SNAPSHOT_ENV,
        CHAOS_ENV,
        QUANTUM_ENV,
    ];
    let mut env: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(k, _)| !ours.iter().any(|o| k == o))
        .collect();
    if snapshot_files {
        env.push((SNAPSHOT_ENV.into(), "1".into()));
    }
    if let Some(chaos) = chaos {
        env.push((CHAOS_ENV.into(), chaos.env_value().into()));
    }
    env.push((QUANTUM_ENV.into(), quantum.to_string().into()));
    match env.iter_mut().find(|(k, _)| k == "GLIBC_TUNABLES") {
        Some((_, v)) if !v.to_string_lossy().contains("arena_max") => {
            v.push(format!(":{MALLOC_TUNABLE}"));
        }
        Some(_) => {}
        None => env.push(("GLIBC_TUNABLES".into(), MALLOC_TUNABLE.into())),
    }
    // Every symbol bound at load: a lazy binding's first call saves all the
    // vector registers on the program's stack (`_dl_runtime_resolve_xsavec`)
    // in whichever thread calls first, which differs between runs, and those
    // registers hold what the runtime's last call left. A program reading a
    // local it never wrote would see that. (Kept for the replay, which runs
    // with the recorded environment.)
    if !env.iter().any(|(k, _)| k == "LD_BIND_NOW") {
        env.push(("LD_BIND_NOW".into(), "1".into()));
    }
    env.push((MODE_ENV.into(), "record".into()));
    env.push((TRACE_ENV.into(), trace.as_os_str().to_owned()));
    // Replay puts its session id here: same length, same stack layout.
    env.push((SESSION_ENV.into(), SESSION_PLACEHOLDER.into()));
    env
}

/// Records one run of `options.program`.
pub fn record(options: &RecordOptions) -> Result<Recording, RecordError> {
    let program = resolve_program(&options.program)?;
    match check_instrumentation(&program)? {
        Instrumentation::RrLite | Instrumentation::Unknown => {}
        Instrumentation::SystemTsan => {
            return Err(RecordError::NotInstrumented {
                path: program,
                why: "it is linked against the system libtsan".into(),
            });
        }
        Instrumentation::None => {
            return Err(RecordError::NotInstrumented {
                path: program,
                why: "it has no __tsan_* hooks".into(),
            });
        }
    }
    let dir = create_trace_dir(options.output.as_deref(), &program)?;
    let incomplete = dir.join(INCOMPLETE_FILE);
    rr_lite_trace::private::write(&incomplete, format!("{FORMAT_VERSION}\n"))
        .map_err(RecordError::io("write", &incomplete))?;
    reserve_room_to_finish(&dir);

    let cwd = std::env::current_dir().map_err(RecordError::io("resolve", "."))?;
    let env = program_environment(
        &dir,
        options.snapshot_files,
        options.chaos.as_ref(),
        options.quantum,
    );
    let mut argv: Vec<OsString> = vec![options.program.clone()];
    argv.extend(options.args.iter().cloned());
    // Replay needs the same addresses.
    disable_aslr_for_children();
    let mut cmd = Command::new(&program);
    cmd.args(&options.args)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)));
    // argv[0] as the user typed it, like a shell.
    std::os::unix::process::CommandExt::arg0(&mut cmd, &options.program);

    let started = SystemTime::now();
    let clock = Instant::now();
    let stdin = program_stdin(&dir, &options.stdin)?;
    let exit_status = supervise_watching(
        &mut cmd,
        &program,
        stdin,
        Duration::from_millis(100),
        stopper(options.timeout),
        options.watch_output.clone(),
    )?;
    let ending = ProgramEnding::from(exit_status);
    let wall_time_ns = clock.elapsed().as_nanos() as u64;
    let (stored_env, masked_env) = if options.keep_env {
        (env, Vec::new())
    } else {
        masked_environment(&env)
    };

    let header = finalise(
        &dir,
        options.point_latest,
        FinalFacts {
            chaos: options.chaos,
            program: program.clone(),
            argv,
            cwd,
            env: stored_env,
            masked_env,
            ending,
            wall_time_ns,
            started_unix_ms: started
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64),
        },
    )
    .map_err(|e| RecordError::Unfinished {
        dir: dir.clone(),
        ending,
        source: Box::new(e),
    })?;
    Ok(Recording { dir, header })
}

/// Bytes set aside for `header.json` and the end of the recording.
const FINISHING_ROOM: i64 = 1 << 20;
/// Bytes set aside for the runtime's notes in `problems`.
const PROBLEMS_ROOM: i64 = 64 << 10;
/// The file holding [`FINISHING_ROOM`] until `finalise` deletes it.
const ROOM_FILE: &str = "room";

/// Sets disk space aside (`fallocate`), so a disk the program's logs fill
/// still has room for the runtime's note that the trace is incomplete
/// (`problems`, blocks kept past its end) and for `header.json` (a file
/// `finalise` deletes first). Best effort: a file system without
/// `fallocate` gets no reservation.
fn reserve_room_to_finish(dir: &Path) {
    use nix::fcntl::{FallocateFlags, fallocate};
    let reserve = |name: &str, flags: FallocateFlags, len: i64| {
        if let Ok(file) = rr_lite_trace::private::create(&dir.join(name)) {
            let _ = fallocate(&file, flags, 0, len);
        }
    };
    reserve(
        PROBLEMS_FILE,
        FallocateFlags::FALLOC_FL_KEEP_SIZE,
        PROBLEMS_ROOM,
    );
    reserve(ROOM_FILE, FallocateFlags::empty(), FINISHING_ROOM);
}

/// The program's standard input, saved as the trace's `stdin`.
fn program_stdin(dir: &Path, source: &RecordStdin) -> Result<StdinSource, RecordError> {
    let saved = dir.join(STDIN_FILE);
    match source {
        RecordStdin::Forward => {
            let file = rr_lite_trace::private::create(&saved)
                .map_err(RecordError::io("create", &saved))?;
            Ok(StdinSource::Record(file))
        }
        RecordStdin::File(from) => {
            let mut input = std::fs::File::open(from).map_err(RecordError::io("open", from))?;
            let mut file = rr_lite_trace::private::create(&saved)
                .map_err(RecordError::io("create", &saved))?;
            std::io::copy(&mut input, &mut file).map_err(RecordError::io("copy", from))?;
            let file = std::fs::File::open(&saved).map_err(RecordError::io("open", &saved))?;
            Ok(StdinSource::Replay(file))
        }
    }
}

/// The supervisor's tick: with a timeout, SIGINT once it has passed (the
/// trace records the interruption like a Ctrl-C), SIGKILL if the program
/// is still there 5 s later.
fn stopper(timeout: Option<Duration>) -> impl FnMut() -> Tick {
    let started = Instant::now();
    let mut interrupted = false;
    move || match timeout {
        Some(limit) if started.elapsed() >= limit + KILL_AFTER_INTERRUPT => Tick::Kill,
        Some(limit) if started.elapsed() >= limit && !interrupted => {
            interrupted = true;
            Tick::Signal(rr_lite_supervise::SIGINT)
        }
        _ => Tick::Continue,
    }
}

/// What the recorder knows about the run, before reading the logs.
struct FinalFacts {
    chaos: Option<ChaosSchedule>,
    program: PathBuf,
    argv: Vec<OsString>,
    cwd: PathBuf,
    env: Vec<(OsString, OsString)>,
    masked_env: Vec<String>,
    ending: ProgramEnding,
    wall_time_ns: u64,
    started_unix_ms: u64,
}

/// Reads every thread log once (counting and validating), writes the header
/// and marks the trace complete.
fn finalise(dir: &Path, point_latest: bool, facts: FinalFacts) -> Result<TraceHeader, RecordError> {
    let _ = std::fs::remove_file(dir.join(ROOM_FILE));
    let trace = match TraceDir::open_for_finalising(dir) {
        Ok(t) => t,
        Err(rr_lite_trace::TraceError::NotATrace { .. }) => {
            return Err(RecordError::NothingRecorded {
                path: facts.program,
            });
        }
        Err(e) => return Err(e.into()),
    };
    let mut problems = Vec::new();
    let mut entries = Vec::new();
    let mut log_checksums = Vec::new();
    let mut log_bytes = 0;
    for (t, scan) in scan_logs(&trace).into_iter().enumerate() {
        let scan = scan?;
        // (Every log that closed after a failure says so: once is enough.)
        problems.extend(scan.problem.filter(|p| !problems.contains(p)));
        log_bytes += scan.written.saturating_sub(HEADER_LEN as u64);
        entries.push(scan.entries);
        log_checksums.push(match scan.checksum {
            Some(checksum) => checksum,
            None => {
                debug_assert!(!trace.thread_log_path(t as u32).exists());
                (0, 0)
            }
        });
    }
    let noted = dir.join(PROBLEMS_FILE);
    match std::fs::read_to_string(&noted) {
        Ok(text) => problems.extend(text.lines().map(str::to_owned)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(RecordError::io("read", &noted)(e)),
    }
    let header = TraceHeader {
        magic: HEADER_MAGIC.into(),
        format_version: FORMAT_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").into(),
        ok: problems.is_empty(),
        program_id: program_id(&facts.program),
        program: facts.program,
        argv: facts.argv,
        cwd: facts.cwd,
        env: facts.env,
        threads: trace.threads(),
        entries,
        log_bytes,
        ending: facts.ending,
        wall_time_ns: facts.wall_time_ns,
        started_unix_ms: facts.started_unix_ms,
        record_granule: RECORD_GRANULE,
        problems,
        masked_env: facts.masked_env,
        log_checksums,
        log_checksum: Some(LOG_CHECKSUM.name().into()),
        data_checksums: data_checksums(dir)?,
        chaos: facts.chaos,
        chaos_steps: chaos_steps(dir)?,
        spin_yields: spin_yields(dir)?,
    };
    header.write(&dir.join(HEADER_FILE))?;
    let version = dir.join(VERSION_FILE);
    rr_lite_trace::private::write(&version, format!("{FORMAT_VERSION}\n"))
        .map_err(RecordError::io("write", &version))?;
    let incomplete = dir.join(INCOMPLETE_FILE);
    std::fs::remove_file(&incomplete).map_err(RecordError::io("remove", &incomplete))?;
    if point_latest {
        update_latest(dir)?;
    }
    Ok(header)
}

/// What [`scan_logs`] found in one thread log.
struct LogScan {
    entries: u64,
    /// Bytes up to the end of the last whole entry.
    written: u64,
    /// `(length, fnv1a)` of those bytes, `None` if the log does not exist.
    checksum: Option<(u64, u64)>,
    /// Why the log ends early, if it does.
    problem: Option<String>,
}

/// Counts and validates every thread log, each on its own worker (as many
/// as there are cores): this is the time between the program's end and
/// the trace's, which a Ctrl-C waits for.
fn scan_logs(trace: &TraceDir) -> Vec<Result<LogScan, RecordError>> {
    let threads = trace.threads();
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get() as u32)
        .clamp(1, threads.max(1));
    // Worker w scans threads w, w + workers, ...
    let scans: Vec<Vec<Result<LogScan, RecordError>>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|w| {
                scope.spawn(move || {
                    (w..threads)
                        .step_by(workers as usize)
                        .map(|t| scan_log(trace, t))
                        .collect()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a log scan panicked"))
            .collect()
    });
    // Back in thread order: thread t is worker t % workers's next result.
    let mut per_worker: Vec<_> = scans.into_iter().map(Vec::into_iter).collect();
    (0..threads)
        .filter_map(|t| per_worker[(t % workers) as usize].next())
        .collect()
}

/// How the recorder checksums thread logs.
const LOG_CHECKSUM: LogChecksum = LogChecksum::Crc32;

/// Counts thread `t`'s entries up to the first bad one, and checksums them.
/// Only the last chunk is decoded (the runtime notes in the header how many
/// entries come before it): the split decodes the whole log later anyway,
/// and a Ctrl-C should not wait for it.
fn scan_log(trace: &TraceDir, t: u32) -> Result<LogScan, RecordError> {
    let mut reader = trace.thread_events(t)?;
    let mut problem = None;
    let process_incomplete = process_incomplete(reader.header());
    if let Err(e) = reader.skip_to_last_chunk() {
        problem = Some(with_causes(&e));
    }
    while problem.is_none() {
        match reader.next() {
            Some(Ok(_)) => {}
            Some(Err(e)) => problem = Some(with_causes(&e)),
            None => break,
        }
    }
    let entries = reader.events_read();
    let written = reader.offset();
    let path = trace.thread_log_path(t);
    let checksum = if path.exists() {
        let (sum, len) = log_checksum_of_file_prefix(LOG_CHECKSUM, &path, written)
            .map_err(RecordError::io("read", &path))?;
        give_back_reserved_space(&path, written)?;
        Some((len, sum))
    } else {
        None
    };
    Ok(LogScan {
        entries,
        written,
        checksum,
        problem: problem.or(process_incomplete),
    })
}

/// The problem a log's header notes (`LOG_PROCESS_INCOMPLETE`): another
/// log of its process failed, maybe where the runtime's notes could not be
/// written either (a sandbox the program entered).
fn process_incomplete(header: &ThreadLogHeader) -> Option<String> {
    (header.flags & LOG_PROCESS_INCOMPLETE != 0).then(|| {
        "a thread log could not be created or could not grow while recording (the runtime's \
         warning said why; a sandbox the program entered, such as Landlock, refuses new \
         files): the trace misses that thread's events"
            .to_string()
    })
}

/// Cuts a finished log after its last entry: the runtime reserves a chunk
/// (4 MiB) of disk at a time, and a program of many short threads would
/// otherwise leave that much per thread.
fn give_back_reserved_space(path: &Path, written: u64) -> Result<(), RecordError> {
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(RecordError::io("open", path))?;
    let len = file
        .metadata()
        .map_err(RecordError::io("read", path))?
        .len();
    if len > written {
        file.set_len(written)
            .map_err(RecordError::io("truncate", path))?;
    }
    Ok(())
}

/// The step count PCT left in the trace, if it did (the last process's).
fn chaos_steps(dir: &Path) -> Result<Option<u64>, RecordError> {
    Ok(
        counts_noted(dir, rr_lite_trace::dir::CHAOS_STEPS_FILE, "steps ")?
            .and_then(|counts| counts.last().copied()),
    )
}

/// The times the program's threads gave way while spinning, over its
/// processes (each writes a line at its exit), if any did.
fn spin_yields(dir: &Path) -> Result<Option<u64>, RecordError> {
    Ok(
        counts_noted(dir, rr_lite_trace::dir::SPINS_FILE, "yields ")?
            .map(|counts| counts.into_iter().fold(0u64, u64::saturating_add)),
    )
}

/// The counts of the `label` lines the runtime's processes wrote to the
/// trace's `file` at their exits (`None` without the file).
fn counts_noted(dir: &Path, file: &str, label: &str) -> Result<Option<Vec<u64>>, RecordError> {
    let path = dir.join(file);
    if !path.exists() {
        return Ok(None);
    }
    let text = rr_lite_trace::bounded::read_to_string(&path, 1 << 16)?;
    Ok(Some(
        text.lines()
            .filter_map(|l| l.strip_prefix(label)?.trim().parse().ok())
            .collect(),
    ))
}

/// `err` followed by its causes, joined by ": ": an I/O error's message
/// names the file and leaves the reason to its source.
fn with_causes(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut cause = err.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

/// The executable's identity (`rr_lite_trace::identity`), or "unreadable".
fn program_id(program: &Path) -> String {
    rr_lite_trace::identity::program_id(program).unwrap_or_else(|_| "unreadable".into())
}

/// Checksums of the recorded data replay serves to the program: standard
/// input, each thread's input, the snapshots of files. A changed byte there
/// would replay as input the program never had.
fn data_checksums(dir: &Path) -> Result<std::collections::BTreeMap<String, u64>, RecordError> {
    let mut sums = std::collections::BTreeMap::new();
    let mut add = |relative: String| -> Result<(), RecordError> {
        let path = dir.join(&relative);
        let sum = rr_lite_trace::codec::checksum::fnv1a_of_file(&path)
            .map_err(RecordError::io("read", &path))?;
        sums.insert(relative, sum);
        Ok(())
    };
    let names = |sub: &Path| -> Result<Vec<String>, RecordError> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(sub).map_err(RecordError::io("list", sub))? {
            let entry = entry.map_err(RecordError::io("list", sub))?;
            if entry.file_type().is_ok_and(|t| t.is_file()) {
                names.push(entry.file_name().to_string_lossy().into_owned());
            }
        }
        Ok(names)
    };
    for name in names(dir)? {
        if name == STDIN_FILE || (name.starts_with("input-") && name.ends_with(".bin")) {
            add(name)?;
        }
    }
    let files = dir.join("files");
    if files.is_dir() {
        for name in names(&files)? {
            add(format!("files/{name}"))?;
        }
    }
    Ok(sums)
}

/// Points `<base>/latest-trace` at `dir` (atomically: a new link renamed
/// over the old one).
pub fn update_latest(dir: &Path) -> Result<(), RecordError> {
    let base = default_base_dir();
    rr_lite_trace::private::create_dir_all(&base).map_err(RecordError::io("create", &base))?;
    let link = base.join(LATEST_LINK);
    let tmp = base.join(format!(".{LATEST_LINK}.{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    std::os::unix::fs::symlink(dir, &tmp).map_err(RecordError::io("create", &tmp))?;
    std::fs::rename(&tmp, &link).map_err(RecordError::io("move into place", &link))
}

#[cfg(test)]
mod secret_tests {
    use super::*;

    #[test]
    fn secret_looking_values_become_stars_of_the_same_length() {
        let env: Vec<(OsString, OsString)> = vec![
            ("API_KEY".into(), "abc123".into()),
            ("my_token".into(), "xyz".into()),
            ("HOME".into(), "/root".into()),
            ("EMPTY_SECRET".into(), "".into()),
            ("RR_LITE_TRACE".into(), "/t".into()),
        ];
        let (stored, masked) = masked_environment(&env);
        assert_eq!(masked, ["API_KEY", "my_token"]);
        assert_eq!(stored[0].1, "******");
        assert_eq!(stored[1].1, "***");
        assert_eq!(stored[2].1, "/root");
        assert_eq!(stored[3].1, "");
        assert_eq!(stored[4].1, "/t");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environment_gets_mode_trace_and_one_arena() {
        let env = program_environment(Path::new("/tmp/x"), false, None, 16);
        assert!(env.iter().any(|(k, v)| k == MODE_ENV && v == "record"));
        assert!(env.iter().any(|(k, v)| k == QUANTUM_ENV && v == "16"));
        assert!(env.iter().any(|(k, v)| k == TRACE_ENV && v == "/tmp/x"));
        assert!(
            env.iter()
                .any(|(k, v)| k == "GLIBC_TUNABLES" && v.to_string_lossy().contains("arena_max=1"))
        );
    }

    #[test]
    fn missing_program_is_a_clear_error() {
        let err = resolve_program(std::ffi::OsStr::new("no-such-program-xyz")).unwrap_err();
        assert!(
            err.to_string().contains("no-such-program-xyz: not found"),
            "{err}"
        );
    }

    #[test]
    fn output_dir_must_be_empty() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("x"), "").unwrap();
        let err = create_trace_dir(Some(dir.path()), Path::new("/bin/true")).unwrap_err();
        assert!(matches!(err, RecordError::TraceDirExists { .. }));
    }
}
