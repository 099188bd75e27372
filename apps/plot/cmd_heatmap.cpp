// attn-plot heatmap: one attention matrix, or every head of a layer, with token labels.
#include "attn/plot/heatmap.hpp"
#include "verbs.hpp"

namespace attn::plot_tool {

namespace po = boost::program_options;

int cmd_heatmap(int argc, char** argv) {
  Input input(argc, argv);
  cli::Options opts(kTool, "FILE --dataset PATH [options] --out PICTURE",
                    "Draws a 2-D slice of any float dataset as a heatmap: rows are the second-last axis\n"
                    "(target words), columns the last (source words), as in Bahdanau et al. 2015, Fig. 3.\n"
                    "Leading axes are fixed with --index (and --layer, --head); --all-heads draws a grid.\n"
                    "Labels come from token ids and a vocabulary (--x-ids /test/src --x-vocab /vocab/src,\n"
                    "row = the first --index value) or from a list (--x-labels \"ein Mann schläft\"; use '|'\n"
                    "between labels that contain spaces). Columns and rows past the labels (padding) are cut.\n"
                    "Example: attn-plot heatmap pred.h5 --dataset /attention/cross/layer5 --index 3 --head 0\n"
                    "         --x-ids /test/src --x-vocab /vocab/src --y-ids /predictions --y-vocab /vocab/tgt\n"
                    "         --out align.png");
  add_picture_options(opts);
  opts.add()("dataset", po::value<std::string>()->value_name("PATH")->required(),
             "float dataset holding the matrix, e.g. /attention/cross/layer5 [N, heads, T, S]");
  add_selection_options(opts, /*with_heads=*/true);
  // clang-format off
  opts.add()
      ("all-heads", po::bool_switch(), "keep the head axis (-3) and draw every head, one panel each")
      ("x-ids", po::value<std::string>()->value_name("PATH"), "token ids of the columns, e.g. /test/src [N, S]")
      ("x-vocab", po::value<std::string>()->value_name("PATH"), "vocabulary of --x-ids, e.g. /vocab/src")
      ("x-labels", po::value<std::string>()->value_name("LIST"), "column labels, separated by spaces (or '|')")
      ("y-ids", po::value<std::string>()->value_name("PATH"), "token ids of the rows, e.g. /predictions [N, T]")
      ("y-vocab", po::value<std::string>()->value_name("PATH"), "vocabulary of --y-ids, e.g. /vocab/tgt")
      ("y-labels", po::value<std::string>()->value_name("LIST"), "row labels, separated by spaces (or '|')")
      ("x-title", po::value<std::string>()->value_name("TEXT")->default_value(""), "title of the column axis")
      ("y-title", po::value<std::string>()->value_name("TEXT")->default_value(""), "title of the row axis")
      ("vmin", po::value<double>()->value_name("X"), "value drawn in the bottom colour (default: the minimum)")
      ("vmax", po::value<double>()->value_name("X"), "value drawn in the top colour (default: the maximum)")
      ("cell", po::value<double>()->value_name("X")->default_value(0.0, "0")->notifier(cli::at_least<double>("cell", 0)),
       "side of a cell in pixels; 0: automatic, or fitted to --width/--height")
      ("width", po::value<double>()->value_name("X")->default_value(0.0, "0")->notifier(cli::at_least<double>("width", 0)),
       "picture width in pixels; 0: fitted to the content")
      ("height", po::value<double>()->value_name("X")->default_value(0.0, "0")->notifier(cli::at_least<double>("height", 0)),
       "picture height in pixels; 0: fitted to the content")
      ("columns", cli::int_value(0)->notifier(cli::at_least<int64_t>("columns", 0)),
       "panels per row with --all-heads; 0: about square")
      ("no-colorbar", po::bool_switch(), "leave out the colour bar");
  // clang-format on
  add_colormap_option(opts, "viridis");
  if (!opts.parse(input.argc(), input.argv())) return 0;
  picture_format(opts);
  plot::Selection sel = selection(opts);
  const bool all_heads = opts.get<bool>("all-heads");
  if (all_heads && sel.head) throw ConfigError("--head and --all-heads exclude each other");

  const io::File file = input.open(opts);
  std::string dataset = opts.get<std::string>("dataset");
  if (sel.layer) {
    // Outputs may keep one dataset per layer: /attention/cross/layer5.
    const std::string member = dataset + "/layer" + std::to_string(*sel.layer);
    if (file.is_group(dataset) && file.is_dataset(member)) {
      dataset = member;
      sel.layer.reset();
    }
  }
  Tensor maps = plot::read_slice(file, dataset, sel, all_heads ? 3 : 2);
  const int64_t row = example_row(sel);
  plot::HeatmapOptions ho;
  ho.x_labels = labels_from(opts, file, "x", row);
  ho.y_labels = labels_from(opts, file, "y", row);
  const std::string extent = "of " + file.display_name() + ": '" + dataset + "' " + sel.describe() + " " + to_string(maps.shape());
  const int64_t R = labelled_extent(ho.y_labels, maps.dim(-2), "y labels", "rows " + extent);
  const int64_t C = labelled_extent(ho.x_labels, maps.dim(-1), "x labels", "columns " + extent);
  if (R != maps.dim(-2) || C != maps.dim(-1)) maps = plot::crop(maps, R, C);

  ho.title = opts.get<std::string>("title");
  ho.x_title = opts.get<std::string>("x-title");
  ho.y_title = opts.get<std::string>("y-title");
  ho.colormap = plot::colormap_from_name(opts.get<std::string>("colormap"));
  ho.vmin = number(opts, "vmin");
  ho.vmax = number(opts, "vmax");
  ho.cell = opts.get<double>("cell");
  ho.width = opts.get<double>("width");
  ho.height = opts.get<double>("height");
  ho.columns = static_cast<int>(opts.get<int64_t>("columns"));
  ho.colorbar = !opts.get<bool>("no-colorbar");
  write_picture(opts, plot::heatmap(maps, ho));
  return 0;
}

}  // namespace attn::plot_tool
