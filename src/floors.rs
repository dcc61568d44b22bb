//! The floors of lib.rs's map held to the code: no module of src/ imports from a floor above
//! its own, and no import circle spans two folders. An import is any `crate::…` or `super::…`
//! path in a file's code (comments aside), tests included.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// A module's floor as the map says it: `None` for one the map puts on no floor (tests only).
type Floors = BTreeMap<String, Option<u32>>;

/// The map's floors, by top-level module: a paragraph "Floor N, …:" and its items (`- `name``);
/// the items of "On no floor:" are on none.
fn floors(lib: &str) -> Floors {
    let mut floor: Option<Option<u32>> = None;
    let mut out = Floors::new();
    for line in lib.lines().filter_map(|l| l.strip_prefix("//!")) {
        let line = line.strip_prefix(' ').unwrap_or(line);
        if let Some(rest) = line.strip_prefix("Floor ") {
            let n: String = rest.chars().take_while(char::is_ascii_digit).collect();
            floor = Some(Some(n.parse().expect("a floor's number")));
        } else if line.starts_with("On no floor") {
            floor = Some(None);
        } else if line.starts_with(|c: char| c.is_ascii_uppercase() || c == '#') {
            floor = None;
        } else if let (Some(f), Some(item)) = (floor, line.strip_prefix("- `")) {
            let name = item.split(['`', ':', ' ']).next().unwrap_or_default();
            out.insert(name.to_owned(), f);
        }
    }
    out
}

/// A source file: its path below src/ (`plan/fleet.rs`) and its text.
struct Source {
    path: String,
    text: String,
}

impl Source {
    /// Its module's path: `plan/fleet.rs` is `plan::fleet`, `plan/mod.rs` is `plan`.
    fn module(&self) -> Vec<String> {
        let path = self.path.strip_suffix(".rs").unwrap_or(&self.path);
        let mut segments: Vec<String> = path.split('/').map(str::to_owned).collect();
        if segments.last().is_some_and(|s| s == "mod") {
            segments.pop();
        }
        segments
    }

    /// Its folder below src/ (`""` for src/ itself).
    fn folder(&self) -> &str {
        self.path.rsplit_once('/').map_or("", |(folder, _)| folder)
    }
}

/// The library's files below `dir`, but for the crate's root and the binaries'.
fn sources(src: &Path, dir: &Path, out: &mut Vec<Source>) {
    for entry in std::fs::read_dir(dir).expect("a source directory") {
        let path = entry.expect("an entry").path();
        let rel = path.strip_prefix(src).expect("below src/");
        let rel = rel.to_str().expect("a UTF-8 path").to_owned();
        if path.is_dir() && rel != "bin" {
            sources(src, &path, out);
        } else if rel.ends_with(".rs") && rel != "lib.rs" && rel != "main.rs" {
            let text = std::fs::read_to_string(&path).expect("a source file");
            out.push(Source { path: rel, text });
        }
    }
}

/// The code of `text`, its comments blanked (an intra-doc link is no import).
fn code(text: &str) -> String {
    let lines = text.lines().map(|l| l.find("//").map_or(l, |at| &l[..at]));
    lines.collect::<Vec<_>>().join("\n")
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The paths of `code` from `at` on: `a::b::c`, or each of a group's (`a::{b::c, d}`).
fn paths_at(code: &str, at: usize) -> Vec<Vec<String>> {
    let mut segments = Vec::new();
    let mut rest = &code[at..];
    loop {
        let ident: String = rest.chars().take_while(|c| is_ident(*c)).collect();
        if ident.is_empty() {
            break;
        }
        rest = &rest[ident.len()..];
        segments.push(ident);
        match rest.strip_prefix("::") {
            Some(r) => rest = r.trim_start(),
            None => return vec![segments],
        }
    }
    let Some(group) = rest.strip_prefix('{') else {
        return vec![segments];
    };
    let (mut depth, mut start, mut out) = (0, 0, Vec::new());
    for (i, c) in group.char_indices() {
        match c {
            '}' | ',' if depth == 0 => {
                for tail in paths_at(group[start..i].trim(), 0) {
                    out.push(segments.iter().cloned().chain(tail).collect());
                }
                if c == '}' {
                    break;
                }
                start = i + 1;
            }
            '{' => depth += 1,
            '}' => depth -= 1,
            _ => {}
        }
    }
    out
}

/// What `source` imports: each path as written, and the absolute path it names (`super::`
/// resolved: within an inline module, such as a file's tests, from the file's own module).
fn imports(source: &Source) -> Vec<(String, Vec<String>)> {
    let code = code(&source.text);
    let inline = code
        .lines()
        .position(|l| l.trim_start().starts_with("mod ") && l.trim_end().ends_with('{'));
    let inline_from = inline.map_or(usize::MAX, |n| {
        code.lines().take(n).map(|l| l.len() + 1).sum::<usize>()
    });
    let mut out = Vec::new();
    for start in ["crate::", "super::"] {
        for (at, _) in code.match_indices(start) {
            if code[..at].ends_with(|c: char| is_ident(c) || c == ':') {
                continue;
            }
            for path in paths_at(&code, at) {
                let shown = path.join("::");
                // The module the path is written in: a file's own, or an inline one in it.
                let mut base = source.module();
                if at >= inline_from {
                    base.push(String::new());
                }
                let mut rest = &path[..];
                if rest.first().is_some_and(|s| s == "crate") {
                    base.clear();
                    rest = &rest[1..];
                }
                while rest.first().is_some_and(|s| s == "super") {
                    base.pop();
                    rest = &rest[1..];
                }
                base.extend(rest.iter().cloned());
                out.push((shown, base));
            }
        }
    }
    out
}

/// What imports from a floor above its own, each as a message naming the file, the import and
/// both floors; and a module the map puts on no floor that imports or is imported.
fn upward(map: &Floors, sources: &[Source]) -> Vec<String> {
    let mut found = Vec::new();
    for source in sources {
        let top = &source.module()[0];
        let Some(from) = map.get(top) else {
            found.push(format!(
                "{}: module {top} is on none of the map's floors",
                source.path
            ));
            continue;
        };
        let Some(from) = from else { continue };
        for (shown, path) in imports(source) {
            let Some(to) = path.first() else { continue };
            match map.get(to) {
                Some(Some(floor)) if floor > from => found.push(format!(
                    "{}: `{shown}` imports {to} (floor {floor}) into {top} (floor {from})",
                    source.path
                )),
                Some(None) => found.push(format!(
                    "{}: `{shown}` imports {to}, which is on no floor",
                    source.path
                )),
                _ => {}
            }
        }
    }
    found
}

/// The import circles (strongly connected modules) whose modules are in more than one folder.
fn circles_across_folders(sources: &[Source]) -> Vec<Vec<String>> {
    let modules: BTreeMap<String, &Source> =
        sources.iter().map(|s| (s.module().join("::"), s)).collect();
    let mut edges: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (name, source) in &modules {
        for (_, path) in imports(source) {
            // The module a path names: its longest prefix that is a file's module.
            let to = (1..=path.len())
                .rev()
                .map(|n| path[..n].join("::"))
                .find_map(|m| modules.get_key_value(&m).map(|(k, _)| k.as_str()));
            if let Some(to) = to.filter(|to| to != name) {
                edges.entry(name).or_default().insert(to);
            }
        }
    }
    let mut circles = Vec::new();
    for component in strongly_connected(
        &modules.keys().map(String::as_str).collect::<Vec<_>>(),
        &edges,
    ) {
        let folders: BTreeSet<&str> = component.iter().map(|m| modules[*m].folder()).collect();
        if folders.len() > 1 {
            circles.push(component.iter().map(|m| m.to_string()).collect());
        }
    }
    circles
}

/// Tarjan's strongly connected components of more than one node.
fn strongly_connected<'a>(
    nodes: &[&'a str],
    edges: &BTreeMap<&'a str, BTreeSet<&'a str>>,
) -> Vec<Vec<&'a str>> {
    struct Walk<'a, 'e> {
        edges: &'e BTreeMap<&'a str, BTreeSet<&'a str>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        out: Vec<Vec<&'a str>>,
    }
    fn visit<'a>(w: &mut Walk<'a, '_>, v: &'a str) {
        let n = w.index.len();
        w.index.insert(v, n);
        w.low.insert(v, n);
        w.stack.push(v);
        for &to in w.edges.get(v).into_iter().flatten() {
            if !w.index.contains_key(to) {
                visit(w, to);
                let low = w.low[v].min(w.low[to]);
                w.low.insert(v, low);
            } else if w.stack.contains(&to) {
                let low = w.low[v].min(w.index[to]);
                w.low.insert(v, low);
            }
        }
        if w.low[v] == w.index[v] {
            let at = w.stack.iter().rposition(|m| *m == v).expect("on the stack");
            let component = w.stack.split_off(at);
            if component.len() > 1 {
                w.out.push(component);
            }
        }
    }
    let mut w = Walk {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        out: Vec::new(),
    };
    for &v in nodes {
        if !w.index.contains_key(v) {
            visit(&mut w, v);
        }
    }
    w.out
}

#[test]
fn nothing_in_src_imports_from_a_floor_above_and_no_circle_spans_two_folders() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let map = floors(&std::fs::read_to_string(src.join("lib.rs")).expect("lib.rs"));
    let on: BTreeSet<u32> = map.values().flatten().copied().collect();
    assert_eq!(on, (0..=5).collect(), "the map's floors: {map:?}");
    let mut all = Vec::new();
    sources(&src, &src, &mut all);
    let imported: usize = all.iter().map(|s| imports(s).len()).sum();
    assert!(
        all.len() > 40 && imported > 300,
        "{} files, {imported} imports",
        all.len()
    );
    let up = upward(&map, &all);
    assert!(
        up.is_empty(),
        "imports from a floor above:\n{}",
        up.join("\n")
    );
    let circles = circles_across_folders(&all);
    assert!(
        circles.is_empty(),
        "import circles across folders: {circles:?}"
    );
}

#[test]
fn the_checker_finds_an_upward_import_and_a_circle_across_folders() {
    let map = floors(
        "//! # Where things are\n//!\n//! Floor 0, low:\n//! - `config`: settings.\n//!\n\
         //! Floor 3, high:\n//! - `plan`: the decision.\n//!   - `plan::policy`: a part.\n\
         //!\n//! On no floor:\n//! - `docs` (tests only): checks.\n//!\n//! Beside: `x`.\n",
    );
    let expected = [("config", Some(0)), ("docs", None), ("plan", Some(3))];
    assert_eq!(map, expected.map(|(m, f)| (m.to_owned(), f)).into());
    let file = |path: &str, text: &str| Source {
        path: path.into(),
        text: text.into(),
    };
    let sources = [
        file(
            "config.rs",
            "/// [`crate::plan`]\nuse crate::{error::E, plan::policy::Policy};\n",
        ),
        file("plan/mod.rs", "mod policy;\npub use policy::Policy;\n"),
        file(
            "plan/policy.rs",
            "use super::super::config::Limit;\nmod tests {\n    use super::*;\n}\n",
        ),
    ];
    assert_eq!(
        upward(&map, &sources),
        ["config.rs: `crate::plan::policy::Policy` imports plan (floor 3) into config (floor 0)"]
    );
    let policy = imports(&sources[2]);
    let resolved: Vec<String> = policy.iter().map(|(_, p)| p.join("::")).collect();
    assert_eq!(resolved, ["config::Limit", "plan::policy"]);
    let mut circle = circles_across_folders(&sources).concat();
    circle.sort();
    assert_eq!(circle, ["config", "plan::policy"]);
    // The same circle in one folder is allowed.
    let one_folder = [
        file("plan/a.rs", "use super::b::B;\n"),
        file("plan/b.rs", "use crate::plan::a::A;\n"),
    ];
    assert!(circles_across_folders(&one_folder).is_empty());
}
