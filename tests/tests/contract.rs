//! The command-line contract (docs/cli.md), held for every binary: `--version` and described
//! `--help` with examples everywhere; usage mistakes exit 2 and runtime failures exit 1, in
//! one error format, with a JSON object under `--json` and never a stack trace; outputs
//! checked before any work (a folder under a regular file, an unknown extension, an input as
//! output), written with the umask's mode; an unknown `--device` is an error of the engine's
//! kind; one JSON envelope per line. Each case is one row of a table over the binaries.

use std::os::unix::fs::PermissionsExt;

use tessera_tests::{args, run, run_in, subcommands, Fixtures, Run, BINARIES};

/// Where a command writes.
#[derive(Clone, Copy)]
enum Writes {
    /// A file; its accepted extension, and one it must refuse.
    File { ext: &'static str, wrong: &'static str },
    /// A folder.
    Folder,
    /// Nothing.
    Nothing,
}

/// One quick command per binary: `@OUT` stands for its output path, `{name}` for a fixture.
struct Case {
    bin: &'static str,
    args: &'static [&'static str],
    writes: Writes,
    /// Whether the command opens a GPU (so `--device` applies).
    gpu: bool,
}

const CASES: &[Case] = &[
    Case {
        bin: "smoe",
        args: &["fit", "{a.png}", "--kernels", "6", "--iterations", "2", "--out", "@OUT", "--json"],
        writes: Writes::File { ext: "json", wrong: "png" },
        gpu: true,
    },
    Case {
        bin: "lightfield",
        args: &["generate", "--out", "@OUT", "--views", "2x2", "--size", "16x16", "--json"],
        writes: Writes::File { ext: "npy", wrong: "png" },
        gpu: false,
    },
    Case {
        bin: "mosaic",
        args: &[
            "build", "--target", "{a.png}", "--tiles", "{tiles}", "--grid", "2x2", "--method", "greedy", "--out",
            "@OUT", "--json",
        ],
        writes: Writes::File { ext: "png", wrong: "npy" },
        gpu: true,
    },
    Case {
        bin: "composite",
        args: &["render", "--scene", "points:2000", "--size", "48x32", "--out", "@OUT", "--json"],
        writes: Writes::File { ext: "png", wrong: "json" },
        gpu: true,
    },
    Case {
        bin: "mad",
        args: &["score", "{a.png}", "{b.png}", "--maps", "@OUT", "--json"],
        writes: Writes::Folder,
        gpu: true,
    },
    Case {
        bin: "sweep",
        args: &["--kernel", "copy", "--sizes", "4K", "--workgroups", "64", "--out", "@OUT", "--json"],
        writes: Writes::Folder,
        gpu: true,
    },
    Case { bin: "gpu-info", args: &["--no-measure", "--json"], writes: Writes::Nothing, gpu: true },
];

/// The case's arguments with `@OUT` replaced by `out` and fixtures filled in.
fn case_args(f: &Fixtures, case: &Case, out: &str) -> Vec<String> {
    args(f, case.args).into_iter().map(|a| if a == "@OUT" { out.to_string() } else { a }).collect()
}

fn run_case(f: &Fixtures, case: &Case, out: &str, extra: &[&str], umask: Option<&str>) -> Run {
    let mut a = case_args(f, case, out);
    a.extend(extra.iter().map(|s| s.to_string()));
    let refs: Vec<&str> = a.iter().map(String::as_str).collect();
    run_in(case.bin, &refs, umask)
}

/// The output path of a case, inside `folder` (created by the command where missing).
fn output_in(case: &Case, folder: &str, stem: &str) -> String {
    match case.writes {
        Writes::File { ext, .. } => format!("{folder}/{stem}.{ext}"),
        Writes::Folder | Writes::Nothing => format!("{folder}/{stem}"),
    }
}

#[test]
fn every_binary_and_subcommand_has_version_and_described_help_with_examples() {
    for bin in BINARIES {
        let version = run(bin, &["--version"]);
        version.expect_code(0, &format!("{bin} --version"));
        assert!(version.stdout.contains(env!("CARGO_PKG_VERSION")), "{bin} --version: {}", version.stdout);
        let subs = subcommands(bin);
        let mut commands: Vec<Vec<String>> = subs.iter().map(|s| vec![s.clone()]).collect();
        if commands.is_empty() {
            commands.push(Vec::new());
        }
        for sub in commands {
            let mut a: Vec<&str> = sub.iter().map(String::as_str).collect();
            a.push("-h");
            let help = run(bin, &a);
            help.expect_code(0, &format!("{bin} {sub:?} -h"));
            assert!(help.stdout.contains("Examples:"), "{bin} {sub:?} --help shows no example:\n{}", help.stdout);
            let missing = undescribed(&help.stdout);
            assert!(missing.is_empty(), "{bin} {sub:?}: arguments without a description: {missing:?}");
            if !sub.is_empty() {
                let mut v: Vec<&str> = sub.iter().map(String::as_str).collect();
                v.push("--version");
                run(bin, &v).expect_code(0, &format!("{bin} {sub:?} --version"));
            }
        }
    }
}

/// Argument lines of a short help (`-h`) that carry no description: none after the name on
/// the line, and none on the next line (clap moves long descriptions there, indented deeper).
fn undescribed(help: &str) -> Vec<String> {
    let lines: Vec<&str> = help.lines().collect();
    let indent = |l: &str| l.len() - l.trim_start().len();
    let is_arg = |l: &str| {
        let body = l.trim_start();
        l.starts_with(' ') && (body.starts_with('-') || body.starts_with('<') || body.starts_with('['))
    };
    let mut out = Vec::new();
    let mut in_args = false;
    for (i, line) in lines.iter().enumerate() {
        if line.starts_with("Arguments:") || line.starts_with("Options:") {
            in_args = true;
            continue;
        }
        if !line.starts_with(' ') {
            in_args = false;
            continue;
        }
        if !in_args || !is_arg(line) || line.trim_start().contains("  ") {
            continue;
        }
        let next = lines.get(i + 1).copied().unwrap_or_default();
        let described_below = !next.trim().is_empty() && !is_arg(next) && indent(next) > indent(line);
        if !described_below {
            out.push(line.to_string());
        }
    }
    out
}

#[test]
fn usage_mistakes_exit_2_in_one_format_with_json() {
    for bin in BINARIES {
        let r = run(bin, &["--no-such-flag"]);
        r.expect_code(2, &format!("{bin} --no-such-flag"));
        assert!(r.stderr.starts_with(&format!("{bin}: error: ")), "{bin}: {}", r.stderr);
        let r = run(bin, &["--no-such-flag", "--json"]);
        r.expect_code(2, &format!("{bin} --no-such-flag --json"));
        let lines = r.json_lines();
        assert_eq!(lines.len(), 1, "{bin}: {}", r.stdout);
        assert!(lines[0]["error"].is_string(), "{bin}: {}", r.stdout);
    }
}

#[test]
fn quick_commands_print_one_envelope_and_write_with_the_umask_mode() {
    let f = Fixtures::new();
    for case in CASES {
        let out = output_in(case, &f.path("new/nested"), case.bin);
        let r = run_case(&f, case, &out, &[], Some("022"));
        r.expect_code(0, &format!("{} quick case", case.bin));
        let lines = r.json_lines();
        let last = lines.last().unwrap_or_else(|| panic!("{}: no JSON line", case.bin));
        for field in ["command", "version", "device", "backend", "wall_ms", "out"] {
            assert!(last.get(field).is_some(), "{}: envelope has no {field}: {last}", case.bin);
        }
        assert!(last["wall_ms"].as_f64().is_some_and(|v| v >= 0.0), "{}: {last}", case.bin);
        assert!(last["out"].is_array(), "{}: `out` is not a list: {last}", case.bin);
        for key in last.as_object().unwrap().keys() {
            // A rate (`_per_s`) is no time; a time in seconds or a bare `ms` breaks the rule.
            let seconds = key.ends_with("_s") && !key.ends_with("_per_s");
            let timed = key.ends_with("_ms") || !(key == "ms" || key.ends_with("seconds") || seconds);
            assert!(timed, "{}: time field {key} is not in *_ms", case.bin);
        }
        if let Writes::File { .. } = case.writes {
            let mode = std::fs::metadata(&out).map(|m| m.permissions().mode() & 0o777);
            assert_eq!(mode.ok(), Some(0o644), "{}: {out} has the wrong mode", case.bin);
            assert!(last["out"].to_string().contains(case.bin), "{}: `out` does not name {out}: {last}", case.bin);
        }
        if let Writes::Folder = case.writes {
            assert!(std::path::Path::new(&out).is_dir(), "{}: {out} was not made", case.bin);
        }
    }
}

#[test]
fn outputs_are_checked_before_any_work() {
    let f = Fixtures::new();
    for case in CASES.iter().filter(|c| !matches!(c.writes, Writes::Nothing)) {
        // A folder where a regular file is: fails at once, exit 1, one error (JSON too).
        let out = output_in(case, &f.path("file"), "x");
        let r = run_case(&f, case, &out, &[], None);
        r.expect_code(1, &format!("{} output under a regular file", case.bin));
        assert!(r.stderr.starts_with(&format!("{}: error: ", case.bin)), "{}: {}", case.bin, r.stderr);
        assert!(r.stderr.contains("file"), "{}: {}", case.bin, r.stderr);
        let errors = r.json_lines();
        assert!(errors.last().is_some_and(|e| e["error"].is_string()), "{}: no JSON error: {}", case.bin, r.stdout);
        // An extension no format matches: an error naming the accepted ones.
        if let Writes::File { ext, wrong } = case.writes {
            let out = f.path(&format!("wrong.{wrong}"));
            let r = run_case(&f, case, &out, &[], None);
            r.expect_code(1, &format!("{} output .{wrong}", case.bin));
            assert!(r.stderr.contains(&format!(".{ext}")), "{}: error does not name .{ext}: {}", case.bin, r.stderr);
            assert!(!std::path::Path::new(&out).exists(), "{}: wrote {out}", case.bin);
        }
    }
}

#[test]
fn an_unknown_device_is_an_error_everywhere() {
    let f = Fixtures::new();
    for case in CASES.iter().filter(|c| c.gpu) {
        let out = output_in(case, &f.path("devices"), case.bin);
        let r = run_case(&f, case, &out, &["--device", "no-such-device-anywhere"], None);
        r.expect_code(1, &format!("{} --device no-such-device-anywhere", case.bin));
        assert!(r.stderr.contains("no device matches"), "{}: {}", case.bin, r.stderr);
        // The JSON error names the engine's kind, also where the device is opened inside an
        // app's library (composite render's ranks).
        let errors = r.json_lines();
        let error = errors.last().unwrap_or_else(|| panic!("{}: no JSON error", case.bin));
        assert_eq!(error["kind"], "device_selection", "{}: {error}", case.bin);
    }
}

#[test]
fn no_stack_trace_and_no_panic_for_bad_numbers() {
    let f = Fixtures::new();
    let out = f.path("bad");
    let cases: &[(&str, &[&str])] = &[
        ("composite", &["render", "--scene", "points:18446744073709551615", "--size", "8x8", "--out", &out]),
        ("sweep", &["--kernel", "copy", "--workgroups", "0", "--sizes", "1K", "--out", &out]),
        ("sweep", &["--kernel", "copy", "--sizes", "0", "--out", &out]),
        ("smoe", &["fit", &f.path("a.png"), "--kernels", "0", "--out", &out]),
    ];
    for (bin, a) in cases {
        let r = run(bin, a);
        assert!(matches!(r.code, Some(1) | Some(2)), "{bin} {a:?}: exit {:?}: {}", r.code, r.stderr);
        assert!(r.stderr.starts_with(&format!("{bin}: error: ")), "{bin} {a:?}: {}", r.stderr);
        assert!(!r.stderr.contains("panicked") && !r.stderr.contains("backtrace"), "{bin} {a:?}: {}", r.stderr);
        assert!(r.seconds < 60.0, "{bin} {a:?} ran {:.0} s", r.seconds);
    }
}

#[test]
fn an_input_is_never_overwritten() {
    let f = Fixtures::new();
    let png = f.path("a.png");
    let before = std::fs::read(&png).unwrap();
    let tiles = f.path("tiles");
    // The target, then one of the tiles, given as the output.
    let build = |out: &str| {
        let args = [
            "build",
            "--target",
            png.as_str(),
            "--tiles",
            tiles.as_str(),
            "--grid",
            "2x2",
            "--method",
            "greedy",
            "--out",
            out,
        ];
        args.map(String::from)
    };
    let cases = [("mosaic", build(&png)), ("mosaic", build(&f.path("tiles/t3.png")))];
    for (bin, a) in &cases {
        let r = run(bin, &a.iter().map(String::as_str).collect::<Vec<_>>());
        r.expect_code(1, &format!("{bin} with an input as output"));
        assert!(r.stderr.contains("refusing to overwrite"), "{bin}: {}", r.stderr);
    }
    assert_eq!(std::fs::read(&png).unwrap(), before);
}
