// tools/cli/cli.hpp: the command line of sinew's examples and bench programs, on CLI11 (Debian's libcli11-dev).
// Each program declares its options on a CLI::App, typed and with their defaults, so that --help is generated
// from what is parsed, `--batch 3.5` is an error rather than 3, a choice is checked with CLI::IsMember and a
// comma list (`--batch 42,128`) is read by CLI11's delimiter:
//
//   CLI::App app{"train_lenet5: LeNet-5 on Fashion-MNIST", "train_lenet5"};
//   int epochs = 5;
//   app.add_option("--epochs", epochs, "epochs to train")->capture_default_str();
//   sinew::cli::parse(app, argc, argv);
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/core.h>

namespace sinew::cli {

/// Exit status of a command line that cannot be used (--help exits with 0).
inline constexpr int kUsageError = 2;

/// Parses argv into `app`. --help prints the generated usage and exits with 0; a bad command line prints
/// CLI11's sentence (naming the option) and a pointer to --help, and exits with kUsageError.
inline void parse(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int status = app.exit(e);
    std::exit(status == 0 ? 0 : kUsageError);
  }
}

/// A command line that parsed but cannot be used (a combination of options CLI11 cannot express): says why,
/// points to --help, and exits with kUsageError.
[[noreturn]] inline void fail(const CLI::App& app, const std::string& message) {
  fmt::print(stderr, "{}: {}\nRun with --help for more information.\n", app.get_name(), message);
  std::exit(kUsageError);
}

/// The options every example and bench program shares, declared once.
inline CLI::Option* add_json(CLI::App& app, std::string& path) {
  return app.add_option("--json", path, "write the results to this JSON file")->option_text("FILE");
}
inline CLI::Option* add_threads(CLI::App& app, int& threads, const char* what = "compute threads") {
  return app.add_option("--threads", threads, what)->capture_default_str()->check(CLI::NonNegativeNumber);
}

/// The one element of a list option that a child process (bench programs measure in a process of their own)
/// was given, or a usage error naming the option.
template <class T>
const T& single(const CLI::App& app, const std::vector<T>& values, const std::string& option) {
  if (values.size() != 1)
    fail(app, option + " takes one value in a child process, got " + std::to_string(values.size()));
  return values.front();
}

}  // namespace sinew::cli
