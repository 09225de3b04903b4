//! The filter's text as tokens: parentheses, the logical operators in `ss`'s spellings (`and`
//! `&&` `&`, `or` `||` `|`, `not` `!`), comparisons (`<` `<=` `>` `>=` `=` `==` `!=`), and words,
//! which run to the next space or operator character (so `srtt>100ms` is three tokens, and
//! `10.0.0.0/8`, `::1` and `shop/frontend` are one).

use super::expr::Cmp;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Open,
    Close,
    And,
    Or,
    Not,
    Cmp(Cmp),
    Word,
}

/// A token and its text, for errors that name it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Token<'a> {
    pub kind: Kind,
    pub text: &'a str,
}

/// Characters that end a word.
fn special(c: char) -> bool {
    matches!(c, '(' | ')' | '!' | '<' | '>' | '=' | '&' | '|')
}

/// Every character of `s` is in a token or is a space: lexing cannot fail.
pub fn tokens(s: &str) -> Vec<Token<'_>> {
    let mut out = Vec::new();
    let mut rest = s.trim_start();
    while let Some(c) = rest.chars().next() {
        let two = rest.get(..2).unwrap_or("");
        let (kind, len) = match (c, two) {
            (_, "&&") => (Kind::And, 2),
            (_, "||") => (Kind::Or, 2),
            (_, "<=") => (Kind::Cmp(Cmp::Le), 2),
            (_, ">=") => (Kind::Cmp(Cmp::Ge), 2),
            (_, "==") => (Kind::Cmp(Cmp::Eq), 2),
            (_, "!=") => (Kind::Cmp(Cmp::Ne), 2),
            ('(', _) => (Kind::Open, 1),
            (')', _) => (Kind::Close, 1),
            ('&', _) => (Kind::And, 1),
            ('|', _) => (Kind::Or, 1),
            ('!', _) => (Kind::Not, 1),
            ('<', _) => (Kind::Cmp(Cmp::Lt), 1),
            ('>', _) => (Kind::Cmp(Cmp::Gt), 1),
            ('=', _) => (Kind::Cmp(Cmp::Eq), 1),
            _ => {
                let len = rest.find(|c: char| c.is_whitespace() || special(c)).unwrap_or(rest.len());
                let kind = match rest[..len].to_ascii_lowercase().as_str() {
                    "and" => Kind::And,
                    "or" => Kind::Or,
                    "not" => Kind::Not,
                    _ => Kind::Word,
                };
                (kind, len)
            }
        };
        out.push(Token { kind, text: &rest[..len] });
        rest = rest[len..].trim_start();
    }
    out
}

/// `ss`'s comparison words (`dport eq 443`, `sport ge 1024`), read where a comparison may come.
pub fn cmp_word(w: &str) -> Option<Cmp> {
    Some(match w {
        "eq" => Cmp::Eq,
        "ne" | "neq" => Cmp::Ne,
        "lt" => Cmp::Lt,
        "le" => Cmp::Le,
        "gt" => Cmp::Gt,
        "ge" => Cmp::Ge,
        _ => return None,
    })
}
