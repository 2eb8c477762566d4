//! Inline command splitting, compatible with Redis's `sdssplitargs`.
//!
//! Rules (from Redis `sds.c`):
//! - blanks between arguments are skipped (C `isspace`: space, `\t`, `\n`, `\v`, `\f`, `\r`);
//! - an unquoted argument ends at space, `\t`, `\n` or `\r` (not at `\v`/`\f`);
//! - a `"` or `'` anywhere in an argument opens a quoted section of that argument;
//! - inside `"..."`: `\xHH` (two hex digits) is that byte, `\n \r \t \b \a` are the control
//!   characters, and a backslash before any other character is that character;
//! - inside `'...'`: only `\'` is an escape;
//! - a closing quote must be followed by a blank or the end of the line;
//! - an unterminated quote is an error.
//!
//! One deliberate difference: C strings end at a NUL byte, so Redis never sees anything after
//! one (its reader in fact stalls on an inline line with a NUL). Here a NUL is an ordinary byte.

use bytes::Bytes;

/// C `isspace` in the "C" locale.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Splits an inline command line into arguments the way Redis's `sdssplitargs` does.
///
/// Returns `None` for unbalanced quotes (an unterminated quote, or a closing quote followed by
/// something other than a blank). A blank line gives an empty vector.
pub fn split_args(line: &[u8]) -> Option<Vec<Bytes>> {
    let at = |i: usize| line.get(i).copied();
    let mut args = Vec::new();
    let mut p = 0;
    loop {
        while at(p).is_some_and(is_space) {
            p += 1;
        }
        if p >= line.len() {
            return Some(args);
        }
        let mut current = Vec::new();
        let mut in_double = false;
        let mut in_single = false;
        loop {
            let Some(c) = at(p) else {
                if in_double || in_single {
                    return None; // unterminated quotes
                }
                break;
            };
            if in_double {
                if c == b'\\' && at(p + 1) == Some(b'x') {
                    if let (Some(hi), Some(lo)) =
                        (at(p + 2).and_then(hex_value), at(p + 3).and_then(hex_value))
                    {
                        current.push(hi * 16 + lo);
                        p += 4;
                        continue;
                    }
                }
                if c == b'\\' && p + 1 < line.len() {
                    p += 1;
                    current.push(match line[p] {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 0x08,
                        b'a' => 0x07,
                        other => other,
                    });
                } else if c == b'"' {
                    if at(p + 1).is_some_and(|n| !is_space(n)) {
                        return None;
                    }
                    p += 1;
                    break;
                } else {
                    current.push(c);
                }
            } else if in_single {
                if c == b'\\' && at(p + 1) == Some(b'\'') {
                    p += 1;
                    current.push(b'\'');
                } else if c == b'\'' {
                    if at(p + 1).is_some_and(|n| !is_space(n)) {
                        return None;
                    }
                    p += 1;
                    break;
                } else {
                    current.push(c);
                }
            } else {
                match c {
                    b' ' | b'\n' | b'\r' | b'\t' => {
                        p += 1;
                        break;
                    }
                    b'"' => in_double = true,
                    b'\'' => in_single = true,
                    _ => current.push(c),
                }
            }
            p += 1;
        }
        args.push(Bytes::from(current));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(line: &[u8]) -> Option<Vec<Vec<u8>>> {
        split_args(line).map(|v| v.into_iter().map(|b| b.to_vec()).collect())
    }

    fn ok(line: &[u8], want: &[&[u8]]) {
        let got = split(line).unwrap_or_else(|| panic!("{line:?} should split"));
        let want: Vec<Vec<u8>> = want.iter().map(|w| w.to_vec()).collect();
        assert_eq!(got, want, "line {:?}", String::from_utf8_lossy(line));
    }

    #[test]
    fn plain_words_and_blanks() {
        ok(b"", &[]);
        ok(b"   \t ", &[]);
        ok(b"PING", &[b"PING"]);
        ok(b"  SET  key   value  ", &[b"SET", b"key", b"value"]);
        ok(b"a\tb\rc\nd", &[b"a", b"b", b"c", b"d"]);
        // \v and \f are skipped as leading blanks but do not end an unquoted argument.
        ok(b"\x0b\x0ca\x0bb", &[b"a\x0bb"]);
        ok(b"\x00a", &[b"\x00a"]);
    }

    #[test]
    fn double_quotes_and_escapes() {
        ok(b"set \"hello world\"", &[b"set", b"hello world"]);
        ok(b"\"\"", &[b""]);
        ok(b"\"\" \"\"", &[b"", b""]);
        ok(br#""\n\r\t\b\a\\\"\q""#, &[b"\n\r\t\x08\x07\\\"q"]);
        ok(br#""\x41\x4a\x4B\xff\x00""#, &[b"AJK\xff\x00"]);
        // Not two hex digits: backslash+x is just 'x', the rest is literal.
        ok(br#""\x4g""#, &[b"x4g"]);
        ok(br#""\x4""#, &[b"x4"]);
        // Quotes may start mid-argument.
        ok(br#"foo"bar baz" x"#, &[b"foobar baz", b"x"]);
        // Closing quote followed by any blank, including \v.
        ok(b"\"a\"\x0bb", &[b"a", b"b"]);
        // Single quote inside double quotes is literal.
        ok(br#""it's""#, &[b"it's"]);
    }

    #[test]
    fn single_quotes() {
        ok(b"'hello world'", &[b"hello world"]);
        ok(br"'it\'s'", &[b"it's"]);
        ok(br"'a\nb\x41'", &[br"a\nb\x41"]);
        ok(br#"'say "hi"'"#, &[br#"say "hi""#]);
        ok(b"''", &[b""]);
    }

    #[test]
    fn unbalanced_quotes() {
        assert_eq!(split(b"\"abc"), None);
        assert_eq!(split(b"'abc"), None);
        assert_eq!(split(b"\"abc\"def"), None);
        assert_eq!(split(b"'abc'def"), None);
        assert_eq!(split(b"\"abc\\\""), None);
        assert_eq!(split(b"\"abc\\"), None);
        assert_eq!(split(b"'abc\\'"), None);
        assert_eq!(split(b"set k \"v"), None);
    }
}
