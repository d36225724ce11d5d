//! Symbolises call sites. The runtime logs each event's site as an absolute
//! return address and copies `/proc/self/maps` into the trace; this crate
//! turns an address into module + offset (stable across runs) and, when the
//! module has debug information, into a demangled function name and
//! file:line (via addr2line, which demangles Rust and C++ names).

#![forbid(unsafe_code)]

mod section_code;

pub use section_code::{ALLOWED, EVENTFUL, SectionCode};

use std::collections::HashMap;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// A problem reading the module map.
#[derive(Debug, thiserror::Error)]
pub enum SymbolsError {
    #[error("cannot read {}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}:{line}: not a /proc/PID/maps line: {text:?}", path.display())]
    BadLine {
        path: PathBuf,
        line: usize,
        text: String,
    },
}

/// One file-backed mapping of the recorded process.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Mapping {
    start: u64,
    end: u64,
    file_offset: u64,
    path: PathBuf,
}

/// The recorded process's modules.
#[derive(Debug, Default)]
pub struct ModuleMap {
    mappings: Vec<Mapping>,
    /// Lowest address each module is mapped at (its load base).
    bases: HashMap<PathBuf, u64>,
}

/// Where a site is: module path and offset from the module's load base.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleOffset {
    pub module: PathBuf,
    pub offset: u64,
}

fn parse_line(line: &[u8]) -> Option<Option<Mapping>> {
    // Five fields, then the path: any bytes (a file name need not be
    // UTF-8), spaces included.
    let mut rest = line;
    let mut field = || {
        let start = rest.iter().position(|b| !b.is_ascii_whitespace())?;
        let len = rest[start..]
            .iter()
            .position(u8::is_ascii_whitespace)
            .unwrap_or(rest.len() - start);
        let text = std::str::from_utf8(&rest[start..start + len]).ok();
        rest = &rest[start + len..];
        text
    };
    let (range, _perms, offset) = (field()?, field()?, field()?);
    let (_dev, _inode) = (field()?, field()?);
    let (start, end) = range.split_once('-')?;
    let start = u64::from_str_radix(start, 16).ok()?;
    let end = u64::from_str_radix(end, 16).ok()?;
    let file_offset = u64::from_str_radix(offset, 16).ok()?;
    let path = rest.trim_ascii();
    if !path.starts_with(b"/") {
        return Some(None); // anonymous, [heap], [stack], [vdso]...
    }
    Some(Some(Mapping {
        start,
        end,
        file_offset,
        path: PathBuf::from(std::ffi::OsStr::from_bytes(path)),
    }))
}

/// Largest module map read.
pub const MAPS_LIMIT: u64 = 64 << 20;

fn read_bounded(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::{Error, ErrorKind, Read};
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(Error::new(ErrorKind::InvalidData, "not a regular file"));
    }
    let mut text = Vec::new();
    std::fs::File::open(path)?
        .take(MAPS_LIMIT + 1)
        .read_to_end(&mut text)?;
    if text.len() as u64 > MAPS_LIMIT {
        return Err(Error::new(
            ErrorKind::InvalidData,
            format!("more than the {MAPS_LIMIT} bytes a module map may have"),
        ));
    }
    Ok(text)
}

impl ModuleMap {
    /// Parses a copy of `/proc/PID/maps`.
    pub fn parse(text: &str, path_for_errors: &Path) -> Result<ModuleMap, SymbolsError> {
        ModuleMap::parse_bytes(text.as_bytes(), path_for_errors)
    }

    /// [`ModuleMap::parse`] of bytes (paths in a module map need not be
    /// UTF-8).
    pub fn parse_bytes(text: &[u8], path_for_errors: &Path) -> Result<ModuleMap, SymbolsError> {
        let mut map = ModuleMap::default();
        for (n, line) in text.split(|&b| b == b'\n').enumerate() {
            if line.trim_ascii().is_empty() {
                continue;
            }
            match parse_line(line) {
                Some(Some(m)) => {
                    let base = map.bases.entry(m.path.clone()).or_insert(m.start);
                    if m.file_offset == 0 {
                        *base = (*base).min(m.start);
                    }
                    map.mappings.push(m);
                }
                Some(None) => {}
                None => {
                    return Err(SymbolsError::BadLine {
                        path: path_for_errors.to_path_buf(),
                        line: n + 1,
                        text: String::from_utf8_lossy(line).into_owned(),
                    });
                }
            }
        }
        map.mappings.sort_by_key(|m| m.start);
        Ok(map)
    }

    /// Reads a trace's `maps` file; a missing file gives an empty map. Only
    /// a regular file of at most [`MAPS_LIMIT`] bytes is read (a trace may
    /// come from someone else: a link to `/dev/zero` would never end).
    pub fn read(path: &Path) -> Result<ModuleMap, SymbolsError> {
        match read_bounded(path) {
            Ok(text) => ModuleMap::parse_bytes(&text, path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(ModuleMap::default()),
            Err(source) => Err(SymbolsError::Io {
                path: path.to_path_buf(),
                source,
            }),
        }
    }

    /// The files mapped, once each, in address order.
    pub fn files(&self) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = Vec::new();
        for m in &self.mappings {
            if !files.contains(&m.path) {
                files.push(m.path.clone());
            }
        }
        files
    }

    /// The module containing `addr` and the offset from its load base.
    pub fn locate(&self, addr: u64) -> Option<ModuleOffset> {
        let i = self.mappings.partition_point(|m| m.start <= addr);
        let m = self.mappings.get(i.checked_sub(1)?)?;
        if addr >= m.end {
            return None;
        }
        let base = self.bases.get(&m.path).copied().unwrap_or(m.start);
        Some(ModuleOffset {
            module: m.path.clone(),
            offset: addr - base,
        })
    }
}

/// The data objects a module's symbol table names, as `(offset from the
/// load base, size, demangled name)`, sorted (none if it cannot be read).
fn data_symbols_of(path: &Path) -> Vec<(u64, u64, String)> {
    use object::{Object, ObjectSymbol, SymbolKind};
    let Ok(bytes) = std::fs::read(path) else {
        return Vec::new();
    };
    let Ok(file) = object::File::parse(&*bytes) else {
        return Vec::new();
    };
    // Offsets are from the load base: a position-dependent executable's
    // symbols are absolute, from its lowest segment.
    let base = file
        .segments()
        .map(|s| object::ObjectSegment::address(&s))
        .min()
        .unwrap_or(0);
    let mut symbols: Vec<(u64, u64, String)> = file
        .symbols()
        .filter(|s| s.kind() == SymbolKind::Data && s.size() > 0)
        .filter_map(|s| {
            let name = s.name().ok()?;
            // Only mangled names: a C variable `a` would read as the
            // Itanium type `signed char`.
            let name = if name.starts_with("_Z") || name.starts_with("_R") {
                addr2line::demangle_auto(name.into(), None).into_owned()
            } else {
                name.to_string()
            };
            Some((s.address().saturating_sub(base), s.size(), name))
        })
        .collect();
    symbols.sort();
    symbols
}

/// A symbolised site.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Site {
    pub location: Option<ModuleOffset>,
    pub function: Option<String>,
    pub file: Option<String>,
    pub line: Option<u32>,
}

impl std::fmt::Display for Site {
    /// `function (file:line)`, falling back to `module+0xoffset`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let module = || {
            self.location.as_ref().map(|l| {
                let name = l.module.file_name().unwrap_or_default().to_string_lossy();
                format!("{name}+{:#x}", l.offset)
            })
        };
        match (&self.function, &self.file, self.line) {
            (Some(func), Some(file), Some(line)) => {
                let file = Path::new(file)
                    .file_name()
                    .map_or(file.clone(), |n| n.to_string_lossy().into());
                write!(f, "{func} ({file}:{line})")
            }
            (Some(func), _, _) => write!(f, "{func} ({})", module().unwrap_or_default()),
            _ => write!(f, "{}", module().unwrap_or_else(|| "?".into())),
        }
    }
}

/// Symbolises addresses of one trace, caching loaded modules and results.
pub struct Symbolizer {
    map: ModuleMap,
    /// Modules read from another file than the recorded path (a packed
    /// trace's copies).
    copies: HashMap<PathBuf, PathBuf>,
    loaders: HashMap<PathBuf, Option<addr2line::Loader>>,
    cache: HashMap<u64, Site>,
    /// Each module's data symbols: (offset from its load base, size, name),
    /// sorted.
    data_symbols: HashMap<PathBuf, Vec<(u64, u64, String)>>,
}

impl std::fmt::Debug for Symbolizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Symbolizer")
            .field("map", &self.map)
            .finish_non_exhaustive()
    }
}

impl Symbolizer {
    pub fn new(map: ModuleMap) -> Symbolizer {
        Symbolizer {
            map,
            copies: HashMap::new(),
            loaders: HashMap::new(),
            data_symbols: HashMap::new(),
            cache: HashMap::new(),
        }
    }

    /// Reads the module recorded at `recorded` from `copy` (the same bytes,
    /// elsewhere: a packed trace's copy of a program deleted since).
    pub fn read_module_from(&mut self, recorded: PathBuf, copy: PathBuf) {
        self.copies.insert(recorded, copy);
    }

    /// The global variable holding `addr`, as `(name, offset into it)`, from
    /// the symbol table of the module mapped there.
    pub fn variable(&mut self, addr: u64) -> Option<(String, u64)> {
        let loc = self.map.locate(addr)?;
        let file = self.copies.get(&loc.module).unwrap_or(&loc.module).clone();
        let symbols = self
            .data_symbols
            .entry(loc.module.clone())
            .or_insert_with(|| data_symbols_of(&file));
        let i = symbols.partition_point(|s| s.0 <= loc.offset);
        let (start, size, name) = symbols.get(i.checked_sub(1)?)?;
        (loc.offset < start + size.max(&1)).then(|| (name.clone(), loc.offset - start))
    }

    /// Symbolises a return address (the site of a hook call): the call
    /// instruction is the byte before it.
    pub fn site(&mut self, return_address: u64) -> Site {
        self.cached(return_address.saturating_sub(1))
    }

    /// Symbolises an exact instruction or function address (a thread's
    /// start routine, a faulting instruction).
    pub fn code_at(&mut self, addr: u64) -> Site {
        self.cached(addr)
    }

    fn cached(&mut self, probe: u64) -> Site {
        if let Some(site) = self.cache.get(&probe) {
            return site.clone();
        }
        let site = self.resolve(probe);
        self.cache.insert(probe, site.clone());
        site
    }

    fn resolve(&mut self, addr: u64) -> Site {
        let location = self.map.locate(addr);
        let mut site = Site {
            location: location.clone(),
            function: None,
            file: None,
            line: None,
        };
        let Some(loc) = location else { return site };
        let file = self.copies.get(&loc.module).unwrap_or(&loc.module);
        let loader = self
            .loaders
            .entry(loc.module.clone())
            .or_insert_with(|| addr2line::Loader::new(file).ok());
        let Some(loader) = loader else { return site };
        // Offsets are from the load base; the ELF's addresses start at its
        // lowest segment address (0 for PIE and shared objects).
        let probe = loc.offset + loader.relative_address_base();
        if let Ok(mut frames) = loader.find_frames(probe) {
            // The innermost frame is the inlined function the access is in.
            if let Ok(Some(frame)) = frames.next() {
                site.function = frame
                    .function
                    .as_ref()
                    .and_then(|f| f.demangle().ok())
                    .map(|n| n.into_owned());
                if let Some(l) = frame.location {
                    site.file = l.file.map(str::to_string);
                    site.line = l.line;
                }
            }
        }
        if site.function.is_none() {
            site.function = loader
                .find_symbol(probe)
                .map(|s| addr2line::demangle_auto(s.into(), None).into_owned());
        }
        site
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAPS: &str = "\
555555554000-555555555000 r--p 00000000 fe:01 123 /tmp/prog
555555555000-555555556000 r-xp 00001000 fe:01 123 /tmp/prog
7ffff7c00000-7ffff7c28000 r--p 00000000 fe:01 456 /usr/lib/x86_64-linux-gnu/libc.so.6
7ffff7fc3000-7ffff7fc7000 r--p 00000000 00:00 0                          [vvar]
7ffffffde000-7ffffffff000 rw-p 00000000 00:00 0                          [stack]
";

    #[test]
    fn locates_module_and_offset() {
        let map = ModuleMap::parse(MAPS, Path::new("maps")).unwrap();
        let loc = map.locate(0x5555_5555_5123).unwrap();
        assert_eq!(loc.module, PathBuf::from("/tmp/prog"));
        assert_eq!(loc.offset, 0x1123);
        assert_eq!(map.locate(0x7fff_ffff_0000), None);
        assert_eq!(map.locate(0x10), None);
    }

    #[test]
    fn bad_line_is_reported_with_its_number() {
        let err = ModuleMap::parse("zzz\n", Path::new("m")).unwrap_err();
        assert!(err.to_string().contains("m:1"), "{err}");
    }

    #[test]
    fn unknown_module_falls_back_to_offset() {
        let map = ModuleMap::parse(MAPS, Path::new("maps")).unwrap();
        let mut s = Symbolizer::new(map);
        assert_eq!(s.code_at(0x5555_5555_5123).to_string(), "prog+0x1123");
        assert_eq!(s.site(0x5555_5555_5123).to_string(), "prog+0x1122");
        assert_eq!(s.site(0x1).to_string(), "?");
    }
}
