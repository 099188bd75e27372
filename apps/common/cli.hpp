// Sub-command dispatch and the exit-code convention shared by every attnlab tool.
//
// A tool's `main` is one call: `return cli::dispatch("attn-data", argc, argv, {{"copy",
// cmd_copy, "the NTM copy task"}, ...});`. dispatch prints `<tool> --help` (the verbs with
// their one-line summaries) and `<tool> --version`, rejects unknown verbs, runs the verb with
// argv[0] set to the verb's name, and turns whatever the verb throws into one line on stderr,
// prefixed by tool and verb (`attn-data copy: --n must be > 0, got 0`), and an exit code:
//   0 success; 1 runtime failure (anything unexpected, OutputError); 2 usage error
//   (Boost.ProgramOptions errors, attn::ConfigError); 3 bad input data (attn::IoError,
//   FormatError, ShapeError, DataError).
// Verbs therefore never catch to print: they throw the library's typed errors and return 0.
#pragma once
#include <boost/program_options/errors.hpp>

#include <stdexcept>
#include <string>
#include <vector>

namespace attn::cli {

enum ExitCode : int { kExitOk = 0, kExitFailure = 1, kExitUsage = 2, kExitBadInput = 3 };

// A verb's entry point: argv[0] is the verb's name, the rest its own arguments.
using VerbFn = int (*)(int argc, char** argv);

struct Verb {
  std::string name;        // "copy"
  VerbFn run;              // cmd_copy
  std::string summary;     // one line for `<tool> --help`
};

// Runs the verb named by argv[1]; returns the process exit code (see above). First installs the
// handlers that remove unfinished output files on SIGINT, SIGTERM and SIGHUP
// (io::remove_temp_files_on_signals).
int dispatch(const std::string& tool, int argc, char** argv, const std::vector<Verb>& verbs);

// The attnlab version ("0.1.0"), the project version CMake was configured with.
const char* version();

// What --version prints: "<tool> <version>" and a line "BLAS: " with OpenBLAS's version and the
// kernels it runs on this machine (blas::library_config), which a reported speed depends on.
std::string version_text(const std::string& tool);

// An output file cannot be created, written or committed (a full disk, a missing folder):
// a runtime failure (exit 1), not bad input. create_output/commit_output (options.hpp) throw
// it in place of the io layer's IoError, which on its own means an unreadable input (exit 3).
class OutputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// `message` with every run of more than 200 non-space characters (a value the user gave)
// shortened to its first 60 and its length: what every error message and echo prints.
std::string clipped(const std::string& message);

// The message of a Boost.ProgramOptions error. Boost 1.74 builds it by replacing placeholders
// ("%value%") until none is left, so a value that holds its own placeholder (--n '3%value%',
// found by tests/fuzz/fuzz_config) looped for ever: the values' % signs are shown as the
// full-width ％ instead, which no placeholder matches.
std::string usage_message(boost::program_options::error& e);

// The closest verb to a mistyped one (edit distance at most 2), or "" when none is close.
std::string closest_verb(const std::string& word, const std::vector<Verb>& verbs);

}  // namespace attn::cli
