fn main() -> std::process::ExitCode {
    bbrtop::mem::return_big_frees();
    bbrtop::cli::main()
}
