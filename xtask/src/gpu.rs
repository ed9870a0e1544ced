//! `cargo xtask gpu-test` and `cargo xtask gpu-bench`: the GPU suites of lens-nccl (feature
//! `nccl`, `tests/gpu.rs`) and lens-dist (feature `nccl`, `tests/nccl_gpu.rs`), and lens-nccl's
//! GPU benchmark.
//!
//! Both build with cargo, then run the binaries with NCCL made findable: cudarc looks for
//! `libnccl.so` (and a few other names), while the pip wheel `nvidia-nccl-cu13` (what PyTorch
//! ships) has only `libnccl.so.2`. When no `libnccl.so` is on the library path already, a folder
//! `<target-dir>/gpu-test/nccl-lib/` with a `libnccl.so` symlink to the wheel's `libnccl.so.2`
//! (found in python3's site-packages, under `nvidia/nccl/lib`, or in `$LENS_NCCL_LIB_DIR`) is put
//! first on `LD_LIBRARY_PATH`.
//!
//! Without a GPU (or libcuda / libnccl) the binaries say why and exit 0 having run nothing.
//!
//! For a GPU machine without a Rust toolchain: `cargo xtask gpu-test --build-only` copies the
//! binaries and `scripts/nccl-gpu-test.sh` into `<target-dir>/gpu-test/`; carry that folder over
//! and run `scripts/nccl-gpu-test.sh` there (or `cargo xtask gpu-test --run-prebuilt DIR`).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::failure::{Failure, Result};
use crate::run::run;
use crate::workspace::cargo;

pub(crate) const GPU_TEST_HELP: &str = "\
usage: cargo xtask gpu-test [--build-only | --run-prebuilt DIR]

Builds two GPU suites (release) and runs them:
  lens-nccl (feature `nccl`): world size 1 send/recv to self with a context frame beside a
    1 MiB and a 64 MiB payload; with 2 or more GPUs a 2-rank pipeline.
  lens-dist (feature `nccl`): broadcast_trace_context and create_linked_span over
    NcclCollective, world size 1; with N >= 2 GPUs, N ranks (sources 0 and N-1).
Without a GPU each says why and exits 0 having run nothing.
  --build-only        build, and copy the binaries and scripts/nccl-gpu-test.sh into
                      <target-dir>/gpu-test/ (for a GPU machine without Rust)
  --run-prebuilt DIR  run DIR/lens-nccl-gpu-test and DIR/lens-dist-gpu-test (built by
                      --build-only)
NCCL: a libnccl.so on the library path, else the pip wheel's libnccl.so.2 (python3
site-packages nvidia/nccl/lib, or $LENS_NCCL_LIB_DIR) through a libnccl.so symlink.";

pub(crate) const GPU_BENCH_HELP: &str = "\
usage: cargo xtask gpu-bench [-- BENCH-ARGS...]

Runs lens-nccl's GPU benchmark (feature `nccl`): a 1 MiB send/recv to self with and without the
context frame, same run (target: at most 5% added). Without a GPU it says why and runs nothing.
NCCL is found as for `cargo xtask gpu-test`.";

/// One GPU target: package, feature, cargo target name, and its binary's name in the
/// `--build-only` folder.
struct Target {
    package: &'static str,
    feature: &'static str,
    name: &'static str,
    bin: &'static str,
}

/// The GPU test suites, built and run in this order (`harness = false`, `--release`).
const TESTS: [Target; 2] = [
    Target {
        package: "lens-nccl",
        feature: "nccl",
        name: "gpu",
        bin: "lens-nccl-gpu-test",
    },
    Target {
        package: "lens-dist",
        feature: "nccl",
        name: "nccl_gpu",
        bin: "lens-dist-gpu-test",
    },
];

/// lens-nccl's GPU benchmark.
const BENCH: Target = Target {
    package: "lens-nccl",
    feature: "nccl",
    name: "gpu",
    bin: "lens-nccl-gpu-bench",
};

/// Builds every test suite into [`gpu_dir`].
fn build_tests() -> Result {
    TESTS.iter().try_for_each(|target| build("test", target))
}

/// `<target-dir>/gpu-test/`: the `--build-only` folder.
fn gpu_dir() -> PathBuf {
    target_dir().join("gpu-test")
}

pub(crate) fn gpu_test(args: &[String]) -> Result {
    match args {
        [] => {
            build_tests()?;
            run_prebuilt_test(&gpu_dir())
        }
        [flag] if crate::usage::is_help(flag) => {
            println!("{GPU_TEST_HELP}");
            Ok(())
        }
        [flag] if flag == "--build-only" => {
            build_tests()?;
            build("bench", &BENCH)?;
            let dir = gpu_dir();
            let script = crate::workspace::workspace_root().join("scripts/nccl-gpu-test.sh");
            copy(&script, &dir.join("nccl-gpu-test.sh"))?;
            println!(
                "\nGPU binaries in {}: carry that folder, then run `./nccl-gpu-test.sh` in it",
                dir.display()
            );
            Ok(())
        }
        [flag, dir] if flag == "--run-prebuilt" => run_prebuilt_test(Path::new(dir)),
        _ => Err(Failure::Usage(
            format!("unexpected arguments {args:?}"),
            GPU_TEST_HELP,
        )),
    }
}

pub(crate) fn gpu_bench(args: &[String]) -> Result {
    let (ours, forwarded) = match args.iter().position(|a| a == "--") {
        Some(i) => (&args[..i], &args[i + 1..]),
        None => (args, &[][..]),
    };
    if ours.iter().any(|a| crate::usage::is_help(a)) {
        println!("{GPU_BENCH_HELP}");
        return Ok(());
    }
    if let Some(extra) = ours.first() {
        return Err(Failure::Usage(
            format!("unexpected argument `{extra}`"),
            GPU_BENCH_HELP,
        ));
    }
    let mut command = cargo(&[
        "bench",
        "-p",
        "lens-nccl",
        "--features",
        "nccl",
        "--bench",
        "gpu",
    ]);
    if !forwarded.is_empty() {
        command.arg("--").args(forwarded);
    }
    with_nccl_env(&mut command)?;
    run("gpu-bench lens-nccl", command)
}

/// Builds `target` (`kind` is `test` or `bench`; release, with the target's feature) and copies
/// its executable to `<target-dir>/gpu-test/<bin>`.
fn build(kind: &str, target: &Target) -> Result {
    let Target {
        package,
        feature,
        name,
        bin,
    } = *target;
    let mut args = vec![
        kind,
        "-p",
        package,
        "--features",
        feature,
        "--no-run",
        "--message-format=json-render-diagnostics",
        if kind == "bench" { "--bench" } else { "--test" },
        name,
    ];
    if kind == "test" {
        // `cargo bench` builds optimised already and takes no `--release`.
        args.push("--release");
    }
    let out = cargo(&args)
        .output()
        .map_err(|e| Failure::Step(format!("could not start cargo: {e}")))?;
    if !out.status.success() {
        return Err(Failure::Step(format!(
            "building {package}'s {kind} `{name}` (feature `{feature}`) failed"
        )));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let exe = stdout
        .lines()
        .filter(|l| l.contains(&format!("\"name\":\"{name}\"")))
        .find_map(executable_of)
        .ok_or_else(|| {
            Failure::Step(format!(
                "cargo reported no executable for {package}'s `{name}`"
            ))
        })?;
    let dir = gpu_dir();
    std::fs::create_dir_all(&dir)
        .map_err(|e| Failure::Step(format!("cannot create {}: {e}", dir.display())))?;
    copy(Path::new(&exe), &dir.join(bin))
}

/// The cargo target directory: `CARGO_TARGET_DIR` if set, else `<workspace>/target`.
fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => crate::workspace::workspace_root().join(dir),
        _ => crate::workspace::workspace_root().join("target"),
    }
}

/// The `"executable":"..."` of one line of cargo's JSON messages (paths without `"` or `\`).
fn executable_of(line: &str) -> Option<String> {
    let start = line.find("\"executable\":\"")? + "\"executable\":\"".len();
    let end = line[start..].find('"')?;
    Some(line[start..start + end].to_owned())
}

fn copy(from: &Path, to: &Path) -> Result {
    std::fs::copy(from, to).map(|_| ()).map_err(|e| {
        Failure::Step(format!(
            "cannot copy {} to {}: {e}",
            from.display(),
            to.display()
        ))
    })
}

/// Runs every test suite's binary in `dir`, all of them even when one fails.
fn run_prebuilt_test(dir: &Path) -> Result {
    let mut failed = Vec::new();
    for target in &TESTS {
        let exe = dir.join(target.bin);
        if !exe.is_file() {
            return Err(Failure::Step(format!(
                "{} is missing (build it with `cargo xtask gpu-test --build-only`)",
                exe.display()
            )));
        }
        let mut command = Command::new(&exe);
        with_nccl_env(&mut command)?;
        if let Err(Failure::Step(why) | Failure::Usage(why, _)) =
            run(&format!("gpu-test {}", target.package), command)
        {
            failed.push(why);
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(Failure::Step(failed.join("; ")))
    }
}

/// Puts a `libnccl.so` symlink to the pip wheel's `libnccl.so.2` first on `LD_LIBRARY_PATH`
/// when the wheel is found; otherwise leaves the environment as it is (a system libnccl.so, or
/// none: then the binaries say NCCL is unavailable).
fn with_nccl_env(command: &mut Command) -> Result {
    let Some(lib_dir) = wheel_nccl_dir() else {
        println!("gpu: no nvidia-nccl wheel found; relying on a libnccl.so on the library path");
        return Ok(());
    };
    let link_dir = gpu_dir().join("nccl-lib");
    std::fs::create_dir_all(&link_dir)
        .map_err(|e| Failure::Step(format!("cannot create {}: {e}", link_dir.display())))?;
    let link = link_dir.join("libnccl.so");
    let _ = std::fs::remove_file(&link);
    symlink(&lib_dir.join("libnccl.so.2"), &link)?;
    let mut path = link_dir.into_os_string();
    if let Some(old) = std::env::var_os("LD_LIBRARY_PATH").filter(|v| !v.is_empty()) {
        path.push(":");
        path.push(old);
    }
    println!(
        "gpu: NCCL from {} (libnccl.so symlink on LD_LIBRARY_PATH)",
        lib_dir.display()
    );
    command.env("LD_LIBRARY_PATH", path);
    Ok(())
}

#[cfg(unix)]
fn symlink(target: &Path, link: &Path) -> Result {
    std::os::unix::fs::symlink(target, link)
        .map_err(|e| Failure::Step(format!("cannot link {}: {e}", link.display())))
}

#[cfg(not(unix))]
fn symlink(_target: &Path, _link: &Path) -> Result {
    Err(Failure::Step("NCCL runs on Linux only".to_owned()))
}

/// The folder holding the wheel's `libnccl.so.2`: `$LENS_NCCL_LIB_DIR`, else
/// `nvidia/nccl/lib` in one of python3's site-packages folders.
fn wheel_nccl_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("LENS_NCCL_LIB_DIR") {
        let dir = PathBuf::from(dir);
        return dir.join("libnccl.so.2").is_file().then_some(dir);
    }
    let out = Command::new("python3")
        .args([
            "-c",
            "import site, sys; print('\\n'.join(site.getsitepackages() + [site.getusersitepackages()] + sys.path))",
        ])
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| Path::new(l.trim()).join("nvidia/nccl/lib"))
        .find(|dir| dir.join("libnccl.so.2").is_file())
}
