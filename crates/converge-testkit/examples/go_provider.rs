//! Builds the Go test provider (`converge_testkit::go_provider`) and prints
//! its executable's path; `scripts/bench_terraform.py` runs it.
//! `CONVERGE_TEST_GO` names the `go` binary (scripts/lib/go.sh).

fn main() {
    #[cfg(unix)]
    println!("{}", converge_testkit::go_provider::executable().display());
}
