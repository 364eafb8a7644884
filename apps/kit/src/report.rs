//! What a command prints when it is done: its typed record, as text (the record's
//! `Display`) or, under `--json`, as one envelope per line:
//! `{"command", "version", "device", "backend", "wall_ms", "out", ...the record's fields}`.
//! Times are milliseconds everywhere, in fields named `*_ms`.

use std::io::Write;
use std::path::Path;
use std::sync::Mutex;
use std::time::Instant;

use serde::Serialize;
use serde_json::{Map, Value};

struct State {
    binary: &'static str,
    version: &'static str,
    command: String,
    json: bool,
    backend: Option<&'static str>,
    device: Option<String>,
    start: Instant,
}

static STATE: Mutex<Option<State>> = Mutex::new(None);

/// Implements `Display` as the record's JSON on one line, for records that read as JSON in
/// text mode too (benchmark lines, so that runs can be collected with `jq`):
/// `kit::json_display!(RenderBench, FitBench);` beside the types.
#[macro_export]
macro_rules! json_display {
    ($($t:ty),* $(,)?) => {$(
        impl ::std::fmt::Display for $t {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                let line = $crate::__private::serde_json::to_string(self).map_err(|_| ::std::fmt::Error)?;
                f.write_str(&line)
            }
        }
    )*};
}

fn with_state<T>(f: impl FnOnce(&mut State) -> T) -> Option<T> {
    let mut guard = STATE.lock().unwrap_or_else(|p| p.into_inner());
    guard.as_mut().map(f)
}

/// Starts the envelope of this run (called once by [`crate::main`]).
pub(crate) fn start(binary: &'static str, version: &'static str, command: String, json: bool) {
    let mut guard = STATE.lock().unwrap_or_else(|p| p.into_inner());
    *guard = Some(State { binary, version, command, json, backend: None, device: None, start: Instant::now() });
}

/// Names the backend in the envelope.
pub fn set_backend(backend: crate::Backend) {
    with_state(|s| s.backend = Some(backend.name()));
}

/// Names the device in the envelope (done by [`crate::cli::open`]).
pub fn set_device(name: &str) {
    with_state(|s| s.device = Some(name.to_string()));
}

/// Whether this run prints JSON.
pub fn json() -> bool {
    with_state(|s| s.json).unwrap_or(false)
}

/// The binary, the command and whether it prints JSON (for error reports).
pub(crate) fn identity() -> (&'static str, String, bool) {
    with_state(|s| (s.binary, s.command.clone(), s.json)).unwrap_or(("tessera", String::new(), false))
}

/// The binary's name, for messages (`mad`, `smoe`, ...).
pub fn binary() -> &'static str {
    with_state(|s| s.binary).unwrap_or("tessera")
}

/// Prints `message` as a warning on stderr (`<binary>: warning: ...`): the command goes on.
pub fn warn(message: &str) {
    eprintln!("{}: warning: {message}", binary());
}

/// Milliseconds since the run started.
pub fn wall_ms() -> f64 {
    with_state(|s| s.start.elapsed().as_secs_f64() * 1e3).unwrap_or(0.0)
}

/// The envelope's fields followed by `record`'s, as one JSON object.
pub fn envelope<R: Serialize>(record: &R, out: &[&Path]) -> Value {
    let mut map = Map::new();
    with_state(|s| {
        map.insert("command".into(), s.command.clone().into());
        map.insert("version".into(), s.version.into());
        map.insert("device".into(), s.device.clone().map(Value::from).unwrap_or(Value::Null));
        map.insert("backend".into(), s.backend.map(Value::from).unwrap_or(Value::Null));
        map.insert("wall_ms".into(), (s.start.elapsed().as_secs_f64() * 1e3).into());
    });
    let outs: Vec<Value> = out.iter().map(|p| Value::from(p.display().to_string())).collect();
    map.insert("out".into(), Value::Array(outs));
    match serde_json::to_value(record) {
        Ok(Value::Object(fields)) => map.extend(fields),
        Ok(Value::Null) => {}
        Ok(other) => {
            map.insert("result".into(), other);
        }
        Err(e) => {
            map.insert("record_error".into(), e.to_string().into());
        }
    }
    Value::Object(map)
}

/// Prints a line to stdout; when the reader has gone (a closed pipe, as `| head` leaves
/// it) the process ends quietly instead of panicking.
pub fn print_line(line: &str) {
    let mut out = std::io::stdout().lock();
    if writeln!(out, "{line}").and_then(|_| out.flush()).is_err() {
        std::process::exit(0);
    }
}

/// Prints the command's record: its `Display` as text, or the envelope under `--json`.
/// `out` lists the files or folders the command wrote. A command may emit several records
/// (one per line), as a batch does per pair.
pub fn emit<R: Serialize + std::fmt::Display>(record: &R, out: &[&Path]) {
    if json() {
        print_line(&envelope(record, out).to_string());
    } else {
        let text = record.to_string();
        if !text.is_empty() {
            print_line(&text);
        }
    }
}

/// Serialises an `f32` field as the shortest decimal that reads back as it (`0.01`), not
/// as its exact value widened to f64 (`0.009999999776482582`): `#[serde(serialize_with =
/// "kit::report::f32_shortest")]`.
pub fn f32_shortest<S: serde::Serializer>(x: &f32, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(shortest(*x))
}

/// [`f32_shortest`] for each of a list of `f32` (`[f32; 2]`, `Vec<f32>`).
pub fn f32s_shortest<S: serde::Serializer>(xs: &[f32], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(xs.iter().map(|&x| shortest(x)))
}

/// The f64 of `x`'s shortest decimal (Rust prints an f32 as the shortest string that reads
/// back as it); non-finite values stay as they are.
fn shortest(x: f32) -> f64 {
    x.to_string().parse().unwrap_or(x as f64)
}

/// A record that is only its fields: for commands whose text output is a JSON line too
/// (benchmarks).
#[derive(Serialize)]
#[serde(transparent)]
pub struct Fields(pub Value);

impl std::fmt::Display for Fields {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    #[derive(serde::Serialize)]
    struct R {
        #[serde(serialize_with = "super::f32_shortest")]
        epsilon: f32,
        #[serde(serialize_with = "super::f32s_shortest")]
        view: [f32; 2],
    }

    #[test]
    fn f32_fields_print_as_given() {
        let text = serde_json::to_string(&R { epsilon: 0.01, view: [1.1, 3.0] }).unwrap();
        assert_eq!(text, r#"{"epsilon":0.01,"view":[1.1,3.0]}"#);
    }
}
