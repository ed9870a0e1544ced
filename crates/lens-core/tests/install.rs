//! `install_propagator` sets the process-wide propagator once: the same configuration again is
//! accepted, another one is refused (its own test binary: the propagator is process-wide). And
//! `W3cPropagator::from_env` and `install` read `OTEL_PROPAGATORS`, checked in child processes of
//! this test binary (the environment is process-wide too).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use lens_core::{PropagatorConfigError, W3cPropagator, install_propagator, propagator};

#[test]
fn the_propagator_is_installed_once_and_another_configuration_is_refused() {
    let first = W3cPropagator::new().with_plus_as_space(true);
    let installed = install_propagator(first.clone()).expect("the first install");
    assert_eq!(*installed, first);
    assert_eq!(*propagator(), first, "lens's calls use the installed one");
    assert!(
        install_propagator(first.clone()).is_ok(),
        "the same configuration again is accepted"
    );
    for other in [
        W3cPropagator::new(),
        W3cPropagator::trace_context_only().with_plus_as_space(true),
        W3cPropagator::baggage_only().with_plus_as_space(true),
    ] {
        assert!(
            matches!(
                install_propagator(other.clone()),
                Err(PropagatorConfigError::AlreadyInitialized)
            ),
            "{other:?} must be refused"
        );
    }
    assert_eq!(*propagator(), first, "a refused install changes nothing");
}

/// Set in a child process: the `OTEL_PROPAGATORS` value it was started with, or `unset`.
const CHILD: &str = "LENS_TEST_FROM_ENV";

#[test]
fn from_env_reads_otel_propagators() {
    if let Ok(case) = std::env::var(CHILD) {
        let got = W3cPropagator::from_env();
        let expected = match case.as_str() {
            "unset" | "" => W3cPropagator::new(),
            "tracecontext,b3" => {
                assert!(
                    matches!(got, Err(PropagatorConfigError::UnknownPropagator(ref n)) if n == "b3"),
                    "{got:?}"
                );
                assert!(lens_core::install().is_err(), "install reports it too");
                return;
            }
            names => W3cPropagator::from_names(names).expect("a valid list"),
        };
        assert_eq!(got.ok().as_ref(), Some(&expected), "{case}");
        // `install` installs what the environment says, and lens's calls then use it.
        let installed = lens_core::install().expect("a valid OTEL_PROPAGATORS");
        assert_eq!(*installed, expected, "{case}");
        assert_eq!(*propagator(), expected, "{case}");
        return;
    }
    let exe = std::env::current_exe().expect("the test binary");
    for case in [
        "unset",
        "",
        "baggage",
        "tracecontext",
        "none",
        "tracecontext,b3",
    ] {
        let mut child = std::process::Command::new(&exe);
        child
            .args([
                "--exact",
                "from_env_reads_otel_propagators",
                "--test-threads=1",
            ])
            .env(CHILD, case);
        if case == "unset" {
            child.env_remove("OTEL_PROPAGATORS");
        } else {
            child.env("OTEL_PROPAGATORS", case);
        }
        let out = child.output().expect("the child test runs");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains("1 passed"),
            "OTEL_PROPAGATORS={case:?}: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
