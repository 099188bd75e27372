// What the attn-plot verbs share: the input file, picture options, selections, labels, and
// writing the picture (verbs.hpp).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "attn/core/error.hpp"
#include "attn/io/output_file.hpp"
#include "attn/plot/color.hpp"
#include "common/cli.hpp"
#include "verbs.hpp"

namespace attn::plot_tool {

namespace po = boost::program_options;

Input::Input(int argc, char** argv) {
  args_.assign(argv, argv + argc);
  // argv[0] is the verb; a first argument that is not a flag ("-" included) is the file.
  if (args_.size() >= 2 && (std::strcmp(args_[1], "-") == 0 || args_[1][0] != '-')) {
    first_ = args_[1];
    args_.erase(args_.begin() + 1);
  }
}

std::string Input::path(const cli::Options& opts) const {
  const bool flag = opts.has("data");
  if (!first_.empty() && flag)
    throw ConfigError("the input file is given twice ('" + first_ + "' and --data " + opts.get<std::string>("data") + ")");
  if (first_.empty() && !flag)
    throw ConfigError("no input file: give it first (attn-plot " + opts.verb() + " FILE ...) or as --data FILE");
  if (flag) return opts.get<std::string>("data");   // parse() checked it against --out
  // Taken off the command line before parse(), so checked here, before anything is read: a picture
  // written over its input would destroy a run's file (issue 51).
  opts.check_input("the input file " + first_, first_);
  return first_;
}

void add_picture_options(cli::Options& opts, bool text) {
  opts.data("input HDF5 file, when not given as the first argument", /*required=*/false);
  std::vector<std::string> formats{"png", "svg", "pdf"};
  if (text) {
    formats.emplace_back("txt");
    opts.text_out_when("format", "txt");
  }
  const std::string out_help =
      text ? "picture to write, .png, .svg or .pdf, or a text table, .txt (written atomically); - "
             "writes to stdout (give --format)"
           : "picture to write, .png, .svg or .pdf (written atomically); - writes to stdout "
             "(give --format)";
  // clang-format off
  opts.add()
      ("out", po::value<std::string>()->value_name("PICTURE")->required(), out_help.c_str())
      ("format", po::value<std::string>()->value_name(text ? "png|svg|pdf|txt" : "png|svg|pdf")
                     ->notifier(cli::one_of("format", formats)),
       "picture format (default: from the --out extension)")
      ("scale", po::value<double>()->value_name("X")->default_value(1.0, "1")->notifier(cli::in_range<double>("scale", 0.1, 16)),
       "PNG pixels per unit (2 for a high-resolution PNG of the same layout)")
      ("title", po::value<std::string>()->value_name("TEXT")->default_value(""), "title above the figure");
  // clang-format on
}

plot::Format picture_format(const cli::Options& opts) {
  if (opts.has("format")) return plot::format_from_name(opts.get<std::string>("format"));
  const std::string out = opts.get<std::string>("out");
  if (out == "-") throw ConfigError("--out - writes to stdout: say which format with --format png|svg|pdf");
  return plot::format_for_path(out);
}

bool text_output(const cli::Options& opts) {
  if (opts.has("format")) return opts.get<std::string>("format") == "txt";   // one_of checked the name
  const std::string out = opts.get<std::string>("out");
  if (out == "-") throw ConfigError("--out - writes to stdout: say which format with --format png|svg|pdf|txt");
  std::string ext = std::filesystem::path(out).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (ext == ".txt") return true;
  if (ext != ".png" && ext != ".svg" && ext != ".pdf")
    throw ConfigError("cannot tell the format of '" + out + "': name it .png, .svg, .pdf or .txt");
  return false;
}

void write_text(const cli::Options& opts, const std::string& text, const std::string& what) {
  const std::string out = opts.get<std::string>("out");
  try {
    io::write_bytes(out, text);
  } catch (const IoError& e) {
    throw cli::OutputError(e.what());   // the output, not the input, failed: exit 1
  }
  cli::print_summary(opts, std::string(kTool) + " " + opts.verb() + ": wrote " + out + " (txt, " + what + ")");
}

void write_picture(const cli::Options& opts, const plot::Picture& pic) {
  const std::string out = opts.get<std::string>("out");
  const plot::Format format = picture_format(opts);
  const double scale = opts.get<double>("scale");
  try {
    pic.save(out, format, scale);
  } catch (const IoError& e) {
    throw cli::OutputError(e.what());   // the output, not the input, failed: exit 1
  }
  const double s = format == plot::Format::png ? scale : 1.0;
  std::ostringstream line;
  line << kTool << " " << opts.verb() << ": wrote " << out << " (" << plot::format_name(format) << ", "
       << static_cast<int64_t>(std::ceil(pic.width() * s - 1e-9)) << " x "
       << static_cast<int64_t>(std::ceil(pic.height() * s - 1e-9)) << (format == plot::Format::png ? " px)" : ")");
  cli::print_summary(opts, line.str());
}

void add_selection_options(cli::Options& opts, bool with_heads) {
  opts.add()("index", po::value<std::string>()->value_name("I[,J..]"),
             "indices of the leading axes, in order (usually the example number)");
  // clang-format off
  if (with_heads)
    opts.add()
        ("layer", po::value<int64_t>()->value_name("N"),
         "layer: axis -4 of [..., layers, heads, R, C], or the dataset's member layer<N> when it is a group")
        ("head", po::value<int64_t>()->value_name("N"), "head: axis -3 of [..., heads, R, C]");
  // clang-format on
}

plot::Selection selection(const cli::Options& opts) {
  plot::Selection sel;
  if (opts.has("index")) sel.index = cli::parse_int_list("index", opts.get<std::string>("index"));
  if (opts.has("layer")) sel.layer = opts.get<int64_t>("layer");
  if (opts.has("head")) sel.head = opts.get<int64_t>("head");
  return sel;
}

int64_t example_row(const plot::Selection& sel) { return sel.index.empty() ? -1 : sel.index.front(); }

void add_colormap_option(cli::Options& opts, const std::string& default_map) {
  opts.add()("colormap", cli::choice("colormap", default_map, plot::colormap_names()), "colour map");
}

std::string text(const cli::Options& opts, const std::string& name) {
  return opts.has(name) ? opts.get<std::string>(name) : "";
}

std::optional<double> number(const cli::Options& opts, const std::string& name) {
  if (!opts.has(name)) return std::nullopt;
  return opts.get<double>(name);
}

std::vector<std::string> labels_from(const cli::Options& opts, const io::File& file, const std::string& prefix,
                                     int64_t row) {
  const std::string list = text(opts, prefix + "-labels"), ids = text(opts, prefix + "-ids");
  const std::string vocab = text(opts, prefix + "-vocab");
  if (!list.empty() && !ids.empty())
    throw ConfigError("give --" + prefix + "-labels or --" + prefix + "-ids, not both");
  if (!vocab.empty() && ids.empty()) throw ConfigError("--" + prefix + "-vocab needs --" + prefix + "-ids");
  if (!list.empty()) return plot::split_labels(list);
  if (ids.empty()) return {};
  std::vector<std::string> labels = plot::id_labels(file, ids, row, vocab);
  if (labels.empty())
    throw DataError(file.display_name() + ": dataset '" + ids + "'" + (row >= 0 ? " row " + std::to_string(row) : "") +
                    " holds no tokens (only padding), so there are no --" + prefix + " labels");
  return labels;
}

int64_t labelled_extent(const std::vector<std::string>& labels, int64_t n, const std::string& labels_what,
                        const std::string& extent_what) {
  const auto count = static_cast<int64_t>(labels.size());
  if (count == 0) return n;
  if (count > n)
    throw ShapeError(std::to_string(count) + " " + labels_what + " for the " + std::to_string(n) + " " + extent_what);
  return count;
}

}  // namespace attn::plot_tool
