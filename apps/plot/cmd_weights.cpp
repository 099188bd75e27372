// attn-plot weights: memory weightings over time with the inputs and outputs above them, in the
// style of the NTM paper's figures.
#include "attn/plot/weights.hpp"
#include "verbs.hpp"

namespace attn::plot_tool {

namespace po = boost::program_options;

namespace {

// One dataset as panels: [T, Nm] after the selection is one panel; [T, Nr, Nm] one per head.
void add_panels(const io::File& file, const std::string& dataset, const std::string& title,
                const plot::Selection& sel, std::vector<plot::WeightsPanel>& panels) {
  const int64_t rank = static_cast<int64_t>(file.shape(dataset).size());
  const int64_t left = rank - static_cast<int64_t>(sel.index.size());
  const Tensor t = plot::read_slice(file, dataset, sel, left == 3 ? 3 : 2, "[T, N] or [T, heads, N]");
  if (t.rank() == 2) {
    panels.push_back({title, t});
    return;
  }
  const int64_t T = t.dim(0), H = t.dim(1), K = t.dim(2);
  for (int64_t h = 0; h < H; ++h) {
    Tensor head({T, K});
    for (int64_t s = 0; s < T; ++s)
      for (int64_t k = 0; k < K; ++k) head.data()[s * K + k] = t.data()[(s * H + h) * K + k];
    panels.push_back({title + " (head " + std::to_string(h) + ")", head});
  }
}

}  // namespace

int cmd_weights(int argc, char** argv) {
  Input input(argc, argv);
  cli::Options opts(kTool, "FILE --write PATH --read PATH [options] --out PICTURE",
                    "Draws memory weightings over time (Graves et al. 2014, Figs. 4 and 6): time along x,\n"
                    "memory location along y, one panel per dataset, inputs and outputs on top. Each\n"
                    "dataset, after --index, is [T, N] or [T, heads, N] (one panel per head). Panels are\n"
                    "scaled each to its own range.\n"
                    "Example: attn-plot weights run.h5 --index 0 --inputs /inputs --outputs /outputs\n"
                    "         --write /ntm/write_weights --read /ntm/read_weights --out copy.png");
  add_picture_options(opts);
  add_selection_options(opts, /*with_heads=*/false);
  // clang-format off
  opts.add()
      ("inputs", po::value<std::string>()->value_name("PATH"), "input sequence [T, bits], drawn first")
      ("outputs", po::value<std::string>()->value_name("PATH"), "output sequence [T, bits], drawn second")
      ("write", po::value<std::vector<std::string>>()->value_name("PATH")->composing(),
       "write weighting [T, N] or [T, heads, N]; repeat for several")
      ("read", po::value<std::vector<std::string>>()->value_name("PATH")->composing(),
       "read weighting [T, N] or [T, heads, N]; repeat for several")
      ("cell", po::value<double>()->value_name("X")->default_value(0.0, "0")->notifier(cli::at_least<double>("cell", 0)),
       "width of one time step in pixels; 0: automatic, or fitted to --width")
      ("width", po::value<double>()->value_name("X")->default_value(0.0, "0")->notifier(cli::at_least<double>("width", 0)),
       "picture width in pixels; 0: fitted to the content")
      ("max-panel-height", po::value<double>()->value_name("X")->default_value(200.0, "200")
                               ->notifier(cli::positive<double>("max-panel-height")),
       "tallest panel in pixels: rows of large memories shrink to fit");
  // clang-format on
  add_colormap_option(opts, "gray");
  if (!opts.parse(input.argc(), input.argv())) return 0;
  picture_format(opts);
  const plot::Selection sel = selection(opts);
  auto many = [&](const char* name) {
    return opts.has(name) ? opts.get<std::vector<std::string>>(name) : std::vector<std::string>{};
  };
  const std::vector<std::string> writes = many("write"), reads = many("read");
  if (!opts.has("inputs") && !opts.has("outputs") && writes.empty() && reads.empty())
    throw ConfigError("nothing to draw: give --write, --read, --inputs or --outputs");

  const io::File file = input.open(opts);
  std::vector<plot::WeightsPanel> panels;
  if (opts.has("inputs")) add_panels(file, opts.get<std::string>("inputs"), "inputs", sel, panels);
  if (opts.has("outputs")) add_panels(file, opts.get<std::string>("outputs"), "outputs", sel, panels);
  for (const auto& w : writes) add_panels(file, w, writes.size() > 1 ? "write weighting " + w : "write weighting", sel, panels);
  for (const auto& r : reads) add_panels(file, r, reads.size() > 1 ? "read weighting " + r : "read weighting", sel, panels);

  plot::WeightsOptions wo;
  wo.title = opts.get<std::string>("title");
  wo.colormap = plot::colormap_from_name(opts.get<std::string>("colormap"));
  wo.cell = opts.get<double>("cell");
  wo.width = opts.get<double>("width");
  wo.max_panel_height = opts.get<double>("max-panel-height");
  write_picture(opts, plot::weights(panels, wo));
  return 0;
}

}  // namespace attn::plot_tool
