//! The `main` of every binary: parse, run, report. One error format for all of them:
//! `<binary>: error: <message>` and `  caused by: <cause>` lines on stderr, exit 1 for a
//! failure and 2 for a usage mistake; under `--json` the failure is also one JSON object
//! `{"error", "causes", "command", ...}` on stdout. Never a stack trace for a user mistake,
//! whatever RUST_BACKTRACE says: errors are printed through `Display`, not `Debug`.

use std::process::ExitCode;
use std::sync::OnceLock;

use clap::ArgMatches;

use crate::cli::Backend;

/// Exit status of a usage mistake (unknown flag, bad value), as BSD's sysexits and clap use.
const USAGE: u8 = 2;

/// The deepest subcommand's matches and the command path (`batch`, `sweep`, `view`).
fn leaf(matches: &ArgMatches) -> (Vec<String>, &ArgMatches) {
    let mut path = Vec::new();
    let mut at = matches;
    while let Some((name, sub)) = at.subcommand() {
        path.push(name.to_string());
        at = sub;
    }
    (path, at)
}

fn flag<T: Clone + Send + Sync + 'static>(m: &ArgMatches, id: &str) -> Option<T> {
    m.try_get_one::<T>(id).ok().flatten().cloned()
}

/// Runs a binary: parses `C` from the command line, sets up the envelope, the progress bars
/// and the memory budget from the shared flags, runs `run`, and reports its error.
pub fn main<C: clap::Parser>(version: &'static str, run: impl FnOnce(C) -> anyhow::Result<()>) -> ExitCode {
    drive(C::command(), version, run)
}

/// Runs a binary whose work is all in the subcommands `C` (`mad score`, `composite blend`),
/// as [`main`] does, with `E` its app library's error type. `app` names the binary and says
/// what it does (`--help`); one subcommand is required, and `--version` (on every subcommand
/// too) prints `version`.
pub fn main_subcommands<C: clap::Subcommand, E: AppError>(
    app: clap::Command,
    version: &'static str,
    run: impl FnOnce(C) -> anyhow::Result<()>,
) -> ExitCode {
    // What clap's derive gives a `Parser` struct holding only `#[command(subcommand)]`.
    let app = app.version(version).propagate_version(true).subcommand_required(true).arg_required_else_help(true);
    let _ = APP_ERROR.set(held::<E>);
    drive(C::augment_subcommands(app), version, run)
}

/// An app library's error type, which holds the engine's errors in a variant that shows
/// them as they are (`#[error(transparent)] Engine(#[from] engine::EngineError)`). Such a
/// variant hides the engine error from the error chain, which goes on with the engine
/// error's own source; [`main_subcommands`] asks the app's type for it instead, so that its
/// kind chooses the exit status and the JSON error's `kind` and `flag` wherever the app's
/// library raised it. [`app_error!`](crate::app_error) implements it.
pub trait AppError: std::error::Error + 'static {
    /// The engine error this error is, if it is one.
    fn engine(&self) -> Option<&engine::EngineError>;
}

/// Implements [`AppError`] for an app library's error enum whose `Engine` variant holds the
/// engine's errors, as every app's does: `kit::app_error!(MadError);` beside the enum.
#[macro_export]
macro_rules! app_error {
    ($error:ident) => {
        impl $crate::AppError for $error {
            fn engine(&self) -> Option<&$crate::__private::EngineError> {
                match self {
                    $error::Engine(e) => Some(e),
                    _ => None,
                }
            }
        }
    };
}

/// Finds the engine error held by one link of an error chain of the binary's app error type.
type Held = for<'a> fn(&'a (dyn std::error::Error + 'static)) -> Option<&'a engine::EngineError>;

/// The binary's app error type, as [`main_subcommands`] names it.
static APP_ERROR: OnceLock<Held> = OnceLock::new();

fn held<'a, E: AppError>(cause: &'a (dyn std::error::Error + 'static)) -> Option<&'a engine::EngineError> {
    cause.downcast_ref::<E>().and_then(E::engine)
}

/// [`main`] of the command line `command`, from which `C` is read.
fn drive<C: clap::FromArgMatches>(
    command: clap::Command,
    version: &'static str,
    run: impl FnOnce(C) -> anyhow::Result<()>,
) -> ExitCode {
    let binary: &'static str = Box::leak(command.get_name().to_string().into_boxed_str());
    let matches = match command.clone().try_get_matches() {
        Ok(m) => m,
        Err(e) => return usage_error(binary, &command_path(&command), version, e),
    };
    let (path, leaf_matches) = leaf(&matches);
    let json = flag::<bool>(leaf_matches, "json").unwrap_or(false);
    let name = if path.is_empty() { binary.to_string() } else { path.join(" ") };
    crate::report::start(binary, version, name.clone(), json);
    crate::progress::set_quiet(json);
    if let Some(backend) = flag::<Backend>(leaf_matches, "backend") {
        crate::report::set_backend(backend);
    }
    if let Some(bytes) = flag::<u64>(leaf_matches, "max_memory") {
        crate::budget::set(bytes);
    }
    let cli = match C::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => return usage_error(binary, &name, version, e),
    };
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.is::<Reported>() => ExitCode::FAILURE,
        Err(e) if is_usage(&e) => {
            report_error(binary, &name, json, &e, Some(version));
            ExitCode::from(USAGE)
        }
        Err(e) => {
            report_error(binary, &name, json, &e, None);
            ExitCode::FAILURE
        }
    }
}

/// Whether `error` is a usage mistake (exit status 2): a [`Usage`], or an engine error that
/// blames a flag.
fn is_usage(error: &anyhow::Error) -> bool {
    error.is::<Usage>() || engine_error(error).and_then(engine::EngineError::usage_flag).is_some()
}

/// The engine error in `error`'s chain, itself or held by the app's error type ([`AppError`]),
/// if any: its kind chooses the exit status and the `kind` and `flag` of the JSON error,
/// never its message.
fn engine_error(error: &anyhow::Error) -> Option<&engine::EngineError> {
    let held = APP_ERROR.get();
    error.chain().find_map(|cause| cause.downcast_ref::<engine::EngineError>().or_else(|| held?(cause)))
}

/// The messages of an error chain, outermost first. Every error of the workspace keeps its
/// source out of its own message (wrappers are `#[error(transparent)]`, contexts add their
/// own words), so each message is printed once as it is.
fn messages(error: &anyhow::Error) -> Vec<String> {
    error.chain().map(|cause| cause.to_string()).filter(|text| !text.is_empty()).collect()
}

/// A failure whose message has already been printed, by [`print_error`] in this process or
/// by another process of the same job (one MPI rank speaks for all): [`main`] exits with
/// the failure status and prints nothing more.
#[derive(Debug, thiserror::Error)]
#[error("the error has been reported")]
pub struct Reported;

/// A usage mistake found after parsing, when checking a flag's value needs more than its
/// text (`--device 0,0` for a command that runs on one device): reported as clap's usage
/// errors are, with exit status 2 and `"usage": true` under `--json`. The message leads
/// with the flag.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Usage(pub String);

/// Prints `error` in the contract's format (stderr, and a JSON object on stdout under
/// `--json`), for paths that must end the process themselves (an MPI abort) instead of
/// returning the error to [`main`].
pub fn print_error(error: &anyhow::Error) {
    let (binary, command, json) = crate::report::identity();
    report_error(binary, &command, json, error, None);
}

/// Prints `error`; `usage` (the binary's version) marks a usage mistake in the JSON object,
/// as [`usage_error`] does.
fn report_error(binary: &str, command: &str, json: bool, error: &anyhow::Error, usage: Option<&str>) {
    let messages = messages(error);
    let (first, causes) = messages.split_first().map(|(f, c)| (f.clone(), c.to_vec())).unwrap_or_default();
    eprintln!("{binary}: error: {first}");
    for cause in &causes {
        eprintln!("  caused by: {cause}");
    }
    if json {
        let mut line = serde_json::json!({
            "error": first, "causes": causes, "command": command, "binary": binary,
            "wall_ms": crate::report::wall_ms(),
        });
        if let Some(version) = usage {
            line["version"] = version.into();
            line["usage"] = true.into();
        }
        if let Some(e) = engine_error(error) {
            line["kind"] = serde_json::to_value(e.kind()).unwrap_or_default();
            if let Some(flag) = e.usage_flag() {
                line["flag"] = flag.into();
            }
        }
        crate::report::print_line(&line.to_string());
    }
}

/// The subcommand path the raw arguments name (for usage errors, which come before any
/// matches): each argument that names a subcommand of the one before it.
fn command_path(command: &clap::Command) -> String {
    let mut at = command;
    let mut path = Vec::new();
    for arg in std::env::args().skip(1) {
        match at.find_subcommand(&arg) {
            Some(sub) => {
                path.push(arg);
                at = sub;
            }
            None if arg.starts_with('-') => continue,
            None => break,
        }
    }
    if path.is_empty() {
        command.get_name().to_string()
    } else {
        path.join(" ")
    }
}

fn usage_error(binary: &str, command: &str, version: &str, e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = e.print();
            ExitCode::SUCCESS
        }
        _ => {
            let rendered = e.render().to_string();
            let text = rendered.trim_end().strip_prefix("error: ").unwrap_or(rendered.trim_end());
            eprintln!("{binary}: error: {text}");
            if std::env::args().any(|a| a == "--json") {
                let (first, causes) = usage_lines(text);
                let line = serde_json::json!({
                    "error": first, "causes": causes, "command": command, "binary": binary,
                    "version": version, "usage": true,
                });
                crate::report::print_line(&line.to_string());
            }
            ExitCode::from(USAGE)
        }
    }
}

/// The JSON object's `error` and `causes` of a clap usage message (without its `error: `
/// lead): the message's first paragraph, whose first line is the error and whose indented
/// lines (the missing arguments, a tip) are the causes. A list the first line announces
/// (`the following required arguments were not provided:`) is named in the error too, so
/// the one line says what is missing. The usage synopsis and the `--help` hint are left out.
fn usage_lines(text: &str) -> (String, Vec<String>) {
    let mut lines = text.lines().take_while(|l| !l.trim().is_empty());
    let first = lines.next().unwrap_or_default().trim().to_string();
    let causes: Vec<String> = lines.map(|l| l.trim().to_string()).collect();
    let error = match first.strip_suffix(':') {
        Some(lead) if !causes.is_empty() => format!("{lead}: {}", causes.join(", ")),
        _ => first,
    };
    (error, causes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// clap's own message for missing arguments, as a binary renders it.
    fn rendered(args: &[&str]) -> String {
        let command = clap::Command::new("score")
            .arg(clap::Arg::new("reference").required(true))
            .arg(clap::Arg::new("distorted").required(true))
            .arg(clap::Arg::new("out").long("out").required(true));
        let e = command.try_get_matches_from(args).unwrap_err();
        let text = e.render().to_string();
        text.trim_end().strip_prefix("error: ").unwrap_or(text.trim_end()).to_string()
    }

    /// An app library's error as the apps write it: the engine's shown as it is.
    #[derive(Debug, thiserror::Error)]
    enum LibError {
        #[error(transparent)]
        Engine(#[from] engine::EngineError),
        #[error("the library's own")]
        Own,
    }

    crate::app_error!(LibError);

    #[test]
    fn an_engine_error_inside_an_app_error_chooses_the_status_and_kind() {
        // What `main_subcommands::<_, LibError>` registers.
        let _ = APP_ERROR.set(held::<LibError>);
        let several = engine::EngineError::SeveralDevices { selector: "all".into(), count: 2 };
        let error = anyhow::Error::from(LibError::from(several)).context("opening the window's device");
        assert!(engine_error(&LibError::Own.into()).is_none());
        let found = engine_error(&error).expect("the engine error in the app's error");
        assert_eq!((found.kind(), found.usage_flag()), (engine::ErrorKind::DeviceSelection, Some("--device")));
        assert!(is_usage(&error));
        assert_eq!(
            messages(&error),
            ["opening the window's device", "--device all names 2 devices; this command runs on one"]
        );
    }

    #[test]
    fn usage_errors_name_the_missing_arguments() {
        let (error, causes) = usage_lines(&rendered(&["score", "a.png"]));
        assert_eq!(error, "the following required arguments were not provided: --out <out>, <distorted>");
        assert_eq!(causes, ["--out <out>", "<distorted>"]);
        // A message of one line keeps it, with no causes; the usage synopsis is never a cause.
        let (error, causes) = usage_lines("unexpected argument '--x' found\n\nUsage: score <a>");
        assert_eq!((error.as_str(), causes.len()), ("unexpected argument '--x' found", 0));
        let (error, causes) = usage_lines("invalid value 'x' for '--n <N>'\n  tip: a number\n\nUsage: score");
        assert_eq!((error.as_str(), causes), ("invalid value 'x' for '--n <N>'", vec!["tip: a number".to_string()]));
    }
}
