//! Issue 23, valkey-benchmark 9's `--dataset FILE` and `--maxdocs N`: the rows of a CSV or TSV
//! file fill a custom command's `__field:NAME__` placeholders, one row per request in turn.
//! The behaviour is the session's: once, on mio.

use std::path::PathBuf;
use std::time::Duration;

use respbench_tests::{RedisServer, Tool};

const T: Duration = Duration::from_secs(60);

respbench_tests::backend_tests!(
    every: [],
    mio: [
        rows_fill_the_fields_in_turn,
        maxdocs_caps_the_rows_read,
        a_tsv_file_works,
        ragged_rows_fill_empty_fields,
        an_xml_file_with_its_root_element,
        a_base64_field_is_sent_decoded,
        bad_datasets_exit_1_before_connecting,
        a_dataset_is_read_to_a_bound,
        a_signal_ends_the_read_of_a_dataset,
    ],
);

/// A file named `name` (its extension picks the format) in the temp directory holding `text`.
fn file(name: &str, text: &[u8]) -> PathBuf {
    let path = std::env::temp_dir().join(format!("respbench-dataset-{}-{name}", std::process::id()));
    std::fs::write(&path, text).unwrap();
    path
}

const CSV: &[u8] = b"id,name\n1,alice\n2,\"bob, jr\"\n3,carol\n";

/// `-n 6` over three rows takes each twice: exactly the three keys, with their values.
fn rows_fill_the_fields_in_turn(tool: Tool) {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let csv = file("people.csv", CSV);
    let out = tool.run(
        &[
            "-p",
            &port,
            "-n",
            "6",
            "-c",
            "2",
            "-q",
            "--dataset",
            csv.to_str().unwrap(),
            "--",
            "SET",
            "key:__field:id__",
            "__field:name__",
        ],
        T,
    );
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(server.dbsize(0), 3);
    assert_eq!(server.cli(&["MGET", "key:1", "key:2", "key:3"]).trim(), "alice\nbob, jr\ncarol");
    assert_eq!(server.command_calls("set"), 6);
}

/// As valkey-benchmark 9 reads them: a row with fewer fields than the header has the missing
/// ones empty, and fields past the header's are dropped.
fn ragged_rows_fill_empty_fields(tool: Tool) {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let csv = file("ragged.csv", b"id,name,city\n1,alice\n2\n3,carol,rome,extra\n");
    let args = [
        "-p",
        &port,
        "-c",
        "1",
        "-n",
        "3",
        "-q",
        "--dataset",
        csv.to_str().unwrap(),
        "--",
        "RPUSH",
        "l",
        "__field:id__:__field:name__:__field:city__",
    ];
    let out = tool.run(&args, T);
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(server.cli(&["LRANGE", "l", "0", "-1"]).trim(), "1:alice:\n2::\n3:carol:rome");
}

/// An XML dataset (valkey-benchmark 9): each `<doc>` is a row, its child tags the fields; the
/// root element must be given.
fn an_xml_file_with_its_root_element(tool: Tool) {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let xml = file(
        "books.xml",
        b"<?xml version=\"1.0\"?>\n<library>\n  <doc>\n    <id>1</id>\n    <title>Dune</title>\n  </doc>\n  \
          <doc>\n    <id>2</id>\n    <title>Emma, a novel</title>\n  </doc>\n</library>\n",
    );
    let path = xml.to_str().unwrap();
    let run = |extra: &[&str]| {
        let args = [
            &["-p", &port, "-c", "1", "-n", "2", "-q", "--dataset", path][..],
            extra,
            &["--", "HSET", "book:__field:id__", "title", "__field:title__"],
        ]
        .concat();
        tool.run(&args, T)
    };
    let out = run(&[]);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(out.stderr.contains("needs --xml-root-element"), "{}", out.dump());
    assert_eq!(server.command_calls("hset"), 0);
    let out = run(&["--xml-root-element", "doc"]);
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(server.cli(&["HGET", "book:1", "title"]).trim(), "Dune");
    assert_eq!(server.cli(&["HGET", "book:2", "title"]).trim(), "Emma, a novel");
    assert_eq!(server.command_calls("hset"), 2);
}

/// `__field:NAME:base64__` (valkey-benchmark 9) sends the field decoded: binary bytes reach
/// the server as they are; a row that is not base64 is an error before anything is sent.
fn a_base64_field_is_sent_decoded(tool: Tool) {
    let server = RedisServer::start();
    let port = server.port().to_string();
    // "AP8KDQ==" is the bytes 0x00 0xff \n \r.
    let csv = file("blobs.csv", b"id,blob\n1,AP8KDQ==\n2,aGk=\n");
    let args = [
        "-p",
        &port,
        "-c",
        "1",
        "-n",
        "2",
        "-q",
        "--dataset",
        csv.to_str().unwrap(),
        "--",
        "SET",
        "b:__field:id__",
        "__field:blob:base64__",
    ];
    let out = tool.run(&args, T);
    assert!(out.status.success(), "{}", out.dump());
    let mut s = server.connect();
    std::io::Write::write_all(&mut s, b"*2\r\n$3\r\nGET\r\n$3\r\nb:1\r\n").unwrap();
    let mut reply = [0u8; 10];
    std::io::Read::read_exact(&mut s, &mut reply).unwrap();
    assert_eq!(&reply, b"$4\r\n\x00\xff\n\r\r\n");
    assert_eq!(server.cli(&["GET", "b:2"]).trim(), "hi");
    let bad = file("badblob.csv", b"id,blob\n1,no!e\n");
    let args = [
        "-p",
        &port,
        "-n",
        "2",
        "-q",
        "--dataset",
        bad.to_str().unwrap(),
        "--",
        "SET",
        "k",
        "__field:blob:base64__",
    ];
    let out = tool.run(&args, T);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(out.stderr.contains("row 1 of field blob is not base64"), "{}", out.dump());
    assert_eq!(server.command_calls("set"), 2, "nothing more sent");
}

/// `--maxdocs 2` reads the first two rows only.
fn maxdocs_caps_the_rows_read(tool: Tool) {
    let server = RedisServer::start();
    let port = server.port().to_string();
    // A third row that would be an error, were it read.
    let csv = file("capped.csv", b"id,name\n1,alice\n2,bob\n3\n");
    let path = csv.to_str().unwrap();
    let args = [
        "-p",
        &port,
        "-n",
        "6",
        "-q",
        "--maxdocs",
        "2",
        "--dataset",
        path,
        "--",
        "SET",
        "key:__field:id__",
        "__field:name__",
    ];
    let out = tool.run(&args, T);
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(server.dbsize(0), 2);
    assert_eq!(server.cli(&["MGET", "key:1", "key:2"]).trim(), "alice\nbob");
}

/// A `.tsv` file's fields are separated by tabs; a comma is text there.
fn a_tsv_file_works(tool: Tool) {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let tsv = file("people.tsv", b"id\tname\n7\tx, y\n8\tz\n");
    let out = tool.run(
        &[
            "-p",
            &port,
            "-n",
            "4",
            "-q",
            "--dataset",
            tsv.to_str().unwrap(),
            "--",
            "HSET",
            "h",
            "f__field:id__",
            "__field:name__",
        ],
        T,
    );
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(server.cli(&["HMGET", "h", "f7", "f8"]).trim(), "x, y\nz");
}

/// A missing file, a placeholder naming no field, an empty file, a non-UTF-8 row: exit 1 with a
/// message naming what is wrong, and nothing reaches the server.
fn bad_datasets_exit_1_before_connecting(tool: Tool) {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let good = file("good.csv", CSV);
    let cases: [(PathBuf, &str, &str); 4] = [
        (std::env::temp_dir().join("respbench-dataset-none.csv"), "__field:id__", "cannot read it"),
        (good, "__field:age__", "__field:age__ names no field of the dataset (its fields: id, name)"),
        (file("empty.csv", b""), "__field:id__", "the file is empty"),
        (file("latin1.csv", b"id\n\xe9t\xe9\n"), "__field:id__", "line 2 is not UTF-8"),
    ];
    let sets = server.command_calls("set");
    for (path, arg, words) in &cases {
        let out = tool.run(
            &["-p", &port, "-n", "3", "-q", "--dataset", path.to_str().unwrap(), "--", "SET", arg, "v"],
            T,
        );
        assert_eq!(out.status.code(), Some(1), "{}", out.dump());
        assert!(out.stderr.contains(words), "{words}: {}", out.dump());
        assert!(out.stdout.is_empty(), "{}", out.dump());
    }
    // Over several nodes the routing would not see a row's arguments: refused.
    let good = file("good2.csv", CSV);
    let args = [
        "-p",
        &port,
        "-n",
        "3",
        "--cluster",
        "--dataset",
        good.to_str().unwrap(),
        "--",
        "SET",
        "__field:id__",
        "v",
    ];
    let out = tool.run(&args, T);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(out.stderr.contains("not with --cluster or --replicas"), "{}", out.dump());
    assert_eq!(server.command_calls("set"), sets, "nothing sent");
}

/// A dataset file is read to at most `--dataset-max-bytes` (1 GiB by default): a file of 1 GiB
/// and a byte (sparse) is refused with the numbers before it is read, and an endless one
/// (`/dev/zero`, read until the kernel killed the process) once the bound is met, with or
/// without `--maxdocs`.
fn a_dataset_is_read_to_a_bound(tool: Tool) {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let big = file("big.csv", b"id\n1\n");
    std::fs::OpenOptions::new().write(true).open(&big).unwrap().set_len((1 << 30) + 1).unwrap();
    let command = ["--", "SET", "key:__field:id__", "x"];
    let out =
        tool.run(&[&["-p", &port, "-n", "10", "--dataset", big.to_str().unwrap()][..], &command].concat(), T);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    let said = format!(
        "--dataset {}: the file is 1073741825 bytes, more than the 1073741824 bytes (1.0 GiB) it is read to at \
         most: give --maxdocs or raise --dataset-max-bytes",
        big.display()
    );
    assert!(out.stderr.contains(&said), "{}", out.dump());
    std::fs::remove_file(&big).unwrap();
    let out = tool.run(
        &[
            &[
                "-p",
                &port,
                "-n",
                "10",
                "--maxdocs",
                "10",
                "--dataset-max-bytes",
                "10000000",
                "--dataset",
                "/dev/zero",
            ][..],
            &command,
        ]
        .concat(),
        T,
    );
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(
        out.stderr.contains(
            "--dataset /dev/zero: it goes on, more than the 10000000 bytes (9.5 MiB) it is read to at most without \
             its first 10 rows (--maxdocs)"
        ),
        "{}",
        out.dump()
    );
    assert_eq!(server.command_calls("set"), 0);
}

/// SIGTERM while a dataset is read (a FIFO nobody writes: its open never returns; the process
/// waited for it whatever the signals) ends the process at once, saying so.
fn a_signal_ends_the_read_of_a_dataset(tool: Tool) {
    let server = RedisServer::start();
    let fifo = std::env::temp_dir().join(format!("respbench-dataset-{}-fifo.csv", std::process::id()));
    let _ = std::fs::remove_file(&fifo);
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let path = fifo.to_str().unwrap();
    let run = tool.spawn(&[
        "-p",
        &server.port().to_string(),
        "-n",
        "10",
        "--dataset",
        path,
        "--",
        "SET",
        "k",
        "__field:id__",
    ]);
    std::thread::sleep(Duration::from_secs(1));
    run.signal("TERM");
    let out = run.wait_lenient(T);
    assert!(!out.timed_out, "still reading after SIGTERM\n{}", out.dump());
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(
        out.stderr.contains(&format!("--dataset {path}: interrupted after reading 0 bytes of it")),
        "{}",
        out.dump()
    );
    std::fs::remove_file(&fifo).unwrap();
}
