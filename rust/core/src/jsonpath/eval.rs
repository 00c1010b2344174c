//! Evaluating a [`Query`] on a [`Document`]: which nodes it selects, in order.
//!
//! Semantics (those of RFC 9535 where it has them):
//! - Objects behave like the Python dict `json.loads` builds: with duplicate
//!   keys the last value wins and sits where the key first appeared.
//! - `.name` / `['name']` pick an object member; `[n]` and slices pick array
//!   items (negative `n` from the end, slices as Python's); `*` picks every
//!   item or member value. Other kinds of node give nothing.
//! - `..sel` applies `sel` to the node and to each of its descendants, taken
//!   in document order with every node before its children.
//! - A union `[a, b]` concatenates the selections of `a` and `b` (duplicates kept).
//! - Filters test each item or member value `@`; `&&` binds tighter than
//!   `||`, `!` negates, parentheses group. A missing path makes `==`
//!   and the orderings false and `!=` true. `==` compares numbers by value
//!   (exactly, like Python compares ints and floats), strings, booleans and
//!   null by equality; containers equal nothing. Orderings apply to two
//!   numbers or two strings (by code point) and are false otherwise.
use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::HashMap;

use super::document::{Document, Kind, Node};
use super::query::{Filter, Literal, Op, Query, Selector, Step};

/// Most values one query may select, counted over every step, so that
/// queries like `$..*..*` on large documents stop instead of exhausting memory.
pub const MAX_SELECTED: usize = 10_000_000;

/// Most units of work one query may take: one per node visited by a descendant
/// segment, one per child a selector looks at, and per child a filter tests, one
/// per comparison and path step the filter holds (counted whether or not `&&` /
/// `||` cut it short). Ordinary queries on large documents stay far below; a query
/// whose cost grows with the square of the document or with a huge filter ends
/// with an error instead of running for minutes.
pub const MAX_STEPS: u64 = 200_000_000;

/// A query hit one of the work limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SelectLimit {
    /// It selected more than [`MAX_SELECTED`] values.
    TooManyMatches,
    /// It needed more than [`MAX_STEPS`] units of work.
    TooMuchWork,
}

/// Marks an array item in a child list (no key).
pub const NO_KEY: u32 = u32::MAX;

/// Objects with more members than this are deduplicated through a hash map.
const LINEAR_MEMBERS: usize = 32;

/// Units of work to test one candidate with `filter` (see [`MAX_STEPS`]).
fn filter_cost(filter: &Filter) -> u64 {
    match filter {
        Filter::And(parts) | Filter::Or(parts) => 1 + parts.iter().map(filter_cost).sum::<u64>(),
        Filter::Not(inner) => 1 + filter_cost(inner),
        Filter::Exists(path) | Filter::Compare(path, _, _) => 1 + path.len() as u64,
    }
}

/// Do two key (string) nodes hold the same decoded text?
fn same_key(doc: &Document<'_>, a: Node, b: Node) -> bool {
    if !a.flag && !b.flag {
        return doc.text_of(a) == doc.text_of(b);
    }
    doc.string_bytes(a) == doc.string_bytes(b)
}

/// Append the children of `node` to `out` as `(key, value)` tape indices:
/// array items with [`NO_KEY`], object members as the dict `json.loads`
/// would build (last value of a key, at the key's first position).
pub fn children(doc: &Document<'_>, node: u32, out: &mut Vec<(u32, u32)>) {
    let n = doc.node(node);
    match n.kind {
        Kind::Array => {
            let mut cur = node + 1;
            for _ in 0..n.a {
                crate::alloc::push(out, (NO_KEY, cur));
                cur = doc.node(cur).next;
            }
        }
        Kind::Object => {
            let base = out.len();
            let mut cur = node + 1;
            let big = n.a as usize > LINEAR_MEMBERS;
            let mut seen: HashMap<Cow<'_, [u8]>, usize> = HashMap::new();
            if big && seen.try_reserve(n.a as usize).is_err() {
                crate::alloc::out_of_memory((n.a as usize).saturating_mul(32));
            }
            for _ in 0..n.a {
                let key = cur;
                let value = cur + 1;
                cur = doc.node(value).next;
                let key_node = doc.node(key);
                let earlier = if big {
                    match seen.entry(doc.string_bytes(key_node)) {
                        std::collections::hash_map::Entry::Occupied(e) => Some(*e.get()),
                        std::collections::hash_map::Entry::Vacant(e) => {
                            e.insert(out.len());
                            None
                        }
                    }
                } else {
                    (base..out.len()).find(|&i| same_key(doc, doc.node(out[i].0), key_node))
                };
                match earlier {
                    Some(i) => out[i].1 = value,
                    None => crate::alloc::push(out, (key, value)),
                }
            }
        }
        _ => {}
    }
}

/// The value of member `name` (WTF-8) of object `node`: the last one, as a dict keeps.
fn member(doc: &Document<'_>, node: u32, name: &[u8]) -> Option<u32> {
    let n = doc.node(node);
    if n.kind != Kind::Object {
        return None;
    }
    let mut cur = node + 1;
    let mut found = None;
    for _ in 0..n.a {
        let key = doc.node(cur);
        let matches = if key.flag {
            *doc.string_bytes(key) == *name
        } else {
            doc.text_of(key).as_bytes() == name
        };
        if matches {
            found = Some(cur + 1);
        }
        cur = doc.node(cur + 1).next;
    }
    found
}

/// Item `index` of array `node` (negative from the end).
fn item(doc: &Document<'_>, node: u32, index: i64) -> Option<u32> {
    let n = doc.node(node);
    if n.kind != Kind::Array {
        return None;
    }
    let len = i64::from(n.a);
    let i = if index < 0 { index + len } else { index };
    if !(0..len).contains(&i) {
        return None;
    }
    let mut cur = node + 1;
    for _ in 0..i {
        cur = doc.node(cur).next;
    }
    Some(cur)
}

/// The positions `range(*slice(start, end, step).indices(len))` yields in Python.
pub fn slice_positions(
    len: usize,
    start: Option<i64>,
    end: Option<i64>,
    step: Option<i64>,
) -> impl Iterator<Item = usize> {
    let len = len as i128;
    let step = i128::from(step.unwrap_or(1)).max(i128::MIN + 1);
    let (lower, upper) = if step > 0 { (0, len) } else { (-1, len - 1) };
    let clamp = |v: Option<i64>, default: i128| match v {
        None => default,
        Some(v) => {
            let v = i128::from(v);
            let v = if v < 0 { v + len } else { v };
            v.clamp(lower, upper)
        }
    };
    let first = clamp(start, if step > 0 { lower } else { upper });
    let stop = clamp(end, if step > 0 { upper } else { lower });
    let mut cur = first;
    std::iter::from_fn(move || {
        let inside = if step > 0 { cur < stop } else { cur > stop };
        if !inside {
            return None;
        }
        let here = cur;
        cur += step;
        usize::try_from(here).ok()
    })
}

// ---------------------------------------------------------------------------
// Numbers, compared the way Python compares int and float
// ---------------------------------------------------------------------------

/// A number as Python's `json` would load it.
#[derive(Debug, Clone, Copy)]
enum Num<'t> {
    /// An int: sign and decimal digits without leading zeros (zero: empty).
    Int { negative: bool, digits: &'t [u8] },
    /// A float (`NaN`, infinities included).
    Float(f64),
}

fn is_int_text(text: &str) -> bool {
    let digits = text.strip_prefix('-').unwrap_or(text);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

fn num_of(text: &str) -> Num<'_> {
    if is_int_text(text) {
        let (negative, digits) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let digits = digits.trim_start_matches('0').as_bytes();
        Num::Int {
            negative: negative && !digits.is_empty(),
            digits,
        }
    } else {
        // Rust reads `NaN`, `Infinity` and `-Infinity` too, and rounds
        // correctly like Python's float().
        Num::Float(text.parse::<f64>().unwrap_or(f64::NAN))
    }
}

fn cmp_magnitude(a: &[u8], b: &[u8]) -> Ordering {
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

fn cmp_ints(an: bool, a: &[u8], bn: bool, b: &[u8]) -> Ordering {
    match (an, bn) {
        (false, true) => Ordering::Greater,
        (true, false) => Ordering::Less,
        (false, false) => cmp_magnitude(a, b),
        (true, true) => cmp_magnitude(b, a),
    }
}

/// Exact comparison of an int with a float.
fn cmp_int_float(negative: bool, digits: &[u8], f: f64) -> Option<Ordering> {
    if f.is_nan() {
        return None;
    }
    if f.is_infinite() {
        return Some(if f > 0.0 {
            Ordering::Less
        } else {
            Ordering::Greater
        });
    }
    let floor = f.floor();
    // A finite integral float prints exactly with no fraction digits.
    let text = format!("{floor:.0}");
    let Num::Int {
        negative: fneg,
        digits: fdigits,
    } = num_of(&text)
    else {
        return None;
    };
    match cmp_ints(negative, digits, fneg, fdigits) {
        Ordering::Equal if floor != f => Some(Ordering::Less),
        other => Some(other),
    }
}

fn cmp_nums(a: Num<'_>, b: Num<'_>) -> Option<Ordering> {
    match (a, b) {
        (
            Num::Int {
                negative: an,
                digits: ad,
            },
            Num::Int {
                negative: bn,
                digits: bd,
            },
        ) => Some(cmp_ints(an, ad, bn, bd)),
        (Num::Float(x), Num::Float(y)) => x.partial_cmp(&y),
        (Num::Int { negative, digits }, Num::Float(f)) => cmp_int_float(negative, digits, f),
        (Num::Float(f), Num::Int { negative, digits }) => {
            cmp_int_float(negative, digits, f).map(Ordering::reverse)
        }
    }
}

/// Compare two number texts as Python compares the numbers `json.loads` makes of them.
pub fn compare_number_texts(a: &str, b: &str) -> Option<Ordering> {
    cmp_nums(num_of(a), num_of(b))
}

// ---------------------------------------------------------------------------
// Filters
// ---------------------------------------------------------------------------

fn resolve(doc: &Document<'_>, mut node: u32, path: &[Step]) -> Option<u32> {
    for step in path {
        node = match step {
            Step::Name(name) => member(doc, node, name)?,
            Step::Index(i) => item(doc, node, *i)?,
        };
    }
    Some(node)
}

fn compare(doc: &Document<'_>, node: Node, literal: &Literal) -> Option<Ordering> {
    match (node.kind, literal) {
        (Kind::Number, Literal::Number(text)) => compare_number_texts(doc.text_of(node), text),
        (Kind::String, Literal::String(s)) => Some(doc.string_bytes(node).as_ref().cmp(s)),
        _ => None,
    }
}

fn equal(doc: &Document<'_>, node: Node, literal: &Literal) -> bool {
    match (node.kind, literal) {
        (Kind::Null, Literal::Null)
        | (Kind::True, Literal::True)
        | (Kind::False, Literal::False) => true,
        (Kind::Number, Literal::Number(_)) | (Kind::String, Literal::String(_)) => {
            compare(doc, node, literal) == Some(Ordering::Equal)
        }
        _ => false,
    }
}

fn accepts(doc: &Document<'_>, candidate: u32, filter: &Filter) -> bool {
    match filter {
        Filter::And(parts) => parts.iter().all(|p| accepts(doc, candidate, p)),
        Filter::Or(parts) => parts.iter().any(|p| accepts(doc, candidate, p)),
        Filter::Not(inner) => !accepts(doc, candidate, inner),
        Filter::Exists(path) => resolve(doc, candidate, path).is_some(),
        Filter::Compare(path, op, literal) => {
            let Some(target) = resolve(doc, candidate, path) else {
                return *op == Op::Ne;
            };
            let node = doc.node(target);
            match op {
                Op::Eq => equal(doc, node, literal),
                Op::Ne => !equal(doc, node, literal),
                Op::Lt => compare(doc, node, literal) == Some(Ordering::Less),
                Op::Le => matches!(
                    compare(doc, node, literal),
                    Some(Ordering::Less | Ordering::Equal)
                ),
                Op::Gt => compare(doc, node, literal) == Some(Ordering::Greater),
                Op::Ge => matches!(
                    compare(doc, node, literal),
                    Some(Ordering::Greater | Ordering::Equal)
                ),
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Selection
// ---------------------------------------------------------------------------

struct Selection<'q, 'd, 'a> {
    doc: &'d Document<'a>,
    query: &'q Query,
    scratch: Vec<(u32, u32)>,
    /// Units of work left (see [`MAX_STEPS`]).
    steps_left: u64,
}

impl Selection<'_, '_, '_> {
    /// Takes `n` units of work from the budget.
    fn spend(&mut self, n: u64) -> Result<(), SelectLimit> {
        match self.steps_left.checked_sub(n) {
            Some(left) => {
                self.steps_left = left;
                Ok(())
            }
            None => Err(SelectLimit::TooMuchWork),
        }
    }

    fn select(
        &mut self,
        node: u32,
        selector: &Selector,
        out: &mut Vec<u32>,
    ) -> Result<(), SelectLimit> {
        let doc = self.doc;
        self.spend(1)?;
        match selector {
            Selector::Name(name) => crate::alloc::extend_iter(out, member(doc, node, name)),
            Selector::Index(i) => crate::alloc::extend_iter(out, item(doc, node, *i)),
            Selector::Slice { start, end, step } => {
                if doc.node(node).kind != Kind::Array {
                    return Ok(());
                }
                self.scratch.clear();
                children(doc, node, &mut self.scratch);
                self.spend(self.scratch.len() as u64)?;
                let items = &self.scratch;
                crate::alloc::extend_iter(
                    out,
                    slice_positions(items.len(), *start, *end, *step)
                        .filter_map(|p| items.get(p).map(|c| c.1)),
                );
            }
            Selector::Wildcard => {
                self.scratch.clear();
                children(doc, node, &mut self.scratch);
                self.spend(self.scratch.len() as u64)?;
                crate::alloc::extend_iter(out, self.scratch.iter().map(|c| c.1));
            }
            Selector::Filter(filter) => {
                self.scratch.clear();
                children(doc, node, &mut self.scratch);
                let cost = (self.scratch.len() as u64).saturating_mul(filter_cost(filter));
                self.spend(cost)?;
                crate::alloc::extend_iter(
                    out,
                    self.scratch
                        .iter()
                        .map(|c| c.1)
                        .filter(|&v| accepts(doc, v, filter)),
                );
            }
        }
        Ok(())
    }

    /// `node` and its descendants, every node before its children.
    fn preorder(&mut self, node: u32, out: &mut Vec<u32>) -> Result<(), SelectLimit> {
        let doc = self.doc;
        // Child lists of the open containers, stacked in one buffer.
        let mut lists: Vec<(u32, u32)> = Vec::new();
        // Per open container: (start of its list in `lists`, next position).
        let mut frames: Vec<(usize, usize)> = Vec::new();
        crate::alloc::push(out, node);
        let start = lists.len();
        children(doc, node, &mut lists);
        crate::alloc::push(&mut frames, (start, start));
        while let Some(frame) = frames.last_mut() {
            let (begin, pos) = *frame;
            // The top frame's list runs to the end of `lists`.
            if pos == lists.len() {
                lists.truncate(begin);
                frames.pop();
                continue;
            }
            frame.1 += 1;
            let child = lists[pos].1;
            crate::alloc::push(out, child);
            if out.len() > MAX_SELECTED {
                return Err(SelectLimit::TooManyMatches);
            }
            self.spend(1)?;
            let kind = doc.node(child).kind;
            if matches!(kind, Kind::Array | Kind::Object) && doc.node(child).a > 0 {
                let at = lists.len();
                children(doc, child, &mut lists);
                crate::alloc::push(&mut frames, (at, at));
            }
        }
        Ok(())
    }

    fn run(&mut self) -> Result<Vec<u32>, SelectLimit> {
        let mut current = vec![0u32];
        let mut visit = Vec::new();
        for segment in &self.query.segments {
            let mut next = Vec::new();
            for &node in &current {
                if segment.descendant {
                    visit.clear();
                    self.preorder(node, &mut visit)?;
                    for &d in &visit {
                        for selector in &segment.selectors {
                            self.select(d, selector, &mut next)?;
                        }
                    }
                } else {
                    for selector in &segment.selectors {
                        self.select(node, selector, &mut next)?;
                    }
                }
                if next.len() > MAX_SELECTED {
                    return Err(SelectLimit::TooManyMatches);
                }
            }
            current = next;
        }
        Ok(current)
    }
}

/// The tape indices `query` selects in `doc`, in result order.
pub fn select(doc: &Document<'_>, query: &Query) -> Result<Vec<u32>, SelectLimit> {
    Selection {
        doc,
        query,
        scratch: Vec::new(),
        steps_left: MAX_STEPS,
    }
    .run()
}
