//! Helpers for the end-to-end tests: build the C programs under `tests/c`
//! with `rr-lite cc` (once per test binary), record them, read `dump --json`
//! back, and check that a recorded global order is a valid one.
//!
//! Every command runs with `RR_LITE_TRACE_DIR` and `XDG_CACHE_HOME` pointing
//! into cargo's target temporary directory, so the user's home is untouched.

#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::Value;

/// The rr-lite binary under test.
pub fn rr_lite() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_rr-lite"))
}

/// The directory of the C test programs.
pub fn c_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("c")
}

/// A scratch directory for this test process, under cargo's target tmpdir:
/// `rr-lite-tests/<pid>`. Directories left by earlier processes that are no
/// longer running are removed the first time.
pub fn scratch() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let base = Path::new(env!("CARGO_TARGET_TMPDIR")).join("rr-lite-tests");
        if let Ok(entries) = std::fs::read_dir(&base) {
            for entry in entries.flatten() {
                let name = entry.file_name();
                let alive = name
                    .to_str()
                    .and_then(|n| n.parse::<u32>().ok())
                    .is_some_and(|pid| Path::new("/proc").join(pid.to_string()).exists());
                if !alive {
                    let _ = std::fs::remove_dir_all(entry.path());
                }
            }
        }
        let dir = base.join(std::process::id().to_string());
        std::fs::create_dir_all(&dir).expect("create scratch dir");
        dir
    })
}

/// Where `rr-lite cc` installs its runtime during the tests (keyed by the
/// runtime's hash below it, as in the user's cache).
pub fn cache_home() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("rr-lite-cache")
}

/// A fresh temporary directory inside the scratch directory.
pub fn tempdir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("t")
        .tempdir_in(scratch())
        .expect("create temp dir")
}

/// An `rr-lite` command with the test environment.
pub fn rr_command() -> Command {
    let mut cmd = Command::new(rr_lite());
    cmd.env("RR_LITE_TRACE_DIR", scratch().join("default-traces"))
        .env("XDG_CACHE_HOME", cache_home())
        .env_remove("RR_LITE_MODE")
        .env_remove("RR_LITE_TRACE")
        .env_remove("RR_LITE_RUNTIME_DIR");
    cmd
}

/// Runs `rr-lite ARGS...` and returns its output.
pub fn rr<I, S>(args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    rr_command().args(args).output().expect("run rr-lite")
}

/// Status code of a finished process (128 + N when a signal N killed it).
pub fn status_code(out: &Output) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    match (out.status.code(), out.status.signal()) {
        (Some(c), _) => c,
        (None, Some(s)) => 128 + s,
        _ => -1,
    }
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A readable summary of a command's result, for assertion messages.
pub fn describe(what: &str, out: &Output) -> String {
    format!(
        "{what}: status {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        status_code(out),
        tail(&text(&out.stdout), 3000),
        tail(&text(&out.stderr), 3000)
    )
}

fn tail(s: &str, n: usize) -> &str {
    let start = s.len().saturating_sub(n);
    let start = (start..s.len())
        .find(|&i| s.is_char_boundary(i))
        .unwrap_or(s.len());
    &s[start..]
}

/// Panics, saying why, unless `tool --version` runs. A test that needs a
/// tool beyond gcc calls this first: build.rs has it ignored when the tool
/// was missing at build time, so getting here without the tool means
/// `require_env`=1 asked for it (or it was removed since the build).
pub fn require_tool(tool: &str, require_env: &str) {
    let runs = Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        runs,
        "{tool} is needed by this test and `{tool} --version` does not run: install it, \
         or unset {require_env} to have the tests that need it ignored"
    );
}

/// Compiles `tests/c/<name>.c` with `rr-lite cc -O2 -g -pthread` (and the
/// real compiler `compiler`, when given, through RR_LITE_CC) into the
/// scratch directory, once per test process; returns the executable.
pub fn build_with(name: &str, compiler: Option<&str>) -> PathBuf {
    type Slot = Arc<OnceLock<Result<PathBuf, String>>>;
    static BUILDS: OnceLock<Mutex<HashMap<String, Slot>>> = OnceLock::new();
    let key = format!("{name}@{}", compiler.unwrap_or("cc"));
    let slot = BUILDS
        .get_or_init(Default::default)
        .lock()
        .unwrap()
        .entry(key)
        .or_default()
        .clone();
    let result = slot.get_or_init(|| {
        let dir = scratch().join("bin").join(compiler.unwrap_or("default"));
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let exe = dir.join(name);
        let src = c_dir().join(format!("{name}.c"));
        let mut cmd = rr_command();
        cmd.arg("cc")
            .args(["-O2", "-g", "-pthread", "-Wall"])
            .arg(&src)
            .arg("-o")
            .arg(&exe);
        match compiler {
            Some(c) => cmd.env("RR_LITE_CC", c),
            None => cmd.env_remove("RR_LITE_CC"),
        };
        let out = cmd
            .output()
            .map_err(|e| format!("cannot run rr-lite cc: {e}"))?;
        if !out.status.success() || !exe.is_file() {
            return Err(describe(&format!("rr-lite cc {}", src.display()), &out));
        }
        Ok(exe)
    });
    match result {
        Ok(p) => p.clone(),
        Err(e) => panic!("building {name} failed:\n{e}"),
    }
}

/// The clang the clang tests use. build.rs probes for the same name: the
/// tests that need it are ignored when it is missing (see there).
#[allow(dead_code)]
pub const CLANG: &str = "clang-14";

/// Whether a compiler without OpenMP headers is an error (`.ci/run` sets it
/// once it has installed libomp for clang).
#[allow(dead_code)]
pub fn openmp_headers_required() -> bool {
    std::env::var_os("RR_LITE_REQUIRE_CLANG_OPENMP").is_some_and(|v| v == "1")
}

/// [`build_with`] the default compiler.
pub fn build(name: &str) -> PathBuf {
    build_with(name, None)
}

/// One recording: the trace directory (deleted with the value), and the
/// result of `rr-lite record`.
#[derive(Debug)]
pub struct Recorded {
    _tmp: tempfile::TempDir,
    pub trace: PathBuf,
    pub status: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Recorded {
    /// The trace's `header.json`, parsed.
    pub fn header(&self) -> serde_json::Value {
        let path = self.trace.join("header.json");
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    pub fn describe(&self) -> String {
        format!(
            "rr-lite record -o {}: status {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.trace.display(),
            self.status,
            tail(&self.stdout, 3000),
            tail(&self.stderr, 3000)
        )
    }

    /// The trace's events in the global order (`dump --json`); panics with
    /// the command's output if dump fails.
    pub fn events(&self) -> Vec<Event> {
        dump(&self.trace).unwrap_or_else(|e| panic!("{e}\n{}", self.describe()))
    }

    /// `info --json` of the trace.
    pub fn info(&self) -> Value {
        info(&self.trace).unwrap_or_else(|e| panic!("{e}\n{}", self.describe()))
    }
}

/// `rr-lite record -o <fresh dir> PROGRAM ARGS...`.
pub fn record(program: &Path, args: &[&str]) -> Recorded {
    let tmp = tempdir();
    let trace = tmp.path().join("trace");
    let out = rr_command()
        .arg("record")
        .arg("-o")
        .arg(&trace)
        .arg(program)
        .args(args)
        .output()
        .expect("run rr-lite record");
    Recorded {
        _tmp: tmp,
        trace,
        status: status_code(&out),
        stdout: text(&out.stdout),
        stderr: text(&out.stderr),
    }
}

/// One event of `dump --json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub seq: u64,
    pub thread: u32,
    pub index: u64,
    pub clock: u64,
    pub kind: String,
    pub access: String,
    pub addr: u64,
    pub size: u64,
    pub site: String,
    pub payload: Option<u64>,
    pub object: Option<String>,
}

impl Event {
    pub fn from_json(v: &Value) -> Result<Event, String> {
        let u = |k: &str| {
            v.get(k)
                .and_then(Value::as_u64)
                .ok_or_else(|| format!("event without a numeric {k:?}: {v}"))
        };
        let s = |k: &str| {
            v.get(k)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| format!("event without a string {k:?}: {v}"))
        };
        Ok(Event {
            seq: u("seq")?,
            thread: u32::try_from(u("thread")?).map_err(|e| e.to_string())?,
            index: u("index")?,
            clock: u("clock")?,
            kind: s("kind")?,
            access: s("access")?,
            addr: u("addr")?,
            size: u("size")?,
            site: s("site")?,
            payload: v.get("payload").and_then(Value::as_u64),
            object: v.get("object").and_then(Value::as_str).map(str::to_owned),
        })
    }

    /// A short description for error messages.
    pub fn short(&self) -> String {
        let mut s = format!(
            "#{} t{}:{} clock {} {} addr {:#x}",
            self.seq, self.thread, self.index, self.clock, self.kind, self.addr
        );
        if let Some(p) = self.payload {
            s.push_str(&format!(" payload {p}"));
        }
        s
    }
}

/// `rr-lite dump TRACE --json` (symbolised) parsed into events.
pub fn dump(trace: &Path) -> Result<Vec<Event>, String> {
    let out = rr_command()
        .arg("dump")
        .arg(trace)
        .arg("--json")
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(describe("rr-lite dump --json", &out));
    }
    let stdout = text(&out.stdout);
    stdout
        .lines()
        .map(|line| {
            let v: Value =
                serde_json::from_str(line).map_err(|e| format!("bad JSON line {line:?}: {e}"))?;
            Event::from_json(&v)
        })
        .collect()
}

/// `rr-lite info TRACE --json`.
pub fn info(trace: &Path) -> Result<Value, String> {
    let out = rr_command()
        .arg("info")
        .arg(trace)
        .arg("--json")
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(describe("rr-lite info --json", &out));
    }
    serde_json::from_str(&text(&out.stdout)).map_err(|e| format!("info --json is not JSON: {e}"))
}

/// Events of one kind.
pub fn of_kind<'a>(events: &'a [Event], kind: &'a str) -> impl Iterator<Item = &'a Event> + 'a {
    events.iter().filter(move |e| e.kind == kind)
}

pub fn count_kind(events: &[Event], kind: &str) -> usize {
    of_kind(events, kind).count()
}

/// Checks that a trace's global order is a valid one:
/// - seq is 0, 1, 2, ... in the order given;
/// - each thread's indices are 0, 1, 2, ... in seq order and its clocks
///   strictly increase;
/// - critical sections of one mutex (mutex-lock or successful
///   mutex-trylock, up to mutex-unlock) never overlap, and the unlocking
///   thread is the locking one; the same for spin locks; a read-write lock
///   has either one writer or any number of readers;
/// - every created thread's first event is its thread-start, which comes
///   after the thread-create naming it; nothing follows a thread-exit in
///   its thread;
/// - a thread-join comes after the joined thread's thread-exit;
/// - per barrier, a thread's k-th arrival is in round k, and every
///   departure of round k comes after every arrival of round k.
pub fn check_trace(events: &[Event]) -> Result<(), String> {
    check_numbering(events)?;
    check_locks(events)?;
    check_threads(events)?;
    check_barriers(events)
}

fn check_numbering(events: &[Event]) -> Result<(), String> {
    let mut next_index: BTreeMap<u32, u64> = BTreeMap::new();
    let mut last_clock: BTreeMap<u32, u64> = BTreeMap::new();
    for (i, e) in events.iter().enumerate() {
        if e.seq != i as u64 {
            return Err(format!(
                "seq is not contiguous from 0: position {i} has seq {} ({})",
                e.seq,
                e.short()
            ));
        }
        let want = next_index.entry(e.thread).or_insert(0);
        if e.index != *want {
            return Err(format!(
                "thread {} index out of order: expected index {}, found {}",
                e.thread,
                want,
                e.short()
            ));
        }
        *want += 1;
        if let Some(&prev) = last_clock.get(&e.thread)
            && e.clock <= prev
        {
            return Err(format!(
                "thread {} clock does not increase: {} after clock {prev}",
                e.thread,
                e.short()
            ));
        }
        last_clock.insert(e.thread, e.clock);
    }
    Ok(())
}

fn check_locks(events: &[Event]) -> Result<(), String> {
    let mut mutexes = ExclusiveLocks::new("mutex");
    let mut spins = ExclusiveLocks::new("spin lock");
    let mut rwlocks: HashMap<u64, RwState> = HashMap::new();
    for e in events {
        match e.kind.as_str() {
            "mutex-lock" => mutexes.acquire(e)?,
            "mutex-trylock" if e.payload == Some(0) => mutexes.acquire(e)?,
            "mutex-unlock" => mutexes.release(e)?,
            "spin-lock" if e.payload == Some(0) => spins.acquire(e)?,
            "spin-unlock" => spins.release(e)?,
            "rwlock-wrlock" if e.payload == Some(0) => {
                rwlocks.entry(e.addr).or_default().write_lock(e)?
            }
            "rwlock-rdlock" if e.payload == Some(0) => {
                rwlocks.entry(e.addr).or_default().read_lock(e)?
            }
            "rwlock-wrunlock" => rwlocks.entry(e.addr).or_default().write_unlock(e)?,
            "rwlock-rdunlock" => rwlocks.entry(e.addr).or_default().read_unlock(e)?,
            _ => {}
        }
    }
    Ok(())
}

/// Locks of one kind that one thread holds at a time (mutexes, spin locks):
/// address -> (holder, seq of the event that took it).
struct ExclusiveLocks {
    /// What the locks are, for messages.
    what: &'static str,
    held: HashMap<u64, (u32, u64)>,
}

impl ExclusiveLocks {
    fn new(what: &'static str) -> ExclusiveLocks {
        ExclusiveLocks {
            what,
            held: HashMap::new(),
        }
    }

    fn acquire(&mut self, e: &Event) -> Result<(), String> {
        if let Some((holder, since)) = self.held.get(&e.addr) {
            return Err(format!(
                "{} {:#x} acquired while held: {} while thread {holder} holds it since #{since}",
                self.what,
                e.addr,
                e.short()
            ));
        }
        self.held.insert(e.addr, (e.thread, e.seq));
        Ok(())
    }

    fn release(&mut self, e: &Event) -> Result<(), String> {
        match self.held.get(&e.addr) {
            Some(&(holder, _)) if holder == e.thread => {
                self.held.remove(&e.addr);
                Ok(())
            }
            Some(&(holder, since)) => Err(format!(
                "{} {:#x} released by a thread that does not hold it: {} (held by thread {holder} since #{since})",
                self.what,
                e.addr,
                e.short()
            )),
            None => Err(format!(
                "{} {:#x} released while not held: {}",
                self.what,
                e.addr,
                e.short()
            )),
        }
    }
}

/// One read-write lock: one writer or any number of readers (a thread may
/// hold several read locks).
#[derive(Default)]
struct RwState {
    writer: Option<u32>,
    /// Reader -> how many read locks it holds.
    readers: BTreeMap<u32, u32>,
}

impl RwState {
    fn write_lock(&mut self, e: &Event) -> Result<(), String> {
        if self.writer.is_some() || !self.readers.is_empty() {
            return Err(format!(
                "rwlock {:#x} write-locked while held (writer {:?}, readers {:?}): {}",
                e.addr,
                self.writer,
                self.readers.keys().collect::<Vec<_>>(),
                e.short()
            ));
        }
        self.writer = Some(e.thread);
        Ok(())
    }

    fn read_lock(&mut self, e: &Event) -> Result<(), String> {
        if let Some(w) = self.writer {
            return Err(format!(
                "rwlock {:#x} read-locked while thread {w} holds it for writing: {}",
                e.addr,
                e.short()
            ));
        }
        *self.readers.entry(e.thread).or_insert(0) += 1;
        Ok(())
    }

    fn write_unlock(&mut self, e: &Event) -> Result<(), String> {
        if self.writer != Some(e.thread) {
            return Err(format!(
                "rwlock {:#x} write-unlocked by a thread that is not its writer ({:?}): {}",
                e.addr,
                self.writer,
                e.short()
            ));
        }
        self.writer = None;
        Ok(())
    }

    fn read_unlock(&mut self, e: &Event) -> Result<(), String> {
        match self.readers.get_mut(&e.thread) {
            Some(n) if *n > 1 => *n -= 1,
            Some(_) => {
                self.readers.remove(&e.thread);
            }
            None => {
                return Err(format!(
                    "rwlock {:#x} read-unlocked by a thread that holds no read lock: {}",
                    e.addr,
                    e.short()
                ));
            }
        }
        Ok(())
    }
}

fn check_threads(events: &[Event]) -> Result<(), String> {
    let mut created: HashMap<u64, u64> = HashMap::new();
    let mut exited: HashMap<u32, u64> = HashMap::new();
    // Threads whose one event allowed after the exit (their stack handed
    // back to glibc's cache) was seen.
    let mut ended: HashMap<u32, ()> = HashMap::new();
    let mut seen: HashMap<u32, ()> = HashMap::new();
    for e in events {
        if let Some(&exit_seq) = exited.get(&e.thread) {
            if e.kind == "thread-stacks" && ended.insert(e.thread, ()).is_none() {
                continue;
            }
            return Err(format!(
                "thread {} has an event after its thread-exit (#{exit_seq}): {}",
                e.thread,
                e.short()
            ));
        }
        let first = seen.insert(e.thread, ()).is_none();
        if e.kind == "thread-start" && !first {
            return Err(format!(
                "thread-start is not the thread's first event: {}",
                e.short()
            ));
        }
        if first && e.thread != 0 {
            if e.kind != "thread-start" {
                return Err(format!(
                    "thread {}'s first event is not thread-start: {}",
                    e.thread,
                    e.short()
                ));
            }
            if !created.contains_key(&u64::from(e.thread)) {
                return Err(format!(
                    "thread {} starts before any thread-create with payload {}: {}",
                    e.thread,
                    e.thread,
                    e.short()
                ));
            }
        }
        match e.kind.as_str() {
            "thread-create" => {
                let child = e
                    .payload
                    .ok_or_else(|| format!("thread-create without payload: {}", e.short()))?;
                if let Some(prev) = created.insert(child, e.seq) {
                    return Err(format!(
                        "thread {child} created twice (#{prev} and {})",
                        e.short()
                    ));
                }
            }
            "thread-exit" => {
                exited.insert(e.thread, e.seq);
            }
            "thread-join" => {
                let joined = e
                    .payload
                    .ok_or_else(|| format!("thread-join without payload: {}", e.short()))?;
                let joined = u32::try_from(joined).map_err(|e| e.to_string())?;
                if !exited.contains_key(&joined) {
                    return Err(format!(
                        "thread-join of thread {joined} before its thread-exit: {}",
                        e.short()
                    ));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

fn check_barriers(events: &[Event]) -> Result<(), String> {
    // (barrier, thread) -> arrivals and departures so far.
    let mut arrivals: HashMap<(u64, u32), usize> = HashMap::new();
    let mut departures: HashMap<(u64, u32), usize> = HashMap::new();
    // (barrier, round) -> the round's first departure.
    let mut first_departure: HashMap<(u64, usize), &Event> = HashMap::new();
    for e in events {
        match e.kind.as_str() {
            "barrier-arrive" => {
                let n = arrivals.entry((e.addr, e.thread)).or_insert(0);
                let round = *n;
                *n += 1;
                if let Some(d) = first_departure.get(&(e.addr, round)) {
                    return Err(format!(
                        "barrier {:#x} round {round}: arrival {} after departure {}",
                        e.addr,
                        e.short(),
                        d.short()
                    ));
                }
            }
            "barrier-depart" => {
                let n = departures.entry((e.addr, e.thread)).or_insert(0);
                let round = *n;
                *n += 1;
                let arrived = arrivals.get(&(e.addr, e.thread)).copied().unwrap_or(0);
                if arrived <= round {
                    return Err(format!(
                        "barrier {:#x}: departure from round {round} without an arrival: {}",
                        e.addr,
                        e.short()
                    ));
                }
                first_departure.entry((e.addr, round)).or_insert(e);
            }
            _ => {}
        }
    }
    Ok(())
}

/// Compiles `tests/c/<name>.c` like [`build`], with `extra` flags (e.g.
/// `-DCHANGED`), into its own directory named by `variant`, once per test
/// process; returns the executable.
pub fn build_variant(name: &str, variant: &str, extra: &[&str]) -> PathBuf {
    build_variant_with(name, variant, extra, None).unwrap_or_else(|e| panic!("{e}"))
}

/// [`build_variant`] with the real compiler `compiler` (through
/// RR_LITE_CC) when given; the compiler's complaint if it fails.
pub fn build_variant_with(
    name: &str,
    variant: &str,
    extra: &[&str],
    compiler: Option<&str>,
) -> Result<PathBuf, String> {
    static BUILDS: OnceLock<Mutex<HashMap<String, PathBuf>>> = OnceLock::new();
    let key = format!("{name}@{variant}");
    let mut builds = BUILDS.get_or_init(Default::default).lock().unwrap();
    if let Some(p) = builds.get(&key) {
        return Ok(p.clone());
    }
    let dir = scratch().join("bin").join(format!("variant-{variant}"));
    std::fs::create_dir_all(&dir).expect("create build dir");
    let exe = dir.join(name);
    let src = c_dir().join(format!("{name}.c"));
    let mut cmd = rr_command();
    match compiler {
        Some(c) => cmd.env("RR_LITE_CC", c),
        None => cmd.env_remove("RR_LITE_CC"),
    };
    let out = cmd
        .arg("cc")
        .args(["-O2", "-g", "-pthread", "-Wall"])
        .args(extra)
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("run rr-lite cc");
    if !out.status.success() || !exe.is_file() {
        return Err(describe(
            &format!("rr-lite cc {extra:?} {}", src.display()),
            &out,
        ));
    }
    builds.insert(key, exe.clone());
    Ok(exe)
}

/// Runs `cmd` in its own process group with piped output; if it has not
/// finished after `limit`, kills the whole group (the command and what it
/// started) and returns an error with what it printed so far.
pub fn output_within(cmd: &mut Command, limit: std::time::Duration) -> Result<Output, String> {
    use std::io::Read;
    use std::os::unix::process::CommandExt;
    use std::process::Stdio;
    use std::time::Instant;

    let mut child = cmd
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {cmd:?}: {e}"))?;
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut buf);
            }
            buf
        })
    };
    let stdout = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let started = Instant::now();
    let pid = child.id() as i32;
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        if started.elapsed() > limit {
            timed_out = true;
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
            break child.wait().map_err(|e| e.to_string())?;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    // The pipes close when the group is gone (killed above, or finished).
    let out = Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    };
    if timed_out {
        return Err(describe(
            &format!("{cmd:?} did not finish within {limit:?} (killed)"),
            &out,
        ));
    }
    Ok(out)
}

/// `rr-lite record -o <fresh dir> PROGRAM ARGS...`, killed (and the test
/// failed) if it takes longer than `limit`.
pub fn record_within(program: &Path, args: &[&str], limit: std::time::Duration) -> Recorded {
    record_with_options(&[], program, args, limit)
}

/// [`record_within`] with `options` for `rr-lite record` itself.
pub fn record_with_options(
    options: &[&str],
    program: &Path,
    args: &[&str],
    limit: std::time::Duration,
) -> Recorded {
    let tmp = tempdir();
    let trace = tmp.path().join("trace");
    let mut cmd = rr_command();
    cmd.arg("record")
        .args(options)
        .arg("-o")
        .arg(&trace)
        .arg(program)
        .args(args);
    let out = output_within(&mut cmd, limit).unwrap_or_else(|e| panic!("recording hangs: {e}"));
    Recorded {
        _tmp: tmp,
        trace,
        status: status_code(&out),
        stdout: text(&out.stdout),
        stderr: text(&out.stderr),
    }
}

/// How a replay that built the trace's plans starts its notes
/// (`src/replay_cmd.rs`): what would make replays faster, no complaint.
pub const PLANS_BUILT_NOTE: &str = "rr-lite: note: this replay built the trace's plans.";

/// Whether rr-lite said anything of its own on `stderr` but the note of a
/// replay that built the plans.
pub fn rr_lite_complained(stderr: &str) -> bool {
    stderr
        .lines()
        .filter(|l| !l.starts_with(PLANS_BUILT_NOTE))
        .any(|l| l.contains("rr-lite:"))
}

#[cfg(test)]
mod checker_tests {
    use super::*;

    /// Builds a trace from (thread, kind, addr, payload), numbering seq,
    /// index and clock as a recorder would.
    fn trace(spec: &[(u32, &str, u64, Option<u64>)]) -> Vec<Event> {
        let mut index: HashMap<u32, u64> = HashMap::new();
        spec.iter()
            .enumerate()
            .map(|(i, &(thread, kind, addr, payload))| {
                let idx = index.entry(thread).or_insert(0);
                let e = Event {
                    seq: i as u64,
                    thread,
                    index: *idx,
                    clock: i as u64 + 1,
                    kind: kind.to_string(),
                    access: "rmw".into(),
                    addr,
                    size: 0,
                    site: "?".into(),
                    payload,
                    object: None,
                };
                *idx += 1;
                e
            })
            .collect()
    }

    /// `trace` after threads 1 and 2 were created and started.
    fn started(spec: &[(u32, &str, u64, Option<u64>)]) -> Vec<Event> {
        let mut all = vec![
            (0, "thread-create", 1, Some(1)),
            (1, "thread-start", 1, None),
            (0, "thread-create", 2, Some(2)),
            (2, "thread-start", 2, None),
        ];
        all.extend_from_slice(spec);
        trace(&all)
    }

    const M: u64 = 0x1000;
    const B: u64 = 0x2000;

    fn good() -> Vec<Event> {
        trace(&[
            (0, "thread-create", 1, Some(1)),
            (1, "thread-start", 1, None),
            (0, "thread-create", 2, Some(2)),
            (2, "thread-start", 2, None),
            (1, "mutex-lock", M, None),
            (1, "write", 0x3000, None),
            (1, "mutex-unlock", M, None),
            (2, "mutex-trylock", M, Some(0)),
            (2, "mutex-unlock", M, None),
            (1, "barrier-arrive", B, None),
            (2, "barrier-arrive", B, None),
            (2, "barrier-depart", B, Some(0)),
            (1, "barrier-depart", B, Some(1)),
            (1, "mutex-trylock", M, Some(16)),
            (1, "thread-exit", 1, None),
            (2, "thread-exit", 2, None),
            (0, "thread-join", 1, Some(1)),
            (0, "thread-join", 2, Some(2)),
        ])
    }

    fn expect_err(events: &[Event], needle: &str) {
        match check_trace(events) {
            Ok(()) => panic!("checker accepted a bad trace (expected {needle:?})"),
            Err(e) => assert!(
                e.contains(needle),
                "error {e:?} does not mention {needle:?}"
            ),
        }
    }

    #[test]
    fn accepts_a_good_trace() {
        check_trace(&good()).unwrap();
    }

    #[test]
    fn rejects_duplicate_and_missing_seq() {
        let mut t = good();
        t[3].seq = 2;
        expect_err(&t, "seq is not contiguous");
        let mut t = good();
        t.remove(5);
        expect_err(&t, "seq is not contiguous");
        let mut t = good();
        for e in &mut t {
            e.seq += 1;
        }
        expect_err(&t, "seq is not contiguous");
    }

    #[test]
    fn rejects_bad_indices_and_clocks() {
        let mut t = good();
        t[5].index = 7;
        expect_err(&t, "index out of order");
        // Two events of thread 1 swapped in the global order.
        let mut t = good();
        t.swap(4, 5);
        t[4].seq = 4;
        t[5].seq = 5;
        expect_err(&t, "index out of order");
        let mut t = good();
        t[6].clock = t[5].clock;
        expect_err(&t, "clock does not increase");
    }

    #[test]
    fn rejects_overlapping_critical_sections() {
        let t = started(&[
            (0, "mutex-lock", M, None),
            (1, "mutex-lock", M, None),
            (0, "mutex-unlock", M, None),
            (1, "mutex-unlock", M, None),
        ]);
        expect_err(&t, "acquired while held");
        let t = started(&[(0, "mutex-lock", M, None), (1, "mutex-trylock", M, Some(0))]);
        expect_err(&t, "acquired while held");
        let t = started(&[(0, "mutex-lock", M, None), (1, "mutex-unlock", M, None)]);
        expect_err(&t, "does not hold it");
        let t = started(&[(0, "mutex-unlock", M, None)]);
        expect_err(&t, "released while not held");
        // A failed trylock does not take the mutex, so this unlock is bad.
        let t = started(&[
            (0, "mutex-trylock", M, Some(16)),
            (0, "mutex-unlock", M, None),
        ]);
        expect_err(&t, "released while not held");
        let t = started(&[(0, "spin-lock", M, Some(0)), (1, "spin-lock", M, Some(0))]);
        expect_err(&t, "spin lock");
    }

    #[test]
    fn checks_rwlocks() {
        let ok = started(&[
            (0, "rwlock-rdlock", M, Some(0)),
            (1, "rwlock-rdlock", M, Some(0)),
            (1, "rwlock-wrlock", M, Some(16)),
            (0, "rwlock-rdunlock", M, None),
            (1, "rwlock-rdunlock", M, None),
            (1, "rwlock-wrlock", M, Some(0)),
            (1, "rwlock-wrunlock", M, None),
        ]);
        check_trace(&ok).unwrap();
        let t = started(&[
            (0, "rwlock-rdlock", M, Some(0)),
            (1, "rwlock-wrlock", M, Some(0)),
        ]);
        expect_err(&t, "write-locked while held");
        let t = started(&[
            (0, "rwlock-wrlock", M, Some(0)),
            (1, "rwlock-rdlock", M, Some(0)),
        ]);
        expect_err(&t, "read-locked while thread 0 holds it");
        let t = started(&[(1, "rwlock-rdunlock", M, None)]);
        expect_err(&t, "holds no read lock");
    }

    #[test]
    fn rejects_bad_thread_starts() {
        let t = trace(&[
            (1, "thread-start", 1, None),
            (0, "thread-create", 1, Some(1)),
        ]);
        expect_err(&t, "starts before any thread-create");
        let t = trace(&[(0, "thread-create", 1, Some(1)), (1, "write", 0x3000, None)]);
        expect_err(&t, "first event is not thread-start");
        let t = trace(&[
            (0, "thread-create", 2, Some(2)),
            (1, "thread-start", 1, None),
        ]);
        expect_err(&t, "starts before any thread-create with payload 1");
        let t = trace(&[
            (0, "thread-create", 1, Some(1)),
            (1, "thread-start", 1, None),
            (1, "thread-start", 1, None),
        ]);
        expect_err(&t, "not the thread's first event");
    }

    #[test]
    fn rejects_join_before_exit_and_events_after_exit() {
        let t = trace(&[
            (0, "thread-create", 1, Some(1)),
            (1, "thread-start", 1, None),
            (0, "thread-join", 1, Some(1)),
            (1, "thread-exit", 1, None),
        ]);
        expect_err(&t, "before its thread-exit");
        let t = trace(&[
            (0, "thread-create", 1, Some(1)),
            (1, "thread-start", 1, None),
            (1, "thread-exit", 1, None),
            (1, "write", 0x3000, None),
        ]);
        expect_err(&t, "after its thread-exit");
    }

    #[test]
    fn rejects_early_barrier_departure() {
        let t = started(&[
            (1, "barrier-arrive", B, None),
            (1, "barrier-depart", B, Some(0)),
            (2, "barrier-arrive", B, None),
            (2, "barrier-depart", B, Some(1)),
        ]);
        expect_err(&t, "after departure");
        // Second round: thread 2's second arrival comes after thread 1 left
        // the second round.
        let t = started(&[
            (1, "barrier-arrive", B, None),
            (2, "barrier-arrive", B, None),
            (1, "barrier-depart", B, Some(0)),
            (2, "barrier-depart", B, Some(1)),
            (1, "barrier-arrive", B, None),
            (1, "barrier-depart", B, Some(0)),
            (2, "barrier-arrive", B, None),
        ]);
        expect_err(&t, "round 1");
        let t = started(&[(1, "barrier-depart", B, Some(0))]);
        expect_err(&t, "without an arrival");
    }
}
