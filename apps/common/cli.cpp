// Sub-command dispatch: verb lookup, tool-level help and version, exceptions to exit codes.
#include "common/cli.hpp"

#include <algorithm>
#include <cctype>
#include <iostream>
#include <new>
#include <optional>

#include <boost/program_options/errors.hpp>

#include "attn/blas/blas.hpp"
#include "attn/core/error.hpp"
#include "attn/core/memory.hpp"
#include "attn/dist/world.hpp"
#include "attn/io/output_file.hpp"

#ifndef ATTN_VERSION
#error "ATTN_VERSION must be defined by the build (apps/common/sources.cmake)"
#endif

namespace attn::cli {

// A message quotes what the user gave: a 100,000-character value is shown by its start and length.
std::string clipped(const std::string& message) {
  constexpr size_t kLongest = 200, kKept = 60;
  std::string out;
  size_t i = 0;
  while (i < message.size()) {
    size_t j = i;
    while (j < message.size() && !std::isspace(static_cast<unsigned char>(message[j]))) ++j;
    if (j - i > kLongest)
      out += message.substr(i, kKept) + "... (" + std::to_string(j - i) + " characters)";
    else
      out += message.substr(i, j - i);
    if (j < message.size()) out += message[j++];
    i = j;
  }
  return out;
}

namespace {

// Boost keeps an error's substitutions protected; a pointer to the member, formed in a derived
// class, reads them from any error_with_option_name.
struct Substitutions : boost::program_options::error_with_option_name {
  static auto member() { return &Substitutions::m_substitutions; }
};

}  // namespace

std::string usage_message(boost::program_options::error& e) {
  if (auto* named = dynamic_cast<boost::program_options::error_with_option_name*>(&e)) {
    const auto values = named->*Substitutions::member();   // a copy: set_substitute changes the map
    for (const auto& [key, value] : values) {
      if (value.find('%') == std::string::npos) continue;
      std::string safe;
      for (const char c : value) safe += c == '%' ? std::string("\xef\xbc\x85") : std::string(1, c);   // U+FF05
      named->set_substitute(key, safe);
    }
  }
  return e.what();
}

namespace {

void print_tool_help(std::ostream& os, const std::string& tool, const std::vector<Verb>& verbs) {
  size_t width = 0;
  for (const Verb& v : verbs) width = std::max(width, v.name.size());
  os << "Usage: " << tool << " <verb> [options]\n\nVerbs:\n";
  for (const Verb& v : verbs)
    os << "  " << v.name << std::string(width - v.name.size() + 3, ' ') << v.summary << "\n";
  os << "\n'" << tool << " <verb> --help' lists a verb's options and their defaults.\n"
     << "'" << tool << " --version' prints the version.\n"
     << "Exit codes: 0 success, 1 runtime failure, 2 usage error, 3 bad input data.\n";
}

// Levenshtein distance, for "did you mean" on a mistyped verb.
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1])});
      diag = up;
    }
  }
  return row[b.size()];
}

// The verb's failure on stderr: the message as it is with one rank; on several, every rank that
// fails says so (a failure may be one rank's alone: a file missing on its machine), rank 0's
// line as a single process's and the others' naming their rank.
// The line goes out in one write, so that ranks sharing a terminal do not interleave within it.
void report(const std::string& prefix, const std::string& what) {
  const dist::Communicator& world = dist::world();
  std::string line = prefix;
  if (!world.is_root()) line += "rank " + std::to_string(world.rank()) + " of " + std::to_string(world.size()) + ": ";
  line += clipped(what);
  line += '\n';
  std::cerr << line << std::flush;
}

// The verb's exit code, every exception mapped to one (cli.hpp).
int run_verb(const std::string& tool, const Verb& verb, int argc, char** argv) {
  const std::string prefix = tool + " " + verb.name + ": ";
  try {
    return verb.run(argc, argv);
  } catch (boost::program_options::error& e) {
    report(prefix, usage_message(e) + " (see '" + tool + " " + verb.name + " --help')");
    return kExitUsage;
  } catch (const ConfigError& e) {
    report(prefix, e.what());
    return kExitUsage;
  } catch (const MemoryError& e) {   // sized by an input file (3) or by the options (2)
    report(prefix, e.what());
    return e.blame() == MemoryBlame::input ? kExitBadInput : kExitUsage;
  } catch (const IoError& e) {
    report(prefix, e.what());
    return kExitBadInput;
  } catch (const FormatError& e) {
    report(prefix, e.what());
    return kExitBadInput;
  } catch (const ShapeError& e) {
    report(prefix, e.what());
    return kExitBadInput;
  } catch (const DataError& e) {
    report(prefix, e.what());
    return kExitBadInput;
  } catch (const std::bad_alloc&) {
    report(prefix, "out of memory");
    return kExitFailure;
  } catch (const std::exception& e) {   // OutputError, attn::Error, anything unexpected
    report(prefix, e.what());
    return kExitFailure;
  } catch (...) {
    report(prefix, "unknown exception");
    return kExitFailure;
  }
}

}  // namespace

const char* version() { return ATTN_VERSION; }

std::string version_text(const std::string& tool) {
  return tool + " " + version() + "\nBLAS: " + blas::library_config() + "\n";
}

std::string closest_verb(const std::string& word, const std::vector<Verb>& verbs) {
  std::string best;
  size_t best_distance = 3;   // only suggest within distance 2
  for (const Verb& v : verbs) {
    const size_t d = edit_distance(word, v.name);
    if (d < best_distance) { best_distance = d; best = v.name; }
  }
  return best;
}

int dispatch(const std::string& tool, int argc, char** argv, const std::vector<Verb>& verbs) {
  io::remove_temp_files_on_signals();   // an interrupted write leaves no temporary file
  if (argc < 2) {
    std::cerr << tool << ": missing verb\n\n";
    print_tool_help(std::cerr, tool, verbs);
    return kExitUsage;
  }
  const std::string word = argv[1];
  if (word == "help" && argc > 2) {   // `attn-data help copy` is `attn-data copy --help`
    static char help_flag[] = "--help";
    char* help_argv[] = {argv[0], argv[2], help_flag, nullptr};
    return dispatch(tool, 3, help_argv, verbs);
  }
  if (word == "--help" || word == "-h" || word == "help") {
    print_tool_help(std::cout, tool, verbs);
    return kExitOk;
  }
  if (word == "--version") {
    std::cout << version_text(tool);
    return kExitOk;
  }
  const auto verb = std::find_if(verbs.begin(), verbs.end(), [&](const Verb& v) { return v.name == word; });
  if (verb == verbs.end()) {
    std::cerr << tool << ": " << (word.starts_with("-") ? "expected a verb before options, got '"
                                                        : "unknown verb '") << word << "'";
    if (const std::string near = closest_verb(word, verbs); !near.empty())
      std::cerr << " (did you mean '" << near << "'?)";
    std::cerr << "; '" << tool << " --help' lists the verbs\n";
    return kExitUsage;
  }

  // An MPI job's ranks (dist/world.hpp); a plain run touches no MPI. A verb that fails on one rank
  // of several ends the whole job with its exit code, so that no rank waits for it.
  std::optional<dist::Environment> job;
  try {
    job.emplace();
  } catch (const ConfigError& e) {
    std::cerr << tool << ": " << e.what() << "\n";
    return kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << tool << ": " << e.what() << "\n";
    return kExitFailure;
  }
  const int code = run_verb(tool, *verb, argc - 1, argv + 1);
  if (code != kExitOk && dist::world().size() > 1) job->end_job(code);
  return code;
}

}  // namespace attn::cli
