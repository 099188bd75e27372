// Options: shared flags, parsing (command line, then --config), the effective configuration
// and the output-file helpers built on it.
#include "common/options.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string_view>

#include <sys/stat.h>
#include <unistd.h>

#include "attn/core/thread_governor.hpp"
#include "attn/core/threading.hpp"
#include "attn/dist/world.hpp"
#include "attn/io/hdf5_file.hpp"
#include "attn/io/output_file.hpp"
#include "common/cli.hpp"

namespace attn::cli {
namespace {

constexpr unsigned kHelpWidth = 100;
// Descriptions get at least this many columns: a long option (an enumeration's choices) then has
// its description on the next line instead of pushing every description to the right.
constexpr unsigned kHelpDescription = 64;
constexpr const char* kStray = "stray-word";   // hidden: catches positional words to reject them

// Options that say how to run, not what was made: never echoed nor stored.
bool is_meta(const std::string& name) {
  return name == "config" || name == "quiet" || name == "help" || name == "version" || name == "out";
}

template <class F>
std::string shortest(F value) {   // the shortest text that reads back as the same value
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, value);
  return std::string(buf, res.ptr);
}

// The typed value and text of one stored option; std::logic_error for a type we do not know.
ConfigEntry entry_of(const std::string& name, const po::variable_value& v) {
  const boost::any& a = v.value();
  ConfigEntry e{name, int64_t{0}, "", v.defaulted(), OptionGroup::own};
  auto integer = [&](int64_t x) { e.value = x; e.text = std::to_string(x); };
  if (const auto* p = boost::any_cast<bool>(&a)) {
    integer(*p ? 1 : 0);
    e.text = *p ? "true" : "false";
  } else if (const auto* p = boost::any_cast<int>(&a)) {
    integer(*p);
  } else if (const auto* p = boost::any_cast<long>(&a)) {
    integer(*p);
  } else if (const auto* p = boost::any_cast<long long>(&a)) {
    integer(*p);
  } else if (const auto* p = boost::any_cast<unsigned>(&a)) {
    integer(*p);
  } else if (const auto* p = boost::any_cast<double>(&a)) {
    e.value = *p;
    e.text = shortest(*p);
  } else if (const auto* p = boost::any_cast<float>(&a)) {
    e.text = shortest(*p);   // "0.001", not the widened 0.0010000000474974513
    e.value = std::stod(e.text);
  } else if (const auto* p = boost::any_cast<std::string>(&a)) {
    e.value = *p;
    e.text = *p;
  } else if (const auto* p = boost::any_cast<std::vector<std::string>>(&a)) {
    std::string joined;
    for (const std::string& s : *p) joined += (joined.empty() ? "" : " ") + s;
    e.value = joined;
    e.text = joined;
  } else {
    throw std::logic_error("cli::Options: option '--" + name +
                           "' has a type the configuration cannot store (use int64_t, double, "
                           "std::string or bool)");
  }
  return e;
}

// Whether an option's value names a file: its value name says FILE (or PICTURE).
bool names_a_file(const po::option_description& opt) {
  const std::string name = opt.semantic()->name();
  return name.find("FILE") != std::string::npos || name.find("PICTURE") != std::string::npos;
}

// The paths an option holds: one string, or several (--inputs A B C).
std::vector<std::string> file_values(const po::variable_value& v) {
  if (const auto* p = boost::any_cast<std::string>(&v.value())) return {*p};
  if (const auto* p = boost::any_cast<std::vector<std::string>>(&v.value())) return *p;
  return {};
}

}  // namespace

std::string format_number(double value) {
  if (std::isfinite(value) && value == std::trunc(value) && std::fabs(value) < 1e15)
    return std::to_string(static_cast<int64_t>(value));
  return shortest(value);
}

std::string shell_quote(const std::string& word) {
  const bool safe = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("_-./:=,+@%").find(c) != std::string_view::npos;
  });
  if (safe) return word;
  std::string q = "'";
  for (char c : word) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::function<void(const std::string&)> one_of(const std::string& flag,
                                                std::vector<std::string> allowed) {
  return [flag, allowed = std::move(allowed)](const std::string& v) {
    if (std::find(allowed.begin(), allowed.end(), v) != allowed.end()) return;
    std::string list;
    for (const std::string& a : allowed) list += (list.empty() ? "" : ", ") + a;
    throw ConfigError("--" + flag + " must be one of " + list + ", got '" + v + "'");
  };
}

po::typed_value<std::string>* choice(const std::string& flag, const std::string& default_value,
                                     std::vector<std::string> allowed) {
  std::string names;
  for (const std::string& a : allowed) names += (names.empty() ? "" : "|") + a;
  return po::value<std::string>()->value_name(names)->default_value(default_value)->notifier(
      one_of(flag, std::move(allowed)));
}

void require_at_least(const Options& opts, const std::string& flag, const std::string& other_flag) {
  const int64_t v = opts.get<int64_t>(flag), bound = opts.get<int64_t>(other_flag);
  if (v < bound)
    throw ConfigError("--" + flag + " must be >= --" + other_flag + " (" + std::to_string(bound) +
                      "), got " + std::to_string(v));
}

std::vector<int64_t> parse_int_list(const std::string& flag, const std::string& text) {
  std::vector<int64_t> out;
  size_t begin = 0;
  while (true) {
    const size_t end = std::min(text.find(',', begin), text.size());
    std::string_view item(text.data() + begin, end - begin);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);   // "1, 2" reads as "1,2"
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    int64_t v = 0;
    const auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || ptr != item.data() + item.size())
      throw ConfigError("--" + flag + " must be integers separated by commas, got '" + text + "'");
    out.push_back(v);
    if (end == text.size()) return out;
    begin = end + 1;
  }
}

Options::Options(std::string tool, std::string synopsis, std::string about)
    : tool_(std::move(tool)), synopsis_(std::move(synopsis)), about_(std::move(about)),
      own_("Options", kHelpWidth, kHelpDescription), model_("Model options", kHelpWidth, kHelpDescription),
      optimizer_("Optimizer options", kHelpWidth, kHelpDescription),
      general_("General options", kHelpWidth, kHelpDescription) {
  // clang-format off
  general_.add_options()
      ("config", po::value<std::string>()->value_name("FILE"),
       "read options from an INI file of `name = value` lines (the command line wins)")
      ("quiet", po::bool_switch(), "print nothing on stderr but errors")
      ("help,h", "show this help and exit")
      ("version", "print the version and exit");
  // clang-format on
}

po::options_description_easy_init Options::add() { return own_.add_options(); }
po::options_description_easy_init Options::add_model() { return model_.add_options(); }
po::options_description_easy_init Options::add_optimizer() { return optimizer_.add_options(); }

Options& Options::data(const std::string& help, bool required) {
  auto* v = po::value<std::string>()->value_name("FILE");
  if (required) v->required();
  own_.add_options()("data", v, (help + "; - reads standard input").c_str());
  return *this;
}

Options& Options::model(const std::string& help, bool required, FileRole role) {
  auto* v = po::value<std::string>()->value_name("FILE");
  if (required) v->required();
  own_.add_options()("model", v, help.c_str());
  if (role == FileRole::output) outputs_.push_back("model");
  return *this;
}

Options& Options::may_share(const std::string& input, const std::string& output) {
  may_share_.emplace_back(input, output);
  return *this;
}

Options& Options::out(const std::string& help) {
  own_.add_options()("out", po::value<std::string>()->value_name("FILE")->required(),
                     (help + "; - writes the HDF5 image to standard output").c_str());
  return *this;
}

Options& Options::split(const std::string& default_split) {
  own_.add_options()("split", choice("split", default_split, {"train", "valid", "test"}), "which split of --data");
  return *this;
}

Options& Options::seed(int64_t default_seed) {
  // clang-format off
  own_.add_options()("seed", po::value<int64_t>()->value_name("N")->default_value(default_seed)
                                 ->notifier(at_least<int64_t>("seed", 0)),
                     "random seed; the same seed gives the same bits");
  // clang-format on
  return *this;
}

Options& Options::threads() {
  // clang-format off
  own_.add_options()("threads", po::value<int64_t>()->value_name("N")->default_value(0)
                                    ->notifier(in_range<int64_t>("threads", 0, 1024)),
                     "threads for OpenMP loops and BLAS (0: OMP_NUM_THREADS, else all cores); fewer while "
                     "other processes keep cores busy, unless --fixed-threads");
  own_.add_options()("fixed-threads", po::bool_switch(),
                     "keep the thread count even when other processes keep the cores busy (by default it "
                     "drops to the cores left free, checked every second; the results are the same bits)");
  // clang-format on
  return *this;
}

Options& Options::batch_size(int64_t default_size) {
  // clang-format off
  own_.add_options()("batch-size", po::value<int64_t>()->value_name("N")->default_value(default_size)
                                       ->notifier(positive<int64_t>("batch-size")),
                     "examples per batch");
  // clang-format on
  return *this;
}

Options& Options::epochs(int64_t default_epochs) {
  // clang-format off
  own_.add_options()("epochs", po::value<int64_t>()->value_name("N")->default_value(default_epochs)
                                   ->notifier(positive<int64_t>("epochs")),
                     "passes over the training set");
  // clang-format on
  return *this;
}

Options& Options::steps(int64_t default_steps) {
  // clang-format off
  own_.add_options()("steps", po::value<int64_t>()->value_name("N")->default_value(default_steps)
                                  ->notifier(positive<int64_t>("steps")),
                     "optimizer steps");
  // clang-format on
  return *this;
}

Options& Options::lr(double default_lr) {
  // clang-format off
  own_.add_options()("lr", po::value<double>()->value_name("X")
                               ->default_value(default_lr, format_number(default_lr))
                               ->notifier(positive<double>("lr")),
                     "learning rate");
  // clang-format on
  return *this;
}

bool Options::given(const std::string& name) const {
  const auto it = vm_.find(name);
  if (it == vm_.end() || it->second.defaulted()) return false;
  const bool* on = boost::any_cast<bool>(&it->second.value());
  return on == nullptr || *on;
}

void Options::refuse_together(const std::string& a, const std::string& b, const std::string& why) const {
  if (given(a) && given(b)) throw ConfigError("--" + a + " and --" + b + " contradict each other: " + why);
}

bool Options::parse(int argc, char** argv) {
  verb_ = argc > 0 ? argv[0] : "";
  command_ = shell_quote(tool_);
  for (int i = 0; i < argc; ++i) command_ += " " + shell_quote(argv[i]);

  po::options_description visible(kHelpWidth, kHelpDescription);
  visible.add(own_);
  if (!model_.options().empty()) visible.add(model_);
  if (!optimizer_.options().empty()) visible.add(optimizer_);
  visible.add(general_);
  po::options_description all(visible);
  all.add_options()(kStray, po::value<std::vector<std::string>>());
  po::positional_options_description positional;
  positional.add(kStray, -1);
  // No prefix guessing: `--ep` must not silently mean `--epochs` in a stored script.
  const int style = po::command_line_style::default_style & ~po::command_line_style::allow_guessing;
  // The parser skips argv[0] as the program name; here that is the verb.
  po::store(po::command_line_parser(argc, argv).options(all).positional(positional)
                .style(style).run(),
            vm_);

  if (vm_.count("help")) {
    std::cout << "Usage: " << tool_ << " " << verb_ << " " << synopsis_ << "\n";
    if (!about_.empty()) std::cout << "\n" << about_ << "\n";
    std::cout << visible << "\n";
    return false;
  }
  if (vm_.count("version")) {
    std::cout << version_text(tool_);
    return false;
  }
  if (vm_.count(kStray))
    throw po::error("unexpected argument '" + vm_[kStray].as<std::vector<std::string>>().front() +
                    "': every value follows its flag, as in --data FILE");

  if (vm_.count("config")) {
    const std::string path = vm_["config"].as<std::string>();
    std::ifstream file(path, std::ios::binary);
    if (!file) throw ConfigError("--config: cannot read the file '" + path + "'");
    // Read with a bound: a configuration is a few lines of name = value, not /dev/zero.
    constexpr std::streamsize kMaxConfigBytes = 1 << 20;
    std::string text(static_cast<size_t>(kMaxConfigBytes) + 1, '\0');
    file.read(text.data(), kMaxConfigBytes + 1);
    text.resize(static_cast<size_t>(file.gcount()));
    if (static_cast<std::streamsize>(text.size()) > kMaxConfigBytes)
      throw ConfigError("--config " + path + ": the file holds more than 1 MiB; a configuration is lines of "
                        "name = value");
    std::istringstream in(text);
    try {
      // Stored after the command line: po keeps the first value stored, so the command wins.
      po::store(po::parse_config_file(in, visible, /*allow_unregistered=*/false), vm_);
    } catch (po::error& e) {
      throw ConfigError("--config " + path + ": " + usage_message(e));
    }
  }
  po::notify(vm_);   // required options and the range checks
  check_ranks();
  check_files();
  // "-" moves a binary HDF5 image through a pipe; a terminal can neither show nor type one. Text
  // (text_out_when) it can show.
  const bool text_out = !text_out_.first.empty() && has(text_out_.first) &&
                        get<std::string>(text_out_.first) == text_out_.second;
  if (has("out") && get<std::string>("out") == "-" && !text_out && ::isatty(STDOUT_FILENO))
    throw ConfigError("--out -: standard output is a terminal; redirect it to a file or pipe it into "
                      "another tool");
  if (has("data") && get<std::string>("data") == "-" && ::isatty(STDIN_FILENO))
    throw ConfigError("--data -: standard input is a terminal; pipe an HDF5 file into it");

  quiet_ = vm_["quiet"].as<bool>();
  if (has("threads") && get<int64_t>("threads") > 0)
    set_num_threads(static_cast<int>(get<int64_t>("threads")));
  if (has("threads")) set_thread_adaptation(!get<bool>("fixed-threads"));
  if (!quiet_ && echo_ && dist::world().is_root()) echo(std::cerr);   // once per job
  return true;
}

void Options::check_ranks() const {
  const dist::Communicator& world = dist::world();
  if (world.size() == 1) return;
  const std::string ranks = std::to_string(world.size());
  if (!distributed_)
    throw ConfigError(tool_ + " " + verb_ + " runs as one process, and it was started as " + ranks +
                      " (mpirun -np " + ranks + "); only the train verbs train data-parallel");
  if (has("data") && get<std::string>("data") == "-")
    throw ConfigError("--data -: on " + ranks + " ranks every rank reads the data set, and only rank 0 has "
                      "standard input; give a file");
}

void Options::check_files() const {
  std::vector<std::pair<std::string, std::string>> inputs;   // (flag, path)
  for (const po::options_description* d : {&own_, &model_, &optimizer_, &general_})
    for (const auto& opt : d->options()) {
      const std::string& name = opt->long_name();
      if (!has(name)) continue;
      const bool output = std::find(outputs_.begin(), outputs_.end(), name) != outputs_.end();
      if (!output && !names_a_file(*opt)) continue;
      for (const std::string& path : file_values(vm_[name])) {
        if (path.empty() || path == "-") continue;
        if (!output) {
          inputs.emplace_back(name, path);
          continue;
        }
        try {
          io::resolve_output(path);
        } catch (const ConfigError& e) {
          throw ConfigError("--" + name + " " + e.what());
        } catch (const IoError&) {
          // a missing folder: reported by the writer, as a failure to write (exit 1)
        }
      }
    }
  for (const auto& [flag, path] : inputs) refuse_output_over("--" + flag + " " + path, path, flag);
}

void Options::check_input(const std::string& what, const std::string& path) const {
  refuse_output_over(what, path, "");
}

void Options::refuse_output_over(const std::string& what, const std::string& path, const std::string& flag) const {
  struct stat i {};
  if (path.empty() || path == "-" || ::stat(path.c_str(), &i) != 0) return;   // stdin, or nothing to destroy
  for (const std::string& name : outputs_) {
    if (!has(name) || std::find(may_share_.begin(), may_share_.end(), std::pair{flag, name}) != may_share_.end())
      continue;
    for (const std::string& out : file_values(vm_[name])) {
      struct stat o {};
      if (out.empty() || out == "-" || ::stat(out.c_str(), &o) != 0 || !S_ISREG(o.st_mode)) continue;   // new, a device
      if (i.st_dev == o.st_dev && i.st_ino == o.st_ino)
        throw ConfigError("--" + name + " " + out + " is the same file as " + what +
                          ": writing it would destroy the input; give another --" + name);
    }
  }
}

std::vector<ConfigEntry> Options::config() const {
  std::vector<ConfigEntry> entries;
  for (const auto& [group, description] : {std::pair{OptionGroup::own, &own_}, std::pair{OptionGroup::model, &model_},
                                           std::pair{OptionGroup::optimizer, &optimizer_}})
    for (const auto& opt : description->options()) {
      const std::string& name = opt->long_name();
      if (is_meta(name) || !has(name)) continue;
      entries.push_back(entry_of(name, vm_[name]));
      entries.back().group = group;
    }
  return entries;
}

void Options::echo(std::ostream& os) const {
  const std::vector<ConfigEntry> entries = config();
  size_t width = 0;
  for (const ConfigEntry& e : entries) width = std::max(width, e.name.size());
  os << tool_ << " " << verb_ << ": configuration\n";
  for (const ConfigEntry& e : entries)
    os << "  --" << e.name << std::string(width - e.name.size() + 2, ' ') << clipped(e.text)
       << (e.defaulted ? "  (default)" : "") << "\n";
  os.flush();
}

void store_config(const Options& opts, io::File& file) {
  for (const ConfigEntry& e : opts.config()) {
    std::string key = e.name;
    std::replace(key.begin(), key.end(), '-', '_');
    file.set_attr("/config", key, e.value);
  }
}

io::File create_output(const Options& opts, const std::string& format, const std::string& kind) {
  const std::string path = opts.get<std::string>("out");
  try {
    io::File file = io::File::create(path);
    io::FileInfo info;
    info.format = format;
    info.format_version = io::kFormatVersion;
    info.kind = kind;
    info.created_by = opts.tool() + " " + version();
    info.command = opts.command();
    io::write_file_info(file, info);
    store_config(opts, file);
    return file;
  } catch (const IoError& e) {
    throw OutputError(e.what());
  }
}

void commit_output(io::File& file) {
  try {
    file.commit();
  } catch (const IoError& e) {
    throw OutputError(e.what());
  }
}

void write_output(const Options& opts, const std::string& format, const std::string& kind,
                  const std::function<void(io::File&)>& fill) {
  if (!dist::world().is_root()) return;   // on several ranks rank 0 writes for the job
  io::File file = create_output(opts, format, kind);
  try {
    fill(file);
  } catch (const IoError& e) {
    throw OutputError(e.what());
  }
  commit_output(file);
}

void print_summary(const Options& opts, const std::string& line) {
  if (!dist::world().is_root()) return;
  const bool to_stdout = !(opts.has("out") && opts.get<std::string>("out") == "-");
  if (to_stdout) {
    std::cout << line << std::endl;
  } else if (!opts.quiet()) {
    std::cerr << line << std::endl;
  }
}

}  // namespace attn::cli
