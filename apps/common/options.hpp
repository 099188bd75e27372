// A verb's options: the shared flags, --config INI files, --help, range checks, and the
// effective configuration (echoed to stderr, stored in the output HDF5).
//
// Every verb builds one Options, adds the shared flags it uses (one name and meaning across
// all tools: --data, --model, --out, --split, --seed, --threads, --batch-size, --epochs,
// --steps, --lr) and its own through Boost.ProgramOptions, then calls parse():
//
//   int cmd_copy(int argc, char** argv) {                      // argv[0] is "copy"
//     cli::Options opts("attn-data", "--out FILE [options]", "The NTM copy task ...");
//     opts.out("output HDF5 file").seed();
//     opts.add()("n", po::value<int64_t>()->default_value(10000)
//                         ->notifier(cli::positive<int64_t>("n")), "training examples");
//     if (!opts.parse(argc, argv)) return 0;                   // --help or --version printed
//     ... opts.get<int64_t>("n") ...
//   }
//
// parse() reads the command line, then the --config INI file (`key = value` lines with the
// long option names; the command line wins), rejects unknown flags and stray words, runs the
// range checks attached as notifiers (which throw ConfigError naming the flag: `--n must be
// > 0, got 0`), refuses `--out -` / `--data -` when that stream is a terminal, refuses an output
// option that names an existing input file (the same device and inode, whatever the path:
// `--out m.h5` with `--model m.h5`) or a FIFO, folder, socket or block device, applies
// --threads, and echoes the effective configuration to stderr unless --quiet. --config,
// --quiet, --help and --version are always present.
#pragma once
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <sstream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "attn/core/error.hpp"
#include "attn/io/hdf5_file.hpp"

namespace attn::cli {

namespace po = boost::program_options;

// Which --help section an option is listed in. A train verb stores the model's options through
// the model's own configuration and the optimizer's as resolved (common/training.hpp), the
// others as given.
enum class OptionGroup : uint8_t { own, model, optimizer };

// Whether a file option is read or written. Options named "out" are outputs, --model is what
// model() says, and every other option whose value is a FILE (or a PICTURE) is an input.
enum class FileRole : uint8_t { input, output };

// One entry of the effective configuration.
struct ConfigEntry {
  std::string name;                                   // the long flag name: "min-len"
  io::AttrValue value;                                // bool as 0/1, float as its shortest decimal
  std::string text;                                   // as echoed: "20", "0.001", "m30k.h5"
  bool defaulted = false;                             // the default, not given by the user
  OptionGroup group = OptionGroup::own;
};

class Options {
 public:
  // tool: "attn-data". synopsis: the usage line after the verb ("--out FILE [options]").
  // about: a short paragraph printed by --help under the usage line.
  Options(std::string tool, std::string synopsis, std::string about);

  // The verb's own options, Boost.ProgramOptions style: opts.add()("n", po::value<...>, "...").
  po::options_description_easy_init add();
  // The same for the options that define a model ("Model options" in --help) and the
  // optimizer's ("Optimizer options").
  po::options_description_easy_init add_model();
  po::options_description_easy_init add_optimizer();

  // The shared flags. Each returns *this so that they chain. `help` says what the file is; data()
  // and out() add what "-" does themselves ("; - reads standard input", "; - writes the HDF5
  // image to standard output"), so a verb's text must not say it again.
  Options& data(const std::string& help, bool required = true);    // --data FILE ("-": stdin)
  Options& model(const std::string& help, bool required = true,    // --model FILE
                 FileRole role = FileRole::input);
  Options& out(const std::string& help);                           // --out FILE ("-": stdout), required
  Options& split(const std::string& default_split = "test");       // --split train|valid|test
  Options& seed(int64_t default_seed = 1);                         // --seed >= 0
  Options& threads();                                              // --threads (0: OpenMP's default)
  Options& batch_size(int64_t default_size);                       // --batch-size > 0
  Options& epochs(int64_t default_epochs);                         // --epochs > 0
  Options& steps(int64_t default_steps);                           // --steps > 0
  Options& lr(double default_lr);                                  // --lr > 0

  // Two file options that may name the same file: an input that is legitimately rewritten
  // (train --resume FILE --model FILE continues a checkpoint into itself).
  Options& may_share(const std::string& input, const std::string& output);

  // After parse(): refuses (ConfigError, exit 2) an input that no file option holds as its whole
  // value, as parse() refuses an input option, when an output option names the same file
  // (device and inode, through any path or link). `what` names it in the message: "the input
  // file run.h5" (attn-plot's FILE argument), "--series run.h5::/metrics/loss".
  void check_input(const std::string& what, const std::string& path) const;

  // For verbs that only inspect (attn-data info): parse() does not echo the configuration.
  Options& no_config_echo() { echo_ = false; return *this; }

  // For verbs that run data-parallel on several ranks of an MPI job (the train verbs). parse()
  // refuses every other verb when the job has more than one rank (ConfigError), and --data -
  // (only rank 0 has standard input). Only rank 0 echoes the configuration.
  Options& distributed() { distributed_ = true; return *this; }

  // For verbs that can write text (attn-plot refinement --format txt): parse() lets --out - be a
  // terminal when --<flag> has `value`, where it refuses every binary output to one.
  Options& text_out_when(const std::string& flag, const std::string& value) {
    text_out_ = {flag, value};
    return *this;
  }

  // Parses argv (argv[0] is the verb). Returns false when --help or --version was printed
  // (the verb then returns 0). Throws po::error or ConfigError on a usage error.
  bool parse(int argc, char** argv);

  // The value of an option that has one (given or defaulted); std::logic_error otherwise.
  template <class T>
  T get(const std::string& name) const {
    if (!has(name)) throw std::logic_error("Options::get: option '--" + name + "' has no value");
    return vm_[name].as<T>();
  }
  bool has(const std::string& name) const { return vm_.count(name) > 0; }
  // Given on the command line or in --config (not its default). A bool switch counts when on.
  bool given(const std::string& name) const;
  // ConfigError "--a and --b contradict each other: why" when both are given.
  void refuse_together(const std::string& a, const std::string& b, const std::string& why) const;
  bool quiet() const { return quiet_; }

  const std::string& tool() const { return tool_; }
  const std::string& verb() const { return verb_; }
  // The full command line, shell-quoted: "attn-data copy --n 4 --out -".
  const std::string& command() const { return command_; }

  // The effective configuration in declaration order: every option with a value, except
  // --config, --quiet, --help, --version and --out (where the result went is not part of
  // how it was made; the file knows its own name).
  std::vector<ConfigEntry> config() const;
  void echo(std::ostream& os) const;          // "attn-data copy: configuration\n  n  4\n..."

 private:
  std::string tool_, synopsis_, about_, verb_, command_;
  po::options_description own_, model_, optimizer_, general_;
  po::variables_map vm_;
  bool quiet_ = false;
  bool echo_ = true;
  bool distributed_ = false;
  std::pair<std::string, std::string> text_out_;                     // (flag, value): text_out_when
  std::vector<std::string> outputs_{"out"};                          // output file options
  std::vector<std::pair<std::string, std::string>> may_share_;      // (input, output)

  // Every output option: refused when it is a FIFO, folder, socket or block device
  // (io::resolve_output), or when it is the same file (device and inode) as an input option.
  void check_files() const;
  // The one same-file check, for the input `path` (named `what`, read through option `flag`, ""
  // for none): ConfigError when an output option other than those may_share() pairs with `flag`
  // is the same regular file.
  void refuse_output_over(const std::string& what, const std::string& path, const std::string& flag) const;
  // The verb may run on the world's ranks (distributed()).
  void check_ranks() const;
};

// Stores the effective configuration as attributes of `/config`: one per ConfigEntry, named
// by the flag with '-' turned into '_' (min-len -> min_len), typed int64, double or string.
void store_config(const Options& opts, io::File& file);

// Creates the output file `--out` ("-": stdout on commit) with the root attributes of
// DESIGN.md (format, format_version io::kFormatVersion, kind, created_by "<tool> <version>", command) and the
// effective configuration in /config. A failure to create it throws OutputError (exit 1).
io::File create_output(const Options& opts, const std::string& format, const std::string& kind);
// Commits an output file (atomic rename, or the image to stdout); failures throw OutputError.
void commit_output(io::File& file);
// create_output, then fill(file), then commit_output: the whole write in one call, every
// IoError of it reported as OutputError.
void write_output(const Options& opts, const std::string& format, const std::string& kind,
                  const std::function<void(io::File&)>& fill);

// The one-line summary of a run: to stdout, or to stderr when the output itself goes to
// stdout (--out -), where it is silenced by --quiet.
void print_summary(const Options& opts, const std::string& line);

// Shell-quotes one word when needed (for the stored command line).
std::string shell_quote(const std::string& word);

// An int64 flag with a default, shown as `--name N (=default)` by --help.
inline po::typed_value<int64_t>* int_value(int64_t default_value) {
  return po::value<int64_t>()->value_name("N")->default_value(default_value);
}

// ---- Range checks, attached as notifiers: po::value<T>()->notifier(cli::positive<T>("n")).
// Each throws ConfigError naming the flag and the value: "--epochs must be > 0, got 0".

std::string format_number(double value);

template <class T>
std::function<void(const T&)> greater_than(const std::string& flag, T bound) {
  return [flag, bound](const T& v) {
    if (!(v > bound))
      throw ConfigError("--" + flag + " must be > " + format_number(static_cast<double>(bound)) +
                        ", got " + format_number(static_cast<double>(v)));
  };
}
template <class T>
std::function<void(const T&)> positive(const std::string& flag) {
  return greater_than<T>(flag, T(0));
}
template <class T>
std::function<void(const T&)> at_least(const std::string& flag, T bound) {
  return [flag, bound](const T& v) {
    if (!(v >= bound))
      throw ConfigError("--" + flag + " must be >= " + format_number(static_cast<double>(bound)) +
                        ", got " + format_number(static_cast<double>(v)));
  };
}
template <class T>
std::function<void(const T&)> in_range(const std::string& flag, T lo, T hi) {
  return [flag, lo, hi](const T& v) {
    if (!(v >= lo && v <= hi))
      throw ConfigError("--" + flag + " must be in [" + format_number(static_cast<double>(lo)) +
                        ", " + format_number(static_cast<double>(hi)) + "], got " +
                        format_number(static_cast<double>(v)));
  };
}
// The string must be one of `allowed`: "--split must be one of train, valid, test, got 'dev'".
std::function<void(const std::string&)> one_of(const std::string& flag,
                                                std::vector<std::string> allowed);
// An enumerated string option with a default: --help shows `--cell gru|lstm (=gru)`, and any
// other value is a usage error listing the choices (one_of).
po::typed_value<std::string>* choice(const std::string& flag, const std::string& default_value,
                                     std::vector<std::string> allowed);

// "10,15,20" (or "10, 15, 20") -> {10, 15, 20}; ConfigError "--<flag> must be integers separated
// by commas, got '<text>'" for anything else (an empty item, a lone sign, trailing text).
std::vector<int64_t> parse_int_list(const std::string& flag, const std::string& text);

// A check between two options (after parse): `--max-len must be >= --min-len (5), got 3`.
void require_at_least(const Options& opts, const std::string& flag, const std::string& other_flag);

}  // namespace attn::cli
