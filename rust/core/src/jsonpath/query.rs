//! The query language: a JSONPath subset, parsed into a small syntax tree.
//!
//! ```text
//! query     = "$" segment* | segment+       (jq style: `.items[0]` = `$.items[0]`)
//! segment   = "." name | ".*" | ".." name | "..*" | ".." bracket | bracket
//! bracket   = "[" selector ("," selector)* "]"
//! selector  = 'name' | "name" | "*" | index | slice | filter
//! index     = -?digits                     (negative counts from the end)
//! slice     = index? ":" index? (":" index?)?   (Python's slice semantics)
//! filter    = "?" or
//! or        = and ("||" and)*
//! and       = unary ("&&" unary)*
//! unary     = "!" unary | "(" or ")" | test
//! test      = path | path op literal
//! path      = "@" ("." name | "[" 'name' "]" | "[" index "]")*
//! op        = "==" | "!=" | "<" | "<=" | ">" | ">="
//! literal   = number | 'string' | "string" | true | false | null
//! ```
//!
//! Whitespace may appear between segments and around tokens inside brackets.
//! Errors name the position (in code points) and what was expected there.
use std::fmt;

use super::document::push_wtf8;

/// A parsed query: segments applied left to right, starting at the root.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    /// The segments after `$`.
    pub segments: Vec<Segment>,
}

/// One step of the query.
#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    /// `..`: apply the selectors to the node and every descendant.
    pub descendant: bool,
    /// The selectors; their results are concatenated in this order.
    pub selectors: Vec<Selector>,
}

/// What a segment picks from a node's children.
#[derive(Debug, Clone, PartialEq)]
pub enum Selector {
    /// An object member by name (WTF-8 bytes of the decoded name).
    Name(Vec<u8>),
    /// An array item; negative counts from the end.
    Index(i64),
    /// Array items of a Python slice.
    Slice {
        /// Start, Python's default when absent.
        start: Option<i64>,
        /// Stop, Python's default when absent.
        end: Option<i64>,
        /// Step (never zero), 1 when absent.
        step: Option<i64>,
    },
    /// Every array item or object member value.
    Wildcard,
    /// The array items or member values the test accepts.
    Filter(Filter),
}

/// A filter test on a child (`@`).
#[derive(Debug, Clone, PartialEq)]
pub enum Filter {
    /// `@.path` exists.
    Exists(Vec<Step>),
    /// `@.path op literal`.
    Compare(Vec<Step>, Op, Literal),
    /// `a && b && ...`: every part holds.
    And(Vec<Filter>),
    /// `a || b || ...`: some part holds.
    Or(Vec<Filter>),
    /// `!a`.
    Not(Box<Filter>),
}

/// Deepest nesting of `(` and `!` inside one filter.
pub const MAX_FILTER_DEPTH: usize = 64;

/// One step of a filter path below `@`.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Object member by name (WTF-8 bytes).
    Name(Vec<u8>),
    /// Array item; negative counts from the end.
    Index(i64),
}

/// Comparison operators of filters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

/// A literal on the right of a comparison.
#[derive(Debug, Clone, PartialEq)]
pub enum Literal {
    /// Number text as written (JSON number syntax).
    Number(String),
    /// A string (WTF-8 bytes).
    String(Vec<u8>),
    /// `true`.
    True,
    /// `false`.
    False,
    /// `null`.
    Null,
}

/// A query that does not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryError {
    /// Position of the problem in code points.
    pub position: usize,
    /// What is wrong there.
    pub message: String,
}

impl fmt::Display for QueryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid query at position {}: {}",
            self.position, self.message
        )
    }
}

impl std::error::Error for QueryError {}

struct Parser {
    chars: Vec<char>,
    i: usize,
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '$') || !c.is_ascii()
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.i).copied()
    }

    fn peek_at(&self, k: usize) -> Option<char> {
        self.chars.get(self.i + k).copied()
    }

    fn skip_ws(&mut self) {
        while self
            .peek()
            .is_some_and(|c| matches!(c, ' ' | '\t' | '\n' | '\r'))
        {
            self.i += 1;
        }
    }

    fn found(&self) -> String {
        match self.peek() {
            Some(c) => format!("found {c:?}"),
            None => "found end of query".to_string(),
        }
    }

    fn expected(&self, what: &str) -> QueryError {
        QueryError {
            position: self.i,
            message: format!("expected {what}, {}", self.found()),
        }
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn query(&mut self) -> Result<Query, QueryError> {
        self.skip_ws();
        // jq style: a query starting with `.` or `[` starts at the root.
        if !self.eat('$') && !matches!(self.peek(), Some('.' | '[')) {
            return Err(self.expected("'$' (a query starts at the root, like $.items[0])"));
        }
        let mut segments = Vec::new();
        loop {
            self.skip_ws();
            match self.peek() {
                None => break,
                Some('.') if self.peek_at(1) == Some('.') => {
                    self.i += 2;
                    let selectors = match self.peek() {
                        Some('*') => {
                            self.i += 1;
                            vec![Selector::Wildcard]
                        }
                        Some('[') => self.bracket()?,
                        Some(c) if is_name_char(c) => vec![Selector::Name(self.name())],
                        _ => return Err(self.expected("a name, '*' or '[' after '..'")),
                    };
                    segments.push(Segment {
                        descendant: true,
                        selectors,
                    });
                }
                Some('.') => {
                    self.i += 1;
                    let selector = match self.peek() {
                        Some('*') => {
                            self.i += 1;
                            Selector::Wildcard
                        }
                        Some(c) if is_name_char(c) => Selector::Name(self.name()),
                        _ => return Err(self.expected("a name or '*' after '.'")),
                    };
                    segments.push(Segment {
                        descendant: false,
                        selectors: vec![selector],
                    });
                }
                Some('[') => {
                    let selectors = self.bracket()?;
                    segments.push(Segment {
                        descendant: false,
                        selectors,
                    });
                }
                Some(_) => return Err(self.expected("'.', '..', '[' or the end of the query")),
            }
        }
        Ok(Query { segments })
    }

    /// A dot name (the caller checked that one starts here).
    fn name(&mut self) -> Vec<u8> {
        let mut out = String::new();
        while let Some(c) = self.peek().filter(|&c| is_name_char(c)) {
            out.push(c);
            self.i += 1;
        }
        out.into_bytes()
    }

    /// `[ selector, ... ]` starting at `[`.
    fn bracket(&mut self) -> Result<Vec<Selector>, QueryError> {
        self.i += 1;
        let mut selectors = Vec::new();
        loop {
            self.skip_ws();
            selectors.push(self.selector()?);
            self.skip_ws();
            if self.eat(',') {
                continue;
            }
            if self.eat(']') {
                return Ok(selectors);
            }
            return Err(self.expected("',' or ']'"));
        }
    }

    fn selector(&mut self) -> Result<Selector, QueryError> {
        match self.peek() {
            Some('\'' | '"') => Ok(Selector::Name(self.string()?)),
            Some('*') => {
                self.i += 1;
                Ok(Selector::Wildcard)
            }
            Some('?') => {
                self.i += 1;
                Ok(Selector::Filter(self.filter()?))
            }
            Some('-' | '0'..='9' | ':') => self.index_or_slice(),
            _ => Err(self
                .expected("a selector: an index, a slice, a quoted name, '*' or a ?(@...) filter")),
        }
    }

    fn int(&mut self) -> Result<i64, QueryError> {
        let start = self.i;
        let negative = self.eat('-');
        let mut value: i64 = 0;
        let mut any = false;
        while let Some(d) = self.peek().and_then(|c| c.to_digit(10)) {
            any = true;
            value = value
                .checked_mul(10)
                .and_then(|v| v.checked_add(i64::from(d)))
                .ok_or(QueryError {
                    position: start,
                    message: "integer out of range".to_string(),
                })?;
            self.i += 1;
        }
        if !any {
            return Err(self.expected("a digit"));
        }
        Ok(if negative { -value } else { value })
    }

    fn optional_int(&mut self) -> Result<Option<i64>, QueryError> {
        if matches!(self.peek(), Some('-' | '0'..='9')) {
            self.int().map(Some)
        } else {
            Ok(None)
        }
    }

    fn index_or_slice(&mut self) -> Result<Selector, QueryError> {
        let start = self.optional_int()?;
        self.skip_ws();
        if !self.eat(':') {
            // optional_int only returns None when no digit or '-' starts here,
            // and the caller saw one of '-', a digit or ':'.
            return start
                .map(Selector::Index)
                .ok_or_else(|| self.expected("an index"));
        }
        self.skip_ws();
        let end = self.optional_int()?;
        self.skip_ws();
        let mut step = None;
        if self.eat(':') {
            self.skip_ws();
            let at = self.i;
            step = self.optional_int()?;
            if step == Some(0) {
                return Err(QueryError {
                    position: at,
                    message: "slice step cannot be zero".to_string(),
                });
            }
        }
        Ok(Selector::Slice { start, end, step })
    }

    /// A quoted string starting at its quote; returns WTF-8 bytes.
    fn string(&mut self) -> Result<Vec<u8>, QueryError> {
        let open = self.i;
        let Some(quote) = self.peek() else {
            return Err(self.expected("a quoted string"));
        };
        self.i += 1;
        let mut out = Vec::new();
        loop {
            let Some(c) = self.peek() else {
                return Err(QueryError {
                    position: open,
                    message: format!("unterminated string (no closing {quote})"),
                });
            };
            self.i += 1;
            if c == quote {
                return Ok(out);
            }
            if c != '\\' {
                push_wtf8(&mut out, u32::from(c));
                continue;
            }
            let cp = match self.peek() {
                Some(e @ ('"' | '\'' | '\\' | '/')) => u32::from(e),
                Some('b') => 0x08,
                Some('f') => 0x0c,
                Some('n') => 0x0a,
                Some('r') => 0x0d,
                Some('t') => 0x09,
                Some('u') => {
                    self.i += 1;
                    let unit = self.hex4()?;
                    let mut cp = unit;
                    if (0xd800..0xdc00).contains(&unit)
                        && self.peek() == Some('\\')
                        && self.peek_at(1) == Some('u')
                    {
                        let save = self.i;
                        self.i += 2;
                        let low = self.hex4()?;
                        if (0xdc00..0xe000).contains(&low) {
                            cp = 0x1_0000 + ((unit - 0xd800) << 10) + (low - 0xdc00);
                        } else {
                            self.i = save;
                        }
                    }
                    push_wtf8(&mut out, cp);
                    continue;
                }
                _ => {
                    return Err(self.expected(
                        "an escape (\\\\, \\', \\\", \\/, \\b, \\f, \\n, \\r, \\t or \\uXXXX) after '\\'",
                    ))
                }
            };
            self.i += 1;
            push_wtf8(&mut out, cp);
        }
    }

    fn hex4(&mut self) -> Result<u32, QueryError> {
        let mut v = 0;
        for _ in 0..4 {
            let Some(d) = self.peek().and_then(|c| c.to_digit(16)) else {
                return Err(self.expected("four hex digits after \\u"));
            };
            v = v * 16 + d;
            self.i += 1;
        }
        Ok(v)
    }

    /// After `?`: a test expression.
    fn filter(&mut self) -> Result<Filter, QueryError> {
        self.or_expr(0)
    }

    fn or_expr(&mut self, depth: usize) -> Result<Filter, QueryError> {
        let mut parts = vec![self.and_expr(depth)?];
        loop {
            self.skip_ws();
            if self.peek() == Some('|') && self.peek_at(1) == Some('|') {
                self.i += 2;
                parts.push(self.and_expr(depth)?);
            } else {
                break;
            }
        }
        Ok(if parts.len() == 1 {
            parts.swap_remove(0)
        } else {
            Filter::Or(parts)
        })
    }

    fn and_expr(&mut self, depth: usize) -> Result<Filter, QueryError> {
        let mut parts = vec![self.unary(depth)?];
        loop {
            self.skip_ws();
            if self.peek() == Some('&') && self.peek_at(1) == Some('&') {
                self.i += 2;
                parts.push(self.unary(depth)?);
            } else {
                break;
            }
        }
        Ok(if parts.len() == 1 {
            parts.swap_remove(0)
        } else {
            Filter::And(parts)
        })
    }

    fn unary(&mut self, depth: usize) -> Result<Filter, QueryError> {
        self.skip_ws();
        if depth >= MAX_FILTER_DEPTH {
            return Err(QueryError {
                position: self.i,
                message: format!("filter nested deeper than {MAX_FILTER_DEPTH} levels"),
            });
        }
        if self.peek() == Some('!') && self.peek_at(1) != Some('=') {
            self.i += 1;
            return Ok(Filter::Not(Box::new(self.unary(depth + 1)?)));
        }
        if self.eat('(') {
            let inner = self.or_expr(depth + 1)?;
            self.skip_ws();
            if !self.eat(')') {
                return Err(self.expected("'&&', '||' or ')' to close the filter"));
            }
            return Ok(inner);
        }
        self.test()
    }

    /// `@path` or `@path op literal`.
    fn test(&mut self) -> Result<Filter, QueryError> {
        if !self.eat('@') {
            return Err(self.expected("'@' (the filter tests the current item, like ?(@.id == 3))"));
        }
        let mut path = Vec::new();
        loop {
            match self.peek() {
                Some('.') => {
                    self.i += 1;
                    match self.peek() {
                        Some(c) if is_name_char(c) => path.push(Step::Name(self.name())),
                        _ => return Err(self.expected("a name after '.'")),
                    }
                }
                Some('[') => {
                    self.i += 1;
                    self.skip_ws();
                    let step = match self.peek() {
                        Some('\'' | '"') => Step::Name(self.string()?),
                        Some('-' | '0'..='9') => Step::Index(self.int()?),
                        _ => return Err(self.expected("a quoted name or an index")),
                    };
                    self.skip_ws();
                    if !self.eat(']') {
                        return Err(self.expected("']'"));
                    }
                    path.push(step);
                }
                _ => break,
            }
        }
        self.skip_ws();
        let op = match (self.peek(), self.peek_at(1)) {
            (Some('='), Some('=')) => Some((Op::Eq, 2)),
            (Some('!'), Some('=')) => Some((Op::Ne, 2)),
            (Some('<'), Some('=')) => Some((Op::Le, 2)),
            (Some('>'), Some('=')) => Some((Op::Ge, 2)),
            (Some('<'), _) => Some((Op::Lt, 1)),
            (Some('>'), _) => Some((Op::Gt, 1)),
            (Some('=' | '!'), _) => {
                return Err(self.expected("a comparison operator (==, !=, <, <=, >, >=)"))
            }
            _ => None,
        };
        Ok(match op {
            None => Filter::Exists(path),
            Some((op, width)) => {
                self.i += width;
                self.skip_ws();
                Filter::Compare(path, op, self.literal()?)
            }
        })
    }

    fn literal(&mut self) -> Result<Literal, QueryError> {
        const WHAT: &str = "a literal: a number, a quoted string, true, false or null";
        match self.peek() {
            Some('\'' | '"') => Ok(Literal::String(self.string()?)),
            Some('-' | '0'..='9') => self.number(),
            Some(c) if c.is_ascii_alphabetic() => {
                let start = self.i;
                let mut word = String::new();
                while let Some(c) = self.peek().filter(char::is_ascii_alphanumeric) {
                    word.push(c);
                    self.i += 1;
                }
                match word.as_str() {
                    "true" => Ok(Literal::True),
                    "false" => Ok(Literal::False),
                    "null" => Ok(Literal::Null),
                    _ => {
                        self.i = start;
                        Err(self.expected(WHAT))
                    }
                }
            }
            _ => Err(self.expected(WHAT)),
        }
    }

    fn digits(&mut self) -> Result<(), QueryError> {
        if !self.peek().is_some_and(|c| c.is_ascii_digit()) {
            return Err(self.expected("a digit"));
        }
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.i += 1;
        }
        Ok(())
    }

    fn number(&mut self) -> Result<Literal, QueryError> {
        let start = self.i;
        self.eat('-');
        self.digits()?;
        if self.eat('.') {
            self.digits()?;
        }
        if matches!(self.peek(), Some('e' | 'E')) {
            self.i += 1;
            if matches!(self.peek(), Some('+' | '-')) {
                self.i += 1;
            }
            self.digits()?;
        }
        Ok(Literal::Number(self.chars[start..self.i].iter().collect()))
    }
}

/// Parse a query.
pub fn parse(query: &str) -> Result<Query, QueryError> {
    Parser {
        chars: query.chars().collect(),
        i: 0,
    }
    .query()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(s: &str) -> Selector {
        Selector::Name(s.as_bytes().to_vec())
    }

    fn err(q: &str) -> String {
        parse(q).unwrap_err().to_string()
    }

    #[test]
    fn parses_the_subset() {
        let q = parse("$.items[3].name").unwrap();
        assert_eq!(q.segments.len(), 3);
        assert_eq!(q.segments[1].selectors, vec![Selector::Index(3)]);
        let q = parse("$..['a', \"b\\u00e9\"][*][::-1] [1:, :2]").unwrap();
        assert!(q.segments[0].descendant);
        assert_eq!(q.segments[0].selectors, vec![name("a"), name("bé")]);
        assert_eq!(q.segments[1].selectors, vec![Selector::Wildcard]);
        assert_eq!(
            q.segments[2].selectors,
            vec![Selector::Slice {
                start: None,
                end: None,
                step: Some(-1)
            }]
        );
        let q = parse("$[?(@.a['b'][0] >= -1.5e3)]").unwrap();
        assert_eq!(
            q.segments[0].selectors,
            vec![Selector::Filter(Filter::Compare(
                vec![
                    Step::Name(b"a".to_vec()),
                    Step::Name(b"b".to_vec()),
                    Step::Index(0)
                ],
                Op::Ge,
                Literal::Number("-1.5e3".into())
            ))]
        );
        assert_eq!(
            parse("$[?@.x]").unwrap().segments[0].selectors,
            vec![Selector::Filter(Filter::Exists(vec![Step::Name(
                b"x".to_vec()
            )]))]
        );
    }

    #[test]
    fn root_may_be_implicit() {
        assert_eq!(parse(".items[3].name"), parse("$.items[3].name"));
        assert_eq!(parse("[0]"), parse("$[0]"));
        assert_eq!(parse("..a"), parse("$..a"));
        assert!(parse("").is_err());
    }

    #[test]
    fn errors_name_position_and_expectation() {
        assert_eq!(
            err("$.items[3"),
            "invalid query at position 9: expected ',' or ']', found end of query"
        );
        assert_eq!(
            err("items"),
            "invalid query at position 0: expected '$' (a query starts at the root, like $.items[0]), found 'i'"
        );
        assert_eq!(
            err("$[::0]"),
            "invalid query at position 4: slice step cannot be zero"
        );
        assert!(err("$[?(@.a = 1)]")
            .starts_with("invalid query at position 8: expected a comparison operator"));
        assert!(err("$['abc").starts_with("invalid query at position 2: unterminated string"));
        assert!(err("$[?(@.a == nope)]")
            .starts_with("invalid query at position 11: expected a literal"));
    }
}
