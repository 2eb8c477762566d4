//! Redis glob-style matching (`KEYS`, `SCAN MATCH`), a port of `stringmatchlen` from Redis 7's
//! `util.c`, including its guards against abusive patterns: a nesting limit of 1000 and the
//! "skip longer matches" rule that makes `*a*a*a*...b` linear-ish instead of exponential.

/// Whether `string` matches the glob `pattern`: `*`, `?`, `[abc]`, `[^a]`, `[a-z]` and `\`
/// escapes. `nocase` folds ASCII case.
///
/// One deliberate difference from `stringmatchlen`: an empty string matches a pattern made only
/// of `*` (Redis's matcher says no, but `KEYS *` and `SCAN MATCH *` short-cut that pattern and
/// so do return the empty key).
pub fn glob_match(pattern: &[u8], string: &[u8], nocase: bool) -> bool {
    if string.is_empty() {
        return pattern.iter().all(|&b| b == b'*');
    }
    let mut skip_longer = false;
    match_impl(pattern, string, nocase, &mut skip_longer, 0)
}

fn eq(a: u8, b: u8, nocase: bool) -> bool {
    if nocase {
        a.eq_ignore_ascii_case(&b)
    } else {
        a == b
    }
}

fn match_impl(
    pattern: &[u8],
    string: &[u8],
    nocase: bool,
    skip_longer: &mut bool,
    nesting: u32,
) -> bool {
    if nesting > 1000 {
        return false;
    }
    let (mut p, mut s) = (0usize, 0usize);
    let (plen, slen) = (pattern.len(), string.len());
    while p < plen && s < slen {
        match pattern[p] {
            b'*' => {
                while p + 1 < plen && pattern[p + 1] == b'*' {
                    p += 1;
                }
                if p + 1 == plen {
                    return true;
                }
                while s < slen {
                    if match_impl(
                        &pattern[p + 1..],
                        &string[s..],
                        nocase,
                        skip_longer,
                        nesting + 1,
                    ) {
                        return true;
                    }
                    if *skip_longer {
                        return false;
                    }
                    s += 1;
                }
                // The rest of the pattern matches nowhere in the rest of the string, so no
                // earlier '*' can help by matching more: stop the whole search.
                *skip_longer = true;
                return false;
            }
            b'?' => s += 1,
            b'[' => {
                p += 1;
                let not = p < plen && pattern[p] == b'^';
                if not {
                    p += 1;
                }
                let c = string[s];
                let mut matched = false;
                loop {
                    if p < plen && pattern[p] == b'\\' && plen - p >= 2 {
                        p += 1;
                        if pattern[p] == c {
                            matched = true;
                        }
                    } else if p < plen && pattern[p] == b']' {
                        break;
                    } else if p >= plen {
                        // Unterminated class: the final `p += 1` below ends the pattern.
                        p = plen - 1;
                        break;
                    } else if plen - p >= 3 && pattern[p + 1] == b'-' {
                        let (mut lo, mut hi) = (pattern[p], pattern[p + 2]);
                        if lo > hi {
                            std::mem::swap(&mut lo, &mut hi);
                        }
                        let mut ch = c;
                        if nocase {
                            lo = lo.to_ascii_lowercase();
                            hi = hi.to_ascii_lowercase();
                            ch = ch.to_ascii_lowercase();
                        }
                        p += 2;
                        if ch >= lo && ch <= hi {
                            matched = true;
                        }
                    } else if eq(pattern[p], c, nocase) {
                        matched = true;
                    }
                    p += 1;
                }
                if not {
                    matched = !matched;
                }
                if !matched {
                    return false;
                }
                s += 1;
            }
            b => {
                let lit = if b == b'\\' && plen - p >= 2 {
                    p += 1;
                    pattern[p]
                } else {
                    b
                };
                if !eq(lit, string[s], nocase) {
                    return false;
                }
                s += 1;
            }
        }
        p += 1;
        if s == slen {
            while p < plen && pattern[p] == b'*' {
                p += 1;
            }
            break;
        }
    }
    p == plen && s == slen
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn m(p: &str, s: &str) -> bool {
        glob_match(p.as_bytes(), s.as_bytes(), false)
    }

    #[test]
    fn literals_and_wildcards() {
        assert!(m("", ""));
        assert!(!m("", "a"));
        assert!(m("*", ""));
        assert!(m("*", "anything"));
        assert!(m("h?llo", "hello"));
        assert!(m("h?llo", "hallo"));
        assert!(!m("h?llo", "hllo"));
        assert!(m("h*llo", "hllo"));
        assert!(m("h*llo", "heeeello"));
        assert!(m("key:*", "key:000000000001"));
        assert!(!m("key:*", "kez:1"));
        assert!(m("*:1", "key:1"));
        assert!(m("a*b*c", "aXXbYYc"));
        assert!(!m("a*b*c", "aXXbYY"));
        assert!(m("a**", "a"));
        assert!(!m("?", ""));
    }

    #[test]
    fn classes() {
        assert!(m("h[ae]llo", "hello"));
        assert!(m("h[ae]llo", "hallo"));
        assert!(!m("h[ae]llo", "hillo"));
        assert!(m("h[^e]llo", "hallo"));
        assert!(!m("h[^e]llo", "hello"));
        assert!(m("h[a-b]llo", "hbllo"));
        assert!(!m("h[a-b]llo", "hcllo"));
        assert!(m("h[b-a]llo", "hallo"), "reversed range");
        assert!(m("[\\]]", "]"));
        // Unterminated class behaves like Redis: matches the listed bytes at the end.
        assert!(m("[ab", "a"));
        assert!(!m("[ab", "c"));
    }

    #[test]
    fn escapes_and_case() {
        assert!(m("\\*", "*"));
        assert!(!m("\\*", "a"));
        assert!(m("a\\?", "a?"));
        assert!(m("\\", "\\"));
        assert!(glob_match(b"HELLO", b"hello", true));
        assert!(!glob_match(b"HELLO", b"hello", false));
        assert!(glob_match(b"h[A-C]llo", b"hbllo", true));
        assert!(glob_match(b"[H]ello", b"hello", true));
    }

    #[test]
    fn pathological_patterns_finish_fast() {
        let start = Instant::now();
        let s = "a".repeat(5000);
        let p = "*a".repeat(500) + "b";
        assert!(!m(&p, &s));
        let p = "a*".repeat(2000) + "b";
        assert!(!m(&p, &s));
        let p = format!("{}*{}", "*".repeat(3000), "?".repeat(3000));
        assert!(m(&p, &s));
        // Deep nesting hits the guard and answers "no match" instead of overflowing the stack.
        let p = "a*".repeat(1500);
        let _ = m(&p, &s);
        assert!(start.elapsed() < Duration::from_secs(2));
    }
}
