//! The dependency rules of ARCHITECTURE.md ("Crates and who may depend on
//! whom"), checked against the workspace as it is: `cargo metadata` for the
//! declared dependencies, the crate roots' text for `#![forbid(unsafe_code)]`.
//! A forbidden edge fails here, before it spreads.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// The root package: the CLI.
const ROOT: &str = "rr-lite";
/// The injected runtime: a shared library, the only crate with `unsafe`.
const RUNTIME: &str = "rr-lite-runtime";

/// Each workspace crate and the workspace crates it may depend on: the
/// table of ARCHITECTURE.md (`architecture_md_has_the_same_table` keeps the
/// two equal).
const ALLOWED: &[(&str, &[&str])] = &[
    ("rr-lite-trace", &[]),
    ("rr-lite-runtime", &["rr-lite-trace"]),
    ("rr-lite-symbols", &[]),
    ("rr-lite-supervise", &[]),
    ("rr-lite-recorder", &["rr-lite-trace", "rr-lite-supervise"]),
    ("rr-lite-splitter", &["rr-lite-trace"]),
    (
        "rr-lite-replayer",
        &[
            "rr-lite-trace",
            "rr-lite-splitter",
            "rr-lite-supervise",
            "rr-lite-symbols",
        ],
    ),
    (
        ROOT,
        &[
            "rr-lite-trace",
            "rr-lite-symbols",
            "rr-lite-supervise",
            "rr-lite-recorder",
            "rr-lite-splitter",
            "rr-lite-replayer",
        ],
    ),
];

/// One workspace package, as `cargo metadata` describes it.
struct Package {
    name: String,
    /// (dependency name, kind: "normal", "dev" or "build").
    dependencies: Vec<(String, String)>,
    /// Source files of the library and binary targets.
    crate_roots: Vec<PathBuf>,
}

fn workspace_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The workspace's packages, from `cargo metadata --no-deps --offline`
/// (declared dependencies only: no resolution, no network, a few ms).
fn workspace_packages() -> Vec<Package> {
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(workspace_root())
        .output()
        .expect("run cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let metadata: Value = serde_json::from_slice(&out.stdout).expect("cargo metadata's JSON");
    let members: BTreeSet<&str> = metadata["workspace_members"]
        .as_array()
        .expect("workspace_members")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let str_of = |v: &Value, what: &str| -> String {
        v.as_str()
            .unwrap_or_else(|| panic!("cargo metadata: no {what} in {v}"))
            .to_owned()
    };
    metadata["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .filter(|p| p["id"].as_str().is_some_and(|id| members.contains(id)))
        .map(|p| Package {
            name: str_of(&p["name"], "name"),
            dependencies: p["dependencies"]
                .as_array()
                .expect("dependencies")
                .iter()
                .map(|d| {
                    let kind = d["kind"].as_str().unwrap_or("normal").to_owned();
                    (str_of(&d["name"], "dependency name"), kind)
                })
                .collect(),
            crate_roots: p["targets"]
                .as_array()
                .expect("targets")
                .iter()
                .filter(|t| {
                    t["kind"].as_array().is_some_and(|kinds| {
                        kinds.iter().any(|k| {
                            ["lib", "rlib", "cdylib", "dylib", "staticlib", "bin"]
                                .contains(&k.as_str().unwrap_or(""))
                        })
                    })
                })
                .map(|t| PathBuf::from(str_of(&t["src_path"], "src_path")))
                .collect(),
        })
        .collect()
}

fn allowed() -> BTreeMap<&'static str, BTreeSet<&'static str>> {
    ALLOWED
        .iter()
        .map(|&(name, deps)| (name, deps.iter().copied().collect()))
        .collect()
}

/// Whether a dependency of this kind is part of what the crate ships
/// (dev-dependencies only build its tests).
fn ships(kind: &str) -> bool {
    kind != "dev"
}

#[test]
fn every_crate_depends_only_on_the_crates_its_row_allows() {
    let allowed = allowed();
    let packages = workspace_packages();
    let names: BTreeSet<&str> = packages.iter().map(|p| p.name.as_str()).collect();
    let mut problems = Vec::new();
    for p in &packages {
        let Some(may) = allowed.get(p.name.as_str()) else {
            problems.push(format!(
                "{} is not in the table (add its row to ARCHITECTURE.md and to ALLOWED here)",
                p.name
            ));
            continue;
        };
        for (dep, kind) in &p.dependencies {
            if names.contains(dep.as_str()) && ships(kind) && !may.contains(dep.as_str()) {
                problems.push(format!("{} depends on {dep} ({kind})", p.name));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "dependencies ARCHITECTURE.md does not allow:\n{}",
        problems.join("\n")
    );
}

#[test]
fn nothing_depends_on_the_runtime_as_a_rust_crate() {
    let offenders: Vec<String> = workspace_packages()
        .iter()
        .flat_map(|p| {
            p.dependencies
                .iter()
                .filter(|(dep, _)| dep == RUNTIME)
                .map(move |(_, kind)| format!("{} ({kind})", p.name))
        })
        .collect();
    assert!(
        offenders.is_empty(),
        "{RUNTIME} reaches programs as a shared library, yet these depend on it: {offenders:?}"
    );
}

/// The library crates that depend (not just for tests) on one of `crates`.
fn libraries_depending_on(crates: &[&str]) -> Vec<String> {
    workspace_packages()
        .iter()
        .filter(|p| p.name != ROOT)
        .flat_map(|p| {
            p.dependencies
                .iter()
                .filter(|(dep, kind)| crates.contains(&dep.as_str()) && ships(kind))
                .map(move |(dep, kind)| format!("{} depends on {dep} ({kind})", p.name))
        })
        .collect()
}

#[test]
fn anyhow_and_clap_are_the_clis_only() {
    let offenders = libraries_depending_on(&["anyhow", "clap"]);
    assert!(
        offenders.is_empty(),
        "library crates return typed errors and take typed options: {offenders:?}"
    );
}

// The strict terminal-UI rule. It fails on branch i9-layers alone: splitter
// still draws an indicatif progress bar there, which branch i9-errors
// removes; i9-errors is merged before this lands.
#[test]
fn terminal_ui_is_the_clis_only() {
    let offenders = libraries_depending_on(&["indicatif"]);
    assert!(
        offenders.is_empty(),
        "only the CLI draws on the terminal: {offenders:?}"
    );
}

#[test]
fn only_the_runtime_has_unsafe_code() {
    const FORBID: &str = "#![forbid(unsafe_code)]";
    let mut missing = Vec::new();
    for p in workspace_packages().iter().filter(|p| p.name != RUNTIME) {
        assert!(!p.crate_roots.is_empty(), "{}: no crate root found", p.name);
        for root in &p.crate_roots {
            let text =
                std::fs::read_to_string(root).unwrap_or_else(|e| panic!("{}: {e}", root.display()));
            if !text.lines().any(|l| l.trim() == FORBID) {
                missing.push(format!("{} ({})", root.display(), p.name));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "these crate roots lack {FORBID} (only {RUNTIME} may have unsafe code): {missing:?}"
    );
}

/// The "depends on" column of ARCHITECTURE.md's crate table, as package
/// names: `—` is none, "all but `x`" every other crate of the table but x.
fn architecture_md_table() -> BTreeMap<String, BTreeSet<String>> {
    let path = workspace_root().join("ARCHITECTURE.md");
    let doc = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let package = |short: &str| match short {
        ROOT => ROOT.to_owned(),
        _ => format!("rr-lite-{short}"),
    };
    let backticked =
        |cell: &str| -> Vec<String> { cell.split('`').skip(1).step_by(2).map(package).collect() };
    let rows: Vec<(String, String)> = doc
        .lines()
        .skip_while(|l| !l.starts_with("| crate | one job | depends on |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').split('|').map(str::trim).collect();
            assert_eq!(cells.len(), 3, "{}: not a 3-cell row: {l}", path.display());
            let crate_name = backticked(cells[0])
                .into_iter()
                .next()
                .unwrap_or_else(|| panic!("{}: no `crate` in {l}", path.display()));
            (crate_name, cells[2].to_owned())
        })
        .collect();
    assert!(!rows.is_empty(), "{}: no crate table found", path.display());
    let all: BTreeSet<String> = rows.iter().map(|(name, _)| name.clone()).collect();
    rows.iter()
        .map(|(name, deps)| {
            let deps: BTreeSet<String> = if deps == "—" {
                BTreeSet::new()
            } else if let Some(except) = deps.strip_prefix("all but") {
                let except = backticked(except);
                all.iter()
                    .filter(|c| *c != name && !except.contains(c))
                    .cloned()
                    .collect()
            } else {
                backticked(deps).into_iter().collect()
            };
            (name.clone(), deps)
        })
        .collect()
}

#[test]
fn architecture_md_has_the_same_table() {
    let ours: BTreeMap<String, BTreeSet<String>> = allowed()
        .into_iter()
        .map(|(name, deps)| {
            let deps = deps.into_iter().map(str::to_owned).collect();
            (name.to_owned(), deps)
        })
        .collect();
    assert_eq!(
        architecture_md_table(),
        ours,
        "ARCHITECTURE.md's crate table (left) and ALLOWED in tests/architecture.rs (right) differ"
    );
}

/// The runtime's top-level modules and the ones each imports (`crate::m`),
/// comments left out.
fn runtime_imports() -> BTreeMap<String, BTreeSet<String>> {
    let src = workspace_root().join("runtime/src");
    let mut files = Vec::new();
    let mut dirs = vec![src.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in files {
        let rel = file.strip_prefix(&src).unwrap();
        let first = rel.components().next().unwrap().as_os_str();
        let module = first.to_str().unwrap().trim_end_matches(".rs").to_string();
        if module == "lib" {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let code: String = text
            .lines()
            .map(|l| l.split("//").next().unwrap_or(""))
            .collect::<Vec<_>>()
            .join("\n");
        let imported = edges.entry(module.clone()).or_default();
        for (at, _) in code.match_indices("crate::") {
            let rest = &code[at + "crate::".len()..];
            let names: Vec<&str> = match rest.strip_prefix('{') {
                Some(group) => group
                    .split('}')
                    .next()
                    .unwrap_or("")
                    .split(',')
                    .map(|n| n.trim().split("::").next().unwrap_or(""))
                    .collect(),
                None => vec![
                    rest.split(|c: char| !c.is_alphanumeric() && c != '_')
                        .next()
                        .unwrap_or(""),
                ],
            };
            for name in names {
                if !name.is_empty() && name != module && name != "self" {
                    imported.insert(name.to_string());
                }
            }
        }
    }
    edges
}

/// ARCHITECTURE.md: the runtime's modules import each other without cycles
/// (the event core composes the mode modules; nothing below imports it).
#[test]
fn runtime_modules_import_each_other_without_cycles() {
    let edges = runtime_imports();
    assert!(edges.contains_key("events") && edges.contains_key("replay"));
    fn reaches(edges: &BTreeMap<String, BTreeSet<String>>, from: &str, to: &str) -> bool {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.to_string()];
        while let Some(m) = todo.pop() {
            for next in edges.get(&m).into_iter().flatten() {
                if next == to {
                    return true;
                }
                if seen.insert(next.clone()) {
                    todo.push(next.clone());
                }
            }
        }
        false
    }
    let cycles: Vec<String> = edges
        .iter()
        .flat_map(|(m, imports)| imports.iter().map(move |i| (m, i)))
        .filter(|(m, i)| reaches(&edges, i, m))
        .map(|(m, i)| format!("{m} -> {i}"))
        .collect();
    assert!(
        cycles.is_empty(),
        "runtime modules in an import cycle: {cycles:?}"
    );
}
