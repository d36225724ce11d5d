//! The topology graph: kept dependency pairs between sync-point events, as a
//! petgraph graph, exported as DOT (to look at) and JSON (to process).
//!
//! Nodes are labelled `thread:index`, event kind and call site; edges WAR,
//! RAW or WAW. Sites are raw addresses: symbolising them is the caller's
//! business, through an optional labeller.

use std::collections::HashMap;
use std::fmt::Write;

use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::EdgeRef;
use rr_lite_trace::EventKind;
use serde_json::{Value, json};

use crate::pairs::{DependencyKind, DependencyPair, EventRef};
use crate::syncpoints::ThreadLog;

/// Turns a call site into a label (e.g. `main.c:42 worker`).
pub type SiteLabeller<'a> = &'a dyn Fn(u64) -> String;

/// An event at one end of a kept pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Node {
    pub event: EventRef,
    /// `None` only if the logs given to [`Topology::build`] lack the event.
    pub kind: Option<EventKind>,
    pub addr: u64,
    pub site: u64,
}

/// The graph of kept pairs.
#[derive(Debug, Clone, Default)]
pub struct Topology {
    pub graph: DiGraph<Node, DependencyKind>,
    nodes: HashMap<EventRef, NodeIndex>,
}

impl Topology {
    /// Nodes from the sync points of `logs` (every endpoint of a kept pair
    /// is one), edges from `pairs`.
    pub fn build(pairs: &[DependencyPair], logs: &[ThreadLog]) -> Topology {
        let mut topology = Topology::default();
        for log in logs {
            for p in &log.sync_points {
                let event = EventRef {
                    thread: log.thread,
                    index: p.index,
                };
                topology.add_node(Node {
                    event,
                    kind: Some(p.kind),
                    addr: p.addr,
                    site: p.site,
                });
            }
        }
        for p in pairs {
            let from = topology.node_or_unknown(p.from);
            let to = topology.node_or_unknown(p.to);
            topology.graph.add_edge(from, to, p.kind);
        }
        topology
    }

    fn add_node(&mut self, node: Node) -> NodeIndex {
        *self
            .nodes
            .entry(node.event)
            .or_insert_with(|| self.graph.add_node(node))
    }

    fn node_or_unknown(&mut self, event: EventRef) -> NodeIndex {
        self.add_node(Node {
            event,
            kind: None,
            addr: 0,
            site: 0,
        })
    }

    /// The node of `event`, if it is an endpoint of a kept pair.
    pub fn node(&self, event: EventRef) -> Option<NodeIndex> {
        self.nodes.get(&event).copied()
    }

    /// Nodes sorted by thread then index.
    fn sorted_nodes(&self) -> Vec<&Node> {
        let mut nodes: Vec<&Node> = self.graph.node_weights().collect();
        nodes.sort_by_key(|n| n.event);
        nodes
    }

    fn sorted_edges(&self) -> Vec<(EventRef, EventRef, DependencyKind)> {
        let mut edges: Vec<_> = self
            .graph
            .edge_references()
            .map(|e| {
                (
                    self.graph[e.source()].event,
                    self.graph[e.target()].event,
                    *e.weight(),
                )
            })
            .collect();
        edges.sort_by_key(|&(from, to, _)| (to, from));
        edges
    }

    /// Graphviz DOT: one cluster per thread, program order as dotted grey
    /// edges, dependencies as labelled edges.
    pub fn to_dot(&self, labeller: Option<SiteLabeller<'_>>) -> String {
        let mut out = String::new();
        out.push_str("digraph rr_lite_split {\n");
        out.push_str("  rankdir=TB;\n  node [shape=box, fontname=\"monospace\"];\n");
        let nodes = self.sorted_nodes();
        let mut by_thread = nodes.chunk_by(|a, b| a.event.thread == b.event.thread);
        for thread_nodes in by_thread.by_ref() {
            let t = thread_nodes[0].event.thread;
            let _ = writeln!(out, "  subgraph cluster_t{t} {{\n    label=\"thread {t}\";");
            for n in thread_nodes {
                let _ = writeln!(
                    out,
                    "    \"{}\" [label=\"{}\\n{}\\n{}\"];",
                    n.event,
                    n.event,
                    n.kind.map_or("?", EventKind::name),
                    escape(&site_label(n.site, labeller))
                );
            }
            for w in thread_nodes.windows(2) {
                let _ = writeln!(
                    out,
                    "    \"{}\" -> \"{}\" [style=dotted, color=grey, arrowhead=none];",
                    w[0].event, w[1].event
                );
            }
            out.push_str("  }\n");
        }
        for (from, to, kind) in self.sorted_edges() {
            let color = match kind {
                DependencyKind::War => "blue",
                DependencyKind::Raw => "darkgreen",
                DependencyKind::Waw => "red",
            };
            let _ = writeln!(
                out,
                "  \"{from}\" -> \"{to}\" [label=\"{kind}\", color={color}];"
            );
        }
        out.push_str("}\n");
        out
    }

    /// JSON: `{"nodes": [...], "edges": [{"from": {"thread", "index"},
    /// "to": {...}, "kind": "WAR"|"RAW"|"WAW"}]}`.
    pub fn to_json(&self, labeller: Option<SiteLabeller<'_>>) -> Value {
        let nodes: Vec<Value> = self
            .sorted_nodes()
            .into_iter()
            .map(|n| {
                json!({
                    "id": n.event.to_string(),
                    "thread": n.event.thread,
                    "index": n.event.index,
                    "kind": n.kind.map(EventKind::name),
                    "addr": n.addr,
                    "site": n.site,
                    "site_label": site_label(n.site, labeller),
                })
            })
            .collect();
        let edges: Vec<Value> = self
            .sorted_edges()
            .into_iter()
            .map(|(from, to, kind)| json!({ "from": from, "to": to, "kind": kind }))
            .collect();
        json!({ "nodes": nodes, "edges": edges })
    }
}

fn site_label(site: u64, labeller: Option<SiteLabeller<'_>>) -> String {
    match labeller {
        Some(label) => label(site),
        None => format!("{site:#x}"),
    }
}

/// Escapes a string for a DOT double-quoted label.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            _ => out.push(c),
        }
    }
    out
}
