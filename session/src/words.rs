//! A command line's words as redis-cli splits them (sdssplitargs), and back: `--mix-command`'s
//! arguments and memtier_benchmark's `--command`. A leaf: it uses nothing of the crate.

/// A line's arguments as redis-cli (and memtier_benchmark's `--command`) split it
/// (sdssplitargs): on blanks; a double- or single-quoted word kept whole, its closing quote
/// followed by a blank or the end; inside double quotes `\xHH` (two hex digits) is that byte
/// and `\n`, `\r`, `\t`, `\b`, `\a` theirs, `\` before any other character that
/// character; inside single quotes `\'` is a quote. [`quote_arg`] writes an argument back.
pub fn split_args(text: &str) -> Result<Vec<Vec<u8>>, String> {
    let b = text.as_bytes();
    let mut args = Vec::new();
    let mut i = 0;
    loop {
        while b.get(i).is_some_and(|c| c.is_ascii_whitespace()) {
            i += 1;
        }
        if i >= b.len() {
            return Ok(args);
        }
        let mut arg = Vec::new();
        let mut quote: Option<u8> = None;
        loop {
            let Some(&c) = b.get(i) else {
                if quote.is_some() {
                    return Err("a quote is not closed".into());
                }
                break;
            };
            i += 1;
            match quote {
                Some(b'"') if c == b'\\' => {
                    let digit = |d: &u8| char::from(*d).to_digit(16);
                    let hex = b.get(i + 1..i + 3).and_then(|h| Some(digit(&h[0])? << 4 | digit(&h[1])?));
                    match (b.get(i), hex) {
                        (Some(b'x'), Some(byte)) => {
                            arg.push(byte as u8);
                            i += 3;
                        }
                        (Some(&e), _) => {
                            arg.push(match e {
                                b'n' => b'\n',
                                b'r' => b'\r',
                                b't' => b'\t',
                                b'b' => 8,
                                b'a' => 7,
                                other => other,
                            });
                            i += 1;
                        }
                        (None, _) => return Err("a quote is not closed".into()),
                    }
                }
                Some(b'\'') if c == b'\\' && b.get(i) == Some(&b'\'') => {
                    arg.push(b'\'');
                    i += 1;
                }
                Some(q) if c == q => {
                    if b.get(i).is_some_and(|n| !n.is_ascii_whitespace()) {
                        return Err("a closing quote must be followed by a blank".into());
                    }
                    break;
                }
                Some(_) => arg.push(c),
                None if c.is_ascii_whitespace() => break,
                None if c == b'"' || c == b'\'' => quote = Some(c),
                None => arg.push(c),
            }
        }
        args.push(arg);
    }
}

/// `arg` as [`split_args`] reads it back: as it is when it is printable ASCII with no blank,
/// quote or backslash, else in double quotes, `"` and `\` escaped and any byte outside
/// printable ASCII written `\xHH`.
pub fn quote_arg(arg: &[u8]) -> String {
    let plain = |c: &u8| c.is_ascii_graphic() && !matches!(c, b'"' | b'\'' | b'\\');
    if !arg.is_empty() && arg.iter().all(plain) {
        return String::from_utf8_lossy(arg).into_owned();
    }
    let mut out = String::with_capacity(arg.len() + 2);
    out.push('"');
    for &c in arg {
        match c {
            b'"' | b'\\' => {
                out.push('\\');
                out.push(char::from(c));
            }
            b' '..=b'~' => out.push(char::from(c)),
            _ => out.push_str(&format!("\\x{c:02x}")),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args_split_as_redis_cli_splits_them() {
        let split = |t: &str| {
            split_args(t)
                .map(|a| a.iter().map(|w| String::from_utf8_lossy(w).into_owned()).collect::<Vec<_>>())
        };
        assert_eq!(split("  SET  k\tv ").unwrap(), ["SET", "k", "v"]);
        assert_eq!(split(r#"a"b c" "" 'x\'y' "\n\q\x4a\xzz""#).unwrap(), ["ab c", "", "x'y", "\nqJxzz"]);
        for bad in [r#""open"#, "'open", r#""a"b"#, r#""a\"#] {
            assert!(split_args(bad).is_err(), "{bad}");
        }
        assert_eq!(split_args("").unwrap(), Vec::<Vec<u8>>::new());
        // Every byte string comes back through quote_arg.
        let mut rng = respbench_core::rng::Rng::new(5);
        for len in 0..200usize {
            let arg: Vec<u8> = (0..len % 40).map(|_| rng.below(256) as u8).collect();
            let quoted = quote_arg(&arg);
            assert_eq!(split_args(&quoted).unwrap(), std::slice::from_ref(&arg), "{quoted}");
            let line = format!("{quoted} {quoted}");
            assert_eq!(split_args(&line).unwrap(), [arg.clone(), arg], "{line}");
        }
        assert_eq!(quote_arg(b"memtier-12"), "memtier-12");
        assert_eq!(quote_arg(b"User 1"), "\"User 1\"");
        assert_eq!(quote_arg(b"\x86"), "\"\\x86\"");
    }
}
