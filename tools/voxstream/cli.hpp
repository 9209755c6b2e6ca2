/// @file cli.hpp
/// @brief The `voxstream` command line (CLI11): subcommands info, run, mip, stats and phantom. The
///        parser fills the commands' option structs; the op options of `run` keep their
///        command-line order. This header does not include CLI11.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "commands.hpp"

namespace vox::cli {

enum class command { none, info, run, mip, stats, phantom };

/// @brief A parsed command line.
struct parsed_command {
  command cmd{command::none};
  bool quiet{false};
  info_options info;
  run_options run;
  mip_options mip;
  stats_options stats;
  phantom_command phantom;
};

/// @brief Parses `args` (without the program name) as the tool would. Throws usage_error for
///        anything the tool would reject (the message is CLI11's or the op parser's); --help is
///        reported as usage_error too. For the tests.
[[nodiscard]] parsed_command parse_args(const std::vector<std::string>& args);

/// @brief The message the tool prints for an exception's what(): without the library's source
///        locations (" (src/io/format.cpp:917)"), "voxstream: " prefixes and internal function
///        names ("io::write: "), and with a nested message's repeated op name said once.
[[nodiscard]] std::string user_message(std::string_view what);

/// @brief The tool: parses argv, runs the command, prints errors on stderr. Returns 0 on
///        success, 2 for a usage error (bad option or value), 1 for any other error (missing or
///        malformed file, out of memory, ...).
int main_entry(int argc, char** argv);

}  // namespace vox::cli
