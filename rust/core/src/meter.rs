//! The SDK's token estimate of message content, as a policy over any tree of
//! values.
//!
//! Which parts of a content block count, and how, is decided here:
//!
//! - a `text` member: its text;
//! - `toolUse`: its `name` as text and its `input` as JSON (a call without
//!   input counts as `{}`);
//! - `toolResult`: each `content` item's `text` as text and `json` as JSON;
//! - `reasoningContent.reasoningText.text`, `guardContent.text.text` and each
//!   `citationsContent.content[*].text` as text;
//! - nothing else: images, documents, videos and binary data count 0.
//!
//! A text counts with the counter ([`heuristic_count`] of its code points, or
//! exact BPE tokens); a JSON value by its single-line `json.dumps` text
//! ([`heuristic_json_count`] of its length, or BPE tokens of it), and 0 when
//! the encoder rejects it, as in the SDK.
//!
//! The tree is reached through [`Tree`] (the bindings implement it over Python
//! objects; the core knows no Python). A shape the policy does not read (a
//! block that is not a map, a text that is not a text) is [`Miss::Shape`]: the
//! caller then measures through the SDK's own walk.
use crate::tokens::{heuristic_count, heuristic_json_count, Bpe, Encoding};

/// A member name the policy reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    Content,
    Text,
    ToolUse,
    ToolResult,
    ReasoningContent,
    ReasoningText,
    GuardContent,
    CitationsContent,
    Name,
    Input,
    Json,
}

impl Key {
    /// Every key, in the order of their `as usize` values.
    pub const ALL: [Key; 11] = [
        Key::Content,
        Key::Text,
        Key::ToolUse,
        Key::ToolResult,
        Key::ReasoningContent,
        Key::ReasoningText,
        Key::GuardContent,
        Key::CitationsContent,
        Key::Name,
        Key::Input,
        Key::Json,
    ];

    /// The member's name in a message.
    pub const fn name(self) -> &'static str {
        match self {
            Key::Content => "content",
            Key::Text => "text",
            Key::ToolUse => "toolUse",
            Key::ToolResult => "toolResult",
            Key::ReasoningContent => "reasoningContent",
            Key::ReasoningText => "reasoningText",
            Key::GuardContent => "guardContent",
            Key::CitationsContent => "citationsContent",
            Key::Name => "name",
            Key::Input => "input",
            Key::Json => "json",
        }
    }
}

/// Why a count could not be made.
#[derive(Debug)]
pub enum Miss<E> {
    /// A shape the policy does not read: left to the SDK's walk.
    Shape,
    /// An error of the tree's, to raise as is.
    Error(E),
}

impl<E> From<E> for Miss<E> {
    fn from(e: E) -> Self {
        Miss::Error(e)
    }
}

/// A count, or why there is none.
pub type Count<E> = Result<usize, Miss<E>>;

/// A tree of values (maps, lists, texts, JSON values) as the policy reads it.
pub trait Tree {
    /// A value of the tree.
    type Node;
    /// An error reading it.
    type Error;

    /// Whether `node` is a map the policy reads.
    fn is_map(&self, node: &Self::Node) -> bool;
    /// The member `key` of the map `map`, `None` when absent.
    fn member(&self, map: &Self::Node, key: Key) -> Result<Option<Self::Node>, Miss<Self::Error>>;
    /// How many members the map `map` has.
    fn map_len(&self, map: &Self::Node) -> usize;
    /// Call `each` with the items of the list `list`, in order, until it
    /// answers `false` (done) or an error ([`Miss::Shape`] when `list` is not
    /// a list).
    fn for_each_item<F>(&self, list: &Self::Node, each: F) -> Result<(), Miss<Self::Error>>
    where
        F: FnMut(Self::Node) -> Result<bool, Miss<Self::Error>>;
    /// The code points of the text `text` ([`Miss::Shape`] when not a text).
    fn text_chars(&self, text: &Self::Node) -> Count<Self::Error>;
    /// Exact tokens of the text `text`, stopping past `limit` when given.
    fn text_tokens(&self, text: &Self::Node, bpe: Bpe, limit: Option<usize>) -> Count<Self::Error>;
    /// The length of `value`'s single-line JSON, `None` when the encoder rejects it.
    fn json_chars(&self, value: &Self::Node) -> Result<Option<usize>, Miss<Self::Error>>;
    /// Exact tokens of `value`'s single-line JSON, `None` when the encoder rejects it.
    fn json_tokens(&self, value: &Self::Node, bpe: Bpe)
        -> Result<Option<usize>, Miss<Self::Error>>;
    /// An empty map (what a tool call without input counts as).
    fn empty_map(&self) -> Self::Node;
}

/// Tokens of a text, counted with `counter`.
#[inline]
pub fn text<T: Tree>(
    tree: &T,
    counter: Encoding,
    text: &T::Node,
    limit: Option<usize>,
) -> Count<T::Error> {
    match counter {
        Encoding::Heuristic => Ok(heuristic_count(tree.text_chars(text)?)),
        Encoding::Bpe(bpe) => tree.text_tokens(text, bpe, limit),
    }
}

/// Tokens of a JSON value's single-line text (0 when the encoder rejects it).
#[inline]
pub fn json<T: Tree>(tree: &T, counter: Encoding, value: &T::Node) -> Count<T::Error> {
    Ok(match counter {
        Encoding::Heuristic => tree.json_chars(value)?.map_or(0, heuristic_json_count),
        Encoding::Bpe(bpe) => tree.json_tokens(value, bpe)?.unwrap_or(0),
    })
}

/// `map[key]` when present, which must then be a map.
fn map_member<T: Tree>(
    tree: &T,
    map: &T::Node,
    key: Key,
) -> Result<Option<T::Node>, Miss<T::Error>> {
    match tree.member(map, key)? {
        Some(v) if !tree.is_map(&v) => Err(Miss::Shape),
        found => Ok(found),
    }
}

/// `map[key]` counted as a text when present.
fn text_member<T: Tree>(tree: &T, counter: Encoding, map: &T::Node, key: Key) -> Count<T::Error> {
    match tree.member(map, key)? {
        Some(found) => text(tree, counter, &found, None),
        None => Ok(0),
    }
}

/// Calls `each` with the items of `list`, each of which must be a map.
fn for_each_map<T: Tree>(
    tree: &T,
    list: &T::Node,
    mut each: impl FnMut(T::Node) -> Result<(), Miss<T::Error>>,
) -> Result<(), Miss<T::Error>> {
    tree.for_each_item(list, |item| {
        if !tree.is_map(&item) {
            return Err(Miss::Shape);
        }
        each(item)?;
        Ok(true)
    })
}

/// The count of one content block, and whether it carries JSON (a `toolUse`
/// or `toolResult`: the caller may remember such counts, which cost more to
/// make than to look up). Each part is a term of a sum, so the order of the
/// checks does not change the count.
pub fn block<T: Tree>(
    tree: &T,
    counter: Encoding,
    block: &T::Node,
) -> Result<(usize, bool), Miss<T::Error>> {
    if !tree.is_map(block) {
        return Err(Miss::Shape);
    }
    let text_part = tree.member(block, Key::Text)?;
    let mut total = match &text_part {
        Some(found) => text(tree, counter, found, None)?,
        None => 0,
    };
    // The common case: a text block and nothing else.
    if text_part.is_some() && tree.map_len(block) == 1 {
        return Ok((total, false));
    }
    let mut has_json = false;
    if let Some(tool_use) = map_member(tree, block, Key::ToolUse)? {
        has_json = true;
        total += text_member(tree, counter, &tool_use, Key::Name)?;
        total += match tree.member(&tool_use, Key::Input)? {
            Some(input) => json(tree, counter, &input)?,
            None => json(tree, counter, &tree.empty_map())?,
        };
    }
    if let Some(tool_result) = map_member(tree, block, Key::ToolResult)? {
        has_json = true;
        if let Some(content) = tree.member(&tool_result, Key::Content)? {
            for_each_map(tree, &content, |item| {
                total += text_member(tree, counter, &item, Key::Text)?;
                if let Some(value) = tree.member(&item, Key::Json)? {
                    total += json(tree, counter, &value)?;
                }
                Ok(())
            })?;
        }
    }
    if let Some(reasoning) = map_member(tree, block, Key::ReasoningContent)? {
        if let Some(reasoning_text) = map_member(tree, &reasoning, Key::ReasoningText)? {
            total += text_member(tree, counter, &reasoning_text, Key::Text)?;
        }
    }
    if let Some(guard) = map_member(tree, block, Key::GuardContent)? {
        if let Some(guard_text) = map_member(tree, &guard, Key::Text)? {
            total += text_member(tree, counter, &guard_text, Key::Text)?;
        }
    }
    if let Some(citations) = map_member(tree, block, Key::CitationsContent)? {
        if let Some(content) = tree.member(&citations, Key::Content)? {
            for_each_map(tree, &content, |item| {
                total += text_member(tree, counter, &item, Key::Text)?;
                Ok(())
            })?;
        }
    }
    Ok((total, has_json))
}

/// Walks a list of messages (maps with a `content` list of blocks): calls
/// `each(index, sum, largest)` with the block counts of every message, each
/// block counted by `count` (the caller's [`block`], remembered or not).
pub fn messages<T: Tree>(
    tree: &T,
    messages: &T::Node,
    mut count: impl FnMut(&T::Node) -> Count<T::Error>,
    mut each: impl FnMut(usize, usize, usize),
) -> Result<(), Miss<T::Error>> {
    let mut index = 0;
    for_each_map(tree, messages, |message| {
        let Some(content) = tree.member(&message, Key::Content)? else {
            return Err(Miss::Shape);
        };
        let (mut sum, mut largest) = (0, 0);
        tree.for_each_item(&content, |block| {
            let n = count(&block)?;
            sum += n;
            largest = largest.max(n);
            Ok(true)
        })?;
        each(index, sum, largest);
        index += 1;
        Ok(())
    })
}

/// Tokens of a tool result's `content` (a list of maps): each item's `text`
/// counted by `text_count` and `json` by `json_count` (`None`, a value the
/// encoder rejects, counts 0), each given what is left of `limit`. With
/// `limit`, counting stops once the total passes it (the answer is then above
/// `limit`, not the total).
pub fn result<T: Tree>(
    tree: &T,
    content: &T::Node,
    limit: Option<usize>,
    mut text_count: impl FnMut(&T::Node, Option<usize>) -> Count<T::Error>,
    mut json_count: impl FnMut(&T::Node, Option<usize>) -> Result<Option<usize>, Miss<T::Error>>,
) -> Count<T::Error> {
    let mut total = 0usize;
    let left = |total: usize| limit.map(|l| l.saturating_sub(total));
    tree.for_each_item(content, |item| {
        if !tree.is_map(&item) {
            return Err(Miss::Shape);
        }
        if let Some(found) = tree.member(&item, Key::Text)? {
            total += text_count(&found, left(total))?;
        }
        if let Some(value) = tree.member(&item, Key::Json)? {
            total += json_count(&value, left(total))?.unwrap_or(0);
        }
        // Past the limit, the rest is not read.
        Ok(limit.is_none_or(|l| total <= l))
    })?;
    Ok(total)
}

/// A count of a part's two ends of `half` code points each, scaled to the
/// part's `len`, rounded as Python's `round` does (halves to even): the
/// estimate of a long text counted on its ends only.
pub fn scaled(ends: usize, len: usize, half: usize) -> usize {
    (ends as f64 * len as f64 / (2 * half) as f64).round_ties_even() as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small value tree: what a message is made of.
    #[derive(Debug, Clone)]
    enum V {
        Text(String),
        Int(i64),
        List(Vec<V>),
        Map(Vec<(&'static str, V)>),
        /// A value the JSON encoder rejects (Python's `bytes`).
        Bytes,
    }

    fn t(s: &str) -> V {
        V::Text(s.to_owned())
    }

    fn map(members: &[(&'static str, V)]) -> V {
        V::Map(members.to_vec())
    }

    /// Single-line `json.dumps` of `v` (ASCII texts without escapes only).
    fn dumps(v: &V) -> Option<String> {
        Some(match v {
            V::Text(s) => format!("\"{s}\""),
            V::Int(n) => n.to_string(),
            V::List(items) => {
                let parts: Option<Vec<String>> = items.iter().map(dumps).collect();
                format!("[{}]", parts?.join(", "))
            }
            V::Map(members) => {
                let parts: Option<Vec<String>> = members
                    .iter()
                    .map(|(k, v)| Some(format!("\"{k}\": {}", dumps(v)?)))
                    .collect();
                format!("{{{}}}", parts?.join(", "))
            }
            V::Bytes => return None,
        })
    }

    struct Values;

    impl Tree for Values {
        type Node = V;
        type Error = String;

        fn is_map(&self, node: &V) -> bool {
            matches!(node, V::Map(_))
        }
        fn member(&self, map: &V, key: Key) -> Result<Option<V>, Miss<String>> {
            match map {
                V::Map(members) => Ok(members
                    .iter()
                    .find(|(k, _)| *k == key.name())
                    .map(|(_, v)| v.clone())),
                _ => Err(Miss::Error("not a map".into())),
            }
        }
        fn map_len(&self, map: &V) -> usize {
            match map {
                V::Map(members) => members.len(),
                _ => 0,
            }
        }
        fn for_each_item<F>(&self, list: &V, mut each: F) -> Result<(), Miss<String>>
        where
            F: FnMut(V) -> Result<bool, Miss<String>>,
        {
            let V::List(items) = list else {
                return Err(Miss::Shape);
            };
            for item in items {
                if !each(item.clone())? {
                    break;
                }
            }
            Ok(())
        }
        fn text_chars(&self, text: &V) -> Count<String> {
            match text {
                V::Text(s) => Ok(s.chars().count()),
                _ => Err(Miss::Shape),
            }
        }
        fn text_tokens(&self, text: &V, bpe: Bpe, _limit: Option<usize>) -> Count<String> {
            match text {
                V::Text(s) => Ok(crate::tokens::count(s, bpe)),
                _ => Err(Miss::Shape),
            }
        }
        fn json_chars(&self, value: &V) -> Result<Option<usize>, Miss<String>> {
            Ok(dumps(value).map(|s| s.len()))
        }
        fn json_tokens(&self, value: &V, bpe: Bpe) -> Result<Option<usize>, Miss<String>> {
            Ok(dumps(value).map(|s| crate::tokens::count(&s, bpe)))
        }
        fn empty_map(&self) -> V {
            V::Map(Vec::new())
        }
    }

    const H: Encoding = Encoding::Heuristic;

    fn count(block_value: &V) -> usize {
        match block(&Values, H, block_value) {
            Ok((n, _)) => n,
            Err(e) => panic!("no count: {e:?}"),
        }
    }

    #[test]
    fn text_counts_a_quarter_of_its_code_points_rounded_up() {
        assert_eq!(count(&map(&[("text", t("abcde"))])), 2);
        assert_eq!(count(&map(&[("text", t("héllo wörld!"))])), 3);
        assert_eq!(count(&map(&[("text", t(""))])), 0);
    }

    #[test]
    fn tool_use_counts_its_name_as_text_and_input_as_json() {
        // {"q": "abc"} is 12 characters: 6; "search": 2.
        let with_input = map(&[(
            "toolUse",
            map(&[("name", t("search")), ("input", map(&[("q", t("abc"))]))]),
        )]);
        assert_eq!(block(&Values, H, &with_input).ok().map(|r| r.0), Some(8));
        // Without input it counts as {}: 1.
        let without = map(&[("toolUse", map(&[("name", t("search"))]))]);
        assert_eq!(count(&without), 3);
        assert!(matches!(block(&Values, H, &without), Ok((_, true))));
    }

    #[test]
    fn tool_result_counts_texts_and_json_values_and_rejected_json_as_zero() {
        let result = map(&[(
            "toolResult",
            map(&[(
                "content",
                V::List(vec![
                    map(&[("text", t("12345678"))]),
                    map(&[("json", V::List(vec![V::Int(1), V::Int(2)]))]),
                    map(&[("json", V::Bytes)]),
                ]),
            )]),
        )]);
        // 8 chars: 2; "[1, 2]" is 6: 3; bytes: 0.
        assert_eq!(count(&result), 5);
    }

    #[test]
    fn reasoning_guard_and_citations_count_their_texts() {
        let b = map(&[
            (
                "reasoningContent",
                map(&[("reasoningText", map(&[("text", t("abcd"))]))]),
            ),
            (
                "guardContent",
                map(&[("text", map(&[("text", t("abcdefgh"))]))]),
            ),
            (
                "citationsContent",
                map(&[(
                    "content",
                    V::List(vec![map(&[("text", t("a"))]), map(&[("text", t("b"))])]),
                )]),
            ),
        ]);
        assert_eq!(count(&b), 1 + 2 + 1 + 1);
    }

    #[test]
    fn binary_and_unknown_blocks_count_zero() {
        let image = map(&[(
            "image",
            map(&[
                ("format", t("png")),
                ("source", map(&[("bytes", V::Bytes)])),
            ]),
        )]);
        assert_eq!(count(&image), 0);
        assert_eq!(count(&map(&[("document", t("x".repeat(400).as_str()))])), 0);
    }

    #[test]
    fn shapes_the_policy_does_not_read_are_misses() {
        for b in [
            t("a block that is text"),
            map(&[("text", V::Int(3))]),
            map(&[("toolUse", t("not a map"))]),
            map(&[("toolResult", map(&[("content", t("not a list"))]))]),
            map(&[(
                "toolResult",
                map(&[("content", V::List(vec![t("not a map")]))]),
            )]),
        ] {
            assert!(matches!(block(&Values, H, &b), Err(Miss::Shape)), "{b:?}");
        }
    }

    #[test]
    fn exact_counter_counts_tokens_of_texts_and_single_line_json() {
        let bpe = Bpe::Cl100kBase;
        let b = map(&[(
            "toolUse",
            map(&[("name", t("search")), ("input", map(&[("q", t("abc"))]))]),
        )]);
        let expected =
            crate::tokens::count("search", bpe) + crate::tokens::count("{\"q\": \"abc\"}", bpe);
        assert_eq!(
            block(&Values, Encoding::Bpe(bpe), &b).ok().map(|r| r.0),
            Some(expected)
        );
    }

    #[test]
    fn messages_report_each_sum_and_largest_block() {
        let m = |texts: &[&str]| {
            map(&[(
                "content",
                V::List(texts.iter().map(|s| map(&[("text", t(s))])).collect()),
            )])
        };
        let conversation = V::List(vec![m(&["abcd", "abcdefgh"]), m(&[]), m(&["a"])]);
        let mut seen = Vec::new();
        let walked = messages(
            &Values,
            &conversation,
            |b| block(&Values, H, b).map(|r| r.0),
            |i, sum, largest| seen.push((i, sum, largest)),
        );
        assert!(walked.is_ok());
        assert_eq!(seen, [(0, 3, 2), (1, 0, 0), (2, 1, 1)]);
        // A message without content is a miss.
        let missing = V::List(vec![map(&[("role", t("user"))])]);
        assert!(matches!(
            messages(&Values, &missing, |_| Ok(0), |_, _, _| {}),
            Err(Miss::Shape)
        ));
    }

    #[test]
    fn result_stops_reading_once_past_its_limit() {
        let content = V::List(vec![
            map(&[("text", t("abcdefgh"))]),
            map(&[("text", t("abcdefgh"))]),
            t("never read: not a map"),
        ]);
        let text_count = |v: &V, _left: Option<usize>| text(&Values, H, v, None);
        let json_count = |v: &V, _left: Option<usize>| Values.json_chars(v);
        assert!(matches!(
            result(&Values, &content, Some(3), text_count, json_count),
            Ok(4)
        ));
        assert!(matches!(
            result(&Values, &content, None, text_count, json_count),
            Err(Miss::Shape)
        ));
    }

    #[test]
    fn scaled_rounds_halves_to_even() {
        assert_eq!(scaled(10, 100, 10), 50);
        assert_eq!(scaled(1, 5, 2), 1); // 1.25
        assert_eq!(scaled(5, 1, 2), 1); // 1.25
        assert_eq!(scaled(3, 5, 3), 2); // 2.5 -> 2
        assert_eq!(scaled(7, 5, 5), 4); // 3.5 -> 4
    }
}
