fn main() -> std::process::ExitCode {
    bbrtop::cli::main()
}
