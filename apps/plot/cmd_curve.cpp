// attn-plot curve: line charts of datasets, such as training and validation loss per step.
// A series may come from another file than the input (FILE::SPEC), so that runs written to
// separate files (two models' loss curves, BLEU by length of two models) share one chart.
#include <map>

#include "attn/plot/curve.hpp"
#include "verbs.hpp"

namespace attn::plot_tool {

namespace po = boost::program_options;

namespace {

// The values of a 1-D dataset ([n], or [n, 1]).
std::vector<double> read_values(const io::File& file, const std::string& dataset) {
  const Shape shape = file.shape(dataset);
  if (!(shape.size() == 1 || (shape.size() == 2 && shape[1] == 1)))
    throw ShapeError(file.display_name() + ": dataset '" + dataset + "' has shape " + to_string(shape) + ", expected a series [n]");
  const Tensor t = file.read(dataset);   // float or integer (e.g. step numbers)
  if (t.dtype() == DType::i32) return {t.idata(), t.idata() + t.numel()};
  return {t.values().begin(), t.values().end()};
}

// One --series: "Y" ([n] against 0..n-1, or [n, 2] as x, y columns) or "X:Y" (two [n] datasets).
plot::Series read_series(const io::File& file, const std::string& spec) {
  plot::Series s;
  const size_t colon = spec.find(':');
  const std::string y_path = colon == std::string::npos ? spec : spec.substr(colon + 1);
  s.name = y_path.substr(y_path.find_last_of('/') + 1);
  if (colon != std::string::npos) {
    s.x = read_values(file, spec.substr(0, colon));
    s.y = read_values(file, y_path);
    if (s.x.size() != s.y.size())
      throw ShapeError(file.display_name() + ": --series " + spec + " pairs " + std::to_string(s.x.size()) + " x values with " +
                       std::to_string(s.y.size()) + " y values");
    return s;
  }
  const Shape shape = file.shape(spec);
  if (shape.size() == 2 && shape[1] == 2) {
    const Tensor t = file.read(spec);
    for (int64_t i = 0; i < 2 * shape[0]; ++i)
      (i % 2 ? s.y : s.x).push_back(t.dtype() == DType::i32 ? t.idata()[i] : t.data()[i]);
    return s;
  }
  s.y = read_values(file, spec);
  return s;
}

// "FILE::SPEC" -> {FILE, SPEC}; a spec without "::" -> {"", spec} (the input file).
std::pair<std::string, std::string> split_file(const std::string& spec) {
  const size_t sep = spec.find("::");
  if (sep == std::string::npos) return {"", spec};
  if (sep == 0) throw ConfigError("--series '" + spec + "' has no file before '::'");
  return {spec.substr(0, sep), spec.substr(sep + 2)};
}

}  // namespace

int cmd_curve(int argc, char** argv) {
  Input input(argc, argv);
  cli::Options opts(kTool, "[FILE] --series PATH [--series PATH ...] [options] --out PICTURE",
                    "Draws one line per --series: a dataset [n] (against 0, 1, ..., n-1), a dataset [n, 2]\n"
                    "of (x, y) rows, or X:Y, two datasets [n] of x and y values. OTHER.h5::SERIES reads a\n"
                    "series from another file (FILE may then be left out when every series names one).\n"
                    "Non-finite values break the line. Ticks fall on round numbers; the legend sits where\n"
                    "it hides the least.\n"
                    "Example: attn-plot curve run.h5 --series /metrics/train_loss --series\n"
                    "         /metrics/valid_step:/metrics/valid_loss --log-y --y-title loss --out loss.svg");
  add_picture_options(opts);
  // clang-format off
  opts.add()
      ("series", po::value<std::vector<std::string>>()->value_name("PATH")->composing()->required(),
       "a series: Y, or X:Y, each optionally FILE::...; repeat for several")
      ("label", po::value<std::vector<std::string>>()->value_name("NAME")->composing(),
       "legend name of each series, in order (default: the dataset's name)")
      ("x-title", po::value<std::string>()->value_name("TEXT")->default_value(""), "title of the x axis")
      ("y-title", po::value<std::string>()->value_name("TEXT")->default_value(""), "title of the y axis")
      ("log-x", po::bool_switch(), "logarithmic x axis")
      ("log-y", po::bool_switch(), "logarithmic y axis")
      ("markers", po::bool_switch(), "a dot at every point")
      ("width", po::value<double>()->value_name("X")->default_value(640.0, "640")->notifier(cli::in_range<double>("width", 120, 20000)),
       "picture width in pixels")
      ("height", po::value<double>()->value_name("X")->default_value(400.0, "400")->notifier(cli::in_range<double>("height", 100, 20000)),
       "picture height in pixels");
  // clang-format on
  if (!opts.parse(input.argc(), input.argv())) return 0;
  picture_format(opts);
  const auto specs = opts.get<std::vector<std::string>>("series");
  const auto names = opts.has("label") ? opts.get<std::vector<std::string>>("label") : std::vector<std::string>{};
  if (!names.empty() && names.size() != specs.size())
    throw ConfigError("--label is given " + std::to_string(names.size()) + " times for " + std::to_string(specs.size()) +
                      " --series");
  // A series' own file is an input parse() cannot see (it is part of a value): checked against --out.
  for (const std::string& spec : specs)
    if (const std::string file = split_file(spec).first; !file.empty()) opts.check_input("--series " + spec, file);

  // Each file is opened once (standard input can be read only once).
  std::map<std::string, io::File> files;
  const auto file_of = [&](const std::string& named) -> const io::File& {
    const std::string path = named.empty() ? input.path(opts) : named;
    auto it = files.find(path);
    if (it == files.end()) it = files.emplace(path, io::File::open_read(path)).first;
    return it->second;
  };
  if (input.given(opts)) file_of("");   // a given input file is read even when no series uses it
  std::vector<plot::Series> series;
  for (size_t i = 0; i < specs.size(); ++i) {
    const auto [path, spec] = split_file(specs[i]);
    series.push_back(read_series(file_of(path), spec));
    if (!names.empty()) series.back().name = names[i];
  }
  plot::CurveOptions co;
  co.title = opts.get<std::string>("title");
  co.x_title = opts.get<std::string>("x-title");
  co.y_title = opts.get<std::string>("y-title");
  co.log_x = opts.get<bool>("log-x");
  co.log_y = opts.get<bool>("log-y");
  co.markers = opts.get<bool>("markers");
  co.width = opts.get<double>("width");
  co.height = opts.get<double>("height");
  write_picture(opts, plot::curve(series, co));
  return 0;
}

}  // namespace attn::plot_tool
